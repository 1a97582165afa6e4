//! Claude Code's `--output-format stream-json`.
//!
//! The CLI writes one JSON object per line: `system` (init), `assistant` (one line per
//! content block; the lines of one message share `message.id`), `user` (tool results),
//! `result`, and others. A turn is one assistant message, counted when a line carries a
//! message id not seen among the recent ones (sub-agent lines may interleave); an action is
//! one `tool_use` block. Content that is not a block list (some captures carry a placeholder
//! string) is accepted and yields no tool calls.
//!
//! Spending: an assistant line's `message.usage` is the message's usage so far (the lines of
//! one message repeat it, growing), so each line yields the increase over the message's
//! previous line as a [`UsageEvent::Increment`]; the `result` line's `usage` and
//! `total_cost_usd` (`cost_usd` in older versions) are the session's totals, a
//! [`UsageEvent::Total`]. Usage or cost of another shape (a placeholder string) is ignored.
//!
//! With `--include-partial-messages`, Claude Code also writes the API's stream as
//! `stream_event` lines: a `message_start` opens a message (the turn is counted there, before
//! its first block is complete) and the `message_delta` at its end carries the message's real
//! output tokens, which the `assistant` lines never do (they repeat `message_start`'s 1). The
//! increase over what the message reported so far is an increment, so `--max-tokens` fires
//! as each message ends instead of at the `result` line. The cost comes only in `result`.
//!
//! What the agent says about itself: the `system` `init` line's `model` and
//! `claude_code_version` are an [`AgentEvent::Announced`]. When the model API refuses a
//! request, Claude Code 2.1 writes a synthetic assistant line (`"is_api_error_message":
//! true`, `model` `<synthetic>`) with `api_error_status` (529 for an overload) and a
//! `result` with `"terminal_reason": "api_error"`: that line is no turn of the model but an
//! [`AgentEvent::ApiError`] when the status is transient (429, 5xx).
//!
//! Parsing borrows from the line and skips every field it does not need, so it costs a
//! fraction of building a `serde_json::Value` (see the `events` benchmark).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{
    AgentEvent, INPUT_PREVIEW_BYTES, LineCounts, LineReader, input_path, is_blank, truncate_chars,
};
use crate::usage::{TokenUsage, UsageEvent};

/// What a line was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// `system`.
    System,
    /// `assistant`.
    Assistant,
    /// `user`.
    User,
    /// `result`.
    Result,
    /// `stream_event` (`--include-partial-messages`).
    Partial,
    /// Valid JSON with another or no `type`.
    Unknown,
    /// Not JSON, or not an object, or oversized.
    Malformed,
    /// Empty or whitespace only.
    Blank,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(default)]
    usage: MaybeObject<RawUsage>,
    #[serde(borrow, default)]
    total_cost_usd: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cost_usd: Option<&'a RawValue>,
    #[serde(borrow, default)]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    claude_code_version: Option<Cow<'a, str>>,
    #[serde(default)]
    is_api_error_message: Option<bool>,
    #[serde(borrow, default)]
    api_error_status: Option<&'a RawValue>,
    #[serde(borrow, default)]
    api_error_type: Option<Cow<'a, str>>,
    /// A `stream_event`'s API event.
    #[serde(borrow, default)]
    event: MaybeObject<StreamEvent<'a>>,
    /// The sub-agent's tool call a line belongs to (`null` for the main conversation).
    #[serde(borrow, default)]
    parent_tool_use_id: Option<Cow<'a, str>>,
}

/// An Anthropic streaming event, as a `stream_event` line carries it.
#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    /// `message_start`'s message.
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    /// `message_delta`'s usage: the message's totals so far.
    #[serde(default)]
    usage: MaybeObject<RawUsage>,
}

impl Line<'_> {
    /// The API error this line reports, if its status is transient.
    fn api_error(&self) -> Option<AgentEvent> {
        let status = self
            .api_error_status
            .and_then(|raw| serde_json::from_str::<u16>(raw.get()).ok())
            .or_else(|| (self.api_error_type.as_deref() == Some("overloaded_error")).then_some(529))
            .filter(|s| super::transient_api_status(*s))?;
        let detail = format!(
            "api_error_status {status}{}",
            self.api_error_type
                .as_deref()
                .map_or_else(String::new, |t| format!(" ({t})"))
        );
        Some(AgentEvent::api_error(Some(status), &detail))
    }
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Content<'a>,
    #[serde(default)]
    usage: MaybeObject<RawUsage>,
}

/// The token fields of an Anthropic `usage` object; a field of another shape is `None`.
#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Lenient,
    #[serde(default)]
    output_tokens: Lenient,
    #[serde(default)]
    cache_read_input_tokens: Lenient,
    #[serde(default)]
    cache_creation_input_tokens: Lenient,
}

impl RawUsage {
    fn tokens(self) -> TokenUsage {
        TokenUsage {
            input_tokens: self.input_tokens.0,
            output_tokens: self.output_tokens.0,
            cache_read_tokens: self.cache_read_input_tokens.0,
            cache_creation_tokens: self.cache_creation_input_tokens.0,
            cost_usd: None,
        }
    }
}

