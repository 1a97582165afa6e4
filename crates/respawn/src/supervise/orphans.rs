//! Orphaned tmux sessions: a tmux session whose controller died without a word (SIGKILL, an
//! OOM kill) runs on in its private tmux server, supervised by nobody, and the controller's
//! registry entry is swept as stale. [`orphaned_sessions`] finds them for `hyoka sessions`
//! and `hyoka ps` from what is provably ours, never from a pid alone:
//!
//! - the dead controller's run under the reports directory: its owner lock free (the kernel
//!   drops it however the controller died), its ledger readable with the checks of `hyoka
//!   clean`, not marked cleaned, tracking no process (a tmux session is never adopted), and
//!   its `session/status.json` naming a tmux session with the pane's pid and start time;
//! - the controller itself, by the identity the ledger recorded (pid, start time and boot):
//!   no process runs with it;
//! - the tmux session on the private server hyoka names after it (`tmux -L hyoka-<name>`),
//!   whose pane runs the very process recorded (same pid, same start time).
//!
//! `hyoka respawn --stop --tmux-session NAME --reports DIR` ends such a session and removes
//! what its controller left ([`forget_orphaned_session`](super::forget_orphaned_session)).

use std::path::{Path, PathBuf};

use hyoka_proctrack::{
    BootId, Identity, LockState, NativeProcTable, PhaseNow, ProcRef, ProcTable, RunListing,
    read_status,
};
use serde::Serialize;

use super::records::SESSION_EVAL;
use crate::registry::TmuxTarget;
use crate::terminal::{TmuxOptions, TmuxTerminal, valid_tmux_name};

/// A tmux session whose controller is gone: a row of `hyoka sessions --json`, marked
/// `"orphaned": true`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OrphanedSession {
    /// The session's name (the tmux session's).
    pub name: String,
    /// Always `true`: tells this row from a supervised session's.
    pub orphaned: bool,
    /// Always `tmux`.
    pub backend: String,
    /// Where the session runs.
    pub tmux: TmuxTarget,
    /// The run id of its dead controller.
    pub run_id: String,
    /// The dead controller's run directory (its ledger, owner lock and session status).
    pub run_dir: PathBuf,
    /// The dead controller's process id (no process runs with its recorded identity).
    pub controller_pid: i32,
    /// The pane's process (the wrapper that runs the agent), still running.
    pub pid: u32,
    /// When the controller started supervising it (RFC 3339).
    pub started: Option<String>,
    /// The command that ends the session and removes what its controller left.
    pub stop: String,
    /// The command that supervises it again.
    pub supervise: String,
    /// The dead controller's run as `hyoka-proctrack` listed it.
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub run: RunListing,
}

/// What the records of a run claim: a tmux session `name` driven by `controller`, whose
/// pane ran `pane`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Claim {
    name: String,
    controller: Identity,
    pane: ProcRef,
}

/// What a process table says of a pid: its start ticks while it runs (a zombie is gone).
fn start_ticks(table: &dyn ProcTable, pid: i32) -> Option<u64> {
    table
        .process(pid)
        .filter(|p| !p.is_gone())
        .map(|p| p.start_ticks)
}

/// The claim of a run's records, when they are a dead tmux controller's: an abandoned run
/// (owner lock free) that passed the checks, not marked cleaned, with no tracked process,
/// whose owner no longer runs (`running` gives the start ticks of a live pid; `boot` is this
/// boot's id), and whose session status names a valid tmux session and the pane's identity.
fn claim(
    run: &RunListing,
    status: Option<&PhaseNow>,
    running: impl Fn(i32) -> Option<u64>,
    boot: Option<&BootId>,
) -> Option<Claim> {
    if run.state != LockState::Abandoned
        || run.refused.is_some()
        || run.cleaned
        || !run.processes.is_empty()
    {
        return None;
    }
    let controller = run.ledger.owner.clone()?;
    let same_boot = boot == Some(&controller.boot_id);
    if same_boot && running(controller.pid()) == Some(controller.proc_ref.start_ticks) {
        // Its lock is free but the controller runs on: not ours to call orphaned.
        return None;
    }
    let status = status?;
    let name = status.tmux_session.clone()?;
    if status.backend.as_deref() != Some("tmux") || !valid_tmux_name(&name) {
        return None;
    }
    let pane = ProcRef {
        pid: i32::try_from(status.pid?).ok()?,
        start_ticks: status.pid_start_ticks?,
    };
    // A pane recorded in another boot cannot be running now.
    same_boot.then_some(Claim {
        name,
        controller,
        pane,
    })
}

