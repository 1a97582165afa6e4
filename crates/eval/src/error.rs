//! The crate's one error type.

use std::path::PathBuf;

use hyoka_proctrack::ProcTrackError;
use hyoka_workspace::WorkspaceError;

/// Everything that can stop the harness from running an eval or writing its records.
///
/// What happens to the agent is never an error: a spawn failure, a limit, a timeout, a
/// failed phase or an interruption is an outcome, recorded in the eval's
/// [`Report`](crate::Report). Errors are what leaves no honest record: bad settings, a
/// workspace that cannot be created, a record that cannot be written, a run that cannot
/// start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A directory or file of the records could not be created or written.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// `create`, `write`, `read`.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A record could not be written atomically.
    #[error("cannot write {path}: {source}")]
    Record {
        /// The record.
        path: PathBuf,
        /// Why.
        #[source]
        source: ProcTrackError,
    },
    /// The workspace (or the isolated home) could not be created or prepared.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// The run's process tracking could not start (the run is live, or an earlier run with
    /// this id was never cleaned, or the reports directory is unusable).
    #[error(transparent)]
    Tracker(#[from] ProcTrackError),
    /// A suite file is not valid; the message names the file, and the eval and field where
    /// there is one.
    #[error("{message}")]
    Suite {
        /// The suite file.
        path: PathBuf,
        /// What is wrong, in one line, starting with the file name.
        message: String,
    },
    /// A Harbor task folder or dataset is not valid; the message says what, the path names
    /// the folder.
    #[error("task {}: {message}", path.display())]
    HarborTask {
        /// The task folder (or dataset directory).
        path: PathBuf,
        /// What is wrong, in one line.
        message: String,
    },
    /// A duration, size, shard or event source given as text is not valid.
    #[error("invalid {what} {text:?}: {reason}")]
    InvalidValue {
        /// `duration`, `size`, `shard`, `event source`.
        what: &'static str,
        /// The text.
        text: String,
        /// Why, with examples of valid values.
        reason: String,
    },
    /// An eval asks for a sandbox or an isolated network the machine cannot give (checked
    /// before anything is created).
    #[error("eval {eval_id}: {reason}")]
    Sandbox {
        /// The eval.
        eval_id: String,
        /// What is missing, and what to do instead.
        reason: String,
    },
    /// A resumed run found finished trials of evals whose settings changed since the run
    /// began.
    #[error(
        "cannot resume: eval{} {} changed since the run began (finished trials were run with \
         other settings); rerun {} with --rerun-changed, or start another run",
        if evals.len() == 1 { "" } else { "s" },
        evals.join(", "),
        if evals.len() == 1 { "its trials" } else { "their trials" }
    )]
    Changed {
        /// The evals that changed, in plan order.
        evals: Vec<String>,
    },
    /// A resume would drop trials the earlier run had (fewer epochs, agents or evals): the
    /// run would change its shape under its id.
    #[error(
        "cannot resume: the earlier run has {} trial{} this plan does not ({}{}): fewer epochs, \
         agents or evals; pass --allow-reshape to leave them out of the run, or start another run",
        trials.len(),
        if trials.len() == 1 { "" } else { "s" },
        trials.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
        if trials.len() > 5 { ", …" } else { "" }
    )]
    Reshaped {
        /// The earlier run's trials the plan lacks, by id.
        trials: Vec<String>,
    },
    /// Abandoned runs could not be listed or cleaned.
    #[error("{context}: {source}")]
    Clean {
        /// `cannot list runs`, or `run <id>`.
        context: String,
        /// Why.
        #[source]
        source: ProcTrackError,
    },
    /// An eval could not run or record (its id names it).
    #[error("eval {eval_id}: {source}")]
    Eval {
        /// The eval.
        eval_id: String,
        /// Why.
        #[source]
        source: Box<EvalError>,
    },
    /// An eval's task panicked or was cancelled.
    #[error("an eval task failed: {source}")]
    Task {
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
}

impl EvalError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn invalid(what: &'static str, text: &str, reason: impl Into<String>) -> Self {
        Self::InvalidValue {
            what,
            text: text.to_owned(),
            reason: reason.into(),
        }
    }

    /// Whether the error is bad input that a caller should fix before running again (exit 2
    /// in the CLI): an invalid suite or value, a run id that is live or was never cleaned,
    /// an invalid id, an unusable reports directory, a sandbox the machine cannot give.
    pub fn is_bad_input(&self) -> bool {
        match self {
            Self::Suite { .. }
            | Self::HarborTask { .. }
            | Self::InvalidValue { .. }
            | Self::Sandbox { .. }
            | Self::Changed { .. }
            | Self::Reshaped { .. }
            | Self::Tracker(
                ProcTrackError::RunLive { .. }
                | ProcTrackError::UncleanRun { .. }
                | ProcTrackError::InvalidId { .. }
                | ProcTrackError::ReportsDir { .. },
            )
            | Self::Workspace(WorkspaceError::InvalidId { .. }) => true,
            Self::Eval { source, .. } => source.is_bad_input(),
            _ => false,
        }
    }
}

impl From<hyoka_events::UnknownEventSource> for EvalError {
    fn from(err: hyoka_events::UnknownEventSource) -> Self {
        Self::invalid(
            "event source",
            &err.text,
            hyoka_events::UnknownEventSource::EXPECTED,
        )
    }
}
