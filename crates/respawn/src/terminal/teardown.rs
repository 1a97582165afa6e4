//! Stopping an agent's process group: a signal, a grace period, then SIGKILL.
//!
//! A terminal's own stop, for a session that is not supervised: it relies on the agent being
//! the leader of its own session and process group (the PTY backend makes it so, tmux does
//! the same for a pane), refuses pid ≤ 1 and our own group, and judges the group gone when
//! `hyoka-proctrack`'s process table shows no live (non-zombie) member of it. A supervised
//! [`Session`](crate::Session) then stops the whole tree through `hyoka-proctrack`'s
//! verified teardown.

use std::time::Duration;

use hyoka_proctrack::{NativeProcTable, ProcTable};
use rustix::process::{Pid, Signal as RawSignal, getpgrp, kill_process_group};

use hyoka_proctrack::Signal;

/// How often the group is looked at during the grace period.
const POLL: Duration = Duration::from_millis(20);

/// A process group we may signal: `pgid > 1` and not our own.
pub(crate) fn signalable(pgid: u32) -> Option<Pid> {
    let group = Pid::from_raw(i32::try_from(pgid).ok()?)?;
    (pgid > 1 && getpgrp() != group).then_some(group)
}

/// `true` while some process of group `pgid` is alive and not a zombie.
pub(crate) fn group_alive(pgid: u32) -> bool {
    let Ok(processes) = NativeProcTable::new().snapshot() else {
        // Without /proc, ask the kernel (zombies count as alive there).
        return signalable(pgid)
            .is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok());
    };
    processes
        .iter()
        .any(|p| u32::try_from(p.pgid) == Ok(pgid) && !p.is_gone())
}

/// Sends `signal` to group `pgid`, waits up to `grace` for it to go, then SIGKILLs what is
/// left. Does nothing for a group we may not signal. With a zero grace, SIGKILL follows at
/// once.
pub(crate) async fn stop_group(pgid: u32, signal: Signal, grace: Duration) {
    let Some(group) = signalable(pgid) else {
        return;
    };
    let signal = RawSignal::from_named_raw(signal.as_raw()).unwrap_or(RawSignal::KILL);
    if kill_process_group(group, signal).is_err() {
        // Nobody left to signal.
        return;
    }
    let wait = async {
        while group_alive(pgid) {
            tokio::time::sleep(POLL).await;
        }
    };
    if grace.is_zero() || tokio::time::timeout(grace, wait).await.is_err() {
        let _ = kill_process_group(group, RawSignal::KILL);
        // SIGKILL cannot be ignored; give the kernel a moment to finish the group.
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while group_alive(pgid) {
                tokio::time::sleep(POLL).await;
            }
        })
        .await;
    }
}

/// The synchronous last resort for `Drop`: SIGKILL to the group, no waiting.
pub(crate) fn kill_group_now(pgid: u32) {
    if let Some(group) = signalable(pgid) {
        let _ = kill_process_group(group, RawSignal::KILL);
    }
}
