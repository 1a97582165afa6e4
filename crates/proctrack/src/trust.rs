//! A ledger is evidence, not a command: the checks a run directory and its files pass before
//! `clean`, `ps` or `report` read anything from them, and the user whose power `clean` acts
//! with.
//!
//! A reports directory may have been written by anyone, including another user who wants
//! root's `clean` to signal or delete something of root's. So a run directory is opened
//! without following a link, and it, its `owner.lock` and its `pids.txt` must each be what
//! hyoka creates (a directory, regular files), owned by one user and writable by nobody else;
//! the ledger is read through the open directory, bounded in size. Whatever fails is refused
//! as a whole ([`ProcTrackError::Untrusted`]) and nothing read from it is acted on or shown.
//!
//! What passes is evidence *of that user's*: [`Authority`] is the directory's owner, and
//! `clean` acts with that user's power only. Run as root on another user's directory, it
//! filters what it attributes to processes that user may signal, and does its signalling,
//! its rewriting and (in `hyoka-eval`'s `clean_abandoned`) its removing on a thread whose credentials are that user's,
//! so the kernel itself refuses anything beyond them.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use serde::Serialize;

use crate::ProcTrackError;
use crate::evidence::{check_entry, read_bounded_at};
use crate::ledger::{Durability, LEDGER_FILE, ParsedLedger, write_atomic_at};
use crate::lock::{LOCK_FILE, LockState, OwnerLock};

/// The user a run directory belongs to: whose evidence its ledger is, and with whose power
/// `clean` acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Authority {
    /// The owner's user id.
    pub uid: u32,
    /// The owner's group id.
    pub gid: u32,
}

impl Authority {
    /// The owner of `path` (not following a link at `path`).
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when `path` cannot be inspected.
    pub fn of(path: &Path) -> Result<Self, ProcTrackError> {
        let stat =
            rustix::fs::lstat(path).map_err(|e| ProcTrackError::io("inspect", path, e.into()))?;
        Ok(Self {
            uid: stat.st_uid,
            gid: stat.st_gid,
        })
    }

    /// The user processes must belong to before they may be attributed to a run of this
    /// authority, when that is not implied by our own power: `Some(uid)` when the caller's
    /// effective user is not the owner (root acting for another user, or anyone acting on
    /// someone else's directory).
    pub fn user_filter(self) -> Option<u32> {
        (rustix::process::geteuid().as_raw() != self.uid).then_some(self.uid)
    }

    /// Runs `work` with this user's power only.
    ///
    /// When the caller is root and the owner is not, `work` runs on a thread of its own whose
    /// user and group ids (real, effective, saved, file system) are the owner's and whose
    /// supplementary groups are dropped: Linux keeps credentials per thread, so the rest of
    /// the process is untouched, and the kernel refuses every signal, write or removal the
    /// owner could not do (root's capabilities are gone on that thread). The thread ends with
    /// `work`. Otherwise `work` runs here, with the caller's own power.
    ///
    /// # Errors
    /// [`ProcTrackError::Task`] when the credentials cannot be switched (then `work` does not
    /// run at all) or the thread panics.
    pub fn run<T: Send>(self, work: impl FnOnce() -> T + Send) -> Result<T, ProcTrackError> {
        if !rustix::process::geteuid().is_root() || self.uid == 0 {
            return Ok(work());
        }
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    become_user(self)?;
                    Ok(work())
                })
                .join()
                .map_err(|_| ProcTrackError::Task {
                    reason: "the task acting for another user panicked".to_owned(),
                })?
        })
    }
}

/// Switches the calling thread (only it: raw system calls, not the libc wrappers that apply
/// them to every thread) to `who`'s credentials, for good.
fn become_user(who: Authority) -> Result<(), ProcTrackError> {
    let fail = |what: &str, e: rustix::io::Errno| ProcTrackError::Task {
        reason: format!("cannot {what} to act as user {}: {e}", who.uid),
    };
    let gid = rustix::process::Gid::from_raw(who.gid);
    let uid = rustix::process::Uid::from_raw(who.uid);
    rustix::thread::set_thread_groups(&[]).map_err(|e| fail("drop groups", e))?;
    rustix::thread::set_thread_res_gid(gid, gid, gid).map_err(|e| fail("set the group", e))?;
    rustix::thread::set_thread_res_uid(uid, uid, uid).map_err(|e| fail("set the user", e))?;
    Ok(())
}

