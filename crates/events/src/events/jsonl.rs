//! The `$HYOKA_EVENTS` format: one JSON object per line appended by the agent.
//!
//! - `{"type":"turn"}`: one assistant message;
//! - `{"type":"tool_call","name":"bash","path":"src/x.rs","input":…}`: one tool call;
//! - `{"type":"usage","input_tokens":120,"output_tokens":40,"cache_read_tokens":0,
//!   "cache_creation_tokens":0,"cost_usd":0.002}`: spending since the previous usage line
//!   (every field optional); with `"total":true` the figures are the agent's running totals
//!   instead, replacing what was counted;
//! - `{"type":"tool_result","output":"3 tests passed","error":false}`: a tool call's result
//!   (both fields optional), shown in the transcript and counted against no limit.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{AgentEvent, INPUT_PREVIEW_BYTES, LineCounts, LineReader, is_blank, truncate_chars};
use crate::usage::{TokenUsage, UsageEvent};

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_tokens: Option<u64>,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    total: bool,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    error: bool,
}

/// Parses one line; `None` for an unknown or malformed line (the caller counts it).
pub fn parse_jsonl_event(line: &[u8]) -> Option<AgentEvent> {
    let line: Line<'_> = serde_json::from_slice(line).ok()?;
    match line.kind.as_ref() {
        "turn" => Some(AgentEvent::Turn {
            message_id: line.id,
        }),
        "tool_call" => Some(AgentEvent::ToolCall {
            name: line.name.unwrap_or_else(|| "unknown".to_owned()),
            path: line.path,
            input: line
                .input
                .map(|raw| truncate_chars(raw.get(), INPUT_PREVIEW_BYTES)),
        }),
        "tool_result" => Some(AgentEvent::ToolResult {
            output: line
                .output
                .map(|text| truncate_chars(&text, INPUT_PREVIEW_BYTES)),
            error: line.error,
        }),
        "usage" => {
            let usage = TokenUsage {
                input_tokens: line.input_tokens,
                output_tokens: line.output_tokens,
                cache_read_tokens: line.cache_read_tokens,
                cache_creation_tokens: line.cache_creation_tokens,
                // A negative or non-finite cost is not a cost.
                cost_usd: line.cost_usd.filter(|c| c.is_finite() && *c >= 0.0),
            };
            Some(AgentEvent::Usage(if line.total {
                UsageEvent::Total(usage)
            } else {
                UsageEvent::Increment(usage)
            }))
        }
        _ => None,
    }
}

/// The `$HYOKA_EVENTS` format as a [`LineReader`]. A line that is not one of the four
/// events, of whatever kind, is counted as malformed.
#[derive(Debug, Default)]
pub struct JsonlReader {
    counts: LineCounts,
}

impl LineReader for JsonlReader {
    fn read_line(&mut self, line: &[u8], events: &mut Vec<AgentEvent>) {
        if is_blank(line) {
            return;
        }
        match parse_jsonl_event(line) {
            Some(event) => {
                self.counts.seen += 1;
                events.push(event);
            }
            None => self.counts.malformed += 1,
        }
    }

    fn oversized(&mut self) {
        self.counts.malformed += 1;
    }

    fn counts(&self) -> LineCounts {
        self.counts
    }
}
