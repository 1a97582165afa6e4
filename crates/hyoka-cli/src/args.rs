//! The command-line interface, as clap types. `lib.rs` turns these into plain options.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use hyoka_eval::{
    EvalError, EventSource, FailOn, SandboxMode, Shard, parse_cost, parse_cpus, parse_duration,
    parse_pids, parse_size,
};
use hyoka_proctrack::Network;
use hyoka_workspace::{KeepPolicy, RunId};

mod respawn;
mod tasks;
pub(crate) use self::respawn::{Backend, HookArgs, RespawnArgs, SendArgs, SessionsArgs, WaitArgs};
pub(crate) use self::tasks::{BuiltinAgent, RunTaskArgs, TaskFlags, TasksCheckArgs, TasksCommand};

/// Run AI coding agents safely and unattended: contained workspaces and processes, limits
/// enforced while they run, honest reports, and idle-aware respawn of interactive sessions.
#[derive(Debug, Parser)]
#[command(name = "hyoka", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Only errors on stderr.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once per process; boxing buys nothing (whether it fires depends on which variants are largest)"
)]
pub enum Command {
    /// Run an agent command (or a suite of evals) in isolated workspaces and report.
    Run(RunArgs),
    /// Stop what abandoned runs left behind (processes, cgroups, workspaces).
    Clean(CleanArgs),
    /// List live runs, their evals, workspaces and processes.
    Ps(PsArgs),
    /// Judge a recorded agent session: working, idle or blocked, with the evidence.
    Detect(DetectArgs),
    /// Show what hyoka does, end to end, against the built-in simulated agent.
    Demo(DemoArgs),
    /// Show which containment layers this machine gives and what falls back to what.
    Doctor(DoctorArgs),
    /// Work with run reports.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Run an interactive agent under the respawn controller: cycle it when it is idle.
    Respawn(RespawnArgs),
    /// Forward a Claude Code hook (payload on stdin) to the running respawn controller.
    Hook(HookArgs),
    /// List the supervised sessions: name, agent, state with its evidence, cycles.
    Sessions(SessionsArgs),
    /// Wait until a supervised session is idle, working or blocked (exit 124 on timeout).
    Wait(WaitArgs),
    /// Type text into a supervised session, verified: exit 0 delivered, 3 refused (nothing
    /// typed), 4 typed but not confirmed.
    Send(SendArgs),
    /// Work with Harbor task folders (Terminal-Bench 2 and the datasets built on its format).
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// A scripted model server for running real agents offline.
    #[command(subcommand)]
    ModelStub(ModelStubCommand),
}

/// `hyoka model-stub`.
#[derive(Debug, Subcommand)]
pub enum ModelStubCommand {
    /// Serve a script over the agents' wire protocols (Anthropic Messages, OpenAI Responses
    /// and Chat Completions, Gemini generateContent); prints the base URL on stdout.
    Serve(ModelStubServeArgs),
}

/// `hyoka model-stub serve`.
#[derive(Debug, Args)]
pub struct ModelStubServeArgs {
    /// The YAML script: each reply's text, tool calls, usage, pace, stalls and errors.
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,

    /// The address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,

    /// Also write every request's log entry to FILE, one JSON line each.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

/// `hyoka run`.
#[derive(Debug, Args)]
#[command(
    override_usage = "hyoka run [OPTIONS] -- COMMAND [ARGS]...\n       hyoka run [OPTIONS] --suite FILE\n       hyoka run [OPTIONS] --tasks DIR (--agent oracle|nop | -- COMMAND [ARGS]...)"
)]
pub struct RunArgs {
    /// The run id: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. Default: YYYYMMDD-HHMMSS-xxxxxx.
    #[arg(long, value_name = "ID", value_parser = parse_run_id)]
    pub run_id: Option<RunId>,

    /// Where reports are written (reports/<run_id>/…).
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// Where workspaces are created. Default: the system temp directory.
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,

