//! The signalling seam: identity-verified delivery to one process or one process group.

use std::os::fd::{AsRawFd, OwnedFd};

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags};
use serde::Serialize;

use crate::identity::ProcRef;
use crate::proc_table::{NativeProcTable, ProcTable};

/// The signals teardown uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Signal {
    /// `SIGTERM`: please exit.
    Term,
    /// `SIGKILL`: exit now.
    Kill,
}

impl Signal {
    /// The signal number.
    pub fn as_raw(self) -> i32 {
        match self {
            Self::Term => libc::SIGTERM,
            Self::Kill => libc::SIGKILL,
        }
    }

    fn rustix(self) -> rustix::process::Signal {
        match self {
            Self::Term => rustix::process::Signal::TERM,
            Self::Kill => rustix::process::Signal::KILL,
        }
    }
}

/// Why a signal was refused before any system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Refusal {
    /// The pid or process group id is 1 or lower (init, "every process", or nonsense).
    LowPid,
    /// The target is the calling process.
    OwnPid,
    /// The target is the calling process's own process group.
    OwnGroup,
}

/// What happened to one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// The kernel accepted the signal for the verified process (or group).
    Sent,
    /// The process no longer exists, or is a zombie: it is gone.
    Gone,
    /// The pid now names a different process (another start time), or the group member moved
    /// to another group: nothing was sent.
    Mismatch,
    /// The target was refused by policy; nothing was sent.
    Refused(Refusal),
    /// The system call failed with this errno (for example `EPERM`).
    Failed(i32),
}

/// Sends signals only to processes whose identity is re-verified immediately before.
///
/// Implementations: [`NativeSignaller`] (pidfd based) and, behind the `mock` feature,
/// `FakeSystem` and the `mockall` mock `MockSignaller`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait Signaller: Send + Sync {
    /// Sends `signal` to `target` if, at the moment of sending, the pid still has the recorded
    /// start time and is not a zombie.
    fn signal(&self, target: ProcRef, signal: Signal) -> Delivery;

    /// Sends `signal` to the process group `pgid`, through `member`, which must still be the
    /// recorded process and still belong to `pgid`.
    fn signal_group(&self, member: ProcRef, pgid: i32, signal: Signal) -> Delivery;
}

/// The policy every signaller applies before any system call: never pid ≤ 1, never ourselves,
/// never our own process group.
pub fn refusal(pid: i32, pgid: Option<i32>, self_pid: i32, self_pgid: i32) -> Option<Refusal> {
    if pid <= 1 || pgid.is_some_and(|g| g <= 1) {
        Some(Refusal::LowPid)
    } else if pid == self_pid {
        Some(Refusal::OwnPid)
    } else if pgid == Some(self_pgid) {
        Some(Refusal::OwnGroup)
    } else {
        None
    }
}

/// The real signaller.
///
/// It opens a pidfd on the target first and only then re-reads its start time, so the
/// signal provably reaches the verified process even if the pid is reused a moment later.
/// A group is signalled through its verified leader's pidfd with
/// `PIDFD_SIGNAL_PROCESS_GROUP` (Linux ≥ 6.9), which is equally race-free; when the leader is
/// gone (or the kernel is older) it falls back to `killpg` right after verifying a live
/// member, which leaves only the window of that member exiting in between.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeSignaller {
    table: NativeProcTable,
}

impl NativeSignaller {
    /// A signaller over the real process table.
    pub fn new() -> Self {
        Self::default()
    }
}

enum Pinned {
    /// A pidfd was opened and the start time verified after it.
    Fd(OwnedFd),
    /// pidfds are unsupported; the start time was verified just now.
    NoPidfd,
}

/// `PIDFD_SIGNAL_PROCESS_GROUP` from `<linux/pidfd.h>`.
const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 4;

impl NativeSignaller {
    fn pin(self, target: ProcRef, pgid: Option<i32>) -> Result<(Pinned, i32), Delivery> {
        let pid = Pid::from_raw(target.pid).ok_or(Delivery::Refused(Refusal::LowPid))?;
        let pinned = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => Pinned::Fd(fd),
            Err(Errno::SRCH) => return Err(Delivery::Gone),
            Err(Errno::NOSYS) => Pinned::NoPidfd,
            Err(e) => return Err(Delivery::Failed(e.raw_os_error())),
        };
        let info = self.table.process(target.pid).ok_or(Delivery::Gone)?;
        if info.start_ticks != target.start_ticks {
            return Err(Delivery::Mismatch);
        }
        if info.is_gone() {
            return Err(Delivery::Gone);
        }
        if pgid.is_some_and(|g| g != info.pgid) {
            return Err(Delivery::Mismatch);
        }
        Ok((pinned, info.pgid))
    }
}

fn outcome(result: rustix::io::Result<()>) -> Delivery {
    match result {
        Ok(()) => Delivery::Sent,
        Err(Errno::SRCH) => Delivery::Gone,
        Err(e) => Delivery::Failed(e.raw_os_error()),
    }
}

impl Signaller for NativeSignaller {
    fn signal(&self, target: ProcRef, signal: Signal) -> Delivery {
        if let Some(r) = refusal(target.pid, None, self.table.self_pid(), -1) {
            return Delivery::Refused(r);
        }
        match self.pin(target, None) {
            Ok((Pinned::Fd(fd), _)) => {
                outcome(rustix::process::pidfd_send_signal(&fd, signal.rustix()))
            }
            Ok((Pinned::NoPidfd, _)) => outcome(rustix::process::kill_process(
                Pid::from_raw(target.pid).expect("checked above"),
                signal.rustix(),
            )),
            Err(d) => d,
        }
    }

    fn signal_group(&self, member: ProcRef, pgid: i32, signal: Signal) -> Delivery {
        let (self_pid, self_pgid) = (self.table.self_pid(), self.table.self_pgid());
        if let Some(r) = refusal(member.pid, Some(pgid), self_pid, self_pgid) {
            return Delivery::Refused(r);
        }
        let (pinned, _) = match self.pin(member, Some(pgid)) {
            Ok(p) => p,
            Err(d) => return d,
        };
        if let Pinned::Fd(fd) = &pinned
            && member.pid == pgid
        {
            // SAFETY: `pidfd_send_signal(2)` with a valid pidfd we own, a valid signal number,
            // a null `siginfo` pointer (the kernel fills it in) and a flag it may reject with
            // EINVAL, which we handle by falling back below.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    signal.as_raw(),
                    std::ptr::null::<libc::siginfo_t>(),
                    PIDFD_SIGNAL_PROCESS_GROUP,
                )
            };
            if rc == 0 {
                return Delivery::Sent;
            }
            match Errno::from_io_error(&std::io::Error::last_os_error()) {
                Some(Errno::INVAL | Errno::NOSYS) => {}
                Some(Errno::SRCH) => return Delivery::Gone,
                Some(e) => return Delivery::Failed(e.raw_os_error()),
                None => return Delivery::Failed(0),
            }
        }
        let group = Pid::from_raw(pgid).expect("checked above");
        outcome(rustix::process::kill_process_group(group, signal.rustix()))
    }
}

/// Gives a child about to exec the signal state a fresh process has: nothing blocked (the
/// shim blocks the signals it waits for, and a mask survives exec) and SIGPIPE at its default
/// (Rust runtimes ignore it, and an ignored disposition survives exec too).
///
/// Async-signal-safe: for use between fork and exec.
pub(crate) fn reset_signal_state() {
    // SAFETY: `sigemptyset`, `pthread_sigmask` and `signal` are async-signal-safe; the set is a
    // local, initialised before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const set, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
