//! Path containment: every relative-path call refuses absolute paths, `..` and link escapes.

use std::os::unix::fs::symlink;
use std::path::Path;

use hyoka_workspace::{RunVerdict, Workspace, WorkspaceError};

use crate::support::{create, scratch, sentinel};

#[track_caller]
fn assert_refused(result: Result<impl std::fmt::Debug, WorkspaceError>, want: &str) {
    match (result, want) {
        (Err(WorkspaceError::InvalidPath { .. }), "invalid")
        | (Err(WorkspaceError::Escape { .. }), "escape") => {}
        (other, _) => panic!("expected {want}, got {other:?}"),
    }
}

#[test]
fn absolute_and_parent_paths_are_refused_before_touching_disk() {
    let root = scratch();
    let ws = create(root.path(), "contain");
    for bad in ["/etc/passwd", "../x", "a/../../x", "", "."] {
        let bad = Path::new(bad);
        assert_refused(ws.write_file(bad, b"x"), "invalid");
        assert_refused(ws.read_file(bad), "invalid");
        assert_refused(ws.create_dir(bad), "invalid");
        assert_refused(ws.remove(bad), "invalid");
    }
    ws.close(RunVerdict::Success).unwrap();
}

#[test]
fn links_that_escape_are_refused_for_every_call() {
    let root = scratch();
    let outside = sentinel(root.path());
    let ws = create(root.path(), "escape");
    let p = ws.path().to_owned();
    symlink(&outside.dir, p.join("out-abs")).unwrap();
    symlink("../outside", p.join("out-rel")).unwrap();
    symlink(&outside.file, p.join("out-file")).unwrap();
    std::fs::create_dir(p.join("d")).unwrap();
    symlink("..", p.join("d/up")).unwrap();
    symlink("../..", p.join("d/up2")).unwrap();
    symlink("/", p.join("root")).unwrap();

    assert_refused(ws.read_file(Path::new("out-abs/precious.txt")), "escape");
    assert_refused(ws.read_file(Path::new("out-rel/precious.txt")), "escape");
    assert_refused(ws.read_file(Path::new("out-file")), "escape");
    assert_refused(
        ws.read_file(Path::new("d/up2/outside/precious.txt")),
        "escape",
    );
    assert_refused(ws.write_file(Path::new("out-abs/new.txt"), b"x"), "escape");
    assert_refused(
        ws.write_file(Path::new("out-file"), b"overwritten"),
        "escape",
    );
    assert_refused(
        ws.write_file(Path::new("root/tmp/hyoka-escape"), b"x"),
        "escape",
    );
    assert_refused(ws.create_dir(Path::new("out-rel/newdir")), "escape");
    assert_refused(ws.list(Path::new("out-abs")), "escape");
    assert_refused(ws.remove(Path::new("out-abs/precious.txt")), "escape");

    // A link that climbs but comes back inside is fine.
    ws.write_file(Path::new("inner.txt"), b"in").unwrap();
    assert_eq!(ws.read_file(Path::new("d/up/inner.txt")).unwrap(), b"in");
    outside.assert_intact();
    assert!(!outside.dir.join("new.txt").exists());
    assert!(!outside.dir.join("newdir").exists());
    // Removing the link itself is fine: it is inside.
    ws.remove(Path::new("out-abs")).unwrap();
    outside.assert_intact();
    ws.close(RunVerdict::Success).unwrap();
}

#[test]
fn links_that_stay_inside_work() {
    let root = scratch();
    let ws = create(root.path(), "inside");
    ws.write_file(Path::new("real/file.txt"), b"hello").unwrap();
    symlink("real", ws.path().join("alias")).unwrap();
    symlink("real/file.txt", ws.path().join("file-alias")).unwrap();
    assert_eq!(ws.read_file(Path::new("alias/file.txt")).unwrap(), b"hello");
    assert_eq!(ws.read_file(Path::new("file-alias")).unwrap(), b"hello");
    ws.write_file(Path::new("alias/second.txt"), b"2").unwrap();
    assert_eq!(ws.read_file(Path::new("real/second.txt")).unwrap(), b"2");
    ws.close(RunVerdict::Success).unwrap();
}

#[test]
fn file_operations_round_trip() {
    let root = scratch();
    let ws = create(root.path(), "ops");
    ws.write_file(Path::new("a/b/c.txt"), b"one").unwrap();
    ws.write_file(Path::new("a/b/c.txt"), b"two").unwrap();
    assert_eq!(ws.read_file(Path::new("./a/b/c.txt")).unwrap(), b"two");
    ws.create_dir(Path::new("a/empty")).unwrap();
    ws.create_dir(Path::new("a/empty")).unwrap();
    let names: Vec<_> = ws
        .list(Path::new("a"))
        .unwrap()
        .into_iter()
        .map(|e| (e.name.into_string().unwrap(), e.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("b".to_owned(), hyoka_workspace::EntryKind::Dir),
            ("empty".to_owned(), hyoka_workspace::EntryKind::Dir)
        ]
    );
    assert!(
        ws.list(Path::new(""))
            .unwrap()
            .iter()
            .all(|e| e.name != ".hyoka-workspace")
    );
    assert!(matches!(
        ws.read_file(Path::new("missing")),
        Err(WorkspaceError::NotFound { .. })
    ));
    ws.remove(Path::new("a")).unwrap();
    assert!(ws.list(Path::new(".")).unwrap().is_empty());
    ws.close(RunVerdict::Success).unwrap();
}
