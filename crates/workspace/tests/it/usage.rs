//! Usage accounting against the starter snapshot.

use std::path::Path;

use hyoka_workspace::{Outcome, TempWorkspace, Usage, Workspace};

use crate::support::{options, scratch};

#[test]
fn counts_created_changed_and_deleted_including_hidden_and_build_dirs() {
    let root = scratch();
    let starter = root.path().join("starter");
    std::fs::create_dir_all(&starter).unwrap();
    std::fs::write(starter.join("keep.txt"), b"same").unwrap();
    std::fs::write(starter.join("edit.txt"), b"before").unwrap();
    std::fs::write(starter.join("delete.txt"), b"gone soon").unwrap();
    let mut opts = options(root.path(), "usage");
    opts.starter = Some(starter);
    let ws = TempWorkspace::create(&opts).unwrap();
    assert_eq!(ws.usage().unwrap(), Usage::default());

    ws.write_file(Path::new("edit.txt"), b"after!!").unwrap();
    std::fs::remove_file(ws.path().join("delete.txt")).unwrap();
    ws.write_file(Path::new(".hidden/secret"), b"12345")
        .unwrap();
    ws.write_file(Path::new("target/debug/build.o"), &[0u8; 1000])
        .unwrap();
    ws.write_file(Path::new("node_modules/a/b.js"), b"js")
        .unwrap();
    std::os::unix::fs::symlink("keep.txt", ws.path().join("link")).unwrap();
    let usage = ws.usage().unwrap();
    assert_eq!(
        usage,
        Usage {
            files: 5,
            bytes: 7 + 5 + 1000 + 2 + "keep.txt".len() as u64,
            created: 4,
            changed: 1,
            deleted: 1,
        }
    );
    ws.close(Outcome::Success).unwrap();
}

#[test]
fn a_touch_or_a_same_size_rewrite_counts_as_changed() {
    let root = scratch();
    let starter = root.path().join("starter");
    std::fs::create_dir_all(&starter).unwrap();
    std::fs::write(starter.join("a"), b"1234").unwrap();
    let mut opts = options(root.path(), "touch");
    opts.starter = Some(starter);
    let ws = TempWorkspace::create(&opts).unwrap();
    // Same size, same content: the change time still moves.
    std::fs::write(ws.path().join("a"), b"1234").unwrap();
    let usage = ws.usage().unwrap();
    assert_eq!((usage.changed, usage.bytes), (1, 4));
    ws.close(Outcome::Success).unwrap();
}
