//! Helpers: a fake host with a scratch reports directory, eval specs, stream-json lines.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine;
use hyoka_eval::{
    EvalSpec, EventSource, FakeHost, FakeProgram, NoObserver, RunOutcome, RunPlan, Stop, run,
};
use hyoka_workspace::{EvalId, RunId};
use serde_json::Value;

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

    /// A plan of `evals` in run `case`.
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
        self.run_plan(&self.plan(evals)).await
    }

    /// Runs `plan` to the end, never stopped.
    pub(crate) async fn run_plan(&self, plan: &RunPlan) -> RunOutcome {
        run(
            plan.clone(),
            &self.host.harness(),
            Stop::never(),
            Arc::new(NoObserver),
        )
        .await
        .unwrap()
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

/// The data block `id` of a page, inflated as the browser does.
pub(crate) fn block(html: &str, id: &str) -> Value {
    let open = format!("<script type=\"application/octet-stream\" id=\"{id}\">");
    let start = html.find(&open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let gzip = base64::engine::general_purpose::STANDARD
        .decode(&html[start..end])
        .unwrap();
    let mut json = String::new();
    flate2::read::GzDecoder::new(&gzip[..])
        .read_to_string(&mut json)
        .unwrap();
    serde_json::from_str(&json).unwrap()
}
