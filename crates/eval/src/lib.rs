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
//!   an [`Observer`], runs the evals on `workers` in plan order and returns a [`RunOutcome`]:
//!   each eval's [`Report`] (`report.json`) and the [`RunSummary`] (`run.json`).
//! - An eval goes through its phases in order: setup (the workspace, an isolated home),
//!   services ([`ServiceSpec`], [`Readiness`]), the agent, build and review
//!   ([`PhaseCommand`], a [`ReviewVerdict`]), cleanup; each is a [`PhaseRecord`].
//! - While the agent runs, its events ([`AgentEvent`] from [`EventSource`]: Claude Code's
//!   stream-json through [`StreamJsonParser`], or the `$HYOKA_EVENTS` JSON lines) and the
//!   workspace's usage feed the sans-IO [`Monitor`] of a [`LimitSet`]; the first limit crossed
//!   stops the agent ([`Termination`]). The [`Timeline`] (`action_timeline.json`) records it
//!   all.
//! - Seams ([`Harness`]): [`Processes`]/[`Process`] ([`TrackedProcesses`]),
//!   [`Workspaces`]/[`EvalWorkspace`] ([`TempWorkspaces`]), [`Clock`] ([`SystemClock`]); with
//!   the `mock` feature `FakeHost`, `FakeProgram` and `FakeClock` run the same policy in
//!   memory.
//! - Records are written atomically ([`write_json`]); [`merge_summaries`] joins the
//!   summaries of a suite's shards; with the `schema` feature [`schemas`] gives their JSON
//!   Schemas.
//! - With the `html` feature, `write_html_report` writes one self-contained, offline HTML
//!   page of a run (or of two compared) from its records: task table, per-trial timelines,
//!   cleanup records.
//! - After a crash, [`clean_abandoned`] repairs what abandoned runs left behind (their
//!   processes through `hyoka-proctrack`, their workspaces through `hyoka-workspace`).
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
mod error;
mod eval;
mod events;
#[cfg(any(test, feature = "mock"))]
mod fake;
mod host;
#[cfg(feature = "html")]
mod html;
mod limits;
mod merge;
mod phases;
mod records;
mod report;
mod runner;
#[cfg(feature = "schema")]
mod schema;
mod settings;
mod shard;
mod stop;
#[cfg(feature = "yaml")]
mod suite;
mod timeline;
mod units;
mod watch;

pub use crate::clean::{
    CleanupOptions, CleanupReport, WorkspaceAction, WorkspaceCleanup, clean_abandoned,
};
pub use crate::error::EvalError;
pub use crate::events::{
    AgentEvent, EventSource, INPUT_PREVIEW_BYTES, LineKind, LineSplitter, MAX_LINE,
    StreamJsonParser, parse_jsonl_event, truncate_chars,
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
pub use crate::limits::{
    DEFAULT_MAX_FILES, DEFAULT_MAX_OUTPUT_SIZE, DEFAULT_MAX_SESSION_ACTIONS, DEFAULT_MAX_TURNS,
    LimitSet, Monitor, PartialLimits,
};
pub use crate::merge::merge_summaries;
pub use crate::records::{
    LiveRun, PhaseNow, STATUS_FILE, current_phase, live_runs, millis, rfc3339, write_json,
};
pub use crate::report::{
    Cleanup, Counts, EvalSummary, Limits, PhaseRecord, PhaseStatus, Report, ReviewVerdict,
    RunSummary, Status, Termination, Totals,
};
pub use crate::runner::{Containment, NoObserver, Observer, RunOutcome, RunPlan, run, run_tracked};
#[cfg(feature = "schema")]
pub use crate::schema::schemas;
pub use crate::settings::{
    DEFAULT_GRACE, DEFAULT_PHASE_TIMEOUT, DEFAULT_READY_TIMEOUT, DEFAULT_TIMEOUT, EvalPhases,
    EvalSpec, PhaseCommand, PhaseSettings, Readiness, ServiceSpec, Settings, injection,
    valid_env_name,
};
pub use crate::shard::Shard;
pub use crate::stop::{Stop, StopLevel, StopReason, Stopper};
#[cfg(feature = "yaml")]
pub use crate::suite::{Suite, SuiteEval};
pub use crate::timeline::{EventType, MAX_EVENTS, Summary, Timeline, TimelineEvent};
pub use crate::units::{parse_duration, parse_size};
pub use crate::watch::{FileChange, WatchUpdate, inotify_limits};
