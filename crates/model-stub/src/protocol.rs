//! The wire protocols: which request is which ([`Route`]), what a request says about its
//! conversation ([`Exchange`]), and a scripted [`Turn`] rendered as each protocol's streamed
//! events or whole JSON body. Everything here is pure: the server feeds it bytes and sends
//! what it returns.
//!
//! Each format follows the agents' own clients: Claude Code's Anthropic Messages streaming
//! (`message_start`, `content_block_*` with `text_delta`, `thinking_delta`,
//! `input_json_delta`, `message_delta`, `message_stop`); Codex's Responses reader
//! (`openai/codex` `codex-rs/codex-api/src/sse/responses.rs`: `response.created`,
//! `response.output_item.added`/`done`, `response.output_text.delta`,
//! `response.reasoning_summary_text.delta`, `response.completed` with `usage` and its
//! `input_tokens_details.cached_tokens`/`cache_write_tokens`, the names Codex 0.169's binary
//! carries); Chat Completions chunks; and Gemini's `streamGenerateContent?alt=sse` as the
//! `@google/genai` client in Gemini CLI 0.61's bundle reads it (`data:` frames of
//! `GenerateContentResponse`, `functionCall` parts, `usageMetadata`).

mod anthropic;
mod chat;
mod gemini;
mod responses;

use serde_json::{Value, json};

use crate::script::{ErrorKind, Turn};

/// A wire protocol the stub speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Anthropic Messages (`POST /v1/messages`): Claude Code.
    Anthropic,
    /// OpenAI Responses (`POST /v1/responses`): Codex.
    Responses,
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    Chat,
    /// Gemini `generateContent` / `streamGenerateContent`: Gemini CLI.
    Gemini,
}

impl Protocol {
    /// The protocol's name in logs and the state endpoint.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Responses => "responses",
            Self::Chat => "chat",
            Self::Gemini => "gemini",
        }
    }
}

/// What a request path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A model reply in `protocol`; `stream` when the path itself says so (Gemini's
    /// `streamGenerateContent`), otherwise the body's `stream` decides.
    Generate {
        /// The protocol.
        protocol: Protocol,
        /// Whether the path asks for a stream.
        stream_path: bool,
        /// The model named in the path (Gemini).
        model: Option<String>,
    },
    /// A token count (Anthropic `count_tokens`, Gemini `countTokens`).
    CountTokens(Protocol),
    /// The model list (`GET /v1/models`, Gemini `GET /v1beta/models`).
    Models(Protocol),
    /// The stub's own state.
    State,
    /// The stub's request log.
    Requests,
    /// Liveness.
    Health,
    /// Anything else.
    Unknown,
}

/// Which route `method` and `path` (without the query) name.
pub fn route(method: &str, path: &str) -> Route {
    let path = path.trim_end_matches('/');
    let post = method == "POST";
    let get = method == "GET";
    match path {
        "/_stub/state" if get => return Route::State,
        "/_stub/requests" if get => return Route::Requests,
        "/_stub/health" | "/health" if get => return Route::Health,
        "/v1/messages" | "/messages" if post => {
            return Route::Generate {
                protocol: Protocol::Anthropic,
                stream_path: false,
                model: None,
            };
        }
        "/v1/messages/count_tokens" | "/messages/count_tokens" if post => {
            return Route::CountTokens(Protocol::Anthropic);
        }
        "/v1/responses" | "/responses" if post => {
            return Route::Generate {
                protocol: Protocol::Responses,
                stream_path: false,
                model: None,
            };
        }
        "/v1/chat/completions" | "/chat/completions" if post => {
            return Route::Generate {
                protocol: Protocol::Chat,
                stream_path: false,
                model: None,
            };
        }
        "/v1/models" | "/models" if get => return Route::Models(Protocol::Responses),
        "/v1beta/models" | "/v1/models/gemini" if get => return Route::Models(Protocol::Gemini),
        _ => {}
    }
    // Gemini: /v1beta/models/{model}:{method}, also under /v1 and /v1alpha.
    let gemini = ["/v1beta/models/", "/v1/models/", "/v1alpha/models/"]
        .iter()
        .find_map(|prefix| path.strip_prefix(prefix));
    if let Some(rest) = gemini
        && post
        && let Some((model, action)) = rest.rsplit_once(':')
    {
        let model = Some(model.to_owned());
        return match action {
            "generateContent" => Route::Generate {
                protocol: Protocol::Gemini,
                stream_path: false,
                model,
            },
            "streamGenerateContent" => Route::Generate {
                protocol: Protocol::Gemini,
                stream_path: true,
                model,
            },
            "countTokens" => Route::CountTokens(Protocol::Gemini),
            _ => Route::Unknown,
        };
    }
    Route::Unknown
}

