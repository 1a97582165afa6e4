//! Safe removal of hostile trees: links out, loops, read-only trees, odd names, special
//! files, bind mounts and deep nesting.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use hyoka_workspace::{Closed, LeftoverReason, RunVerdict, WorkspaceError, remove_tree};

use crate::support::{create, entries, make_writable, scratch, sentinel};

#[test]
fn links_out_are_unlinked_and_their_targets_untouched() {
    let root = scratch();
    let outside = sentinel(root.path());
    let ws = create(root.path(), "links");
    let p = hyoka_workspace::Workspace::path(&ws).to_owned();
    symlink(&outside.dir, p.join("to-dir")).unwrap();
    symlink(&outside.file, p.join("to-file")).unwrap();
    std::fs::create_dir(p.join("sub")).unwrap();
    symlink("../../outside", p.join("sub/relative-out")).unwrap();
    symlink("/", p.join("to-root")).unwrap();

    let closed = ws.close(RunVerdict::Success).unwrap();
    assert!(
        matches!(closed, Closed::Removed(ref r) if r.is_complete()),
        "{closed:?}"
    );
    assert!(!p.exists());
    outside.assert_intact();
    assert_eq!(entries(&outside.dir), ["precious.txt"]);
}

#[test]
fn link_loops_and_dangling_links_go() {
    let root = scratch();
    let ws = create(root.path(), "loops");
    let p = hyoka_workspace::Workspace::path(&ws).to_owned();
    symlink("b", p.join("a")).unwrap();
    symlink("a", p.join("b")).unwrap();
    symlink("self", p.join("self")).unwrap();
    symlink("does/not/exist", p.join("dangling")).unwrap();
    std::fs::create_dir(p.join("d")).unwrap();
    symlink("..", p.join("d/up")).unwrap();
    symlink(".", p.join("d/here")).unwrap();
    ws.close(RunVerdict::Success).unwrap();
    assert!(!p.exists());
}

