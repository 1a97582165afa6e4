//! The ownership marker `hyoka clean` uses to recognise a workspace as ours.
//!
//! A workspace is the agent's current directory, so the agent may delete anything inside it.
//! The marker therefore lives *on* the directory, as the extended attribute
//! [`MARKER_XATTR`], which survives the agent emptying its workspace. On file systems without
//! user extended attributes it falls back to a read-only file inside the workspace (which the
//! run's ledger backs up).
//!
//! The payload is one short line, `hyoka2 <run_id> <eval_id> <owner>`, short enough to live in
//! the inode on ext4 (an attribute of more than about 56 bytes there takes a block of its own,
//! which triples the cost of creating and removing a workspace). The creation time is the
//! directory's own (its birth time where the file system records one). The earlier
//! multi-line `hyoka-workspace v1` payload is still read.

use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags, XattrFlags};
use rustix::io::Errno;

use crate::WorkspaceError;
use crate::usage::MARKER_FILE;

/// The extended attribute that marks a hyoka workspace.
pub const MARKER_XATTR: &str = "user.hyoka.workspace";

const MAGIC: &str = "hyoka2";
const MAGIC_V1: &str = "hyoka-workspace v1";

/// Who made a workspace: enough for `clean` to find the run and decide whether it is live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The run id.
    pub run_id: String,
    /// The eval id.
    pub eval_id: String,
    /// The owner's identity, opaque to this crate (hyoka writes `<pid> <start_ticks>`). Keep
    /// it short: see the module docs.
    pub owner: String,
    /// Creation time, seconds since the Unix epoch. Not stored in the payload: [`read_marker`]
    /// takes it from the directory (birth time, else modification time).
    pub created_unix: u64,
}

impl Marker {
    fn encode(&self) -> String {
        // Ids never hold white space (they are validated); the owner goes last, so its own
        // spaces survive.
        let word = |text: &str| text.replace(char::is_whitespace, "_");
        format!(
            "{MAGIC} {} {} {}",
            word(&self.run_id),
            word(&self.eval_id),
            self.owner.replace('\n', " ")
        )
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        if let Some(rest) = text.strip_prefix(MAGIC_V1) {
            return Self::decode_v1(rest);
        }
        let rest = text.strip_prefix(MAGIC)?.strip_prefix(' ')?;
        let (run_id, rest) = rest.split_once(' ')?;
        let (eval_id, owner) = rest.split_once(' ').unwrap_or((rest, ""));
        (!run_id.is_empty()).then(|| Self {
            run_id: run_id.to_owned(),
            eval_id: eval_id.to_owned(),
            owner: owner.trim_end().to_owned(),
            created_unix: 0,
        })
    }

    /// The `key value` lines of the first format.
    fn decode_v1(rest: &str) -> Option<Self> {
        let mut marker = Self {
            run_id: String::new(),
            eval_id: String::new(),
            owner: String::new(),
            created_unix: 0,
        };
        for line in rest.lines().skip_while(|l| l.is_empty()) {
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
    let marker = if let Ok(len) = rustix::fs::fgetxattr(&dir, MARKER_XATTR, &mut buf[..]) {
        Marker::decode(&buf[..len])
    } else {
        let Ok(fd) = rustix::fs::openat(
            &dir,
            MARKER_FILE,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return Ok(None);
        };
        let len = rustix::io::read(&fd, &mut buf[..]).unwrap_or(0);
        Marker::decode(&buf[..len])
    };
    Ok(marker.map(|mut marker| {
        if marker.created_unix == 0 {
            marker.created_unix = created_unix(&dir);
        }
        marker
    }))
}

/// The directory's birth time, else its modification time, in seconds since the epoch.
fn created_unix(dir: impl AsFd) -> u64 {
    let want = StatxFlags::BTIME | StatxFlags::MTIME;
    let Ok(stat) = rustix::fs::statx(dir, c"", AtFlags::EMPTY_PATH, want) else {
        return 0;
    };
    let mask = StatxFlags::from_bits_retain(stat.stx_mask);
    let time = if mask.contains(StatxFlags::BTIME) {
        stat.stx_btime
    } else {
        stat.stx_mtime
    };
    u64::try_from(time.tv_sec).unwrap_or(0)
}

#[cfg(test)]
mod tests;