/// What one model request says about its conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The protocol.
    pub protocol: Protocol,
    /// The conversation it belongs to: the agent's session id when its requests carry one,
    /// else a digest of the conversation's first user message.
    pub conversation: String,
    /// How many model replies its history already holds: the index of the scripted reply.
    pub turn: usize,
    /// Whether the answer streams.
    pub stream: bool,
    /// The model the request names.
    pub model: String,
    /// A side request (no tools offered): a title, a classification, a check.
    pub side: bool,
    /// The names of the tools offered.
    pub tools: Vec<String>,
    /// Whether the history's last item is a tool result.
    pub after_tool_result: bool,
    /// The JSON schema the reply must follow, when the request asks for JSON (Gemini CLI's
    /// routing classifier and checks do): a side reply is then an instance of it.
    pub reply_schema: Option<Value>,
}

/// The request headers the stub reads to tell conversations apart, lowercase.
pub const SESSION_HEADERS: &[&str] = &[
    "x-claude-code-session-id",
    "session_id",
    "session-id",
    "conversation_id",
    "x-gemini-session-id",
];

/// Reads a model request's body. `session` is the value of the first of
/// [`SESSION_HEADERS`] the request carried.
///
/// # Errors
///
/// A message for the client when the body is not the protocol's JSON request.
pub fn read(
    protocol: Protocol,
    stream_path: bool,
    path_model: Option<&str>,
    session: Option<&str>,
    body: &[u8],
) -> Result<Exchange, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    if !value.is_object() {
        return Err("the body is not a JSON object".to_owned());
    }
    let history = match protocol {
        Protocol::Anthropic => anthropic::history(&value),
        Protocol::Responses => responses::history(&value),
        Protocol::Chat => chat::history(&value),
        Protocol::Gemini => gemini::history(&value),
    }?;
    let stream = stream_path || value.get("stream").and_then(Value::as_bool) == Some(true);
    let model = path_model
        .map(str::to_owned)
        .or_else(|| {
            value
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "stub".to_owned());
    let tools = tool_names(protocol, &value);
    let conversation = match session {
        Some(id) if !id.is_empty() => format!("{}:{}", protocol.name(), truncate(id, 80)),
        _ => format!(
            "{}:{:016x}",
            protocol.name(),
            fnv(history.first_user.as_bytes())
        ),
    };
    Ok(Exchange {
        protocol,
        conversation,
        turn: history.replies,
        stream,
        model,
        side: tools.is_empty(),
        tools,
        after_tool_result: history.last_is_tool_result,
        reply_schema: reply_schema(&value),
    })
}

/// The schema of the JSON reply a request asks for (Gemini `generationConfig`, OpenAI
/// Responses `text.format`, Chat Completions `response_format`).
fn reply_schema(body: &Value) -> Option<Value> {
    let config = body.get("generationConfig").or_else(|| body.get("config"));
    if let Some(config) = config {
        if let Some(schema) = config
            .get("responseJsonSchema")
            .or_else(|| config.get("responseSchema"))
        {
            return Some(schema.clone());
        }
        if config.get("responseMimeType").and_then(Value::as_str) == Some("application/json") {
            return Some(json!({"type": "object"}));
        }
    }
    body.pointer("/text/format/schema")
        .or_else(|| body.pointer("/response_format/json_schema/schema"))
        .cloned()
}

/// The smallest instance of a JSON schema the stub can make: every property of an object
/// filled, an enum's first value, a number's minimum (or 1), `"scripted"` for a string.
/// Deep or self-referring schemas stop at a depth of 8 with `null`.
pub fn schema_instance(schema: &Value) -> Value {
    fn go(schema: &Value, depth: usize) -> Value {
        if depth > 8 {
            return Value::Null;
        }
        if let Some(first) = schema
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return first.clone();
        }
        if let Some(constant) = schema.get("const") {
            return constant.clone();
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(first) = schema
                .get(key)
                .and_then(Value::as_array)
                .and_then(|a| a.first())
            {
                return go(first, depth + 1);
            }
        }
        let kind = match schema.get("type") {
            Some(Value::String(kind)) => kind.to_ascii_lowercase(),
            Some(Value::Array(kinds)) => kinds
                .iter()
                .filter_map(Value::as_str)
                .find(|k| *k != "null")
                .unwrap_or("null")
                .to_ascii_lowercase(),
            _ if schema.get("properties").is_some() => "object".to_owned(),
            _ => "string".to_owned(),
        };
        match kind.as_str() {
            "object" => {
                let mut object = serde_json::Map::new();
                if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                    for (name, property) in properties {
                        object.insert(name.clone(), go(property, depth + 1));
                    }
                }
                Value::Object(object)
            }
            "array" => {
                let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let item = schema
                    .get("items")
                    .map_or(Value::Null, |i| go(i, depth + 1));
                Value::Array((0..min.min(4)).map(|_| item.clone()).collect())
            }
            "integer" | "number" => schema.get("minimum").cloned().unwrap_or_else(|| json!(1)),
            "boolean" => json!(false),
            "null" => Value::Null,
            _ => json!("scripted"),
        }
    }
    go(schema, 0)
}

