//! The protocols: routes, history counting and rendering.

use serde_json::{Value, json};

use super::*;
use crate::script::{Script, ToolCall, ToolInput, Turn, Usage};

#[test]
fn routes() {
    let generate = |protocol, stream_path, model: Option<&str>| Route::Generate {
        protocol,
        stream_path,
        model: model.map(str::to_owned),
    };
    for (method, path, expected) in [
        (
            "POST",
            "/v1/messages",
            generate(Protocol::Anthropic, false, None),
        ),
        (
            "POST",
            "/v1/messages/count_tokens",
            Route::CountTokens(Protocol::Anthropic),
        ),
        (
            "POST",
            "/v1/responses",
            generate(Protocol::Responses, false, None),
        ),
        (
            "POST",
            "/chat/completions",
            generate(Protocol::Chat, false, None),
        ),
        (
            "POST",
            "/v1beta/models/gemini-x:streamGenerateContent",
            generate(Protocol::Gemini, true, Some("gemini-x")),
        ),
        (
            "POST",
            "/v1beta/models/gemini-x:generateContent",
            generate(Protocol::Gemini, false, Some("gemini-x")),
        ),
        (
            "POST",
            "/v1beta/models/gemini-x:countTokens",
            Route::CountTokens(Protocol::Gemini),
        ),
        ("GET", "/_stub/state", Route::State),
        ("GET", "/v1/messages", Route::Unknown),
        ("POST", "/v1beta/models/gemini-x:embed", Route::Unknown),
        ("POST", "/elsewhere", Route::Unknown),
    ] {
        assert_eq!(route(method, path), expected, "{method} {path}");
    }
}

#[track_caller]
fn exchange(protocol: Protocol, body: &Value) -> Exchange {
    read(protocol, false, None, None, body.to_string().as_bytes()).expect("a valid request")
}

