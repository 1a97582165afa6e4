//! The sandbox policy on `FakeHost`: every process of an eval is spawned with the writable
//! paths and network the policy decides (the agent's own set differs), a private temp
//! directory comes and goes with the eval, the report records it, and an eval the machine
//! cannot sandbox is refused before anything is created.

use std::path::PathBuf;

use hyoka_eval::{EvalError, EventSource, FakeProgram, PhaseCommand, SandboxMode, Status, run};
use hyoka_proctrack::{NetIsolation, Network, SandboxSupport};

use crate::support::{Case, eval, ms};

fn sandboxed(mode: SandboxMode, network: Network) -> hyoka_eval::EvalSpec {
    let mut spec = eval("e", "agent");
    spec.sandbox.mode = mode;
    spec.sandbox.network = network;
    spec
}

#[tokio::test(start_paused = true)]
async fn every_process_gets_the_decided_sandbox() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().writes("out.txt", "x").exits(0))
        .program("build", FakeProgram::new().exits(0));
    let mut spec = sandboxed(SandboxMode::On, Network::None);
    spec.sandbox.write = vec![PathBuf::from("/opt/cache")];
    spec.sandbox.read_only = true;
    spec.events = EventSource::Jsonl;
    spec.phases.isolate_home = true;
    spec.phases.build = Some(PhaseCommand {
        command: vec!["build".into()],
        timeout: ms(1_000),
    });
    let outcome = case.run(vec![spec]).await;
    let report = &outcome.reports[0];
    assert_eq!(report.status, Status::Passed);
    let spawned = case.host.spawned();
    let (_, agent) = spawned.iter().find(|(id, _)| id == "e").expect("agent");
    let (_, build) = spawned
        .iter()
        .find(|(id, _)| id == "e.build")
        .expect("build");
    let workspace = PathBuf::from(&report.workspace);
    // With a mount namespace the temp directory is the private /tmp.
    assert_eq!(env(agent, "TMPDIR"), Some(PathBuf::from("/tmp")));
    let home = env(agent, "HOME").expect("an isolated home");
    let tmp = agent.sandbox.writable.as_ref().expect("confined")[1].clone();
    assert!(
        tmp.to_string_lossy().starts_with("/mem/hyoka-case-e.tmp-"),
        "{}",
        tmp.display()
    );
    let events = case.path("e", "events.jsonl");
    // The agent: read-only workspace, so not in the list; its events file is.
    assert_eq!(
        agent.sandbox.writable,
        Some(vec![home.clone(), tmp.clone(), "/opt/cache".into(), events])
    );
    assert_eq!(agent.sandbox.network, Network::None);
    // The build may write the workspace, not the agent's events.
    assert_eq!(
        build.sandbox.writable,
        Some(vec![workspace, home, tmp.clone(), "/opt/cache".into()])
    );
    assert_eq!(build.sandbox.network, Network::None);
    assert_eq!(env(build, "TMPDIR"), Some(PathBuf::from("/tmp")));
    let record = report.sandbox.as_ref().expect("recorded");
    assert_eq!(record.mode, "on");
    assert_eq!(record.landlock_abi, Some(7));
    assert_eq!(record.network, "none");
    assert!(record.writable.contains(&tmp.display().to_string()));
    assert!(record.writable.contains(&"/dev/null".to_owned()));
    assert_eq!(record.denied_writes, None);
    // The temp directory was recorded for `clean` and is gone with the eval.
    assert!(
        case.host
            .recorded()
            .iter()
            .any(|(id, path)| id == "e.tmp" && *path == tmp)
    );
    case.assert_nothing_left();
}

fn env(command: &hyoka_proctrack::AgentCommand, name: &str) -> Option<PathBuf> {
    command
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| PathBuf::from(v))
}

#[tokio::test(start_paused = true)]
async fn nothing_asked_nothing_changed() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().exits(0));
    let outcome = case.run(vec![eval("e", "agent")]).await;
    assert!(outcome.reports[0].sandbox.is_none());
    let (_, agent) = &case.host.spawned()[0];
    assert!(agent.sandbox.is_unrestricted());
    assert_eq!(env(agent, "TMPDIR"), None);
    assert!(!case.host.recorded().iter().any(|(id, _)| id == "e.tmp"));
}

#[tokio::test(start_paused = true)]
async fn best_effort_without_landlock_runs_and_records_why() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().exits(0));
    case.host.set_sandbox_support(SandboxSupport {
        landlock: Err("no Landlock in this fake".to_owned()),
        network: NetIsolation::Direct,
        mounts: Ok(()),
        harden: Ok(()),
    });
    let outcome = case
        .run(vec![sandboxed(SandboxMode::BestEffort, Network::Host)])
        .await;
    let report = &outcome.reports[0];
    assert_eq!(report.status, Status::Passed);
    let record = report.sandbox.as_ref().expect("recorded");
    assert_eq!(record.landlock_abi, None);
    assert_eq!(
        record.unavailable.as_deref(),
        Some("no Landlock in this fake")
    );
    assert!(record.writable.is_empty());
    let (_, agent) = &case.host.spawned()[0];
    assert_eq!(agent.sandbox.writable, None);
    // The private temp directory is there all the same.
    assert!(env(agent, "TMPDIR").is_some());
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn a_sandbox_the_machine_cannot_give_is_refused_before_anything_exists() {
    for (support, spec, reason) in [
        (
            SandboxSupport {
                landlock: Err("missing".to_owned()),
                network: NetIsolation::Direct,
                mounts: Ok(()),
                harden: Ok(()),
            },
            sandboxed(SandboxMode::On, Network::Host),
            "--sandbox needs Landlock",
        ),
        (
            SandboxSupport {
                landlock: Ok(7),
                network: NetIsolation::Unavailable("EPERM".to_owned()),
                mounts: Ok(()),
                harden: Ok(()),
            },
            sandboxed(SandboxMode::Off, Network::None),
            "--network none needs a network namespace",
        ),
    ] {
        let case = Case::new();
        case.program("agent", FakeProgram::new().exits(0));
        case.host.set_sandbox_support(support);
        let plan = case.plan(vec![spec]);
        let err = refused(&case, &plan).await;
        assert!(err.is_bad_input(), "{err}");
        let EvalError::Sandbox {
            eval_id,
            reason: why,
        } = &err
        else {
            panic!("unexpected {err:?}");
        };
        assert_eq!(eval_id, "e");
        assert!(why.starts_with(reason), "{why}");
        assert!(case.host.spawned().is_empty());
        assert!(case.host.recorded().is_empty());
        assert!(!plan.run_dir().exists(), "nothing is created");
    }
}

/// Runs `plan`, which must be refused as bad input before anything is created.
async fn refused(case: &Case, plan: &hyoka_eval::RunPlan) -> EvalError {
    let err = run(
        plan.clone(),
        &case.host.harness(),
        hyoka_eval::Stop::never(),
        std::sync::Arc::new(hyoka_eval::NoObserver),
    )
    .await
    .expect_err("refused");
    assert!(err.is_bad_input(), "{err}");
    assert!(!plan.run_dir().exists(), "nothing is created");
    err
}
