//! Usage accounting: which files the agent created or changed, and their bytes.
//!
//! A [`Snapshot`] records a stamp (size, modification and change times, inode) for every
//! non-directory entry of the workspace right after the starter copy. [`scan`] walks the tree
//! again and compares: an entry without a stamp was created, an entry whose stamp differs was
//! changed, and stamps never matched were deleted. Hidden and build directories are counted
//! like any other; links are counted as entries and never followed; mounts inside the
//! workspace are not crossed. The walk uses `getdents` plus one `statx` per entry, the same
//! work as `du`, and no allocation per entry except for the path bytes.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat};
use serde::Serialize;

use crate::WorkspaceError;
use crate::remove::mount_id;

/// The file a marker falls back to when the file system has no extended attributes. It is
/// never counted as the agent's.
pub(crate) const MARKER_FILE: &str = ".hyoka-workspace";

/// What the agent produced, compared with the starter snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Files created or changed (`created + changed`); what `--max-files` limits.
    pub files: u64,
    /// Bytes of the files created or changed; what `--max-output-size` limits.
    pub bytes: u64,
    /// Files that did not exist in the snapshot.
    pub created: u64,
    /// Files of the snapshot whose size, times or inode changed.
    pub changed: u64,
    /// Files of the snapshot that no longer exist.
    pub deleted: u64,
}

/// A file's stamp: enough to notice any write, truncation, replacement or `touch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds and nanoseconds.
    pub mtime: (i64, u64),
    /// Status-change time, seconds and nanoseconds (catches a restored mtime).
    pub ctime: (i64, u64),
    /// Inode number (catches a file replaced by rename).
    pub ino: u64,
}

impl Stamp {
    fn of(stat: &Stat) -> Self {
        Self {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime: (stat.st_mtime, stat.st_mtime_nsec),
            ctime: (stat.st_ctime, stat.st_ctime_nsec),
            ino: stat.st_ino,
        }
    }
}

/// The state of a workspace at one moment: one [`Stamp`] per non-directory entry, keyed by
/// its path relative to the root (bytes, `/`-separated).
///
/// Cloning is cheap (the stamps are shared).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub(crate) stamps: Arc<HashMap<Box<[u8]>, Stamp>>,
}

impl Snapshot {
    /// Records every entry beneath `root`.
    ///
    /// # Errors
    /// [`WorkspaceError::Io`] when the root cannot be opened or listed.
    pub fn take(root: &Path) -> Result<Self, WorkspaceError> {
        let mut stamps = HashMap::new();
        walk(root, &[], |rel, stamp| {
            stamps.insert(rel.into(), stamp);
        })?;
        Ok(Self {
            stamps: Arc::new(stamps),
        })
    }

    /// How many entries the snapshot holds.
    pub fn len(&self) -> usize {
        self.stamps.len()
    }

    /// `true` when the snapshot holds no entry.
    pub fn is_empty(&self) -> bool {
        self.stamps.is_empty()
    }

    /// The stamp recorded for `rel` (`/`-separated, relative to the root).
    pub fn get(&self, rel: &str) -> Option<&Stamp> {
        self.stamps.get(rel.as_bytes())
    }
}

/// Compares the tree beneath `root` with `snapshot`.
///
/// # Errors
/// [`WorkspaceError::Io`] when the root cannot be opened or listed.
pub fn scan(root: &Path, snapshot: &Snapshot) -> Result<Usage, WorkspaceError> {
    let mut usage = Usage::default();
    let mut matched: u64 = 0;
    walk(root, &[], |rel, stamp| match snapshot.stamps.get(rel) {
        None => {
            usage.created += 1;
            usage.bytes += stamp.size;
        }
        Some(old) => {
            matched += 1;
            if *old != stamp {
                usage.changed += 1;
                usage.bytes += stamp.size;
            }
        }
    })?;
    usage.files = usage.created + usage.changed;
    usage.deleted = (snapshot.stamps.len() as u64).saturating_sub(matched);
    Ok(usage)
}

