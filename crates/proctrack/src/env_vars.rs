//! The names of the environment variables hyoka sets for its processes or reads from its own
//! environment, each declared once (as uv declares its own in `uv-static`), and the marker
//! they make.
//!
//! Every process hyoka tracks carries the run's marker from the moment it starts: its run id,
//! the eval it was started for and, for a run with an [`Instance`], the instance's random
//! token. The marker sweep of `clean` and of a respawn session finds escapees by it, so the
//! names are written and read in one way only: through [`EnvVars`] and [`marker_env`].
//! The crates above (eval, respawn, the CLI) name the other variables through [`EnvVars`]
//! too, so that a name in the docs has one spelling in the code.

use std::ffi::OsString;

use crate::instance::Instance;

/// The environment variables hyoka sets or reads: the marker's three, then the others.
#[derive(Debug, Clone, Copy)]
pub struct EnvVars;

impl EnvVars {
    /// The run's id. It stays for users and tools, but anyone can set it, so a sweep keyed by
    /// it alone is only for a run whose id is itself unguessable (a respawn session's).
    pub const HYOKA_RUN_ID: &'static str = "HYOKA_RUN_ID";
    /// The eval (trial, phase, service, checker or session) the process was started for.
    pub const HYOKA_EVAL_ID: &'static str = "HYOKA_EVAL_ID";
    /// The run instance's token: no user's environment carries a token that was just drawn
    /// at random, so this is what `clean` scans for.
    pub const HYOKA_RUN_INSTANCE: &'static str = "HYOKA_RUN_INSTANCE";

    /// An eval's workspace directory, set for each of its commands.
    pub const HYOKA_WORKSPACE: &'static str = "HYOKA_WORKSPACE";
    /// The file an agent whose events are `jsonl` appends its events to.
    pub const HYOKA_EVENTS: &'static str = "HYOKA_EVENTS";
    /// The control socket of the `hyoka respawn` session an agent runs under (`hyoka hook`
    /// and `hyoka respawn ctl` read it).
    pub const HYOKA_RESPAWN_SOCKET: &'static str = "HYOKA_RESPAWN_SOCKET";
    /// The session registry's directory (read by the CLI; else `$XDG_RUNTIME_DIR/hyoka`).
    pub const HYOKA_RUNTIME_DIR: &'static str = "HYOKA_RUNTIME_DIR";
    /// The respawn session an alert command is run for.
    pub const HYOKA_SESSION: &'static str = "HYOKA_SESSION";
    /// The alert an alert command is run for.
    pub const HYOKA_ALERT: &'static str = "HYOKA_ALERT";
    /// What blocks the agent when an alert command runs (empty when nothing does).
    pub const HYOKA_BLOCKED_KIND: &'static str = "HYOKA_BLOCKED_KIND";
    /// The file holding the screen an alert command is run for.
    pub const HYOKA_SCREEN_FILE: &'static str = "HYOKA_SCREEN_FILE";

    /// The scripted model server's base URL, for an eval run against it (suite `model:`).
    pub const HYOKA_MODEL_STUB_URL: &'static str = "HYOKA_MODEL_STUB_URL";
    /// The API key the scripted model server accepts.
    pub const HYOKA_MODEL_STUB_KEY: &'static str = "HYOKA_MODEL_STUB_KEY";

    /// The prefix of every name above: a suite may not set a variable that starts with it.
    pub const PREFIX: &'static str = "HYOKA_";
}

/// The marker variables a process of run `run_id`, started for `eval_id`, carries: the run id,
/// the eval id and, with an `instance`, its token.
pub fn marker_env(
    run_id: &str,
    eval_id: &str,
    instance: Option<&Instance>,
) -> Vec<(OsString, OsString)> {
    let mut env = vec![
        (EnvVars::HYOKA_RUN_ID.into(), run_id.into()),
        (EnvVars::HYOKA_EVAL_ID.into(), eval_id.into()),
    ];
    if let Some(instance) = instance {
        env.push((EnvVars::HYOKA_RUN_INSTANCE.into(), instance.as_str().into()));
    }
    env
}

#[cfg(test)]
mod tests;
