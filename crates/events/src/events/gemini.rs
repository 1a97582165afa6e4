//! Gemini CLI's `--output-format stream-json`.
//!
//! Derived from Gemini CLI's own source, `google-gemini/gemini-cli` at commit
//! `5411f113cafae26161b4969b0237b8e1e024e2c2` (`@google/gemini-cli` 0.56.0-nightly):
//! `packages/core/src/output/types.ts` (the event types), `stream-json-formatter.ts` (the
//! `stats`) and `packages/cli/src/nonInteractiveCli.ts` (when each event is written).
//!
//! Every line is one object with a `type` and a `timestamp`: `init` (`session_id`, `model`),
//! `message` (`role` `user` or `assistant`, `content`, and `delta: true` on each streamed
//! chunk of an assistant reply), `tool_use` (`tool_name`, `tool_id`, `parameters`),
//! `tool_result` (`tool_id`, `status`, `output` or `error`), `error` (`severity`, `message`)
//! and `result` (`status`, `stats`).
//!
//! Counting, the same as for every format: a turn is one reply of the model, whatever it
//! holds. Gemini streams a reply as `message` lines with `delta: true` and announces its
//! tool calls with `tool_use` lines while it streams; it runs the calls after the reply and
//! writes their `tool_result`s, then sends the results back and streams the next reply. So
//! the first assistant message or `tool_use` after the start, a `tool_result` or a user
//! message begins a reply: a reply that is only a tool call is a turn, and an assistant
//! message without `delta` is a whole reply of its own. An action is one `tool_use` (a
//! `tool_id` seen again is not counted again), counted when it is announced, before it
//! runs; its `parameters` are the input, and their `file_path` (`write_file`, `replace`,
//! `read_file`) or `path` is the timeline's `path`. The `init` line names the model
//! ([`AgentEvent::Announced`]).
//!
//! Results: a `tool_result` is an [`AgentEvent::ToolResult`]: its `output` (Gemini writes
//! a tool's display text there, none for a result it shows as a diff), or for an error (its
//! `status` is `error`) its `error`'s `message`; cut to [`INPUT_PREVIEW_BYTES`] like Claude
//! Code's.
//!
//! Spending: the `result` line's `stats` are the session's totals, a [`UsageEvent::Total`],
//! written only at the end: a session stopped earlier has no usage.
//! Gemini's `input_tokens` are the whole prompt, cached tokens included; `input` (the part
//! not read from the cache) and `cached` break it down (since December 2025; before that,
//! `input_tokens` minus `cached` when only `cached` is there, else `input_tokens` with no
//! cache figure). Gemini reports no cost.
//!
//! API errors: an `error` line, or a `result` whose `error` names a 429 or 5xx status (or
//! an overload), is an [`AgentEvent::ApiError`]. (Gemini CLI 0.61 writes its retries on
//! stderr, which is not read.)

use std::borrow::Cow;

use serde::Deserialize;
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
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    delta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parameters: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stats: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
}

/// The token figures of a `result` line's `stats`.
#[derive(Deserialize)]
struct Stats {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cached: Option<u64>,
    #[serde(default)]
    input: Option<u64>,
}

fn usage(raw: Option<&RawValue>) -> Option<TokenUsage> {
    let stats: Stats = serde_json::from_str(raw?.get()).ok()?;
    let input = stats.input.or_else(|| {
        stats
            .input_tokens
            .map(|all| all.saturating_sub(stats.cached.unwrap_or(0)))
    });
    let tokens = TokenUsage {
        input_tokens: input,
        output_tokens: stats.output_tokens,
        cache_read_tokens: stats.cached,
        cache_creation_tokens: None,
        cost_usd: None,
    };
    (!tokens.is_empty()).then_some(tokens)
}

/// How many tool ids are remembered to recognise a repeated `tool_use`.
const RECENT_TOOLS: usize = 64;

