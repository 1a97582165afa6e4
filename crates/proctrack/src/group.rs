//! A short command run as the leader of its own process group, with a timeout: a readiness
//! probe, an alert hook, an AI checker. Built on `process-wrap`'s [`ProcessGroup`] wrapper;
//! every signal to the group goes through the verified [`NativeSignaller`], through a member
//! whose identity is read from the process table right before, so a group whose processes
//! are all gone (and whose id may be reused) is never signalled.

use std::future::Future;
use std::process::ExitStatus;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

use crate::proc_table::{NativeProcTable, ProcTable as _};
use crate::signal::{Delivery, NativeSignaller, Signal, Signaller as _};

/// How often the group is looked at while it is given time to go.
const POLL: Duration = Duration::from_millis(20);

/// How long a SIGKILLed group is waited for (SIGKILL cannot be ignored: the kernel only has
/// to finish it).
const KILL_WAIT: Duration = Duration::from_secs(2);

/// How a [`GroupChild`] ended, from [`GroupChild::wait_within`].
#[derive(Debug)]
pub enum GroupExit {
    /// The leader exited with this status (other members of its group may still run:
    /// [`GroupChild::stop`] or dropping the child ends them).
    Exited(ExitStatus),
    /// The leader ran past the timeout; it still runs until stopped or dropped.
    TimedOut,
    /// The caller's cancel future completed first.
    Cancelled,
    /// Waiting for the leader failed.
    Failed(std::io::Error),
}

/// A command running as the leader of a new process group. Dropping it SIGKILLs whatever
/// is left of the group (synchronously, without waiting), so a cancelled, timed-out or
/// finished command leaves nothing behind.
#[derive(Debug)]
pub struct GroupChild {
    child: Box<dyn ChildWrapper>,
    pgid: Option<i32>,
}

impl GroupChild {
    /// Spawns `command` as the leader of a new process group (its standard streams as the
    /// command sets them; the leader is also killed when the handle is dropped).
    ///
    /// # Errors
    /// The error of spawning the program.
    pub fn spawn(mut command: Command) -> std::io::Result<Self> {
        command.kill_on_drop(true);
        let mut wrapped = CommandWrap::from(command);
        wrapped.wrap(ProcessGroup::leader());
        let child = wrapped.spawn()?;
        let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
        Ok(Self { child, pgid })
    }

    /// The group's id (the leader's pid), while the leader has not been reaped.
    pub fn pgid(&self) -> Option<u32> {
        self.pgid.and_then(|p| u32::try_from(p).ok())
    }

    /// The leader's stdin, if piped and not taken yet.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin().take()
    }

    /// The leader's stdout, if piped and not taken yet.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout().take()
    }

    /// The leader's stderr, if piped and not taken yet.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr().take()
    }

    /// Waits for the leader to exit, for at most `timeout`, or until `cancel` completes.
    pub async fn wait_within(
        &mut self,
        timeout: Duration,
        cancel: impl Future<Output = ()>,
    ) -> GroupExit {
        tokio::select! {
            waited = tokio::time::timeout(timeout, self.child.wait()) => match waited {
                Ok(Ok(status)) => GroupExit::Exited(status),
                Ok(Err(err)) => GroupExit::Failed(err),
                Err(_) => GroupExit::TimedOut,
            },
            () = cancel => GroupExit::Cancelled,
        }
    }

    /// Stops the whole group: `signal` to it, up to `grace` for every member to go, then
    /// SIGKILL to what is left (at once when `grace` is zero), and the leader reaped.
    pub async fn stop(&mut self, signal: Signal, grace: Duration) {
        if self.signal(signal) {
            let gone = tokio::time::timeout(grace, self.gone()).await.is_ok();
            if !gone && self.signal(Signal::Kill) {
                let _ = tokio::time::timeout(KILL_WAIT, self.gone()).await;
            }
        }
        let _ = tokio::time::timeout(KILL_WAIT, self.child.wait()).await;
    }

    /// Sends `signal` to the group through one of its live members, verified; whether it
    /// was sent.
    fn signal(&self, signal: Signal) -> bool {
        let Some(pgid) = self.pgid else { return false };
        let signaller = NativeSignaller::new();
        live_members(pgid)
            .into_iter()
            .any(|member| matches!(signaller.signal_group(member, pgid, signal), Delivery::Sent))
    }

    /// Completes when no member of the group is alive.
    async fn gone(&self) {
        let Some(pgid) = self.pgid else { return };
        while !live_members(pgid).is_empty() {
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.signal(Signal::Kill);
    }
}

/// The live (not zombie) processes of group `pgid`, as the process table shows them now.
fn live_members(pgid: i32) -> Vec<crate::ProcRef> {
    NativeProcTable::new()
        .snapshot()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.pgid == pgid && !p.is_gone())
        .map(|p| p.proc_ref())
        .collect()
}

#[cfg(test)]
mod tests;
