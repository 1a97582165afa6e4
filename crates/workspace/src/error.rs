//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

use crate::RemovalReport;

/// Everything that can go wrong while creating, using or removing a workspace.
///
/// Variants carry the path or value a user needs to act on, and keep the OS error as the
/// `source`. Messages are lowercase and name the offending value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// A run or eval id does not match `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
    #[error("invalid {kind} id {id:?}: {reason}")]
    InvalidId {
        /// Which id was rejected (`run` or `eval`).
        kind: &'static str,
        /// The rejected value.
        id: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A relative path is malformed (empty, absolute, contains `..` or a NUL byte).
    #[error("invalid workspace path {path:?}: {reason}")]
    InvalidPath {
        /// The rejected path as given.
        path: PathBuf,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A path would resolve outside the workspace through a symbolic link.
    #[error("path {path:?} escapes the workspace")]
    Escape {
        /// The relative path that escaped.
        path: PathBuf,
    },
    /// The workspace root does not exist or is not a directory.
    #[error("workspace root {path:?} is not a directory")]
    RootNotDir {
        /// The configured root.
        path: PathBuf,
    },
    /// The starter does not exist or is not a directory.
    #[error("starter {path:?} is not a directory")]
    StarterNotDir {
        /// The configured starter.
        path: PathBuf,
    },
    /// A file or directory that was expected is missing.
    #[error("{path:?} does not exist in the workspace")]
    NotFound {
        /// The relative path.
        path: PathBuf,
    },
    /// An operating-system call failed.
    #[error("cannot {op} {path:?}")]
    Io {
        /// What was being done (`create`, `read`, `remove`, …).
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A file to inject is neither a regular file nor a directory (a FIFO, a device, a
    /// socket): it is refused before anything is read from it.
    #[error("{path:?} is a {kind}: only regular files and directories can be injected")]
    UnsupportedFile {
        /// The file as given.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// A file to inject is larger than the cap.
    #[error("{path:?} is {size} bytes, more than the {limit} bytes a file may have to be injected")]
    TooLarge {
        /// The file as given.
        path: PathBuf,
        /// Its size (at least this much, for a file that grew while read).
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// The caller's record of a workspace (a ledger line) could not be written before the
    /// workspace was created; nothing was created.
    #[error("cannot record workspace {path:?} before creating it")]
    Record {
        /// The workspace that was to be created.
        path: PathBuf,
        /// Why recording failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Removing the workspace left something behind; the report says what and why.
    #[error("workspace {path:?} was not fully removed: {}", report.summary())]
    RemoveIncomplete {
        /// The workspace directory.
        path: PathBuf,
        /// What could not be removed.
        report: RemovalReport,
    },
}

impl WorkspaceError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
