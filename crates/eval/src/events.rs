//! Agent events: turns, tool calls and spending, from Claude Code's stream-json or from JSON
//! lines the agent appends to `$HYOKA_EVENTS`.
//!
//! Both sources produce the same [`AgentEvent`]s, counted one way: a turn is one assistant
//! message, an action is one tool call, and tokens and cost arrive as
//! [`AgentEvent::Usage`]. Unknown or malformed lines are counted and skipped, never fatal.
//!
//! # Adding a reader for another agent's format
//!
//! A reader is a parser from the agent's output (a line, a chunk) to [`AgentEvent`]s; it
//! keeps whatever state its format needs (the stream-json reader remembers recent message
//! ids) and nothing else. It never counts against limits and never writes records: the eval
//! feeds every event to the one [`Monitor`](crate::Monitor), which counts turns and actions,
//! accumulates spending in its [`UsageMeter`](crate::UsageMeter) and says which limit was
//! crossed, and the records read the monitor. For spending, a reader emits
//! [`UsageEvent::Increment`] when its format reports spending step by step (subtracting what
//! it already reported when the format repeats a running figure, as stream-json does for the
//! lines of one message) and [`UsageEvent::Total`] when the format gives an authoritative
//! running total (Claude Code's `result` line); it leaves a field `None` when the format does
//! not say, so nothing is guessed. A new format then needs an [`EventSource`] variant and
//! a line in the eval's output pump (`eval.rs`), nothing more.

mod jsonl;
mod lines;
mod stream_json;

pub use self::jsonl::parse_jsonl_event;
pub use self::lines::{LineSplitter, MAX_LINE};
pub use self::stream_json::{LineKind, StreamJsonParser};

use crate::usage::UsageEvent;

/// How the harness learns what the agent does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventSource {
    /// No events: only files, bytes and time are limited.
    #[default]
    None,
    /// Claude Code `--output-format stream-json` on the agent's stdout.
    StreamJson,
    /// JSON lines the agent appends to `$HYOKA_EVENTS`.
    Jsonl,
}

impl std::str::FromStr for EventSource {
    type Err = crate::error::EvalError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Self::None),
            "stream-json" => Ok(Self::StreamJson),
            "jsonl" => Ok(Self::Jsonl),
            other => Err(crate::error::EvalError::invalid(
                "event source",
                other,
                "expected none, stream-json or jsonl",
            )),
        }
    }
}

/// One thing the agent did.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// An assistant message began.
    Turn {
        /// The message id, when the source gives one.
        message_id: Option<String>,
    },
    /// A tool call.
    ToolCall {
        /// The tool's name (`Write`, `Bash`, …).
        name: String,
        /// The file the call names, when it names one.
        path: Option<String>,
        /// The call's input, as JSON text, truncated on a character boundary.
        input: Option<String>,
    },
    /// The agent reported tokens or cost.
    Usage(UsageEvent),
}

/// How much of a tool call's input the timeline keeps.
pub const INPUT_PREVIEW_BYTES: usize = 512;

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut with `…`.
pub fn truncate_chars(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Picks the path a tool call's input names (`file_path`, `path`, `notebook_path`).
fn input_path(input: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Paths {
        file_path: Option<String>,
        path: Option<String>,
        notebook_path: Option<String>,
    }
    let paths: Paths = serde_json::from_str(input).ok()?;
    paths.file_path.or(paths.path).or(paths.notebook_path)
}

#[cfg(test)]
mod tests;
