//! Claude Code's `--output-format stream-json`.
//!
//! The CLI writes one JSON object per line: `system` (init), `assistant` (one line per
//! content block; the lines of one message share `message.id`), `user` (tool results),
//! `result`, and others. A turn is one assistant message, counted when a line carries a
//! message id not seen among the recent ones (sub-agent lines may interleave); an action is
//! one `tool_use` block. Content that is not a block list (some captures carry a placeholder
//! string) is accepted and yields no tool calls.
//!
//! Parsing borrows from the line and skips every field it does not need, so it costs a
//! fraction of building a `serde_json::Value` (see the `events` benchmark).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{AgentEvent, INPUT_PREVIEW_BYTES, input_path, truncate_chars};

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
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Content<'a>,
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
                while let Some(block) = seq.next_element::<MaybeBlock<'a>>()? {
                    if let MaybeBlock::Block(block) = block {
                        blocks.push(block);
                    }
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

enum MaybeBlock<'a> {
    Block(Block<'a>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for MaybeBlock<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlockVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for BlockVisitor<'a> {
            type Value = MaybeBlock<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Block::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(MaybeBlock::Block)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(MaybeBlock::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeBlock::Other)
            }
        }
        deserializer.deserialize_any(BlockVisitor(std::marker::PhantomData))
    }
}

/// How many recent message ids are remembered to recognise the continuation of a message.
const RECENT_IDS: usize = 8;

/// A stateful stream-json reader: feed it lines, get events and line kinds.
#[derive(Debug, Default)]
pub struct StreamJsonParser {
    recent: std::collections::VecDeque<String>,
    /// Lines with an unknown `type`.
    pub unknown: u64,
    /// Lines that were not JSON objects (or were oversized).
    pub malformed: u64,
}

impl StreamJsonParser {
    /// Parses one line (without its newline), pushing its events into `events`.
    pub fn feed_line(&mut self, line: &[u8], events: &mut Vec<AgentEvent>) -> LineKind {
        if line.iter().all(u8::is_ascii_whitespace) {
            return LineKind::Blank;
        }
        let Ok(parsed) = serde_json::from_slice::<Line<'_>>(line) else {
            self.malformed += 1;
            return LineKind::Malformed;
        };
        let kind = match parsed.kind.as_deref() {
            Some("assistant") => LineKind::Assistant,
            Some("system") => return LineKind::System,
            Some("user") => return LineKind::User,
            Some("result") => return LineKind::Result,
            _ => {
                self.unknown += 1;
                return LineKind::Unknown;
            }
        };
        let Some(message) = parsed.message else {
            return kind;
        };
        let new_turn = match message.id.as_deref() {
            Some(id) if self.recent.iter().any(|seen| seen == id) => false,
            Some(id) => {
                if self.recent.len() == RECENT_IDS {
                    self.recent.pop_front();
                }
                self.recent.push_back(id.to_owned());
                true
            }
            None => true,
        };
        if new_turn {
            events.push(AgentEvent::Turn {
                message_id: message.id.map(Cow::into_owned),
            });
        }
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

    /// Counts an oversized line as malformed.
    pub fn oversized(&mut self) {
        self.malformed += 1;
    }
}
