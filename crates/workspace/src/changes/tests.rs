//! `scan_changes` names what `scan` counts; `read_beneath` reads only regular files inside.

use std::path::Path;

use super::{ChangeKind, read_beneath, scan_changes};
use crate::{Snapshot, WorkspaceError, scan};

#[track_caller]
fn check(root: &Path, snapshot: &Snapshot, limit: usize, expected: &[(&str, ChangeKind)]) {
    let (usage, changes) = scan_changes(root, snapshot, limit).unwrap();
    assert_eq!(
        usage,
        scan(root, snapshot).unwrap(),
        "the counts are scan's"
    );
    let mut got: Vec<(String, ChangeKind)> =
        changes.into_iter().map(|c| (c.path, c.kind)).collect();
    got.sort();
    let mut want: Vec<(String, ChangeKind)> = expected
        .iter()
        .map(|(p, k)| ((*p).to_owned(), *k))
        .collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn names_created_changed_and_deleted_files_up_to_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.rs"), "a\n").unwrap();
    std::fs::write(root.join("gone"), "x").unwrap();
    std::fs::write(root.join("same"), "s").unwrap();
    let snapshot = Snapshot::take(root).unwrap();
    check(root, &snapshot, 10, &[]);
    std::fs::write(root.join("src/a.rs"), "a\nb\n").unwrap();
    std::fs::write(root.join("new"), "n").unwrap();
    std::fs::remove_file(root.join("gone")).unwrap();
    check(
        root,
        &snapshot,
        10,
        &[
            ("src/a.rs", ChangeKind::Changed),
            ("new", ChangeKind::Created),
            ("gone", ChangeKind::Deleted),
        ],
    );
    let (usage, named) = scan_changes(root, &snapshot, 1).unwrap();
    assert_eq!((usage.files, usage.deleted, named.len()), (2, 1, 1));
    let (_, named) = scan_changes(root, &snapshot, 0).unwrap();
    assert!(named.is_empty());
}

#[test]
fn reads_a_bounded_prefix_of_regular_files_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("f"), "0123456789").unwrap();
    let read = read_beneath(root, Path::new("f"), 4).unwrap();
    assert_eq!(
        (read.bytes.as_slice(), read.size, read.is_cut()),
        (&b"0123"[..], 10, true)
    );
    assert!(!read_beneath(root, Path::new("f"), 100).unwrap().is_cut());
    // A link, even to a file inside, is refused; so is a FIFO (without blocking) and `..`.
    std::os::unix::fs::symlink("f", root.join("link")).unwrap();
    assert!(matches!(
        read_beneath(root, Path::new("link"), 4),
        Err(WorkspaceError::Escape { .. })
    ));
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    assert!(matches!(
        read_beneath(root, Path::new("fifo"), 4),
        Err(WorkspaceError::Io { .. })
    ));
    assert!(matches!(
        read_beneath(root, Path::new("../f"), 4),
        Err(WorkspaceError::InvalidPath { .. })
    ));
    assert!(matches!(
        read_beneath(root, Path::new("absent"), 4),
        Err(WorkspaceError::NotFound { .. })
    ));
}
