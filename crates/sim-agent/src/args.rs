//! The simulated agent's flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser};

/// The simulated agent's arguments (`hyoka sim-agent …`): a deterministic stand-in for a
/// coding agent. The `hyoka` binary parses them apart from its own commands, so neither its
/// help, man pages nor completions offer them.
#[derive(Debug, Parser)]
#[command(
    name = "hyoka sim-agent",
    bin_name = "hyoka sim-agent",
    version,
    about = "The built-in simulated agent used by hyoka's demo and tests",
    long_about = None
)]
pub struct SimAgentArgs {
    /// Files to write into the current directory.
    #[arg(long, default_value_t = 3)]
    pub files: u64,

    /// Bytes per file.
    #[arg(long, default_value_t = 64)]
    pub file_size: u64,

    /// Turns (assistant messages) to emit.
    #[arg(long, default_value_t = 2)]
    pub turns: u64,

    /// Pause between turns (0 for none).
    #[arg(long, value_name = "DUR", default_value = "0", value_parser = parse_duration)]
    pub turn_delay: Duration,

    /// Sleep this long before exiting (to exercise timeouts).
    #[arg(long, value_name = "DUR", default_value = "0", value_parser = parse_duration)]
    pub linger: Duration,

    /// Exit with this code.
    #[arg(long, default_value_t = 0)]
    pub exit_code: u8,

    /// Leave processes behind on purpose: a background sleeper, a child in a new session
    /// that ignores SIGTERM and SIGHUP, and a double-forked daemon with an empty
    /// environment and cwd `/`. Each lives at most a minute.
    #[arg(long)]
    pub escapees: bool,

    /// Append `<role> <pid>` for each escapee to this file (absolute path).
    #[arg(long, value_name = "FILE")]
    pub pid_file: Option<PathBuf>,

    /// Internal: the role of an escapee process.
    #[arg(long, hide = true, value_name = "ROLE")]
    pub role: Option<String>,

    /// Interactive mode.
    #[command(flatten)]
    pub interactive: InteractiveArgs,
}

/// `hyoka sim-agent --interactive` and its knobs.
#[derive(Debug, Clone, Args)]
pub struct InteractiveArgs {
    /// Draw Claude-Code-like screens on the terminal and react to typed input.
    #[arg(long)]
    pub interactive: bool,

    /// Interactive: how long the work on each prompt lasts.
    #[arg(long, value_name = "DUR", default_value = "2s", value_parser = parse_duration)]
    pub work: Duration,

    /// Interactive: start busy with a task of this length (0 starts idle).
    #[arg(long, value_name = "DUR", default_value = "0", value_parser = parse_duration)]
    pub start_working: Duration,

    /// Interactive: end the Nth prompt in a plan-approval menu (0: the start task).
    #[arg(long, value_name = "N")]
    pub plan_on: Option<u64>,

    /// Interactive: stop the Nth prompt at a permission prompt (0: the start task).
    #[arg(long, value_name = "N")]
    pub permission_on: Option<u64>,

    /// Interactive: append one JSON line per input received to FILE.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
}

fn parse_duration(text: &str) -> Result<Duration, humantime::DurationError> {
    humantime::parse_duration(text)
}
