//! The page's own lenient view of the records: `run.json`, `report.json` and
//! `action_timeline.json` as any hyoka version writes them. The figures' inputs are the
//! harness's own types ([`TokenUsage`]), so a page counts tokens and cost as `run.json` does.
//!
//! Every field is optional or defaulted and unknown fields are ignored, so a record of an
//! older or newer hyoka still reads: fields of trials, epochs and usage (`tasks`, `metrics`,
//! `epoch`, `attempts`, `error_kind`, `usage`, `agent`) show when present. A field of the
//! wrong type makes its file unreadable, which the page reports for that trial.

use std::collections::BTreeMap;

use hyoka_eval::TokenUsage;
use serde::Deserialize;
use serde_json::Value;

/// The longest text of one field on the page (notes, details, paths, tool inputs).
pub(super) const FIELD_CAP: usize = 2048;

/// `run.json`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RunFile {
    pub(super) run_id: String,
    pub(super) started_at: String,
    pub(super) ended_at: String,
    pub(super) duration_ms: Option<u64>,
    pub(super) status: String,
    pub(super) evals: Vec<EvalLine>,
    pub(super) tasks: Vec<TaskLine>,
    pub(super) metrics: Option<Metrics>,
    pub(super) totals: Option<Value>,
    pub(super) suite: Option<Value>,
    pub(super) shard: Option<Value>,
    pub(super) missing_shards: Vec<u64>,
    pub(super) version: Option<Value>,
    pub(super) hyoka_version: Option<Value>,
    pub(super) usage: Option<TokenUsage>,
}

/// One trial's line in `run.json` `evals`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(super) struct EvalLine {
    pub(super) eval_id: String,
    pub(super) status: String,
    pub(super) termination: String,
    pub(super) error_kind: Option<String>,
    pub(super) exit_code: Option<i64>,
    pub(super) duration_ms: Option<u64>,
    pub(super) report: String,
    pub(super) epoch: Option<u64>,
    pub(super) attempts: Option<u64>,
    pub(super) agent: Option<String>,
    pub(super) usage: Option<TokenUsage>,
}

/// One task's line in `run.json` `tasks` (issue 15): the run's own figures win over the
/// page's.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(super) struct TaskLine {
    pub(super) eval_id: String,
    pub(super) agent: Option<String>,
    pub(super) trials: Option<u64>,
    pub(super) passed: Option<u64>,
    pub(super) pass_at_k: BTreeMap<String, f64>,
    pub(super) pass_hat_k: BTreeMap<String, f64>,
    pub(super) mean_score: Option<f64>,
}

/// `run.json` `metrics`: the task figures averaged over tasks.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(super) struct Metrics {
    pub(super) pass_at_k: BTreeMap<String, f64>,
    pub(super) pass_hat_k: BTreeMap<String, f64>,
    pub(super) mean_score: Option<f64>,
}

/// `report.json`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ReportFile {
    pub(super) eval_id: String,
    pub(super) command: Vec<String>,
    pub(super) workspace: String,
    pub(super) started_at: String,
    pub(super) ended_at: String,
    pub(super) duration_ms: Option<u64>,
    pub(super) status: String,
    pub(super) termination: String,
    pub(super) error_kind: Option<String>,
    pub(super) exit_code: Option<i64>,
    pub(super) signal: Option<i64>,
    pub(super) limits: BTreeMap<String, Value>,
    pub(super) counts: BTreeMap<String, Value>,
    pub(super) cleanup: Option<CleanupFile>,
    pub(super) error: Option<String>,
    pub(super) phases: Vec<PhaseFile>,
    pub(super) review: Option<ReviewFile>,
    pub(super) usage: Option<TokenUsage>,
    pub(super) attempts: Option<u64>,
    /// Earlier attempts' reasons, in whatever shape the run gives them.
    #[serde(
        alias = "attempt_reasons",
        alias = "previous_attempts",
        alias = "retried"
    )]
    pub(super) earlier_attempts: Option<Value>,
    pub(super) agent: Option<String>,
    pub(super) epoch: Option<u64>,
    pub(super) events: Option<EventsFile>,
}

/// `report.json` `events`: what the agent's events reader made of its output.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct EventsFile {
    pub(super) format: String,
    pub(super) seen: u64,
    pub(super) unknown_lines: u64,
    pub(super) malformed_lines: u64,
    pub(super) none_seen: bool,
}

impl EventsFile {
    /// One line for the trial's counts, in the run summary's words.
    pub(super) fn describe(&self) -> String {
        let (unknown, malformed) = (self.unknown_lines, self.malformed_lines);
        if self.none_seen {
            crate::render::none_seen(&self.format, unknown, malformed)
        } else {
            format!(
                "{} seen ({}), {unknown} unknown, {malformed} malformed",
                self.seen, self.format
            )
        }
    }
}

/// `report.json` `cleanup`.
#[derive(Debug, Default, Clone, Deserialize, serde::Serialize)]
#[serde(default)]
pub(super) struct CleanupFile {
    pub(super) processes_seen: Option<u64>,
    pub(super) processes_killed: Option<u64>,
    pub(super) survivors: Option<u64>,
    pub(super) workspace_removed: Option<bool>,
    pub(super) workspace_kept_at: Option<String>,
    pub(super) workspace_leftovers: Vec<String>,
    pub(super) layers: Vec<String>,
}

/// One of `report.json` `phases`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct PhaseFile {
    pub(super) name: String,
    pub(super) started_at: String,
    pub(super) duration_ms: u64,
    pub(super) status: String,
    pub(super) exit_code: Option<i64>,
    pub(super) detail: Option<String>,
}

/// `report.json` `review`.
#[derive(Debug, Default, Clone, Deserialize, serde::Serialize)]
#[serde(default)]
pub(super) struct ReviewFile {
    pub(super) pass: Option<bool>,
    pub(super) score: Option<f64>,
    pub(super) notes: Option<String>,
}

/// `action_timeline.json`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TimelineFile {
    pub(super) events: Vec<EventFile>,
    pub(super) summary: TimelineSummary,
}

/// One timeline event.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct EventFile {
    pub(super) t_ms: u64,
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) tool: Option<String>,
    pub(super) path: Option<String>,
    pub(super) input: Option<String>,
    pub(super) detail: Option<String>,
}

/// `action_timeline.json` `summary`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TimelineSummary {
    pub(super) events: Option<u64>,
    pub(super) dropped_events: Option<u64>,
    pub(super) tools: BTreeMap<String, u64>,
}
