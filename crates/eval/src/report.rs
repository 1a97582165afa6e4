//! The shapes of `report.json` (one trial of an eval) and `run.json` (one run).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use hyoka_events::TokenUsage;
use hyoka_events::{AgentNotes, EventSource, LineCounts};

/// How a trial ended, and whose result it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The agent exited 0 within its limits and every phase that ran passed.
    Passed,
    /// The agent's result: it exited non-zero, hit a limit or its timeout, its command does
    /// not exist, its work did not build, or the review's verdict is a fail.
    Failed,
    /// No result, and not the agent's fault: `error_kind` says whose (`infra`: the machine,
    /// a service, the workspace, an interruption; `scorer`: the build or review crashed,
    /// timed out or gave no valid verdict). Not counted in pass rates.
    Error,
    /// Never started: the run was interrupted first, or skipped the trial after a fatal
    /// error. Not counted in pass rates.
    NotRun,
}

impl Status {
    /// The name as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Error => "error",
            Self::NotRun => "not_run",
        }
    }

    /// Whether the trial counts in pass rates (passed or failed).
    pub fn is_scored(self) -> bool {
        matches!(self, Self::Passed | Self::Failed)
    }
}

/// Whose fault an `error` trial is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The infrastructure: a phase process other than the agent's missing command could not
    /// start, a service was not ready or died, the workspace or the disk failed, the kernel's
    /// OOM killer struck, processes survived teardown, or the run was interrupted while the
    /// trial ran. `--retries` reruns these (never an interrupted one), and so does a resume.
    Infra,
    /// The scorer: the build or the review crashed (a signal, or a review exit code other
    /// than 0 and 1), timed out, could not start, or the review printed an invalid verdict.
    Scorer,
}

impl ErrorKind {
    /// The name as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Infra => "infra",
            Self::Scorer => "scorer",
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
    /// `--max-tokens` was crossed.
    MaxTokens,
    /// `--max-cost` was crossed.
    MaxCost,
    /// `--max-memory` was hit: the kernel's OOM killer ended a process of the tree at the
    /// limit (`report.json` `resources.memory` has the figures).
    MaxMemory,
    /// `--max-disk` was crossed: the workspace, the private `/tmp` and the isolated home
    /// together held more (`resources.disk`).
    MaxDisk,
    /// hyoka was interrupted (SIGINT, SIGTERM, SIGHUP).
    Interrupted,
    /// The command could not be started.
    SpawnFailed,
    /// A service the eval needs never became ready, or died while the agent ran.
    ServiceFailed,
    /// The workspace (or the isolated home) could not be made: the agent never started.
    SetupFailed,
    /// The trial was skipped because an earlier one hit a fatal error.
    Skipped,
    /// The environment the trial needs cannot be given on this machine (a Harbor task whose
    /// image, services or hardware the host cannot provide): it never started, and
    /// `error` says why.
    Unavailable,
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
            Self::MaxTokens => "max_tokens",
            Self::MaxCost => "max_cost",
            Self::MaxMemory => "max_memory",
            Self::MaxDisk => "max_disk",
            Self::Interrupted => "interrupted",
            Self::SpawnFailed => "spawn_failed",
            Self::ServiceFailed => "service_failed",
            Self::SetupFailed => "setup_failed",
            Self::Skipped => "skipped",
            Self::Unavailable => "unavailable",
        }
    }
}

/// The limits in force for an eval (0 means disabled).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
    /// `--max-tokens`.
    #[serde(default)]
    pub max_tokens: u64,
    /// `--max-cost`, in US dollars.
    #[serde(default)]
    pub max_cost: f64,
    /// `--max-memory`, in bytes (0: none).
    #[serde(default)]
    pub max_memory: u64,
    /// `--max-pids` (0: none).
    #[serde(default)]
    pub max_pids: u64,
    /// `--cpus` (0: none).
    #[serde(default)]
    pub cpus: f64,
    /// `--max-disk`, in bytes (0: none).
    #[serde(default)]
    pub max_disk: u64,
    /// `--timeout`, in milliseconds.
    pub timeout_ms: u64,
    /// `--grace`, in milliseconds.
    pub grace_ms: u64,
}

