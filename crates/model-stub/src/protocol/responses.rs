//! OpenAI Responses: `POST /v1/responses`, streamed as `response.created`, then per output
//! item `response.output_item.added`, its deltas (`response.reasoning_summary_text.delta`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`,
//! `response.custom_tool_call_input.delta`) and `response.output_item.done`, and finally
//! `response.completed` with the usage (`input_tokens` counts the cached ones;
//! `input_tokens_details` has `cached_tokens` and `cache_write_tokens`).

use serde_json::{Value, json};

use super::{History, Ids, Item, chunks, content_text, count, event};
use crate::script::{ToolInput, Turn};

pub(super) fn history(body: &Value) -> Result<History, String> {
    let input = match body.get("input") {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(text)) => {
            vec![json!({"type": "message", "role": "user", "content": text})]
        }
        _ => return Err("the request has no `input`".to_owned()),
    };
    let role = |item: &Value| item.get("role").and_then(Value::as_str).map(str::to_owned);
    let first_user = input
        .iter()
        .find(|i| role(i).as_deref() == Some("user"))
        .map(|i| content_text(i.get("content")))
        .unwrap_or_default();
    let items = input.iter().map(|item| {
        match item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message")
        {
            "message" if role(item).as_deref() == Some("assistant") => Item::Model,
            "function_call" | "custom_tool_call" | "reasoning" | "local_shell_call"
            | "web_search_call" | "tool_search_call" => Item::Model,
            "function_call_output"
            | "custom_tool_call_output"
            | "local_shell_call_output"
            | "tool_search_output" => Item::ToolResult,
            _ => Item::Input,
        }
    });
    Ok(count(items, first_user))
}

/// The output items of a reply, complete.
fn items(turn: &Turn, ids: &Ids) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(thinking) = &turn.thinking {
        out.push(json!({"type": "reasoning", "id": ids.id("rs", 0),
            "summary": [{"type": "summary_text", "text": thinking}]}));
    }
    if let Some(text) = &turn.text {
        out.push(
            json!({"type": "message", "id": ids.id("msg", 0), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        );
    }
    for (i, tool) in turn.tools.iter().enumerate() {
        out.push(match &tool.input {
            ToolInput::Json(map) => json!({"type": "function_call", "id": ids.id("fc", i),
                "call_id": ids.id("call", i), "name": tool.name,
                "arguments": Value::Object(map.clone()).to_string(), "status": "completed"}),
            ToolInput::Text(text) => json!({"type": "custom_tool_call", "id": ids.id("ctc", i),
                "call_id": ids.id("call", i), "name": tool.name, "input": text,
                "status": "completed"}),
        });
    }
    out
}

fn usage(turn: &Turn) -> Value {
    let u = &turn.usage;
    json!({
        "input_tokens": u.all_input(),
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.all_input().saturating_add(u.output_tokens),
    })
}

fn response(model: &str, ids: &Ids, status: &str, output: &[Value], usage: Option<Value>) -> Value {
    let mut response = json!({"id": ids.id("resp", 0), "object": "response", "created_at": 0,
        "status": status, "model": model, "output": output});
    if let Some(usage) = usage {
        response["usage"] = usage;
    }
    response
}

pub(super) fn stream(model: &str, turn: &Turn, ids: &Ids) -> Vec<String> {
    let mut frames = vec![event(
        "response.created",
        &json!({"type": "response.created", "response": response(model, ids, "in_progress", &[], None)}),
    )];
    let done = items(turn, ids);
    for (index, item) in done.iter().enumerate() {
        let kind = item["type"].as_str().unwrap_or_default();
        let item_id = item["id"].clone();
        let mut added = item.clone();
        match kind {
            "reasoning" => added["summary"] = json!([]),
            "message" => {
                added["content"] = json!([]);
                added["status"] = json!("in_progress");
            }
            "function_call" => {
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
            }
            _ => {
                added["input"] = json!("");
                added["status"] = json!("in_progress");
            }
        }
        frames.push(event(
            "response.output_item.added",
            &json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        ));
        let (name, text, extra) = match kind {
            "reasoning" => {
                frames.push(event(
                    "response.reasoning_summary_part.added",
                    &json!({
                    "type": "response.reasoning_summary_part.added", "item_id": item_id,
                    "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}}),
                ));
                (
                    "response.reasoning_summary_text.delta",
                    turn.thinking.clone().unwrap_or_default(),
                    json!({"summary_index": 0}),
                )
            }
            "message" => {
                frames.push(event(
                    "response.content_part.added",
                    &json!({
                    "type": "response.content_part.added", "item_id": item_id,
                    "output_index": index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
                ));
                (
                    "response.output_text.delta",
                    turn.text.clone().unwrap_or_default(),
                    json!({"content_index": 0}),
                )
            }
            "function_call" => (
                "response.function_call_arguments.delta",
                item["arguments"].as_str().unwrap_or_default().to_owned(),
                json!({}),
            ),
            _ => (
                "response.custom_tool_call_input.delta",
                item["input"].as_str().unwrap_or_default().to_owned(),
                json!({}),
            ),
        };
        let size = if kind == "reasoning" || kind == "message" {
            turn.chunk
        } else {
            text.chars().count().div_ceil(2).max(1)
        };
        for piece in chunks(&text, size) {
            let mut delta = json!({"type": name, "item_id": item_id, "output_index": index,
                "delta": piece});
            if let (Some(delta), Some(extra)) = (delta.as_object_mut(), extra.as_object()) {
                delta.extend(extra.clone());
            }
            frames.push(event(name, &delta));
        }
        frames.push(event(
            "response.output_item.done",
            &json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    frames.push(event(
        "response.completed",
        &json!({"type": "response.completed",
            "response": response(model, ids, "completed", &done, Some(usage(turn)))}),
    ));
    frames
}

pub(super) fn whole(model: &str, turn: &Turn, ids: &Ids) -> Value {
    response(
        model,
        ids,
        "completed",
        &items(turn, ids),
        Some(usage(turn)),
    )
}
