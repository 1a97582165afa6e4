//! Which files the agent created, changed or deleted, by name, and their contents read
//! safely: what a record of the agent's changes (its diffs) is made from.
//!
//! [`scan_changes`] is [`scan`](crate::scan) that also names up to `limit` of the paths it
//! counts, in the same single walk, so the final scan of a trial costs nothing more when
//! the agent changed nothing (and only the names kept when it did). Deleted files are named
//! from the snapshot only when the counts say some were deleted. [`read_beneath`] reads at
//! most `cap` bytes of one regular file beneath a root, never through a link and never
//! blocking on a FIFO or device the agent left.

use std::io::Read as _;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

use crate::WorkspaceError;
use crate::rel::{map_errno, normalize, open_beneath};
use crate::usage::{Snapshot, Usage, walk};

/// How one path differs from the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    /// It did not exist in the snapshot.
    Created,
    /// Its size, times or inode differ from the snapshot's.
    Changed,
    /// It was in the snapshot and is gone.
    Deleted,
}

impl ChangeKind {
    /// `created`, `changed` or `deleted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Changed => "changed",
            Self::Deleted => "deleted",
        }
    }
}

/// One path the agent created, changed or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Its path relative to the root, `/`-separated (lossy UTF-8 for other bytes).
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// Its size now (0 when deleted).
    pub size: u64,
}

/// [`scan`](crate::scan) of the tree beneath `root` against `snapshot`, naming the first
/// `limit` changes found (in walk order; the [`Usage`] counts all of them). A `limit` of 0
/// names none.
///
/// # Errors
/// [`WorkspaceError::Io`] when the root cannot be opened or listed.
pub fn scan_changes(
    root: &Path,
    snapshot: &Snapshot,
    limit: usize,
) -> Result<(Usage, Vec<Change>), WorkspaceError> {
    let mut usage = Usage::default();
    let mut matched: u64 = 0;
    let mut named = Vec::new();
    let name = |named: &mut Vec<Change>, rel: &[u8], kind, size| {
        if named.len() < limit {
            named.push(Change {
                path: String::from_utf8_lossy(rel).into_owned(),
                kind,
                size,
            });
        }
    };
    walk(root, &[], |rel, stamp| match snapshot.stamps.get(rel) {
        None => {
            usage.created += 1;
            usage.bytes += stamp.size;
            name(&mut named, rel, ChangeKind::Created, stamp.size);
        }
        Some(old) => {
            matched += 1;
            if *old != stamp {
                usage.changed += 1;
                usage.bytes += stamp.size;
                name(&mut named, rel, ChangeKind::Changed, stamp.size);
            }
        }
    })?;
    usage.files = usage.created + usage.changed;
    usage.deleted = (snapshot.stamps.len() as u64).saturating_sub(matched);
    if usage.deleted > 0 && named.len() < limit {
        let root_fd = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| WorkspaceError::io("open", root, e.into()))?;
        let mut gone: Vec<&[u8]> = (snapshot.stamps.keys())
            .map(AsRef::as_ref)
            .filter(|rel: &&[u8]| {
                let rel = std::ffi::OsStr::from_bytes(rel);
                rustix::fs::statat(&root_fd, rel, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_err()
            })
            .collect();
        gone.sort_unstable();
        for rel in gone {
            name(&mut named, rel, ChangeKind::Deleted, 0);
        }
    }
    Ok((usage, named))
}

/// The first bytes of a file read by [`read_beneath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundedRead {
    /// At most `cap` bytes from its start.
    pub bytes: Vec<u8>,
    /// Its whole size.
    pub size: u64,
}

impl BoundedRead {
    /// Whether the file is longer than what was read.
    pub fn is_cut(&self) -> bool {
        self.size > self.bytes.len() as u64
    }
}

/// Reads at most `cap` bytes of the regular file `rel` beneath `root`: a path that leaves
/// the root, or any symbolic link on it, is refused; a FIFO, socket, device or directory is
/// refused without being opened for reading (the open never blocks).
///
/// # Errors
/// [`WorkspaceError::InvalidPath`] for an absolute path or one with `..`;
/// [`WorkspaceError::Escape`] for a link; [`WorkspaceError::NotFound`]; and
/// [`WorkspaceError::Io`] for anything else, a file that is not regular included.
pub fn read_beneath(root: &Path, rel: &Path, cap: u64) -> Result<BoundedRead, WorkspaceError> {
    let parts = normalize(rel)?;
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WorkspaceError::io("open", root, e.into()))?;
    // O_NOFOLLOW on the last component, O_NONBLOCK so a FIFO does not wait for a writer.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK;
    let fd = open_beneath(root_fd.as_fd(), &parts, flags, Mode::empty())
        .map_err(|e| map_errno("read", &parts, e))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| WorkspaceError::io("stat", rel, e.into()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(WorkspaceError::io(
            "read",
            rel,
            std::io::Error::other("not a regular file"),
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| WorkspaceError::io("read", rel, e))?;
    Ok(BoundedRead {
        bytes,
        size: u64::try_from(stat.st_size).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests;
