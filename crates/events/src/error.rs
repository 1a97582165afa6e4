//! The one error of this crate: an event source named by text that is not one.

/// A name that is not an [`EventSource`](crate::EventSource)'s (`none`, `stream-json`,
/// `jsonl`, `codex-json`, `gemini-stream-json`, `auto`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid event source {text:?}: {}", Self::EXPECTED)]
#[non_exhaustive]
pub struct UnknownEventSource {
    /// The text given.
    pub text: String,
}

impl UnknownEventSource {
    /// The names an event source has, as the error says them.
    pub const EXPECTED: &'static str =
        "expected none, stream-json, jsonl, codex-json, gemini-stream-json or auto";
}
