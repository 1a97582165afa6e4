//! One exit-status enum for the whole CLI, mapped to process exit codes, and a command's
//! failure ([`Fail`]): the message for the user and the status it maps to.

use std::fmt;
use std::process::ExitCode;

/// How a command ended, as the process exit code tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything passed (0).
    Success,
    /// A run or check failed (1): an agent exited non-zero, hit a limit or timed out, or
    /// `clean` left something behind.
    Failure,
    /// Bad input (2): flags, files, ids, sizes or paths. Nothing was started.
    Error,
    /// Interrupted by SIGINT, after teardown (130).
    Interrupted,
    /// Terminated by SIGTERM or SIGHUP, after teardown (143).
    Terminated,
    /// A specific code (the simulated agent's `--exit-code`).
    Code(u8),
}

impl ExitStatus {
    /// The numeric exit code.
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Failure => 1,
            Self::Error => 2,
            Self::Interrupted => 130,
            Self::Terminated => 143,
            Self::Code(code) => code,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(status.code())
    }
}

/// A command's failure: a message for the user and the exit status it maps to.
#[derive(Debug)]
pub(crate) struct Fail {
    pub(crate) status: ExitStatus,
    message: String,
}

impl Fail {
    /// Bad input (exit 2): nothing was started.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            status: ExitStatus::Error,
            message: message.into(),
        }
    }

    /// A failure that maps to `status`.
    pub(crate) fn with(status: ExitStatus, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// A failure while running (exit 1).
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        Self {
            status: ExitStatus::Failure,
            message: message.into(),
        }
    }
}

/// A library call's error as the command's failure: bad input (such as a reports path that
/// does not exist) exits 2, anything else 1.
impl From<hyoka_eval::EvalError> for Fail {
    fn from(err: hyoka_eval::EvalError) -> Self {
        if err.is_bad_input() {
            Self::usage(err.to_string())
        } else {
            Self::failure(err.to_string())
        }
    }
}

/// A report's error as the command's failure: bad input (a run that cannot be read, shards
/// that do not make one run, a page's path that cannot be written to) exits 2, a page that
/// could not be encoded or written 1.
impl From<hyoka_report::ReportError> for Fail {
    fn from(err: hyoka_report::ReportError) -> Self {
        if err.is_bad_input() {
            Self::usage(err.to_string())
        } else {
            Self::failure(err.to_string())
        }
    }
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
