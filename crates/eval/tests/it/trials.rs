//! Trials: epochs and their records and metrics, whose fault an outcome is, retries of
//! infrastructure errors only (with backoff on the virtual clock), resume by trial identity,
//! and what a fatal error leaves not run.
#![allow(clippy::float_cmp, reason = "the figures are exact by construction")]

use std::sync::Arc;

use hyoka_eval::{
    ErrorKind, EvalError, FakeProgram, PhaseCommand, Readiness, Report, Resume, RunSummary,
    ServiceSpec, Status, Stop, StopReason, Stopper, Termination,
};

use crate::support::{Case, Recorder, eval, ms, phase, phases};

fn command(name: &str) -> PhaseCommand {
    PhaseCommand {
        command: vec![name.into()],
        timeout: ms(10_000),
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> T {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// Issue 15, Done-when: an agent that passes one trial in three, over three epochs.
#[tokio::test(start_paused = true)]
async fn epochs_give_each_trial_its_records_and_the_task_its_pass_at_k() {
    let case = Case::new();
    case.host.programs(
        "agent",
        vec![
            FakeProgram::new().sleeps(ms(100)).exits(1),
            FakeProgram::new().sleeps(ms(100)).exits(0),
            FakeProgram::new().sleeps(ms(100)).exits(1),
        ],
    );
    let mut spec = eval("fix", "agent");
    spec.epochs = 3;
    let mut plan = case.plan(vec![spec]);
    plan.workers = 3;
    let outcome = case.run_plan(&plan, Stop::never()).await;
    // Each trial has its own id: its records' directory, its ledger id, its workspace.
    let mut spawned = case.spawned();
    spawned.sort();
    assert_eq!(spawned, ["fix.1", "fix.2", "fix.3"]);
    let workspaces: Vec<&str> = outcome
        .reports
        .iter()
        .map(|r| r.workspace.as_str())
        .collect();
    assert!(
        workspaces.iter().all(|w| w.contains("hyoka-case-fix.")),
        "{workspaces:?}"
    );
    assert_eq!(
        workspaces
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        3
    );
    for (epoch, report) in (1..=3).zip(&outcome.reports) {
        assert_eq!(
            (report.eval_id.as_str(), report.epoch, report.trial.as_str()),
            ("fix", epoch, format!("fix.{epoch}").as_str())
        );
        let written: Report = read_json(&case.path(&report.trial, "report.json"));
        assert_eq!(&written, report);
        assert!(case.path(&report.trial, "action_timeline.json").is_file());
    }
    let run: RunSummary = read_json(&case.reports.path().join("case/run.json"));
    let lines: Vec<(u32, &str)> = run
        .evals
        .iter()
        .map(|e| (e.epoch, e.report.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            (1, "fix.1/report.json"),
            (2, "fix.2/report.json"),
            (3, "fix.3/report.json")
        ]
    );
    let task = &run.tasks[0];
    assert_eq!(
        (task.eval_id.as_str(), task.trials, task.passed),
        ("fix", 3, 1)
    );
    assert!((task.pass_at_k.get("1").unwrap_or(0.0) - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(task.pass_at_k.get("3"), Some(1.0));
    assert_eq!(task.pass_hat_k.get("3"), Some(0.0));
    assert_eq!(run.metrics.pass_at_k.get("3"), Some(1.0));
    assert_eq!(run.metrics.tasks, 1);
    assert!(run.suite.is_none() && !run.hyoka_version.is_empty());
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn an_outcome_says_whose_fault_it_is() {
    let case = Case::new();
    case.program("ok", FakeProgram::new().exits(0))
        .program("no-build", FakeProgram::new().exits(2))
        .program("crash", FakeProgram::new().oom_killed())
        .program("slow", FakeProgram::new().hangs())
        .program("review-3", FakeProgram::new().exits(3))
        .program(
            "odd-verdict",
            FakeProgram::new().prints(r#"{"pass": "yes"}"#).exits(0),
        )
        .program(
            "low",
            FakeProgram::new()
                .prints(r#"{"pass": false, "score": 0.25, "notes": "half done"}"#)
                .exits(1),
        )
        .program("agent-oom", FakeProgram::new().oom_killed());
    let with = |id: &str, agent: &str, build: Option<&str>, review: Option<&str>| {
        let mut spec = eval(id, agent);
        spec.phases.build = build.map(command);
        spec.phases.review = review.map(command);
        spec
    };
    let mut slow_build = with("build-slow", "ok", Some("slow"), None);
    slow_build.phases.build.as_mut().unwrap().timeout = ms(1_000);
    let outcome = case
        .run(vec![
            with("build-fails", "ok", Some("no-build"), None),
            with("build-crashes", "ok", Some("crash"), None),
            slow_build,
            with("review-crashes", "ok", None, Some("review-3")),
            with("review-invalid", "ok", None, Some("odd-verdict")),
            with("review-fails", "ok", None, Some("low")),
            with("oom", "agent-oom", None, None),
        ])
        .await;
    let fault = |r: &Report| (r.eval_id.clone(), r.status, r.error_kind);
    let faults: Vec<_> = outcome.reports.iter().map(fault).collect();
    let want = [
        ("build-fails", Status::Failed, None),
        ("build-crashes", Status::Error, Some(ErrorKind::Scorer)),
        ("build-slow", Status::Error, Some(ErrorKind::Scorer)),
        ("review-crashes", Status::Error, Some(ErrorKind::Scorer)),
        ("review-invalid", Status::Error, Some(ErrorKind::Scorer)),
        ("review-fails", Status::Failed, None),
        ("oom", Status::Error, Some(ErrorKind::Infra)),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|(e, s, k)| ((*e).to_owned(), *s, *k))
        .collect();
    assert_eq!(faults, want);
    let [build, crash, slow, review, invalid, fails, oom] = &outcome.reports[..] else {
        panic!("seven reports")
    };
    assert_eq!(build.reason().as_deref(), Some("build failed: exit code 2"));
    assert_eq!(
        crash.reason().as_deref(),
        Some("build error: crashed: killed by signal 9")
    );
    assert_eq!(
        slow.reason().as_deref(),
        Some("build error: timed out after 1s")
    );
    assert_eq!(
        review.reason().as_deref(),
        Some("review error: crashed: exit code 3 (a review exits 0 or 1)")
    );
    assert!(
        invalid
            .reason()
            .is_some_and(|r| r.starts_with("review error: printed an invalid verdict")),
        "{:?}",
        invalid.reason()
    );
    // The review's verdict, score and notes say why.
    assert_eq!(
        fails.reason().as_deref(),
        Some("review failed: the review's verdict is a fail (verdict fail, score 0.25: half done)")
    );
    assert_eq!(
        phases(oom),
        ["setup passed", "agent error", "cleanup passed"]
    );
    assert_eq!(
        oom.error.as_deref(),
        Some("the kernel's OOM killer ended a process of the agent")
    );
    let totals = &outcome.summary.totals;
    assert_eq!(
        (
            totals.passed,
            totals.failed,
            totals.errors,
            totals.errors_infra,
            totals.errors_scorer
        ),
        (0, 2, 5, 1, 4)
    );
    // Errors are no results: the pass rate counts the two failures alone.
    assert_eq!(totals.pass_rate, Some(0.0));
    let line = &outcome.summary.evals[5];
    assert_eq!(line.score, Some(0.25));
    assert_eq!(line.reason, fails.reason());
    case.assert_nothing_left();
}

/// A service that is ready on its second start only.
fn flaky_service(case: &Case) -> ServiceSpec {
    case.host.programs(
        "svc",
        vec![
            FakeProgram::new().sleeps(ms(100)).exits(1),
            FakeProgram::new().writes("ready", "1").hangs(),
        ],
    );
    ServiceSpec {
        name: "svc".into(),
        command: vec!["svc".into()],
        ready: Readiness::File("ready".into()),
        timeout: ms(2_000),
        env: Vec::new(),
    }
}

/// Issue 15, Done-when: with retries, a service that fails to become ready once and then
/// succeeds gives a passed trial of two attempts; an agent that exits 1 runs once.
#[tokio::test(start_paused = true)]
async fn retries_rerun_infrastructure_errors_only_after_a_backoff() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().exits(0))
        .program("fails", FakeProgram::new().exits(1));
    let mut flaky = eval("flaky", "agent");
    flaky.phases.services = vec![flaky_service(&case)];
    flaky.retries = 1;
    let mut failing = eval("failing", "fails");
    failing.retries = 5;
    let recorder = Arc::new(Recorder::default());
    let plan = case.plan(vec![flaky, failing]);
    let outcome = hyoka_eval::run(plan, &case.host.harness(), Stop::never(), recorder.clone())
        .await
        .unwrap();
    let [flaky, failing] = &outcome.reports[..] else {
        panic!("two reports")
    };
    assert_eq!((flaky.status, flaky.attempts), (Status::Passed, 2));
    let earlier = &flaky.earlier_attempts;
    assert_eq!(earlier.len(), 1);
    assert_eq!(
        (earlier[0].termination, earlier[0].error_kind),
        (Termination::ServiceFailed, ErrorKind::Infra)
    );
    assert_eq!(
        earlier[0].reason,
        "service svc exited with exit code 1 before it was ready"
    );
    // The second attempt starts one backoff (1 s) after the first ended (100 ms in).
    assert_eq!(earlier[0].started_at, "2027-01-15T08:00:00.000Z");
    assert_eq!(flaky.started_at, "2027-01-15T08:00:01.100Z");
    // A retry's processes are tracked as `<trial>.r<attempt>`: a run's tracker gives an id
    // to one attempt only. Its records stay in the trial's directory.
    assert_eq!(
        case.spawned()[..3],
        ["flaky.s.svc", "flaky.r2.s.svc", "flaky.r2"]
    );
    assert!(case.path("flaky", "report.json").is_file());
    // The agent's failure is its result: one attempt, whatever `retries` says.
    assert_eq!((failing.status, failing.attempts), (Status::Failed, 1));
    assert!(failing.earlier_attempts.is_empty());
    assert_eq!(
        case.spawned().iter().filter(|id| *id == "failing").count(),
        1
    );
    assert_eq!(outcome.summary.totals.retried, 1);
    assert_eq!(outcome.summary.evals[0].attempts, 2);
    assert_eq!(
        *recorder.0.lock().unwrap(),
        [
            "started flaky",
            "finished flaky exited",
            "started failing",
            "finished failing exited",
            "run failed"
        ]
    );
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn retries_stop_when_spent_and_at_a_stop_request() {
    let case = Arc::new(Case::new());
    case.program("svc", FakeProgram::new().exits(1))
        .program("agent", FakeProgram::new().exits(0));
    let service = ServiceSpec {
        name: "svc".into(),
        command: vec!["svc".into()],
        ready: Readiness::File("never".into()),
        timeout: ms(2_000),
        env: Vec::new(),
    };
    let mut spec = eval("down", "agent");
    spec.phases.services = vec![service];
    spec.retries = 2;
    let outcome = case.run(vec![spec.clone()]).await;
    let report = &outcome.reports[0];
    // Three attempts (backoffs of 1 s and 2 s between them), then the error stands.
    assert_eq!((report.status, report.attempts), (Status::Error, 3));
    assert_eq!(report.earlier_attempts.len(), 2);
    assert_eq!(outcome.summary.duration_ms, 3_000);
    assert_eq!(
        case.spawned(),
        ["down.s.svc", "down.r2.s.svc", "down.r3.s.svc"]
    );

    // A stop during the backoff ends the trial with the attempt it has.
    let again = Arc::new(Case::new());
    again
        .program("svc", FakeProgram::new().exits(1))
        .program("agent", FakeProgram::new().exits(0));
    spec.retries = 10;
    let (stopper, stop) = Stopper::new();
    let plan = again.plan(vec![spec]);
    let running = tokio::spawn({
        let again = Arc::clone(&again);
        async move { again.run_plan(&plan, stop).await }
    });
    tokio::time::sleep(ms(500)).await;
    stopper.request(StopReason::Terminate);
    let outcome = running.await.unwrap();
    let report = &outcome.reports[0];
    assert_eq!((report.status, report.attempts), (Status::Error, 1));
    assert_eq!(outcome.summary.duration_ms, 500);
    again.assert_nothing_left();
    case.assert_nothing_left();
}

/// Issue 15: a resumed run keeps the finished trials (their agents do not start again),
/// runs the rest, and refuses an eval whose settings changed unless told to rerun it.
#[tokio::test(start_paused = true)]
async fn a_resume_keeps_finished_trials_and_refuses_changed_evals() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().exits(0))
        .program("other", FakeProgram::new().exits(0));
    let mut spec = eval("e", "agent");
    spec.epochs = 3;
    let plan = case.plan(vec![spec.clone(), eval("solo", "agent")]);
    let first = case.run_plan(&plan, Stop::never()).await;
    assert_eq!(first.summary.totals.passed, 4);
    // The owner died while e.2 ran: its report never got written.
    std::fs::remove_file(case.path("e.2", "report.json")).unwrap();
    let mut resumed = plan.clone();
    resumed.resume = Some(Resume::default());
    let before = case.spawned().len();
    let outcome = case.run_plan(&resumed, Stop::never()).await;
    assert_eq!(
        case.spawned()[before..],
        ["e.2"],
        "only the unfinished trial runs"
    );
    assert_eq!(outcome.kept, 3);
    assert_eq!(outcome.summary.totals.evals, 4);
    assert_eq!(outcome.summary.totals.passed, 4);
    assert_eq!(outcome.reports[0], first.reports[0], "kept as it was");

    // The eval's command changed: its finished trials no longer describe it.
    let mut changed = spec.clone();
    changed.command = vec!["other".into()];
    let mut refused = resumed.clone();
    refused.evals[0] = Arc::new(changed);
    let err = case.run_err(&refused).await;
    assert!(
        matches!(&err, EvalError::Changed { evals } if evals == &["e"]),
        "{err}"
    );
    assert!(err.is_bad_input());
    assert!(
        err.to_string()
            .contains("eval e changed since the run began"),
        "{err}"
    );
    // The grace period is not part of a trial's identity: nothing to refuse or rerun.
    let mut graceful = resumed.clone();
    Arc::make_mut(&mut graceful.evals[0]).grace = ms(1);
    let before = case.spawned().len();
    case.run_plan(&graceful, Stop::never()).await;
    assert_eq!(case.spawned().len(), before);
    // Told to, a resume reruns the changed eval's trials and keeps the rest.
    refused.resume = Some(Resume {
        rerun_changed: true,
        ..Resume::default()
    });
    let before = case.spawned().len();
    let outcome = case.run_plan(&refused, Stop::never()).await;
    assert_eq!(case.spawned()[before..], ["e.1", "e.2", "e.3"]);
    assert_eq!(outcome.kept, 1);
    case.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn a_resume_reruns_trials_not_run_and_infrastructure_errors() {
    let case = Arc::new(Case::new());
    case.program("agent", FakeProgram::new().sleeps(ms(1_000)).exits(0))
        .program("svc", FakeProgram::new().exits(1));
    let mut broken = eval("broken", "agent");
    broken.phases.services = vec![ServiceSpec {
        name: "svc".into(),
        command: vec!["svc".into()],
        ready: Readiness::File("never".into()),
        timeout: ms(100),
        env: Vec::new(),
    }];
    let evals = vec![broken, eval("a", "agent"), eval("b", "agent")];
    let (stopper, stop) = Stopper::new();
    let plan = case.plan(evals);
    let running = tokio::spawn({
        let (case, plan) = (Arc::clone(&case), plan.clone());
        async move { case.run_plan(&plan, stop).await }
    });
    // `broken` errors at once; `a` is stopped halfway; `b` never starts.
    tokio::time::sleep(ms(600)).await;
    stopper.request(StopReason::Interrupt);
    let first = running.await.unwrap();
    let statuses: Vec<Status> = first.reports.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Status::Error, Status::Error, Status::NotRun]);
    case.program("svc", FakeProgram::new().writes("never", "").hangs());
    let mut resumed = plan;
    resumed.resume = Some(Resume::default());
    let before = case.spawned().len();
    let outcome = case.run_plan(&resumed, Stop::never()).await;
    assert_eq!(
        case.spawned()[before..],
        ["broken.s.svc", "broken", "a", "b"]
    );
    assert_eq!(outcome.summary.status, Status::Passed);
    assert_eq!(outcome.kept, 0);
    case.assert_nothing_left();
}

/// A stream-json agent that reports its spending: the report and the run's totals carry it;
/// `max_cost` and `max_tokens` stop a costlier agent at once.
#[tokio::test(start_paused = true)]
async fn reported_tokens_and_cost_are_recorded_and_limited() {
    let case = Case::new();
    let result = r#"{"type":"result","total_cost_usd":0.42,"usage":{"input_tokens":100,"output_tokens":50}}"#;
    let assistant = |id: &str, output: u64| {
        format!(
            r#"{{"type":"assistant","message":{{"id":"{id}","usage":{{"input_tokens":10,"output_tokens":{output}}},"content":[]}}}}"#
        )
    };
    case.program("cheap", FakeProgram::new().prints(result).exits(0))
        .program(
            "costly",
            FakeProgram::new().sleeps(ms(100)).prints(result).hangs(),
        )
        .program(
            "wordy",
            FakeProgram::new()
                .prints(assistant("m1", 400))
                .sleeps(ms(100))
                .prints(assistant("m2", 700))
                .hangs(),
        )
        .program("quiet", FakeProgram::new().exits(0));
    let mut costly = eval("costly", "costly");
    costly.limits.max_cost = 0.1;
    let mut wordy = eval("wordy", "wordy");
    wordy.limits.max_tokens = 1_000;
    let outcome = case
        .run(vec![
            eval("cheap", "cheap"),
            costly,
            wordy,
            eval("quiet", "quiet"),
        ])
        .await;
    let [cheap, costly, wordy, quiet] = &outcome.reports[..] else {
        panic!("four reports")
    };
    let usage = cheap.usage.unwrap();
    assert_eq!(
        (usage.cost_usd, usage.input_tokens, usage.output_tokens),
        (Some(0.42), Some(100), Some(50))
    );
    assert_eq!(cheap.status, Status::Passed);
    assert_eq!(
        (costly.status, costly.termination),
        (Status::Failed, Termination::MaxCost)
    );
    assert_eq!(phase(costly, "agent").duration_ms, 100, "stopped at once");
    assert_eq!(costly.limits.max_cost, 0.1);
    assert_eq!(
        (wordy.termination, wordy.usage.unwrap().tokens()),
        (Termination::MaxTokens, 1_120)
    );
    // Nothing reported, nothing guessed.
    assert_eq!(quiet.usage, None);
    let total = outcome.summary.usage.unwrap();
    assert_eq!(total.cost_usd, Some(0.84));
    assert_eq!(total.input_tokens, Some(220));
    assert_eq!(
        outcome.summary.evals[0].usage.as_deref(),
        cheap.usage.as_ref()
    );
    let run: serde_json::Value = read_json(&case.reports.path().join("case/run.json"));
    assert_eq!(run["usage"]["cost_usd"], 0.84);
    let quiet_json: serde_json::Value = read_json(&case.path("quiet", "report.json"));
    assert!(quiet_json.get("usage").is_none(), "{quiet_json}");
    case.assert_nothing_left();
}

/// A trial that cannot record stops the run from starting more: those after it are not run
/// (skipped), those already running finish, and `run.json` still says so.
#[tokio::test(start_paused = true)]
async fn a_trial_that_cannot_record_leaves_the_rest_not_run() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().exits(0));
    let run_dir = case.reports.path().join("case");
    std::fs::create_dir_all(&run_dir).unwrap();
    // Where trial b's records would go, a file stands.
    std::fs::write(run_dir.join("b"), "in the way").unwrap();
    let plan = case.plan(vec![
        eval("a", "agent"),
        eval("b", "agent"),
        eval("c", "agent"),
    ]);
    let err = case.run_err(&plan).await;
    assert!(
        matches!(&err, EvalError::Eval { eval_id, .. } if eval_id == "b"),
        "{err}"
    );
    let run: RunSummary = read_json(&run_dir.join("run.json"));
    let lines: Vec<(&str, Status, Termination)> = run
        .evals
        .iter()
        .map(|e| (e.eval_id.as_str(), e.status, e.termination))
        .collect();
    assert_eq!(
        lines,
        [
            ("a", Status::Passed, Termination::Exited),
            ("c", Status::NotRun, Termination::Skipped)
        ]
    );
    assert!(
        run.evals[1]
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("not started: trial b could not record")),
        "{:?}",
        run.evals[1].reason
    );
    assert_eq!(case.spawned(), ["a"]);
    case.assert_nothing_left();
}
