//! The clap types of `hyoka respawn`, `hyoka hook` and the interactive simulated agent.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use hyoka_eval::parse_duration;

/// Where the agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// A pseudo-terminal owned by hyoka (the embedded default).
    Pty,
    /// A session on a private tmux server: it survives a restart of hyoka and can be
    /// re-attached with `--tmux-session`.
    Tmux,
}

/// `hyoka respawn`.
#[derive(Debug, Args)]
pub struct RespawnArgs {
    /// Where the agent runs: pty (the default) or tmux.
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,

    /// The session's name, for `hyoka sessions`, `wait`, `send` and `--stop` (for tmux also
    /// the tmux session's name). Default: the run id.
    #[arg(long, value_name = "NAME", value_parser = parse_name)]
    pub name: Option<String>,

    /// Stop the session NAME (`--name` or `--tmux-session`): through its controller, or a
    /// detached tmux session that nobody supervises.
    #[arg(long)]
    pub stop: bool,

    /// Supervise without ever cycling or accepting menus on its own: detect, alert, and
    /// deliver what `hyoka send` sends.
    #[arg(long)]
    pub no_cycle: bool,

    /// Run this shell command when the session has been blocked for --blocked-after, once
    /// per blocked episode, with HYOKA_SESSION, HYOKA_BLOCKED_KIND and HYOKA_SCREEN_FILE (a
    /// file holding the screen's text) in its environment.
    #[arg(long, value_name = "CMD")]
    pub on_blocked: Option<String>,

    /// How long a session must be blocked before --on-blocked runs.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub blocked_after: Duration,

    /// Run this shell command when the session has been idle for --idle-after, once per
    /// idle episode (same environment as --on-blocked).
    #[arg(long, value_name = "CMD")]
    pub on_idle: Option<String>,

    /// How long a session must be idle before --on-idle runs.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub idle_after: Duration,

    /// Do not mirror the session to this terminal (and do not read keys from it).
    #[arg(long)]
    pub headless: bool,

    /// Append one JSON line per controller event to FILE.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,

    /// Where the session's ledger and owner lock go (reports/<run_id>/), so `hyoka clean`
    /// repairs a crashed controller. (With the pty backend; a tmux session is meant to
    /// outlive hyoka.)
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// Stop the session and exit 0 after N completed cycles.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_cycles: Option<u32>,

    /// Start no more than N cycles in any hour.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_cycles_per_hour: Option<u32>,

    /// The text typed as the first step of a cycle.
    #[arg(long, value_name = "TEXT")]
    pub update_prompt: Option<String>,

    /// Do not send the clear step (the profile's: /clear for claude-code, /new for codex).
    #[arg(long)]
    pub no_clear: bool,

    /// Do not send the init step (/init where the agent has one).
    #[arg(long)]
    pub no_init: bool,

    /// The clear step's command instead of the profile's (sent even where the profile has
    /// none).
    #[arg(long, value_name = "CMD", conflicts_with = "no_clear")]
    pub clear_command: Option<String>,

    /// The init step's command instead of the profile's (sent even where the profile has
    /// none).
    #[arg(long, value_name = "CMD", conflicts_with = "no_init")]
    pub init_command: Option<String>,

    /// Type TEXT when /init starts no work.
    #[arg(long, value_name = "TEXT")]
    pub kickstart: Option<String>,

    /// Silence that confirms a completion message.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_positive, allow_hyphen_values = true)]
    pub completion_confirm: Duration,

    /// Silence after which idle is considered without a completion message.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = parse_positive, allow_hyphen_values = true)]
    pub no_output_timeout: Duration,

    /// Delay before each step is typed.
    #[arg(long, value_name = "DUR", default_value = "1s", value_parser = parse_positive, allow_hyphen_values = true)]
    pub inter_step_delay: Duration,

    /// Never press Enter on a plan-approval menu.
    #[arg(long)]
    pub no_auto_accept: bool,

    /// Silence before a plan-approval menu is accepted.
    #[arg(long, value_name = "DUR", default_value = "8s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub auto_accept_delay: Duration,

    /// A shell command that judges IDLE or WORKING from the output on its stdin.
    #[arg(long, value_name = "CMD")]
    pub ai_check_command: Option<String>,

    /// A shell command that judges PLAN_MODE or NOT_PLAN_MODE from the output on its stdin.
    #[arg(long, value_name = "CMD")]
    pub plan_check_command: Option<String>,

    /// How long an AI check may run before it counts as an error.
    #[arg(long, value_name = "DUR", default_value = "90s", value_parser = parse_positive, allow_hyphen_values = true)]
    pub check_timeout: Duration,

    /// The detector profile: claude-code, codex, gemini, copilot, aider or generic.
    #[arg(long, value_name = "NAME", default_value = "claude-code", value_parser = parse_profile)]
    pub profile: String,

    /// Decide and log, never type.
    #[arg(long)]
    pub dry_run: bool,

    /// How long a keystroke from you pauses automation.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub human_lock: Duration,

