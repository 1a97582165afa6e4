//! The ownership marker `hyoka clean` uses to recognise a workspace as ours.
//!
//! A workspace is the agent's current directory, so the agent may delete anything inside it.
//! The marker therefore lives *on* the directory, as the extended attribute
//! [`MARKER_XATTR`], which survives the agent emptying its workspace. On file systems without
//! user extended attributes it falls back to a read-only file inside the workspace (which the
//! run's ledger backs up). The payload is a few `key value` lines.

use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags, XattrFlags};
use rustix::io::Errno;

use crate::WorkspaceError;
use crate::usage::MARKER_FILE;

/// The extended attribute that marks a hyoka workspace.
pub const MARKER_XATTR: &str = "user.hyoka.workspace";

const MAGIC: &str = "hyoka-workspace v1";

/// Who made a workspace: enough for `clean` to find the run and decide whether it is live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The run id.
    pub run_id: String,
    /// The eval id.
    pub eval_id: String,
    /// The owner's identity, opaque to this crate (hyoka writes `<pid> <start_ticks> <boot_id>`).
    pub owner: String,
    /// Creation time, seconds since the Unix epoch.
    pub created_unix: u64,
}

impl Marker {
    fn encode(&self) -> String {
        format!(
            "{MAGIC}\nrun {}\neval {}\nowner {}\ncreated {}\n",
            self.run_id,
            self.eval_id,
            self.owner.replace('\n', " "),
            self.created_unix
        )
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut marker = Self {
            run_id: String::new(),
            eval_id: String::new(),
            owner: String::new(),
            created_unix: 0,
        };
        for line in lines {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "run" => value.clone_into(&mut marker.run_id),
                "eval" => value.clone_into(&mut marker.eval_id),
                "owner" => value.clone_into(&mut marker.owner),
                "created" => marker.created_unix = value.parse().ok()?,
                _ => {}
            }
        }
        (!marker.run_id.is_empty()).then_some(marker)
    }
}

/// Writes `marker` on the directory `dir` (attribute, or the fallback file).
pub(crate) fn write(
    dir: impl AsFd,
    dir_path: &Path,
    marker: &Marker,
) -> Result<(), WorkspaceError> {
    let payload = marker.encode();
    match rustix::fs::fsetxattr(&dir, MARKER_XATTR, payload.as_bytes(), XattrFlags::empty()) {
        Ok(()) => Ok(()),
        Err(Errno::NOTSUP | Errno::PERM) => {
            let fd = rustix::fs::openat(
                &dir,
                MARKER_FILE,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::RUSR,
            )
            .map_err(|e| {
                WorkspaceError::io("write marker", dir_path.join(MARKER_FILE), e.into())
            })?;
            rustix::io::write(&fd, payload.as_bytes())
                .map(drop)
                .map_err(|e| {
                    WorkspaceError::io("write marker", dir_path.join(MARKER_FILE), e.into())
                })
        }
        Err(e) => Err(WorkspaceError::io("mark", dir_path, e.into())),
    }
}

/// Reads the marker of the directory at `path`, without following a link at `path`.
///
/// Returns `Ok(None)` for a directory that carries no marker (not ours).
///
/// # Errors
/// [`WorkspaceError::Io`] when `path` cannot be opened as a directory.
pub fn read_marker(path: &Path) -> Result<Option<Marker>, WorkspaceError> {
    let dir = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WorkspaceError::io("open", path, e.into()))?;
    let mut buf = vec![0u8; 1024];
    if let Ok(len) = rustix::fs::fgetxattr(&dir, MARKER_XATTR, &mut buf[..]) {
        return Ok(Marker::decode(&buf[..len]));
    }
    let Ok(fd) = rustix::fs::openat(
        &dir,
        MARKER_FILE,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return Ok(None);
    };
    let len = rustix::io::read(&fd, &mut buf[..]).unwrap_or(0);
    Ok(Marker::decode(&buf[..len]))
}
