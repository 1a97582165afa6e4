//! Tests of the removal rules on real directories.

use super::*;
use crate::{
    KeepPolicy, RunId, RunVerdict, TempWorkspace, Workspace as _, WorkspaceOptions, read_marker,
};

const TOKEN: &str = "0123456789abcdef";

/// A workspace of run `r1`, instance `TOKEN`, owner pid 4194000 (never alive), left behind
/// as a crashed run leaves it (detached: neither removed nor kept).
fn workspace(root: &Path) -> PathBuf {
    made(root, KeepPolicy::Never).detach()
}

fn made(root: &Path, keep: KeepPolicy) -> TempWorkspace {
    TempWorkspace::create(&WorkspaceOptions {
        root: root.to_owned(),
        run_id: RunId::new("r1").unwrap(),
        eval_id: None,
        keep,
        starter: None,
        inject: Vec::new(),
        instance: Some(TOKEN.to_owned()),
        owner: Some(MarkerOwner::pid(4_194_000)),
    })
    .unwrap()
}

fn expected(instance: InstanceRule<'_>) -> Expected<'_> {
    Expected {
        run_id: "r1",
        instance,
        owner_uid: None,
        kept_before: None,
        recorded_kept: false,
    }
}

/// Regression test for issue 25: a process of the user rewrote a kept workspace's marker
/// without ` kept`, and `clean` removed it. The run's record keeps it whatever the marker
/// says; only a request for kept workspaces removes it.
#[test]
fn a_workspace_the_record_keeps_stays_whatever_its_marker_says() {
    let root = tempfile::tempdir().unwrap();
    let roots = [root.path().to_owned()];
    let ws = workspace(root.path());
    assert_eq!(read_marker(&ws).unwrap().map(|m| m.kept), Some(false));
    let recorded = Expected {
        recorded_kept: true,
        ..expected(InstanceRule::Exactly(TOKEN))
    };
    for dry_run in [true, false] {
        assert_eq!(
            remove_marked(&roots, &ws, &recorded, &|_, _| false, dry_run),
            Disposal::Kept
        );
    }
    assert!(ws.exists());
    let asked = Expected {
        kept_before: Some(u64::MAX),
        ..recorded
    };
    assert!(matches!(
        check(&roots, &ws, &asked, false),
        Disposal::Removed(_)
    ));
}

/// Regression test for issue 12: `hyoka clean` deleted workspaces kept by
/// `--keep-workspace always` or `on-failure`. A kept workspace is left alone (also in a dry
/// run) unless kept ones made before a cutoff are asked for.
#[test]
fn a_kept_workspace_is_left_alone_unless_kept_ones_are_asked_for() {
    let root = tempfile::tempdir().unwrap();
    let roots = [root.path().to_owned()];
    let always = made(root.path(), KeepPolicy::Always);
    let always_path = always.path().to_owned();
    assert!(matches!(
        always.close(RunVerdict::Success),
        Ok(crate::Closed::Kept(_))
    ));
    let on_failure = made(root.path(), KeepPolicy::OnFailure);
    let failed_path = on_failure.path().to_owned();
    on_failure.close(RunVerdict::Failure).unwrap();
    // A workspace dropped unclosed (a panic) with `on-failure` is kept, and marked.
    let dropped = made(root.path(), KeepPolicy::OnFailure);
    let dropped_path = dropped.path().to_owned();
    drop(dropped);
    let rule = InstanceRule::Exactly(TOKEN);
    for path in [&always_path, &failed_path, &dropped_path] {
        assert_eq!(read_marker(path).unwrap().map(|m| m.kept), Some(true));
        for dry_run in [true, false] {
            let got = remove_marked(&roots, path, &expected(rule), &|_, _| false, dry_run);
            assert_eq!(got, Disposal::Kept, "{path:?}");
        }
        assert!(path.exists());
        // Asked for kept ones made before now: a cutoff before its creation keeps it.
        let created = read_marker(path).unwrap().unwrap().created_unix;
        let older = Expected {
            kept_before: Some(created - 1),
            ..expected(rule)
        };
        assert_eq!(check(&roots, path, &older, false), Disposal::Kept);
        // Its owner still running keeps it whatever is asked.
        let all = Expected {
            kept_before: Some(u64::MAX),
            ..expected(rule)
        };
        assert!(matches!(
            check(&roots, path, &all, true),
            Disposal::KeptLive(_)
        ));
        assert_eq!(
            remove_marked(&roots, path, &all, &|_, _| false, true),
            Disposal::WouldRemove
        );
        assert!(matches!(
            check(&roots, path, &all, false),
            Disposal::Removed(_)
        ));
        assert!(!path.exists());
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
