//! The event model every reader produces ([`AgentEvent`], [`AgentNotes`], [`LineCounts`]) and
//! the [`LineReader`] trait; the readers are the submodules, one per format.

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

/// What an agent said about itself while it ran, beyond turns, actions and spending: the
/// model and version it announced, the model API errors it reported, and whether its
/// session totals arrived (see [`AgentEvent`]). `report.json` `events` carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentNotes {
    /// The model the agent announced.
    pub model: Option<String>,
    /// The agent's version, as it announced it.
    pub version: Option<String>,
    /// Transient model API errors reported (retries included).
    pub api_errors: u64,
    /// The last one: its status and what the agent said.
    pub last_api_error: Option<(Option<u16>, String)>,
    /// Whether the agent reported its session totals of spending (Claude Code's `result`,
    /// Codex's `turn.completed`, Gemini's `result`): without them the usage is partial.
    pub totals: bool,
}

impl AgentNotes {
    /// Takes note of one event.
    pub fn note(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Announced { model, version } => {
                if model.is_some() {
                    self.model.clone_from(model);
                }
                if version.is_some() {
                    self.version.clone_from(version);
                }
            }
            AgentEvent::ApiError { status, detail } => {
                self.api_errors += 1;
                self.last_api_error = Some((*status, detail.clone()));
            }
            AgentEvent::Usage(UsageEvent::Total(_)) => self.totals = true,
            AgentEvent::Turn { .. }
            | AgentEvent::ToolCall { .. }
            | AgentEvent::ToolResult { .. }
            | AgentEvent::Usage(_) => {}
        }
    }

    /// Why a trial whose agent failed is the model API's fault, when the agent reported a
    /// transient API error: the text for `report.json` `error`.
    pub fn api_failure(&self) -> Option<String> {
        let (status, detail) = self.last_api_error.as_ref()?;
        Some(match status {
            Some(status) => format!("the model API answered {status}: {detail}"),
            None => format!("the model API failed: {detail}"),
        })
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
    /// A tool call's result came back to the model.
    ToolResult {
        /// What the tool returned, as text, cut on a character boundary to
        /// [`INPUT_PREVIEW_BYTES`] bytes (`…`); `None` when the source gave no text.
        output: Option<String>,
        /// Whether the source marked the result as an error.
        error: bool,
    },
    /// The agent reported tokens or cost.
    Usage(UsageEvent),
    /// The agent said which model it talks to and which version it is (Claude Code's
    /// `system` `init` line, Gemini CLI's `init`); a field it did not say is `None`.
    Announced {
        /// The model, as the agent names it.
        model: Option<String>,
        /// The agent's own version.
        version: Option<String>,
    },
    /// The model's API refused a request (Claude Code's `api_error_status`, Codex's
    /// `last status: 429`, Gemini's `status 503`): the agent may retry, and a session that
    /// then fails failed for the API, not for the agent.
    ApiError {
        /// The HTTP status, when the agent said it.
        status: Option<u16>,
        /// What the agent said, cut to 200 bytes.
        detail: String,
    },
}

impl AgentEvent {
    /// An [`AgentEvent::ApiError`] of `detail`, cut to 200 bytes.
    fn api_error(status: Option<u16>, detail: &str) -> Self {
        Self::ApiError {
            status,
            detail: truncate_chars(detail, 200),
        }
    }
}

/// Whether a model API status is the service's trouble, not the request's: a rate limit
/// (429), an overload (529, Anthropic's) or a server error (5xx). Those make a failed trial
/// an infrastructure error that `--retries` reruns.
pub(crate) fn transient_api_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// The first HTTP status a message names after `status` (`last status: 429 Too Many
/// Requests`, `failed with status 503`, `"code":503`), if any.
fn status_in(text: &str) -> Option<u16> {
    let lower = text.to_ascii_lowercase();
    for key in ["status: ", "status ", "\"code\":", "code: "] {
        let mut rest = lower.as_str();
        while let Some(at) = rest.find(key) {
            rest = &rest[at + key.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if digits.len() == 3
                && let Ok(status) = digits.parse::<u16>()
                && (400..=599).contains(&status)
            {
                return Some(status);
            }
        }
    }
    // The wordings the agents use when they give no number (Codex 0.169 says "Selected
    // model is at capacity" for a 503 `server_is_overloaded`).
    if lower.contains("overloaded") {
        return Some(529);
    }
    if lower.contains("at capacity") || lower.contains("service unavailable") {
        return Some(503);
    }
    if lower.contains("too many requests") || lower.contains("rate limit") {
        return Some(429);
    }
    None
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
