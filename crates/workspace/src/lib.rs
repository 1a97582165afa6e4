//! Isolated, self-cleaning workspaces for AI coding agents.
//!
//! Every run of an agent gets a directory of its own that is created, marked as hyoka's,
//! filled from an optional starter, accounted for, and removed afterwards, whatever happens:
//! normal return, error, or panic.
//!
//! # Overview
//!
//! - [`Workspace`] is what a harness does with a workspace: write, read, create, remove and
//!   list by relative path, and measure [`Usage`]. Every relative path is contained: absolute
//!   paths and `..` are refused ([`WorkspaceError::InvalidPath`]) and so are paths that leave
//!   through a symbolic link ([`WorkspaceError::Escape`]).
//! - [`TempWorkspace`] is the real one: `<root>/hyoka-<run_id>-XXXXXX`, mode 0700, removed on
//!   [`TempWorkspace::close`] or on drop unless the [`KeepPolicy`] keeps it.
//! - [`remove_tree`] removes a tree without following links or crossing mounts and reports
//!   what it could not remove ([`RemovalReport`]); `hyoka clean` uses it on abandoned runs.
//! - [`copy_tree`] copies a starter without ever following a link out of it.
//! - [`Snapshot`] and [`scan`] account for the files an agent created or changed;
//!   [`UsageTracker`] keeps that account current from a file watcher's events.
//! - [`read_marker`] tells whether a directory is a hyoka workspace and whose
//!   ([`Marker`], [`MarkerOwner`]); [`remove_marked`] removes one a record names only when
//!   it provably is that record's ([`Expected`], [`Disposal`]), and [`find_marked`] lists the
//!   marked workspaces of a root.
//! - [`TempWorkspace::create_recorded`] lets the caller record the path before the directory
//!   exists; [`check_injection`] refuses anything but regular files (capped in size) and
//!   directories before a workspace is created.
//! - With the `mock` feature: `MemWorkspace`, an in-memory implementation, and
//!   `MockWorkspace`, a `mockall` mock, for downstream tests.
//!
//! # Example
//!
//! ```
//! use std::path::Path;
//! use hyoka_workspace::{KeepPolicy, RunVerdict, RunId, TempWorkspace, Workspace, WorkspaceOptions};
//!
//! let root = tempfile::tempdir()?;
//! let workspace = TempWorkspace::create(&WorkspaceOptions {
//!     root: root.path().to_owned(),
//!     run_id: RunId::new("docs-example")?,
//!     eval_id: None,
//!     keep: KeepPolicy::Never,
//!     starter: None,
//!     inject: Vec::new(),
//!     instance: None,
//!     owner: None,
//! })?;
//! workspace.write_file(Path::new("src/main.rs"), b"fn main() {}\n")?;
//! assert!(workspace.write_file(Path::new("../escape"), b"").is_err());
//! assert_eq!(workspace.usage()?.files, 1);
//!
//! let path = workspace.path().to_owned();
//! workspace.close(RunVerdict::Success)?;
//! assert!(!path.exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Testing code that uses a workspace
//!
//! With the `mock` feature, `MemWorkspace` (an in-memory workspace with the same path rules)
//! and `MockWorkspace` (a `mockall` mock of [`Workspace`]) are public, so a downstream crate
//! can test its harness without touching the disk:
//!
//! ```
//! # #[cfg(feature = "mock")] {
//! use std::path::Path;
//! use hyoka_workspace::{MemWorkspace, MockWorkspace, Usage, Workspace, WorkspaceError};
//!
//! // The downstream code under test only knows the trait.
//! fn save_result(ws: &dyn Workspace) -> Result<u64, WorkspaceError> {
//!     ws.write_file(Path::new("result.json"), b"{}")?;
//!     Ok(ws.usage()?.files)
//! }
//!
//! // Against the in-memory stub, with starter files as the baseline:
//! let stub = MemWorkspace::with_files([("README.md", b"task".to_vec())])?;
//! assert_eq!(save_result(&stub)?, 1);
//!
//! // Against the mock, asserting exactly what is called:
//! let mut mock = MockWorkspace::new();
//! mock.expect_write_file().times(1).returning(|_, _| Ok(()));
//! mock.expect_usage().returning(|| Ok(Usage { files: 1, ..Usage::default() }));
//! assert_eq!(save_result(&mock)?, 1);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! In `Cargo.toml`: `hyoka-workspace = { version = "…", features = ["mock"] }` under
//! `[dev-dependencies]`.
//!
//! # Theory of operation
//!
//! All file-system work is descriptor-relative. The workspace holds a descriptor of its own
//! directory and resolves relative paths with `openat2(RESOLVE_BENEATH)`, so a link the agent
//! plants cannot redirect hyoka outside, even if it appears between a check and a use.
//! Removal walks with `O_NOFOLLOW` and compares mount ids, so neither a link nor a bind mount
//! inside the workspace is ever deleted through. The ownership marker is an extended
//! attribute on the directory itself, so an agent that empties its working directory does not
//! erase the proof that the directory is hyoka's.
#![warn(
    clippy::disallowed_methods,
    reason = "libraries read no environment and take time from their callers"
)]

mod changes;
mod copy;
mod dispose;
mod error;
mod id;
mod marker;
#[cfg(feature = "mock")]
mod mem;
mod rel;
mod remove;
mod temp;
mod usage;
mod workspace;

pub use crate::changes::{BoundedRead, Change, ChangeKind, read_beneath, scan_changes};
pub use crate::copy::{CopyReport, SkipReason, Skipped, copy_tree};
pub use crate::dispose::{Disposal, Expected, InstanceRule, find_marked, remove_marked};
pub use crate::error::WorkspaceError;
pub use crate::id::{EvalId, MAX_ID_LEN, RunId};
pub use crate::marker::{MARKER_XATTR, Marker, MarkerOwner, read_marker};
#[cfg(feature = "mock")]
pub use crate::mem::MemWorkspace;
pub use crate::remove::{Leftover, LeftoverReason, MAX_OPEN_DEPTH, RemovalReport, remove_tree};
pub use crate::temp::{
    Closed, Injection, KeepPolicy, MAX_INJECTED_FILE_BYTES, RunVerdict, TempWorkspace,
    WorkspaceOptions, check_injection,
};
pub use crate::usage::{Snapshot, Stamp, Usage, UsageTracker, scan};
#[cfg(feature = "mock")]
pub use crate::workspace::MockWorkspace;
pub use crate::workspace::{Entry, EntryKind, Workspace};
