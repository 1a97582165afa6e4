//! Safe, reported removal of a directory tree.
//!
//! [`remove_tree`] deletes a tree the way `rm -rf` does (descriptor-relative `getdents` and
//! `unlinkat`), with guarantees `rm -rf` and `std::fs::remove_dir_all` do not both give:
//!
//! - **No link is followed.** Entries are unlinked, never resolved; directories are opened
//!   with `O_NOFOLLOW`, so an entry swapped for a link between listing and opening is unlinked
//!   as a link. A link to a file or directory outside is removed, its target untouched.
//! - **No mount is crossed.** Each directory's mount id (`statx(STATX_MNT_ID)`, or the device
//!   number where that is unavailable) is compared with its parent's. A bind mount inside the
//!   tree is reported as [`LeftoverReason::MountPoint`] and nothing beneath it is deleted.
//! - **Read-only trees go.** A directory without owner write or search permission is given
//!   `u+rwx` before its entries are removed (only matters without `CAP_DAC_OVERRIDE`).
//! - **Depth is bounded.** Beyond [`MAX_OPEN_DEPTH`] open directories, the deeper subtree is
//!   renamed to the top of the tree and removed from there, so a hostile million-level nesting
//!   neither exhausts descriptors nor the stack.
//! - **Nothing is silently skipped.** Whatever could not be removed is listed in the
//!   [`RemovalReport`] with its reason.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, StatxFlags};
use rustix::io::Errno;

/// How many directories may be open at once before deep subtrees are moved up.
pub const MAX_OPEN_DEPTH: usize = 128;

/// Why an entry was left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeftoverReason {
    /// The entry is a mount point (for example a bind mount); it was not deleted through.
    MountPoint,
    /// The operating system refused; the error is kept.
    Os(Errno),
    /// A directory could not be removed because something inside it was left behind.
    NotEmpty,
}

impl std::fmt::Display for LeftoverReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MountPoint => f.write_str("mount point, not deleted through"),
            Self::Os(errno) => write!(f, "{}", std::io::Error::from(*errno)),
            Self::NotEmpty => f.write_str("not empty after removal"),
        }
    }
}

/// One entry that [`remove_tree`] could not remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The absolute path of the entry.
    pub path: PathBuf,
    /// Why it is still there.
    pub reason: LeftoverReason,
}

/// What [`remove_tree`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemovalReport {
    /// Entries removed (files, links, special files and directories, the root included).
    pub removed: u64,
    /// Entries that could not be removed. Empty when the whole tree is gone.
    pub leftovers: Vec<Leftover>,
}

impl RemovalReport {
    /// `true` when nothing was left behind.
    pub fn is_complete(&self) -> bool {
        self.leftovers.is_empty()
    }

    /// A one-line summary for messages: how many leftovers and the first one.
    #[expect(
        clippy::unnecessary_debug_formatting,
        reason = "quoted and escaped, so odd file names stay on one line"
    )]
    pub fn summary(&self) -> String {
        match self.leftovers.first() {
            None => format!("{} entries removed", self.removed),
            Some(first) => format!(
                "{} left behind, first {:?} ({})",
                self.leftovers.len(),
                first.path,
                first.reason
            ),
        }
    }

    fn leave(&mut self, path: PathBuf, reason: LeftoverReason) {
        self.leftovers.push(Leftover { path, reason });
    }
}

/// Removes `path` and everything beneath it without following links or crossing mounts.
///
/// A missing `path` is a complete removal of nothing. If `path` itself is a link or a file,
/// only that entry is removed.
pub fn remove_tree(path: &Path) -> RemovalReport {
    let mut report = RemovalReport::default();
    let (parent, name) = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => (parent, name),
        (None | Some(_), Some(name)) => (Path::new("."), name),
        _ => {
            report.leave(path.to_owned(), LeftoverReason::Os(Errno::INVAL));
            return report;
        }
    };
    let parent_fd = match rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return report,
        Err(errno) => {
            report.leave(path.to_owned(), LeftoverReason::Os(errno));
            return report;
        }
    };
    remove_tree_at(parent_fd.as_fd(), name, path)
}

/// Removes the entry `name` of the open directory `parent`, like [`remove_tree`]; `path` is
/// only used to name leftovers.
pub(crate) fn remove_tree_at(parent: BorrowedFd<'_>, name: &OsStr, path: &Path) -> RemovalReport {
    let mut remover = Remover::new(path);
    let parent_mount = mount_id(parent).ok();
    remover.remove_entry(parent, name, parent_mount, None, 0);
    remover.report
}

