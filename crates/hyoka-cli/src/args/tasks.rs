//! The clap types of Harbor task folders: `hyoka run --tasks` and `hyoka tasks check`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use hyoka_eval::{TaskEnvironment, parse_duration};
use hyoka_workspace::{KeepPolicy, RunId};

/// `hyoka run`'s flags for Harbor task folders.
#[derive(Debug, Args)]
pub struct RunTaskArgs {
    /// Run Harbor task folders: DIR is one task (it holds a task.toml) or a dataset (a
    /// folder of them). One eval per task, its id the folder's name; give the agent with
    /// --agent or after `--` (it gets the instruction as $HYOKA_PROMPT).
    #[arg(long, value_name = "DIR", conflicts_with = "suite")]
    pub tasks: Option<PathBuf>,

    /// With --tasks (or a suite's tasks:): Harbor's oracle (runs solution/solve.sh) or nop
    /// agent (runs nothing) instead of a command.
    #[arg(long, value_enum, value_name = "AGENT", conflicts_with = "command")]
    pub agent: Option<BuiltinAgent>,

    #[command(flatten)]
    pub how: TaskFlags,
}

/// How tasks run (`hyoka run --tasks`, a suite's `tasks:`, `hyoka tasks check`).
#[derive(Debug, Args)]
pub struct TaskFlags {
    /// Where tasks run: host (the host's system in the eval's own mount namespace, the
    /// workspace at the Dockerfile's WORKDIR), podman or docker. Default: host.
    #[arg(long, value_name = "ENV", value_parser = parse_environment)]
    pub environment: Option<TaskEnvironment>,

    /// The reward at or above which a trial passes (0 < X <= 1). Default: 1.
    #[arg(long, value_name = "X", value_parser = parse_threshold)]
    pub reward_threshold: Option<f64>,

    /// The metric of a reward.json with several that decides. Default: reward.
    #[arg(long, value_name = "KEY", value_parser = parse_key)]
    pub reward_key: Option<String>,

    /// Run tasks on the host even when their Dockerfile has steps the host does not perform
    /// (RUN, COPY --from, USER, ENTRYPOINT), as if the host already had what they install;
    /// report.json lists the steps.
    #[arg(long)]
    pub skip_build_steps: bool,
}

/// Harbor's built-in agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BuiltinAgent {
    /// The task's reference solution (solution/solve.sh, seen at /solution).
    Oracle,
    /// Nothing at all.
    Nop,
}

/// `hyoka tasks …`.
#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// Check Harbor tasks as Harbor does: on every task the oracle must pass and the nop
    /// agent must fail. Prints the tasks that do not behave; exit 1 when there is one.
    Check(TasksCheckArgs),
}

/// `hyoka tasks check`.
#[derive(Debug, Args)]
pub struct TasksCheckArgs {
    /// A task folder or a dataset (a folder of task folders).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    #[command(flatten)]
    pub how: TaskFlags,

    /// The run id of the check's run: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. Default:
    /// YYYYMMDD-HHMMSS-xxxxxx.
    #[arg(long, value_name = "ID", value_parser = parse_run_id)]
    pub run_id: Option<RunId>,

    /// Where the check's reports are written (reports/<run_id>/…).
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// Where workspaces are created. Default: the system temp directory.
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,

    /// When to keep the workspaces: never, on-failure or always.
    #[arg(long, value_name = "WHEN", default_value = "never", value_parser = parse_keep)]
    pub keep_workspace: KeepPolicy,

    /// How many trials run at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,

    /// Stop each agent after this long instead of the task's [agent] timeout_sec.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,

    /// How long processes get between SIGTERM and SIGKILL. Default: 5s.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, allow_hyphen_values = true)]
    pub grace: Option<Duration>,

    /// Show this path (inside the hidden home, for example tools the verifiers need, such as
    /// a Python and uv installed there) read-only to the tasks. Repeatable.
    #[arg(long, value_name = "PATH")]
    pub sandbox_read: Vec<PathBuf>,

    /// Pass this environment variable of the host through to the tasks' processes (they
    /// run with an isolated home and a cleared environment). Repeatable.
    #[arg(long, value_name = "VAR")]
    pub pass_env: Vec<String>,

    /// Print the check (every task, its oracle's and nop agent's results) as JSON on
    /// stdout.
    #[arg(long)]
    pub json: bool,
}

fn parse_environment(text: &str) -> Result<TaskEnvironment, String> {
    text.parse()
}

fn parse_threshold(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(format!(
            "invalid reward threshold {text:?}: expected a number above 0 and at most 1"
        )),
    }
}

fn parse_key(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > 256 {
        return Err(format!(
            "invalid reward key {text:?}: expected a metric's name"
        ));
    }
    Ok(text.to_owned())
}

fn parse_run_id(text: &str) -> Result<RunId, String> {
    RunId::new(text).map_err(|e| e.to_string())
}

fn parse_keep(text: &str) -> Result<KeepPolicy, String> {
    text.parse()
}