/// Calls `visit` with the relative path and stamp of every non-directory entry beneath
/// `root`; each relative path starts with `prefix` (empty, or ending in `/`). Unreadable
/// subdirectories are skipped (their files cannot be the agent's output that we could count
/// anyway); an unreadable root is an error.
pub(crate) fn walk(
    root: &Path,
    prefix: &[u8],
    mut visit: impl FnMut(&[u8], Stamp),
) -> Result<(), WorkspaceError> {
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let root_fd = rustix::fs::open(root, dir_flags, Mode::empty())
        .map_err(|e| WorkspaceError::io("open", root, e.into()))?;
    let root_dev =
        mount_id(root_fd.as_fd()).map_err(|e| WorkspaceError::io("stat", root, e.into()))?;
    // Each pending directory: its descriptor and its relative path prefix (with trailing '/').
    let mut stack: Vec<(OwnedFd, Vec<u8>)> = vec![(root_fd, prefix.to_vec())];
    let mut path = Vec::with_capacity(256);
    while let Some((fd, prefix)) = stack.pop() {
        let Ok(listing) = Dir::read_from(&fd) else {
            continue;
        };
        for entry in listing {
            let Ok(entry) = entry else { break };
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let bytes = name.to_bytes();
            if prefix.is_empty() && bytes == MARKER_FILE.as_bytes() {
                continue;
            }
            let kind = entry.file_type();
            if kind == FileType::Directory {
                if let Some(child) = open_same_dev(fd.as_fd(), name, root_dev) {
                    let mut child_prefix = Vec::with_capacity(prefix.len() + bytes.len() + 1);
                    child_prefix.extend_from_slice(&prefix);
                    child_prefix.extend_from_slice(bytes);
                    child_prefix.push(b'/');
                    stack.push((child, child_prefix));
                }
                continue;
            }
            let Ok(stat) = rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            if kind == FileType::Unknown
                && FileType::from_raw_mode(stat.st_mode) == FileType::Directory
            {
                if let Some(child) = open_same_dev(fd.as_fd(), name, root_dev) {
                    let mut child_prefix = prefix.clone();
                    child_prefix.extend_from_slice(bytes);
                    child_prefix.push(b'/');
                    stack.push((child, child_prefix));
                }
                continue;
            }
            path.clear();
            path.extend_from_slice(&prefix);
            path.extend_from_slice(bytes);
            visit(&path, Stamp::of(&stat));
        }
    }
    Ok(())
}

/// Opens the subdirectory `name` if it is on the root's mount (mounts are not crossed, bind
/// mounts of the same file system included).
fn open_same_dev(dir: BorrowedFd<'_>, name: &std::ffi::CStr, root_mount: u64) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty()).ok()?;
    (mount_id(fd.as_fd()).ok()? == root_mount).then_some(fd)
}

/// How one path counts towards [`Usage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contribution {
    Created(u64),
    Changed(u64),
    Deleted,
}

/// Keeps [`Usage`] current as paths change, without rescanning the tree.
///
/// A file-system watcher calls [`UsageTracker::update`] with each path it reports; the
/// tracker looks at that one path (O(1) for a file; a new directory is walked once, since
/// files may have appeared in it before a watch was placed) and adjusts the totals. A
/// removed or renamed directory, or a watcher that lost events, calls
/// [`UsageTracker::rescan`]. The result always equals what [`scan`] would say at that
/// moment, which the final scan of a run confirms.
#[derive(Debug, Clone)]
pub struct UsageTracker {
    root: std::path::PathBuf,
    snapshot: Snapshot,
    contributions: HashMap<Box<[u8]>, Contribution>,
    usage: Usage,
}

impl UsageTracker {
    /// A tracker of the tree at `root`, compared with `snapshot`, with nothing counted yet
    /// (call [`rescan`](Self::rescan) if the tree may already differ).
    pub fn new(root: &Path, snapshot: Snapshot) -> Self {
        Self {
            root: root.to_owned(),
            snapshot,
            contributions: HashMap::new(),
            usage: Usage::default(),
        }
    }

