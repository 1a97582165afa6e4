//! The tracker's process as a subreaper: orphans of the trees it tracks come to it, and it
//! tells them apart from the children it started itself.
//!
//! # Theory of operation
//!
//! [`Tracker::start`](crate::Tracker::start) marks the process `PR_SET_CHILD_SUBREAPER`. An
//! agent runs under the shim, itself a subreaper, so its orphans normally go to the shim; but
//! an agent may SIGKILL the shim (same user), and then the shim's children and every later
//! orphan of that tree are re-parented to the nearest living subreaper: this process. Without
//! the mark they would go to init and out of sight.
//!
//! A child of this process is an adopted orphan when it sits outside this process's session
//! and was not started by the tracker: every process an agent starts lives in a session the
//! agent's tree created (sessions can be left, never joined), while whatever this process
//! starts itself outside the tracker (a readiness probe, a `tmux` client) keeps its session,
//! and what the tracker starts (shims, agents without a shim, adopted processes) is recorded
//! in [`OWNED`] while it is forked. The record is taken *after* the process table snapshot
//! it is compared with, and a fork holds it until the child is in it, so a child that appears
//! in a snapshot is always in the record by the time the two are compared. Entries are
//! identities (pid and start time), never removed: one that was reaped long ago names no
//! process any more, and a snapshot taken just before a reap still finds it.
//!
//! # Reaping without stealing
//!
//! tokio reaps the children it spawned itself, by pid (or through a pidfd); a
//! `waitpid(-1)` here would steal their exit statuses. So nothing here waits for "any" child:
//! [`reap`] waits, with `WNOHANG`, only for each pid it has just proved to be an adopted
//! orphan's zombie by the rule above. A zombie that is not provably adopted is left alone (it
//! costs a pid until this process exits).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use crate::identity::{ProcInfo, ProcRef};
use crate::proc_table::{NativeProcTable, ProcTable};

/// The children of this process started (or adopted) by a tracker: whoever started them
/// collects their exit statuses, so they are never orphans and never reaped here. Sixteen
/// bytes per agent, for the life of the process.
static OWNED: Mutex<BTreeSet<ProcRef>> = Mutex::new(BTreeSet::new());

/// The record of owned children, locked: hold it across a fork and [`own`] the child before
/// releasing it.
pub(crate) fn owned() -> MutexGuard<'static, BTreeSet<ProcRef>> {
    OWNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The processes some live agent of this process already tracks (its known set), with how
/// many agents do: an orphan one agent knows is not another agent's to claim. Several agents
/// without a shim in one process share the orphans that reach it; this keeps each one's
/// known processes its own, and only an orphan nobody has seen yet is claimed by the first
/// agent to look.
static ATTRIBUTED: Mutex<BTreeMap<ProcRef, usize>> = Mutex::new(BTreeMap::new());

fn attributed() -> MutexGuard<'static, BTreeMap<ProcRef, usize>> {
    ATTRIBUTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Replaces one agent's entries in the record of attributed processes: `old` out, `new` in.
pub(crate) fn attribute(old: &[ProcRef], new: &[ProcRef]) {
    let mut record = attributed();
    for r in old {
        if let Some(count) = record.get_mut(r) {
            *count -= 1;
            if *count == 0 {
                record.remove(r);
            }
        }
    }
    for r in new {
        *record.entry(*r).or_insert(0) += 1;
    }
}

/// Records `pid` (a child just started, or a process being adopted) as owned.
pub(crate) fn own(record: &mut BTreeSet<ProcRef>, pid: i32) {
    // A child that is already gone and reaped has no start time to read, and needs no entry.
    if let Some(info) = NativeProcTable::new().process(pid) {
        record.insert(info.proc_ref());
    }
}

/// Makes the calling process a subreaper. Returns whether it is one.
pub(crate) fn become_subreaper() -> bool {
    let me = rustix::process::getpid();
    let _ = rustix::process::set_child_subreaper(Some(me));
    is_subreaper()
}

/// Whether the calling process is a subreaper (the mark stays once set, whoever set it).
pub(crate) fn is_subreaper() -> bool {
    rustix::process::child_subreaper().is_ok_and(|p| p.is_some())
}

/// The session of `self_pid`, from the snapshot; `None` when it is not there (a fake world
/// without the caller), in which case nothing can be proved adopted.
fn own_session(snapshot: &[ProcInfo], self_pid: i32) -> Option<i32> {
    snapshot.iter().find(|p| p.pid == self_pid).map(|p| p.sid)
}

/// The children of `self_pid` in `snapshot` (zombies included) that are adopted orphans: in
/// another session, not owned, not tracked by an agent.
fn candidates(snapshot: &[ProcInfo], self_pid: i32) -> impl Iterator<Item = &ProcInfo> + '_ {
    let sid = own_session(snapshot, self_pid);
    let mut owned = owned().clone();
    owned.extend(attributed().keys());
    snapshot.iter().filter(move |p| {
        sid.is_some_and(|sid| p.ppid == self_pid && p.sid != sid && !owned.contains(&p.proc_ref()))
    })
}

/// The live adopted orphans of `self_pid` in `snapshot` (taken before this call).
pub(crate) fn adopted(snapshot: &[ProcInfo], self_pid: i32) -> Vec<i32> {
    candidates(snapshot, self_pid)
        .filter(|p| !p.is_gone())
        .map(|p| p.pid)
        .collect()
}

/// Reaps the adopted orphans of this process that have exited, as seen in `snapshot` (taken
/// before this call). Returns how many were reaped.
pub(crate) fn reap(snapshot: &[ProcInfo]) -> usize {
    let self_pid = rustix::process::getpid().as_raw_nonzero().get();
    let zombies: Vec<i32> = candidates(snapshot, self_pid)
        .filter(|p| p.is_gone())
        .map(|p| p.pid)
        .collect();
    zombies
        .into_iter()
        .filter_map(rustix::process::Pid::from_raw)
        .filter(|&pid| {
            rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG)
                .is_ok_and(|r| r.is_some())
        })
        .count()
}

#[cfg(test)]
mod tests;
