//! Agent events: turns, tool calls and spending, from the agent's own machine-readable
//! output (Claude Code's stream-json, `codex exec --json`, Gemini CLI's stream-json) or from
//! JSON lines the agent appends to `$HYOKA_EVENTS`.
//!
//! Every source produces the same [`AgentEvent`]s, counted one way: a turn is one assistant
//! message, an action is one tool call, and tokens and cost arrive as
//! [`AgentEvent::Usage`]. Unknown or malformed lines are counted and skipped, never fatal.
//! [`EventSource::Auto`] picks the reader from the agent's program name
//! ([`EventSource::for_command`]).
//!
//! # Adding a reader for another agent's format
//!
//! A reader is a [`LineReader`]: a parser from the agent's output, one line at a time, to
//! [`AgentEvent`]s; it keeps whatever state its format needs (the stream-json reader
//! remembers recent message ids, the Codex reader the items it already counted) and its
//! [`LineCounts`], and nothing else. It never counts against limits and never writes records:
//! the eval feeds every event to the one [`Monitor`](crate::Monitor), which counts turns and
//! actions, accumulates spending in its [`UsageMeter`](crate::UsageMeter) and says which limit
//! was crossed, and the records read the monitor. For spending, a reader emits
//! [`UsageEvent::Increment`] when its format reports spending step by step (subtracting what
//! it already reported when the format repeats a running figure, as stream-json does for the
//! lines of one message) and [`UsageEvent::Total`] when the format gives an authoritative
//! running total (Claude Code's `result` line, Codex's `turn.completed`, Gemini's `result`);
//! it leaves a field `None` when the format does not say, so nothing is guessed. A new format
//! then needs an [`EventSource`] variant, its [`EventSource::reader`] arm and, when a program
//! name identifies it, a line in [`EventSource::for_command`], nothing more.

mod codex;
mod gemini;
mod jsonl;
mod lines;
mod source;
mod stream_json;

pub use self::codex::CodexJsonParser;
pub use self::gemini::GeminiStreamJsonParser;
pub use self::jsonl::{JsonlReader, parse_jsonl_event};
pub use self::lines::{LineSplitter, MAX_LINE};
pub use self::source::EventSource;
pub use self::stream_json::{LineKind, StreamJsonParser};

use crate::usage::UsageEvent;

/// What a reader made of the lines it read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Lines that were events of the format (whether or not they meant a turn, an action or
    /// spending): zero means the agent printed nothing the reader understood.
    pub seen: u64,
    /// JSON objects of a type the format does not have.
    pub unknown: u64,
    /// Lines that were not JSON objects, or were oversized.
    pub malformed: u64,
}

impl LineCounts {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: Self) {
        self.seen += other.seen;
        self.unknown += other.unknown;
        self.malformed += other.malformed;
    }
}

/// A reader of one line-oriented event format: it is fed the lines of the agent's output
/// (split by a [`LineSplitter`]) and pushes the [`AgentEvent`]s they carry.
pub trait LineReader: Send {
    /// Reads one line (without its newline), pushing its events into `events`. A blank line
    /// is skipped; anything else is counted as seen, unknown or malformed.
    fn read_line(&mut self, line: &[u8], events: &mut Vec<AgentEvent>);

    /// Counts a line longer than [`MAX_LINE`] (which was not kept) as malformed.
    fn oversized(&mut self);

    /// What the reader made of the lines so far.
    fn counts(&self) -> LineCounts;
}

/// The last few ids a reader saw, to count a repeated item once (bounded: a hostile stream
/// of fresh ids costs no memory).
#[derive(Debug)]
struct RecentIds<const N: usize>(std::collections::VecDeque<String>);

impl<const N: usize> Default for RecentIds<N> {
    fn default() -> Self {
        Self(std::collections::VecDeque::with_capacity(N))
    }
}

impl<const N: usize> RecentIds<N> {
    /// Whether `id` is not among the recent ids; remembers it (forgetting the oldest).
    fn first_time(&mut self, id: &str) -> bool {
        if self.0.iter().any(|seen| seen == id) {
            return false;
        }
        if self.0.len() == N {
            self.0.pop_front();
        }
        self.0.push_back(id.to_owned());
        true
    }
}

/// Whether a line is empty or whitespace only.
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
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
