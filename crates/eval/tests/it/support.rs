//! Helpers: a fake host with a scratch reports directory, eval specs, stream-json lines.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hyoka_eval::{
    EvalSpec, EventSource, FakeHost, FakeProgram, NoObserver, Observer, Report, RunOutcome,
    RunPlan, RunSummary, Stop, Timeline, Trial, run,
};
use hyoka_workspace::{EvalId, RunId};

/// The wall-clock time every case starts at: 2027-01-15T08:00:00Z.
pub(crate) const EPOCH: Duration = Duration::from_hours(500_000);

/// One test's host and records.
pub(crate) struct Case {
    pub(crate) host: FakeHost,
    pub(crate) reports: tempfile::TempDir,
}

impl Case {
    /// Call inside the (paused) runtime.
    pub(crate) fn new() -> Self {
        Self {
            host: FakeHost::new(SystemTime::UNIX_EPOCH + EPOCH),
            reports: tempfile::tempdir().unwrap(),
        }
    }

    /// Registers `name` as `program`.
    pub(crate) fn program(&self, name: &str, program: FakeProgram) -> &Self {
        self.host.program(name, program);
        self
    }

    pub(crate) fn plan(&self, evals: Vec<EvalSpec>) -> RunPlan {
        RunPlan::new(
            RunId::new("case").unwrap(),
            self.reports.path(),
            "/mem",
            evals,
        )
    }

    /// Runs `evals` to the end, never stopped.
    pub(crate) async fn run(&self, evals: Vec<EvalSpec>) -> RunOutcome {
        self.run_plan(&self.plan(evals), Stop::never()).await
    }

    pub(crate) async fn run_plan(&self, plan: &RunPlan, stop: Stop) -> RunOutcome {
        run(
            plan.clone(),
            &self.host.harness(),
            stop,
            Arc::new(NoObserver),
        )
        .await
        .unwrap()
    }

    /// Runs `plan` to the error it must end in.
    pub(crate) async fn run_err(&self, plan: &RunPlan) -> hyoka_eval::EvalError {
        run(
            plan.clone(),
            &self.host.harness(),
            Stop::never(),
            Arc::new(NoObserver),
        )
        .await
        .unwrap_err()
    }

    /// The eval's `action_timeline.json`.
    pub(crate) fn timeline(&self, eval: &str) -> Timeline {
        let path = self.path(eval, "action_timeline.json");
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// A file of the eval's records.
    pub(crate) fn path(&self, eval: &str, file: &str) -> PathBuf {
        self.reports.path().join("case").join(eval).join(file)
    }

    /// Nothing a test started survives it: no fake process runs, no workspace is open.
    #[track_caller]
    pub(crate) fn assert_nothing_left(&self) {
        assert!(self.host.alive().is_empty(), "{:?}", self.host.alive());
        assert!(
            self.host.open_workspaces().is_empty(),
            "{:?}",
            self.host.open_workspaces()
        );
    }

    /// The ids started, in order.
    pub(crate) fn spawned(&self) -> Vec<String> {
        self.host.spawned().into_iter().map(|(id, _)| id).collect()
    }
}

/// An eval of `program` reading stream-json, with the built-in limits and no timeout.
pub(crate) fn eval(id: &str, program: &str) -> EvalSpec {
    let mut spec = EvalSpec::new(EvalId::new(id).unwrap(), vec![program.into()]);
    spec.events = EventSource::StreamJson;
    spec.timeout = Duration::ZERO;
    spec
}

/// One assistant message (a turn) in Claude Code's stream-json.
pub(crate) fn turn(n: u32) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"id":"m{n}","content":[{{"type":"text","text":"turn {n}"}}]}}}}"#
    )
}

/// One tool call, a line of assistant message `n` (the message of `turn(n)`).
pub(crate) fn tool_call(n: u32, tool: &str) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"id":"m{n}","content":[{{"type":"tool_use","name":"{tool}","input":{{"file_path":"f{n}"}}}}]}}}}"#
    )
}

pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The phases of a report, as `name status` strings.
pub(crate) fn phases(report: &Report) -> Vec<String> {
    report
        .phases
        .iter()
        .map(|p| format!("{} {}", p.name, p.status.as_str()))
        .collect()
}

/// The phase `name` of a report.
#[track_caller]
pub(crate) fn phase<'a>(report: &'a Report, name: &str) -> &'a hyoka_eval::PhaseRecord {
    report.phases.iter().find(|p| p.name == name).unwrap()
}

/// Records what an observer is told, in order.
#[derive(Default)]
pub(crate) struct Recorder(pub(crate) Mutex<Vec<String>>);

impl Observer for Recorder {
    fn eval_started(&self, trial: &Trial) {
        self.0.lock().unwrap().push(format!("started {}", trial.id));
    }

    fn eval_finished(&self, report: &Report) {
        self.0.lock().unwrap().push(format!(
            "finished {} {}",
            report.eval_id,
            report.termination.as_str()
        ));
    }

    fn run_finished(&self, summary: &RunSummary) {
        self.0
            .lock()
            .unwrap()
            .push(format!("run {}", summary.status.as_str()));
    }
}
