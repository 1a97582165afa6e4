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
        let proc_dir = open_proc()?;
        let map = |e: rustix::io::Errno| ProcTrackError::ProcTable {
            path: "/proc".into(),
            source: e.into(),
        };
        let mut dir = Dir::read_from(&proc_dir).map_err(map)?;
        let mut buf = [0u8; STAT_BUF];
        let mut out = Vec::with_capacity(256);
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(map)?;
            let Some(pid) = std::str::from_utf8(entry.file_name().to_bytes())
                .ok()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            if let Some(info) = read_stat_at(&proc_dir, pid, &mut buf) {
                out.push(info);
            }
        }
        Ok(out)
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
