//! The `$HYOKA_EVENTS` format: one JSON object per line appended by the agent.
//!
//! `{"type":"turn"}` and `{"type":"tool_call","name":"bash","path":"src/x.rs","input":…}`.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{AgentEvent, INPUT_PREVIEW_BYTES, truncate_chars};

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
        _ => None,
    }
}