/// What the agent did, counted one way for enforcement and reporting alike (`report.json`
/// `counts`, and `status.json`'s while the agent runs): `hyoka-proctrack`'s, the owner of
/// `status.json`.
pub use hyoka_proctrack::Counts;

/// `report.json` `resources`: each limit in force and the most the agent's tree used, from
/// the cgroup leaves (memory and pids) and the scans of its directories (disk). Present when
/// a resource limit was set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResourcesRecord {
    /// `memory.peak` (v2) or `memory.max_usage_in_bytes` (v1), in bytes, and the limit.
    pub memory: Option<ResourceFigure>,
    /// The most processes at once (`pids.peak`), and the limit.
    pub pids: Option<ResourceFigure>,
    /// CPU time used, in microseconds (`limit` is the quota in thousandths of a CPU).
    pub cpu: Option<ResourceFigure>,
    /// The most bytes the workspace's changes, the private `/tmp` and the isolated home held
    /// together at one scan, and the limit.
    pub disk: Option<ResourceFigure>,
    /// Limits that were asked for but not enforced (`--sandbox=best-effort` on a machine
    /// without the controller), with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
}

/// One resource's limit and use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResourceFigure {
    /// The limit in force; `null` when it was not enforced.
    pub limit: Option<u64>,
    /// The most used; `null` when the machine does not tell.
    pub peak: Option<u64>,
    /// How often the limit refused something: OOM kills (memory), refused forks (pids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hits: Option<u64>,
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

/// `reports/<run_id>/<trial>/report.json`: one trial of an eval (see [`Report::trial`] for
/// the directory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Report {
    /// The run.
    pub run_id: String,
    /// The eval (`main` for a single command).
    pub eval_id: String,
    /// The trial: its directory under the run and its processes' id in the ledger. The
    /// eval's id when the eval has one trial; else the eval's id, then the agent's name
    /// (with a suite's `agents:`), then the epoch, joined by dots (`fix-bug.claude.2`).
    #[serde(default)]
    pub trial: String,
    /// Which repeat of the eval this is, from 1 (`--epochs`).
    #[serde(default = "one")]
    pub epoch: u32,
    /// The agent of a suite's `agents:` map that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
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
    /// passed, failed, error or not_run.
    pub status: Status,
    /// Whose fault an `error` is: `infra` or `scorer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
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
    /// The tokens and cost the agent reported; absent when it reported none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// Which reader read the agent's events and what it made of them; absent when events
    /// were off or the agent never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EventsRecord>,
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
    /// The resource limits and their peaks, when any was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesRecord>,
    /// How many times the trial was attempted (`--retries` reruns infrastructure errors); 0
    /// when it never started.
    #[serde(default = "one")]
    pub attempts: u32,
    /// The earlier attempts, each an infrastructure error, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_attempts: Vec<Attempt>,
    /// The trial's identity: a SHA-256 of its eval's resolved settings (command, the
    /// starter's and injected files' contents, environment, limits, timeout, events, phases,
    /// agent) and its epoch. A resumed run keeps a finished trial only when it is unchanged.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity: String,
    /// For a Harbor task's trial: the task folder, where it ran, the verifier's reward (or
    /// why there is none), skipped build steps and the logs kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<crate::tasks::TaskRecord>,
}

fn one() -> u32 {
    1
}

