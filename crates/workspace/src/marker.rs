//! The ownership marker `hyoka clean` uses to recognise a workspace as ours.
//!
//! A workspace is the agent's current directory, so the agent may delete anything inside it.
//! The marker therefore lives *on* the directory, as the extended attribute
//! [`MARKER_XATTR`], which survives the agent emptying its workspace. On file systems without
//! user extended attributes it falls back to a read-only file inside the workspace (which the
//! run's ledger backs up).
//!
//! The payload is one short line, `h3 <run_id> <eval_id> <instance> <owner_pid>[ kept]`,
//! short enough to live in the inode on ext4 with hyoka's default ids (an attribute of more than 56
//! bytes there takes a block of its own, which triples the cost of creating and removing a
//! workspace). The instance is the run instance's token (`hyoka-proctrack`'s `Instance`),
//! which `clean` matches against the ledger, so a run that reuses a run id is never taken
//! for another. The owner is the pid of the process that made the workspace; its start
//! time is not stored, because the directory's own creation time (its birth time where the
//! file system records one) witnesses it: a live process with that pid that started before
//! the workspace existed is its owner, as no other process can have held that pid then.
//!
//! The trailing `kept` word says the workspace was kept for the user (`--keep-workspace`):
//! it is written when the keep is decided (at creation for `always`, when the run ends for
//! `on-failure`), and every sweep leaves such a workspace alone unless told to remove kept
//! ones.
//!
//! This module is where the format is written and parsed, and [`MarkerOwner`] is the one
//! form of its owner. The earlier `hyoka2 <run_id> <eval_id> <pid> <start_ticks>` and
//! multi-line `hyoka-workspace v1` payloads are still read.

use std::fmt;
use std::os::fd::AsFd;
use std::path::Path;
use std::str::FromStr;

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags, XattrFlags};
use rustix::io::Errno;

use crate::WorkspaceError;
use crate::usage::MARKER_FILE;

/// The extended attribute that marks a hyoka workspace.
pub const MARKER_XATTR: &str = "user.hyoka.workspace";

const MAGIC: &str = "h3";
const MAGIC_V2: &str = "hyoka2";
const MAGIC_V1: &str = "hyoka-workspace v1";

/// The process that made a workspace, as its marker records it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MarkerOwner {
    /// Its pid.
    pub pid: i32,
    /// Its start time in clock ticks since boot, in markers that record it (the earlier
    /// formats); the current one lets the workspace's creation time stand for it.
    pub start_ticks: Option<u64>,
    /// The boot its start time counts from, in the first format's markers.
    pub boot_id: Option<String>,
}

impl MarkerOwner {
    /// The owner `pid`, as the current format records it.
    pub fn pid(pid: i32) -> Self {
        Self {
            pid,
            start_ticks: None,
            boot_id: None,
        }
    }
}

impl fmt::Display for MarkerOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.pid)?;
        if let Some(ticks) = self.start_ticks {
            write!(f, " {ticks}")?;
        }
        if let Some(boot) = &self.boot_id {
            write!(f, " {boot}")?;
        }
        Ok(())
    }
}

impl FromStr for MarkerOwner {
    type Err = ();

    /// `<pid>`, `<pid> <start_ticks>` or `<pid> <start_ticks> <boot_id>`.
    fn from_str(text: &str) -> Result<Self, ()> {
        let mut fields = text.split_ascii_whitespace();
        let pid: i32 = fields.next().ok_or(())?.parse().map_err(|_| ())?;
        let start_ticks = fields.next().map(str::parse).transpose().map_err(|_| ())?;
        let boot_id = fields.next().map(str::to_owned);
        if pid <= 1 || fields.next().is_some() {
            return Err(());
        }
        Ok(Self {
            pid,
            start_ticks,
            boot_id,
        })
    }
}

/// Who made a workspace: enough for `clean` to find the run and decide whether it is live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The run id.
    pub run_id: String,
    /// The eval id.
    pub eval_id: String,
    /// The run instance's token (`None` in markers written before instances existed).
    pub instance: Option<String>,
    /// The process that made the workspace (`None` when the marker names none).
    pub owner: Option<MarkerOwner>,
    /// Creation time, seconds since the Unix epoch. Not stored in the payload: [`read_marker`]
    /// takes it from the directory (birth time, else modification time).
    pub created_unix: u64,
    /// Whether the workspace was kept for the user (per its keep policy): a sweep leaves it
    /// alone unless asked to remove kept workspaces.
    pub kept: bool,
}

/// Whether `text` may be one word of the payload: non-empty, printable ASCII, no space.
fn word(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic())
}

