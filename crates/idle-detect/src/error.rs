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
    /// A checker command could not be started.
    #[error("could not start checker command `{program}`")]
    CheckerSpawn {
        /// The program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Talking to a running checker command failed.
    #[error("checker command `{program}`: i/o error")]
    CheckerIo {
        /// The program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}