/// A stateful Gemini stream-json reader (see the module docs for what counts).
#[derive(Debug, Default)]
pub struct GeminiStreamJsonParser {
    /// Whether a reply of the model is under way (since its first message or tool call).
    in_reply: bool,
    /// Whether the last assistant message was a whole one (not a streamed chunk).
    whole: bool,
    /// Recent tool ids.
    tools: RecentIds<RECENT_TOOLS>,
    counts: LineCounts,
}

impl LineReader for GeminiStreamJsonParser {
    fn read_line(&mut self, line: &[u8], events: &mut Vec<AgentEvent>) {
        if is_blank(line) {
            return;
        }
        let Ok(parsed) = serde_json::from_slice::<Line<'_>>(line) else {
            self.counts.malformed += 1;
            return;
        };
        match parsed.kind.as_deref() {
            Some("message") => match parsed.role.as_deref() {
                Some("assistant") => {
                    let delta = parsed.delta.is_some_and(|d| d.get() == "true");
                    if !(delta && self.in_reply && !self.whole) {
                        events.push(AgentEvent::Turn { message_id: None });
                    }
                    self.in_reply = true;
                    self.whole = !delta;
                }
                _ => self.in_reply = false,
            },
            Some("tool_use") => {
                if !self.in_reply {
                    events.push(AgentEvent::Turn { message_id: None });
                    self.in_reply = true;
                }
                self.whole = false;
                self.tool_use(&parsed, events);
            }
            Some("result") => {
                self.in_reply = false;
                if let Some(total) = usage(parsed.stats) {
                    events.push(AgentEvent::Usage(UsageEvent::Total(total)));
                }
                events.extend(api_error(&parsed));
            }
            // A warning between two chunks does not split the reply.
            Some("error") => events.extend(api_error(&parsed)),
            Some("init") => events.push(AgentEvent::Announced {
                model: parsed.model.as_deref().map(str::to_owned),
                version: None,
            }),
            Some("tool_result") => {
                self.in_reply = false;
                events.push(tool_result(&parsed));
            }
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

/// An API error an `error` line or a failed `result` names, if its status is transient.
fn api_error(line: &Line<'_>) -> Option<AgentEvent> {
    let message = line
        .message
        .as_deref()
        .map(str::to_owned)
        .or_else(|| line.error.map(|raw| raw.get().to_owned()))?;
    let status = super::status_in(&message).filter(|s| super::transient_api_status(*s))?;
    Some(AgentEvent::api_error(Some(status), &message))
}

/// A `tool_result` line's result: an error (its `status` is `error`, or it carries an
/// `error`) says its `error`'s `message` (which names what failed: Gemini's `output` is the
/// short display text, `File not found.`), else its `output`; a success says its `output`.
fn tool_result(line: &Line<'_>) -> AgentEvent {
    #[derive(Deserialize)]
    struct ToolError {
        #[serde(default)]
        message: Option<String>,
    }
    let error = line
        .error
        .and_then(|raw| serde_json::from_str::<ToolError>(raw.get()).ok());
    let output = line
        .output
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
        .filter(|o| !o.is_empty());
    let failed = line.status.as_deref() == Some("error") || error.is_some();
    let text = match error.and_then(|e| e.message).filter(|m| !m.is_empty()) {
        Some(message) => Some(message),
        None => output,
    };
    AgentEvent::ToolResult {
        output: text.map(|o| truncate_chars(&o, INPUT_PREVIEW_BYTES)),
        error: failed,
    }
}

impl GeminiStreamJsonParser {
    fn tool_use(&mut self, line: &Line<'_>, events: &mut Vec<AgentEvent>) {
        if line
            .tool_id
            .as_deref()
            .is_some_and(|id| !self.tools.first_time(id))
        {
            return;
        }
        let input = line.parameters.map(RawValue::get);
        events.push(AgentEvent::ToolCall {
            name: line.tool_name.as_deref().unwrap_or("unknown").to_owned(),
            path: input.and_then(input_path),
            input: input.map(|raw| truncate_chars(raw, INPUT_PREVIEW_BYTES)),
        });
    }
}
