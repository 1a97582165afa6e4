//! Tests of relative-path normalization.

use super::*;

#[track_caller]
fn check(input: &str, expected: Result<&[&str], &str>) {
    let got = normalize(Path::new(input));
    match (got, expected) {
        (Ok(parts), Ok(want)) => {
            let parts: Vec<_> = parts.iter().map(|p| p.to_str().unwrap()).collect();
            assert_eq!(parts, want, "{input:?}");
        }
        (Err(WorkspaceError::InvalidPath { reason, .. }), Err(want)) => {
            assert_eq!(reason, want, "{input:?}");
        }
        (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
    }
}

#[test]
fn plain_paths_pass() {
    check("a", Ok(&["a"]));
    check("./a/./b/", Ok(&["a", "b"]));
    check("dir/.hidden", Ok(&["dir", ".hidden"]));
    check("with space/ünï", Ok(&["with space", "ünï"]));
}

#[test]
fn unsafe_paths_fail() {
    check("", Err("is empty"));
    check(".", Err("is empty"));
    check("/etc/passwd", Err("is absolute"));
    check("../x", Err("contains '..'"));
    check("a/../../x", Err("contains '..'"));
    check("a/..", Err("contains '..'"));
    check("a\0b", Err("contains a NUL byte"));
}
