//! Relative-path validation and descriptor-relative resolution beneath a workspace root.
//!
//! Every relative-path call goes through two gates. [`normalize`] rejects paths that are
//! absolute, empty, contain `..` or a NUL byte, before anything touches the file system.
//! [`open_beneath`] then resolves the path from the workspace's directory descriptor with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, so a symbolic link planted by the agent
//! that points outside is refused by the kernel ([`WorkspaceError::Escape`]), while links that
//! stay inside keep working. On kernels without `openat2` the walk falls back to opening one
//! component at a time with `O_NOFOLLOW`, which refuses every symbolic link.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::WorkspaceError;

/// Checks that `path` is a plain relative path and returns its normal components.
///
/// `.` components are dropped; `..`, root and prefix components are refused.
pub(crate) fn normalize(path: &Path) -> Result<Vec<&OsStr>, WorkspaceError> {
    let invalid = |reason| WorkspaceError::InvalidPath {
        path: path.to_owned(),
        reason,
    };
    if path.as_os_str().as_bytes().contains(&0) {
        return Err(invalid("contains a NUL byte"));
    }
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(invalid("contains '..'")),
            Component::RootDir | Component::Prefix(_) => return Err(invalid("is absolute")),
        }
    }
    if parts.is_empty() {
        return Err(invalid("is empty"));
    }
    Ok(parts)
}

/// Joins normalized components back into a relative path.
pub(crate) fn join(parts: &[&OsStr]) -> PathBuf {
    parts.iter().collect()
}

/// Opens `parts` beneath `root` with `flags`, refusing any resolution that leaves `root`.
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    parts: &[&OsStr],
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let rel = join(parts);
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(root, &rel, flags | OFlags::CLOEXEC, mode, resolve) {
        Err(Errno::NOSYS) => open_walk(root, parts, flags, mode),
        other => other,
    }
}

/// The pre-`openat2` fallback: one component at a time, never following a link.
fn open_walk(
    root: BorrowedFd<'_>,
    parts: &[&OsStr],
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let (last, parents) = parts.split_last().ok_or(Errno::INVAL)?;
    let mut current: Option<OwnedFd> = None;
    for part in parents {
        let base = current.as_ref().map_or(root, AsFd::as_fd);
        current = Some(rustix::fs::openat(base, *part, dir_flags, Mode::empty())?);
    }
    let base = current.as_ref().map_or(root, AsFd::as_fd);
    // A refused link surfaces as ELOOP, which the caller maps to an escape.
    rustix::fs::openat(
        base,
        *last,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
}

/// Opens the parent directory of `parts` beneath `root` (the root itself for one component).
pub(crate) fn open_parent(
    root: BorrowedFd<'_>,
    parts: &[&OsStr],
) -> Result<Option<OwnedFd>, Errno> {
    match parts.split_last() {
        Some((_, parents)) if !parents.is_empty() => open_beneath(
            root,
            parents,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map(Some),
        _ => Ok(None),
    }
}

/// Maps an errno from a beneath-resolution into the crate's error, naming the relative path.
pub(crate) fn map_errno(op: &'static str, parts: &[&OsStr], errno: Errno) -> WorkspaceError {
    let path = join(parts);
    match errno {
        // EXDEV: RESOLVE_BENEATH refused to leave the root; ELOOP: the fallback walk or
        // RESOLVE_NO_MAGICLINKS refused a link.
        Errno::XDEV | Errno::LOOP => WorkspaceError::Escape { path },
        Errno::NOENT => WorkspaceError::NotFound { path },
        other => WorkspaceError::io(op, path, other.into()),
    }
}

#[cfg(test)]
mod tests;