/// A token count where one is expected; `None` for a value of any other shape.
#[derive(Default)]
struct Lenient(Option<u64>);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LenientVisitor;
        impl<'de> Visitor<'de> for LenientVisitor {
            type Value = Lenient;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a token count or anything else")
            }
            fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
                Ok(Lenient(Some(n)))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Lenient(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Lenient(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
        }
        deserializer.deserialize_any(LenientVisitor)
    }
}

/// A cost in dollars: a finite, non-negative number, nothing else.
fn cost(raw: Option<&RawValue>) -> Option<f64> {
    serde_json::from_str::<f64>(raw?.get())
        .ok()
        .filter(|c| c.is_finite() && *c >= 0.0)
}

#[derive(Default)]
struct Content<'a>(Vec<Block<'a>>);

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: MaybeBool,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of content blocks or anything else")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                // A block that is not an object is skipped, not fatal.
                while let Some(block) = seq.next_element::<MaybeObject<Block<'a>>>()? {
                    blocks.extend(block.object());
                }
                Ok(Content(blocks))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Content::default())
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Content::default())
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Content::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::default())
            }
        }
        deserializer.deserialize_any(ContentVisitor(std::marker::PhantomData))
    }
}

/// An object of shape `T`, or any other value (skipped): content blocks and `usage` fields
/// whose other shapes (a placeholder string) cost nothing but themselves.
#[derive(Default)]
enum MaybeObject<T> {
    Object(T),
    #[default]
    Other,
}

impl<T> MaybeObject<T> {
    fn object(self) -> Option<T> {
        match self {
            Self::Object(value) => Some(value),
            Self::Other => None,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MaybeObject<T> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = MaybeObject<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object or anything else")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(MaybeObject::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(MaybeObject::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MaybeObject::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(MaybeObject::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeObject::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeObject::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeObject::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeObject::Other)
            }
        }
        deserializer.deserialize_any(ObjectVisitor(std::marker::PhantomData))
    }
}

/// How many recent message ids are remembered to recognise the continuation of a message.
const RECENT_IDS: usize = 8;

/// A stateful stream-json reader: feed it lines, get events and line kinds.
#[derive(Debug, Default)]
pub struct StreamJsonParser {
    /// Recent message ids, each with the most its lines reported of each figure.
    recent: std::collections::VecDeque<(String, TokenUsage)>,
    /// Per conversation (the main one, or a sub-agent's tool call), the message its last
    /// `message_start` opened, which its `message_delta` completes.
    open: std::collections::VecDeque<(Option<String>, String)>,
    /// Lines of a known `type` (`system`, `assistant`, `user`, `result`).
    pub seen: u64,
    /// Lines with an unknown `type`.
    pub unknown: u64,
    /// Lines that were not JSON objects (or were oversized).
    pub malformed: u64,
}