/// What a protocol's history says.
#[derive(Debug, Default)]
struct History {
    /// Model replies so far (a run of consecutive model items is one reply).
    replies: usize,
    /// The first user message's text, to name the conversation.
    first_user: String,
    /// Whether the last item is a tool result.
    last_is_tool_result: bool,
}

/// Counts replies in a sequence of items, each classified as model output, a tool result
/// or other input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Model,
    ToolResult,
    Input,
}

fn count(items: impl IntoIterator<Item = Item>, first_user: String) -> History {
    let mut history = History {
        first_user,
        ..History::default()
    };
    let mut in_reply = false;
    for item in items {
        match item {
            Item::Model => {
                if !in_reply {
                    history.replies += 1;
                }
                in_reply = true;
                history.last_is_tool_result = false;
            }
            Item::ToolResult => {
                in_reply = false;
                history.last_is_tool_result = true;
            }
            Item::Input => {
                in_reply = false;
                history.last_is_tool_result = false;
            }
        }
    }
    history
}

/// The history of a request whose conversation is a `messages` list with roles (Anthropic
/// Messages, OpenAI Chat): the first user message's text, and each message as `classify`
/// sees it.
fn messages_history(body: &Value, classify: impl Fn(&Value) -> Item) -> Result<History, String> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("the request has no `messages` list")?;
    let first_user = messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| content_text(m.get("content")))
        .unwrap_or_default();
    Ok(count(messages.iter().map(classify), first_user))
}

/// The text of a content value: a string, or the `text` of a list of parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn tool_names(protocol: Protocol, body: &Value) -> Vec<String> {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for tool in tools {
        match protocol {
            Protocol::Gemini => {
                for decl in tool
                    .get("functionDeclarations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(name) = decl.get("name").and_then(Value::as_str) {
                        names.push(name.to_owned());
                    }
                }
            }
            Protocol::Chat => {
                if let Some(name) = tool.pointer("/function/name").and_then(Value::as_str) {
                    names.push(name.to_owned());
                }
            }
            Protocol::Anthropic | Protocol::Responses => {
                if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    names.push(name.to_owned());
                } else if let Some(kind) = tool.get("type").and_then(Value::as_str) {
                    names.push(kind.to_owned());
                }
            }
        }
    }
    names
}

/// FNV-1a: a stable digest to name a conversation (not a security measure).
fn fnv(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The ids a rendered reply uses, unique per conversation and reply.
#[derive(Debug, Clone)]
pub struct Ids {
    /// A prefix unique to the reply: the conversation's sequence number and the turn.
    pub stem: String,
}

impl Ids {
    /// Ids for reply `turn` of the conversation numbered `conversation`, attempt `attempt`.
    pub fn new(conversation: u64, turn: usize, attempt: u32) -> Self {
        Self {
            stem: format!("stub{conversation}t{turn}a{attempt}"),
        }
    }

    fn id(&self, kind: &str, index: usize) -> String {
        format!("{kind}_{}i{index}", self.stem)
    }
}

/// A reply rendered for the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    /// Server-sent events, each frame complete (`event:`/`data:` lines and the blank line).
    Stream(Vec<String>),
    /// One JSON body.
    Whole(Value),
}

