//! The owner lock `reports/<run_id>/owner.lock`: a run is live exactly while it is held.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::ProcTrackError;

/// The lock file's name inside a run directory.
pub const LOCK_FILE: &str = "owner.lock";

/// An exclusive `flock` on a run's `owner.lock`, held until dropped.
///
/// The kernel releases it when the holder dies, however it dies, so liveness never needs a pid
/// check. The descriptor is close-on-exec (std's default, asserted at acquisition), so no agent
/// process inherits it: a surviving daemon cannot keep a dead run looking live.
#[derive(Debug)]
pub struct OwnerLock {
    file: File,
    path: PathBuf,
}

/// What a probe of a run's owner lock found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockState {
    /// Some process holds the lock: the run is live and must not be touched.
    Live,
    /// The lock file exists and nobody holds it: the owner is gone.
    Abandoned,
    /// There is no lock file.
    Missing,
}

impl OwnerLock {
    /// Creates (if needed) and locks `path` for the lifetime of a run.
    ///
    /// # Errors
    /// [`ProcTrackError::RunLive`] when another process holds it, [`ProcTrackError::Io`]
    /// otherwise.
    ///
    /// A new lock file gets mode 0644 whatever the umask: `clean` refuses a lock file others
    /// may write.
    pub fn acquire(path: &Path) -> Result<Self, ProcTrackError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .create(true)
            .append(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| ProcTrackError::io("create", path, e))?;
        Self::lock_file(file, path)
    }

    /// Locks an existing `path` without creating it (for `clean`, which must not create
    /// files in a directory it only inspects). `Ok(None)` means the file is missing.
    ///
    /// # Errors
    /// [`ProcTrackError::RunLive`] when another process holds it, [`ProcTrackError::Io`]
    /// otherwise.
    pub fn acquire_existing(path: &Path) -> Result<Option<Self>, ProcTrackError> {
        match File::open(path) {
            Ok(file) => Self::lock_file(file, path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ProcTrackError::io("open", path, e)),
        }
    }

    /// Locks an open lock file (opened and checked by the caller).
    pub(crate) fn lock_file(file: File, path: &Path) -> Result<Self, ProcTrackError> {
        let flags = rustix::io::fcntl_getfd(&file)
            .map_err(|e| ProcTrackError::io("inspect", path, e.into()))?;
        if !flags.contains(rustix::io::FdFlags::CLOEXEC) {
            rustix::io::fcntl_setfd(&file, flags | rustix::io::FdFlags::CLOEXEC)
                .map_err(|e| ProcTrackError::io("set close-on-exec on", path, e.into()))?;
        }
        match file.try_lock() {
            Ok(()) => Ok(Self {
                file,
                path: path.to_owned(),
            }),
            Err(TryLockError::WouldBlock) => Err(ProcTrackError::RunLive {
                path: path.to_owned(),
            }),
            Err(TryLockError::Error(e)) => Err(ProcTrackError::io("lock", path, e)),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tells whether the run owning `path` is live, without pids and without side effects:
    /// a shared lock is tried and released at once, and a missing file is not created.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when the file exists but cannot be opened or locked.
    pub fn probe(path: &Path) -> Result<LockState, ProcTrackError> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockState::Missing),
            Err(e) => return Err(ProcTrackError::io("open", path, e)),
        };
        Self::probe_file(&file, path)
    }

    /// [`OwnerLock::probe`] of an open lock file (opened and checked by the caller).
    pub(crate) fn probe_file(file: &File, path: &Path) -> Result<LockState, ProcTrackError> {
        match file.try_lock_shared() {
            Ok(()) => {
                let _ = file.unlock();
                Ok(LockState::Abandoned)
            }
            Err(TryLockError::WouldBlock) => Ok(LockState::Live),
            Err(TryLockError::Error(e)) => Err(ProcTrackError::io("probe lock", path, e)),
        }
    }
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests;
