//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while tracking, tearing down or cleaning up processes.
///
/// Variants carry the path, pid or value a user needs to act on and keep the OS error as the
/// `source`. Messages are lowercase and name the offending value. Decisions that are not
/// failures (a process that vanished, an identity mismatch, a hostile ledger line) are reported
/// in the returned reports, never as errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcTrackError {
    /// A run or eval id does not match `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
    #[error("invalid {kind} id {id:?}: expected [A-Za-z0-9][A-Za-z0-9._-]{{0,63}}")]
    InvalidId {
        /// Which id was rejected (`run` or `eval`).
        kind: &'static str,
        /// The rejected value.
        id: String,
    },
    /// An identity string is not `<pid> <start_ticks> <boot_id>`.
    #[error("invalid process identity {text:?}: {reason}")]
    InvalidIdentity {
        /// The rejected text.
        text: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A path cannot be recorded in the ledger (not absolute, or holds a newline).
    #[error("cannot record path {path:?}: {reason}")]
    InvalidPath {
        /// The rejected path.
        path: PathBuf,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// Another live process holds the owner lock of this run.
    #[error("run directory {path:?} is owned by a live run (owner lock held)")]
    RunLive {
        /// The lock file.
        path: PathBuf,
    },
    /// The run directory holds a ledger of an earlier run with this id that was never
    /// cleaned; starting over would lose what `clean` needs.
    #[error("run directory {path:?} holds an uncleaned ledger: run `hyoka clean` first")]
    UncleanRun {
        /// The ledger.
        path: PathBuf,
    },
    /// The same eval id was spawned twice in one run.
    #[error("eval {eval_id:?} is already tracked in this run")]
    DuplicateEval {
        /// The eval id.
        eval_id: String,
    },
    /// The agent could not be started (the program is missing, not executable, …).
    #[error("cannot spawn {program:?}")]
    Spawn {
        /// The program that was to be started (the agent, or the shim launcher).
        program: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The shim started but broke its protocol (closed its report pipe or sent garbage).
    #[error("subreaper shim {program:?} failed: {reason}")]
    Shim {
        /// The launcher program.
        program: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The cgroup layer was required but is not available on this machine.
    #[error("cgroup v2 containment is not available: {reason}")]
    CgroupUnavailable {
        /// Why (no cgroup2 mount, not writable, …).
        reason: String,
    },
    /// A sandbox cannot be prepared: a writable path cannot be opened, or the machine lacks
    /// Landlock or network namespaces (see `SandboxSupport::detect`).
    #[error("cannot sandbox the agent: {reason}")]
    Sandbox {
        /// What is missing or failed.
        reason: String,
    },
    /// The process table could not be read.
    #[error("cannot read the process table at {path:?}")]
    ProcTable {
        /// The file or directory under `/proc`.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A reports file or directory failed the checks that make it evidence: it is a symbolic
    /// link, not a regular file or directory, writable by someone other than its owner,
    /// owned by another user than its run directory, or larger than a ledger hyoka writes.
    /// Nothing read from it is acted on or shown.
    #[error("refusing {path:?}: {reason}")]
    Untrusted {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A reports directory cannot be used: it does not exist (where it must), is not a
    /// directory, is read-only, not writable, or a kernel file system such as `/proc`.
    #[error("reports directory {path:?} {reason}")]
    ReportsDir {
        /// The reports directory as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A blocking task was cancelled or panicked (only in the async wrappers).
    #[error("background task failed: {reason}")]
    Task {
        /// The join error, as text.
        reason: String,
    },
    /// An operating-system call on a file failed.
    #[error("cannot {op} {path:?}")]
    Io {
        /// What was being done (`create`, `lock`, `write`, `rename`, …).
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl ProcTrackError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
