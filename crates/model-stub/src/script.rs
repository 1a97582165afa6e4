//! The script: what the model answers, reply by reply, as YAML.
//!
//! ```yaml
//! model: stub-model            # the model name the replies carry (default: the request's)
//! turns:                       # reply N answers the request whose history holds N replies
//!   - thinking: "The user wants a file."
//!     text: "I will write it."
//!     tools:
//!       - name: Write          # the tool as the agent names it
//!         input: { file_path: g.txt, content: "hello\n" }
//!     usage: { input_tokens: 120, output_tokens: 20, cache_read_tokens: 50, cache_write_tokens: 10 }
//!     pace: 500ms              # how long the reply streams, spread over its chunks
//!   - error: { kind: rate_limited, times: 2 }   # the first two attempts get a 429
//!     text: "Done."
//! after: { text: "Done." }     # the reply once the turns are used up (this is the default)
//! side: { text: "ok" }         # the reply to side requests (titles, checks; see below)
//! ```
//!
//! A tool call's `input` is a JSON object (a function call) or a string (a custom, free-form
//! tool call such as Codex's `apply_patch`). `delay` waits before the answer starts, `stall`
//! stops the stream part way (`stall: 30s` after the first chunk, or
//! `stall: { after: 3, for: 30s }`), `error` answers with an API error (`rate_limited` 429,
//! `unavailable` 503, `overloaded`, each protocol's own overload answer, `server` 500) the
//! first `times` attempts of that reply (default 1), and `chunk` is how many characters of
//! text each streamed delta carries (default 16).

use std::time::Duration;

use serde::Deserialize;

use crate::error::StubError;

/// A parsed script: the replies, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The model name the replies carry; `None` echoes the request's.
    pub model: Option<String>,
    /// Reply `N` answers a request whose history already holds `N` replies.
    pub turns: Vec<Turn>,
    /// The reply once the turns are used up.
    pub after: Turn,
    /// The reply to a side request (one that offers the model no tools: a title, a
    /// classification, a check), which is never a turn of the conversation.
    pub side: Turn,
}

/// One reply of the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    /// Thinking (Anthropic `thinking` block, OpenAI reasoning summary, Gemini thought part).
    pub thinking: Option<String>,
    /// The reply's text.
    pub text: Option<String>,
    /// The tool calls, in order, after the text.
    pub tools: Vec<ToolCall>,
    /// The tokens the reply reports.
    pub usage: Usage,
    /// How long the reply takes to stream, spread evenly between its chunks.
    pub pace: Duration,
    /// How long to wait before answering at all.
    pub delay: Duration,
    /// A pause part way through the stream.
    pub stall: Option<Stall>,
    /// An API error for the first attempts of this reply.
    pub error: Option<ScriptedError>,
    /// Characters of text per streamed delta.
    pub chunk: usize,
}

/// One tool call of a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name, as the agent offers it (`Write`, `shell`, `write_file`, …).
    pub name: String,
    /// Its input.
    pub input: ToolInput,
}

/// A tool call's input.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolInput {
    /// A function call's arguments: a JSON object.
    Json(serde_json::Map<String, serde_json::Value>),
    /// A custom (free-form) tool call's input text.
    Text(String),
}

/// The tokens a reply reports, with Anthropic's meanings: `input_tokens` excludes the cached
/// ones. Each protocol reports them its own way (OpenAI and Gemini count cached tokens inside
/// their input figure), so an agent that reads them right records these numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Output tokens spent reasoning (OpenAI and Gemini report them apart).
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// All input tokens: uncached, cache reads and cache writes.
    pub fn all_input(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }
}

/// A pause in the middle of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// Chunks sent before the pause.
    pub after: usize,
    /// How long the pause lasts.
    pub duration: Duration,
}

/// An API error the script answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptedError {
    /// Which error.
    pub kind: ErrorKind,
    /// How many attempts of the reply get it before the reply is served.
    pub times: u32,
}

/// The API errors a script can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// 429, the provider's rate-limit error.
    RateLimited,
    /// 503, the service is unavailable.
    Unavailable,
    /// The provider's overload answer (Anthropic: 529 `overloaded_error`; OpenAI and
    /// Gemini: 503 with their overload message).
    Overloaded,
    /// 500, an internal error.
    Server,
}

/// The default characters of text per streamed delta.
pub const DEFAULT_CHUNK: usize = 16;
/// The most turns a script may hold.
pub const MAX_TURNS: usize = 10_000;

impl Script {
    /// Parses a YAML script.
    ///
    /// # Errors
    ///
    /// [`StubError::Script`] naming the line, column and field of what is wrong.
    pub fn from_yaml(text: &str) -> Result<Self, StubError> {
        let mut failed_at: Option<String> = None;
        let raw = serde_saphyr::with_deserializer_from_str(text, |de| {
            serde_path_to_error::deserialize::<_, RawScript>(de).map_err(|e| {
                failed_at = Some(e.path().to_string());
                e.into_inner()
            })
        })
        .map_err(|err| {
            let location = err.location().map_or_else(String::new, |l| {
                format!("line {} column {}: ", l.line(), l.column())
            });
            let field = failed_at
                .filter(|f| f != "." && !f.is_empty())
                .map_or_else(String::new, |f| format!("field {f}: "));
            let message = err.to_string();
            let first = message.lines().next().unwrap_or_default();
            StubError::Script(format!("{location}{field}{first}"))
        })?;
        raw.validate()
    }

