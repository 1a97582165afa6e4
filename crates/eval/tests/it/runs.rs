//! The worker pool: evals start in plan order, `workers` at a time, each with its records;
//! `run.json` sums them up.

use std::sync::Arc;

use hyoka_eval::{FakeProgram, RunSummary, Status, Stop};

use crate::support::{Case, Recorder, eval, ms};

#[tokio::test(start_paused = true)]
async fn workers_run_evals_at_once_in_plan_order() {
    let case = Case::new();
    case.program("ten", FakeProgram::new().sleeps(ms(10_000)).exits(0))
        .program("fails", FakeProgram::new().sleeps(ms(10_000)).exits(1));
    let evals = vec![
        eval("e1", "ten"),
        eval("e2", "ten"),
        eval("e3", "fails"),
        eval("e4", "ten"),
    ];
    let mut plan = case.plan(evals);
    plan.workers = 2;
    let recorder = Arc::new(Recorder::default());
    let outcome = hyoka_eval::run(plan, &case.host.harness(), Stop::never(), recorder.clone())
        .await
        .unwrap();
    // Permits go out in plan order: e1 and e2 first, e3 and e4 when they end (within a pair,
    // whichever task the runtime polls first spawns first).
    let mut spawned = case.spawned();
    spawned[..2].sort();
    spawned[2..].sort();
    assert_eq!(spawned, ["e1", "e2", "e3", "e4"]);
    // Two at a time: 20 s of virtual time for four 10 s evals.
    assert_eq!(outcome.summary.duration_ms, 20_000);
    assert_eq!(line_ids(&outcome), ["e1", "e2", "e3", "e4"]);
    assert_eq!(outcome.summary.status, Status::Failed);
    assert_eq!(
        (outcome.summary.totals.passed, outcome.summary.totals.failed),
        (3, 1)
    );
    assert_eq!(outcome.summary.started_at, "2027-01-15T08:00:00.000Z");
    assert_eq!(outcome.summary.ended_at, "2027-01-15T08:00:20.000Z");
    assert_eq!(recorder.0.lock().unwrap().last().unwrap(), "run failed");
    let run_json: RunSummary =
        serde_json::from_slice(&std::fs::read(case.reports.path().join("case/run.json")).unwrap())
            .unwrap();
    assert_eq!(run_json.evals.len(), 4);
    case.assert_nothing_left();
}

/// Regression test for issue 25: a kept workspace was kept only by its marker, which any
/// process of the user may rewrite. The keep is recorded in the ledger too: before the
/// workspace exists with `always`, when the trial fails with `on-failure`, never otherwise.
#[tokio::test(start_paused = true)]
async fn kept_workspaces_are_recorded_where_no_agent_writes() {
    use hyoka_workspace::KeepPolicy;
    for (keep, program, kept) in [
        (KeepPolicy::Always, "passes", true),
        (KeepPolicy::OnFailure, "fails", true),
        (KeepPolicy::OnFailure, "passes", false),
        (KeepPolicy::Never, "fails", false),
    ] {
        let case = Case::new();
        case.program("passes", FakeProgram::new().exits(0))
            .program("fails", FakeProgram::new().exits(1));
        let mut plan = case.plan(vec![eval("e", program)]);
        plan.keep = keep;
        let outcome = case.run_plan(&plan, Stop::never()).await;
        let kept_at = outcome.reports[0].cleanup.workspace_kept_at.clone();
        assert_eq!(kept_at.is_some(), kept, "{keep:?} {program}");
        let recorded = case.host.recorded_kept();
        let expected: Vec<(String, std::path::PathBuf)> = kept_at
            .into_iter()
            .map(|p| ("e".to_owned(), p.into()))
            .collect();
        assert_eq!(recorded, expected, "{keep:?} {program}");
        // A removed workspace's record is dropped; a kept one's stays.
        let workspace = case.host.recorded()[0].1.clone();
        assert_eq!(
            case.host.forgotten().contains(&workspace),
            !kept,
            "{keep:?} {program}"
        );
    }
}

/// Issue 29: a run kept a ledger line per removed workspace (and per isolated home), so the
/// ledger and the owner's memory grew with the number of evals. Every directory removed is
/// dropped from the ledger once it is gone.
#[tokio::test(start_paused = true)]
async fn removed_directories_are_dropped_from_the_ledger() {
    let case = Case::new();
    case.program("agent", FakeProgram::new().exits(0));
    let mut specs = vec![eval("a", "agent"), eval("b", "agent")];
    specs[1].phases.isolate_home = true;
    let outcome = case.run(specs).await;
    assert!(outcome.reports.iter().all(|r| r.cleanup.workspace_removed));
    let mut recorded: Vec<std::path::PathBuf> =
        case.host.recorded().into_iter().map(|(_, p)| p).collect();
    let mut forgotten = case.host.forgotten();
    recorded.sort();
    forgotten.sort();
    assert_eq!(recorded.len(), 3, "two workspaces and a home: {recorded:?}");
    assert_eq!(forgotten, recorded);
    case.assert_nothing_left();
}

/// Issue 29: the runner kept every trial's whole report (and its finished task) until the
/// run ended, so a run's memory grew with its trials. Without `keep_reports` the outcome
/// holds no report, yet `run.json` lists every trial in plan order and the kept workspaces
/// are still named.
#[tokio::test(start_paused = true)]
async fn a_run_that_keeps_no_reports_still_sums_up_every_trial() {
    use hyoka_workspace::KeepPolicy;
    let case = Case::new();
    case.program("passes", FakeProgram::new().sleeps(ms(30)).exits(0))
        .program("fails", FakeProgram::new().sleeps(ms(10)).exits(1));
    let mut plan = case.plan(vec![
        eval("a", "passes"),
        eval("b", "fails"),
        eval("c", "passes"),
    ]);
    plan.workers = 3;
    plan.keep = KeepPolicy::OnFailure;
    plan.keep_reports = false;
    let outcome = case.run_plan(&plan, Stop::never()).await;
    assert!(outcome.reports.is_empty());
    // `b` ends first, yet the lines keep the plan's order.
    assert_eq!(line_ids(&outcome), ["a", "b", "c"]);
    assert_eq!(
        (outcome.summary.totals.passed, outcome.summary.totals.failed),
        (2, 1)
    );
    let kept: Vec<&str> = outcome
        .kept_workspaces
        .iter()
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(kept, ["b"]);
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(case.reports.path().join("case/b/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        report["cleanup"]["workspace_kept_at"].as_str(),
        Some(outcome.kept_workspaces[0].1.as_str())
    );
    let run_json: RunSummary =
        serde_json::from_slice(&std::fs::read(case.reports.path().join("case/run.json")).unwrap())
            .unwrap();
    assert_eq!(run_json.evals, outcome.summary.evals);
}

/// The evals of `run.json`'s lines, in their order.
fn line_ids(outcome: &hyoka_eval::RunOutcome) -> Vec<&str> {
    (outcome.summary.evals.iter())
        .map(|e| e.eval_id.as_str())
        .collect()
}
