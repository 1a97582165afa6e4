//! Copying a starter tree into a workspace without ever following a link out of it.
//!
//! [`copy_tree`] walks the source with descriptor-relative calls and `O_NOFOLLOW`, so nothing
//! outside the source is ever read, even if the source changes during the copy. Files keep
//! their permission bits; directories get theirs after their contents are written, so
//! read-only directories can be copied. Symbolic links are recreated as links, never
//! dereferenced; once the copy is complete each recreated link is resolved from the
//! destination root with `RESOLVE_BENEATH`, and a link that would lead outside (absolute, or
//! climbing out through `..` or through other links) is removed again and reported in
//! [`CopyReport::skipped`]. Sockets and device nodes are skipped and reported; FIFOs are
//! recreated.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::WorkspaceError;

/// Why an entry of the source was not copied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// A symbolic link whose target lies outside the copied tree.
    LinkEscapes {
        /// The link's target as stored in the link.
        target: PathBuf,
    },
    /// A socket, character or block device.
    Special,
}

/// An entry [`copy_tree`] left out, with its path relative to the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The entry, relative to the source root.
    pub path: PathBuf,
    /// Why it was left out.
    pub reason: SkipReason,
}

/// What [`copy_tree`] copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Regular files copied.
    pub files: u64,
    /// Directories created.
    pub dirs: u64,
    /// Symbolic links recreated (and kept).
    pub links: u64,
    /// Bytes of file content copied.
    pub bytes: u64,
    /// Entries left out, with the reason.
    pub skipped: Vec<Skipped>,
}

/// Copies the contents of the directory `src` into the existing directory `dst`.
///
/// `src` itself may be reached through a link (it is the caller's choice); nothing beneath it
/// is. Existing entries in `dst` are not overwritten: a name clash is an error.
///
/// # Errors
/// [`WorkspaceError::StarterNotDir`] when `src` is not a directory, and
/// [`WorkspaceError::Io`] naming the entry when reading or writing fails.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<CopyReport, WorkspaceError> {
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let src_fd = rustix::fs::open(src, dir_flags, Mode::empty()).map_err(|errno| match errno {
        Errno::NOENT | Errno::NOTDIR => WorkspaceError::StarterNotDir {
            path: src.to_owned(),
        },
        other => WorkspaceError::io("open starter", src, other.into()),
    })?;
    let dst_fd = rustix::fs::open(dst, dir_flags, Mode::empty())
        .map_err(|errno| WorkspaceError::io("open", dst, errno.into()))?;
    let mut copier = Copier {
        src_root: src.to_owned(),
        rel: PathBuf::new(),
        report: CopyReport::default(),
        links: Vec::new(),
    };
    copier.copy_dir(src_fd.as_fd(), dst_fd.as_fd())?;
    copier.check_links(dst_fd.as_fd(), dst)?;
    Ok(copier.report)
}

struct Copier {
    src_root: PathBuf,
    /// The entry being copied, relative to both roots.
    rel: PathBuf,
    report: CopyReport,
    /// Recreated links, checked once the tree is complete.
    links: Vec<(PathBuf, PathBuf)>,
}

impl Copier {
    fn err(&self, op: &'static str, errno: Errno) -> WorkspaceError {
        WorkspaceError::io(op, self.src_root.join(&self.rel), errno.into())
    }