/// A run directory that passed the checks, open: everything in it is reached through this
/// descriptor, never through its path again.
#[derive(Debug)]
pub(crate) struct RunDir {
    fd: OwnedFd,
    path: PathBuf,
    authority: Authority,
}

impl RunDir {
    /// Opens `path` (its last component must not be a link) and checks it.
    pub(crate) fn open(path: &Path) -> Result<Self, ProcTrackError> {
        let (parent, name) = split(path);
        let parent = rustix::fs::open(
            parent,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| ProcTrackError::io("open", parent, e.into()))?;
        let fd = rustix::fs::openat(
            &parent,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => ProcTrackError::Untrusted {
                path: path.to_owned(),
                reason: "is a symbolic link or not a directory".to_owned(),
            },
            e => ProcTrackError::io("open", path, e.into()),
        })?;
        let stat =
            rustix::fs::fstat(&fd).map_err(|e| ProcTrackError::io("inspect", path, e.into()))?;
        check_entry(&stat, path, true, None)?;
        Ok(Self {
            fd,
            path: path.to_owned(),
            authority: Authority {
                uid: stat.st_uid,
                gid: stat.st_gid,
            },
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn authority(&self) -> Authority {
        self.authority
    }

    /// Opens `owner.lock` (a regular file of the directory's owner, not a link) without
    /// creating it; `Ok(None)` when it is missing.
    fn open_lock(&self) -> Result<Option<std::fs::File>, ProcTrackError> {
        let path = self.path.join(LOCK_FILE);
        let fd = match rustix::fs::openat(
            &self.fd,
            LOCK_FILE,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => {
                return Err(ProcTrackError::Untrusted {
                    path,
                    reason: "is a symbolic link".to_owned(),
                });
            }
            Err(e) => return Err(ProcTrackError::io("open", path, e.into())),
        };
        let stat =
            rustix::fs::fstat(&fd).map_err(|e| ProcTrackError::io("inspect", &path, e.into()))?;
        check_entry(&stat, &path, false, Some(self.authority.uid))?;
        Ok(Some(std::fs::File::from(fd)))
    }

    /// Whether the run is live, without side effects (see [`OwnerLock::probe`]).
    pub(crate) fn probe(&self) -> Result<LockState, ProcTrackError> {
        match self.open_lock()? {
            None => Ok(LockState::Missing),
            Some(file) => OwnerLock::probe_file(&file, &self.path.join(LOCK_FILE)),
        }
    }

    /// Takes the owner lock for the duration of a clean; `Ok(None)` when the lock file is
    /// missing; [`ProcTrackError::RunLive`] when a live owner holds it.
    pub(crate) fn lock(&self) -> Result<Option<OwnerLock>, ProcTrackError> {
        self.open_lock()?
            .map(|file| OwnerLock::lock_file(file, &self.path.join(LOCK_FILE)))
            .transpose()
    }

    /// Reads and parses the ledger; `Ok(None)` when there is none.
    pub(crate) fn read_ledger(
        &self,
        self_pid: i32,
    ) -> Result<Option<ParsedLedger>, ProcTrackError> {
        let path = self.path.join(LEDGER_FILE);
        match read_bounded_at(
            self.fd.as_fd(),
            Path::new(LEDGER_FILE),
            &path,
            Some(self.authority.uid),
        ) {
            Ok(bytes) => Ok(Some(crate::Ledger::parse(&bytes, self_pid))),
            Err(ProcTrackError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Rewrites the ledger atomically inside this directory, keeping its owner and mode.
    pub(crate) fn write_ledger(&self, bytes: &[u8]) -> Result<(), ProcTrackError> {
        write_atomic_at(
            self.fd.as_fd(),
            &self.path,
            Path::new(LEDGER_FILE),
            |file| std::io::Write::write_all(file, bytes),
            Durability::Synced,
        )
    }
}

/// `path`'s parent (`.` for a bare name) and last component.
fn split(path: &Path) -> (&Path, &OsStr) {
    let name = path.file_name().unwrap_or(path.as_os_str());
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    (parent, name)
}

/// Reads a small file of a reports directory (`run.json`, a report) the way `clean` reads a
/// ledger: not following a link at `path`, not blocking on a FIFO or a device, refusing
/// anything but a regular file that no one but its owner may write, and at most `max` bytes.
///
/// # Errors
/// [`ProcTrackError::Untrusted`] for a link, a special file, a file others may write or one
/// larger than `max`; [`ProcTrackError::Io`] when it cannot be read.
pub fn read_reports_file(path: &Path, max: u64) -> Result<Vec<u8>, ProcTrackError> {
    let (parent, name) = split(path);
    let fd = rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| ProcTrackError::io("open", parent, e.into()))?;
    let bytes = read_bounded_at(fd.as_fd(), Path::new(name), path, None)?;
    if bytes.len() as u64 > max {
        return Err(ProcTrackError::Untrusted {
            path: path.to_owned(),
            reason: format!("is larger than {max} bytes"),
        });
    }
    Ok(bytes)
}

/// What a command does with a reports directory, for [`check_reports_dir`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportsUse {
    /// Only reads it (`clean`, `ps`): it must exist.
    Read,
    /// Writes runs into it (`run`, `respawn`): it may be created, and must be writable.
    Write,
}

/// Checks a reports directory before anything is created or read, so bad input is refused
/// up front (the CLI's exit status 2).
///
/// For [`ReportsUse::Read`] it must exist and be a directory. For [`ReportsUse::Write`] it
/// (or, when it does not exist yet, its nearest existing ancestor, where it will be created)
/// must be a directory this process may write and search, on a file system mounted
/// read-write that is not a kernel one (`/proc`, `/sys`, cgroup, …).
///
/// # Errors
/// [`ProcTrackError::ReportsDir`] saying what is wrong.
pub fn check_reports_dir(path: &Path, usage: ReportsUse) -> Result<(), ProcTrackError> {
    let refuse = |reason: &str| ProcTrackError::ReportsDir {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    let mut existing = path;
    loop {
        match std::fs::metadata(existing) {
            Ok(meta) if meta.is_dir() => break,
            Ok(_) if existing == path => return Err(refuse("is not a directory")),
            Ok(_) => return Err(refuse("cannot be created: a parent is not a directory")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if usage == ReportsUse::Read {
                    return Err(refuse("does not exist"));
                }
                existing = match existing.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(refuse("cannot be created: a parent is not a directory"));
            }
            Err(e) => return Err(refuse(&format!("cannot be inspected: {e}"))),
        }
    }
    if usage == ReportsUse::Read {
        return Ok(());
    }
    let fs =
        rustix::fs::statfs(existing).map_err(|e| refuse(&format!("cannot be inspected: {e}")))?;
    #[allow(
        clippy::useless_conversion,
        reason = "the type of `f_type` differs between architectures"
    )]
    let kind = i64::from(fs.f_type);
    if KERNEL_FILE_SYSTEMS.contains(&kind) {
        return Err(refuse("is on a kernel file system (such as /proc or /sys)"));
    }
    let vfs =
        rustix::fs::statvfs(existing).map_err(|e| refuse(&format!("cannot be inspected: {e}")))?;
    if vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY) {
        return Err(refuse("is on a read-only file system"));
    }
    rustix::fs::accessat(
        rustix::fs::CWD,
        existing,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
        rustix::fs::AtFlags::EACCESS,
    )
    .map_err(|e| refuse(&format!("is not writable: {e}")))?;
    Ok(())
}

/// `statfs` magic numbers of the file systems the kernel makes up (`linux/magic.h`): proc,
/// sysfs, cgroup v1 and v2, debugfs, tracefs, securityfs, pstore, bpf, configfs, efivarfs.
const KERNEL_FILE_SYSTEMS: [i64; 11] = [
    0x9fa0,
    0x6265_6572,
    0x0027_e0eb,
    0x6367_7270,
    0x6462_6720,
    0x7472_6163,
    0x7363_6673,
    0x6165_676c,
    0xcafe_4a11,
    0x6265_6570,
    0xde5e_81e4,
];

#[cfg(test)]
mod tests;
