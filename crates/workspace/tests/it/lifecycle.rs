//! Creation, naming, marking, keep policies and drop (including during a panic).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use hyoka_workspace::{
    Closed, EvalId, KeepPolicy, RunId, RunVerdict, TempWorkspace, Workspace, WorkspaceError,
    read_marker, remove_tree,
};

use crate::support::{create, options, scratch};

#[test]
fn name_mode_and_marker() {
    let root = scratch();
    let mut opts = options(root.path(), "run-1");
    opts.eval_id = Some(EvalId::new("eval.a").unwrap());
    let ws = TempWorkspace::create(&opts).unwrap();
    let name = ws.path().file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.starts_with("hyoka-run-1-eval.a-"), "{name}");
    let suffix = &name["hyoka-run-1-eval.a-".len()..];
    assert_eq!(suffix.len(), 6, "{name}");
    assert!(suffix.bytes().all(|b| b.is_ascii_alphanumeric()), "{name}");
    let mode = std::fs::metadata(ws.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let marker = read_marker(ws.path()).unwrap().expect("marked");
    assert_eq!(marker.run_id, "run-1");
    assert_eq!(marker.eval_id, "eval.a");
    assert_eq!(marker.owner, Some(hyoka_workspace::MarkerOwner::pid(4242)));
    assert_eq!(marker.instance.as_deref(), Some("0123456789abcdef"));
    assert!(marker.created_unix > 1_700_000_000);
    ws.close(RunVerdict::Success).unwrap();
}

#[test]
fn the_marker_survives_the_agent_emptying_its_workspace() {
    let root = scratch();
    let ws = create(root.path(), "emptied");
    for entry in std::fs::read_dir(ws.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
    let marker = read_marker(ws.path()).unwrap();
    // The extended attribute lives on the directory itself; file systems without user
    // attributes fall back to a file, which the run's ledger backs up.
    if rustix::fs::getxattr(
        ws.path(),
        hyoka_workspace::MARKER_XATTR,
        &mut [0u8; 256][..],
    )
    .is_ok()
    {
        assert_eq!(marker.unwrap().run_id, "emptied");
    } else {
        eprintln!("note: no user xattrs here; the ledger is the only record");
    }
    ws.close(RunVerdict::Success).unwrap();
}

#[test]
fn unmarked_directories_are_not_ours() {
    let root = scratch();
    let stranger = root.path().join("hyoka-stranger-abcdef");
    std::fs::create_dir(&stranger).unwrap();
    assert_eq!(read_marker(&stranger).unwrap(), None);
}

#[test]
fn keep_policies() {
    let root = scratch();
    let cases = [
        (KeepPolicy::Never, RunVerdict::Success, false),
        (KeepPolicy::Never, RunVerdict::Failure, false),
        (KeepPolicy::OnFailure, RunVerdict::Success, false),
        (KeepPolicy::OnFailure, RunVerdict::Failure, true),
        (KeepPolicy::Always, RunVerdict::Success, true),
        (KeepPolicy::Always, RunVerdict::Failure, true),
    ];
    for (keep, outcome, kept) in cases {
        let mut opts = options(root.path(), "keep");
        opts.keep = keep;
        let ws = TempWorkspace::create(&opts).unwrap();
        ws.write_file(Path::new("out.txt"), b"x").unwrap();
        let path = ws.path().to_owned();
        let closed = ws.close(outcome).unwrap();
        assert_eq!(path.exists(), kept, "{keep:?} {outcome:?}");
        assert_eq!(
            matches!(closed, Closed::Kept(_)),
            kept,
            "{keep:?} {outcome:?}"
        );
        if kept {
            assert_eq!(closed, Closed::Kept(path.clone()));
            assert!(remove_tree(&path).is_complete());
        }
    }
}

#[test]
fn keep_policy_parses_the_cli_spelling() {
    assert_eq!("never".parse(), Ok(KeepPolicy::Never));
    assert_eq!("on-failure".parse(), Ok(KeepPolicy::OnFailure));
    assert_eq!("always".parse(), Ok(KeepPolicy::Always));
    assert!(
        "sometimes"
            .parse::<KeepPolicy>()
            .unwrap_err()
            .contains("\"sometimes\"")
    );
}

#[test]
fn drop_removes_and_counts_as_failure() {
    let root = scratch();
    let path = {
        let ws = create(root.path(), "dropped");
        ws.write_file(Path::new("x"), b"x").unwrap();
        ws.path().to_owned()
    };
    assert!(!path.exists());

    let mut opts = options(root.path(), "dropped-kept");
    opts.keep = KeepPolicy::OnFailure;
    let path = TempWorkspace::create(&opts).unwrap().path().to_owned();
    assert!(
        path.exists(),
        "on-failure keeps a workspace that was never closed"
    );
    assert!(remove_tree(&path).is_complete());
}

#[test]
fn drop_during_a_panic_removes_the_workspace() {
    let root = scratch();
    let root_path = root.path().to_owned();
    let seen = std::sync::Mutex::new(None);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let ws = create(&root_path, "panicked");
        ws.write_file(Path::new("half/written.txt"), b"x").unwrap();
        *seen.lock().unwrap() = Some(ws.path().to_owned());
        panic!("agent harness bug");
    }));
    assert!(result.is_err());
    let path = seen.lock().unwrap().clone().unwrap();
    assert!(!path.exists(), "{path:?} survived the panic");
    assert!(crate::support::entries(&root_path).is_empty());
}

#[test]
fn bad_roots_and_ids_create_nothing() {
    let root = scratch();
    let file = root.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for bad_root in [file.clone(), root.path().join("missing")] {
        let err = TempWorkspace::create(&options(&bad_root, "x")).unwrap_err();
        assert!(matches!(err, WorkspaceError::RootNotDir { .. }), "{err}");
    }
    assert!(RunId::new("../evil").is_err());
    let mut opts = options(root.path(), "starterless");
    opts.starter = Some(root.path().join("no-such-starter"));
    let err = TempWorkspace::create(&opts).unwrap_err();
    assert!(matches!(err, WorkspaceError::StarterNotDir { .. }), "{err}");
    assert_eq!(crate::support::entries(root.path()), ["a-file"]);
}
