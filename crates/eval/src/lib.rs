//! The hyoka eval harness as a library: run AI coding agents in isolated workspaces, with
//! every process contained, limits enforced while they run, and honest records.
//!
//! # Overview
//!
//! - Settings: [`Settings`] at each level (command line, eval, suite defaults) resolve into
//!   one [`EvalSpec`] per eval ([`EvalSpec::resolve`]: the strongest level that sets a field
//!   wins, then the built-in value). With the `yaml` feature, [`Suite::from_yaml`] validates
//!   a whole suite file before anything runs; [`Shard`] picks a shard of it.
//! - A run: [`run_tracked`] (the one call an embedder needs: a `hyoka-proctrack` tracker,
//!   real workspaces) or [`run`] on any [`Harness`] takes a [`RunPlan`], a [`Stop`] handle and
//!   an [`Observer`], runs each eval's `epochs` [`Trial`]s on `workers` in plan order (an
//!   infrastructure error runs again, up to `retries`; a [`Resume`] keeps what an earlier run
//!   finished, by [`EvalSpec::identity`]) and returns a [`RunOutcome`]: each trial's
//!   [`Report`] (`report.json`, its [`Status`] and [`ErrorKind`] saying whose result it is)
//!   and the [`RunSummary`] (`run.json`, with [`TaskSummary`]s: pass@k, pass^k).
//! - An eval goes through its phases in order: setup (the workspace, an isolated home),
//!   services ([`ServiceSpec`], [`Readiness`]), the agent, build and review
//!   ([`PhaseCommand`], a [`ReviewVerdict`]), cleanup; each is a [`PhaseRecord`].
//! - While the agent runs, its events ([`AgentEvent`] from [`EventSource`], each format a
//!   [`LineReader`]: Claude Code's stream-json through [`StreamJsonParser`], `codex exec
//!   --json` through [`CodexJsonParser`], Gemini CLI's stream-json through
//!   [`GeminiStreamJsonParser`], or the `$HYOKA_EVENTS` JSON lines through [`JsonlReader`];
//!   `auto` picks one by program name, and `report.json` records it in an [`EventsRecord`]) and the
//!   workspace's usage feed the sans-IO [`Monitor`] of a [`LimitSet`]; the first limit crossed
//!   stops the agent ([`Termination`]). The [`Timeline`] (`action_timeline.json`) records it
//!   all.
//! - A kernel sandbox per eval ([`SandboxSpec`], decided by [`decide`] against what the
//!   machine offers): Landlock confines every process's writes to its workspace, isolated
//!   home, private temp directory and `sandbox_write` paths, and `network: none` gives it a
//!   network namespace with only loopback; `report.json` records it ([`SandboxRecord`]).
//! - Seams ([`Harness`]): [`Processes`]/[`Process`] ([`TrackedProcesses`]),
//!   [`Workspaces`]/[`EvalWorkspace`] ([`TempWorkspaces`]), [`Clock`] ([`SystemClock`]); with
//!   the `mock` feature `FakeHost`, `FakeProgram` and `FakeClock` run the same policy in
//!   memory.
//! - Spending: readers turn an agent's reports into [`UsageEvent`]s, accumulated by the
//!   [`Monitor`]'s [`UsageMeter`] into [`TokenUsage`] and limited by `max_tokens` and
//!   `max_cost`.
//! - Records are written atomically ([`write_json`]); [`merge_summaries`] joins the
//!   summaries of a suite's shards (each read as evidence by [`read_summary`], checked to
//!   make one run); [`compare_runs`] pairs two runs' tasks; [`render_summary`] and
//!   [`render_comparison`] say it for people; with the `schema` feature [`schemas`] gives
//!   the records' JSON Schemas.
//! - With the `html` feature, `write_html_report` writes one self-contained, offline HTML
//!   page of a run (or of two compared) from its records: task table, per-trial timelines,
//!   cleanup records.
//! - After a crash, [`clean_abandoned`] repairs what abandoned runs left behind (their
//!   processes through `hyoka-proctrack`, their workspaces through `hyoka-workspace`, each
//!   only when provably the run instance's, with the run owner's power).
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use hyoka_eval::{EvalSpec, NoObserver, RunPlan, Stop, run_tracked};
//! use hyoka_workspace::{EvalId, RunId};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let mut spec = EvalSpec::new(EvalId::new("hello")?, vec!["sh".into(), "-c".into(), "echo hi > out.txt".into()]);
//! spec.limits.max_files = 10;
//! let plan = RunPlan::new(RunId::new("example-run")?, "reports", std::env::temp_dir(), vec![spec]);
//! let outcome = run_tracked(&plan, Default::default(), Stop::never(), Arc::new(NoObserver)).await?;
//! println!("{}: {}", outcome.summary.run_id, outcome.summary.status.as_str());
//! # Ok(())
//! # }
//! ```
//!
//! The `embedded_suite` example runs a two-eval suite with a progress observer.
//!
//! # Testing with fakes
//!
//! With the `mock` feature, `FakeHost` gives a [`Harness`] whose programs are scripts
//! (`FakeProgram`: print lines, write files, exit or hang), whose workspaces are in memory,
//! and whose teardown is `hyoka-proctrack`'s own against its `FakeSystem`; on tokio's paused
//! clock every duration in the records is exact.
//!
//! ```
//! # #[cfg(feature = "mock")] {
//! use std::sync::Arc;
//! use std::time::{Duration, SystemTime};
//! use hyoka_eval::{EvalSpec, FakeHost, FakeProgram, NoObserver, RunPlan, Stop, Termination, run};
//! use hyoka_workspace::{EvalId, RunId};
//!
//! # let reports = tempfile::tempdir()?;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build()?;
//! runtime.block_on(async {
//!     let host = FakeHost::new(SystemTime::UNIX_EPOCH);
//!     host.program("agent", FakeProgram::new().hangs());
//!     let mut spec = EvalSpec::new(EvalId::new("slow")?, vec!["agent".into()]);
//!     spec.timeout = Duration::from_secs(30);
//!     let plan = RunPlan::new(RunId::new("doc")?, reports.path(), "/mem", vec![spec]);
//!     let outcome = run(&plan, &host.harness(), Stop::never(), Arc::new(NoObserver)).await?;
//!     assert_eq!(outcome.reports[0].termination, Termination::Timeout);
//!     assert!(host.alive().is_empty());
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Theory of operation
//!
//! An eval is one task. Setup creates the workspace (and an isolated home), records it in
//! the ledger and marks `status.json`; services start in order and must become ready. The
//! agent is spawned through [`Processes`] (under every containment layer), and one `select!`
//! loop waits for the first of: its exit, its deadline, a stop request, an agent event, a
//! workspace update, a service's death, and a half-second refresh of its process tree. A
//! limit is checked in O(1) per event. Then the whole tree is torn down (SIGTERM, grace,
//! SIGKILL rounds; a second stop request cuts the grace short), queued events are drained,
//! and a final scan of the workspace is authoritative for files and bytes. Build and review
//! run after the agent's tree is gone (also after a limit or timeout, never after an
//! interruption or when the agent never ran). The eval passes only if the agent exited 0
//! within its limits and every phase that ran passed; then the workspace is removed (or
//! kept), and `action_timeline.json` and `report.json` are written atomically.
#![warn(
    clippy::disallowed_methods,
    reason = "libraries read no environment and take time from their callers"
)]