    /// SIGTERM → SIGKILL grace when the session is stopped.
    #[arg(long, value_name = "DUR", default_value = "5s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub grace: Duration,

    /// Run in the tmux session NAME (`--backend tmux --name NAME`); an existing session of
    /// that name is re-attached and supervised again.
    #[arg(long, value_name = "NAME", value_parser = parse_name, conflicts_with = "name")]
    pub tmux_session: Option<String>,

    /// Write Claude Code hook entries (Stop, UserPromptSubmit, Notification) into
    /// ./.claude/settings.local.json before starting.
    #[arg(long)]
    pub install_claude_hooks: bool,

    /// When the session ends, print a JSON summary on stdout (outcome, cycles, exit,
    /// teardown). Needs --headless: otherwise stdout is the session's screen.
    #[arg(long, requires = "headless")]
    pub json: bool,

    /// The agent command and its arguments, after `--` (not needed to re-attach a tmux
    /// session, nor with --stop).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// `hyoka sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Where the sessions' controllers keep their records (as `hyoka respawn --reports`):
    /// a tmux session whose controller died is listed from them, as orphaned.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// Machine-readable output on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `hyoka wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The session's name.
    #[arg(value_name = "NAME", value_parser = parse_name)]
    pub name: String,

    /// Where the sessions' controllers keep their records (as `hyoka respawn --reports`): a
    /// name with no live controller that is a tmux session whose controller died is said to
    /// be orphaned, with the commands that supervise or stop it.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// The state to wait for: idle, working or blocked.
    #[arg(long, value_name = "STATE", value_parser = parse_state)]
    pub until: hyoka_idle_detect::SessionState,

    /// Give up after this long (exit 124). Default: wait as long as it takes.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,

    /// Print the session's status as JSON on stdout when the wait ends.
    #[arg(long)]
    pub json: bool,
}

/// `hyoka send`.
#[derive(Debug, Args)]
pub struct SendArgs {
    /// The session's name.
    #[arg(value_name = "NAME", value_parser = parse_name)]
    pub name: String,

    /// Where the sessions' controllers keep their records (as `hyoka respawn --reports`): a
    /// name with no live controller that is a tmux session whose controller died is said to
    /// be orphaned, with the commands that supervise or stop it.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,

    /// The text to type (newlines become spaces).
    #[arg(value_name = "TEXT")]
    pub text: String,

    /// Wait until the session is idle and nobody is at it, instead of refusing.
    #[arg(long)]
    pub queue: bool,
}

/// `hyoka hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook event: stop, idle_prompt, permission_prompt, elicitation_dialog or
    /// notification (whose kind is read from the payload). An unknown one is ignored with a
    /// warning (exit 0): a hook never blocks the agent because of hyoka.
    #[arg(value_name = "EVENT", required_unless_present = "install_claude_hooks")]
    pub event: Option<String>,

    /// Write the hook entries into .claude/settings.local.json instead (merged, never
    /// clobbered).
    #[arg(long, conflicts_with = "event")]
    pub install_claude_hooks: bool,

    /// With --install-claude-hooks: the project directory (default: the current one).
    #[arg(long, value_name = "DIR", requires = "install_claude_hooks")]
    pub dir: Option<PathBuf>,

    /// With --install-claude-hooks: report what was written as JSON. (A forwarded hook
    /// prints nothing: Claude Code reads a hook's stdout.)
    #[arg(long, requires = "install_claude_hooks")]
    pub json: bool,

    /// The controller's socket. Default: $HYOKA_RESPAWN_SOCKET, which `hyoka respawn` sets
    /// for its agent.
    #[arg(
        long,
        value_name = "PATH",
        env = hyoka_proctrack::EnvVars::HYOKA_RESPAWN_SOCKET,
        hide_env_values = true
    )]
    pub socket: Option<PathBuf>,
}

fn parse_state(text: &str) -> Result<hyoka_idle_detect::SessionState, String> {
    use hyoka_idle_detect::SessionState::{Blocked, Idle, Working};
    [Idle, Working, Blocked]
        .into_iter()
        .find(|s| s.as_str() == text)
        .ok_or_else(|| format!("unknown state {text:?} (one of: idle, working, blocked)"))
}

fn parse_name(text: &str) -> Result<String, String> {
    if hyoka_respawn::valid_session_name(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "invalid session name {text:?}: use 1 to 64 of [A-Za-z0-9_-]"
        ))
    }
}

fn parse_positive(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text).map_err(|e| e.to_string())?;
    if duration.is_zero() {
        return Err(format!("invalid duration {text:?}: must be more than zero"));
    }
    Ok(duration)
}

fn parse_profile(text: &str) -> Result<String, String> {
    let mut names = hyoka_idle_detect::Profile::builtin_names();
    if names.any(|name| name == text) {
        Ok(text.to_owned())
    } else {
        let names: Vec<&str> = hyoka_idle_detect::Profile::builtin_names().collect();
        Err(format!(
            "unknown profile {text:?} (one of: {})",
            names.join(", ")
        ))
    }
}
