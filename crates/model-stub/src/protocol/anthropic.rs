//! Anthropic Messages: `POST /v1/messages`, streamed as `message_start`,
//! `content_block_start`/`delta`/`stop` per block (`thinking` with `thinking_delta` and
//! `signature_delta`, `text` with `text_delta`, `tool_use` with `input_json_delta`),
//! `message_delta` (stop reason and output tokens) and `message_stop`.

use serde_json::{Value, json};

use super::{History, Ids, Item, chunks, event, messages_history};
use crate::script::{ToolInput, Turn};

pub(super) fn history(body: &Value) -> Result<History, String> {
    messages_history(body, |m| {
        let tool_result = m
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|parts| {
                parts
                    .iter()
                    .any(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
            });
        if m.get("role").and_then(Value::as_str) == Some("assistant") {
            Item::Model
        } else if tool_result {
            Item::ToolResult
        } else {
            Item::Input
        }
    })
}

fn input(tool: &ToolInput) -> Value {
    match tool {
        ToolInput::Json(map) => Value::Object(map.clone()),
        ToolInput::Text(text) => json!({ "input": text }),
    }
}

fn usage(turn: &Turn, output: u64) -> Value {
    json!({
        "input_tokens": turn.usage.input_tokens,
        "cache_creation_input_tokens": turn.usage.cache_write_tokens,
        "cache_read_input_tokens": turn.usage.cache_read_tokens,
        "output_tokens": output,
    })
}

fn stop_reason(turn: &Turn) -> &'static str {
    if turn.calls_tools() {
        "tool_use"
    } else {
        "end_turn"
    }
}

pub(super) fn stream(model: &str, turn: &Turn, ids: &Ids) -> Vec<String> {
    let mut frames = vec![event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": ids.id("msg", 0), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": usage(turn, 1)}}),
    )];
    let mut index = 0;
    let mut block = |frames: &mut Vec<String>, start: Value, deltas: Vec<Value>| {
        frames.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            frames.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    if let Some(thinking) = &turn.thinking {
        let mut deltas: Vec<Value> = chunks(thinking, turn.chunk)
            .into_iter()
            .map(|c| json!({"type": "thinking_delta", "thinking": c}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": ids.id("sig", 0)}));
        block(
            &mut frames,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    if let Some(text) = &turn.text {
        let deltas = chunks(text, turn.chunk)
            .into_iter()
            .map(|c| json!({"type": "text_delta", "text": c}))
            .collect();
        block(&mut frames, json!({"type": "text", "text": ""}), deltas);
    }
    for (i, tool) in turn.tools.iter().enumerate() {
        let json = input(&tool.input).to_string();
        // Two pieces at least, as the API streams a tool's input.
        let size = json.chars().count().div_ceil(2).max(1);
        let deltas = chunks(&json, size)
            .into_iter()
            .map(|c| json!({"type": "input_json_delta", "partial_json": c}))
            .collect();
        block(
            &mut frames,
            json!({"type": "tool_use", "id": ids.id("toolu", i), "name": tool.name, "input": {}}),
            deltas,
        );
    }
    frames.push(event(
        "message_delta",
        &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
            "usage": usage(turn, turn.usage.output_tokens)}),
    ));
    frames.push(event("message_stop", &json!({"type": "message_stop"})));
    frames
}

pub(super) fn whole(model: &str, turn: &Turn, ids: &Ids) -> Value {
    let mut content = Vec::new();
    if let Some(thinking) = &turn.thinking {
        content
            .push(json!({"type": "thinking", "thinking": thinking, "signature": ids.id("sig", 0)}));
    }
    if let Some(text) = &turn.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for (i, tool) in turn.tools.iter().enumerate() {
        content.push(
            json!({"type": "tool_use", "id": ids.id("toolu", i), "name": tool.name,
            "input": input(&tool.input)}),
        );
    }
    json!({"id": ids.id("msg", 0), "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason(turn), "stop_sequence": null,
        "usage": usage(turn, turn.usage.output_tokens)})
}
