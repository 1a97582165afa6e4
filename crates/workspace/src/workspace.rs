//! The `Workspace` trait: what an agent harness does with a workspace.

use std::ffi::OsString;
use std::path::Path;

use crate::{Usage, WorkspaceError};

/// The kind of a directory entry, as seen without following links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device node.
    Other,
}

/// One entry of [`Workspace::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's file name.
    pub name: OsString,
    /// Its kind.
    pub kind: EntryKind,
    /// Its size in bytes (link length for links, 0 for directories).
    pub len: u64,
}

/// An isolated directory an agent works in.
///
/// Every relative-path method refuses absolute paths and `..` with
/// [`WorkspaceError::InvalidPath`], and paths that would leave the workspace through a
/// symbolic link with [`WorkspaceError::Escape`]. Links that stay inside are followed.
///
/// Implementations: [`TempWorkspace`](crate::TempWorkspace) (a real directory) and, behind
/// the `mock` feature, `MemWorkspace` (in memory) and the `mockall` mock `MockWorkspace`.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait Workspace: Send + Sync {
    /// The workspace's absolute path (the agent's current directory).
    fn path(&self) -> &Path;

    /// Writes `contents` to the file `rel`, replacing it, creating missing parent directories.
    fn write_file(&self, rel: &Path, contents: &[u8]) -> Result<(), WorkspaceError>;

    /// Reads the whole file `rel`.
    fn read_file(&self, rel: &Path) -> Result<Vec<u8>, WorkspaceError>;

    /// Creates the directory `rel` and any missing parents; an existing directory is fine.
    fn create_dir(&self, rel: &Path) -> Result<(), WorkspaceError>;

    /// Removes `rel`: a file or link is unlinked, a directory is removed with everything in
    /// it, without following links or crossing mounts.
    fn remove(&self, rel: &Path) -> Result<(), WorkspaceError>;

    /// Lists the directory `rel` (`""` or `"."` for the root), sorted by name.
    fn list(&self, rel: &Path) -> Result<Vec<Entry>, WorkspaceError>;

    /// The files created or changed since the starter snapshot, and their bytes.
    fn usage(&self) -> Result<Usage, WorkspaceError>;
}
