//! Alerts: a command run when a session has been blocked (`--on-blocked`) or idle
//! (`--on-idle`) for a while, once per episode.
//!
//! [`AlertClock`] is the sans-IO decision: verdicts and the time in, the alerts due out,
//! with the next deadline. An episode starts when the verdict turns blocked (or idle) and is
//! dated from its evidence (a verdict computed late still dates the episode from when the
//! screen first showed it); it ends when the session works, or turns to the other state. An
//! `unknown` verdict neither starts nor ends one. The driver runs a due alert's command
//! ([`run_alert`]) like any process hyoka starts: in a process group of its own, carrying
//! the session's marker (so the session's final sweep stops what it leaves behind), stopped
//! when it runs longer than its time limit, with `HYOKA_SESSION`, `HYOKA_ALERT`,
//! `HYOKA_BLOCKED_KIND` and `HYOKA_SCREEN_FILE` (a file holding the screen's text) in its
//! environment.

use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use hyoka_idle_detect::{BlockedKind, SessionState, Verdict};
use hyoka_proctrack::{EnvVars, GroupChild, GroupExit};

use crate::event::AlertKind;

/// The alerts of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertOptions {
    /// The session's name (`HYOKA_SESSION`).
    pub session: String,
    /// Run through `/bin/sh -c` when the session has been blocked for `blocked_after`.
    pub on_blocked: Option<String>,
    /// How long a session must be blocked before `on_blocked` runs.
    pub blocked_after: Duration,
    /// Run through `/bin/sh -c` when the session has been idle for `idle_after`.
    pub on_idle: Option<String>,
    /// How long a session must be idle before `on_idle` runs.
    pub idle_after: Duration,
    /// How long a command may run before its process group is stopped.
    pub timeout: Duration,
    /// Extra environment (the session's marker, so the final sweep finds leftovers).
    pub env: Vec<(OsString, OsString)>,
    /// A private directory for the screen-text files.
    pub dir: PathBuf,
}

impl AlertOptions {
    /// `true` when some alert is configured.
    pub fn any(&self) -> bool {
        self.on_blocked.is_some() || self.on_idle.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Episode {
    since: Instant,
    fired: bool,
}

/// The sans-IO alert decision: which alert is due, once per episode.
#[derive(Debug, Clone, Default)]
pub struct AlertClock {
    blocked: Option<Episode>,
    idle: Option<Episode>,
    blocked_after: Option<Duration>,
    idle_after: Option<Duration>,
}

impl AlertClock {
    /// A clock for the alerts configured in `options`.
    pub fn new(options: &AlertOptions) -> Self {
        Self {
            blocked: None,
            idle: None,
            blocked_after: options
                .on_blocked
                .is_some()
                .then_some(options.blocked_after),
            idle_after: options.on_idle.is_some().then_some(options.idle_after),
        }
    }

    /// Takes the verdict at `now` and returns the alerts due now (each at most once per
    /// episode), with the blocked kind for `blocked`.
    pub fn observe(
        &mut self,
        verdict: &Verdict,
        now: Instant,
    ) -> Vec<(AlertKind, Option<BlockedKind>)> {
        // The episode started when its evidence was first seen.
        let since = || {
            let age = verdict
                .evidence
                .first()
                .map_or(Duration::ZERO, |e| Duration::from_millis(e.age_ms));
            now.checked_sub(age).unwrap_or(now)
        };
        match verdict.state {
            SessionState::Blocked => {
                self.idle = None;
                self.blocked.get_or_insert_with(|| Episode {
                    since: since(),
                    fired: false,
                });
            }
            SessionState::Idle => {
                self.blocked = None;
                self.idle.get_or_insert_with(|| Episode {
                    since: since(),
                    fired: false,
                });
            }
            SessionState::Working => {
                self.blocked = None;
                self.idle = None;
            }
            SessionState::Unknown => {}
        }
        let mut due = Vec::new();
        for (kind, episode, after) in [
            (AlertKind::Blocked, &mut self.blocked, self.blocked_after),
            (AlertKind::Idle, &mut self.idle, self.idle_after),
        ] {
            if let (Some(episode), Some(after)) = (episode.as_mut(), after)
                && !episode.fired
                && now.saturating_duration_since(episode.since) >= after
            {
                episode.fired = true;
                let blocked = match kind {
                    AlertKind::Blocked => verdict.blocked,
                    AlertKind::Idle => None,
                };
                due.push((kind, blocked));
            }
        }
        due
    }

    /// When the next alert falls due if the verdict does not change.
    pub fn next_deadline(&self) -> Option<Instant> {
        [
            (self.blocked, self.blocked_after),
            (self.idle, self.idle_after),
        ]
        .into_iter()
        .filter_map(|(episode, after)| {
            let episode = episode.filter(|e| !e.fired)?;
            episode.since.checked_add(after?)
        })
        .min()
    }
}

/// How an alert command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AlertRun {
    pub(crate) alert: AlertKind,
    pub(crate) code: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) error: Option<String>,
}

/// Runs one alert's command with the screen's text in a file beside it, and removes the
/// file when the command ends. `cancel` completing stops the command's group at once.
pub(crate) async fn run_alert(
    options: &AlertOptions,
    alert: AlertKind,
    blocked: Option<BlockedKind>,
    screen: String,
    serial: u64,
    cancel: impl Future<Output = ()>,
) -> AlertRun {
    let mut run = AlertRun {
        alert,
        code: None,
        timed_out: false,
        error: None,
    };
    let command = match alert {
        AlertKind::Blocked => options.on_blocked.as_deref(),
        AlertKind::Idle => options.on_idle.as_deref(),
    };
    let Some(command_text) = command else {
        return run;
    };
    let name = match alert {
        AlertKind::Blocked => "blocked",
        AlertKind::Idle => "idle",
    };
    let file = options.dir.join(format!("screen-{serial}-{name}.txt"));
    if let Err(err) = write_private(&file, &screen) {
        run.error = Some(format!("cannot write {}: {err}", file.display()));
        return run;
    }
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(command_text)
        .envs(options.env.iter().map(|(k, v)| (k, v)))
        .env(EnvVars::HYOKA_SESSION, &options.session)
        .env(EnvVars::HYOKA_ALERT, name)
        .env(
            EnvVars::HYOKA_BLOCKED_KIND,
            blocked.map_or("", BlockedKind::as_str),
        )
        .env(EnvVars::HYOKA_SCREEN_FILE, &file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = match GroupChild::spawn(command) {
        Ok(child) => child,
        Err(err) => {
            let _ = std::fs::remove_file(&file);
            run.error = Some(format!("cannot start /bin/sh: {err}"));
            return run;
        }
    };
    match child.wait_within(options.timeout, cancel).await {
        GroupExit::Exited(status) => run.code = status.code(),
        GroupExit::Failed(err) => run.error = Some(err.to_string()),
        GroupExit::TimedOut => run.timed_out = true,
        GroupExit::Cancelled => run.error = Some("the session ended".to_owned()),
    }
    // The command's group goes with it (a notifier it left in the background too).
    child
        .stop(hyoka_proctrack::Signal::Term, Duration::from_secs(1))
        .await;
    let _ = std::fs::remove_file(&file);
    run
}

/// Writes `text` to a new file only its owner can read.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // `create_new` never follows a link planted at the path.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests;