/// Removes the tree of the already open directory `dir` (the workspace's own descriptor, so
/// nothing is resolved again) and then `path` itself, like [`remove_tree`].
pub(crate) fn remove_open_tree(dir: OwnedFd, path: &Path) -> RemovalReport {
    let mut remover = Remover::new(path);
    remover.remove_contents(dir, None, 0);
    if !remover.pending.is_empty() {
        let mount = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()
        .and_then(|fd| mount_id(fd.as_fd()).ok());
        remover.remove_pending(mount);
    }
    match rustix::fs::unlinkat(rustix::fs::CWD, path, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => remover.report.removed += 1,
        Err(Errno::NOTEMPTY | Errno::EXIST) => remover.leave_here(LeftoverReason::NotEmpty),
        Err(errno) => remover.leave_here(LeftoverReason::Os(errno)),
    }
    remover.report
}

/// A directory's mount identity: the mount id where the kernel gives one, else the device.
pub(crate) fn mount_id(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    mount_and_mode(fd).map(|(mount, _)| mount)
}

/// The mount identity (see [`mount_id`]) and the permission bits, from one `statx`.
fn mount_and_mode(fd: BorrowedFd<'_>) -> Result<(u64, u32), Errno> {
    let stx = rustix::fs::statx(
        fd,
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::MNT_ID | StatxFlags::MODE,
    )?;
    let mount = if stx.stx_mask & StatxFlags::MNT_ID.bits() != 0 {
        stx.stx_mnt_id
    } else {
        (u64::from(stx.stx_dev_major) << 32) | u64::from(stx.stx_dev_minor)
    };
    Ok((mount, u32::from(stx.stx_mode)))
}

struct Remover {
    report: RemovalReport,
    /// The path of the entry being processed, for leftovers.
    path: PathBuf,
    /// The path of the tree's root.
    root: PathBuf,
    /// The root directory's descriptor, where over-deep subtrees are moved.
    top: Option<OwnedFd>,
    moved: u64,
    /// Subtrees moved to the top, still to remove.
    pending: Vec<String>,
}

impl Remover {
    fn new(root: &Path) -> Self {
        Self {
            report: RemovalReport::default(),
            path: root.to_owned(),
            root: root.to_owned(),
            top: None,
            moved: 0,
            pending: Vec::new(),
        }
    }

