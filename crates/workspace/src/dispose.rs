//! Removing a workspace some record names (a crashed run's ledger, or the sweep of a
//! workspace root), and only if it provably is one: the rules `hyoka clean` follows.
//!
//! A ledger is evidence, not a command: its paths may have been written by anyone who could
//! write the reports directory. So a named workspace is removed only when all of these hold:
//!
//! - it is directly inside one of the workspace roots the caller trusts, and is reached from
//!   the open root without following a link (a link or a non-directory is refused);
//! - its name is `hyoka-<run_id>-…` for the run that names it;
//! - it carries hyoka's marker for that run and, when the record has one, that run
//!   instance (an unmarked directory is never ours);
//! - with an owner to act for, it belongs to that user;
//! - no live process owns it (see [`MarkerOwner`]);
//! - it was not kept for the user, by its marker ([`Marker::kept`]) or by the run's record
//!   ([`Expected::recorded_kept`]), unless the caller asks to remove kept workspaces
//!   ([`Expected::kept_before`], `hyoka clean --kept`).
//!
//! The marker is necessary, never sufficient: any process of the user may rewrite it (set
//! another owner, drop `kept`), so the record that names the workspace (the run's ledger,
//! where no eval's process can write) is what makes it removable, and either record keeping
//! it keeps it. Everything else is reported and kept. Removal itself is
//! [`remove_tree`](crate::remove_tree) from the descriptor that was checked.

use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::marker::{Marker, MarkerOwner, read_marker_at};
use crate::remove::{RemovalReport, remove_tree_at};

/// What a workspace must be to be removed for a record (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected<'a> {
    /// The run that names it: the marker and the name must say the same.
    pub run_id: &'a str,
    /// The run instance the marker must carry.
    pub instance: InstanceRule<'a>,
    /// With `Some(uid)` (acting for that user), the directory must belong to that user.
    pub owner_uid: Option<u32>,
    /// With `Some(t)`, a workspace kept for the user and created at or before `t` (seconds
    /// since the Unix epoch) is removed like any other; with `None`, or when it is newer,
    /// it is left alone as [`Disposal::Kept`].
    pub kept_before: Option<u64>,
    /// Whether the record that names the workspace says it was kept for the user (the
    /// ledger's `# kept`): then it is kept as if its marker said so, whatever the marker
    /// says now.
    pub recorded_kept: bool,
}

/// How a workspace's marker must name its run instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceRule<'a> {
    /// Exactly this token (a ledger with an `# instance` header).
    Exactly(&'a str),
    /// None at all (a ledger written before instances existed: so was its workspace).
    Absent,
    /// Any, or none (the sweep of a workspace root, which has no record to match; then only
    /// a dead owner makes it removable).
    Any,
}

/// What [`remove_marked`] did with one workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disposal {
    /// Removed completely.
    Removed(RemovalReport),
    /// A dry run: it would be removed.
    WouldRemove,
    /// It does not exist (any more).
    AlreadyGone,
    /// Its owner is still running: it is in use.
    KeptLive(MarkerOwner),
    /// It was kept for the user (`--keep-workspace`): left alone.
    Kept,
    /// It is not provably the workspace the record says; kept. The reason says why.
    Refused(String),
    /// Removal left something behind.
    Incomplete(RemovalReport),
}