/// `report.json` `events`: which reader read the agent's events and what it made of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EventsRecord {
    /// What the settings asked for: a format, or `auto`.
    pub requested: EventSource,
    /// The reader that read them: `stream-json`, `jsonl`, `codex-json` or
    /// `gemini-stream-json` (with `auto`, the one the program name chose).
    pub format: EventSource,
    /// Lines that were events of the format, whether or not they were turns, actions or
    /// spending.
    pub seen: u64,
    /// JSON lines of a type the format does not have.
    pub unknown_lines: u64,
    /// Lines that were not JSON objects, or were oversized.
    pub malformed_lines: u64,
    /// `true` when the reader saw no valid event at all: the agent printed nothing in this
    /// format (its machine-readable output is off, or the format is the wrong one), so its
    /// turns, actions and spending were not counted. The summary says `events: none seen`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub none_seen: bool,
    /// The model the agent announced (Claude Code's and Gemini CLI's `init` lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent's version, as it announced it (Claude Code's `claude_code_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_version: Option<String>,
    /// Transient model API errors (429, 5xx, overloaded) the agent reported, retries
    /// included; a failed trial with any is an infrastructure error.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub api_errors: u64,
    /// `true` when `usage` is partial or missing: the agent reports its session totals only
    /// at the end (Codex, Gemini CLI; Claude Code's output tokens and cost), and they never
    /// came (a limit, the timeout or a crash stopped it first). Absent when the totals came,
    /// for `jsonl`, and when the reader saw no event.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_partial: bool,
    /// `true` when `--max-tokens` or `--max-cost` fired on the agent's end-of-session total:
    /// the agent reported the figure only after its work was done, so the limit stopped
    /// nothing that was still running.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub limit_late: bool,
    /// Set when the `$HYOKA_EVENTS` file grew past its cap (16 MiB, like `output.log`): the
    /// cap in bytes. What followed it was not read, and the file was cut back to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped_at: Option<u64>,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if signature"
)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl EventsRecord {
    /// The record of a reader of `format` (asked for as `requested`) that made `lines` of the
    /// agent's output.
    pub fn new(requested: EventSource, format: EventSource, lines: LineCounts) -> Self {
        Self {
            requested,
            format,
            seen: lines.seen,
            unknown_lines: lines.unknown,
            malformed_lines: lines.malformed,
            none_seen: lines.seen == 0,
            model: None,
            agent_version: None,
            api_errors: 0,
            usage_partial: false,
            limit_late: false,
            capped_at: None,
        }
    }

    /// The record with what the agent said about itself (`notes`); `reported_usage`: whether
    /// any spending was counted; `limit_late`: whether a spending limit fired on the
    /// end-of-session total.
    #[must_use]
    pub fn with_notes(
        mut self,
        notes: &AgentNotes,
        reported_usage: bool,
        limit_late: bool,
    ) -> Self {
        self.model.clone_from(&notes.model);
        self.agent_version.clone_from(&notes.version);
        self.api_errors = notes.api_errors;
        // Only the formats whose agents report session totals can miss them.
        self.usage_partial =
            !notes.totals && (reported_usage || self.seen > 0) && self.format != EventSource::Jsonl;
        self.limit_late = limit_late;
        self
    }
}

/// An earlier attempt of a trial that was retried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Attempt {
    /// RFC 3339 start time.
    pub started_at: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// Why the attempt stopped.
    pub termination: Termination,
    /// Whose fault it was (always `infra`: nothing else is retried).
    pub error_kind: ErrorKind,
    /// What went wrong.
    pub reason: String,
}

impl Attempt {
    /// The attempt that `report` records.
    pub fn of(report: &Report) -> Self {
        Self {
            started_at: report.started_at.clone(),
            duration_ms: report.duration_ms,
            termination: report.termination,
            error_kind: report.error_kind.unwrap_or(ErrorKind::Infra),
            reason: report
                .reason()
                .unwrap_or_else(|| report.termination.as_str().to_owned()),
        }
    }
}

impl Report {
    /// Whether `--retries` may run the trial again: an infrastructure error that is not an
    /// interruption.
    pub fn is_retryable(&self) -> bool {
        self.status == Status::Error
            && self.error_kind == Some(ErrorKind::Infra)
            && self.termination != Termination::Interrupted
    }

