//! The session registry: where every controller registers its session, so that `hyoka
//! sessions`, `wait`, `send` and `respawn --stop` can find and talk to it.
//!
//! A per-user directory (mode 0700, owned by the user, never a link; `Registry::open`
//! refuses anything else) holds one entry per session, `<name>/`, with two files: `lock`,
//! which the controller holds an exclusive `flock` on for as long as it runs (the kernel
//! drops it however the controller dies, so liveness never needs a pid), and `sock`, the
//! controller's control socket (one JSON request and one JSON reply per connection,
//! `control.rs`).
//!
//! Nothing in the directory is trusted for being there. A name outside the name grammar is
//! ignored; so is an entry that is a link, not a directory, or not the user's. A `lock` that
//! is not a regular file of the user's (a FIFO, a link, a device) makes the entry unusable,
//! and it is neither opened for reading nor removed. An entry whose lock nobody holds is
//! stale (its controller died): the sweep removes exactly its `sock` (only if it is a
//! socket) and `lock`, through the entry's directory descriptor without following links,
//! while holding the lock, then the directory if that left it empty. A client connects only
//! to a `sock` that is a socket of the user's in a live entry, and checks that the process
//! answering is the user's (`SO_PEERCRED`) and names the session it was asked for.

mod control;

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};

use crate::error::RespawnError;

pub(crate) use self::control::{ControlServer, SessionInfo};
pub use self::control::{EvidenceLine, SessionStatus, TmuxTarget, WaitOutcome};

/// The lock file of an entry.
const LOCK: &str = "lock";
/// The control socket of an entry.
const SOCK: &str = "sock";
/// The longest path a Unix socket address holds (`sun_path`, less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The per-user directory of running sessions.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
}

/// A registered session: its lock is held and its control socket bound until this is
/// dropped, which removes the entry.
#[derive(Debug)]
pub struct Registration {
    name: String,
    entry: PathBuf,
    entry_fd: OwnedFd,
    // Held for the registration's lifetime: the entry is live exactly while it is.
    _lock: File,
    listener: Option<std::os::unix::net::UnixListener>,
}

/// One session found in the registry.
#[derive(Debug)]
pub struct Listing {
    /// The session's name.
    pub name: String,
    /// What its controller says, or why it could not be asked.
    pub status: Result<SessionStatus, RespawnError>,
}

/// Whether `name` is a session name: 1 to 64 of `[A-Za-z0-9_-]`, which is also what tmux
/// takes as a session name.
pub fn valid_session_name(name: &str) -> bool {
    crate::terminal::valid_tmux_name(name)
}

fn registry_error(path: &Path, reason: impl Into<String>) -> RespawnError {
    RespawnError::Registry {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn io_error(path: &Path, op: &str, err: impl Into<std::io::Error>) -> RespawnError {
    registry_error(path, format!("cannot {op}: {}", err.into()))
}

fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// An entry's directory, opened without following a link, if it is a directory of the
/// user's.
fn open_entry(root: &Path, name: &str) -> Option<OwnedFd> {
    let fd = rustix::fs::open(
        root.join(name),
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    (stat.st_uid == my_uid()).then_some(fd)
}

/// What an entry's `lock` says.
enum LockProbe {
    /// A controller holds it.
    Live,
    /// Nobody holds it; the returned descriptor now holds it exclusively.
    Stale(OwnedFd),
    /// No lock file, or one that is not a regular file of the user's: not an entry.
    Unusable,
}

fn probe_lock(entry: &OwnedFd) -> LockProbe {
    // Non-blocking, so a FIFO planted as `lock` cannot hang the open; never through a link.
    let Ok(fd) = rustix::fs::openat(
        entry,
        LOCK,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return LockProbe::Unusable;
    };
    let Ok(stat) = rustix::fs::fstat(&fd) else {
        return LockProbe::Unusable;
    };
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_uid != my_uid() {
        return LockProbe::Unusable;
    }
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => LockProbe::Stale(fd),
        Err(_) => LockProbe::Live,
    }
}

/// `true` when `name` inside `dir` is a socket of the user's (not a link to one).
fn is_own_socket(dir: &impl AsFd, name: &str) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|stat| {
        FileType::from_raw_mode(stat.st_mode) == FileType::Socket && stat.st_uid == my_uid()
    })
}

