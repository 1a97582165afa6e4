//! The crate's one error type.

/// What can go wrong with the stub.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StubError {
    /// The script is not valid YAML of the script's shape, or says something impossible.
    #[error("invalid script: {0}")]
    Script(String),
    /// The listener failed.
    #[error("cannot serve on {addr}")]
    Serve {
        /// The address served.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
