//! Unit tests of the sandbox decision: what is in force, or why the eval is refused, for each
//! mode on machines that offer more or less.

use std::path::{Path, PathBuf};

use hyoka_proctrack::{NetIsolation, Network, SandboxSupport};

use super::{SandboxMode, SandboxSettings, SandboxSpec, Writable, decide};

fn machine(landlock: Result<u32, &str>, network: NetIsolation) -> SandboxSupport {
    SandboxSupport {
        landlock: landlock.map_err(str::to_owned),
        network,
    }
}

fn spec(mode: SandboxMode, network: Network) -> SandboxSpec {
    SandboxSpec {
        mode,
        network,
        ..SandboxSpec::default()
    }
}

/// `Ok((abi in force, unavailable reason))`, or the start of the refusal.
#[track_caller]
fn check(
    spec: &SandboxSpec,
    support: &SandboxSupport,
    expected: Result<(Option<u32>, Option<&str>), &str>,
) {
    match (decide(spec, support), expected) {
        (Ok(decision), Ok((abi, unavailable))) => {
            assert_eq!(decision.landlock_abi, abi);
            assert_eq!(decision.unavailable.as_deref(), unavailable);
            assert_eq!(decision.network, spec.network);
        }
        (Err(reason), Err(start)) => assert!(reason.starts_with(start), "{reason}"),
        (got, want) => panic!("got {got:?}, expected {want:?}"),
    }
}

#[test]
fn strict_mode_needs_landlock() {
    let full = machine(Ok(7), NetIsolation::Direct);
    let old = machine(Ok(2), NetIsolation::Direct);
    let none = machine(Err("no landlock"), NetIsolation::Direct);
    let on = spec(SandboxMode::On, Network::Host);
    check(&on, &full, Ok((Some(7), None)));
    check(&on, &old, Err("--sandbox needs Landlock ABI 3"));
    check(
        &on,
        &none,
        Err("--sandbox needs Landlock, which this machine lacks: no landlock"),
    );
}

#[test]
fn newer_kernels_run_at_the_target_abi() {
    let newer = machine(Ok(9), NetIsolation::Direct);
    check(
        &spec(SandboxMode::On, Network::Host),
        &newer,
        Ok((Some(7), None)),
    );
}

#[test]
fn best_effort_runs_without_and_says_why() {
    let best = spec(SandboxMode::BestEffort, Network::Host);
    check(
        &best,
        &machine(Ok(2), NetIsolation::Direct),
        Ok((Some(2), None)),
    );
    check(
        &best,
        &machine(Err("no landlock"), NetIsolation::Direct),
        Ok((None, Some("no landlock"))),
    );
}

#[test]
fn no_network_needs_a_namespace() {
    let offline = spec(SandboxMode::Off, Network::None);
    check(
        &offline,
        &machine(Err("x"), NetIsolation::UserNamespace),
        Ok((None, None)),
    );
    check(
        &offline,
        &machine(Ok(7), NetIsolation::Unavailable("EPERM".into())),
        Err("--network none needs a network namespace"),
    );
    // Nothing asked, nothing probed or refused.
    assert!(!spec(SandboxMode::Off, Network::Host).is_requested());
    assert!(offline.is_requested());
}

#[test]
fn levels_resolve_field_by_field() {
    let cli = SandboxSettings {
        mode: Some(SandboxMode::BestEffort),
        ..SandboxSettings::default()
    };
    let eval = SandboxSettings {
        mode: Some(SandboxMode::Off),
        write: Some(vec![PathBuf::from("/opt/cache")]),
        ..SandboxSettings::default()
    };
    let defaults = SandboxSettings {
        network: Some(Network::None),
        read_only: Some(true),
        write: Some(vec![PathBuf::from("/ignored")]),
        ..SandboxSettings::default()
    };
    let resolved = SandboxSpec::resolve(&[&cli, &eval, &defaults]);
    assert_eq!(
        resolved,
        SandboxSpec {
            mode: SandboxMode::BestEffort,
            network: Network::None,
            write: vec![PathBuf::from("/opt/cache")],
            read_only: true,
        }
    );
    assert_eq!(SandboxSpec::resolve(&[]), SandboxSpec::default());
}

#[test]
fn writable_paths_and_the_record() {
    let decision = decide(
        &spec(SandboxMode::On, Network::None),
        &machine(Ok(7), NetIsolation::Direct),
    )
    .expect("allowed");
    let writable = Writable {
        workspace: PathBuf::from("/tmp/ws"),
        shared: vec![PathBuf::from("/tmp/tmpdir")],
    };
    let events = Path::new("/r/events.jsonl");
    let agent = decision.sandbox(&writable, true, &[events]);
    assert_eq!(
        agent.writable,
        Some(vec![
            PathBuf::from("/tmp/ws"),
            PathBuf::from("/tmp/tmpdir"),
            PathBuf::from("/r/events.jsonl"),
        ])
    );
    assert_eq!(agent.network, Network::None);
    // Read-only: the workspace is not among them.
    let read_only = decision.sandbox(&writable, false, &[]);
    assert_eq!(read_only.writable, Some(vec![PathBuf::from("/tmp/tmpdir")]));
    let record = decision.record(&writable, true, &[]);
    assert_eq!(record.landlock_abi, Some(7));
    assert_eq!(record.network, "none");
    assert_eq!(record.mode, "on");
    assert!(record.writable.contains(&"/dev/null".to_owned()));
    assert_eq!(record.denied_writes, None);
    assert!(record.denied_writes_unknown.is_some());
    // Best effort without Landlock: nothing confined, nothing listed.
    let without = decide(
        &spec(SandboxMode::BestEffort, Network::Host),
        &machine(Err("missing"), NetIsolation::Direct),
    )
    .expect("allowed");
    assert_eq!(without.sandbox(&writable, true, &[]).writable, None);
    let record = without.record(&writable, true, &[]);
    assert!(record.writable.is_empty());
    assert_eq!(record.unavailable.as_deref(), Some("missing"));
}

#[test]
fn mode_names() {
    for (text, mode) in [
        ("on", SandboxMode::On),
        ("true", SandboxMode::On),
        ("off", SandboxMode::Off),
        ("false", SandboxMode::Off),
        ("best-effort", SandboxMode::BestEffort),
    ] {
        assert_eq!(text.parse::<SandboxMode>(), Ok(mode));
    }
    assert!("maybe".parse::<SandboxMode>().is_err());
    assert_eq!(SandboxMode::BestEffort.as_str(), "best-effort");
}
