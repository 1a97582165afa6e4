//! Unit tests of the sandbox decision: what is in force, or why the eval is refused, for each
//! mode on machines that offer more or less.

use std::path::{Path, PathBuf};

use hyoka_proctrack::{NetIsolation, Network, SandboxSupport};

use hyoka_proctrack::Mount;

use super::{SandboxMode, SandboxSettings, SandboxSpec, View, Writable, decide, hidden_dirs, plan};

fn machine(landlock: Result<u32, &str>, network: NetIsolation) -> SandboxSupport {
    SandboxSupport {
        landlock: landlock.map_err(str::to_owned),
        network,
        mounts: Ok(()),
        harden: Ok(()),
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
            read: Vec::new(),
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
    let agent = decision.sandbox(&writable, &View::default(), true, &[events]);
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
    let read_only = decision.sandbox(&writable, &View::default(), false, &[]);
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
    assert_eq!(
        without
            .sandbox(&writable, &View::default(), true, &[])
            .writable,
        None
    );
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

/// Regression test for issue 25: a strict sandbox is refused where a mount namespace or the
/// seccomp filters cannot be had; best effort runs with what there is and says what is
/// missing.
#[test]
fn strict_mode_needs_a_mount_namespace_and_seccomp() {
    let mut no_mounts = machine(Ok(7), NetIsolation::Direct);
    no_mounts.mounts = Err("no user namespaces".to_owned());
    let mut no_seccomp = machine(Ok(7), NetIsolation::Direct);
    no_seccomp.harden = Err("no seccomp".to_owned());
    let on = spec(SandboxMode::On, Network::Host);
    check(&on, &no_mounts, Err("--sandbox needs a mount namespace"));
    check(&on, &no_seccomp, Err("--sandbox needs seccomp"));
    let best = spec(SandboxMode::BestEffort, Network::Host);
    let decision = decide(&best, &no_mounts).expect("best effort runs");
    assert!(!decision.mounts && decision.harden);
    assert_eq!(decision.unavailable.as_deref(), Some("no user namespaces"));
    let full = decide(&on, &machine(Ok(7), NetIsolation::Direct)).expect("allowed");
    assert!(full.mounts && full.harden);
}

#[test]
fn the_caller_s_home_runtime_directory_registry_and_run_are_hidden() {
    let env = |pairs: &[(&str, &str)]| -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    };
    assert_eq!(
        hidden_dirs(&env(&[
            ("HOME", "/home/u"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("HYOKA_RUNTIME_DIR", "/srv/hyoka"),
            ("PATH", "/usr/bin"),
        ])),
        [
            PathBuf::from("/run"),
            PathBuf::from("/home/u"),
            PathBuf::from("/run/user/1000"),
            PathBuf::from("/srv/hyoka"),
        ]
    );
    // A home of `/` or a relative one hides nothing.
    assert_eq!(hidden_dirs(&env(&[("HOME", "/")])), [PathBuf::from("/run")]);
    assert_eq!(
        hidden_dirs(&env(&[("HOME", "home")])),
        [PathBuf::from("/run")]
    );
}

#[test]
fn the_plan_hides_first_then_binds_parents_before_children() {
    let home = tempfile::tempdir().unwrap();
    let tools = home.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    let view = View {
        hidden: vec![home.path().to_owned(), PathBuf::from("/hyoka-not-there")],
        read: vec![tools.clone()],
        tmp: Some(PathBuf::from("/w/tmpdir")),
        // The run's records: beneath a writable path here, elsewhere not.
        protected: vec![PathBuf::from("/w/ws/reports/r1"), PathBuf::from("/r/r1")],
    };
    let writable = [
        PathBuf::from("/w/ws"),
        PathBuf::from("/w/tmpdir"),
        PathBuf::from("/w/ws/reports/r1/main/events.jsonl"),
    ];
    let read_only = [PathBuf::from("/w/ws/ro")];
    let mounts = plan(&view, &writable, &read_only).mounts;
    let targets: Vec<String> = mounts
        .iter()
        .map(|m| {
            let kind = match m {
                Mount::Tmpfs { .. } => "tmpfs",
                Mount::Bind { writable: true, .. } => "rw",
                Mount::Bind { .. } => "ro",
                Mount::Devices { .. } => "dev",
            };
            format!("{kind} {}", m.target().display())
        })
        .filter(|t| !t.contains("resolv"))
        .collect();
    // A home under the temp directory would be covered by the private `/tmp`; this one is
    // not. A hidden directory that does not exist is left out.
    let home_line = format!("tmpfs {}", home.path().display());
    let tools_line = format!("ro {}", tools.display());
    let expected_start = if home.path().starts_with("/tmp") {
        vec!["rw /tmp".to_owned()]
    } else {
        vec![home_line, "rw /tmp".to_owned()]
    };
    assert_eq!(targets[..expected_start.len()], expected_start[..]);
    assert!(targets.contains(&"dev /dev".to_owned()), "{targets:?}");
    assert!(targets.contains(&tools_line), "{targets:?}");
    let ws = targets
        .iter()
        .position(|t| t == "rw /w/ws")
        .expect("workspace");
    let ro = targets
        .iter()
        .position(|t| t == "ro /w/ws/ro")
        .expect("read-only");
    assert!(ws < ro, "{targets:?}");
    // Records beneath a writable path are bound read-only over it, and the writable events
    // file inside them after that; records elsewhere are not bound at all.
    let records = targets
        .iter()
        .position(|t| t == "ro /w/ws/reports/r1")
        .expect("records read-only");
    let events = targets
        .iter()
        .position(|t| t == "rw /w/ws/reports/r1/main/events.jsonl")
        .expect("events file");
    assert!(ws < records && records < events, "{targets:?}");
    assert!(!targets.iter().any(|t| t.contains("/r/r1")), "{targets:?}");
    // The temp directory is seen at /tmp only.
    assert!(!targets.contains(&"rw /w/tmpdir".to_owned()), "{targets:?}");
}