    /// Why the trial did not pass, in one line: the agent's end (an exit code, a limit, a
    /// spawn failure's reason), or the failing phase (the build's exit, the review's
    /// verdict and score), or the error. `None` for a pass.
    pub fn reason(&self) -> Option<String> {
        if self.status == Status::Passed {
            return None;
        }
        // A Harbor task's agent is judged by the reward, not by its exit code.
        let agent_failed = !(self.termination == Termination::Exited
            && (self.exit_code == Some(0) || self.task.is_some()));
        // An agent that did its job, then left what cleanup could not remove (a mount point,
        // a survivor): the cleanup's problem is the reason, not the agent's exit.
        let cleanup_failed = self
            .phases
            .iter()
            .any(|p| p.name == "cleanup" && p.status == PhaseStatus::Failed);
        let only_cleanup = cleanup_failed && !agent_failed && self.error.is_none();
        if self.status == Status::NotRun
            || (self.status == Status::Error
                && self.error_kind == Some(ErrorKind::Infra)
                && !only_cleanup)
            || (agent_failed && self.status == Status::Failed)
        {
            if let Some(error) = &self.error {
                return Some(error.clone());
            }
            return Some(match (self.termination, self.exit_code, self.signal) {
                (Termination::Exited, Some(code), _) => {
                    format!("the agent exited with code {code}")
                }
                (Termination::Exited, None, Some(signal)) => {
                    format!("the agent was killed by signal {signal}")
                }
                (termination, ..) => termination.as_str().replace('_', " "),
            });
        }
        let phase = self.phases.iter().find(|p| {
            matches!(p.name.as_str(), "build" | "review" | "cleanup")
                && matches!(p.status, PhaseStatus::Failed | PhaseStatus::Error)
        })?;
        let mut why = format!(
            "{} {}",
            phase.name,
            if phase.status == PhaseStatus::Error {
                "error"
            } else {
                "failed"
            }
        );
        if let Some(detail) = &phase.detail {
            why = format!("{why}: {detail}");
        }
        if phase.name == "review"
            && let Some(verdict) = &self.review
        {
            use std::fmt::Write as _;
            let pass = if verdict.pass { "pass" } else { "fail" };
            let _ = write!(why, " (verdict {pass}");
            if let Some(score) = verdict.score {
                let _ = write!(why, ", score {score}");
            }
            if let Some(notes) = &verdict.notes {
                let _ = write!(why, ": {}", hyoka_events::truncate_chars(notes, 200));
            }
            why.push(')');
        }
        Some(why)
    }
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

/// One trial's line in `run.json` `evals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EvalSummary {
    /// The eval.
    pub eval_id: String,
    /// The trial's id (see [`Report::trial`]).
    #[serde(default)]
    pub trial: String,
    /// Which repeat of the eval, from 1.
    #[serde(default = "one")]
    pub epoch: u32,
    /// The agent of a suite's `agents:` map that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// passed, failed, error or not_run.
    pub status: Status,
    /// Whose fault an `error` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// Why the agent stopped.
    pub termination: Termination,
    /// The agent's exit code.
    pub exit_code: Option<i32>,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// The counts.
    pub counts: Counts,
    // Boxed, as `events`: a run holds every trial's line, and most agents report neither.
    /// The tokens and cost the agent reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<TokenUsage>>,
    /// Which reader read the agent's events and what it made of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Box<EventsRecord>>,
    /// The review's score, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// How many times the trial was attempted.
    #[serde(default = "one")]
    pub attempts: u32,
    /// Why it did not pass, in one line ([`Report::reason`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where its report is, relative to the run directory (`<trial>/report.json`).
    pub report: String,
}

impl EvalSummary {
    /// The line of `report`.
    pub fn of(report: &Report) -> Self {
        let trial = if report.trial.is_empty() {
            report.eval_id.clone()
        } else {
            report.trial.clone()
        };
        Self {
            eval_id: report.eval_id.clone(),
            report: format!("{trial}/report.json"),
            trial,
            epoch: report.epoch,
            agent: report.agent.clone(),
            status: report.status,
            error_kind: report.error_kind,
            termination: report.termination,
            exit_code: report.exit_code,
            duration_ms: report.duration_ms,
            counts: report.counts,
            usage: report.usage.map(Box::new),
            events: report.events.clone().map(Box::new),
            score: report.review.as_ref().and_then(|v| v.score),
            attempts: report.attempts,
            reason: report.reason(),
        }
    }
}

