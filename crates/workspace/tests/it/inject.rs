//! Injected files (`--file`) and recording a workspace before it exists: special files are
//! refused without ever blocking, sizes are capped, and nothing is left behind.

use std::path::{Path, PathBuf};

use hyoka_workspace::{
    Injection, MAX_INJECTED_FILE_BYTES, RunVerdict, TempWorkspace, Workspace as _, WorkspaceError,
    check_injection,
};

use crate::support::{entries, options, scratch};

fn inject(source: &Path) -> Vec<Injection> {
    vec![Injection {
        source: source.to_owned(),
        target: PathBuf::from("x"),
    }]
}

/// Regression test for issue 11, finding 5: `--file FIFO:x` blocked forever in `open`, and
/// `--file /dev/zero:x` read until the OOM killer came. Both are refused up front, typed,
/// without opening them for reading, and no workspace is created.
#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let root = scratch();
    let fifo = root.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    for (source, kind) in [
        (fifo.as_path(), "FIFO"),
        (Path::new("/dev/zero"), "character device"),
    ] {
        let err = check_injection(&inject(source)[0]).unwrap_err();
        assert!(
            matches!(&err, WorkspaceError::UnsupportedFile { kind: k, .. } if *k == kind),
            "{err}"
        );
        let mut opts = options(root.path(), "special");
        opts.inject = inject(source);
        let err = TempWorkspace::create(&opts).unwrap_err();
        assert!(
            matches!(err, WorkspaceError::UnsupportedFile { .. }),
            "{err}"
        );
    }
    assert_eq!(
        entries(root.path()),
        ["fifo"],
        "a workspace was left behind"
    );
}

/// Regression test for issue 11, finding 5: a file larger than the cap (sparse, so it costs
/// nothing here) is refused, not read.
#[test]
fn files_larger_than_the_cap_are_refused() {
    let root = scratch();
    let big = root.path().join("big");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(MAX_INJECTED_FILE_BYTES + 1)
        .unwrap();
    let err = check_injection(&inject(&big)[0]).unwrap_err();
    assert!(matches!(err, WorkspaceError::TooLarge { .. }), "{err}");
    let mut opts = options(root.path(), "big");
    opts.inject = inject(&big);
    assert!(TempWorkspace::create(&opts).is_err());
    assert_eq!(entries(root.path()), ["big"]);
}

#[test]
fn a_regular_file_is_copied_in_chunks_with_its_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = scratch();
    let src = root.path().join("src.sh");
    let content: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&src, &content).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o750)).unwrap();
    let mut opts = options(root.path(), "chunks");
    opts.inject = inject(&src);
    let ws = TempWorkspace::create(&opts).unwrap();
    assert_eq!(ws.read_file(Path::new("x")).unwrap(), content);
    let mode = std::fs::metadata(ws.path().join("x"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
    ws.close(RunVerdict::Success).unwrap();
}

/// Regression test for issue 11, finding 8: the workspace is recorded before it exists, and
/// a record that fails creates nothing.
#[test]
fn the_path_is_recorded_before_the_directory_exists() {
    let root = scratch();
    let opts = options(root.path(), "recorded");
    let mut recorded = Vec::new();
    let ws = TempWorkspace::create_recorded(&opts, |path| {
        recorded.push((path.to_owned(), path.exists()));
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    assert_eq!(recorded, [(ws.path().to_owned(), false)]);
    ws.close(RunVerdict::Success).unwrap();
    let err = TempWorkspace::create_recorded(&opts, |_| {
        Err(std::io::Error::other("ledger is read-only"))
    })
    .unwrap_err();
    assert!(matches!(err, WorkspaceError::Record { .. }), "{err}");
    assert!(entries(root.path()).is_empty());
}
