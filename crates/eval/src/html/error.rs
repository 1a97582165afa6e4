//! The error of the page generator: what stops a page from being written at all.

use std::path::PathBuf;

use hyoka_proctrack::ProcTrackError;

/// Why `hyoka report html` could not write a page.
///
/// A trial whose records are missing, unreadable, oversized or lead outside the run
/// directory is not an error: the page shows that trial with the reason. Errors are what
/// leaves no page: the run itself cannot be read, or the page cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HtmlError {
    /// The input is neither a run directory holding a `run.json` nor a readable `run.json`.
    #[error("{path}: {reason}")]
    NotARun {
        /// The input as given.
        path: PathBuf,
        /// Why, in a few words.
        reason: String,
    },
    /// The input's `run.json` is not JSON of a run.
    #[error("{path} is not a run.json: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A page is of one run or compares two; this many were given.
    #[error("a page shows one run or compares two, not {count}")]
    Inputs {
        /// How many inputs were given.
        count: usize,
    },
    /// The page's path cannot be written to: its directory does not exist, or it names a
    /// directory.
    #[error("cannot write the page to {path}: {reason}")]
    Output {
        /// The page's path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The page could not be encoded (its data serialized or compressed).
    #[error("cannot encode the page: {source}")]
    Encode {
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The page could not be written atomically.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The page's path.
        path: PathBuf,
        /// Why.
        #[source]
        source: ProcTrackError,
    },
}

impl HtmlError {
    /// Whether the caller gave bad input (exit 2 in the CLI): everything but a page that
    /// could not be encoded or written.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::Encode { .. } | Self::Write { .. })
    }
}
