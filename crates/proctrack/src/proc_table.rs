//! The process-table seam: a snapshot of `/proc`, one process, an environment lookup.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::OnceLock;

use rustix::fs::{Dir, Mode, OFlags};

use crate::ProcTrackError;
use crate::identity::{BootId, ProcInfo, parse_stat};

/// Where the process table comes from.
///
/// Implementations: [`NativeProcTable`] (a direct `/proc` scan, about 13 µs per process) and,
/// behind the `mock` feature, `FakeSystem` (in memory) and the `mockall` mock
/// `MockProcTable`. Discovery and teardown decide only from what this trait returns, so they
/// can be tested without real processes.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait ProcTable: Send + Sync {
    /// The current boot id.
    fn boot_id(&self) -> Result<BootId, ProcTrackError>;

    /// Every process right now (threads excluded). Processes that exit while the table is read
    /// are simply missing.
    fn snapshot(&self) -> Result<Vec<ProcInfo>, ProcTrackError>;

    /// One process, or `None` if no process has this pid.
    fn process(&self, pid: i32) -> Option<ProcInfo>;

    /// The process's initial environment (`NAME=value` entries separated by NUL bytes), or
    /// `None` when it cannot be read (gone, kernel thread, not permitted).
    fn environ(&self, pid: i32) -> Option<Vec<u8>>;

    /// The process's real and saved user ids (the ones the kernel compares when one user
    /// signals another's process), or `None` when it cannot be read.
    fn uids(&self, pid: i32) -> Option<Uids>;

    /// The pid of the calling process (the one that must never be signalled).
    fn self_pid(&self) -> i32;

    /// The process group of the calling process (never signalled either).
    fn self_pgid(&self) -> i32;
}

/// A process's real and saved user ids, from the `Uid:` line of `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Uids {
    /// The real user id.
    pub real: u32,
    /// The saved set-user-id.
    pub saved: u32,
}

impl Uids {
    /// Whether a process of user `uid` (real and effective) may signal this one: the kernel's
    /// rule is that the sender's real or effective id equals the target's real or saved id.
    pub fn signalable_by(self, uid: u32) -> bool {
        self.real == uid || self.saved == uid
    }
}

/// Parses the `Uid:` line of `/proc/<pid>/status` (real, effective, saved, file system).
pub(crate) fn parse_status_uids(status: &str) -> Option<Uids> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_ascii_whitespace().map(str::parse::<u32>);
    let real = ids.next()?.ok()?;
    let _effective = ids.next()?.ok()?;
    let saved = ids.next()?.ok()?;
    Some(Uids { real, saved })
}

/// The real process table: direct reads of `/proc`, no `sysinfo` refresh.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeProcTable {
    _private: (),
}

impl NativeProcTable {
    /// A handle on `/proc` (cheap; holds nothing open).
    pub fn new() -> Self {
        Self { _private: () }
    }

    /// The processes whose pid `keep` accepts, each `stat` read only for them (the listing of
    /// `/proc` is cheap; reading a process's `stat` is what costs); and how many processes the
    /// listing named in all.
    pub(crate) fn snapshot_where(
        keep: impl Fn(i32) -> bool,
    ) -> Result<(Vec<ProcInfo>, usize), ProcTrackError> {
        let proc_dir = open_proc()?;
        let map = |e: rustix::io::Errno| ProcTrackError::ProcTable {
            path: "/proc".into(),
            source: e.into(),
        };
        let mut dir = Dir::read_from(&proc_dir).map_err(map)?;
        let mut buf = [0u8; STAT_BUF];
        let mut out = Vec::with_capacity(256);
        let mut listed = 0;
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(map)?;
            let Some(pid) = std::str::from_utf8(entry.file_name().to_bytes())
                .ok()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            listed += 1;
            if keep(pid)
                && let Some(info) = read_stat_at(&proc_dir, pid, &mut buf)
            {
                out.push(info);
            }
        }
        Ok((out, listed))
    }
}

/// Where the kernel's pid allocation stood at one moment: the last pid it gave out
/// (`/proc/loadavg`) and how many processes and threads were created since boot
/// (`processes` in `/proc/stat`). Two marks bound the pids given out between them: they lie
/// after the first mark's pid, up to the second's, around the wrap at `pid_max` (see
/// [`PidMark::created_since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PidMark {
    last_pid: i32,
    forks: u64,
    /// Processes and threads that exist (`/proc/loadavg`'s total).
    tasks: u64,
}

impl PidMark {
    /// The mark now, or `None` when `/proc` does not say.
    pub(crate) fn now() -> Option<Self> {
        let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
        let mut fields = loadavg.split_ascii_whitespace().skip(3);
        let tasks = fields.next()?.split_once('/')?.1.parse().ok()?;
        let last_pid = fields.next()?.parse().ok()?;
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let forks = stat
            .lines()
            .find_map(|l| l.strip_prefix("processes "))?
            .trim()
            .parse()
            .ok()?;
        Some(Self {
            last_pid,
            forks,
            tasks,
        })
    }