/// Totals over a run's trials.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Totals {
    /// Trials in the run (evals times epochs, times agents).
    pub evals: u64,
    /// Trials that passed.
    pub passed: u64,
    /// Trials that failed.
    pub failed: u64,
    /// Trials that ended in an error (`errors_infra` plus `errors_scorer`).
    pub errors: u64,
    /// Errors of the infrastructure.
    #[serde(default)]
    pub errors_infra: u64,
    /// Errors of the scorer.
    #[serde(default)]
    pub errors_scorer: u64,
    /// Trials that never started.
    #[serde(default)]
    pub not_run: u64,
    /// Trials attempted more than once (`--retries`).
    #[serde(default)]
    pub retried: u64,
    /// `passed / (passed + failed)`: errors and trials not run are not counted; absent when
    /// no trial was scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_rate: Option<f64>,
    /// Trials per termination reason.
    pub terminations: BTreeMap<String, u64>,
}

impl Totals {
    /// The scored trials (passed or failed): the denominator of `pass_rate`.
    pub fn scored(&self) -> u64 {
        self.passed.saturating_add(self.failed)
    }
}

/// `reports/<run_id>/run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunSummary {
    /// The run.
    pub run_id: String,
    /// The version of hyoka that wrote it.
    #[serde(default)]
    pub hyoka_version: String,
    /// The suite's identity: a SHA-256 of every eval's resolved settings (all shards), so
    /// that `report merge` joins only shards of one suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    /// The shard this run is (`I/N`), when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The shards missing from a merge made with `--allow-partial`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<usize>,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time.
    pub ended_at: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// passed when every trial passed; else failed when one failed, else error when one
    /// errored, else not_run.
    pub status: Status,
    /// Per-trial results, in plan order (each eval's trials together).
    pub evals: Vec<EvalSummary>,
    /// Per task (an eval, with an agent when the suite names agents): trials, passes,
    /// pass@k and pass^k, the mean review score.
    #[serde(default)]
    pub tasks: Vec<TaskSummary>,
    /// The task figures averaged over tasks.
    #[serde(default)]
    pub metrics: Metrics,
    /// The tokens and cost the trials reported, summed; absent when none reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// Totals.
    pub totals: Totals,
}

/// Which outcomes make a pipeline step fail (`hyoka run --fail-on`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailOn {
    /// Any trial that did not pass (failed, errored or not run): the default.
    #[default]
    Failure,
    /// Only a trial that errored or did not run; failing agents do not fail the step.
    Error,
    /// Nothing.
    Never,
}

impl std::str::FromStr for FailOn {
    type Err = crate::error::EvalError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "failure" => Ok(Self::Failure),
            "error" => Ok(Self::Error),
            "never" => Ok(Self::Never),
            _ => Err(crate::error::EvalError::invalid(
                "--fail-on",
                text,
                "expected failure, error or never",
            )),
        }
    }
}

/// What identifies a run in its summary, besides its trials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunInfo {
    /// The run.
    pub run_id: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time.
    pub ended_at: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// The suite's identity.
    pub suite: Option<String>,
    /// The shard (`I/N`).
    pub shard: Option<String>,
}

impl RunSummary {
    /// Whether the run fails a pipeline step under `policy`.
    pub fn fails(&self, policy: FailOn) -> bool {
        match policy {
            FailOn::Failure => self.status != Status::Passed,
            FailOn::Error => self.totals.errors + self.totals.not_run > 0,
            FailOn::Never => false,
        }
    }
}

/// One task's line in `run.json` `tasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskSummary {
    /// The eval.
    pub eval_id: String,
    /// The agent, when the suite names several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Its trials, whatever their status.
    pub trials: u64,
    /// Trials that passed.
    pub passed: u64,
    /// Trials that failed.
    pub failed: u64,
    /// Trials that ended in an error.
    pub errors: u64,
    /// Trials that never started.
    pub not_run: u64,
    /// pass@k by `k` (as a string).
    #[cfg_attr(feature = "schema", schemars(with = "BTreeMap<String, f64>"))]
    pub pass_at_k: ByK,
    /// pass^k by `k` (as a string).
    #[cfg_attr(feature = "schema", schemars(with = "BTreeMap<String, f64>"))]
    pub pass_hat_k: ByK,
    /// The mean of the review scores its trials were given, when any was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_score: Option<f64>,
}