impl Registry {
    /// Opens the registry at `dir`, creating the directory (mode 0700) when it is missing;
    /// its parent must exist.
    ///
    /// # Errors
    /// [`RespawnError::Registry`] when `dir` cannot be created, or is a link, not a
    /// directory, not the user's, or open to others (group or other permissions).
    pub fn open(dir: &Path) -> Result<Self, RespawnError> {
        match rustix::fs::mkdir(dir, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(err) => return Err(io_error(dir, "create the directory", err)),
        }
        let stat = rustix::fs::lstat(dir).map_err(|e| io_error(dir, "inspect", e))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            return Err(registry_error(dir, "not a directory (or a link)"));
        }
        if stat.st_uid != my_uid() {
            return Err(registry_error(
                dir,
                format!("owned by uid {}, not by you", stat.st_uid),
            ));
        }
        if stat.st_mode & 0o077 != 0 {
            return Err(registry_error(
                dir,
                format!(
                    "mode {:o} lets others in; it must be 0700",
                    stat.st_mode & 0o777
                ),
            ));
        }
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// The registry's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Registers `name`: creates its entry, takes its lock and binds its control socket.
    ///
    /// # Errors
    /// [`RespawnError::SessionTaken`] when a live controller holds the name;
    /// [`RespawnError::SessionName`] for a name outside the grammar;
    /// [`RespawnError::Registry`] when the entry cannot be made.
    pub fn register(&self, name: &str) -> Result<Registration, RespawnError> {
        if !valid_session_name(name) {
            return Err(RespawnError::SessionName {
                name: name.to_owned(),
            });
        }
        let entry = self.dir.join(name);
        let socket = entry.join(SOCK);
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(registry_error(
                &socket,
                "the path is too long for a socket; choose a shorter runtime directory",
            ));
        }
        // A sweeper may remove a stale entry between our steps: a few attempts settle it.
        for _ in 0..3 {
            match rustix::fs::mkdir(&entry, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(err) => return Err(io_error(&entry, "create", err)),
            }
            let Some(entry_fd) = open_entry(&self.dir, name) else {
                return Err(registry_error(
                    &entry,
                    "exists and is not a directory of yours",
                ));
            };
            let lock_fd = rustix::fs::openat(
                &entry_fd,
                LOCK,
                OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| io_error(&entry, "create the lock in", e))?;
            let stat = rustix::fs::fstat(&lock_fd).map_err(|e| io_error(&entry, "inspect", e))?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                return Err(registry_error(&entry, "its lock is not a regular file"));
            }
            if rustix::fs::flock(&lock_fd, FlockOperation::NonBlockingLockExclusive).is_err() {
                return Err(RespawnError::SessionTaken {
                    name: name.to_owned(),
                });
            }
            // Still the entry's lock (not one a sweeper unlinked meanwhile)?
            let current = rustix::fs::statat(&entry_fd, LOCK, AtFlags::SYMLINK_NOFOLLOW);
            if !current.is_ok_and(|c| c.st_dev == stat.st_dev && c.st_ino == stat.st_ino) {
                continue;
            }
            // Ours now: a socket left by a dead controller goes.
            if is_own_socket(&entry_fd, SOCK) {
                let _ = rustix::fs::unlinkat(&entry_fd, SOCK, AtFlags::empty());
            }
            let std_listener = std::os::unix::net::UnixListener::bind(&socket)
                .map_err(|e| io_error(&socket, "bind", e))?;
            std_listener
                .set_nonblocking(true)
                .map_err(|e| io_error(&socket, "configure", e))?;
            return Ok(Registration {
                name: name.to_owned(),
                entry,
                entry_fd,
                _lock: File::from(lock_fd),
                listener: Some(std_listener),
            });
        }
        Err(registry_error(
            &entry,
            "kept changing while it was being registered",
        ))
    }

    /// The names of the live sessions, sorted; stale entries are swept on the way.
    pub fn names(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| valid_session_name(name))
            .filter(|name| self.live(name))
            .collect();
        names.sort();
        names
    }

    /// `true` when `name`'s controller runs; a stale entry is removed.
    fn live(&self, name: &str) -> bool {
        let Some(entry) = open_entry(&self.dir, name) else {
            return false;
        };
        match probe_lock(&entry) {
            LockProbe::Live => true,
            LockProbe::Unusable => false,
            LockProbe::Stale(lock) => {
                // Holding the lock, nobody can register the name meanwhile.
                if is_own_socket(&entry, SOCK) {
                    let _ = rustix::fs::unlinkat(&entry, SOCK, AtFlags::empty());
                }
                let _ = rustix::fs::unlinkat(&entry, LOCK, AtFlags::empty());
                drop(lock);
                // Only if that emptied it: anything else in there is left alone.
                let _ = std::fs::remove_dir(self.dir.join(name));
                false
            }
        }
    }

    /// The control socket of the live session `name`.
    fn socket(&self, name: &str) -> Result<PathBuf, RespawnError> {
        let unknown = || RespawnError::UnknownSession {
            name: name.to_owned(),
        };
        if !valid_session_name(name) || !self.live(name) {
            return Err(unknown());
        }
        let entry = open_entry(&self.dir, name).ok_or_else(unknown)?;
        if !is_own_socket(&entry, SOCK) {
            return Err(unknown());
        }
        Ok(self.dir.join(name).join(SOCK))
    }

    /// What the controller of `name` says about its session.
    ///
    /// # Errors
    /// [`RespawnError::UnknownSession`] when no live session has that name;
    /// [`RespawnError::Control`] when its controller does not answer properly.
    pub async fn status(&self, name: &str) -> Result<SessionStatus, RespawnError> {
        let socket = self.socket(name)?;
        control::status(&socket, name).await
    }

    /// Every live session with what its controller says.
    pub async fn list(&self) -> Vec<Listing> {
        let mut out = Vec::new();
        for name in self.names() {
            let status = self.status(&name).await;
            out.push(Listing { name, status });
        }
        out
    }

    /// Delivers `text` to `name` through its controller (verified delivery), or, with
    /// `queue`, waits until the session can take it.
    ///
    /// # Errors
    /// As [`Registry::status`].
    pub async fn send(
        &self,
        name: &str,
        text: &str,
        queue: bool,
    ) -> Result<crate::event::SendOutcome, RespawnError> {
        let socket = self.socket(name)?;
        control::send(&socket, name, text, queue).await
    }

    /// Waits until `name`'s state is `until`, or `timeout` passes.
    ///
    /// # Errors
    /// As [`Registry::status`] (for the first look; a session that ends later is
    /// [`WaitOutcome::Ended`]).
    pub async fn wait(
        &self,
        name: &str,
        until: hyoka_idle_detect::SessionState,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, RespawnError> {
        let socket = self.socket(name)?;
        control::wait(&socket, name, until, timeout).await
    }

    /// Asks `name`'s controller to stop its session (as SIGINT would).
    ///
    /// # Errors
    /// As [`Registry::status`].
    pub async fn stop(&self, name: &str) -> Result<(), RespawnError> {
        let socket = self.socket(name)?;
        control::stop(&socket, name).await
    }
}

impl Registration {
    /// The session's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The entry's directory.
    pub fn entry(&self) -> &Path {
        &self.entry
    }

    /// The control socket's listener, to serve (once).
    pub(crate) fn take_listener(&mut self) -> Option<std::os::unix::net::UnixListener> {
        self.listener.take()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Still holding the lock: only this entry's own files go.
        self.listener = None;
        if is_own_socket(&self.entry_fd, SOCK) {
            let _ = rustix::fs::unlinkat(&self.entry_fd, SOCK, AtFlags::empty());
        }
        let _ = rustix::fs::unlinkat(&self.entry_fd, LOCK, AtFlags::empty());
        let _ = std::fs::remove_dir(&self.entry);
    }
}

#[cfg(test)]
mod tests;