/// Whether the tmux session's pane now (`pane_now`, from tmux) is the process the claim
/// recorded: the same pid, running with the same start ticks.
fn pane_proves(claim: &Claim, pane_now: Option<u32>, running: impl Fn(i32) -> Option<u64>) -> bool {
    pane_now.and_then(|p| i32::try_from(p).ok()) == Some(claim.pane.pid)
        && running(claim.pane.pid) == Some(claim.pane.start_ticks)
}

/// The tmux sessions under `reports` whose controller is gone (see the module docs for what
/// proves it), sorted by name; none when `reports` cannot be read or tmux is missing.
pub async fn orphaned_sessions(reports: &Path) -> Vec<OrphanedSession> {
    let Ok(runs) = hyoka_proctrack::list_runs(reports) else {
        return Vec::new();
    };
    let table = NativeProcTable::new();
    let boot = table.boot_id().ok();
    let running = |pid| start_ticks(&table, pid);
    let reports = std::path::absolute(reports).unwrap_or_else(|_| reports.to_owned());
    let mut found = Vec::new();
    for run in runs {
        let status = read_status(&run.run_dir.join(SESSION_EVAL));
        let Some(claim) = claim(&run, status.as_ref(), running, boot.as_ref()) else {
            continue;
        };
        let socket = TmuxOptions::default_socket(&claim.name);
        if !TmuxTerminal::exists(&socket, &claim.name)
            .await
            .unwrap_or(false)
        {
            continue;
        }
        let pane_now = TmuxTerminal::pane_pid(&socket, &claim.name).await;
        if !pane_proves(&claim, pane_now, running) {
            continue;
        }
        let reports_arg = shell_word(&reports.display().to_string());
        found.push(OrphanedSession {
            stop: format!(
                "hyoka respawn --stop --tmux-session {} --reports {reports_arg}",
                claim.name
            ),
            supervise: format!(
                "hyoka respawn --tmux-session {} --reports {reports_arg}",
                claim.name
            ),
            tmux: TmuxTarget {
                socket,
                session: claim.name.clone(),
            },
            name: claim.name,
            orphaned: true,
            backend: "tmux".to_owned(),
            run_id: run.run_id.clone(),
            run_dir: std::path::absolute(&run.run_dir).unwrap_or_else(|_| run.run_dir.clone()),
            controller_pid: claim.controller.pid(),
            pid: u32::try_from(claim.pane.pid).unwrap_or_default(),
            started: status.and_then(|s| s.started),
            run,
        });
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

impl OrphanedSession {
    /// The session in a few lines for a person (`hyoka sessions`): its name, that it is
    /// orphaned and why, and the commands that stop it or supervise it again.
    pub fn render(&self) -> String {
        format!(
            "{}  orphaned: its controller (pid {}) is gone; the tmux session runs on, supervised by nobody\n    watch it:           tmux -L {} attach -t {}\n    supervise it again: {}\n    stop it:            {}",
            self.name,
            self.controller_pid,
            self.tmux.socket,
            self.tmux.session,
            self.supervise,
            self.stop
        )
    }
}

/// `text` as one shell word: as it is when it holds only safe characters, else in single
/// quotes.
fn shell_word(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    if safe {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use hyoka_proctrack::{Ledger, SESSION_PHASE};

    use super::*;

    const BOOT: &str = "0f0e0d0c-0b0a-0908-0706-050403020100";

    fn boot() -> BootId {
        BootId::new(BOOT).unwrap()
    }

    fn owner(pid: i32, start_ticks: u64) -> Identity {
        Identity {
            proc_ref: ProcRef { pid, start_ticks },
            boot_id: boot(),
        }
    }

    /// An abandoned tmux controller's run whose owner was pid 100 started at tick 5.
    fn dead_controller() -> RunListing {
        RunListing {
            run_id: "respawn-1".to_owned(),
            run_dir: PathBuf::from("/reports/respawn-1"),
            state: LockState::Abandoned,
            refused: None,
            ledger: Ledger {
                run_id: "respawn-1".to_owned(),
                owner: Some(owner(100, 5)),
                ..Ledger::default()
            },
            cleaned: false,
            problems: Vec::new(),
            evals: Vec::new(),
            processes: Vec::new(),
        }
    }

    fn tmux_status(name: &str) -> PhaseNow {
        PhaseNow {
            phase: SESSION_PHASE.to_owned(),
            backend: Some("tmux".to_owned()),
            tmux_session: Some(name.to_owned()),
            pid: Some(200),
            pid_start_ticks: Some(9),
            ..PhaseNow::default()
        }
    }

    fn table(live: &[(i32, u64)]) -> impl Fn(i32) -> Option<u64> {
        let live: HashMap<i32, u64> = live.iter().copied().collect();
        move |pid| live.get(&pid).copied()
    }

    #[test]
    fn a_dead_controllers_tmux_session_whose_pane_runs_on_is_orphaned() {
        let running = table(&[(200, 9)]);
        let claim = claim(
            &dead_controller(),
            Some(&tmux_status("work")),
            &running,
            Some(&boot()),
        )
        .expect("the records claim a session");
        assert_eq!(claim.name, "work");
        assert_eq!(claim.controller.pid(), 100);
        assert!(pane_proves(&claim, Some(200), &running));
    }

    #[test]
    fn a_controller_that_still_runs_is_not_gone() {
        // Its pid runs with the recorded start time: never called orphaned.
        let status = tmux_status("work");
        let live = table(&[(100, 5), (200, 9)]);
        assert!(claim(&dead_controller(), Some(&status), &live, Some(&boot())).is_none());
        // The same pid reused by another process (another start time) is not the controller.
        let reused = table(&[(100, 6), (200, 9)]);
        assert!(claim(&dead_controller(), Some(&status), &reused, Some(&boot())).is_some());
    }

    #[test]
    fn only_records_that_prove_it_claim_a_session() {
        let running = table(&[(200, 9)]);
        let status = tmux_status("work");
        let check = |run: &RunListing, status: Option<&PhaseNow>| {
            claim(run, status, &running, Some(&boot())).is_some()
        };
        let mut live = dead_controller();
        live.state = LockState::Live;
        assert!(!check(&live, Some(&status)), "a live run");
        let mut refused = dead_controller();
        refused.refused = Some("not yours".to_owned());
        assert!(!check(&refused, Some(&status)), "a refused run");
        let mut cleaned = dead_controller();
        cleaned.cleaned = true;
        assert!(!check(&cleaned, Some(&status)), "a cleaned run");
        let mut ownerless = dead_controller();
        ownerless.ledger.owner = None;
        assert!(!check(&ownerless, Some(&status)), "no owner recorded");
        assert!(!check(&dead_controller(), None), "no session status");
        let pty = PhaseNow {
            backend: Some("pty".to_owned()),
            ..status.clone()
        };
        assert!(!check(&dead_controller(), Some(&pty)), "a PTY session");
        let no_ticks = PhaseNow {
            pid_start_ticks: None,
            ..status.clone()
        };
        assert!(!check(&dead_controller(), Some(&no_ticks)), "a pid alone");
        let bad_name = tmux_status("../x");
        assert!(!check(&dead_controller(), Some(&bad_name)), "a bad name");
        // Another boot: nothing recorded then runs now.
        let other_boot = BootId::new("ffffffff-0b0a-0908-0706-050403020100").unwrap();
        assert!(
            claim(
                &dead_controller(),
                Some(&status),
                &running,
                Some(&other_boot)
            )
            .is_none()
        );
    }

    #[test]
    fn only_the_recorded_pane_proves_the_session() {
        let claim = Claim {
            name: "work".to_owned(),
            controller: owner(100, 5),
            pane: ProcRef {
                pid: 200,
                start_ticks: 9,
            },
        };
        assert!(pane_proves(&claim, Some(200), table(&[(200, 9)])));
        // Another pane (a session of that name started by someone else since).
        assert!(!pane_proves(&claim, Some(201), table(&[(201, 9)])));
        // The recorded pid reused by another process.
        assert!(!pane_proves(&claim, Some(200), table(&[(200, 10)])));
        // No pane, or a pane process gone.
        assert!(!pane_proves(&claim, None, table(&[(200, 9)])));
        assert!(!pane_proves(&claim, Some(200), table(&[])));
    }

    #[test]
    fn a_path_is_one_shell_word() {
        assert_eq!(shell_word("/tmp/r-1/reports"), "/tmp/r-1/reports");
        assert_eq!(shell_word("/tmp/my reports"), "'/tmp/my reports'");
        assert_eq!(shell_word("/tmp/it's"), r"'/tmp/it'\''s'");
    }
}
