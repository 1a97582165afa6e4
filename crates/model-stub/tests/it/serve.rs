//! Serving: each reply by its history, the state endpoint's phases, scripted errors,
//! concurrent conversations, and what the stub does not know.

use serde_json::json;

use crate::support::{get_json, send, start};

fn anthropic(history: &[serde_json::Value]) -> String {
    json!({"model": "claude-x", "stream": true, "max_tokens": 100,
        "tools": [{"name": "Write", "input_schema": {"type": "object"}}],
        "messages": history})
    .to_string()
}

#[tokio::test]
async fn the_state_follows_a_conversation_through_streaming_a_tool_call_and_idle() {
    let stub = start(
        "turns:\n  - text: writing\n    tools: [{ name: Write, input: { file_path: a.txt, content: x } }]\n    stall: { after: 1, for: 2s }\n  - text: done\n",
    )
    .await;
    let first = [json!({"role": "user", "content": "go"})];
    let mut reply = send(stub.addr, "POST", "/v1/messages", &anthropic(&first)).await;
    assert_eq!(reply.status, 200);
    reply.until("message_start").await;
    // The stall holds the stream after its first frame: the state says so.
    let state = get_json(stub.addr, "/_stub/state").await;
    assert_eq!(state["state"], "streaming", "{state}");
    assert_eq!(state["conversations"][0]["turn"], 1);
    let body = reply.rest().await;
    assert!(body.contains("\"stop_reason\":\"tool_use\""), "{body}");
    assert!(body.contains("input_json_delta"), "{body}");
    let state = get_json(stub.addr, "/_stub/state").await;
    assert_eq!(state["state"], "waiting_for_tool", "{state}");
    assert_eq!(state["conversations"][0]["tool_calls"], 1);

    let second = [
        first[0].clone(),
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}),
    ];
    let body = send(stub.addr, "POST", "/v1/messages", &anthropic(&second))
        .await
        .rest()
        .await;
    assert!(body.contains("\"text\":\"done\""), "{body}");
    assert!(body.contains("end_turn"), "{body}");
    let state = stub.stub.state();
    assert_eq!(state.replies, 2);
    assert_eq!(state.conversations.len(), 1);
    assert_eq!(state.conversations[0].turn, 2);
    assert_eq!(serde_json::to_value(state.state).ok(), Some(json!("idle")));
}

#[tokio::test]
async fn a_scripted_error_answers_the_first_attempts_then_the_reply_is_served() {
    let stub = start("turns:\n  - { text: hi, error: { kind: rate_limited, times: 2 } }\n").await;
    let body = anthropic(&[json!({"role": "user", "content": "go"})]);
    for _ in 0..2 {
        let reply = send(stub.addr, "POST", "/v1/messages", &body).await;
        assert_eq!(reply.status, 429);
        assert!(reply.rest().await.contains("rate_limit_error"));
    }
    let reply = send(stub.addr, "POST", "/v1/messages", &body).await;
    assert_eq!(reply.status, 200);
    assert!(reply.rest().await.contains("\"text\":\"hi\""));
    let state = stub.stub.state();
    assert_eq!((state.errors, state.replies, state.requests), (2, 1, 3));
    let outcomes: Vec<String> = stub
        .stub
        .requests()
        .into_iter()
        .map(|r| r.outcome)
        .collect();
    assert_eq!(outcomes, ["error 429", "error 429", "reply"]);
}

#[tokio::test]
async fn conversations_at_once_each_have_their_own_turn_and_state() {
    let stub =
        start("turns:\n  - { text: one two three four five six, stall: { after: 1, for: 2s } }\n")
            .await;
    let gemini = |prompt: &str| {
        json!({"contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "tools": [{"functionDeclarations": [{"name": "write_file"}]}]})
        .to_string()
    };
    let path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse";
    let mut a = send(stub.addr, "POST", path, &gemini("first task")).await;
    let mut b = send(stub.addr, "POST", path, &gemini("second task")).await;
    a.until("data: ").await;
    b.until("data: ").await;
    let state = get_json(stub.addr, "/_stub/state").await;
    let conversations = state["conversations"].as_array().expect("a list");
    assert_eq!(conversations.len(), 2, "{state}");
    assert!(
        conversations
            .iter()
            .all(|c| c["state"] == "streaming" && c["turn"] == 1)
    );
    assert_ne!(conversations[0]["id"], conversations[1]["id"]);
    assert!(a.rest().await.contains("\"finishReason\":\"STOP\""));
    assert!(b.rest().await.contains("usageMetadata"));
    assert_eq!(stub.stub.state().replies, 2);
}

#[tokio::test]
async fn what_the_stub_does_not_know_is_answered_with_an_error_and_logged() {
    let stub = start("").await;
    let reply = send(stub.addr, "POST", "/v1/embeddings", "{}").await;
    assert_eq!(reply.status, 404);
    assert!(
        reply
            .rest()
            .await
            .contains("does not serve POST /v1/embeddings")
    );
    let reply = send(stub.addr, "POST", "/v1/responses", "not json").await;
    assert_eq!(reply.status, 400);
    let log = get_json(stub.addr, "/_stub/requests").await;
    let outcomes: Vec<&str> = log
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["outcome"].as_str())
        .collect();
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0], "unknown path");
    assert!(outcomes[1].starts_with("bad request: the body is not JSON"));
    assert_eq!(stub.stub.state().unknown, 2);
}

#[tokio::test]
async fn responses_and_chat_answer_whole_bodies_when_not_streamed() {
    let stub = start(
        "turns:\n  - { text: hi, usage: { input_tokens: 5, cache_read_tokens: 2, cache_write_tokens: 1, output_tokens: 3 } }\n",
    )
    .await;
    let body = json!({"model": "gpt-x", "tools": [{"type": "function", "name": "shell"}],
        "input": [{"type": "message", "role": "user", "content": "go"}]});
    let reply = send(stub.addr, "POST", "/v1/responses", &body.to_string()).await;
    let text = reply.rest().await;
    assert!(text.contains("\"cache_write_tokens\":1"), "{text}");
    assert!(text.contains("\"input_tokens\":8"), "{text}");
    let body = json!({"model": "gpt-x", "tools": [{"type": "function", "function": {"name": "shell"}}],
        "messages": [{"role": "user", "content": "go"}]});
    let text = send(stub.addr, "POST", "/v1/chat/completions", &body.to_string())
        .await
        .rest()
        .await;
    assert!(text.contains("\"finish_reason\":\"stop\""), "{text}");
    assert!(text.contains("\"prompt_tokens\":8"), "{text}");
}
