//! `action_timeline.json`: what the agent did, in order, with a summary.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::records::millis;
use crate::report::{Counts, Termination};
use crate::watch::FileChange;
use hyoka_events::AgentEvent;

/// The most events a timeline keeps; later ones are counted in `summary.dropped_events`.
/// The summary's counts are always complete.
pub const MAX_EVENTS: usize = 10_000;

/// The kind of a timeline event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// An assistant message began.
    Turn,
    /// A tool call (`tool`, and `path` and `input` where known).
    ToolCall,
    /// A file appeared in the workspace.
    FileCreated,
    /// A file of the workspace was written.
    FileChanged,
    /// A file of the workspace was removed.
    FileDeleted,
    /// A limit was crossed (`detail` names it and the counts).
    LimitReached,
    /// A timeout or a signal stopped the agent.
    Signal,
    /// The agent's exit (`detail`: code or signal).
    Exit,
    /// A phase after the agent started or ended (`detail`: `build started`, `review passed`).
    Phase,
    /// A tool call's result (`detail`: its text, cut at 512 bytes; `input` is `"error"` when
    /// the agent marked it as one).
    ToolResult,
    /// The agent reported spending (`detail`: `+120 in, 40 out, $0.0020` for an increment,
    /// `total 120 in, …` for its running total).
    Usage,
}

/// One event.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TimelineEvent {
    /// Position in the timeline, from 0.
    pub sequence: u64,
    /// Milliseconds since the eval started.
    pub t_ms: u64,
    /// What happened.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The tool's name, for tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The file, for tool calls that name one and for file events (relative to the workspace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The tool call's input as JSON text, cut at 512 bytes on a character boundary (`…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// A human-readable detail (limit, signal, exit code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The totals over the whole eval.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Summary {
    /// Assistant messages seen.
    pub turns: u64,
    /// Tool calls seen.
    pub actions: u64,
    /// Tool calls per tool name.
    pub tools: BTreeMap<String, u64>,
    /// File-created events.
    pub files_created: u64,
    /// File-changed events.
    pub files_changed: u64,
    /// File-deleted events.
    pub files_deleted: u64,
    /// Files created or changed at the end (from the final scan), as in `report.json`.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Wall time of the eval.
    pub duration_ms: u64,
    /// Events in total, kept or not.
    pub events: u64,
    /// Events beyond the 10,000 kept.
    pub dropped_events: u64,
    /// Event lines of an unknown type.
    pub unknown_lines: u64,
    /// Event lines that were not valid (not JSON, or oversized).
    pub malformed_lines: u64,
}

/// `action_timeline.json`: what the agent did, in order, with a summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Timeline {
    /// The run.
    pub run_id: String,
    /// The eval.
    pub eval_id: String,
    /// What happened, in order (at most 10,000 events).
    pub events: Vec<TimelineEvent>,
    /// Totals over the whole eval.
    pub summary: Summary,
}

/// Builds a timeline as events arrive.
#[derive(Debug)]
pub(crate) struct TimelineBuilder {
    start: Instant,
    next: u64,
    events: Vec<TimelineEvent>,
    summary: Summary,
}

impl TimelineBuilder {
    pub(crate) fn new(start: Instant) -> Self {
        Self {
            start,
            next: 0,
            events: Vec::new(),
            summary: Summary::default(),
        }
    }

    fn push(
        &mut self,
        at: Instant,
        kind: EventType,
        tool: Option<String>,
        path: Option<String>,
        input: Option<String>,
        detail: Option<String>,
    ) {
        self.summary.events += 1;
        if self.events.len() >= MAX_EVENTS {
            self.summary.dropped_events += 1;
            return;
        }
        self.events.push(TimelineEvent {
            sequence: self.next,
            t_ms: millis(at.saturating_duration_since(self.start)),
            kind,
            tool,
            path,
            input,
            detail,
        });
        self.next += 1;
    }