mod capped_log;
mod clean;
mod compare;
mod error;
mod eval;
mod events;
#[cfg(any(test, feature = "mock"))]
mod fake;
mod host;
#[cfg(feature = "html")]
mod html;
mod identity;
mod limits;
mod merge;
mod metrics;
mod phases;
mod ps;
mod records;
mod render;
mod report;
mod runner;
mod sandbox;
#[cfg(feature = "schema")]
mod schema;
mod settings;
mod shard;
mod stop;
#[cfg(feature = "yaml")]
mod suite;
mod timeline;
mod trials;
mod units;
mod usage;
mod watch;

pub use crate::clean::{
    CleanupOptions, CleanupReport, WorkspaceAction, WorkspaceCleanup, clean_abandoned,
};
pub use crate::compare::{
    Comparison, Flip, PAIRED_TEST, PairedTest, RunSide, TaskDelta, compare_runs, sign_test,
};
pub use crate::error::EvalError;
pub use crate::events::{
    AgentEvent, CodexJsonParser, EventSource, GeminiStreamJsonParser, INPUT_PREVIEW_BYTES,
    JsonlReader, LineCounts, LineKind, LineReader, LineSplitter, MAX_LINE, StreamJsonParser,
    parse_jsonl_event, truncate_chars,
};
#[cfg(any(test, feature = "mock"))]
pub use crate::fake::{FakeClock, FakeHost, FakeProgram};
pub use crate::host::{
    Clock, EvalWorkspace, Harness, Pipe, Process, Processes, SystemClock, TempWorkspaces,
    TrackedProcesses, WorkspaceEnd, Workspaces,
};
#[cfg(feature = "html")]
pub use crate::html::{
    HtmlError, HtmlOptions, RunRecords, default_page_path, render_page, write_html_report,
};
pub use crate::identity::suite_identity;
pub use crate::limits::{
    DEFAULT_MAX_FILES, DEFAULT_MAX_OUTPUT_SIZE, DEFAULT_MAX_SESSION_ACTIONS, DEFAULT_MAX_TURNS,
    LimitSet, Monitor, PartialLimits,
};
pub use crate::merge::{MergeOptions, merge_summaries, read_summary};
pub use crate::metrics::{pass_at_k, pass_hat_k};
pub use crate::ps::{LiveRun, PhaseNow, current_phase, live_runs, render_live_runs};
pub use crate::records::{STATUS_FILE, millis, rfc3339, write_json};
pub use crate::render::{
    ProgressLines, ProgressSink, render_comparison, render_summary, timeline_text, usage_text,
};
pub use crate::report::{
    Attempt, Cleanup, Counts, ErrorKind, EvalSummary, EventsRecord, FailOn, Limits, Metrics,
    PhaseRecord, PhaseStatus, Report, ReviewVerdict, RunInfo, RunSummary, Status, TaskSummary,
    Termination, Totals,
};
pub use crate::runner::{
    Containment, MAX_RETRY_BACKOFF, NoObserver, Observer, RETRY_BACKOFF, RunOutcome, RunPlan, run,
    run_tracked,
};
pub use crate::sandbox::{
    SandboxDecision, SandboxMode, SandboxRecord, SandboxSettings, SandboxSpec, decide,
};
#[cfg(feature = "schema")]
pub use crate::schema::schemas;
pub use crate::settings::{
    DEFAULT_GRACE, DEFAULT_PHASE_TIMEOUT, DEFAULT_READY_TIMEOUT, DEFAULT_TIMEOUT, EvalPhases,
    EvalSpec, MAX_EPOCHS, MAX_RETRIES, PhaseCommand, PhaseSettings, Readiness, ServiceSpec,
    Settings, injection, injection_arg, valid_env_name,
};
pub use crate::shard::Shard;
pub use crate::stop::{Stop, StopLevel, StopReason, Stopper};
#[cfg(feature = "yaml")]
pub use crate::suite::{Suite, SuiteEval};
pub use crate::timeline::{EventType, MAX_EVENTS, Summary, Timeline, TimelineEvent};
pub use crate::trials::{Resume, Trial};
pub use crate::units::{MAX_DURATION, parse_cost, parse_duration, parse_size};
pub use crate::usage::{TokenUsage, UsageEvent, UsageMeter};
pub use crate::watch::{FileChange, WatchUpdate, inotify_limits};
