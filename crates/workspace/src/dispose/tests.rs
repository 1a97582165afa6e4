//! Tests of the removal rules on real directories.

use super::*;
use crate::{KeepPolicy, RunId, RunVerdict, TempWorkspace, Workspace as _, WorkspaceOptions};

const TOKEN: &str = "0123456789abcdef";

/// A kept workspace of run `r1`, instance `TOKEN`, owner pid 4194000 (never alive).
fn workspace(root: &Path) -> PathBuf {
    let ws = TempWorkspace::create(&WorkspaceOptions {
        root: root.to_owned(),
        run_id: RunId::new("r1").unwrap(),
        eval_id: None,
        keep: KeepPolicy::Always,
        starter: None,
        inject: Vec::new(),
        instance: Some(TOKEN.to_owned()),
        owner: Some(MarkerOwner::pid(4_194_000)),
    })
    .unwrap();
    let path = ws.path().to_owned();
    ws.close(RunVerdict::Success).unwrap();
    path
}

fn expected(instance: InstanceRule<'_>) -> Expected<'_> {
    Expected {
        run_id: "r1",
        instance,
        owner_uid: None,
    }
}

#[track_caller]
fn check(roots: &[PathBuf], path: &Path, expected: &Expected<'_>, alive: bool) -> Disposal {
    remove_marked(roots, path, expected, &|_, _| alive, false)
}

#[test]
fn a_workspace_of_the_run_instance_with_a_dead_owner_goes() {
    let root = tempfile::tempdir().unwrap();
    let roots = [root.path().to_owned()];
    let ws = workspace(root.path());
    let dry = remove_marked(
        &roots,
        &ws,
        &expected(InstanceRule::Exactly(TOKEN)),
        &|_, _| false,
        true,
    );
    assert_eq!(dry, Disposal::WouldRemove);
    assert!(ws.exists());
    assert!(matches!(
        check(&roots, &ws, &expected(InstanceRule::Exactly(TOKEN)), false),
        Disposal::Removed(_)
    ));
    assert!(!ws.exists());
    assert_eq!(
        check(&roots, &ws, &expected(InstanceRule::Exactly(TOKEN)), false),
        Disposal::AlreadyGone
    );
}

#[test]
fn a_live_owner_or_another_instance_keeps_it() {
    let root = tempfile::tempdir().unwrap();
    let roots = [root.path().to_owned()];
    let ws = workspace(root.path());
    assert!(matches!(
        check(&roots, &ws, &expected(InstanceRule::Exactly(TOKEN)), true),
        Disposal::KeptLive(_)
    ));
    for rule in [
        InstanceRule::Exactly("ffffffffffffffff"),
        InstanceRule::Absent,
    ] {
        assert!(
            matches!(
                check(&roots, &ws, &expected(rule), false),
                Disposal::Refused(_)
            ),
            "{rule:?}"
        );
    }
    let other_run = Expected {
        run_id: "r2",
        ..expected(InstanceRule::Any)
    };
    assert!(matches!(
        check(&roots, &ws, &other_run, false),
        Disposal::Refused(_)
    ));
    assert!(ws.exists());
}

#[test]
fn links_roots_and_unmarked_directories_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let roots = [root.path().to_owned()];
    let any = expected(InstanceRule::Any);
    // Outside every root.
    let outside = workspace(elsewhere.path());
    assert!(matches!(
        check(&roots, &outside, &any, false),
        Disposal::Refused(_)
    ));
    // A link inside the root to a marked workspace elsewhere.
    let link = root.path().join("hyoka-r1-linked");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    assert!(matches!(
        check(&roots, &link, &any, false),
        Disposal::Refused(_)
    ));
    // Reached through a linked parent.
    let via = root.path().join("via");
    std::os::unix::fs::symlink(elsewhere.path(), &via).unwrap();
    let through = via.join(outside.file_name().unwrap());
    assert!(matches!(
        check(&roots, &through, &any, false),
        Disposal::Refused(_)
    ));
    // Unmarked.
    let plain = root.path().join("hyoka-r1-plain00");
    std::fs::create_dir(&plain).unwrap();
    assert!(matches!(
        check(&roots, &plain, &any, false),
        Disposal::Refused(_)
    ));
    assert!(outside.exists() && plain.exists());
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn acting_for_a_user_needs_that_users_directory() {
    let root = tempfile::tempdir().unwrap();
    let roots = [root.path().to_owned()];
    let ws = workspace(root.path());
    let mine = rustix::process::geteuid().as_raw();
    let other = Expected {
        owner_uid: Some(mine + 1),
        ..expected(InstanceRule::Exactly(TOKEN))
    };
    assert!(matches!(
        check(&roots, &ws, &other, false),
        Disposal::Refused(_)
    ));
    let same = Expected {
        owner_uid: Some(mine),
        ..expected(InstanceRule::Exactly(TOKEN))
    };
    assert!(matches!(
        check(&roots, &ws, &same, false),
        Disposal::Removed(_)
    ));
}

#[test]
fn find_marked_lists_only_marked_directories() {
    let root = tempfile::tempdir().unwrap();
    let ws = workspace(root.path());
    std::fs::create_dir(root.path().join("hyoka-r1-plain00")).unwrap();
    std::os::unix::fs::symlink(&ws, root.path().join("hyoka-r1-link")).unwrap();
    let found = find_marked(root.path());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, ws);
    assert_eq!(found[0].1.instance.as_deref(), Some(TOKEN));
    std::fs::remove_dir_all(&ws).unwrap();
}