/// Removes the workspace at `path` if it passes every rule of the module docs for
/// `expected`; `owner_alive` tells whether the marker's owner is still running (it is given
/// the owner and the workspace's creation time, seconds since the epoch).
///
/// Blocking; touches nothing outside `path`. Call it with the power of the user the record
/// belongs to (`hyoka-proctrack`'s `Authority::run`).
pub fn remove_marked(
    roots: &[PathBuf],
    path: &Path,
    expected: &Expected<'_>,
    owner_alive: &dyn Fn(&MarkerOwner, u64) -> bool,
    dry_run: bool,
) -> Disposal {
    let refuse = |why: &str| Disposal::Refused(why.to_owned());
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return refuse("not a path to a directory");
    };
    let clean = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !clean {
        return refuse("not an absolute path without `..`");
    }
    let Some(root) = roots.iter().find(|r| same_path(r, parent)) else {
        return refuse("not directly inside a workspace root");
    };
    if !name
        .to_str()
        .is_some_and(|n| n.starts_with(&format!("hyoka-{}-", expected.run_id)))
    {
        return refuse("not named as a workspace of this run");
    }
    let root_fd = match rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Disposal::AlreadyGone,
        Err(e) => return refuse(&format!("the workspace root cannot be opened: {e}")),
    };
    let dir = match rustix::fs::openat(
        &root_fd,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Disposal::AlreadyGone,
        Err(Errno::LOOP | Errno::NOTDIR) => return refuse("a link or not a directory"),
        Err(e) => return refuse(&format!("cannot be opened: {e}")),
    };
    if let Some(uid) = expected.owner_uid {
        match rustix::fs::fstat(&dir) {
            Ok(st) if st.st_uid == uid => {}
            Ok(st) => {
                return refuse(&format!(
                    "belongs to user {}, not to user {uid} whose run names it",
                    st.st_uid
                ));
            }
            Err(e) => return refuse(&format!("cannot be inspected: {e}")),
        }
    }
    let Some(marker) = read_marker_at(&dir) else {
        return refuse("carries no hyoka marker");
    };
    if let Some(why) = mismatch(&marker, expected) {
        return Disposal::Refused(why);
    }
    match &marker.owner {
        Some(owner) if owner_alive(owner, marker.created_unix) => {
            return Disposal::KeptLive(owner.clone());
        }
        _ if (marker.kept || expected.recorded_kept)
            && expected
                .kept_before
                .is_none_or(|cutoff| marker.created_unix > cutoff) =>
        {
            return Disposal::Kept;
        }
        // Without a record of the run instance, nothing says the run that made it is over.
        None if matches!(expected.instance, InstanceRule::Any) => {
            return refuse("its marker names no owner");
        }
        Some(_) | None => {}
    }
    if dry_run {
        return Disposal::WouldRemove;
    }
    drop(dir);
    let report = remove_tree_at(root_fd.as_fd(), name, path);
    if report.is_complete() {
        Disposal::Removed(report)
    } else {
        Disposal::Incomplete(report)
    }
}

/// Why `marker` is not the one `expected` asks for.
fn mismatch(marker: &Marker, expected: &Expected<'_>) -> Option<String> {
    if marker.run_id != expected.run_id {
        return Some(format!("marked as run {}", marker.run_id));
    }
    match (expected.instance, marker.instance.as_deref()) {
        (InstanceRule::Any, _) | (InstanceRule::Absent, None) => None,
        (InstanceRule::Exactly(want), Some(got)) if want == got => None,
        (_, got) => Some(format!(
            "marked as run instance {}",
            got.unwrap_or("(none)")
        )),
    }
}

/// Whether two paths name the same directory entry, compared component by component (so
/// `/tmp` and `/tmp/` agree); links are not resolved.
fn same_path(a: &Path, b: &Path) -> bool {
    a.components().eq(b.components())
}

/// The marked workspaces directly inside `root` (directories named `hyoka-…`, not links),
/// with their markers, sorted by path.
pub fn find_marked(root: &Path) -> Vec<(PathBuf, Marker)> {
    let Ok(root_fd) = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return Vec::new();
    };
    let Ok(listing) = rustix::fs::Dir::read_from(&root_fd) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, Marker)> = listing
        .flatten()
        .filter_map(|entry| {
            let name = OsStr::from_bytes(entry.file_name().to_bytes()).to_owned();
            if !name.as_encoded_bytes().starts_with(b"hyoka-") {
                return None;
            }
            let stat = rustix::fs::statat(&root_fd, &name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
                return None;
            }
            let dir = rustix::fs::openat(
                &root_fd,
                &name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()?;
            Some((root.join(&name), read_marker_at(&dir)?))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[cfg(test)]
mod tests;