#[test]
fn read_only_trees_go() {
    let root = scratch();
    let ws = create(root.path(), "readonly");
    let p = hyoka_workspace::Workspace::path(&ws).to_owned();
    std::fs::create_dir_all(p.join("ro/inner")).unwrap();
    std::fs::write(p.join("ro/inner/file"), b"x").unwrap();
    std::fs::write(p.join("ro/file"), b"x").unwrap();
    for (path, mode) in [
        ("ro/inner/file", 0o444),
        ("ro/file", 0o000),
        ("ro/inner", 0o555),
        ("ro", 0o500),
    ] {
        std::fs::set_permissions(p.join(path), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::create_dir(p.join("locked")).unwrap();
    std::fs::write(p.join("locked/file"), b"x").unwrap();
    std::fs::set_permissions(p.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let result = ws.close(RunVerdict::Success);
    make_writable(&p);
    result.unwrap();
    assert!(!p.exists());
}

#[test]
fn read_only_trees_go_without_root_privileges() {
    // Root ignores permission bits, so the chmod path only runs for an unprivileged user.
    // The removal runs in a child that drops to `nobody` before removing.
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let root = scratch();
    let tree = root.path().join("tree");
    std::fs::create_dir_all(tree.join("a/b")).unwrap();
    std::fs::write(tree.join("a/b/f"), b"x").unwrap();
    std::fs::write(tree.join("a/f"), b"x").unwrap();
    let nobody = 65534;
    std::os::unix::fs::chown(root.path(), Some(nobody), Some(nobody)).unwrap();
    for path in ["tree", "tree/a", "tree/a/b", "tree/a/b/f", "tree/a/f"] {
        std::os::unix::fs::chown(root.path().join(path), Some(nobody), Some(nobody)).unwrap();
    }
    std::fs::set_permissions(tree.join("a/b"), std::fs::Permissions::from_mode(0o500)).unwrap();
    std::fs::set_permissions(tree.join("a"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let helper = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "removal::remove_as_nobody_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HYOKA_TEST_REMOVE_AS_NOBODY", &tree)
        .output()
        .unwrap();
    assert!(
        helper.status.success(),
        "{}",
        String::from_utf8_lossy(&helper.stdout)
    );
    assert!(
        !tree.exists(),
        "{}",
        String::from_utf8_lossy(&helper.stdout)
    );
}

/// Runs only as the child of `read_only_trees_go_without_root_privileges`.
#[test]
fn remove_as_nobody_child() {
    let Some(tree) = std::env::var_os("HYOKA_TEST_REMOVE_AS_NOBODY") else {
        return;
    };
    rustix::thread::set_thread_res_gid(
        rustix::process::Gid::from_raw(65534),
        rustix::process::Gid::from_raw(65534),
        rustix::process::Gid::from_raw(65534),
    )
    .unwrap();
    rustix::thread::set_thread_res_uid(
        rustix::process::Uid::from_raw(65534),
        rustix::process::Uid::from_raw(65534),
        rustix::process::Uid::from_raw(65534),
    )
    .unwrap();
    let report = remove_tree(Path::new(&tree));
    assert!(report.is_complete(), "{report:?}");
}

#[test]
fn odd_names_and_special_files_go() {
    let root = scratch();
    let ws = create(root.path(), "odd");
    let p = hyoka_workspace::Workspace::path(&ws).to_owned();
    for name in [
        "-rf",
        " leading space",
        "trailing space ",
        "new\nline",
        "tab\there",
        "ünïcødé ✻",
        "*",
        "...",
    ] {
        std::fs::write(p.join(name), name).unwrap();
    }
    let invalid_utf8 = std::ffi::OsStr::from_bytes_compat(b"bad-\xff\xfe");
    std::fs::write(p.join(invalid_utf8), b"x").unwrap();
    std::fs::write(p.join("x".repeat(255)), b"long name").unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(p.join("socket")).unwrap();
    ws.close(RunVerdict::Success).unwrap();
    assert!(!p.exists());
}

trait FromBytesCompat {
    fn from_bytes_compat(bytes: &[u8]) -> &Self;
}

impl FromBytesCompat for std::ffi::OsStr {
    fn from_bytes_compat(bytes: &[u8]) -> &Self {
        std::os::unix::ffi::OsStrExt::from_bytes(bytes)
    }
}

#[test]
fn deep_nesting_neither_overflows_nor_runs_out_of_descriptors() {
    let root = scratch();
    let ws = create(root.path(), "deep");
    let p = hyoka_workspace::Workspace::path(&ws).to_owned();
    // 2,000 levels: deeper than PATH_MAX allows in one path and far beyond the open-depth cap.
    let mut dir =
        rustix::fs::open(&p, rustix::fs::OFlags::DIRECTORY, rustix::fs::Mode::empty()).unwrap();
    for level in 0..2000 {
        rustix::fs::mkdirat(&dir, "d", rustix::fs::Mode::RWXU).unwrap();
        if level % 100 == 0 {
            rustix::fs::openat(
                &dir,
                "f",
                rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY,
                rustix::fs::Mode::RUSR,
            )
            .unwrap();
        }
        dir = rustix::fs::openat(
            &dir,
            "d",
            rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
    }
    drop(dir);
    let closed = ws.close(RunVerdict::Success).unwrap();
    let Closed::Removed(report) = closed else {
        panic!("kept")
    };
    assert_eq!(report.removed, 2000 + 20 + 1);
    assert!(!p.exists());
}

/// Detaches a bind mount when dropped, so a failing test never leaves one behind (the scratch
/// root's own removal would otherwise delete through it).
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = rustix::mount::unmount(&self.0, rustix::mount::UnmountFlags::DETACH);
    }
}

#[test]
fn a_bind_mount_inside_is_reported_not_deleted_through() {
    let root = scratch();
    let outside = sentinel(root.path());
    let ws = create(root.path(), "mount");
    let p = hyoka_workspace::Workspace::path(&ws).to_owned();
    std::fs::create_dir(p.join("mnt")).unwrap();
    std::fs::write(p.join("regular"), b"x").unwrap();
    if rustix::mount::mount_bind(&outside.dir, p.join("mnt")).is_err() {
        eprintln!("skipped: cannot bind-mount here (needs CAP_SYS_ADMIN)");
        return;
    }
    let guard = Unmount(p.join("mnt"));
    let err = ws.close(RunVerdict::Success).unwrap_err();
    let WorkspaceError::RemoveIncomplete { report, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(report.leftovers.len(), 2, "{report:?}");
    assert_eq!(report.leftovers[0].path, p.join("mnt"));
    assert_eq!(report.leftovers[0].reason, LeftoverReason::MountPoint);
    assert_eq!(report.leftovers[1].path, p);
    assert_eq!(report.leftovers[1].reason, LeftoverReason::NotEmpty);
    assert!(err.to_string().contains("mount point"), "{err}");
    outside.assert_intact();
    assert!(
        !p.join("regular").exists(),
        "the rest of the workspace went"
    );
    drop(guard);
    // Once unmounted, a second pass removes what is left.
    assert!(remove_tree(&p).is_complete());
    outside.assert_intact();
}

#[test]
fn removing_a_missing_tree_is_complete() {
    let root = scratch();
    let report = remove_tree(&root.path().join("never-existed"));
    assert!(report.is_complete());
    assert_eq!(report.removed, 0);
}

#[test]
fn a_tree_root_that_is_a_link_is_unlinked_only() {
    let root = scratch();
    let outside = sentinel(root.path());
    let link = root.path().join("link");
    symlink(&outside.dir, &link).unwrap();
    assert!(remove_tree(&link).is_complete());
    assert!(!link.exists());
    outside.assert_intact();
}