/// A figure by `k` (pass@k, pass^k), in increasing `k`: in `run.json`, an object whose keys
/// are the `k`s as decimal strings (`{"1": 0.5, "3": 0.875}`).
///
/// A task's figures are held as a short list, not a map: a run of thousands of one-trial
/// tasks keeps two of them per task until `run.json` is written.
///
/// ```
/// use hyoka_eval::ByK;
///
/// let mut at_k = ByK::default();
/// at_k.insert(3, 0.875);
/// at_k.insert(1, 0.5);
/// assert_eq!(at_k.get("1"), Some(0.5));
/// assert_eq!(at_k.iter().map(|(k, _)| k).collect::<Vec<_>>(), [1, 3]);
/// assert_eq!(serde_json::to_string(&at_k).unwrap(), r#"{"1":0.5,"3":0.875}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ByK(Vec<(u64, f64)>);

impl ByK {
    /// Sets the figure for `k`.
    pub fn insert(&mut self, k: u64, figure: f64) {
        match self.0.binary_search_by_key(&k, |(key, _)| *key) {
            Ok(at) => self.0[at].1 = figure,
            Err(at) => self.0.insert(at, (k, figure)),
        }
    }

    /// A `k` as `run.json` writes it (`"1"`): a whole number above 0, or `None`.
    pub fn parse_k(k: &str) -> Option<u64> {
        k.parse().ok().filter(|k| *k > 0)
    }

    /// The figure for `k`, written as in `run.json` (`"1"`); `None` for a `k` it lacks or
    /// that [`parse_k`](Self::parse_k) refuses.
    pub fn get(&self, k: &str) -> Option<f64> {
        let k = Self::parse_k(k)?;
        self.0
            .binary_search_by_key(&k, |(key, _)| *key)
            .ok()
            .map(|at| self.0[at].1)
    }

    /// Whether it has a figure for `k` (see [`get`](Self::get)).
    pub fn contains_key(&self, k: &str) -> bool {
        self.get(k).is_some()
    }

    /// The `k`s and their figures, in increasing `k`.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u64, f64)> + '_ {
        self.0.iter().copied()
    }

    /// How many `k`s it has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it has no figure.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Removes every figure.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

impl FromIterator<(u64, f64)> for ByK {
    /// Of a `k` given twice, the last figure stands.
    fn from_iter<I: IntoIterator<Item = (u64, f64)>>(pairs: I) -> Self {
        let mut pairs: Vec<(u64, f64)> = pairs.into_iter().collect();
        // A stable sort keeps equal `k`s in the order given; the earlier takes the later's figure.
        pairs.sort_by_key(|(k, _)| *k);
        pairs.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 = later.1;
            }
            same
        });
        Self(pairs)
    }
}

impl Serialize for ByK {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, figure)| (k.to_string(), figure)))
    }
}

impl<'de> Deserialize<'de> for ByK {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, f64>::deserialize(deserializer)?;
        map.into_iter()
            .map(|(k, figure)| match Self::parse_k(&k) {
                Some(k) => Ok((k, figure)),
                None => Err(serde::de::Error::custom(format!(
                    "a figure's k must be a whole number above 0, not {k:?}"
                ))),
            })
            .collect()
    }
}

/// `run.json` `metrics`: each task figure averaged over the tasks that have it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Metrics {
    /// Tasks in the run.
    pub tasks: u64,
    /// Mean pass@k over the tasks with a figure for `k`.
    #[cfg_attr(feature = "schema", schemars(with = "BTreeMap<String, f64>"))]
    pub pass_at_k: ByK,
    /// Mean pass^k over the tasks with a figure for `k`.
    #[cfg_attr(feature = "schema", schemars(with = "BTreeMap<String, f64>"))]
    pub pass_hat_k: ByK,
    /// The mean of the tasks' mean review scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_score: Option<f64>,
}