    /// A directory copied into the workspace before the agent starts.
    #[arg(long, value_name = "DIR", conflicts_with = "suite")]
    pub starter: Option<PathBuf>,

    /// When to keep the workspace: never, on-failure or always.
    #[arg(long, value_name = "WHEN", default_value = "never", value_parser = parse_keep)]
    pub keep_workspace: KeepPolicy,

    /// Stop the agent after this long (30s, 10m, 1h; 0 disables). Default: 10m.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,

    /// How long processes get between SIGTERM and SIGKILL. Default: 5s.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, allow_hyphen_values = true)]
    pub grace: Option<Duration>,

    /// Stop after this many turns (assistant messages); 0 disables. Default: 25.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_turns: Option<u64>,

    /// Stop after this many files created or changed; 0 disables. Default: 50.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_files: Option<u64>,

    /// Stop after this many bytes of files created or changed (1048576, 512KiB, 1MiB, 1MB);
    /// 0 disables. Default: 1MiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub max_output_size: Option<u64>,

    /// Stop after this many tool calls; 0 disables. Default: 50.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_session_actions: Option<u64>,

    /// Stop after the agent reports this many tokens (all kinds); 0 (the default) disables.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_tokens: Option<u64>,

    /// Stop after the agent reports spending more than this many US dollars; 0 disables.
    #[arg(long, value_name = "USD", value_parser = parse_cost, allow_hyphen_values = true)]
    pub max_cost: Option<f64>,

    /// Each process tree of an eval may use this much memory (512MiB, 2GB; swap included);
    /// hitting it ends the trial with `max_memory`. 0 (the default) disables. A cgroup limit:
    /// refused where the memory controller is missing, unless --sandbox=best-effort.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub max_memory: Option<u64>,

    /// Each process tree of an eval may have this many processes at once (a fork bomb is
    /// held there); 0 (the default) disables. A cgroup limit, like --max-memory.
    #[arg(long, value_name = "N", value_parser = parse_pids, allow_hyphen_values = true)]
    pub max_pids: Option<u64>,

    /// Each process tree of an eval may use this many CPUs' time (2, 1.5, 0.25); 0 (the
    /// default) disables. A cgroup limit, like --max-memory.
    #[arg(long, value_name = "N", value_parser = parse_cpus, allow_hyphen_values = true)]
    pub cpus: Option<u32>,

    /// Stop when the workspace's changes, the private /tmp and the isolated home hold more
    /// than this together (checked every half second); 0 (the default) disables.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub max_disk: Option<u64>,

    /// Run each eval this many times (trials), each in its own workspace. Default: 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(hyoka_eval::MAX_EPOCHS)))]
    pub epochs: Option<u32>,

    /// Rerun a trial that ended in an infrastructure error up to N times, with backoff.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=i64::from(hyoka_eval::MAX_RETRIES)))]
    pub retries: Option<u32>,

    /// Continue the run --run-id names: keep its finished trials, run the rest.
    #[arg(long, requires = "run_id")]
    pub resume: bool,

    /// With --resume, rerun the trials of evals that changed instead of refusing.
    #[arg(long, requires = "resume")]
    pub rerun_changed: bool,

    /// With --resume, accept a plan with fewer trials than the earlier run (fewer --epochs,
    /// agents or evals) instead of refusing; the trials it lacks are left out of run.json.
    #[arg(long, requires = "resume")]
    pub allow_reshape: bool,

    /// Exit 1 when a trial did not pass (failure), errored or did not run (error), or never.
    #[arg(long, value_name = "WHEN", default_value = "failure", value_parser = parse_fail_on)]
    pub fail_on: FailOn,

    /// Where turns and tool calls come from: none, stream-json (Claude Code), codex-json
    /// (`codex exec --json`), gemini-stream-json (the agent's stdout), jsonl (lines appended to
    /// $HYOKA_EVENTS), or auto (by the program's name). Default: none.
    #[arg(long, value_name = "SOURCE", value_parser = parse_events)]
    pub events: Option<EventSource>,

