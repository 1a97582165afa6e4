//! Gemini `generateContent` and `streamGenerateContent?alt=sse`: each frame a
//! `GenerateContentResponse` (`candidates[0].content.parts`: `text`, `thought: true` text,
//! `functionCall` with `name` and `args`), the last with `finishReason` and
//! `usageMetadata` (`promptTokenCount` counts the cached ones, `cachedContentTokenCount`,
//! `candidatesTokenCount`, `thoughtsTokenCount`, `totalTokenCount`).

use serde_json::{Value, json};

use super::{History, Item, chunks, content_text, count, data};
use crate::script::{ToolInput, Turn};

pub(super) fn history(body: &Value) -> Result<History, String> {
    let contents = body
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the request has no `contents` list")?;
    let parts = |c: &Value| {
        c.get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let first_user = contents
        .iter()
        .find(|c| c.get("role").and_then(Value::as_str) != Some("model"))
        .map(|c| content_text(Some(&Value::Array(parts(c)))))
        .unwrap_or_default();
    let items = contents.iter().map(|c| {
        if c.get("role").and_then(Value::as_str) == Some("model") {
            Item::Model
        } else if parts(c).iter().any(|p| p.get("functionResponse").is_some()) {
            Item::ToolResult
        } else {
            Item::Input
        }
    });
    Ok(count(items, first_user))
}

fn args(input: &ToolInput) -> Value {
    match input {
        ToolInput::Json(map) => Value::Object(map.clone()),
        ToolInput::Text(text) => json!({ "input": text }),
    }
}

fn usage(turn: &Turn) -> Value {
    let u = &turn.usage;
    let prompt = u.input_tokens.saturating_add(u.cache_read_tokens);
    json!({"promptTokenCount": prompt, "candidatesTokenCount": u.output_tokens,
        "cachedContentTokenCount": u.cache_read_tokens,
        "thoughtsTokenCount": u.reasoning_tokens,
        "totalTokenCount": prompt.saturating_add(u.output_tokens).saturating_add(u.reasoning_tokens)})
}

fn frame(model: &str, parts: &[Value], last: Option<&Turn>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut response = json!({"modelVersion": model, "responseId": "stub"});
    if let Some(turn) = last {
        candidate["finishReason"] = json!("STOP");
        response["usageMetadata"] = usage(turn);
    }
    response["candidates"] = json!([candidate]);
    response
}

fn parts(turn: &Turn, streamed: bool) -> Vec<Vec<Value>> {
    let size = if streamed { turn.chunk } else { usize::MAX };
    let mut frames = Vec::new();
    if let Some(thinking) = &turn.thinking {
        for piece in chunks(thinking, size) {
            frames.push(vec![json!({"text": piece, "thought": true})]);
        }
    }
    if let Some(text) = &turn.text {
        for piece in chunks(text, size) {
            frames.push(vec![json!({"text": piece})]);
        }
    }
    let calls: Vec<Value> = turn
        .tools
        .iter()
        .map(|tool| json!({"functionCall": {"name": tool.name, "args": args(&tool.input)}}))
        .collect();
    if !calls.is_empty() {
        frames.push(calls);
    }
    frames
}

pub(super) fn stream(model: &str, turn: &Turn) -> Vec<String> {
    let mut groups = parts(turn, true);
    if groups.is_empty() {
        groups.push(vec![json!({"text": ""})]);
    }
    let last = groups.len() - 1;
    groups
        .iter()
        .enumerate()
        .map(|(i, group)| data(&frame(model, group, (i == last).then_some(turn))))
        .collect()
}

pub(super) fn whole(model: &str, turn: &Turn) -> Value {
    let all: Vec<Value> = parts(turn, false).into_iter().flatten().collect();
    let all = if all.is_empty() {
        vec![json!({"text": ""})]
    } else {
        all
    };
    frame(model, &all, Some(turn))
}
