//! The one error of reading runs: what stops a page, a merge or a comparison from being made.

use std::path::PathBuf;

use hyoka_proctrack::ProcTrackError;

/// Why a run could not be read, merged, compared or drawn.
///
/// A trial whose records are missing, unreadable, oversized or lead outside the run
/// directory is not an error of the page: the page shows that trial with the reason. Errors
/// are what leaves no result: the run itself cannot be read, the shards do not make one run,
/// or the page cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A run's `run.json` could not be read as evidence (a link, a special file, a file
    /// others may write, too large, unreadable) or is not a run summary; the message names
    /// the file.
    #[error("{message}")]
    Summary {
        /// The file.
        path: PathBuf,
        /// What is wrong, in one line, naming the file.
        message: String,
    },
    /// Two shards' summaries name the same eval.
    #[error("eval {eval_id} appears in more than one input (again in {})", input.display())]
    DuplicateEval {
        /// The eval.
        eval_id: String,
        /// The run directory of the second summary naming it.
        input: PathBuf,
    },
    /// The shards given to a merge do not make one run: different suites or run ids,
    /// missing or repeated shards, ids that break the id grammar, times that run backwards,
    /// no trials. The message names the inputs.
    #[error("{message}")]
    Merge {
        /// What is wrong, in one line, naming the inputs.
        message: String,
    },
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
    /// Two runs compared have no task (eval id and agent) in common: they are not two runs
    /// of one suite, and a comparison of them would be a table of absences.
    #[error(
        "{a} and {b} have no task in common ({a_tasks} and {b_tasks} tasks): compare two runs of one suite"
    )]
    Unrelated {
        /// The first run, as given.
        a: String,
        /// The second run, as given.
        b: String,
        /// The first run's tasks.
        a_tasks: usize,
        /// The second run's tasks.
        b_tasks: usize,
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

impl ReportError {
    /// Whether the caller gave bad input (exit 2 in the CLI): everything but a page that
    /// could not be encoded or written.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::Encode { .. } | Self::Write { .. })
    }
}