    /// A test for "this pid may have been given out after `self` and up to `later`", or
    /// `None` when the allocator may have gone all the way round in between (then any pid
    /// may be new): that takes `pid_max` allocations less the pids in use, and fewer than
    /// half of `pid_max` allocations (`forks` counts threads too) with fewer than half of
    /// the pids in use cannot.
    pub(crate) fn created_since(self, later: Self) -> Option<impl Fn(i32) -> bool> {
        window(self, later, pid_max()?)
    }

    /// The pids given out after `self` and up to `later`, in order, when they are at most
    /// `limit` (each of them is then worth reading directly instead of listing `/proc`).
    /// Thread ids are among them: `/proc/<tid>/stat` answers for a thread too.
    pub(crate) fn pids_since(self, later: Self, limit: usize) -> Option<Vec<i32>> {
        span(self, later, pid_max()?, limit)
    }
}

/// [`PidMark::pids_since`] for a given `pid_max` (pids run from 1 to `pid_max - 1`; after a
/// wrap they restart above the kernel's reserved ones, and counting from 1 over-covers,
/// which is harmless).
fn span(before: PidMark, later: PidMark, pid_max: i32, limit: usize) -> Option<Vec<i32>> {
    let _bounded = window(before, later, pid_max)?;
    let count = if later.last_pid >= before.last_pid {
        later.last_pid - before.last_pid
    } else {
        (pid_max - 1 - before.last_pid) + later.last_pid
    };
    if usize::try_from(count).ok()? > limit {
        return None;
    }
    let pids = (1..=count)
        .map(|i| {
            let pid = before.last_pid + i;
            if pid >= pid_max {
                pid - pid_max + 1
            } else {
                pid
            }
        })
        .collect();
    Some(pids)
}

/// [`PidMark::created_since`] for a given `pid_max`.
fn window(before: PidMark, later: PidMark, pid_max: i32) -> Option<impl Fn(i32) -> bool> {
    let made = later.forks.checked_sub(before.forks)?;
    let half = u64::try_from(pid_max / 2).ok()?;
    if made >= half || later.tasks >= half {
        return None;
    }
    let (after, upto) = (before.last_pid, later.last_pid);
    Some(move |pid: i32| {
        if after <= upto {
            pid > after && pid <= upto
        } else {
            // Wrapped: the allocator went on past `after` to `pid_max` and started again.
            pid > after || pid <= upto
        }
    })
}

/// `/proc/sys/kernel/pid_max`, read once.
fn pid_max() -> Option<i32> {
    static PID_MAX: OnceLock<Option<i32>> = OnceLock::new();
    *PID_MAX.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()?
            .trim()
            .parse()
            .ok()
    })
}

const STAT_BUF: usize = 1024;
/// `/proc/<pid>/status` puts the `Uid:` line within its first kilobyte; a bigger buffer
/// reads the whole file (about 1.5 KiB).
const STATUS_BUF: usize = 4096;

fn read_at(dir: impl AsFd, path: &CStr, buf: &mut [u8]) -> Option<usize> {
    let fd: OwnedFd =
        rustix::fs::openat(dir, path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut len = 0;
    while len < buf.len() {
        match rustix::io::read(&fd, &mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    Some(len)
}

fn stat_path<'a>(prefix: &str, pid: i32, out: &'a mut [u8; 32]) -> &'a CStr {
    file_path(prefix, pid, "/stat", out)
}

fn file_path<'a>(prefix: &str, pid: i32, file: &str, out: &'a mut [u8; 32]) -> &'a CStr {
    use std::io::Write as _;
    let mut cursor = io::Cursor::new(&mut out[..]);
    // A pid has at most 10 digits, so `/proc/<pid>/status` always fits with its NUL.
    let _ = write!(cursor, "{prefix}{pid}{file}\0");
    let end = usize::try_from(cursor.position()).unwrap_or(0);
    CStr::from_bytes_with_nul(&out[..end]).unwrap_or(c"")
}

fn read_stat_at(proc_dir: impl AsFd, pid: i32, buf: &mut [u8; STAT_BUF]) -> Option<ProcInfo> {
    let mut path = [0u8; 32];
    let len = read_at(proc_dir, stat_path("", pid, &mut path), buf)?;
    let text = std::str::from_utf8(&buf[..len]).ok()?;
    parse_stat(text).filter(|info| info.pid == pid)
}

fn open_proc() -> Result<OwnedFd, ProcTrackError> {
    rustix::fs::open(
        "/proc",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| ProcTrackError::ProcTable {
        path: "/proc".into(),
        source: e.into(),
    })
}

