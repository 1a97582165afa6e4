//! What the stub has done and is doing: its conversations and their phase, and the request
//! log. Shared by every connection behind one lock, which is held only to update counters.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use serde::Serialize;

use crate::protocol::{Exchange, Protocol};
use crate::script::{ErrorKind, Script, Turn};

/// What a conversation is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// No reply is being sent and none is awaited: the last reply ended the turn (or there
    /// was none yet).
    Idle,
    /// A reply is being sent (including its scripted delay and stalls).
    Streaming,
    /// The last reply called tools: the agent is running them and will send their results.
    WaitingForTool,
}

/// The state endpoint's answer (`GET /_stub/state`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateSnapshot {
    /// The stub as a whole: `streaming` if any conversation streams, else `waiting_for_tool`
    /// if any waits, else `idle`.
    pub state: Phase,
    /// Model requests received (side requests included).
    pub requests: u64,
    /// Replies served in full.
    pub replies: u64,
    /// Scripted errors served.
    pub errors: u64,
    /// Requests the stub did not understand (unknown paths, bad bodies).
    pub unknown: u64,
    /// Side requests served.
    pub side_requests: u64,
    /// The conversations, oldest first.
    pub conversations: Vec<ConversationSnapshot>,
}

/// One conversation (one agent session).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConversationSnapshot {
    /// Its id (see [`Exchange::conversation`]).
    pub id: String,
    /// The protocol it speaks.
    pub protocol: Protocol,
    /// The turn number: replies served or being served (1 while the first streams).
    pub turn: usize,
    /// What it is doing.
    pub state: Phase,
    /// The model it asked for last.
    pub model: String,
    /// Tool calls the replies made.
    pub tool_calls: u64,
    /// Requests it sent.
    pub requests: u64,
}

/// One logged request (`GET /_stub/requests`, and `--log FILE` as JSON lines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// Its sequence number, from 1.
    pub seq: u64,
    /// Milliseconds since the stub started.
    pub at_ms: u64,
    /// When it arrived, on the wall clock (RFC 3339, milliseconds), to compare with the
    /// `time` of `hyoka respawn --events` lines: a keystroke dated between a request's `time`
    /// and its `done` was typed while the model answered.
    pub time: String,
    /// When its answer ended (sent in full, an error, or the client gone), on the wall
    /// clock; absent while it is being answered, and in the `--log` file (written as the
    /// request arrives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<String>,
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The protocol, when the path names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// The conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// The reply index it asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// The model named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether it asked for a stream.
    pub stream: bool,
    /// Whether it was a side request.
    pub side: bool,
    /// The names of the tools it offered.
    pub tools: Vec<String>,
    /// The status answered.
    pub status: u16,
    /// What the stub did: `reply`, `side`, `error 429`, `unknown path`, `bad request: …`,
    /// `count_tokens`, `models`.
    pub outcome: String,
}

/// How many log entries are kept in memory (the `--log` file keeps all).
const LOG_KEPT: usize = 2000;

#[derive(Debug)]
struct Conversation {
    number: u64,
    protocol: Protocol,
    turn: usize,
    phase: Phase,
    model: String,
    tool_calls: u64,
    requests: u64,
}

/// What the server is to send for one model request.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The reply.
    pub(crate) turn: Turn,
    /// An error to answer with instead.
    pub(crate) error: Option<ErrorKind>,
    /// The conversation's number (for ids).
    pub(crate) number: u64,
    /// Which attempt of this reply it is (for ids).
    pub(crate) attempt: u32,
}

pub(crate) struct Shared {
    pub(crate) script: Script,
    started: Instant,
    /// The wall clock at `started`.
    wall: SystemTime,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    conversations: BTreeMap<String, Conversation>,
    attempts: HashMap<(String, usize), u32>,
    log: VecDeque<LogEntry>,
    seq: u64,
    requests: u64,
    replies: u64,
    errors: u64,
    unknown: u64,
    side: u64,
    sink: Option<Box<dyn Write + Send>>,
}