    /// Removes the entry `name` of `dir` (whatever its type).
    fn remove_entry(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        dir_mount: Option<u64>,
        hint: Option<FileType>,
        depth: usize,
    ) {
        let is_dir = match hint {
            // The root's type is unknown: opening it as a directory tells (a link or a file
            // fails with ELOOP or ENOTDIR and is unlinked instead).
            Some(FileType::Directory) | None => true,
            Some(FileType::Unknown) => {
                match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => FileType::from_raw_mode(st.st_mode) == FileType::Directory,
                    Err(Errno::NOENT) => return,
                    Err(errno) => {
                        self.leave_here(LeftoverReason::Os(errno));
                        return;
                    }
                }
            }
            Some(_) => false,
        };
        if is_dir {
            self.remove_dir(dir, name, dir_mount, depth);
        } else {
            self.unlink(dir, name, AtFlags::empty());
        }
    }

    fn unlink(&mut self, dir: BorrowedFd<'_>, name: &OsStr, flags: AtFlags) {
        match rustix::fs::unlinkat(dir, name, flags) {
            Ok(()) | Err(Errno::NOENT) => self.report.removed += 1,
            // The directory may be read-only for us: grant ourselves write and retry once.
            Err(Errno::ACCESS | Errno::PERM) if grant_owner_rwx(dir).is_ok() => {
                match rustix::fs::unlinkat(dir, name, flags) {
                    Ok(()) | Err(Errno::NOENT) => self.report.removed += 1,
                    Err(errno) => self.leave_here(LeftoverReason::Os(errno)),
                }
            }
            Err(Errno::NOTEMPTY | Errno::EXIST) => self.leave_here(LeftoverReason::NotEmpty),
            Err(errno) => self.leave_here(LeftoverReason::Os(errno)),
        }
    }

    fn remove_dir(
        &mut self,
        parent: BorrowedFd<'_>,
        name: &OsStr,
        parent_mount: Option<u64>,
        depth: usize,
    ) {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(parent, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Swapped for a link or a file since it was listed: remove it as such.
            Err(Errno::LOOP | Errno::NOTDIR) => return self.unlink(parent, name, AtFlags::empty()),
            Err(Errno::NOENT) => return,
            Err(Errno::ACCESS) => match grant_entry_rwx(parent, name)
                .and_then(|()| rustix::fs::openat(parent, name, flags, Mode::empty()))
            {
                Ok(fd) => fd,
                Err(errno) => return self.leave_here(LeftoverReason::Os(errno)),
            },
            Err(errno) => return self.leave_here(LeftoverReason::Os(errno)),
        };
        let (mount, mode) = match mount_and_mode(fd.as_fd()) {
            Ok((mount, mode)) => (Some(mount), Some(mode)),
            Err(_) => (None, None),
        };
        if let (Some(mine), Some(theirs)) = (mount, parent_mount)
            && mine != theirs
        {
            return self.leave_here(LeftoverReason::MountPoint);
        }
        if depth >= MAX_OPEN_DEPTH && self.top.is_none() {
            // Only hostile nesting gets here; the root is reopened once, without following a
            // link at its path.
            self.top = rustix::fs::open(
                &self.root,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok();
        }
        if depth >= MAX_OPEN_DEPTH
            && let Some(top) = &self.top
        {
            // Too deep to keep every ancestor open: move this subtree to the top of the tree;
            // the root's removal picks it up once the current walk has unwound.
            for _ in 0..8 {
                self.moved += 1;
                let moved = format!(".hyoka-deep-{}", self.moved);
                let noreplace = rustix::fs::RenameFlags::NOREPLACE;
                match rustix::fs::renameat_with(parent, name, top, &moved, noreplace) {
                    Ok(()) => {
                        self.pending.push(moved);
                        return;
                    }
                    // The agent may have used the name; try the next one.
                    Err(Errno::EXIST) => {}
                    Err(_) => break,
                }
            }
        }
        if let Some(mode) = mode
            && mode & 0o700 != 0o700
        {
            // Best effort; a failure surfaces as leftovers below.
            let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode | 0o700));
        }
        self.remove_contents(fd, mount, depth);
        if depth == 0 {
            self.remove_pending(mount);
        }
        self.unlink(parent, name, AtFlags::REMOVEDIR);
    }

    fn remove_contents(&mut self, fd: OwnedFd, mount: Option<u64>, depth: usize) {
        let lazy_mount = mount.is_none() && depth == 0;
        let mut mount = mount;
        let mut dir = match Dir::new(fd) {
            Ok(dir) => dir,
            Err(errno) => return self.leave_here(LeftoverReason::Os(errno)),
        };
        // The listing is read completely before anything is removed, as fts does, so the
        // stream is never read while its directory changes.
        let mut entries: Vec<(CString, FileType)> = Vec::new();
        for entry in dir.by_ref() {
            match entry {
                Ok(entry) => {
                    let name = entry.file_name();
                    if name != c"." && name != c".." {
                        entries.push((name.to_owned(), entry.file_type()));
                    }
                }
                Err(errno) => {
                    self.leave_here(LeftoverReason::Os(errno));
                    break;
                }
            }
        }
        let dir_fd = match dir.fd() {
            Ok(fd) => fd,
            Err(errno) => return self.leave_here(LeftoverReason::Os(errno)),
        };
        // The root's mount id is only needed to compare subdirectories with it.
        if lazy_mount
            && entries
                .iter()
                .any(|(_, kind)| matches!(kind, FileType::Directory | FileType::Unknown))
        {
            mount = mount_id(dir_fd).ok();
        }
        for (name, kind) in entries {
            let name = cstr_os(&name);
            self.path.push(name);
            self.remove_entry(dir_fd, name, mount, Some(kind), depth + 1);
            self.path.pop();
        }
    }

    /// Removes the subtrees moved to the top of the tree, which may move more.
    fn remove_pending(&mut self, mount: Option<u64>) {
        if self.pending.is_empty() {
            return;
        }
        let Some(top) = self.top.as_ref().and_then(|fd| rustix::io::dup(fd).ok()) else {
            return;
        };
        while let Some(moved) = self.pending.pop() {
            let saved = std::mem::replace(&mut self.path, self.root.join(&moved));
            self.remove_dir(top.as_fd(), OsStr::new(&moved), mount, 1);
            self.path = saved;
        }
    }

    fn leave_here(&mut self, reason: LeftoverReason) {
        self.report.leave(self.path.clone(), reason);
    }
}

fn cstr_os(name: &CStr) -> &OsStr {
    OsStr::from_bytes(name.to_bytes())
}

/// Gives the owner read, write and search permission on the directory open at `dir`.
fn grant_owner_rwx(dir: BorrowedFd<'_>) -> Result<(), Errno> {
    let stat = rustix::fs::fstat(dir)?;
    if stat.st_mode & 0o700 == 0o700 {
        return Err(Errno::ACCESS);
    }
    rustix::fs::fchmod(dir, Mode::from_raw_mode(stat.st_mode | 0o700))
}

/// Gives the owner `rwx` on the directory entry `name` of `parent` without following links:
/// the entry is pinned with `O_PATH | O_NOFOLLOW` and changed through its descriptor.
fn grant_entry_rwx(parent: BorrowedFd<'_>, name: &OsStr) -> Result<(), Errno> {
    let pinned = rustix::fs::openat(
        parent,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&pinned)?;
    let proc_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&pinned));
    rustix::fs::chmod(proc_path, Mode::from_raw_mode(stat.st_mode | 0o700))
}
