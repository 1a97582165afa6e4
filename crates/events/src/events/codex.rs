//! `codex exec --json`: Codex CLI's JSONL event stream.
//!
//! Derived from Codex's own source, `openai/codex`: `codex-rs/exec/src/exec_events.rs` (the
//! event and item types, at commit `08a1f30ca23f51922d1a4a4965b5ab999b64bead`) and
//! `codex-rs/exec/src/event_processor_with_jsonl_output.rs` (how `exec --json` emits them, at
//! commit `029bf4d55c5d33e77bdbdfaec25d06836ae9e213`); the format is the one of the 0.4x
//! releases onwards (`--json`, formerly `--experimental-json`).
//!
//! Every line is one object with a `type`: `thread.started`, `turn.started`,
//! `turn.completed` (with `usage`), `turn.failed`, `item.started`, `item.updated`,
//! `item.completed` (each with an `item`: `id`, `type` and the type's fields),
//! `item.plan.delta`, `request_user_input` or `error`. Item types: `agent_message`,
//! `reasoning`, `plan`, `command_execution` (`command`), `file_change` (`changes`, each a
//! `path` and a `kind`), `mcp_tool_call` (`server`, `tool`, `arguments`), `collab_tool_call`
//! (`tool`), `web_search` (`query`), `todo_list` and `error`.
//!
//! Counting, the same as for every format: a turn is one reply of the model, whatever it
//! holds, and an action is one `command_execution`, `file_change`, `mcp_tool_call`,
//! `web_search` or `collab_tool_call` (a tool call of Codex's own multi-agent tools).
//! Codex writes no event per model reply, so a reply is read from the items: the first item
//! of the model's (an `agent_message`, a `reasoning`, a tool item, a `plan` or a
//! `todo_list`) after the turn started or after a tool item completed begins a reply (its
//! tool's result went back to the model, which answers with the next reply). A reply that
//! is only a tool call (an `apply_patch` alone) is a turn. An action counts when it
//! *starts* (`item.started`; an item completed without a start counts at its completion),
//! once per item id, so a limit stops the agent before the command runs. (Codex 0.169 runs
//! the calls of one reply as the reply streams; two calls of one reply whose first
//! completes before the second starts read as two replies.)
//!
//! Results: a tool item's completion (once per item id) is an [`AgentEvent::ToolResult`]:
//! a `command_execution`'s `aggregated_output` (an error when its `exit_code` is not 0 or
//! its `status` is `failed` or `declined`), a `file_change`'s changes (`update path`, one a
//! line; an error when its `status` is `failed`), an `mcp_tool_call`'s text `content` or its
//! `error` `message`; cut to [`INPUT_PREVIEW_BYTES`] like Claude Code's.
//!
//! Spending: `turn.completed` `usage` is the thread's running total (Codex fills it from its
//! `total_token_usage`), so it is a [`UsageEvent::Total`]. Codex's `input_tokens` include the
//! cached ones and the cache writes (its `TokenUsage::non_cached_input` in
//! `codex-rs/protocol/src/protocol.rs` subtracts the cached ones; 0.169 adds
//! `cache_write_input_tokens`, from the Responses API's
//! `input_tokens_details.cache_write_tokens`), so `input_tokens` here is `input_tokens -
//! cached_input_tokens - cache_write_input_tokens`, `cached_input_tokens` is
//! `cache_read_tokens` and `cache_write_input_tokens` is `cache_creation_tokens`: the same
//! meaning as Claude Code's figures, and `--max-tokens` counts no token twice. Codex
//! reports no cost, and an all-zero `usage` (what Codex writes when it had no token count)
//! reports nothing. Codex reports usage only when its turn completes: a session stopped
//! earlier has none.
//!
//! API errors: an `error` line (`Reconnecting... 1/5 (… last status: 429 Too Many
//! Requests)`) or a `turn.failed` naming a 429 or 5xx status is an
//! [`AgentEvent::ApiError`].

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{
    AgentEvent, INPUT_PREVIEW_BYTES, LineCounts, LineReader, RecentIds, input_path, is_blank,
    truncate_chars,
};
use crate::usage::{TokenUsage, UsageEvent};

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    item: Option<Item<'a>>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// The fields of an item the reader needs, kept raw. The first occurrence of a key wins: a
/// `web_search` item carries `id` twice (the item's and the search's, flattened into one
/// object), which a derived deserializer would refuse.
#[derive(Default)]
struct Item<'a> {
    id: Option<&'a RawValue>,
    kind: Option<&'a RawValue>,
    command: Option<&'a RawValue>,
    changes: Option<&'a RawValue>,
    server: Option<&'a RawValue>,
    tool: Option<&'a RawValue>,
    arguments: Option<&'a RawValue>,
    query: Option<&'a RawValue>,
    aggregated_output: Option<&'a RawValue>,
    exit_code: Option<&'a RawValue>,
    status: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Key {
    Id,
    #[serde(rename = "type")]
    Kind,
    Command,
    Changes,
    Server,
    Tool,
    Arguments,
    Query,
    AggregatedOutput,
    ExitCode,
    Status,
    Result,
    Error,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Item<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ItemVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ItemVisitor<'a> {
            type Value = Item<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a thread item")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut item = Item::default();
                while let Some(key) = map.next_key::<Key>()? {
                    let slot = match key {
                        Key::Id => &mut item.id,
                        Key::Kind => &mut item.kind,
                        Key::Command => &mut item.command,
                        Key::Changes => &mut item.changes,
                        Key::Server => &mut item.server,
                        Key::Tool => &mut item.tool,
                        Key::Arguments => &mut item.arguments,
                        Key::Query => &mut item.query,
                        Key::AggregatedOutput => &mut item.aggregated_output,
                        Key::ExitCode => &mut item.exit_code,
                        Key::Status => &mut item.status,
                        Key::Result => &mut item.result,
                        Key::Error => &mut item.error,
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    let value = map.next_value::<&'de RawValue>()?;
                    slot.get_or_insert(value);
                }
                Ok(item)
            }
        }
        deserializer.deserialize_map(ItemVisitor(std::marker::PhantomData))
    }
}