#[test]
fn a_tool_only_reply_is_a_reply_in_every_protocol() {
    // Each history: the prompt, a reply that is only a tool call, its result.
    let anthropic = json!({"model": "m", "tools": [{"name": "Write"}], "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}]});
    let responses = json!({"model": "m", "tools": [{"type": "function", "name": "shell"}], "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "c", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"}]});
    let chat = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "shell"}}], "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": []},
        {"role": "tool", "tool_call_id": "c", "content": "ok"}]});
    let gemini = json!({"tools": [{"functionDeclarations": [{"name": "write_file"}]}], "contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "write_file", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {}}}]}]});
    for (protocol, body) in [
        (Protocol::Anthropic, anthropic),
        (Protocol::Responses, responses),
        (Protocol::Chat, chat),
        (Protocol::Gemini, gemini),
    ] {
        let e = exchange(protocol, &body);
        assert_eq!(e.turn, 1, "{protocol:?}");
        assert!(e.after_tool_result, "{protocol:?}");
        assert!(!e.side, "{protocol:?}");
        assert_eq!(e.tools.len(), 1, "{protocol:?}");
    }
}

#[test]
fn conversations_are_named_by_session_or_first_message() {
    let body = |prompt: &str| {
        json!({"model": "m", "messages": [{"role": "user", "content": prompt}]}).to_string()
    };
    let a = read(
        Protocol::Anthropic,
        false,
        None,
        None,
        body("one").as_bytes(),
    )
    .expect("valid");
    let b = read(
        Protocol::Anthropic,
        false,
        None,
        None,
        body("two").as_bytes(),
    )
    .expect("valid");
    let c = read(
        Protocol::Anthropic,
        false,
        None,
        Some("s-1"),
        body("two").as_bytes(),
    )
    .expect("valid");
    assert_ne!(a.conversation, b.conversation);
    assert_eq!(c.conversation, "anthropic:s-1");
    assert!(a.side, "no tools offered: a side request");
    for bad in ["", "[1]", "{\"messages\": 3}"] {
        assert!(
            read(Protocol::Anthropic, false, None, None, bad.as_bytes()).is_err(),
            "{bad}"
        );
    }
}

fn turn() -> Turn {
    Turn {
        thinking: Some("think".to_owned()),
        text: Some("hello world".to_owned()),
        tools: vec![
            ToolCall {
                name: "Write".to_owned(),
                input: ToolInput::Json(
                    json!({"file_path": "a.txt"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
            },
            ToolCall {
                name: "apply_patch".to_owned(),
                input: ToolInput::Text("*** Begin Patch".to_owned()),
            },
        ],
        usage: Usage {
            input_tokens: 100,
            output_tokens: 20,
            cache_read_tokens: 50,
            cache_write_tokens: 10,
            reasoning_tokens: 0,
        },
        chunk: 4,
        ..Turn::default()
    }
}

fn frames(protocol: Protocol) -> Vec<Value> {
    let e = Exchange {
        protocol,
        conversation: "c".to_owned(),
        turn: 0,
        stream: true,
        model: "m".to_owned(),
        side: false,
        tools: Vec::new(),
        after_tool_result: false,
        reply_schema: None,
    };
    let Rendered::Stream(frames) = render(&e, "m", &turn(), &Ids::new(1, 0, 0)) else {
        panic!("a streamed request gets a stream");
    };
    frames
        .iter()
        .filter_map(|f| {
            assert!(f.ends_with("\n\n"), "{f:?}");
            let data = f.lines().find_map(|l| l.strip_prefix("data: "))?;
            serde_json::from_str(data).ok()
        })
        .collect()
}

/// The concatenated `field` of every frame whose `type` is `kind`.
fn joined(frames: &[Value], pointer: &str, kind: &str) -> String {
    frames
        .iter()
        .filter(|f| f["type"] == kind || f.pointer("/delta/type").is_some_and(|t| t == kind))
        .filter_map(|f| f.pointer(pointer).and_then(Value::as_str))
        .collect()
}

#[test]
fn anthropic_streams_blocks_with_their_deltas_and_usage() {
    let f = frames(Protocol::Anthropic);
    assert_eq!(f[0]["type"], "message_start");
    assert_eq!(f[0]["message"]["usage"]["cache_read_input_tokens"], 50);
    assert_eq!(f[0]["message"]["usage"]["cache_creation_input_tokens"], 10);
    assert_eq!(joined(&f, "/delta/thinking", "thinking_delta"), "think");
    assert_eq!(joined(&f, "/delta/text", "text_delta"), "hello world");
    let json = joined(&f, "/delta/partial_json", "input_json_delta");
    assert_eq!(json, r#"{"file_path":"a.txt"}{"input":"*** Begin Patch"}"#);
    let delta = f
        .iter()
        .find(|f| f["type"] == "message_delta")
        .expect("message_delta");
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 20);
    assert_eq!(
        f.last().map(|l| l["type"].clone()),
        Some(json!("message_stop"))
    );
}

#[test]
fn responses_streams_items_and_usage_with_cache_reads_and_writes() {
    let f = frames(Protocol::Responses);
    assert_eq!(f[0]["type"], "response.created");
    assert_eq!(
        joined(&f, "/delta", "response.reasoning_summary_text.delta"),
        "think"
    );
    assert_eq!(
        joined(&f, "/delta", "response.output_text.delta"),
        "hello world"
    );
    let done: Vec<&Value> = f
        .iter()
        .filter(|f| f["type"] == "response.output_item.done")
        .map(|f| &f["item"])
        .collect();
    let kinds: Vec<&str> = done.iter().filter_map(|i| i["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["reasoning", "message", "function_call", "custom_tool_call"]
    );
    assert_eq!(done[2]["arguments"], r#"{"file_path":"a.txt"}"#);
    assert_eq!(done[3]["input"], "*** Begin Patch");
    let usage = &f.last().expect("frames")["response"]["usage"];
    assert_eq!(
        usage["input_tokens"], 160,
        "OpenAI counts cached tokens as input"
    );
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 50);
    assert_eq!(usage["input_tokens_details"]["cache_write_tokens"], 10);
}

#[test]
fn chat_and_gemini_stream_text_tool_calls_and_usage() {
    let chat = frames(Protocol::Chat);
    let text: String = chat
        .iter()
        .filter_map(|f| {
            f.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect();
    assert_eq!(text, "hello world");
    assert!(
        chat.iter()
            .any(|f| f.pointer("/choices/0/finish_reason") == Some(&json!("tool_calls")))
    );
    assert!(
        chat.iter()
            .any(|f| f.pointer("/usage/prompt_tokens_details/cached_tokens") == Some(&json!(50)))
    );

    let gemini = frames(Protocol::Gemini);
    let parts: Vec<&Value> = gemini
        .iter()
        .flat_map(|f| {
            f["candidates"][0]["content"]["parts"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .collect();
    let text: String = parts
        .iter()
        .filter(|p| p.get("thought").is_none())
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(text, "hello world");
    let calls: Vec<&str> = parts
        .iter()
        .filter_map(|p| p.pointer("/functionCall/name").and_then(Value::as_str))
        .collect();
    assert_eq!(calls, ["Write", "apply_patch"]);
    let last = gemini.last().expect("frames");
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(last["usageMetadata"]["promptTokenCount"], 150);
    assert_eq!(last["usageMetadata"]["cachedContentTokenCount"], 50);
}

#[test]
fn a_side_request_for_json_gets_an_instance_of_its_schema() {
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "route"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
            "type": "object", "properties": {
                "reasoning": {"type": "string"},
                "complexity_score": {"type": "integer", "minimum": 1},
                "model_choice": {"type": "string", "enum": ["flash", "pro"]}}}}});
    let e = exchange(Protocol::Gemini, &body);
    assert!(e.side);
    let script = Script::constant("Done.");
    let Rendered::Whole(reply) = render(&e, "m", &script.side, &Ids::new(0, 0, 0)) else {
        panic!("not streamed");
    };
    let text = reply["candidates"][0]["content"]["parts"][0]["text"]
        .as_str()
        .expect("text");
    let parsed: Value = serde_json::from_str(text).expect("JSON text");
    assert_eq!(
        parsed,
        json!({"reasoning": "scripted", "complexity_score": 1, "model_choice": "flash"})
    );
}

#[test]
fn errors_take_each_protocols_shape() {
    assert_eq!(error(Protocol::Anthropic, ErrorKind::Overloaded).0, 529);
    assert_eq!(
        error(Protocol::Anthropic, ErrorKind::Overloaded).1["error"]["type"],
        "overloaded_error"
    );
    assert_eq!(
        error(Protocol::Responses, ErrorKind::RateLimited).1["error"]["code"],
        "rate_limit_exceeded"
    );
    assert_eq!(
        error(Protocol::Gemini, ErrorKind::Unavailable).1["error"]["status"],
        "UNAVAILABLE"
    );
    assert_eq!(error(Protocol::Gemini, ErrorKind::RateLimited).0, 429);
}
