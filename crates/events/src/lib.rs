//! Readers of AI coding agents' own machine-readable output, turned into one event model:
//! turns, tool calls and spending, from Claude Code's stream-json, `codex exec --json`,
//! Gemini CLI's stream-json, or JSON lines the agent appends to `$HYOKA_EVENTS`.
//!
//! # Overview
//!
//! Every source produces the same [`AgentEvent`]s, counted one way: a turn is one assistant
//! message, an action is one tool call, and tokens and cost arrive as
//! [`AgentEvent::Usage`], a [`UsageEvent`] that a [`UsageMeter`] accumulates into a
//! [`TokenUsage`]. Unknown or malformed lines are counted ([`LineCounts`]) and skipped, never
//! fatal. [`EventSource`] names a format and makes its [`LineReader`];
//! [`EventSource::Auto`] picks the reader from the agent's program name
//! ([`EventSource::for_command`]). A [`LineSplitter`] cuts a byte stream into lines of at most
//! [`MAX_LINE`] bytes. The crate does no I/O and reads no clock: `hyoka-eval` feeds it the
//! agent's stdout and counts the events against its limits.
//!
//! # Example
//!
//! ```
//! use hyoka_events::{AgentEvent, EventSource, LineSplitter, UsageMeter};
//!
//! let source: EventSource = "stream-json".parse()?;
//! let mut reader = source.reader().expect("stream-json reads stdout");
//! let stdout = concat!(
//!     r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}"#,
//!     "\n",
//!     r#"{"type":"result","subtype":"success","total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":5}}"#,
//!     "\n",
//! );
//! let (mut events, mut splitter) = (Vec::new(), LineSplitter::default());
//! splitter.feed(stdout.as_bytes(), |line, _oversized| reader.read_line(line, &mut events));
//! splitter.finish(|line, _oversized| reader.read_line(line, &mut events));
//!
//! let mut meter = UsageMeter::default();
//! for event in &events {
//!     if let AgentEvent::Usage(usage) = event {
//!         meter.apply(usage);
//!     }
//! }
//! assert!(events.iter().any(|e| matches!(e, AgentEvent::ToolCall { .. })));
//! assert_eq!(meter.usage().and_then(|u| u.cost_usd), Some(0.25));
//! assert_eq!(reader.counts().malformed, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Adding a reader for another agent's format
//!
//! A reader is a [`LineReader`]: a parser from the agent's output, one line at a time, to
//! [`AgentEvent`]s; it keeps whatever state its format needs (the stream-json reader
//! remembers recent message ids, the Codex reader the items it already counted) and its
//! [`LineCounts`], and nothing else. It never counts against limits and never writes records:
//! the eval (`hyoka-eval`) feeds every event to the one `Monitor`, which counts turns and actions,
//! accumulates spending in its [`UsageMeter`] and says which limit was crossed, and the records read the monitor. For spending, a reader emits
//! [`UsageEvent::Increment`] when its format reports spending step by step (subtracting what
//! it already reported when the format repeats a running figure, as stream-json does for the
//! lines of one message) and [`UsageEvent::Total`] when the format gives an authoritative
//! running total (Claude Code's `result` line, Codex's `turn.completed`, Gemini's `result`);
//! it leaves a field `None` when the format does not say, so nothing is guessed. A new format
//! then needs an [`EventSource`] variant, its [`EventSource::reader`] arm and, when a program
//! name identifies it, a line in [`EventSource::for_command`], nothing more.
#![warn(
    clippy::disallowed_methods,
    reason = "libraries read no environment and take time from their callers"
)]

mod error;
mod events;
mod usage;

pub use crate::error::UnknownEventSource;
pub use crate::events::{
    AgentEvent, AgentNotes, CodexJsonParser, EventSource, GeminiStreamJsonParser,
    INPUT_PREVIEW_BYTES, JsonlReader, LineCounts, LineKind, LineReader, LineSplitter, MAX_LINE,
    StreamJsonParser, parse_jsonl_event, truncate_chars,
};
pub use crate::usage::{TokenUsage, UsageEvent, UsageMeter};