/// A JSON string's text; `None` for anything else.
fn text(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let raw = raw?.get();
    serde_json::from_str::<&str>(raw)
        .map(Cow::Borrowed)
        .or_else(|_| serde_json::from_str::<String>(raw).map(Cow::Owned))
        .ok()
}

/// `{"name":<raw>,…}` of the fields that are present.
fn object(fields: &[(&str, Option<&RawValue>)]) -> Option<String> {
    let parts: Vec<String> = fields
        .iter()
        .filter_map(|(name, raw)| Some(format!("\"{name}\":{}", (*raw)?.get())))
        .collect();
    (!parts.is_empty()).then(|| format!("{{{}}}", parts.join(",")))
}

/// One entry of a `file_change` item's `changes`, without its diff.
#[derive(Deserialize, serde::Serialize)]
struct Change<'a> {
    #[serde(borrow, default)]
    path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<&'a RawValue>,
}

/// The tokens of a `turn.completed` `usage`.
#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cached_input_tokens: Option<u64>,
    #[serde(default)]
    cache_write_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

fn usage(raw: Option<&RawValue>) -> Option<TokenUsage> {
    let usage: RawUsage = serde_json::from_str(raw?.get()).ok()?;
    let tokens = TokenUsage {
        input_tokens: usage.input_tokens.map(|i| {
            i.saturating_sub(usage.cached_input_tokens.unwrap_or(0))
                .saturating_sub(usage.cache_write_input_tokens.unwrap_or(0))
        }),
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cached_input_tokens,
        cache_creation_tokens: usage.cache_write_input_tokens,
        cost_usd: None,
    };
    (tokens.tokens() > 0).then_some(tokens)
}

/// How many completed item ids are remembered to recognise a repeated completion.
const RECENT_ITEMS: usize = 64;

/// A stateful `codex exec --json` reader (see the module docs for what counts).
#[derive(Debug, Default)]
pub struct CodexJsonParser {
    /// The ids of recent tool items that counted as actions.
    counted: RecentIds<RECENT_ITEMS>,
    /// The ids of recent tool items whose result was reported.
    answered: RecentIds<RECENT_ITEMS>,
    /// Whether a reply of the model is under way (an item of it was seen, and no tool of it
    /// completed since).
    in_reply: bool,
    counts: LineCounts,
}

/// The item kinds that are tool calls (actions).
fn is_tool(kind: &str) -> bool {
    matches!(
        kind,
        "command_execution" | "file_change" | "mcp_tool_call" | "web_search" | "collab_tool_call"
    )
}

impl CodexJsonParser {
    /// An item started, was updated or completed.
    fn item(&mut self, item: &Item<'_>, completed: bool, events: &mut Vec<AgentEvent>) {
        let Some(kind) = text(item.kind) else {
            return;
        };
        let model = is_tool(&kind)
            || matches!(
                kind.as_ref(),
                "agent_message" | "reasoning" | "plan" | "todo_list"
            );
        if !model {
            return;
        }
        let tool = is_tool(&kind);
        // A tool item seen before (started, then updated and completed, or completed twice)
        // is the same call: no new reply, no new action.
        let new_tool = tool && text(item.id).is_none_or(|id| self.counted.first_time(&id));
        if !self.in_reply && (new_tool || !tool) {
            self.in_reply = true;
            events.push(AgentEvent::Turn {
                message_id: text(item.id).map(Cow::into_owned),
            });
        }
        if new_tool {
            events.push(action(&kind, item));
        }
        if tool && completed {
            // Its result goes back to the model: what comes next is the model's next reply.
            self.in_reply = false;
            if text(item.id).is_none_or(|id| self.answered.first_time(&id)) {
                events.push(tool_result(&kind, item));
            }
        }
    }
}

