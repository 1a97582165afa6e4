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
//! - Records are written atomically ([`write_json`]); with the `schema` feature [`schemas`]
//!   gives their JSON Schemas. The figures `run.json` holds are defined here once
//!   ([`pass_at_k`], [`pass_hat_k`], [`pass_rate`], [`mean`], [`TokenUsage::reported_tokens`]);
//!   reading runs after they end (the HTML page, merging shards, comparing runs, the
//!   summaries people read) is `hyoka-report`'s, which reads these records.
//! - After a crash, [`clean_abandoned`] repairs what abandoned runs left behind (their
//!   processes through `hyoka-proctrack`, their workspaces through `hyoka-workspace`, each
//!   only when provably the run instance's, with the run owner's power).
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use hyoka_eval::{EvalId, EvalSpec, NoObserver, RunId, RunPlan, Stop, run_tracked};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let mut spec = EvalSpec::new(EvalId::new("hello")?, vec!["sh".into(), "-c".into(), "echo hi > out.txt".into()]);
//! spec.limits.max_files = 10;
//! let plan = RunPlan::new(RunId::new("example-run")?, "reports", std::env::temp_dir(), vec![spec]);
//! let outcome = run_tracked(plan, Default::default(), Stop::never(), Arc::new(NoObserver)).await?;
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
//! use hyoka_eval::{EvalId, EvalSpec, FakeHost, FakeProgram, NoObserver, RunId, RunPlan, Stop, Termination, run};
//!
//! # let reports = tempfile::tempdir()?;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build()?;
//! runtime.block_on(async {
//!     let host = FakeHost::new(SystemTime::UNIX_EPOCH);
//!     host.program("agent", FakeProgram::new().hangs());
//!     let mut spec = EvalSpec::new(EvalId::new("slow")?, vec!["agent".into()]);
//!     spec.timeout = Duration::from_secs(30);
//!     let plan = RunPlan::new(RunId::new("doc")?, reports.path(), "/mem", vec![spec]);
//!     let outcome = run(plan, &host.harness(), Stop::never(), Arc::new(NoObserver)).await?;
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
mod changes;
mod clean;
mod drain;
mod error;
mod eval;
#[cfg(any(test, feature = "mock"))]
mod fake;
mod host;
mod identity;
mod limits;
mod metrics;
mod model;
mod phases;
mod progress;
mod ps;
mod records;
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
mod tasks;
mod timeline;
mod trials;
mod units;
mod watch;

pub use crate::changes::{
    CHANGES_FILE, ChangedFile, ChangesRecord, MAX_CHANGES_LISTED, MAX_DIFF_BYTES,
    MAX_DIFF_FILE_BYTES,
};
pub use crate::clean::{
    CleanupOptions, CleanupReport, WorkspaceAction, WorkspaceCleanup, clean_abandoned,
};
pub use crate::error::EvalError;
#[cfg(any(test, feature = "mock"))]
pub use crate::fake::{FakeClock, FakeHost, FakeProgram};
pub use crate::host::{
    EvalWorkspace, Harness, Pipe, Process, Processes, TempWorkspaces, TrackedProcesses,
    WorkspaceEnd, Workspaces,
};
pub use crate::identity::suite_identity;
pub use crate::limits::{
    DEFAULT_MAX_FILES, DEFAULT_MAX_OUTPUT_SIZE, DEFAULT_MAX_SESSION_ACTIONS, DEFAULT_MAX_TURNS,
    LimitSet, Monitor, PartialLimits,
};
pub use crate::metrics::{mean, pass_at_k, pass_hat_k, pass_rate};
pub use crate::model::{MODEL_STUB_PORT, ModelStub};
pub use crate::progress::{ProgressLines, ProgressSink};
pub use crate::ps::{LiveRun, live_runs, render_live_runs};
pub use crate::records::{millis, rfc3339, write_json};
pub use crate::report::{
    Attempt, ByK, Cleanup, Counts, ErrorKind, EvalSummary, EventsRecord, FailOn, Limits, Metrics,
    PhaseRecord, PhaseStatus, Report, ResourceFigure, ResourcesRecord, ReviewVerdict, RunInfo,
    RunSummary, Status, TaskSummary, Termination, Totals,
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
pub use crate::stop::{Stop, StopLevel, StopReason, Stopper, same_delivery_window};
#[cfg(feature = "yaml")]
pub use crate::suite::{Suite, SuiteEval, SuiteTasks};
pub use crate::tasks::{
    CheckRow, Copy, CopySource, DEFAULT_CPUS, DEFAULT_MEMORY_MB, DEFAULT_STORAGE_MB,
    DEFAULT_VERIFIER_TIMEOUT, Dockerfile, DockerfileError, EnvValue, EnvironmentConfig,
    HOST_NETWORK_ENV, HostView, LOGS_DIR, MAX_DOCKERFILE_BYTES, MAX_INSTRUCTION_BYTES,
    MAX_REWARD_BYTES, MAX_TASK_TOML_BYTES, MAX_TASKS, PROMPT_ENV, Reward, RewardError, RewardFile,
    RewardRules, SOLUTION_DIR, Step, StepKind, TESTS_DIR, Task, TaskAgent, TaskCheck, TaskConfig,
    TaskEnvironment, TaskNetwork, TaskOptions, TaskRecord, TaskRunOptions, TaskTrial, check_agents,
    check_tasks, hidden_dirs, host_view, load_tasks, read_reward, render_check, task_specs,
};
pub use crate::timeline::{EventType, MAX_EVENTS, Summary, Timeline, TimelineEvent};
pub use crate::trials::{Resume, Trial};
pub use crate::units::{
    MAX_CPUS, MAX_DURATION, MAX_PIDS, parse_cost, parse_cpus, parse_duration, parse_pids,
    parse_size,
};
pub use crate::watch::{FileChange, WatchUpdate, inotify_limits};
pub use hyoka_events::{
    AgentEvent, AgentNotes, CodexJsonParser, EventSource, GeminiStreamJsonParser,
    INPUT_PREVIEW_BYTES, JsonlReader, LineCounts, LineKind, LineReader, LineSplitter, MAX_LINE,
    StreamJsonParser, TokenUsage, UnknownEventSource, UsageEvent, UsageMeter, parse_jsonl_event,
    truncate_chars,
};
pub use hyoka_proctrack::{Clock, PhaseNow, STATUS_FILE, SystemClock, read_status};

// The types the harness's seams ([`Processes`], [`Process`], [`Workspaces`],
// [`EvalWorkspace`], [`Harness`]) speak, re-exported so a host embedding the harness depends
// on `hyoka-eval` alone; the crates themselves are re-exported for everything else.
pub use async_trait::async_trait;
pub use hyoka_proctrack::{
    AgentCommand, AgentExit, Layer, Layers, NetNamespace, ProcTrackError, ResourceLimits,
    ResourceSupport, ResourceUsage, SandboxSupport, StdioMode, TeardownOptions, TeardownReport,
    Tracker, TrackerOptions,
};
pub use hyoka_workspace::{
    Closed, Entry, EntryKind, EvalId, Injection, KeepPolicy, MarkerOwner, RunId, RunVerdict, Usage,
    Workspace, WorkspaceError, WorkspaceOptions,
};
pub use {hyoka_proctrack as proctrack, hyoka_workspace as workspace};
