//! Stopping a session: its whole tree through its tracker, then every process still carrying
//! its marker; a session nobody supervises (a detached tmux session) by name.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyoka_proctrack::{
    Agent, EnvVars, Marker, NativeProcTable, NativeSignaller, ProcRef, ProcTable, Scope, Seams,
    SystemClock, TeardownOptions, TeardownReport, teardown,
};
use hyoka_workspace::RunId;

use super::records::{Tracked, remove_ledger_dir};
use crate::driver::{Report, SessionEnd};
use crate::error::RespawnError;
use crate::registry::{Registration, Registry};
use crate::terminal::{Terminal, TmuxOptions, TmuxTerminal};

/// A session whose driver returned; its processes are not stopped yet.
#[must_use = "the session's processes are stopped only by `Driven::stop`"]
pub struct Driven {
    pub(super) result: Result<Report, RespawnError>,
    pub(super) run_id: String,
    pub(super) root: Option<ProcRef>,
    pub(super) grace: Duration,
    pub(super) tracked: Tracked,
    // Dropped (the entry removed) once the session is stopped.
    pub(super) registration: Option<Registration>,
}

impl std::fmt::Debug for Driven {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driven")
            .field("run_id", &self.run_id)
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

/// How a supervised session ended and what stopping it found.
#[derive(Debug)]
pub struct Finished {
    /// The driver's report, or why the session could not be stopped.
    pub report: Result<Report, RespawnError>,
    /// What the final teardown and sweep saw, stopped and left behind.
    pub teardown: TeardownReport,
    /// The session's run id.
    pub run_id: String,
}

/// How [`stop_session`] stopped a session.
#[derive(Debug)]
#[non_exhaustive]
pub enum Stopped {
    /// Its controller was asked to stop it (it stops the session and exits).
    ByController,
    /// Nobody supervised it (a detached tmux session): stopped here, with what the
    /// teardown found.
    Detached(TeardownReport),
}

/// Stops the session `name`: through its controller when one runs (found in `registry`),
/// else a tmux session of that name that nobody supervises ([`stop_detached`]).
///
/// # Errors
/// [`RespawnError::UnknownSession`] when there is neither; a controller that does not
/// answer, or tmux failing, otherwise.
pub async fn stop_session(
    registry: &Registry,
    name: &str,
    grace: Duration,
) -> Result<Stopped, RespawnError> {
    match registry.stop(name).await {
        Ok(()) => return Ok(Stopped::ByController),
        Err(RespawnError::UnknownSession { .. }) => {}
        Err(err) => return Err(err),
    }
    let unknown = || RespawnError::UnknownSession {
        name: name.to_owned(),
    };
    match stop_detached(name, grace).await {
        Ok(Some(teardown)) => Ok(Stopped::Detached(teardown)),
        Ok(None) | Err(RespawnError::TmuxMissing) => Err(unknown()),
        Err(err) => Err(err),
    }
}

/// Stops a tmux session that nobody supervises (left running by a detach, or by a
/// controller that died): its pane's process group, then its private server, then every
/// process still carrying the session's run marker (read from the session's environment,
/// and used only when it is a valid run id). `Ok(None)` when there is no such session.
///
/// # Errors
/// [`RespawnError::TmuxMissing`] without tmux, a tmux failure, or a bad name.
pub async fn stop_detached(
    name: &str,
    grace: Duration,
) -> Result<Option<TeardownReport>, RespawnError> {
    let socket = TmuxOptions::default_socket(name);
    if !TmuxTerminal::exists(&socket, name).await? {
        return Ok(None);
    }
    let run_id = TmuxTerminal::session_env(&socket, name, EnvVars::HYOKA_RUN_ID)
        .await
        .filter(|id| RunId::new(id.as_str()).is_ok());
    let mut terminal = TmuxTerminal::attach(&socket, name).await?;
    let root = terminal
        .child_pid()
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(|pid| NativeProcTable::new().process(pid))
        .map(|info| info.proc_ref());
    terminal.stop(grace).await?;
    Ok(Some(match run_id {
        Some(run_id) => sweep(&run_id, root, grace).await,
        None => TeardownReport::default(),
    }))
}

impl Driven {
    /// Stops the session's whole tree: through its tracker when it was adopted (then the
    /// marker sweep takes whatever else carries the session's marker, a checker's leftovers
    /// for example), else by the marker sweep alone. A session torn down without survivors
    /// removes its ledger directory.
    pub async fn stop(self) -> Finished {
        let Self {
            result,
            run_id,
            root,
            grace,
            tracked,
            registration,
        } = self;
        if result.as_ref().is_ok_and(|r| r.end == SessionEnd::Detached) {
            // The session runs on (tmux), supervised by nobody: nothing is stopped, and its
            // empty ledger goes, so `hyoka clean` never takes it for a crashed run.
            drop(registration);
            if let Some(tracker) = tracked.liveness
                && tracker.close().is_ok()
                && let Some(dir) = &tracked.ledger_dir
            {
                remove_ledger_dir(dir);
            }
            return Finished {
                report: result,
                teardown: TeardownReport::default(),
                run_id,
            };
        }
        let mut closed = true;
        let report = match tracked.adopted {
            Some((tracker, agent)) => {
                let mut report = stop_tracked(agent, &run_id, root, grace).await;
                let rest = sweep(&run_id, None, grace).await;
                report.processes_seen += rest.processes_seen;
                report.processes_killed += rest.processes_killed;
                report.survivors += rest.survivors;
                if let Err(err) = tracker.close() {
                    tracing::error!(error = %err, "cannot close the session's ledger");
                    closed = false;
                }
                report
            }
            None => sweep(&run_id, root, grace).await,
        };
        drop(registration);
        if let Some(tracker) = tracked.liveness
            && let Err(err) = tracker.close()
        {
            tracing::error!(error = %err, "cannot close the session's ledger");
            closed = false;
        }
        // The ledger exists only so `hyoka clean` can repair a crash.
        if closed
            && nothing_left(&report)
            && let Some(dir) = &tracked.ledger_dir
        {
            remove_ledger_dir(dir);
        }
        Finished {
            report: result,
            teardown: report,
            run_id,
        }
    }
}

/// Whether a session's teardown proved that nothing of it is left, so its ledger is no
/// longer needed: no survivor, and a count that is proof (a count `hyoka-proctrack` could
/// not prove keeps the ledger for `hyoka clean`, as it withholds the ledger's cleaned mark).
pub(super) fn nothing_left(report: &TeardownReport) -> bool {
    report.survivors == 0 && report.survivors_unknown.is_none()
}

/// Stops the adopted session's whole tree (cgroup, descendants, marker) through its tracker.
///
/// Should the agent still be shared (a bug), the session's marker sweep stands in, so the
/// tree is stopped all the same.
async fn stop_tracked(
    agent: Arc<Mutex<Agent>>,
    run_id: &str,
    root: Option<ProcRef>,
    grace: Duration,
) -> TeardownReport {
    let Ok(agent) =
        Arc::try_unwrap(agent).map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
    else {
        tracing::error!("the session's tracker is still shared; sweeping by marker instead");
        return sweep(run_id, root, grace).await;
    };
    let mut agent = agent;
    agent
        .teardown(TeardownOptions::with_grace(grace))
        .await
        .unwrap_or_default()
}

/// Every process still carrying the session's marker (escapees of the agent's group
/// included) goes, through `hyoka-proctrack`'s verified teardown.
async fn sweep(run_id: &str, root: Option<ProcRef>, grace: Duration) -> TeardownReport {
    let scope = Scope {
        roots: root.into_iter().collect(),
        marker: Some(Marker::run(run_id)),
        ..Scope::default()
    };
    let options = TeardownOptions::with_grace(grace);
    tokio::task::spawn_blocking(move || {
        let table = NativeProcTable::new();
        let signaller = NativeSignaller::new();
        let seams = Seams {
            table: &table,
            signaller: &signaller,
            clock: &SystemClock,
        };
        teardown(seams, &scope, &[], &options)
    })
    .await
    .unwrap_or_default()
}

/// Removes what the dead controllers of the tmux session `name` left under `reports` (their
/// run directories: ledger, owner lock, session status), once `--stop` ended the session
/// without survivors: an abandoned run whose session status names this tmux session and
/// whose ledger tracks no process. A directory holding anything else is left alone. The
/// session's hook socket directory in the system temp directory goes too (a named session's
/// `hyoka-respawn-<name>`, an unnamed one's `hyoka-<run_id>-sock-…`), when it is ours,
/// holds only the socket and nobody listens on it.
pub fn forget_orphaned_session(reports: &std::path::Path, name: &str) {
    let temp = std::env::temp_dir();
    for run_id in super::records::forget_dead_controllers(reports, name) {
        super::socket_dir::SocketDir::forget_run(&temp, &run_id);
    }
    super::socket_dir::SocketDir::forget(&temp, name);
}
