//! The crate's error type.

/// Everything that can go wrong in `hyoka-idle-detect`: bad profiles, bad recordings, and the
/// command-backed checkers' process failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    /// No built-in profile has this name.
    #[error("unknown profile `{name}` (built-in profiles: {known})")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The built-in names, comma-separated.
        known: String,
    },
    /// A profile file is not valid TOML or does not have the profile's shape.
    #[error("profile `{profile}` is not valid")]
    ProfileSyntax {
        /// The profile's name (or the file's, when the name is unknown).
        profile: String,
        /// The parser's error, with line and column.
        #[source]
        source: toml::de::Error,
    },
    /// A profile rule is inconsistent (for example a `blocked` rule without a kind).
    #[error("profile `{profile}`, rule `{rule}`: {reason}")]
    ProfileRule {
        /// The profile's name.
        profile: String,
        /// The rule's id.
        rule: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A regular expression in a profile does not compile.
    #[error("profile `{profile}`, rule `{rule}`: bad regex `{pattern}`")]
    ProfileRegex {
        /// The profile's name.
        profile: String,
        /// The rule's id (or `layout.<key>`).
        rule: String,
        /// The pattern as written.
        pattern: String,
        /// The regex compiler's error.
        #[source]
        source: Box<regex::Error>,
    },
    /// An asciicast recording is malformed.
    #[error("asciicast line {line}: {reason}")]
    Cast {
        /// The 1-based line number in the recording.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// Why an AI check produced no verdict. Checker errors count towards the checker's back-off
/// and its disabling after repeated failures (see [`CheckerMachine`](crate::CheckerMachine)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The checker printed nothing.
    #[error("empty output from AI check")]
    EmptyOutput,
    /// The first line is not a verdict.
    #[error("could not parse verdict from: {first:?}")]
    Unparsable {
        /// The first 100 characters of the output.
        first: String,
    },
    /// The check did not finish in time (its process group was killed).
    #[error("AI check timed out after {after:?}")]
    Timeout {
        /// The timeout.
        after: std::time::Duration,
    },
    /// The check was cancelled before it finished (its process group was killed).
    #[error("cancelled")]
    Cancelled,
    /// The checker command could not be started.
    #[error("could not start checker command `{program}`")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Talking to the checker command failed.
    #[error("checker command `{program}`: i/o error")]
    Io {
        /// The program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The checker command exited unsuccessfully.
    #[error("checker command `{program}` failed with exit code {code:?}: {stderr}")]
    Failed {
        /// The program.
        program: String,
        /// Its exit code (`None` when killed by a signal).
        code: Option<i32>,
        /// The start of what it wrote to stderr.
        stderr: String,
    },
}