/// The action of a tool item.
fn action(kind: &str, item: &Item<'_>) -> AgentEvent {
    {
        match kind {
            "file_change" => {
                let changes: Vec<Change<'_>> = item
                    .changes
                    .and_then(|raw| serde_json::from_str(raw.get()).ok())
                    .unwrap_or_default();
                let path = changes.iter().find_map(|c| c.path.as_deref());
                let input = serde_json::to_string(&changes)
                    .ok()
                    .map(|list| format!("{{\"changes\":{list}}}"));
                tool_call(kind, path.map(str::to_owned), input)
            }
            "mcp_tool_call" => tool_call(
                kind,
                item.arguments.and_then(|raw| input_path(raw.get())),
                object(&[
                    ("server", item.server),
                    ("tool", item.tool),
                    ("arguments", item.arguments),
                ]),
            ),
            "web_search" => tool_call(kind, None, object(&[("query", item.query)])),
            "collab_tool_call" => tool_call(kind, None, object(&[("tool", item.tool)])),
            _ => tool_call(kind, None, object(&[("command", item.command)])),
        }
    }
}

/// The result of a completed tool item, as the model got it back: a command's
/// `aggregated_output` (an error when it exited non-zero, failed or was declined), a patch's
/// changes (`add path`, one a line; an error when it failed), an MCP call's text content or
/// its `error` `message`, a collab call's status; a web search reports no text.
fn tool_result(kind: &str, item: &Item<'_>) -> AgentEvent {
    let status = text(item.status);
    let failed = matches!(status.as_deref(), Some("failed" | "declined"));
    let (output, error) = match kind {
        "command_execution" => {
            let code = item
                .exit_code
                .and_then(|raw| serde_json::from_str::<i64>(raw.get()).ok());
            let output = text(item.aggregated_output)
                .map(Cow::into_owned)
                .filter(|o| !o.is_empty());
            (output, failed || code.is_some_and(|c| c != 0))
        }
        "file_change" => {
            let changes: Vec<Change<'_>> = item
                .changes
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or_default();
            let lines: Vec<String> = changes
                .iter()
                .filter_map(|c| {
                    let kind = c
                        .kind
                        .and_then(|k| serde_json::from_str::<&str>(k.get()).ok());
                    Some(format!(
                        "{} {}",
                        kind.unwrap_or("change"),
                        c.path.as_deref()?
                    ))
                })
                .collect();
            ((!lines.is_empty()).then(|| lines.join("\n")), failed)
        }
        "mcp_tool_call" => {
            let message = item
                .error
                .and_then(|raw| serde_json::from_str::<ErrorMessage<'_>>(raw.get()).ok())
                .and_then(|e| e.message);
            match message {
                Some(message) => (Some(message.into_owned()), true),
                None => (item.result.and_then(|raw| content_text(raw.get())), failed),
            }
        }
        _ => (None, failed),
    };
    AgentEvent::ToolResult {
        output: output.map(|o| truncate_chars(&o, INPUT_PREVIEW_BYTES)),
        error,
    }
}

/// An MCP call's `error`.
#[derive(Deserialize)]
struct ErrorMessage<'a> {
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
}

/// The `text` of an MCP result's `content` blocks, joined by newlines; `None` without text.
fn content_text(raw: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(raw).ok()?;
    let texts: Vec<&str> = value
        .get("content")?
        .as_array()?
        .iter()
        .filter_map(|b| b.get("text")?.as_str())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// An API error a Codex `error` or `turn.failed` line names, if its status is transient.
fn api_error(line: &Line<'_>) -> Option<AgentEvent> {
    let message = line
        .message
        .as_deref()
        .map(str::to_owned)
        .or_else(|| line.error.map(|raw| raw.get().to_owned()))?;
    let status = super::status_in(&message).filter(|s| super::transient_api_status(*s))?;
    Some(AgentEvent::api_error(Some(status), &message))
}

fn tool_call(name: &str, path: Option<String>, input: Option<String>) -> AgentEvent {
    AgentEvent::ToolCall {
        name: name.to_owned(),
        path,
        input: input.map(|text| truncate_chars(&text, INPUT_PREVIEW_BYTES)),
    }
}

impl LineReader for CodexJsonParser {
    fn read_line(&mut self, line: &[u8], events: &mut Vec<AgentEvent>) {
        if is_blank(line) {
            return;
        }
        let Ok(parsed) = serde_json::from_slice::<Line<'_>>(line) else {
            self.counts.malformed += 1;
            return;
        };
        match parsed.kind.as_deref() {
            Some(kind @ ("item.started" | "item.updated" | "item.completed")) => {
                if let Some(item) = &parsed.item {
                    self.item(item, kind == "item.completed", events);
                }
            }
            Some("turn.completed") => {
                self.in_reply = false;
                if let Some(total) = usage(parsed.usage) {
                    events.push(AgentEvent::Usage(UsageEvent::Total(total)));
                }
            }
            Some("turn.started") => self.in_reply = false,
            Some("error" | "turn.failed") => events.extend(api_error(&parsed)),
            Some("thread.started" | "item.plan.delta" | "request_user_input") => {}
            _ => {
                self.counts.unknown += 1;
                return;
            }
        }
        self.counts.seen += 1;
    }

    fn oversized(&mut self) {
        self.counts.malformed += 1;
    }

    fn counts(&self) -> LineCounts {
        self.counts
    }
}
