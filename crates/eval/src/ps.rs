//! What `hyoka ps` shows: the runs that are live or being torn down, what each eval (or
//! respawn session) is doing from its `status.json`, and the tracked processes as they are
//! now; written by [`LiveStatus`] while an eval runs, read with the checks of every reports
//! file, and rendered for people by [`render_live_runs`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hyoka_proctrack::{
    Counts, ListedProcess, LockState, NativeProcTable, PhaseNow, ProcTable as _, RunListing,
    read_status, write_status,
};
use serde::Serialize;

use crate::error::EvalError;
use crate::records::rfc3339;

/// `<eval_dir>/status.json` of a live eval: the phase it is in and since when, when it
/// started, and its counts while the agent runs (`{"phase", "since", "started", "counts"}`),
/// which is what `hyoka ps` shows of it. Kept in memory and written atomically by a task of
/// its own, [`STATUS_PERIOD`] after the eval started and then each period when it changed,
/// so a trial shorter than a period writes no status at all and a long one at most one a
/// period; removed by [`LiveStatus::close`] when the eval's records are written.
pub(crate) struct LiveStatus {
    dir: PathBuf,
    state: std::sync::Mutex<StatusState>,
}

/// How often a live eval's `status.json` is brought up to date, and how long after the
/// eval's start it is first written: `hyoka ps` shows an eval at most this late.
pub(crate) const STATUS_PERIOD: Duration = Duration::from_millis(250);

struct StatusState {
    now: PhaseNow,
    /// Changed since it was last written.
    dirty: bool,
    /// `status.json` exists.
    written: bool,
    /// The eval is over: nothing is written any more.
    closed: bool,
}

impl LiveStatus {
    /// The status of the eval whose directory is `eval_dir`, started at `started`, with the
    /// task that writes it (on the current Tokio runtime; it ends with the status).
    pub(crate) fn start(eval_dir: &Path, started: SystemTime) -> std::sync::Arc<Self> {
        let live = std::sync::Arc::new(Self {
            dir: eval_dir.to_owned(),
            state: std::sync::Mutex::new(StatusState {
                now: PhaseNow {
                    started: Some(rfc3339(started)),
                    ..PhaseNow::default()
                },
                dirty: true,
                written: false,
                closed: false,
            }),
        });
        let weak = std::sync::Arc::downgrade(&live);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(STATUS_PERIOD).await;
                match weak.upgrade() {
                    Some(live) if live.flush() => {}
                    _ => break,
                }
            }
        });
        live
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StatusState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The eval entered `phase` at `now`.
    pub(crate) fn phase(&self, phase: &str, now: SystemTime) {
        let mut state = self.lock();
        phase.clone_into(&mut state.now.phase);
        state.now.since = rfc3339(now);
        state.dirty = true;
    }

    /// The agent's counts are `counts` now.
    pub(crate) fn counts(&self, counts: Counts) {
        let mut state = self.lock();
        if state.now.counts != Some(counts) {
            state.now.counts = Some(counts);
            state.dirty = true;
        }
    }

    /// Writes the status if it changed; `false` once the eval is over.
    fn flush(&self) -> bool {
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        if state.dirty {
            state.dirty = false;
            state.written = true;
            if let Err(err) = write_status(&self.dir, &state.now) {
                tracing::debug!(error = %err, "cannot record the eval's status");
            }
        }
        true
    }

    /// The eval is over: its `status.json` is removed, and never written again.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        if std::mem::take(&mut state.written) {
            hyoka_proctrack::remove_status(&self.dir);
        }
    }
}

impl Drop for LiveStatus {
    fn drop(&mut self) {
        self.close();
    }
}