    /// A script that answers every request with `text`.
    pub fn constant(text: &str) -> Self {
        let turn = Turn {
            text: Some(text.to_owned()),
            chunk: DEFAULT_CHUNK,
            ..Turn::default()
        };
        Self {
            model: None,
            turns: Vec::new(),
            after: turn.clone(),
            side: turn,
        }
    }

    /// The reply to the request whose history holds `index` replies.
    pub fn turn(&self, index: usize) -> &Turn {
        self.turns.get(index).unwrap_or(&self.after)
    }
}

impl Turn {
    /// Whether the reply calls a tool (the agent then answers with the tool's result).
    pub fn calls_tools(&self) -> bool {
        !self.tools.is_empty()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    turns: Vec<RawTurn>,
    #[serde(default)]
    after: Option<RawTurn>,
    #[serde(default)]
    side: Option<RawTurn>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tools: Vec<RawTool>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    pace: Option<String>,
    #[serde(default)]
    delay: Option<String>,
    #[serde(default)]
    stall: Option<RawStall>,
    #[serde(default)]
    error: Option<RawError>,
    #[serde(default)]
    chunk: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    #[serde(default)]
    input: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawStall {
    Short(String),
    Full {
        #[serde(default)]
        after: Option<usize>,
        #[serde(rename = "for")]
        duration: String,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawError {
    Status(u16),
    Kind(ErrorKind),
    Full {
        kind: ErrorKind,
        #[serde(default)]
        times: Option<u32>,
    },
}

fn duration(text: Option<&str>, what: &str) -> Result<Duration, String> {
    let Some(text) = text else {
        return Ok(Duration::ZERO);
    };
    let parsed = humantime::parse_duration(text.trim())
        .map_err(|e| format!("{what}: invalid duration {text:?}: {e}"))?;
    // A script is for tests and offline runs: an hour is more than any of them waits.
    if parsed > Duration::from_hours(1) {
        return Err(format!("{what}: {text:?} is longer than an hour"));
    }
    Ok(parsed)
}

impl RawScript {
    fn validate(self) -> Result<Script, StubError> {
        if self.turns.len() > MAX_TURNS {
            return Err(StubError::Script(format!(
                "{} turns; a script holds at most {MAX_TURNS}",
                self.turns.len()
            )));
        }
        let turns = self
            .turns
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                t.validate()
                    .map_err(|e| StubError::Script(format!("turns[{i}]: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let done = || RawTurn {
            text: Some("Done.".to_owned()),
            ..RawTurn::default()
        };
        let after = self
            .after
            .unwrap_or_else(done)
            .validate()
            .map_err(|e| StubError::Script(format!("after: {e}")))?;
        let side = self
            .side
            .unwrap_or_else(done)
            .validate()
            .map_err(|e| StubError::Script(format!("side: {e}")))?;
        Ok(Script {
            model: self.model,
            turns,
            after,
            side,
        })
    }
}

impl RawTurn {
    fn validate(self) -> Result<Turn, String> {
        let tools = self
            .tools
            .into_iter()
            .enumerate()
            .map(|(i, tool)| {
                if tool.name.trim().is_empty() {
                    return Err(format!("tools[{i}]: a tool call needs a name"));
                }
                let input = match tool.input {
                    None => ToolInput::Json(serde_json::Map::new()),
                    Some(serde_json::Value::Object(map)) => ToolInput::Json(map),
                    Some(serde_json::Value::String(text)) => ToolInput::Text(text),
                    Some(other) => {
                        return Err(format!(
                            "tools[{i}].input: expected an object (a function call) or a string (a custom tool call), got {other}"
                        ));
                    }
                };
                Ok(ToolCall {
                    name: tool.name,
                    input,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let stall = match self.stall {
            None => None,
            Some(RawStall::Short(text)) => Some(Stall {
                after: 1,
                duration: duration(Some(&text), "stall")?,
            }),
            Some(RawStall::Full { after, duration: d }) => Some(Stall {
                after: after.unwrap_or(1),
                duration: duration(Some(&d), "stall.for")?,
            }),
        };
        let error = match self.error {
            None => None,
            Some(RawError::Kind(kind)) => Some(ScriptedError { kind, times: 1 }),
            Some(RawError::Full { kind, times }) => Some(ScriptedError {
                kind,
                times: times.unwrap_or(1),
            }),
            Some(RawError::Status(status)) => Some(ScriptedError {
                kind: match status {
                    429 => ErrorKind::RateLimited,
                    503 => ErrorKind::Unavailable,
                    529 => ErrorKind::Overloaded,
                    500 => ErrorKind::Server,
                    other => {
                        return Err(format!(
                            "error: status {other} is not scripted (429, 500, 503, 529, or rate_limited, unavailable, overloaded, server)"
                        ));
                    }
                },
                times: 1,
            }),
        };
        let chunk = self.chunk.unwrap_or(DEFAULT_CHUNK);
        if chunk == 0 {
            return Err("chunk: must be at least 1".to_owned());
        }
        Ok(Turn {
            thinking: self.thinking,
            text: self.text,
            tools,
            usage: self.usage,
            pace: duration(self.pace.as_deref(), "pace")?,
            delay: duration(self.delay.as_deref(), "delay")?,
            stall,
            error,
            chunk,
        })
    }
}

#[cfg(test)]
mod tests;