    /// The usage now.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Re-reads the path `abs` (absolute, beneath the root) and updates the totals.
    /// Paths outside the root are ignored.
    pub fn update(&mut self, abs: &Path) -> Usage {
        use std::os::unix::ffi::OsStrExt;
        let Ok(rel) = abs.strip_prefix(&self.root) else {
            return self.usage;
        };
        let rel = rel.as_os_str().as_bytes();
        if rel.is_empty() || rel == MARKER_FILE.as_bytes() {
            return self.usage;
        }
        match rustix::fs::lstat(abs) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
                let mut prefix = rel.to_vec();
                prefix.push(b'/');
                let mut found = Vec::new();
                // A directory that vanished mid-walk is simply not counted.
                let _ = walk(abs, &prefix, |path, stamp| {
                    found.push((Box::<[u8]>::from(path), stamp));
                });
                for (path, stamp) in found {
                    self.set(path, Some(stamp));
                }
            }
            Ok(stat) => self.set(rel.into(), Some(Stamp::of(&stat))),
            Err(_) => self.set(rel.into(), None),
        }
        self.usage
    }

    /// Recomputes everything from a full walk.
    ///
    /// # Errors
    /// [`WorkspaceError::Io`] when the root cannot be read; the totals are unchanged.
    pub fn rescan(&mut self) -> Result<Usage, WorkspaceError> {
        let mut contributions = HashMap::new();
        let mut present = 0u64;
        let snapshot = &self.snapshot;
        walk(&self.root, &[], |rel, stamp| {
            match snapshot.stamps.get(rel) {
                None => {
                    contributions.insert(rel.into(), Contribution::Created(stamp.size));
                }
                Some(old) => {
                    present += 1;
                    if *old != stamp {
                        contributions.insert(rel.into(), Contribution::Changed(stamp.size));
                    }
                }
            }
        })?;
        let missing = (self.snapshot.stamps.len() as u64).saturating_sub(present);
        if missing > 0 {
            for key in self.snapshot.stamps.keys() {
                if !contributions.contains_key(key) && !self.exists(key) {
                    contributions.insert(key.clone(), Contribution::Deleted);
                }
            }
        }
        self.contributions = contributions;
        self.usage = Usage::default();
        for contribution in self.contributions.values() {
            Self::apply(&mut self.usage, *contribution, true);
        }
        Ok(self.usage)
    }

    fn exists(&self, rel: &[u8]) -> bool {
        use std::os::unix::ffi::OsStrExt;
        rustix::fs::lstat(self.root.join(std::ffi::OsStr::from_bytes(rel))).is_ok()
    }

    fn set(&mut self, rel: Box<[u8]>, stamp: Option<Stamp>) {
        let new = match (stamp, self.snapshot.stamps.get(&rel)) {
            (Some(stamp), None) => Some(Contribution::Created(stamp.size)),
            (Some(stamp), Some(old)) if *old != stamp => Some(Contribution::Changed(stamp.size)),
            (None, Some(_)) => Some(Contribution::Deleted),
            // Unchanged since the snapshot, or never existed: counts for nothing.
            (Some(_), Some(_)) | (None, None) => None,
        };
        let old = match new {
            Some(new) => self.contributions.insert(rel, new),
            None => self.contributions.remove(&rel),
        };
        if let Some(old) = old {
            Self::apply(&mut self.usage, old, false);
        }
        if let Some(new) = new {
            Self::apply(&mut self.usage, new, true);
        }
    }

    fn apply(usage: &mut Usage, contribution: Contribution, add: bool) {
        let step = |value: &mut u64, by: u64| {
            *value = if add {
                *value + by
            } else {
                value.saturating_sub(by)
            };
        };
        match contribution {
            Contribution::Created(size) => {
                step(&mut usage.created, 1);
                step(&mut usage.bytes, size);
            }
            Contribution::Changed(size) => {
                step(&mut usage.changed, 1);
                step(&mut usage.bytes, size);
            }
            Contribution::Deleted => step(&mut usage.deleted, 1),
        }
        usage.files = usage.created + usage.changed;
    }
}
