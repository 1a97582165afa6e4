//! Timeouts and stop requests: the agent's whole tree goes (SIGKILL for what ignores
//! SIGTERM), records are still written, and nothing after an interruption grades the work.

use std::sync::Arc;

use hyoka_eval::{ErrorKind, FakeProgram, PhaseCommand, Status, StopReason, Stopper, Termination};

use crate::support::{Case, Recorder, eval, ms, phase, phases};

#[tokio::test(start_paused = true)]
async fn a_timeout_stops_the_agent_and_its_stubborn_child_at_the_deadline() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().leaves_stubborn_child().hangs());
    let mut spec = eval("e", "agent");
    spec.timeout = ms(30_000);
    let report = &case.run(vec![spec]).await.reports[0];
    assert_eq!(
        (report.status, report.termination),
        (Status::Failed, Termination::Timeout)
    );
    assert_eq!(phase(report, "agent").duration_ms, 30_000);
    // The agent left on SIGTERM; its child ignored it and needed SIGKILL.
    assert_eq!(report.signal, Some(15));
    let cleanup = &report.cleanup;
    assert_eq!(
        (
            cleanup.processes_seen,
            cleanup.processes_killed,
            cleanup.survivors
        ),
        (2, 2, Some(0))
    );
    let timeline = case.timeline("e");
    let signal = timeline
        .events
        .iter()
        .find(|e| e.detail.as_deref() == Some("timeout after 30s"));
    assert_eq!(signal.map(|e| e.t_ms), Some(30_000));
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn a_stop_request_interrupts_the_agent_and_skips_build_and_review() {
    let case = Arc::new(Case::new());
    case.program("agent", FakeProgram::new().hangs())
        .program("build", FakeProgram::new().exits(0));
    let mut spec = eval("e", "agent");
    spec.phases.build = Some(PhaseCommand {
        command: vec!["build".into()],
        timeout: ms(10_000),
    });
    let (stopper, stop) = Stopper::new();
    let plan = case.plan(vec![spec]);
    let running = tokio::spawn({
        let case = Arc::clone(&case);
        async move { case.run_plan(&plan, stop).await }
    });
    tokio::time::sleep(ms(5_000)).await;
    stopper.request(StopReason::Interrupt);
    let outcome = running.await.unwrap();
    let report = &outcome.reports[0];
    // An interruption is no result of the agent's: an infrastructure error, never retried.
    assert_eq!(
        (report.status, report.error_kind, report.termination),
        (
            Status::Error,
            Some(ErrorKind::Infra),
            Termination::Interrupted
        )
    );
    assert!(!report.is_retryable());
    assert_eq!(
        phases(report),
        [
            "setup passed",
            "agent failed",
            "build skipped",
            "cleanup passed"
        ]
    );
    assert_eq!(
        phase(report, "build").detail.as_deref(),
        Some("the agent did not finish")
    );
    assert_eq!(phase(report, "agent").duration_ms, 5_000);
    assert_eq!(case.spawned(), ["e"], "the build never started");
    case.assert_nothing_left();
}

/// Slurm's `scancel` (and a systemd stop) signals every process of the job at once: the
/// agent may die of the SIGTERM before the harness hears of its own.
#[tokio::test(start_paused = true)]
async fn an_agent_killed_by_the_signal_that_stops_the_run_is_interrupted() {
    let case = Arc::new(Case::new());
    case.program("agent", FakeProgram::new().sleeps(ms(5_000)).killed_by(15));
    let (stopper, stop) = Stopper::new();
    let plan = case.plan(vec![eval("e", "agent")]);
    let running = tokio::spawn({
        let case = Arc::clone(&case);
        async move { case.run_plan(&plan, stop).await }
    });
    // The run's own SIGTERM comes 100 ms after the agent's.
    tokio::time::sleep(ms(5_100)).await;
    stopper.request(StopReason::Terminate);
    let outcome = running.await.unwrap();
    let report = &outcome.reports[0];
    assert_eq!(
        (report.status, report.termination, report.signal),
        (Status::Error, Termination::Interrupted, Some(15))
    );
    let timeline = case.timeline("e");
    let said = timeline
        .events
        .iter()
        .find(|e| e.detail.as_deref() == Some("SIGTERM: the agent had already been stopped by it"));
    assert_eq!(said.map(|e| e.t_ms), Some(5_100));
    case.assert_nothing_left();
}

