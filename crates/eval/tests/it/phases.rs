//! Pass/fail precedence and phase ordering: setup, services, agent, build, review, cleanup;
//! an eval passes only when the agent exited 0 within its limits and every phase that ran
//! passed.

use hyoka_eval::{
    ErrorKind, FakeProgram, PhaseCommand, Readiness, ServiceSpec, Status, Termination,
};

use crate::support::{Case, eval, ms, phase, phases, tool_call, turn};

fn service(name: &str, program: &str, ready: Readiness) -> ServiceSpec {
    ServiceSpec {
        name: name.to_owned(),
        command: vec![program.into()],
        ready,
        timeout: ms(2_000),
        env: Vec::new(),
    }
}

fn command(program: &str) -> PhaseCommand {
    PhaseCommand {
        command: vec![program.into()],
        timeout: ms(60_000),
    }
}

#[tokio::test(start_paused = true)]
async fn a_passing_eval_runs_every_phase_in_order() {
    let case = Case::new();
    case.program("svc", FakeProgram::new().writes("ready", "up").hangs())
        .program(
            "agent",
            FakeProgram::new()
                .sleeps(ms(100))
                .prints(turn(1))
                .prints(tool_call(1, "Write"))
                .writes("src/main.rs", "fn main() {}")
                .sleeps(ms(100))
                .prints(turn(2))
                .exits(0),
        )
        .program("build", FakeProgram::new().exits(0))
        .program(
            "review",
            FakeProgram::new()
                .prints(r#"{"pass": true, "score": 0.9, "notes": "fine"}"#)
                .exits(0),
        );
    let mut spec = eval("e", "agent");
    spec.phases.services = vec![service("svc", "svc", Readiness::File("ready".into()))];
    spec.phases.build = Some(command("build"));
    spec.phases.review = Some(command("review"));
    let outcome = case.run(vec![spec]).await;
    let report = &outcome.reports[0];
    assert_eq!(
        phases(report),
        [
            "setup passed",
            "services passed",
            "agent passed",
            "build passed",
            "review passed",
            "cleanup passed"
        ]
    );
    assert_eq!(
        (report.status, report.termination),
        (Status::Passed, Termination::Exited)
    );
    assert_eq!(report.exit_code, Some(0));
    assert_eq!((report.counts.turns, report.counts.actions), (2, 1));
    // The service's readiness file was written before the agent: not the agent's output.
    assert_eq!(report.counts.files, 1);
    assert_eq!(report.review.as_ref().and_then(|v| v.score), Some(0.9));
    assert_eq!(case.spawned(), ["e.s.svc", "e", "e.build", "e.review"]);
    assert_eq!(
        phase(report, "agent").duration_ms,
        200,
        "virtual time is exact"
    );
    // The service ran until the end and was torn down with the eval.
    assert!(report.cleanup.processes_killed >= 1, "{:?}", report.cleanup);
    assert!(report.cleanup.workspace_removed);
    assert_eq!(outcome.summary.status, Status::Passed);
    assert!(!case.path("e", "status.json").exists());
    let written: hyoka_eval::Report =
        serde_json::from_slice(&std::fs::read(case.path("e", "report.json")).unwrap()).unwrap();
    assert_eq!(&written, report);
    case.assert_nothing_left();
}

#[track_caller]
fn check(report: &hyoka_eval::Report, status: Status, termination: Termination, expected: &[&str]) {
    assert_eq!(report.status, status, "{report:#?}");
    assert_eq!(report.termination, termination, "{report:#?}");
    assert_eq!(phases(report), expected, "{report:#?}");
}

#[tokio::test(start_paused = true)]
async fn a_later_phase_never_turns_a_failure_into_a_pass() {
    let case = Case::new();
    case.program("fails", FakeProgram::new().exits(1))
        .program("passes", FakeProgram::new().exits(0))
        .program("breaks", FakeProgram::new().exits(2))
        .program(
            "rejects",
            FakeProgram::new().prints(r#"{"pass": false}"#).exits(0),
        );
    let with = |id: &str, agent: &str, build: &str, review: &str| {
        let mut spec = eval(id, agent);
        spec.phases.build = Some(command(build));
        spec.phases.review = Some(command(review));
        spec
    };
    let outcome = case
        .run(vec![
            with("agent-fails", "fails", "passes", "passes"),
            with("build-fails", "passes", "breaks", "passes"),
            with("review-rejects", "passes", "passes", "rejects"),
        ])
        .await;
    let [agent, build, review] = &outcome.reports[..] else {
        panic!("three reports")
    };
    // The agent's failure stands; build and review still grade the partial work.
    check(
        agent,
        Status::Failed,
        Termination::Exited,
        &[
            "setup passed",
            "agent failed",
            "build passed",
            "review passed",
            "cleanup passed",
        ],
    );
    assert_eq!(agent.exit_code, Some(1));
    // A failed build skips the review.
    check(
        build,
        Status::Failed,
        Termination::Exited,
        &[
            "setup passed",
            "agent passed",
            "build failed",
            "review skipped",
            "cleanup passed",
        ],
    );
    assert_eq!(
        phase(build, "review").detail.as_deref(),
        Some("the build failed")
    );
    // A review whose verdict is a fail fails the eval, though every command exited 0.
    check(
        review,
        Status::Failed,
        Termination::Exited,
        &[
            "setup passed",
            "agent passed",
            "build passed",
            "review failed",
            "cleanup passed",
        ],
    );
    assert_eq!(
        phase(review, "review").detail.as_deref(),
        Some("the review's verdict is a fail")
    );
    assert_eq!(outcome.summary.totals.failed, 3);
    case.assert_nothing_left();
}

/// A missing agent command is the agent's result (a wrong command stays wrong however often
/// it runs), not the machine's: `failed`, never retried.
#[tokio::test(start_paused = true)]
async fn a_missing_agent_command_fails_and_nothing_grades_it() {
    let case = Case::new();
    case.program("build", FakeProgram::new().exits(0));
    let mut spec = eval("e", "no-such-agent");
    spec.phases.build = Some(command("build"));
    spec.retries = 3;
    let outcome = case.run(vec![spec]).await;
    let report = &outcome.reports[0];
    check(
        report,
        Status::Failed,
        Termination::SpawnFailed,
        &[
            "setup passed",
            "agent failed",
            "build skipped",
            "cleanup passed",
        ],
    );
    assert_eq!((report.error_kind, report.attempts), (None, 1));
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("cannot start")),
        "{report:#?}"
    );
    assert_eq!(
        phase(report, "build").detail.as_deref(),
        Some("the agent did not finish")
    );
    assert_eq!(outcome.summary.status, Status::Failed);
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn a_service_that_dies_before_it_is_ready_skips_the_agent() {
    let case = Case::new();
    case.program("svc", FakeProgram::new().sleeps(ms(300)).exits(3))
        .program("agent", FakeProgram::new().exits(0));
    let mut spec = eval("e", "agent");
    spec.phases.services = vec![service("svc", "svc", Readiness::File("never".into()))];
    let outcome = case.run(vec![spec]).await;
    let report = &outcome.reports[0];
    check(
        report,
        Status::Error,
        Termination::ServiceFailed,
        &[
            "setup passed",
            "services error",
            "agent skipped",
            "cleanup passed",
        ],
    );
    assert_eq!(report.error_kind, Some(ErrorKind::Infra));
    assert_eq!(
        report.error.as_deref(),
        Some("service svc exited with exit code 3 before it was ready")
    );
    assert_eq!(case.spawned(), ["e.s.svc"], "the agent never started");
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn a_service_that_is_never_ready_times_out() {
    let case = Case::new();
    case.program("svc", FakeProgram::new().hangs());
    let mut spec = eval("e", "agent");
    spec.phases.services = vec![service("svc", "svc", Readiness::File("never".into()))];
    let outcome = case.run(vec![spec]).await;
    let report = &outcome.reports[0];
    assert_eq!(report.termination, Termination::ServiceFailed);
    assert_eq!(
        report.error.as_deref(),
        Some("service svc was not ready within 2s")
    );
    assert_eq!(phase(report, "services").duration_ms, 2_000);
    // FIXME: the service is stopped (nothing is left), but its teardown report is dropped,
    // so `cleanup` does not count it.
    assert_eq!(report.cleanup.processes_killed, 0);
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn a_service_that_dies_while_the_agent_runs_is_an_infrastructure_error() {
    let case = Case::new();
    case.program("svc", FakeProgram::new().sleeps(ms(1_000)).exits(1))
        .program("agent", FakeProgram::new().hangs());
    let mut spec = eval("e", "agent");
    spec.phases.services = vec![service("svc", "svc", Readiness::Started)];
    let outcome = case.run(vec![spec]).await;
    let report = &outcome.reports[0];
    assert_eq!(
        (report.status, report.error_kind, report.termination),
        (
            Status::Error,
            Some(ErrorKind::Infra),
            Termination::ServiceFailed
        )
    );
    assert_eq!(
        report.error.as_deref(),
        Some("service svc died with exit code 1 while the agent ran")
    );
    assert_eq!(
        report.signal,
        Some(15),
        "the agent was stopped with SIGTERM"
    );
    assert_eq!(phase(report, "agent").duration_ms, 1_000);
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn an_isolated_home_clears_the_environment_but_the_basics_and_pass_env() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().exits(0));
    let mut spec = eval("e", "agent");
    spec.phases.isolate_home = true;
    spec.phases.pass_env = vec!["API_KEY".to_owned()];
    spec.env = vec![("MODE".into(), "eval".into())];
    let mut plan = case.plan(vec![spec]);
    plan.inherited_env = [("PATH", "/bin"), ("API_KEY", "k"), ("SECRET", "s")]
        .map(|(k, v)| (k.into(), v.into()))
        .to_vec();
    let outcome = case.run_plan(&plan, hyoka_eval::Stop::never()).await;
    assert_eq!(outcome.reports[0].status, Status::Passed);
    let (_, command) = &case.host.spawned()[0];
    assert!(command.env_clear);
    let var = |name: &str| {
        command
            .env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    let home = var("HOME").unwrap();
    assert!(home.starts_with("/mem/hyoka-case-e.home-"), "{home}");
    assert_eq!(var("XDG_CONFIG_HOME"), Some(format!("{home}/.config")));
    assert_eq!(
        (var("PATH"), var("API_KEY"), var("SECRET")),
        (Some("/bin".into()), Some("k".into()), None)
    );
    assert_eq!(var("MODE").as_deref(), Some("eval"));
    assert!(var("HYOKA_WORKSPACE").is_some_and(|w| w.starts_with("/mem/hyoka-case-e-")));
    let recorded: Vec<String> = case.host.recorded().into_iter().map(|(id, _)| id).collect();
    assert_eq!(
        recorded,
        ["e.home", "e"],
        "both are in the ledger for a crash"
    );
    case.assert_nothing_left();
}