    /// Run the evals of a YAML suite file instead of one command.
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,

    /// How many evals run at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,

    /// Run only shard I of N of the suite (1-based, N at most 10000; evals dealt round-robin).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,

    /// Inject a file or directory into the workspace after the starter: SRC or SRC:DEST
    /// (DEST relative to the workspace; default: SRC's name). Repeatable.
    #[arg(long = "file", value_name = "SRC[:DEST]", conflicts_with = "suite")]
    pub files: Vec<String>,

    /// After the agent stops, run this shell command in the workspace as the build phase.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,

    /// The build phase's timeout. Default: 10m.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, allow_hyphen_values = true)]
    pub build_timeout: Option<Duration>,

    /// After the build, run this shell command as the review phase; it may print a JSON
    /// verdict `{"pass": bool, "score": number, "notes": "…"}`.
    #[arg(long, value_name = "CMD")]
    pub review: Option<String>,

    /// The review phase's timeout. Default: 10m.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, allow_hyphen_values = true)]
    pub review_timeout: Option<Duration>,

    /// Give the agent and its phases their own HOME and XDG directories and a cleared
    /// environment (PATH, locale, TERM, TZ, USER and --pass-env variables are kept).
    #[arg(long)]
    pub isolate_home: bool,

    /// With --isolate-home, also pass this environment variable through. Repeatable.
    #[arg(long, value_name = "VAR")]
    pub pass_env: Vec<String>,

    /// Run every process of the eval in a sandbox, root or not: the host read-only, a private
    /// /tmp, the home, the runtime directory and /run hidden, a minimal /dev, no
    /// capabilities, Landlock and seccomp; writes only to the workspace, the isolated home
    /// and /tmp. `--sandbox` refuses to run where a layer is missing;
    /// `--sandbox=best-effort` runs with what there is and records what was missing.
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "on")]
    pub sandbox: Option<SandboxMode>,

    /// With --sandbox, show this path (inside the hidden home, for example an agent
    /// installed there) read-only. Repeatable.
    #[arg(long, value_name = "PATH")]
    pub sandbox_read: Vec<PathBuf>,

    /// The network of every process of the eval: host (the default) or none (a network
    /// namespace with only loopback).
    #[arg(long, value_name = "NET")]
    pub network: Option<Network>,

    /// Print the run summary (run.json) on stdout instead of the human summary.
    #[arg(long)]
    pub json: bool,

    /// Harbor task folders.
    #[command(flatten)]
    pub task: RunTaskArgs,

    /// The agent command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND", conflicts_with = "suite")]
    pub command: Vec<OsString>,
}

/// `hyoka clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Where the runs' reports (and ledgers) are.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// Where marked workspaces are looked for. Default: the system temp directory.
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,

    /// Report what would be done, and change nothing at all.
    #[arg(long)]
    pub dry_run: bool,

    /// Also remove workspaces kept by --keep-workspace (only those provably hyoka's whose
    /// run is over) of the runs recorded under --reports. Without it they are listed as kept
    /// and left alone.
    #[arg(long)]
    pub kept: bool,

    /// With --kept: only kept workspaces made longer ago than this (30m, 7d).
    #[arg(long, value_name = "DUR", requires = "kept", value_parser = parse_duration, allow_hyphen_values = true)]
    pub older_than: Option<Duration>,

    /// How long processes get between SIGTERM and SIGKILL.
    #[arg(long, value_name = "DUR", default_value = "5s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub grace: Duration,

    /// Machine-readable output on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `hyoka ps`.
#[derive(Debug, Args)]
pub struct PsArgs {
    /// Where the runs' reports (and ledgers) are.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// Machine-readable output on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `hyoka detect`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["screen", "cast", "stream"])))]
pub struct DetectArgs {
    /// The detector profile: claude-code, codex, gemini, copilot, aider or generic.
    #[arg(long, value_name = "NAME", default_value = "claude-code")]
    pub profile: String,