impl Marker {
    fn encode(&self) -> Result<String, WorkspaceError> {
        let instance = self.instance.as_deref().unwrap_or("-");
        let owner = self.owner.as_ref().map_or(0, |o| o.pid);
        // Ids are validated (RunId, EvalId); the instance comes from the caller.
        if !word(&self.run_id) || !word(&self.eval_id) || !word(instance) {
            return Err(WorkspaceError::InvalidId {
                kind: "instance",
                id: instance.to_owned(),
                reason: "marker fields must be printable words without spaces",
            });
        }
        let kept = if self.kept { " kept" } else { "" };
        Ok(format!(
            "{MAGIC} {} {} {instance} {owner}{kept}",
            self.run_id, self.eval_id
        ))
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        if let Some(rest) = text.strip_prefix(MAGIC_V1) {
            return Self::decode_v1(rest);
        }
        if let Some(rest) = text.strip_prefix(MAGIC_V2) {
            return Self::decode_v2(rest.strip_prefix(' ')?);
        }
        let mut words = text.strip_prefix(MAGIC)?.strip_prefix(' ')?.split(' ');
        let (run_id, eval_id, instance, owner) =
            (words.next()?, words.next()?, words.next()?, words.next()?);
        let kept = match words.next().map(str::trim_end) {
            None => false,
            Some("kept") => true,
            Some(_) => return None,
        };
        if words.next().is_some() || !word(run_id) || !word(eval_id) || !word(instance) {
            return None;
        }
        let pid: i32 = owner.trim_end().parse().ok()?;
        Some(Self {
            run_id: run_id.to_owned(),
            eval_id: eval_id.to_owned(),
            instance: (instance != "-").then(|| instance.to_owned()),
            owner: (pid > 1).then(|| MarkerOwner::pid(pid)),
            created_unix: 0,
            kept,
        })
    }

    /// `<run_id> <eval_id> <owner…>` of the second format.
    fn decode_v2(rest: &str) -> Option<Self> {
        let (run_id, rest) = rest.split_once(' ')?;
        let (eval_id, owner) = rest.split_once(' ').unwrap_or((rest, ""));
        (!run_id.is_empty()).then(|| Self {
            run_id: run_id.to_owned(),
            eval_id: eval_id.to_owned(),
            instance: None,
            owner: owner.trim_end().parse().ok(),
            created_unix: 0,
            kept: false,
        })
    }

    /// The `key value` lines of the first format.
    fn decode_v1(rest: &str) -> Option<Self> {
        let mut marker = Self {
            run_id: String::new(),
            eval_id: String::new(),
            instance: None,
            owner: None,
            created_unix: 0,
            kept: false,
        };
        for line in rest.lines().skip_while(|l| l.is_empty()) {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "run" => value.clone_into(&mut marker.run_id),
                "eval" => value.clone_into(&mut marker.eval_id),
                "owner" => marker.owner = value.parse().ok(),
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
    set(dir, dir_path, marker, false)
}

/// Replaces the marker of the directory `dir` with `marker` (attribute, or the fallback
/// file, which is read-only and so is replaced rather than rewritten).
pub(crate) fn rewrite(
    dir: impl AsFd,
    dir_path: &Path,
    marker: &Marker,
) -> Result<(), WorkspaceError> {
    set(dir, dir_path, marker, true)
}

fn set(
    dir: impl AsFd,
    dir_path: &Path,
    marker: &Marker,
    replace: bool,
) -> Result<(), WorkspaceError> {
    let payload = marker.encode()?;
    let file_error =
        |e: Errno| WorkspaceError::io("write marker", dir_path.join(MARKER_FILE), e.into());
    match rustix::fs::fsetxattr(&dir, MARKER_XATTR, payload.as_bytes(), XattrFlags::empty()) {
        Ok(()) => Ok(()),
        Err(Errno::NOTSUP | Errno::PERM) => {
            if replace {
                match rustix::fs::unlinkat(&dir, MARKER_FILE, AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(e) => return Err(file_error(e)),
                }
            }
            let fd = rustix::fs::openat(
                &dir,
                MARKER_FILE,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::RUSR,
            )
            .map_err(file_error)?;
            rustix::io::write(&fd, payload.as_bytes())
                .map(drop)
                .map_err(file_error)
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
    Ok(read_marker_at(&dir))
}

/// The marker of the open directory `dir` (see [`read_marker`]).
pub(crate) fn read_marker_at(dir: impl AsFd) -> Option<Marker> {
    let dir = dir.as_fd();
    let mut buf = vec![0u8; 1024];
    let marker = if let Ok(len) = rustix::fs::fgetxattr(dir, MARKER_XATTR, &mut buf[..]) {
        Marker::decode(&buf[..len])
    } else {
        let Ok(fd) = rustix::fs::openat(
            dir,
            MARKER_FILE,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return None;
        };
        let len = rustix::io::read(&fd, &mut buf[..]).unwrap_or(0);
        Marker::decode(&buf[..len])
    };
    marker.map(|mut marker| {
        if marker.created_unix == 0 {
            marker.created_unix = created_unix(dir);
        }
        marker
    })
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