/// A run as `hyoka ps` shows it: the ledger's view, plus what each eval (or session) is
/// doing now.
#[derive(Debug, Clone, Serialize)]
pub struct LiveRun {
    /// The run's owner, ledger, evals and tracked processes.
    #[serde(flatten)]
    pub run: RunListing,
    /// `live` (its owner runs), `tearing_down` (its owner is gone, some of its processes
    /// still run: a shim stopping its tree, or a run for `hyoka clean`), or `orphaned` (a
    /// respawn controller that died while its tmux session runs on, supervised by nobody:
    /// see [`LiveRun::orphaned`]).
    pub activity: &'static str,
    /// What each eval (or respawn session) is doing, by eval id, from its `status.json`.
    pub phases: BTreeMap<String, PhaseNow>,
    /// For an orphaned session: the command that ends it and removes its records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

impl LiveRun {
    /// The run of a respawn controller that died while its tmux session runs on (which
    /// `hyoka-respawn`'s `orphaned_sessions` proves), shown with `stop`, the command that
    /// ends the session and removes what its controller left.
    pub fn orphaned(run: RunListing, stop: String) -> Self {
        let phases = phases(&run.run_dir);
        Self {
            run,
            activity: "orphaned",
            phases,
            stop: Some(stop),
        }
    }
}

/// Every eval (or session) directory of a run that holds a status (a tmux session has no
/// process in the ledger to name it), with the command its pid runs now.
fn phases(run_dir: &Path) -> BTreeMap<String, PhaseNow> {
    std::fs::read_dir(run_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            hyoka_workspace::EvalId::new(name.clone()).ok()?;
            let mut phase = read_status(&entry.path())?;
            phase.pid_comm = phase
                .pid
                .and_then(|pid| i32::try_from(pid).ok())
                .and_then(|pid| NativeProcTable::new().process(pid))
                .filter(|p| !p.is_gone())
                .filter(|p| phase.pid_start_ticks.is_none_or(|t| t == p.start_ticks))
                .map(|p| p.comm);
            Some((name, phase))
        })
        .collect()
}

/// What `hyoka ps` lists under `reports`: live runs (owner lock held) and runs being torn
/// down (owner gone, ledger not marked cleaned, some tracked process still running), each
/// with what its evals are doing. (Orphaned tmux sessions need tmux to be proven: the
/// caller adds them with [`LiveRun::orphaned`].)
///
/// # Errors
/// [`EvalError::Tracker`] when `reports` is not an existing directory (bad input:
/// [`EvalError::is_bad_input`]); [`EvalError::Clean`] when the runs cannot be listed.
pub fn live_runs(reports: &Path) -> Result<Vec<LiveRun>, EvalError> {
    hyoka_proctrack::check_reports_dir(reports, hyoka_proctrack::ReportsUse::Read)?;
    let listings = hyoka_proctrack::list_runs(reports).map_err(|source| EvalError::Clean {
        context: "cannot list runs".to_owned(),
        source,
    })?;
    Ok(listings
        .into_iter()
        .filter(|run| run.refused.is_none())
        .filter_map(|run| {
            let activity = match run.state {
                LockState::Live => "live",
                LockState::Abandoned if run.processes.iter().any(|p| p.alive) => "tearing_down",
                _ => return None,
            };
            let phases = phases(&run.run_dir);
            Some(LiveRun {
                run,
                activity,
                phases,
                stop: None,
            })
        })
        .collect())
}

/// `hyoka ps` for people: per run its owner and state, then per eval (or respawn session)
/// its phase, how long it has run (at `now`), its counts and its workspace, with its
/// tracked processes as they are now (their current command; a process recorded under
/// `<eval>.…`, a phase's or a service's, is shown under its eval). Directories a run records
/// that are not an eval's workspace (an isolated home, a session's hook socket) are not
/// listed as workspaces.
pub fn render_live_runs(runs: &[LiveRun], now: SystemTime) -> String {
    let mut out = String::new();
    if runs.is_empty() {
        out.push_str("no live runs\n");
    }
    for live in runs {
        let run = &live.run;
        let owner = run
            .ledger
            .owner
            .as_ref()
            .map_or_else(|| "?".to_owned(), |o| o.pid().to_string());
        let alive = run.processes.iter().filter(|p| p.alive).count();
        let state = match live.activity {
            "live" => format!("owner pid {owner}"),
            "orphaned" => format!(
                "owner pid {owner} is gone; orphaned: its tmux session runs on, supervised by \
                 nobody"
            ),
            _ => format!(
                "owner pid {owner} is gone; being torn down, {alive} process(es) still running \
                 (`hyoka clean` finishes it)"
            ),
        };
        let _ = writeln!(out, "run {} ({state})", run.run_id);
        let mut shown: Vec<&ListedProcess> = Vec::new();
        for (eval, phase) in &live.phases {
            render_eval(&mut out, run, eval, phase, now);
            let before = shown.len();
            for process in run
                .processes
                .iter()
                .filter(|p| belongs(&p.entry.eval_id, eval))
            {
                render_process(&mut out, process, eval);
                shown.push(process);
            }
            // A tmux session's agent is not tracked (the session outlives hyoka).
            if let (Some(pid), Some(comm), true) =
                (phase.pid, &phase.pid_comm, shown.len() == before)
            {
                let _ = writeln!(out, "    process {pid} {comm}: running");
            }
        }
        for process in &run.processes {
            if !shown.iter().any(|p| std::ptr::eq(*p, process)) {
                render_process(&mut out, process, "");
            }
        }
        if let Some(stop) = &live.stop {
            let _ = writeln!(out, "  stop it: {stop}");
        }
    }
    out
}

