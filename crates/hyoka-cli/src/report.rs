//! The shapes of `report.json` (one eval) and `run.json` (one run).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an eval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// The agent exited 0 and no limit, timeout or phase failed.
    Passed,
    /// The agent exited non-zero, hit a limit or a timeout, or was interrupted.
    Failed,
    /// hyoka could not run the eval (for example the command could not be spawned).
    Error,
}

/// Why the agent stopped. Exactly one reason, never guessed from strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Termination {
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
}

/// The limits in force for an eval (0 means disabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Limits {
    /// `--max-turns`.
    pub(crate) max_turns: u64,
    /// `--max-files`.
    pub(crate) max_files: u64,
    /// `--max-output-size`, in bytes.
    pub(crate) max_output_size: u64,
    /// `--max-session-actions`.
    pub(crate) max_session_actions: u64,
    /// `--timeout`, in milliseconds.
    pub(crate) timeout_ms: u64,
    /// `--grace`, in milliseconds.
    pub(crate) grace_ms: u64,
}

/// What the agent did, counted one way for enforcement and reporting alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counts {
    /// Assistant messages.
    pub(crate) turns: u64,
    /// Tool calls.
    pub(crate) actions: u64,
    /// Files created or changed in the workspace.
    pub(crate) files: u64,
    /// Bytes of those files.
    pub(crate) output_bytes: u64,
}

/// What was cleaned up after the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Cleanup {
    /// Processes of the agent's tree that hyoka saw.
    pub(crate) processes_seen: u64,
    /// Processes hyoka had to signal to stop.
    pub(crate) processes_killed: u64,
    /// Processes still alive after teardown (should always be 0).
    pub(crate) survivors: u64,
    /// Whether the workspace was removed completely.
    pub(crate) workspace_removed: bool,
    /// Where the workspace was kept, per `--keep-workspace`.
    pub(crate) workspace_kept_at: Option<String>,
    /// Entries that could not be removed, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) workspace_leftovers: Vec<String>,
}

/// `reports/<run_id>/<eval_id>/report.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Report {
    /// The run.
    pub(crate) run_id: String,
    /// The eval (`main` for a single command).
    pub(crate) eval_id: String,
    /// The agent's argv.
    pub(crate) command: Vec<String>,
    /// The workspace path.
    pub(crate) workspace: String,
    /// RFC 3339 start time.
    pub(crate) started_at: String,
    /// RFC 3339 end time.
    pub(crate) ended_at: String,
    /// Wall time in milliseconds.
    pub(crate) duration_ms: u64,
    /// passed, failed or error.
    pub(crate) status: Status,
    /// Why the agent stopped.
    pub(crate) termination: Termination,
    /// The agent's exit code, when it exited.
    pub(crate) exit_code: Option<i32>,
    /// The signal that ended the agent, when one did.
    pub(crate) signal: Option<i32>,
    /// The limits in force.
    pub(crate) limits: Limits,
    /// The counts at the moment the agent stopped.
    pub(crate) counts: Counts,
    /// The cleanup.
    pub(crate) cleanup: Cleanup,
    /// Human-readable detail (for example why a spawn failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// One eval's line in `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct EvalSummary {
    /// The eval.
    pub(crate) eval_id: String,
    /// passed, failed or error.
    pub(crate) status: Status,
    /// Why the agent stopped.
    pub(crate) termination: Termination,
    /// The agent's exit code.
    pub(crate) exit_code: Option<i32>,
    /// Wall time in milliseconds.
    pub(crate) duration_ms: u64,
    /// The counts.
    pub(crate) counts: Counts,
    /// Where its report is, relative to the run directory.
    pub(crate) report: String,
}

/// Totals over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Totals {
    /// Evals in the run.
    pub(crate) evals: u64,
    /// Evals that passed.
    pub(crate) passed: u64,
    /// Evals that failed.
    pub(crate) failed: u64,
    /// Evals that errored.
    pub(crate) errors: u64,
    /// Evals per termination reason.
    pub(crate) terminations: BTreeMap<String, u64>,
}

/// `reports/<run_id>/run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunSummary {
    /// The run.
    pub(crate) run_id: String,
    /// RFC 3339 start time.
    pub(crate) started_at: String,
    /// RFC 3339 end time.
    pub(crate) ended_at: String,
    /// Wall time in milliseconds.
    pub(crate) duration_ms: u64,
    /// passed when every eval passed.
    pub(crate) status: Status,
    /// Per-eval results, in suite order.
    pub(crate) evals: Vec<EvalSummary>,
    /// Totals.
    pub(crate) totals: Totals,
}

impl RunSummary {
    /// Builds the summary of a run from its eval reports.
    pub(crate) fn from_reports(
        run_id: &str,
        started_at: String,
        ended_at: String,
        duration_ms: u64,
        reports: &[Report],
    ) -> Self {
        let mut totals = Totals::default();
        let evals = reports
            .iter()
            .map(|r| {
                totals.evals += 1;
                match r.status {
                    Status::Passed => totals.passed += 1,
                    Status::Failed => totals.failed += 1,
                    Status::Error => totals.errors += 1,
                }
                *totals
                    .terminations
                    .entry(termination_name(r.termination).to_owned())
                    .or_default() += 1;
                EvalSummary {
                    eval_id: r.eval_id.clone(),
                    status: r.status,
                    termination: r.termination,
                    exit_code: r.exit_code,
                    duration_ms: r.duration_ms,
                    counts: r.counts,
                    report: format!("{}/report.json", r.eval_id),
                }
            })
            .collect();
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

/// The snake_case name of a termination, as serialized.
pub(crate) fn termination_name(termination: Termination) -> &'static str {
    match termination {
        Termination::Exited => "exited",
        Termination::Timeout => "timeout",
        Termination::MaxTurns => "max_turns",
        Termination::MaxFiles => "max_files",
        Termination::MaxOutputSize => "max_output_size",
        Termination::MaxSessionActions => "max_session_actions",
        Termination::Interrupted => "interrupted",
        Termination::SpawnFailed => "spawn_failed",
    }
}
