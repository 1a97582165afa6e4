//! Unit tests of the sandbox's preparation (entering it is tested with real processes in
//! `tests/it/sandbox.rs`).

use std::path::PathBuf;

use super::{Network, Prepared, Sandbox, SandboxSupport};
use crate::ProcTrackError;

#[track_caller]
fn check(text: &str, expected: Result<Network, &str>) {
    let parsed: Result<Network, String> = text.parse();
    assert_eq!(parsed.as_ref().copied().map_err(String::as_str), expected);
    if let Ok(network) = parsed {
        assert_eq!(network.as_str(), text);
    }
}

#[test]
fn network_names() {
    check("host", Ok(Network::Host));
    check("none", Ok(Network::None));
    check("off", Err("invalid network \"off\": expected host or none"));
    check("", Err("invalid network \"\": expected host or none"));
}

#[test]
fn the_default_restricts_nothing() {
    let sandbox = Sandbox::default();
    assert!(sandbox.is_unrestricted());
    let prepared = Prepared::new(&sandbox, None).expect("nothing to prepare");
    assert!(prepared.ruleset.is_none() && prepared.network.is_none());
}

#[test]
fn a_missing_writable_path_is_refused_before_any_fork() {
    let support = SandboxSupport::detect();
    let sandbox = Sandbox {
        writable: Some(vec![PathBuf::from("/nonexistent/hyoka-sandbox-test")]),
        ..Sandbox::default()
    };
    let error = Prepared::new(&sandbox, None).expect_err("the path does not exist");
    let ProcTrackError::Sandbox { reason } = error else {
        panic!("unexpected error {error:?}");
    };
    // Without Landlock the refusal says so; with it, it names the path.
    match support.landlock {
        Ok(_) => assert!(
            reason.contains("/nonexistent/hyoka-sandbox-test"),
            "{reason}"
        ),
        Err(why) => assert_eq!(reason, why),
    }
}

#[test]
fn the_ruleset_is_built_when_landlock_is_there() {
    let support = SandboxSupport::detect();
    let dir = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox {
        writable: Some(vec![dir.path().to_owned()]),
        ..Sandbox::default()
    };
    match (support.landlock_in_force(), Prepared::new(&sandbox, None)) {
        (Some(abi), Ok(prepared)) => {
            assert!(prepared.ruleset.is_some());
            assert!((1..=super::LANDLOCK_TARGET_ABI).contains(&abi));
        }
        (None, Err(ProcTrackError::Sandbox { .. })) => {}
        (abi, other) => panic!("ABI {abi:?} but preparation gave {other:?}"),
    }
}

#[test]
fn detection_is_stable() {
    assert_eq!(SandboxSupport::detect(), SandboxSupport::detect());
}