impl Shared {
    #[expect(
        clippy::disallowed_methods,
        reason = "the stub dates its log; no decision is taken on the clock"
    )]
    pub(crate) fn new(script: Script, sink: Option<Box<dyn Write + Send>>) -> Self {
        Self {
            script,
            started: Instant::now(),
            wall: SystemTime::now(),
            inner: Mutex::new(Inner {
                sink,
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave counters half-updated in a way that
        // matters to a test stub; keep serving.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Decides what to send for `exchange` and marks its conversation streaming.
    pub(crate) fn begin(&self, exchange: &Exchange) -> Plan {
        let mut inner = self.lock();
        inner.requests += 1;
        if exchange.side {
            inner.side += 1;
            return Plan {
                turn: self.script.side.clone(),
                error: None,
                number: 0,
                attempt: 0,
            };
        }
        let next = u64::try_from(inner.conversations.len()).unwrap_or(u64::MAX) + 1;
        let conversation = inner
            .conversations
            .entry(exchange.conversation.clone())
            .or_insert_with(|| Conversation {
                number: next,
                protocol: exchange.protocol,
                turn: 0,
                phase: Phase::Idle,
                model: exchange.model.clone(),
                tool_calls: 0,
                requests: 0,
            });
        conversation.requests += 1;
        conversation.turn = exchange.turn + 1;
        conversation.phase = Phase::Streaming;
        conversation.model.clone_from(&exchange.model);
        let number = conversation.number;
        let turn = self.script.turn(exchange.turn).clone();
        let attempts = inner
            .attempts
            .entry((exchange.conversation.clone(), exchange.turn))
            .or_insert(0);
        let attempt = *attempts;
        *attempts += 1;
        let error = turn.error.filter(|e| attempt < e.times).map(|e| e.kind);
        Plan {
            turn,
            error,
            number,
            attempt,
        }
    }

    /// Marks the reply to `exchange` finished: `completed` when it was sent in full, not
    /// when it was an error or the client went away.
    pub(crate) fn finish(&self, exchange: &Exchange, plan: &Plan, completed: bool) {
        let mut inner = self.lock();
        if plan.error.is_some() {
            inner.errors += 1;
        } else if completed && !exchange.side {
            inner.replies += 1;
        }
        if exchange.side {
            return;
        }
        if let Some(conversation) = inner.conversations.get_mut(&exchange.conversation) {
            let calls = completed && plan.error.is_none() && plan.turn.calls_tools();
            if calls {
                conversation.tool_calls += u64::try_from(plan.turn.tools.len()).unwrap_or(u64::MAX);
            }
            if plan.error.is_some() || !completed {
                // The reply was not given: the agent will ask for it again.
                conversation.turn = exchange.turn;
            }
            conversation.phase = if calls {
                Phase::WaitingForTool
            } else {
                Phase::Idle
            };
        }
    }

    /// Counts a request the stub did not understand.
    pub(crate) fn unknown(&self) {
        self.lock().unknown += 1;
    }

    /// The wall clock now, as the log writes it.
    fn wall_now(&self) -> String {
        humantime::format_rfc3339_millis(self.wall + self.started.elapsed()).to_string()
    }

    /// Notes that the answer to the request logged as `seq` ended.
    pub(crate) fn ended(&self, seq: u64) {
        let done = self.wall_now();
        let mut inner = self.lock();
        if let Some(entry) = inner.log.iter_mut().rev().find(|e| e.seq == seq) {
            entry.done = Some(done);
        }
    }

    /// Logs one request; its sequence number is returned for [`Shared::ended`].
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site, each argument a log field"
    )]
    pub(crate) fn log(
        &self,
        method: &str,
        path: &str,
        exchange: Option<&Exchange>,
        protocol: Option<Protocol>,
        status: u16,
        outcome: String,
    ) -> u64 {
        let time = self.wall_now();
        let mut inner = self.lock();
        inner.seq += 1;
        let entry = LogEntry {
            seq: inner.seq,
            at_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            // Only a model request is answered over time; anything else is answered now.
            done: exchange.is_none().then(|| time.clone()),
            time,
            method: method.to_owned(),
            path: path.to_owned(),
            protocol: exchange.map(|e| e.protocol).or(protocol),
            conversation: exchange.map(|e| e.conversation.clone()),
            turn: exchange.map(|e| e.turn),
            model: exchange.map(|e| e.model.clone()),
            stream: exchange.is_some_and(|e| e.stream),
            side: exchange.is_some_and(|e| e.side),
            tools: exchange.map(|e| e.tools.clone()).unwrap_or_default(),
            status,
            outcome,
        };
        tracing::info!(
            seq = entry.seq,
            path = %entry.path,
            conversation = entry.conversation.as_deref().unwrap_or("-"),
            turn = entry.turn.map_or(-1, |t| i64::try_from(t).unwrap_or(i64::MAX)),
            status,
            "{}",
            entry.outcome
        );
        if let Some(sink) = inner.sink.as_mut() {
            let line = serde_json::to_string(&entry).unwrap_or_default();
            if writeln!(sink, "{line}")
                .and_then(|()| sink.flush())
                .is_err()
            {
                tracing::warn!("cannot write the request log; it is off from now on");
                inner.sink = None;
            }
        }
        if inner.log.len() == LOG_KEPT {
            inner.log.pop_front();
        }
        let seq = entry.seq;
        inner.log.push_back(entry);
        seq
    }

    /// The state now.
    pub(crate) fn snapshot(&self) -> StateSnapshot {
        let inner = self.lock();
        let mut conversations: Vec<ConversationSnapshot> = inner
            .conversations
            .iter()
            .map(|(id, c)| ConversationSnapshot {
                id: id.clone(),
                protocol: c.protocol,
                turn: c.turn,
                state: c.phase,
                model: c.model.clone(),
                tool_calls: c.tool_calls,
                requests: c.requests,
            })
            .collect();
        conversations.sort_by_key(|c| inner.conversations[&c.id].number);
        let any = |phase| conversations.iter().any(|c| c.state == phase);
        let state = if any(Phase::Streaming) {
            Phase::Streaming
        } else if any(Phase::WaitingForTool) {
            Phase::WaitingForTool
        } else {
            Phase::Idle
        };
        StateSnapshot {
            state,
            requests: inner.requests,
            replies: inner.replies,
            errors: inner.errors,
            unknown: inner.unknown,
            side_requests: inner.side,
            conversations,
        }
    }

    /// The log kept in memory, oldest first.
    pub(crate) fn requests(&self) -> Vec<LogEntry> {
        self.lock().log.iter().cloned().collect()
    }
}