    fn copy_dir(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> Result<(), WorkspaceError> {
        let listing = Dir::read_from(src).map_err(|e| self.err("list", e))?;
        let mut names: Vec<CString> = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| self.err("list", e))?;
            let name = entry.file_name();
            if name != c"." && name != c".." {
                names.push(name.to_owned());
            }
        }
        // A stable order makes reports and errors reproducible.
        names.sort();
        for name in &names {
            self.rel.push(OsStr::from_bytes(name.to_bytes()));
            let result = self.copy_entry(src, dst, name);
            self.rel.pop();
            result?;
        }
        Ok(())
    }

    fn copy_entry(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        name: &CStr,
    ) -> Result<(), WorkspaceError> {
        let stat = rustix::fs::statat(src, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| self.err("stat", e))?;
        let mode = Mode::from_raw_mode(stat.st_mode & 0o7777);
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                let nofollow_dir =
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let src_child = rustix::fs::openat(src, name, nofollow_dir, Mode::empty())
                    .map_err(|e| self.err("open", e))?;
                rustix::fs::mkdirat(dst, name, Mode::RWXU).map_err(|e| self.err("create", e))?;
                let dst_child = rustix::fs::openat(dst, name, nofollow_dir, Mode::empty())
                    .map_err(|e| self.err("open", e))?;
                self.report.dirs += 1;
                self.copy_dir(src_child.as_fd(), dst_child.as_fd())?;
                rustix::fs::fchmod(&dst_child, mode).map_err(|e| self.err("chmod", e))?;
            }
            FileType::RegularFile => {
                let from = rustix::fs::openat(
                    src,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| self.err("open", e))?;
                let to = rustix::fs::openat(
                    dst,
                    name,
                    OFlags::WRONLY
                        | OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::RUSR | Mode::WUSR,
                )
                .map_err(|e| self.err("create", e))?;
                let (mut from, mut to) = (File::from(from), File::from(to));
                // `io::copy` between files uses copy_file_range or sendfile on Linux.
                let bytes = std::io::copy(&mut from, &mut to)
                    .map_err(|e| WorkspaceError::io("copy", self.src_root.join(&self.rel), e))?;
                rustix::fs::fchmod(&to, mode).map_err(|e| self.err("chmod", e))?;
                self.report.files += 1;
                self.report.bytes += bytes;
            }
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(src, name, Vec::new())
                    .map_err(|e| self.err("read link", e))?;
                let target = PathBuf::from(OsStr::from_bytes(target.to_bytes()));
                if target.is_absolute() {
                    self.skip(SkipReason::LinkEscapes { target });
                    return Ok(());
                }
                rustix::fs::symlinkat(&target, dst, name)
                    .map_err(|e| self.err("create link", e))?;
                self.links.push((self.rel.clone(), target));
            }
            FileType::Fifo => {
                rustix::fs::mknodat(dst, name, FileType::Fifo, mode, 0)
                    .map_err(|e| self.err("create fifo", e))?;
                self.report.files += 1;
            }
            _ => self.skip(SkipReason::Special),
        }
        Ok(())
    }

    fn skip(&mut self, reason: SkipReason) {
        self.report.skipped.push(Skipped {
            path: self.rel.clone(),
            reason,
        });
    }

    /// Resolves every recreated link beneath the destination root and removes the escapees.
    fn check_links(&mut self, dst: BorrowedFd<'_>, dst_path: &Path) -> Result<(), WorkspaceError> {
        for (rel, target) in std::mem::take(&mut self.links) {
            let resolved: Result<OwnedFd, Errno> = rustix::fs::openat2(
                dst,
                &rel,
                OFlags::PATH | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            );
            match resolved {
                Ok(_) => self.report.links += 1,
                // Dangling, or no `openat2`: keep it only if its text cannot climb out, since a
                // missing directory in the target may appear later.
                Err(Errno::NOENT | Errno::NOTDIR | Errno::NOSYS)
                    if lexically_inside(&rel, &target) =>
                {
                    self.report.links += 1;
                }
                Err(_) => {
                    rustix::fs::unlinkat(dst, &rel, AtFlags::empty()).map_err(|e| {
                        WorkspaceError::io("remove link", dst_path.join(&rel), e.into())
                    })?;
                    self.report.skipped.push(Skipped {
                        path: rel,
                        reason: SkipReason::LinkEscapes { target },
                    });
                }
            }
        }
        Ok(())
    }
}

/// The fallback check without `openat2`: the target, applied to the link's directory, never
/// climbs above the root.
fn lexically_inside(link: &Path, target: &Path) -> bool {
    let mut depth = link.components().count().saturating_sub(1);
    for component in target.components() {
        match component {
            std::path::Component::ParentDir if depth == 0 => return false,
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            std::path::Component::CurDir => {}
            _ => return false,
        }
    }
    true
}