impl StreamJsonParser {
    /// Parses one line (without its newline), pushing its events into `events`.
    pub fn feed_line(&mut self, line: &[u8], events: &mut Vec<AgentEvent>) -> LineKind {
        if is_blank(line) {
            return LineKind::Blank;
        }
        let Ok(parsed) = serde_json::from_slice::<Line<'_>>(line) else {
            self.malformed += 1;
            return LineKind::Malformed;
        };
        if matches!(
            parsed.kind.as_deref(),
            Some("assistant" | "system" | "user" | "result" | "stream_event")
        ) {
            self.seen += 1;
        }
        let kind = match parsed.kind.as_deref() {
            Some("assistant") => LineKind::Assistant,
            Some("system") => {
                if parsed.subtype.as_deref() == Some("init") {
                    events.push(AgentEvent::Announced {
                        model: parsed.model.as_deref().map(str::to_owned),
                        version: parsed.claude_code_version.as_deref().map(str::to_owned),
                    });
                }
                return LineKind::System;
            }
            Some("user") => {
                if let Some(message) = parsed.message {
                    for block in message.content.0 {
                        if block.kind.as_deref() == Some("tool_result") {
                            events.push(AgentEvent::ToolResult {
                                output: block.content.and_then(result_text),
                                error: block.is_error.0 == Some(true),
                            });
                        }
                    }
                }
                return LineKind::User;
            }
            Some("stream_event") => {
                self.stream_event(parsed, events);
                return LineKind::Partial;
            }
            Some("result") => {
                events.extend(parsed.api_error());
                let mut total = parsed
                    .usage
                    .object()
                    .map(RawUsage::tokens)
                    .unwrap_or_default();
                total.cost_usd = cost(parsed.total_cost_usd).or_else(|| cost(parsed.cost_usd));
                if !total.is_empty() {
                    events.push(AgentEvent::Usage(UsageEvent::Total(total)));
                }
                return LineKind::Result;
            }
            _ => {
                self.unknown += 1;
                return LineKind::Unknown;
            }
        };
        if parsed.is_api_error_message == Some(true) {
            // Claude Code's own message about a failed request: not the model's turn.
            events.extend(parsed.api_error());
            return kind;
        }
        let Some(message) = parsed.message else {
            return kind;
        };
        let usage = message.usage.object().map(RawUsage::tokens);
        self.message(message.id.as_deref(), usage, events);
        for block in message.content.0 {
            if block.kind.as_deref() == Some("tool_use") {
                let input = block.input.map(RawValue::get);
                events.push(AgentEvent::ToolCall {
                    name: block
                        .name
                        .map_or_else(|| "unknown".to_owned(), Cow::into_owned),
                    path: input.and_then(input_path),
                    input: input.map(|raw| truncate_chars(raw, INPUT_PREVIEW_BYTES)),
                });
            }
        }
        kind
    }

    /// A line of message `id` reporting `usage` (the message's figures so far): a turn when
    /// the id is new, and the increase over the most the message reported before.
    fn message(
        &mut self,
        id: Option<&str>,
        usage: Option<TokenUsage>,
        events: &mut Vec<AgentEvent>,
    ) {
        let (new_turn, increment) = match id {
            Some(id) => {
                if let Some((_, most)) = self.recent.iter_mut().find(|(seen, _)| seen == id) {
                    let increment = usage.map(|now| now.since(most));
                    if let Some(now) = usage {
                        *most = most.max_each(&now);
                    }
                    (false, increment)
                } else {
                    if self.recent.len() == RECENT_IDS {
                        self.recent.pop_front();
                    }
                    self.recent
                        .push_back((id.to_owned(), usage.unwrap_or_default()));
                    (true, usage)
                }
            }
            None => (true, usage),
        };
        if new_turn {
            events.push(AgentEvent::Turn {
                message_id: id.map(str::to_owned),
            });
        }
        if let Some(increment) = increment.filter(|i| i.tokens() > 0) {
            events.push(AgentEvent::Usage(UsageEvent::Increment(increment)));
        }
    }

    /// A `stream_event` line: `message_start` opens a message of its conversation,
    /// `message_delta` reports the open message's usage; other events say nothing counted.
    fn stream_event(&mut self, line: Line<'_>, events: &mut Vec<AgentEvent>) {
        let Some(event) = line.event.object() else {
            return;
        };
        let parent = line.parent_tool_use_id.as_deref();
        match event.kind.as_deref() {
            Some("message_start") => {
                let Some(message) = event.message else { return };
                let Some(id) = message.id.as_deref() else {
                    return;
                };
                if let Some(open) = self.open.iter_mut().find(|(p, _)| p.as_deref() == parent) {
                    id.clone_into(&mut open.1);
                } else {
                    if self.open.len() == RECENT_IDS {
                        self.open.pop_front();
                    }
                    self.open
                        .push_back((parent.map(str::to_owned), id.to_owned()));
                }
                let usage = message.usage.object().map(RawUsage::tokens);
                self.message(Some(id), usage, events);
            }
            Some("message_delta") => {
                let Some(usage) = event.usage.object().map(RawUsage::tokens) else {
                    return;
                };
                let Some(id) = self
                    .open
                    .iter()
                    .find(|(p, _)| p.as_deref() == parent)
                    .map(|(_, id)| id.clone())
                else {
                    return;
                };
                // A delta of a message no longer remembered would count as a new turn.
                if self.recent.iter().any(|(seen, _)| *seen == id) {
                    self.message(Some(&id), Some(usage), events);
                }
            }
            _ => {}
        }
    }

    /// Counts an oversized line as malformed.
    pub fn oversized(&mut self) {
        self.malformed += 1;
    }
}

impl LineReader for StreamJsonParser {
    fn read_line(&mut self, line: &[u8], events: &mut Vec<AgentEvent>) {
        self.feed_line(line, events);
    }

    fn oversized(&mut self) {
        self.malformed += 1;
    }

    fn counts(&self) -> LineCounts {
        LineCounts {
            seen: self.seen,
            unknown: self.unknown,
            malformed: self.malformed,
        }
    }
}

/// A `bool` field that is `None` when it has another shape.
#[derive(Default)]
struct MaybeBool(Option<bool>);

impl<'de> Deserialize<'de> for MaybeBool {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = IgnoredOrBool::deserialize(deserializer)?;
        Ok(Self(match value {
            IgnoredOrBool::Bool(b) => Some(b),
            IgnoredOrBool::Other(_) => None,
        }))
    }
}

/// A `bool`, or anything else (skipped without being kept).
#[derive(Deserialize)]
#[serde(untagged)]
enum IgnoredOrBool {
    Bool(bool),
    Other(IgnoredAny),
}

/// A `tool_result` block's text: its `content` string, or the `text` of its content blocks
/// joined by newlines, cut to [`INPUT_PREVIEW_BYTES`]; `None` when it holds no text.
fn result_text(raw: &RawValue) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    let text = match value {
        serde_json::Value::String(text) => text,
        serde_json::Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text")?.as_str())
                .collect();
            if texts.is_empty() {
                return None;
            }
            texts.join("\n")
        }
        _ => return None,
    };
    Some(truncate_chars(&text, INPUT_PREVIEW_BYTES))
}
