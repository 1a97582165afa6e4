//! The shapes of `report.json` (one eval) and `run.json` (one run).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an eval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The agent exited 0 and no limit, timeout or phase failed.
    Passed,
    /// The agent exited non-zero, hit a limit or a timeout, or was interrupted.
    Failed,
    /// hyoka could not run the eval (for example the command could not be spawned).
    Error,
}

impl Status {
    /// The name as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Error => "error",
        }
    }
}

/// Why the agent stopped. Exactly one reason, never guessed from strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// The agent exited on its own.
    Exited,
    /// `--timeout` elapsed.
    Timeout,
    /// `--max-turns` was crossed.
    MaxTurns,
    /// `--max-files` was crossed.
    MaxFiles,
    /// `--max-output-size` was crossed.
    MaxOutputSize,
    /// `--max-session-actions` was crossed.
    MaxSessionActions,
    /// hyoka was interrupted (SIGINT, SIGTERM, SIGHUP).
    Interrupted,
    /// The command could not be started.
    SpawnFailed,
    /// A service the eval needs never became ready, or died while the agent ran.
    ServiceFailed,
}

impl Termination {
    /// The snake_case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exited => "exited",
            Self::Timeout => "timeout",
            Self::MaxTurns => "max_turns",
            Self::MaxFiles => "max_files",
            Self::MaxOutputSize => "max_output_size",
            Self::MaxSessionActions => "max_session_actions",
            Self::Interrupted => "interrupted",
            Self::SpawnFailed => "spawn_failed",
            Self::ServiceFailed => "service_failed",
        }
    }
}

/// The limits in force for an eval (0 means disabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Limits {
    /// `--max-turns`.
    pub max_turns: u64,
    /// `--max-files`.
    pub max_files: u64,
    /// `--max-output-size`, in bytes.
    pub max_output_size: u64,
    /// `--max-session-actions`.
    pub max_session_actions: u64,
    /// `--timeout`, in milliseconds.
    pub timeout_ms: u64,
    /// `--grace`, in milliseconds.
    pub grace_ms: u64,
}

/// What the agent did, counted one way for enforcement and reporting alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Counts {
    /// Assistant messages.
    pub turns: u64,
    /// Tool calls.
    pub actions: u64,
    /// Files created or changed in the workspace.
    pub files: u64,
    /// Bytes of those files.
    pub output_bytes: u64,
}

/// What was cleaned up after the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cleanup {
    /// Processes of the agent's tree that hyoka saw.
    pub processes_seen: u64,
    /// Processes hyoka had to signal to stop.
    pub processes_killed: u64,
    /// Processes still alive after teardown (should always be 0), as counted by a final scan
    /// that covered every containment layer still in force; `null` when no such scan could
    /// prove it (`survivors_unknown` says why), never 0 by assumption.
    pub survivors: Option<u64>,
    /// Why `survivors` is `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub survivors_unknown: Option<String>,
    /// Containment layers lost while the agent ran: `shim` (it died before teardown asked
    /// it to stop; its orphans came to hyoka, a subreaper too) and `cgroup` (a process of the
    /// tree was found outside its leaf).
    #[serde(default)]
    pub layers_lost: Vec<String>,
    /// Whether the workspace was removed completely.
    pub workspace_removed: bool,
    /// Where the workspace was kept, per `--keep-workspace`.
    pub workspace_kept_at: Option<String>,
    /// Entries that could not be removed, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workspace_leftovers: Vec<String>,
    /// The containment layers the agent ran under (`cgroup`, `shim`, `session`, `marker`).
    #[serde(default)]
    pub layers: Vec<String>,
}

impl Default for Cleanup {
    fn default() -> Self {
        Self {
            processes_seen: 0,
            processes_killed: 0,
            survivors: Some(0),
            survivors_unknown: None,
            layers_lost: Vec::new(),
            workspace_removed: false,
            workspace_kept_at: None,
            workspace_leftovers: Vec::new(),
            layers: Vec::new(),
        }
    }
}