/// Without a stop of the run, an agent killed by SIGTERM from elsewhere failed on its own.
#[tokio::test(start_paused = true)]
async fn an_agent_killed_by_sigterm_without_a_stop_failed() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().killed_by(15));
    let report = &case.run(vec![eval("e", "agent")]).await.reports[0];
    assert_eq!(
        (report.status, report.termination, report.signal),
        (Status::Failed, Termination::Exited, Some(15))
    );
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn evals_a_stop_overtakes_are_recorded_as_not_started() {
    let case = Arc::new(Case::new());
    case.program("agent", FakeProgram::new().hangs());
    let evals = vec![eval("a", "agent"), eval("b", "agent"), eval("c", "agent")];
    let (stopper, stop) = Stopper::new();
    let plan = case.plan(evals);
    let recorder = Arc::new(Recorder::default());
    let running = tokio::spawn({
        let (case, recorder) = (Arc::clone(&case), Arc::clone(&recorder));
        async move {
            hyoka_eval::run(plan, &case.host.harness(), stop, recorder)
                .await
                .unwrap()
        }
    });
    tokio::time::sleep(ms(1_000)).await;
    stopper.request(StopReason::Terminate);
    let outcome = running.await.unwrap();
    let [a, b, c] = &outcome.reports[..] else {
        panic!("three reports")
    };
    assert_eq!(a.termination, Termination::Interrupted);
    for not_started in [b, c] {
        assert_eq!(not_started.termination, Termination::Interrupted);
        assert_eq!(not_started.status, Status::NotRun);
        assert_eq!(not_started.attempts, 0);
        assert_eq!(
            not_started.error.as_deref(),
            Some("not started: SIGTERM arrived first")
        );
        assert!(case.path(&not_started.eval_id, "report.json").is_file());
    }
    assert_eq!(case.spawned(), ["a"]);
    assert_eq!(
        *recorder.0.lock().unwrap(),
        [
            "started a",
            "finished a interrupted",
            "finished b interrupted",
            "finished c interrupted",
            "run error"
        ]
    );
    let totals = &outcome.summary.totals;
    assert_eq!(totals.terminations["interrupted"], 3);
    // Trials that never started are counted apart and left out of the pass rate.
    assert_eq!(
        (
            totals.failed,
            totals.errors,
            totals.not_run,
            totals.pass_rate
        ),
        (0, 1, 2, None)
    );
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn a_stop_during_the_build_stops_the_build_and_the_review_is_skipped() {
    let case = Arc::new(Case::new());
    case.program("agent", FakeProgram::new().exits(0))
        .program("build", FakeProgram::new().hangs())
        .program("review", FakeProgram::new().exits(0));
    let mut spec = eval("e", "agent");
    spec.phases.build = Some(PhaseCommand {
        command: vec!["build".into()],
        timeout: ms(60_000),
    });
    spec.phases.review = Some(PhaseCommand {
        command: vec!["review".into()],
        timeout: ms(60_000),
    });
    let (stopper, stop) = Stopper::new();
    let plan = case.plan(vec![spec]);
    let running = tokio::spawn({
        let case = Arc::clone(&case);
        async move { case.run_plan(&plan, stop).await }
    });
    tokio::time::sleep(ms(2_000)).await;
    stopper.request(StopReason::Interrupt);
    let report = &running.await.unwrap().reports[0];
    assert_eq!(
        phases(report),
        [
            "setup passed",
            "agent passed",
            "build error",
            "review skipped",
            "cleanup passed"
        ]
    );
    assert_eq!(
        phase(report, "build").detail.as_deref(),
        Some("stopped by SIGINT")
    );
    // The agent finished on its own: its termination is its exit; the interrupted build
    // leaves the trial without a result.
    assert_eq!(
        (report.status, report.error_kind, report.termination),
        (Status::Error, Some(ErrorKind::Infra), Termination::Exited)
    );
    case.assert_nothing_left();
}