    pub(crate) fn agent(&mut self, at: Instant, event: &AgentEvent) {
        match event {
            AgentEvent::Turn { .. } => {
                self.summary.turns += 1;
                self.push(at, EventType::Turn, None, None, None, None);
            }
            AgentEvent::ToolCall { name, path, input } => {
                self.summary.actions += 1;
                *self.summary.tools.entry(name.clone()).or_default() += 1;
                self.push(
                    at,
                    EventType::ToolCall,
                    Some(name.clone()),
                    path.clone(),
                    input.clone(),
                    None,
                );
            }
            AgentEvent::ToolResult { output, error } => {
                let flag = error.then(|| "error".to_owned());
                self.push(at, EventType::ToolResult, None, None, flag, output.clone());
            }
            // The sum is `report.json` `usage`; the event says when it was spent.
            AgentEvent::Usage(usage) => {
                let detail = usage_detail(usage);
                self.push(at, EventType::Usage, None, None, None, Some(detail));
            }
            AgentEvent::Announced { .. } | AgentEvent::ApiError { .. } => {}
        }
    }

    pub(crate) fn file(&mut self, at: Instant, change: FileChange, path: String) {
        let kind = match change {
            FileChange::Created => {
                self.summary.files_created += 1;
                EventType::FileCreated
            }
            FileChange::Changed => {
                self.summary.files_changed += 1;
                EventType::FileChanged
            }
            FileChange::Deleted => {
                self.summary.files_deleted += 1;
                EventType::FileDeleted
            }
        };
        self.push(at, kind, None, Some(path), None, None);
    }

    pub(crate) fn limit(&mut self, at: Instant, termination: Termination, counts: Counts) {
        let detail = format!(
            "{} crossed: turns {}, actions {}, files {}, bytes {}",
            termination.as_str(),
            counts.turns,
            counts.actions,
            counts.files,
            counts.output_bytes
        );
        self.push(at, EventType::LimitReached, None, None, None, Some(detail));
    }

    pub(crate) fn signal(&mut self, at: Instant, detail: String) {
        self.push(at, EventType::Signal, None, None, None, Some(detail));
    }

    pub(crate) fn phase(&mut self, at: Instant, detail: String) {
        self.push(at, EventType::Phase, None, None, None, Some(detail));
    }

    pub(crate) fn exit(&mut self, at: Instant, detail: String) {
        self.push(at, EventType::Exit, None, None, None, Some(detail));
    }

    pub(crate) fn finish(
        mut self,
        run_id: &str,
        eval_id: &str,
        counts: Counts,
        duration: Duration,
        unknown: u64,
        malformed: u64,
    ) -> Timeline {
        self.summary.files = counts.files;
        self.summary.bytes = counts.output_bytes;
        self.summary.duration_ms = millis(duration);
        self.summary.unknown_lines = unknown;
        self.summary.malformed_lines = malformed;
        Timeline {
            run_id: run_id.to_owned(),
            eval_id: eval_id.to_owned(),
            events: self.events,
            summary: self.summary,
        }
    }
}

/// A usage event's text: `+120 in, 40 out, 30 cache read, 5 cache written, $0.0020` for an
/// increment, `total …` for a running total; the fields the agent did not report are left
/// out.
fn usage_detail(event: &hyoka_events::UsageEvent) -> String {
    use hyoka_events::UsageEvent;
    let (lead, usage) = match event {
        UsageEvent::Increment(u) => ("+", u),
        UsageEvent::Total(u) => ("total ", u),
    };
    let mut parts: Vec<String> = [
        (usage.input_tokens, "in"),
        (usage.output_tokens, "out"),
        (usage.cache_read_tokens, "cache read"),
        (usage.cache_creation_tokens, "cache written"),
    ]
    .into_iter()
    .filter_map(|(n, what)| n.map(|n| format!("{n} {what}")))
    .collect();
    if let Some(cost) = usage.cost_usd {
        parts.push(format!("${cost:.4}"));
    }
    format!("{lead}{}", parts.join(", "))
}