impl ProcTable for NativeProcTable {
    fn boot_id(&self) -> Result<BootId, ProcTrackError> {
        static BOOT_ID: OnceLock<BootId> = OnceLock::new();
        if let Some(id) = BOOT_ID.get() {
            return Ok(id.clone());
        }
        let path = "/proc/sys/kernel/random/boot_id";
        let text = std::fs::read_to_string(path).map_err(|source| ProcTrackError::ProcTable {
            path: path.into(),
            source,
        })?;
        let id = BootId::new(&text)?;
        Ok(BOOT_ID.get_or_init(|| id).clone())
    }

    fn snapshot(&self) -> Result<Vec<ProcInfo>, ProcTrackError> {
        Self::snapshot_where(|_| true).map(|(all, _)| all)
    }

    fn process(&self, pid: i32) -> Option<ProcInfo> {
        if pid <= 0 {
            return None;
        }
        // One `open` of the absolute path: this is the hot call of teardown's polling.
        let mut path = [0u8; 32];
        let mut buf = [0u8; STAT_BUF];
        let len = read_at(
            rustix::fs::CWD,
            stat_path("/proc/", pid, &mut path),
            &mut buf,
        )?;
        let text = std::str::from_utf8(&buf[..len]).ok()?;
        parse_stat(text).filter(|info| info.pid == pid)
    }

    fn environ(&self, pid: i32) -> Option<Vec<u8>> {
        if pid <= 0 {
            return None;
        }
        std::fs::read(format!("/proc/{pid}/environ")).ok()
    }

    fn uids(&self, pid: i32) -> Option<Uids> {
        if pid <= 0 {
            return None;
        }
        let mut path = [0u8; 32];
        let mut buf = [0u8; STATUS_BUF];
        let len = read_at(
            rustix::fs::CWD,
            file_path("/proc/", pid, "/status", &mut path),
            &mut buf,
        )?;
        parse_status_uids(&String::from_utf8_lossy(&buf[..len]))
    }

    fn self_pid(&self) -> i32 {
        rustix::process::getpid().as_raw_nonzero().get()
    }

    fn self_pgid(&self) -> i32 {
        rustix::process::getpgrp().as_raw_nonzero().get()
    }
}

/// Whether the NUL-separated environment block `environ` holds exactly the entry `entry`.
pub(crate) fn environ_has(environ: &[u8], entry: &[u8]) -> bool {
    environ.split(|&b| b == 0).any(|e| e == entry)
}

#[cfg(test)]
mod tests {
    use super::{PidMark, span, window};

    fn mark(last_pid: i32, forks: u64, tasks: u64) -> PidMark {
        PidMark {
            last_pid,
            forks,
            tasks,
        }
    }

    #[test]
    fn pids_given_out_between_two_marks_are_the_ones_after_the_first_up_to_the_second() {
        let young = window(mark(1000, 50, 100), mark(1010, 60, 100), 32_768).expect("bounded");
        assert!(!young(1000), "the first mark's own pid is older");
        assert!(young(1001) && young(1010));
        assert!(!young(1011) && !young(999) && !young(300));
    }

    #[test]
    fn a_window_across_pid_max_wraps_round() {
        let young = window(mark(32_760, 50, 100), mark(310, 70, 100), 32_768).expect("bounded");
        assert!(young(32_761) && young(32_767) && young(300) && young(310));
        assert!(!young(32_760) && !young(311) && !young(20_000));
    }

    #[test]
    fn a_short_window_lists_its_pids_and_a_long_one_does_not() {
        assert_eq!(
            span(mark(1000, 50, 100), mark(1004, 54, 100), 32_768, 16),
            Some(vec![1001, 1002, 1003, 1004])
        );
        assert_eq!(
            span(mark(32_766, 50, 100), mark(2, 54, 100), 32_768, 16),
            Some(vec![32_767, 1, 2])
        );
        assert_eq!(
            span(mark(1000, 50, 100), mark(1100, 54, 100), 32_768, 16),
            None
        );
        assert_eq!(
            span(mark(1000, 50, 100), mark(1000, 50, 100), 32_768, 16),
            Some(vec![])
        );
    }

    #[test]
    fn no_window_when_the_allocator_may_have_gone_all_the_way_round() {
        // Half of pid_max allocations could have lapped the pids in use.
        assert!(window(mark(1000, 50, 100), mark(1010, 50 + 16_384, 100), 32_768).is_none());
        // So could fewer, with most pids in use.
        assert!(window(mark(1000, 50, 100), mark(1010, 60, 16_384), 32_768).is_none());
        // A counter that went back (another boot, a forged file) proves nothing.
        assert!(window(mark(1000, 50, 100), mark(1010, 40, 100), 32_768).is_none());
    }
}