/// Renders `turn` as `exchange`'s protocol answers it. A side request that asks for JSON
/// gets an instance of its schema ([`schema_instance`]) as its text, unless the script's
/// `side` reply already is JSON.
pub fn render(exchange: &Exchange, model: &str, turn: &Turn, ids: &Ids) -> Rendered {
    let json_turn;
    let turn = match &exchange.reply_schema {
        Some(schema)
            if exchange.side
                && turn
                    .text
                    .as_deref()
                    .is_none_or(|t| serde_json::from_str::<Value>(t).is_err()) =>
        {
            json_turn = Turn {
                text: Some(schema_instance(schema).to_string()),
                ..turn.clone()
            };
            &json_turn
        }
        _ => turn,
    };
    match (exchange.protocol, exchange.stream) {
        (Protocol::Anthropic, true) => Rendered::Stream(anthropic::stream(model, turn, ids)),
        (Protocol::Anthropic, false) => Rendered::Whole(anthropic::whole(model, turn, ids)),
        (Protocol::Responses, true) => Rendered::Stream(responses::stream(model, turn, ids)),
        (Protocol::Responses, false) => Rendered::Whole(responses::whole(model, turn, ids)),
        (Protocol::Chat, true) => Rendered::Stream(chat::stream(model, turn, ids)),
        (Protocol::Chat, false) => Rendered::Whole(chat::whole(model, turn, ids)),
        (Protocol::Gemini, true) => Rendered::Stream(gemini::stream(model, turn)),
        (Protocol::Gemini, false) => Rendered::Whole(gemini::whole(model, turn)),
    }
}

/// The status and body of a scripted API error in `protocol`.
pub fn error(protocol: Protocol, kind: ErrorKind) -> (u16, Value) {
    let (status, anthropic_type, message) = match kind {
        ErrorKind::RateLimited => (429, "rate_limit_error", "Rate limit reached (scripted)"),
        ErrorKind::Unavailable => (503, "api_error", "Service unavailable (scripted)"),
        ErrorKind::Overloaded => (529, "overloaded_error", "Overloaded (scripted)"),
        ErrorKind::Server => (500, "api_error", "Internal server error (scripted)"),
    };
    match protocol {
        Protocol::Anthropic => (
            status,
            json!({"type": "error", "error": {"type": anthropic_type, "message": message}}),
        ),
        Protocol::Responses | Protocol::Chat => {
            let (status, kind, code) = match kind {
                ErrorKind::RateLimited => (429, "requests", "rate_limit_exceeded"),
                ErrorKind::Unavailable | ErrorKind::Overloaded => {
                    (503, "server_error", "server_is_overloaded")
                }
                ErrorKind::Server => (500, "server_error", "internal_error"),
            };
            (
                status,
                json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
            )
        }
        Protocol::Gemini => {
            let (status, code) = match kind {
                ErrorKind::RateLimited => (429, "RESOURCE_EXHAUSTED"),
                ErrorKind::Unavailable | ErrorKind::Overloaded => (503, "UNAVAILABLE"),
                ErrorKind::Server => (500, "INTERNAL"),
            };
            let message = if kind == ErrorKind::Overloaded {
                "The model is overloaded. Please try again later. (scripted)"
            } else {
                message
            };
            (
                status,
                json!({"error": {"code": status, "message": message, "status": code}}),
            )
        }
    }
}

/// The body of a request the stub does not understand, in `protocol`'s error shape when
/// known.
pub fn bad_request(protocol: Option<Protocol>, status: u16, message: &str) -> Value {
    match protocol {
        Some(Protocol::Anthropic) => {
            json!({"type": "error", "error": {"type": if status == 404 { "not_found_error" } else { "invalid_request_error" }, "message": message}})
        }
        Some(Protocol::Gemini) => {
            json!({"error": {"code": status, "message": message, "status": if status == 404 { "NOT_FOUND" } else { "INVALID_ARGUMENT" }}})
        }
        _ => {
            json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}})
        }
    }
}

/// A token count answer (Anthropic `count_tokens`, Gemini `countTokens`): a rough count of
/// the body (a token per four bytes), enough for an agent's budget check.
pub fn count_tokens(protocol: Protocol, body: &[u8]) -> Value {
    let tokens = (body.len() / 4).max(1);
    match protocol {
        Protocol::Gemini => json!({"totalTokens": tokens}),
        _ => json!({"input_tokens": tokens}),
    }
}

/// The model list: one model, the script's (or `stub`).
pub fn models(protocol: Protocol, model: &str) -> Value {
    match protocol {
        Protocol::Gemini => json!({"models": [{"name": format!("models/{model}"),
            "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"]}]}),
        _ => {
            json!({"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "hyoka-model-stub"}], "models": []})
        }
    }
}

/// Splits `text` into chunks of at most `size` characters.
fn chunks(text: &str, size: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, ch) in text.chars().enumerate() {
        if i > 0 && i % size == 0 {
            out.push(std::mem::take(&mut current));
        }
        current.push(ch);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// An SSE frame with an `event:` line.
fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// An SSE frame of `data:` only.
fn data(data: &Value) -> String {
    format!("data: {data}\n\n")
}

#[cfg(test)]
mod tests;