    /// A profile file (TOML) instead of a built-in one; it may extend a built-in profile.
    #[arg(long, value_name = "FILE")]
    pub profile_file: Option<PathBuf>,

    /// Machine-readable output on stdout (one JSON document; one per line for --cast).
    #[arg(long)]
    pub json: bool,

    /// Explain the verdict: every signal and rule behind it.
    #[arg(long)]
    pub explain: bool,

    /// One screen snapshot (ANSI allowed): prints one verdict.
    #[arg(long, value_name = "FILE")]
    pub screen: Option<PathBuf>,

    /// An asciicast v2 recording, replayed in virtual time: one line per verdict change.
    #[arg(long, value_name = "FILE")]
    pub cast: Option<PathBuf>,

    /// Raw terminal output, fed as fast as possible: prints counts and throughput.
    #[arg(long, value_name = "FILE")]
    pub stream: Option<PathBuf>,

    /// The slice size for --stream.
    #[arg(long, value_name = "BYTES", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
    pub chunk_bytes: u32,
}

/// `hyoka doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Machine-readable output on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `hyoka report …`.
#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Merge the run.json files of a suite's shards into one summary.
    Merge(MergeArgs),
    /// Write one self-contained, offline HTML page of a run, or of two runs compared.
    Html(HtmlArgs),
    /// Compare two runs: per-task pass rates, flipped tasks, totals, a paired sign test.
    Compare(CompareArgs),
    /// Write a run as JUnit XML for CI test views: one testcase per trial (failure, error,
    /// skipped for not run), with times.
    Junit(CiArgs),
    /// Write a run's Markdown summary for CI step summaries ($GITHUB_STEP_SUMMARY).
    Markdown(CiArgs),
}

/// `hyoka report junit` and `hyoka report markdown`.
#[derive(Debug, Args)]
pub struct CiArgs {
    /// A run directory or a run.json (merged ones too).
    #[arg(value_name = "RUN")]
    pub input: PathBuf,
    /// Where it goes (written atomically). Default: stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `hyoka report compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a run directory or a run.json (merged ones too).
    #[arg(value_name = "A")]
    pub a: PathBuf,

    /// The run compared with it.
    #[arg(value_name = "B")]
    pub b: PathBuf,

    /// Print the comparison as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `hyoka report html`.
#[derive(Debug, Args)]
pub struct HtmlArgs {
    /// A run directory or a run.json (merged ones too); a second one makes a comparison.
    #[arg(required = true, num_args = 1..=2, value_name = "RUN")]
    pub inputs: Vec<PathBuf>,
    /// Where the page goes. Default: RUN/report.html (compare.html for two runs).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `hyoka report merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Run directories (each holding a run.json) or run.json files, one per shard.
    #[arg(required = true, value_name = "DIR")]
    pub inputs: Vec<PathBuf>,

    /// Write the merged summary here (atomically) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// The merged run's id. Default: the shards' run id.
    #[arg(long, value_name = "ID", value_parser = parse_run_id)]
    pub run_id: Option<RunId>,

    /// Merge even when shards are missing (run.json lists them in missing_shards).
    #[arg(long)]
    pub allow_partial: bool,
}

/// `hyoka demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the demo's reports are written.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// Where the demo's workspaces are created. Default: the system temp directory.
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,

    /// Print a JSON summary on stdout instead of the story.
    #[arg(long)]
    pub json: bool,
}

fn parse_run_id(text: &str) -> Result<RunId, String> {
    RunId::new(text).map_err(|e| e.to_string())
}

fn parse_keep(text: &str) -> Result<KeepPolicy, String> {
    text.parse()
}

fn parse_fail_on(text: &str) -> Result<FailOn, EvalError> {
    text.parse()
}

fn parse_events(text: &str) -> Result<EventSource, EvalError> {
    text.parse().map_err(EvalError::from)
}

fn parse_shard(text: &str) -> Result<Shard, EvalError> {
    text.parse()
}
