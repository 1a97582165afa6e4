//! A session's records: its tracker (a PTY session's ledger and owner lock; a tmux
//! session's owner lock alone), the ids its processes carry, `status.json`, which `hyoka ps`
//! shows, and the ledger directory that goes once nothing of the session is left.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use hyoka_proctrack::{
    Agent, CgroupMode, PhaseNow, ProcRef, SESSION_PHASE, TeardownReport, Tracker, TrackerOptions,
    read_status, remove_status, write_status,
};

use super::backend::Backend;
use crate::driver::Report;
use crate::error::RespawnError;

/// The eval id under which a session is tracked (and its processes marked).
pub const SESSION_EVAL: &str = "session";

/// The eval id the AI checkers' processes carry: outside the session's tree (a checker on
/// the CPU is not the agent at work), inside the run's final sweep.
pub const CHECKER_EVAL: &str = "session.check";

/// The eval id alert commands carry (like the checkers: outside the session's tree, inside
/// the run's final sweep).
pub const ALERT_EVAL: &str = "session.alert";

/// `HYOKA_RUN_ID` and `HYOKA_EVAL_ID`, which the session's final sweep looks for.
pub(super) fn run_marker(run_id: &str, eval: &str) -> Vec<(OsString, OsString)> {
    hyoka_proctrack::marker_env(run_id, eval, None)
}

/// A PTY session's tracker and its agent, adopted into it (shared with the sampler).
pub(super) type Adopted = (Tracker, Arc<Mutex<Agent>>);

/// The tracker of a PTY session and the adopted agent, and the ledger directory to remove
/// when nothing survives.
pub(super) struct Tracked {
    pub(super) adopted: Option<Adopted>,
    /// A tmux session's owner lock and empty ledger.
    pub(super) liveness: Option<Tracker>,
    pub(super) ledger_dir: Option<PathBuf>,
}

/// The tracker of a PTY session; or, for a tmux session, which is meant to outlive its
/// controller so nothing of it is ever adopted (and `hyoka clean` never stops it), one whose
/// owner lock and empty ledger only say, for `hyoka ps`, that a controller drives it.
pub(super) fn trackers(
    backend: &Backend,
    run_id: &str,
    reports: &Path,
) -> Result<(Option<Tracker>, Option<Tracker>), RespawnError> {
    let track = |options| Tracker::start(options).map_err(|source| RespawnError::Track { source });
    let options = TrackerOptions::new(run_id, reports);
    Ok(match backend {
        Backend::Pty => (Some(track(options)?), None),
        Backend::Tmux { .. } => {
            let options = TrackerOptions {
                cgroup: CgroupMode::Off,
                subreaper: false,
                ..options
            };
            (None, Some(track(options)?))
        }
    })
}

/// Writes `<run_dir>/session/status.json`, which `hyoka ps` shows: a respawn session, its
/// backend (and tmux session), its agent's pid and start time (a tmux pane's process: what
/// proves, once this controller is gone, that the tmux session running is still the one it
/// drove; see [`orphaned_sessions`](super::orphaned_sessions)) and since when. A
/// named tmux session's earlier controllers that died leave records this one takes over
/// (see [`forget_dead_controllers`]).
pub(super) fn announce(
    reports: &Path,
    run_dir: Option<&Path>,
    backend: &Backend,
    session: &str,
    agent: Option<ProcRef>,
) {
    if let Backend::Tmux {
        session: Some(name),
    } = backend
    {
        // What they left goes, an unnamed session's socket directory included (its agent
        // talks to this controller's from now on).
        let temp = std::env::temp_dir();
        for run_id in forget_dead_controllers(reports, name) {
            super::socket_dir::SocketDir::forget_run(&temp, &run_id);
        }
    }
    let Some(run_dir) = run_dir else { return };
    #[expect(
        clippy::disallowed_methods,
        reason = "the session's start, recorded for people; nothing decides on it"
    )]
    let now = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let (backend, tmux_session) = match backend {
        Backend::Pty => ("pty", None),
        Backend::Tmux { .. } => ("tmux", Some(session.to_owned())),
    };
    let status = PhaseNow {
        phase: SESSION_PHASE.to_owned(),
        since: now.clone(),
        started: Some(now),
        backend: Some(backend.to_owned()),
        tmux_session,
        pid: agent.and_then(|a| u32::try_from(a.pid).ok()),
        pid_start_ticks: agent.map(|a| a.start_ticks),
        ..PhaseNow::default()
    };
    let dir = run_dir.join(SESSION_EVAL);
    let written = std::fs::create_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|()| write_status(&dir, &status).map_err(|e| e.to_string()));
    if let Err(err) = written {
        tracing::debug!(error = %err, "cannot record the session's status");
    }
}

/// Removes the records of earlier controllers of the named tmux session `name` that died
/// without cleaning up (SIGKILLed: their owner lock is free): the session outlived them and
/// this controller drives it now. Only a record that provably is such a controller's is
/// touched: an abandoned run under `reports` whose ledger tracks nothing and whose status
/// names this tmux session. Gives the run ids whose records went.
pub(super) fn forget_dead_controllers(reports: &Path, name: &str) -> Vec<String> {
    let Ok(runs) = hyoka_proctrack::list_runs(reports) else {
        return Vec::new();
    };
    let mut forgotten = Vec::new();
    for run in runs {
        let ours = run.state == hyoka_proctrack::LockState::Abandoned
            && run.refused.is_none()
            && run.processes.is_empty()
            && read_status(&run.run_dir.join(SESSION_EVAL)).is_some_and(|status| {
                status.backend.as_deref() == Some("tmux")
                    && status.tmux_session.as_deref() == Some(name)
            });
        if ours {
            remove_ledger_dir(&run.run_dir);
            forgotten.push(run.run_id);
        }
    }
    forgotten
}

/// Removes a cleanly closed session's ledger directory (the ledger, the owner lock and the
/// session's status; a directory holding anything else is left alone).
pub(super) fn remove_ledger_dir(dir: &Path) {
    remove_status(&dir.join(SESSION_EVAL));
    let _ = std::fs::remove_dir(dir.join(SESSION_EVAL));
    for name in [hyoka_proctrack::LEDGER_FILE, hyoka_proctrack::LOCK_FILE] {
        if let Err(err) = std::fs::remove_file(dir.join(name))
            && err.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(error = %err, "cannot remove the session's ledger");
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// The summary of a session that ended (`hyoka respawn --json`): its run id, how it ended,
/// its cycles, the agent's exit and what the teardown found.
pub fn summary(run_id: &str, report: &Report, teardown: &TeardownReport) -> serde_json::Value {
    serde_json::json!({
        "run_id": run_id,
        "outcome": report.end.as_str(),
        "cycles": report.cycles,
        "exit_code": report.exit.code,
        "exit_signal": report.exit.signal,
        "teardown": {
            "processes_seen": teardown.processes_seen,
            "processes_killed": teardown.processes_killed,
            "survivors": teardown.survivors,
        },
    })
}