/// Whether a process recorded under `id` is `eval`'s (its own, or a phase's or service's).
fn belongs(id: &str, eval: &str) -> bool {
    id.strip_prefix(eval)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

fn render_eval(out: &mut String, run: &RunListing, eval: &str, phase: &PhaseNow, now: SystemTime) {
    let elapsed = phase
        .started
        .as_deref()
        .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
        .and_then(|t| now.duration_since(t).ok())
        .map_or_else(String::new, |d| {
            format!(
                ", running {}",
                humantime::format_duration(Duration::from_secs(d.as_secs()))
            )
        });
    let what = match (&phase.backend, &phase.tmux_session) {
        (Some(backend), Some(name)) => format!("respawn session on {backend} ({name})"),
        (Some(backend), None) => format!("respawn session on {backend}"),
        _ => format!("eval, phase {}", phase.phase),
    };
    let _ = writeln!(out, "  {eval}: {what}{elapsed}");
    if let Some(c) = phase.counts {
        let _ = writeln!(
            out,
            "    turns {}, actions {}, files {} ({} bytes)",
            c.turns, c.actions, c.files, c.output_bytes
        );
    }
    for workspace in run.ledger.workspaces.iter().filter(|w| w.eval_id == eval) {
        let _ = writeln!(out, "    workspace {}", workspace.path.display());
    }
}

fn render_process(out: &mut String, process: &ListedProcess, eval: &str) {
    let entry = &process.entry;
    let (command, state) = match &process.comm_now {
        Some(now) => (now.as_str(), "running"),
        None => (entry.comm.as_str(), "gone"),
    };
    let under = if entry.eval_id == eval {
        String::new()
    } else {
        format!(" [{}]", entry.eval_id)
    };
    let _ = writeln!(
        out,
        "    process {} {command} (pgid {}){under}: {state}",
        entry.pid, entry.pgid
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_disk(dir: &Path) -> Option<PhaseNow> {
        read_status(dir)
    }

    /// Issue 29: each phase of every trial rewrote `status.json` (a new file and a rename),
    /// four times for a trial of a few milliseconds. The status is written a period after the
    /// start, then only when it changed, and never after the eval is over.
    #[tokio::test(start_paused = true)]
    async fn the_status_is_written_a_period_late_only_when_it_changed_and_never_after_close() {
        let dir = tempfile::tempdir().unwrap();
        let started = SystemTime::UNIX_EPOCH + Duration::from_hours(500_000);
        let live = LiveStatus::start(dir.path(), started);
        live.phase("setup", started);
        live.phase("agent", started);
        tokio::task::yield_now().await;
        assert!(on_disk(dir.path()).is_none(), "nothing before a period");
        tokio::time::sleep(STATUS_PERIOD).await;
        tokio::task::yield_now().await;
        let first = on_disk(dir.path()).expect("written after a period");
        assert_eq!(first.phase, "agent");
        // Unchanged: the next tick writes nothing (the file removed behind its back stays
        // removed).
        std::fs::remove_file(dir.path().join(hyoka_proctrack::STATUS_FILE)).unwrap();
        tokio::time::sleep(STATUS_PERIOD).await;
        tokio::task::yield_now().await;
        assert!(on_disk(dir.path()).is_none());
        live.counts(Counts {
            turns: 2,
            ..Counts::default()
        });
        tokio::time::sleep(STATUS_PERIOD).await;
        tokio::task::yield_now().await;
        assert_eq!(on_disk(dir.path()).unwrap().counts.unwrap().turns, 2);
        live.close();
        assert!(on_disk(dir.path()).is_none(), "removed at close");
        live.phase("cleanup", started);
        tokio::time::sleep(STATUS_PERIOD * 4).await;
        tokio::task::yield_now().await;
        assert!(on_disk(dir.path()).is_none(), "never written after close");
    }

    /// A trial shorter than a period never writes its status.
    #[tokio::test(start_paused = true)]
    async fn a_short_eval_writes_no_status() {
        let dir = tempfile::tempdir().unwrap();
        let started = SystemTime::UNIX_EPOCH;
        let live = LiveStatus::start(dir.path(), started);
        live.phase("agent", started);
        tokio::time::sleep(STATUS_PERIOD / 2).await;
        drop(live);
        tokio::time::sleep(STATUS_PERIOD * 4).await;
        tokio::task::yield_now().await;
        assert!(on_disk(dir.path()).is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
