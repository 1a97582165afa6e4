//! Usage accounting against the starter snapshot.

use std::path::Path;

use hyoka_workspace::{RunVerdict, TempWorkspace, Usage, Workspace};

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
    ws.close(RunVerdict::Success).unwrap();
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
    ws.close(RunVerdict::Success).unwrap();
}

#[test]
fn the_tracker_follows_changes_and_agrees_with_a_full_scan() {
    use hyoka_workspace::{UsageTracker, scan};
    let root = scratch();
    let starter = root.path().join("starter");
    std::fs::create_dir_all(starter.join("lib")).unwrap();
    std::fs::write(starter.join("lib/a.rs"), b"aaaa").unwrap();
    std::fs::write(starter.join("b.rs"), b"bb").unwrap();
    let mut opts = options(root.path(), "tracker");
    opts.starter = Some(starter);
    let ws = TempWorkspace::create(&opts).unwrap();
    let p = ws.path().to_owned();
    let mut tracker = UsageTracker::new(&p, ws.snapshot().clone());
    assert_eq!(tracker.rescan().unwrap(), Usage::default());

    std::fs::write(p.join("new.txt"), b"12345").unwrap();
    assert_eq!(tracker.update(&p.join("new.txt")).files, 1);
    std::fs::write(p.join("new.txt"), b"1234567").unwrap();
    let usage = tracker.update(&p.join("new.txt"));
    assert_eq!(
        (usage.files, usage.bytes),
        (1, 7),
        "a rewrite replaces, not adds"
    );
    std::fs::write(p.join("lib/a.rs"), b"changed!").unwrap();
    tracker.update(&p.join("lib/a.rs"));
    std::fs::remove_file(p.join("b.rs")).unwrap();
    tracker.update(&p.join("b.rs"));
    // A directory that appeared with files already inside is walked once.
    std::fs::create_dir_all(p.join("build/out")).unwrap();
    std::fs::write(p.join("build/out/x.o"), [0u8; 100]).unwrap();
    std::fs::write(p.join("build/y.o"), [0u8; 10]).unwrap();
    tracker.update(&p.join("build"));
    // Reporting the same path twice changes nothing.
    tracker.update(&p.join("build"));
    std::fs::remove_file(p.join("new.txt")).unwrap();
    tracker.update(&p.join("new.txt"));
    let tracked = tracker.usage();
    let scanned = scan(&p, ws.snapshot()).unwrap();
    assert_eq!(tracked, scanned);
    assert_eq!(
        tracked,
        Usage {
            files: 3,
            bytes: 8 + 100 + 10,
            created: 2,
            changed: 1,
            deleted: 1
        }
    );
    // A removed directory needs a rescan, which agrees again.
    std::fs::remove_dir_all(p.join("build")).unwrap();
    assert_eq!(tracker.rescan().unwrap(), scan(&p, ws.snapshot()).unwrap());
    assert_eq!(tracker.update(Path::new("/elsewhere/x")), tracker.usage());
    ws.close(RunVerdict::Success).unwrap();
}