/// `reports/<run_id>/<eval_id>/report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Report {
    /// The run.
    pub run_id: String,
    /// The eval (`main` for a single command).
    pub eval_id: String,
    /// The agent's argv.
    pub command: Vec<String>,
    /// The workspace path.
    pub workspace: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time.
    pub ended_at: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// passed, failed or error.
    pub status: Status,
    /// Why the agent stopped.
    pub termination: Termination,
    /// The agent's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended the agent, when one did.
    pub signal: Option<i32>,
    /// The limits in force.
    pub limits: Limits,
    /// The counts at the moment the agent stopped.
    pub counts: Counts,
    /// The cleanup.
    pub cleanup: Cleanup,
    /// Human-readable detail (for example why a spawn failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The eval's phases in order: `setup`, `services`, `agent`, `build`, `review`, `cleanup`
    /// (those that ran or were skipped).
    #[serde(default)]
    pub phases: Vec<PhaseRecord>,
    /// The review phase's verdict, when it printed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewVerdict>,
    /// The kernel sandbox and network the eval's processes ran with, when it asked for a
    /// sandbox or for no network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxRecord>,
}

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum PhaseStatus {
    /// It did what it should.
    Passed,
    /// It ran and failed (non-zero exit, timeout, a failing verdict).
    Failed,
    /// It did not run (an earlier phase failed, or hyoka was interrupted).
    Skipped,
    /// hyoka could not run it.
    Error,
}

impl PhaseStatus {
    /// The name as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Error => "error",
        }
    }
}

/// One phase of an eval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PhaseRecord {
    /// `setup`, `services`, `agent`, `build`, `review` or `cleanup`.
    pub name: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// How it ended.
    pub status: PhaseStatus,
    /// Its command's exit code, when it ran one that exited.
    pub exit_code: Option<i32>,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The JSON verdict a review command may print: `{"pass": bool, "score": number, "notes": "…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReviewVerdict {
    /// Whether the work passes review.
    pub pass: bool,
    /// A score, if the reviewer gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Notes, if the reviewer gives any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// One eval's line in `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EvalSummary {
    /// The eval.
    pub eval_id: String,
    /// passed, failed or error.
    pub status: Status,
    /// Why the agent stopped.
    pub termination: Termination,
    /// The agent's exit code.
    pub exit_code: Option<i32>,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// The counts.
    pub counts: Counts,
    /// Where its report is, relative to the run directory.
    pub report: String,
}

/// Totals over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Totals {
    /// Evals in the run.
    pub evals: u64,
    /// Evals that passed.
    pub passed: u64,
    /// Evals that failed.
    pub failed: u64,
    /// Evals that errored.
    pub errors: u64,
    /// Evals per termination reason.
    pub terminations: BTreeMap<String, u64>,
}

/// `reports/<run_id>/run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunSummary {
    /// The run.
    pub run_id: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time.
    pub ended_at: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// passed when every eval passed.
    pub status: Status,
    /// Per-eval results, in suite order.
    pub evals: Vec<EvalSummary>,
    /// Totals.
    pub totals: Totals,
}

impl RunSummary {
    /// Builds the summary of a run from its eval reports.
    pub fn from_reports(
        run_id: &str,
        started_at: String,
        ended_at: String,
        duration_ms: u64,
        reports: &[Report],
    ) -> Self {
        let evals = reports
            .iter()
            .map(|r| EvalSummary {
                eval_id: r.eval_id.clone(),
                status: r.status,
                termination: r.termination,
                exit_code: r.exit_code,
                duration_ms: r.duration_ms,
                counts: r.counts,
                report: format!("{}/report.json", r.eval_id),
            })
            .collect();
        Self::from_evals(run_id, started_at, ended_at, duration_ms, evals)
    }

    /// Builds a summary from per-eval lines, computing the status and the totals.
    pub fn from_evals(
        run_id: &str,
        started_at: String,
        ended_at: String,
        duration_ms: u64,
        evals: Vec<EvalSummary>,
    ) -> Self {
        let mut totals = Totals::default();
        for eval in &evals {
            totals.evals += 1;
            match eval.status {
                Status::Passed => totals.passed += 1,
                Status::Failed => totals.failed += 1,
                Status::Error => totals.errors += 1,
            }
            *totals
                .terminations
                .entry(eval.termination.as_str().to_owned())
                .or_default() += 1;
        }
        let status = if totals.passed == totals.evals {
            Status::Passed
        } else if totals.errors > 0 && totals.failed == 0 {
            Status::Error
        } else {
            Status::Failed
        };
        Self {
            run_id: run_id.to_owned(),
            started_at,
            ended_at,
            duration_ms,
            status,
            evals,
            totals,
        }
    }
}
