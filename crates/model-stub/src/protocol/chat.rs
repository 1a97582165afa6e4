//! OpenAI Chat Completions: `POST /v1/chat/completions`, streamed as
//! `chat.completion.chunk` frames (`delta.content`, `delta.reasoning_content`,
//! `delta.tool_calls` with the arguments in pieces), a final chunk with the finish reason and
//! the usage (`prompt_tokens` counts the cached ones, in `prompt_tokens_details`), and
//! `data: [DONE]`.

use serde_json::{Value, json};

use super::{History, Ids, Item, chunks, data, messages_history};
use crate::script::{ToolInput, Turn};

pub(super) fn history(body: &Value) -> Result<History, String> {
    messages_history(body, |m| match m.get("role").and_then(Value::as_str) {
        Some("assistant") => Item::Model,
        Some("tool" | "function") => Item::ToolResult,
        _ => Item::Input,
    })
}

fn arguments(input: &ToolInput) -> String {
    match input {
        ToolInput::Json(map) => Value::Object(map.clone()).to_string(),
        ToolInput::Text(text) => json!({ "input": text }).to_string(),
    }
}

fn usage(turn: &Turn) -> Value {
    let u = &turn.usage;
    json!({"prompt_tokens": u.all_input(), "completion_tokens": u.output_tokens,
        "total_tokens": u.all_input().saturating_add(u.output_tokens),
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens}})
}

fn finish(turn: &Turn) -> &'static str {
    if turn.calls_tools() {
        "tool_calls"
    } else {
        "stop"
    }
}

pub(super) fn stream(model: &str, turn: &Turn, ids: &Ids) -> Vec<String> {
    let id = ids.id("chatcmpl", 0);
    let chunk = |delta: Value, finish: Option<&str>| {
        data(
            &json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(thinking) = &turn.thinking {
        for piece in chunks(thinking, turn.chunk) {
            frames.push(chunk(json!({"reasoning_content": piece}), None));
        }
    }
    if let Some(text) = &turn.text {
        for piece in chunks(text, turn.chunk) {
            frames.push(chunk(json!({"content": piece}), None));
        }
    }
    for (i, tool) in turn.tools.iter().enumerate() {
        frames.push(chunk(
            json!({"tool_calls": [{"index": i, "id": ids.id("call", i), "type": "function",
                "function": {"name": tool.name, "arguments": ""}}]}),
            None,
        ));
        let args = arguments(&tool.input);
        for piece in chunks(&args, args.chars().count().div_ceil(2).max(1)) {
            frames.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    frames.push(chunk(json!({}), Some(finish(turn))));
    frames.push(data(
        &json!({"id": id, "object": "chat.completion.chunk", "created": 0,
        "model": model, "choices": [], "usage": usage(turn)}),
    ));
    frames.push("data: [DONE]\n\n".to_owned());
    frames
}

pub(super) fn whole(model: &str, turn: &Turn, ids: &Ids) -> Value {
    let tool_calls: Vec<Value> = turn
        .tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            json!({"id": ids.id("call", i), "type": "function",
            "function": {"name": tool.name, "arguments": arguments(&tool.input)}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": turn.text});
    if let Some(thinking) = &turn.thinking {
        message["reasoning_content"] = json!(thinking);
    }
    if !tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls);
    }
    json!({"id": ids.id("chatcmpl", 0), "object": "chat.completion", "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish(turn)}],
        "usage": usage(turn)})
}
