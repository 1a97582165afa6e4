//! Stopping an agent's process group: a signal, a grace period, then SIGKILL.
//!
//! This is the small stand-in for `hyoka-proctrack`'s verified teardown: it relies on the
//! agent being the leader of its own session and process group (the PTY backend makes it
//! so, tmux does the same for a pane), refuses pid ≤ 1 and our own group, and judges the
//! group gone when `/proc` shows no live (non-zombie) member of it.

use std::time::Duration;

use rustix::process::{Pid, Signal as RawSignal, getpgrp, kill_process_group};

use super::Signal;

/// How often the group is looked at during the grace period.
const POLL: Duration = Duration::from_millis(20);

/// A process group we may signal: `pgid > 1` and not our own.
pub(crate) fn signalable(pgid: u32) -> Option<Pid> {
    let group = Pid::from_raw(i32::try_from(pgid).ok()?)?;
    (pgid > 1 && getpgrp() != group).then_some(group)
}

/// `true` while some process of group `pgid` is alive and not a zombie.
pub(crate) fn group_alive(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // Without /proc, ask the kernel (zombies count as alive there).
        return signalable(pgid)
            .is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok());
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(proc_id) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{proc_id}/stat")) else {
            return false;
        };
        // Fields after the last `)`: state, ppid, pgrp, …
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
        group == Some(pgid) && !matches!(state, Some("Z" | "X"))
    })
}

/// Sends `signal` to group `pgid`, waits up to `grace` for it to go, then SIGKILLs what is
/// left. Does nothing for a group we may not signal. With a zero grace, SIGKILL follows at
/// once.
pub(crate) async fn stop_group(pgid: u32, signal: Signal, grace: Duration) {
    let Some(group) = signalable(pgid) else {
        return;
    };
    if kill_process_group(group, signal.to_rustix()).is_err() {
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
