//! The control socket's protocol, server and client: one JSON request line and one JSON
//! reply line per connection.
//!
//! Requests: `{"op":"status"}`, `{"op":"send","text":"…","queue":false}`,
//! `{"op":"stop"}`. Replies: `{"reply":"status","status":{…}}`,
//! `{"reply":"sent","outcome":{"outcome":"delivered"}}`, `{"reply":"stopping"}`,
//! `{"reply":"error","message":"…"}`. Both sides read at most [`MAX_LINE`] bytes, within a
//! time limit; the server answers only processes of its own user.

use std::fmt::Write as _;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hyoka_idle_detect::{BlockedKind, SessionState};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use crate::driver::{Control, LiveStatus};
use crate::error::RespawnError;
use crate::event::SendOutcome;

/// The longest request or reply line.
const MAX_LINE: u64 = 1024 * 1024;
/// How long a peer may take to connect, or to send its request.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a send without a queue may take to be answered (delivery, Enter retry and
/// verification take seconds).
const SEND_TIMEOUT: Duration = Duration::from_mins(2);
/// How often `wait` looks at the session.
const WAIT_POLL: Duration = Duration::from_millis(200);

/// A request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Request {
    Status,
    Send { text: String, queue: bool },
    Stop,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
enum Reply {
    Status { status: Box<SessionStatus> },
    Sent { outcome: SendOutcome },
    Stopping,
    Error { message: String },
}

/// The tmux server and session a session runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TmuxTarget {
    /// The private server's socket name (`tmux -L`).
    pub socket: String,
    /// The session's name.
    pub session: String,
}

/// One piece of evidence behind a session's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EvidenceLine {
    /// The signal (`screen_rule`, `hook`, `process_activity`, `respawn`, …).
    pub signal: String,
    /// The rule or pattern (`claude-code/permission-prompt`).
    pub rule: String,
    /// What was seen.
    pub detail: String,
    /// How long ago it was first seen, in milliseconds.
    pub age_ms: u64,
}

/// What a controller says about its session (`hyoka sessions --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionStatus {
    /// The session's name.
    pub name: String,
    /// The agent's program.
    pub agent: String,
    /// The detector profile.
    pub profile: String,
    /// `pty` or `tmux`.
    pub backend: String,
    /// Where a tmux session runs.
    pub tmux: Option<TmuxTarget>,
    /// The controller's process id.
    pub controller_pid: u32,
    /// `working`, `idle`, `blocked` or `unknown` (while a cycle runs: `working`).
    pub state: SessionState,
    /// What a blocked session waits for (`permission`, `question`, `plan`, `trust`,
    /// `draft`).
    pub blocked: Option<BlockedKind>,
    /// The evidence, strongest first.
    pub evidence: Vec<EvidenceLine>,
    /// When the state began (RFC 3339).
    pub since: String,
    /// How long the state has lasted, in milliseconds.
    pub state_for_ms: u64,
    /// The respawn machine's state (`watching`, `waiting_update`, …).
    pub machine: String,
    /// Cycles started.
    pub cycles: u32,
    /// A person is at the session (typed recently, or attached).
    pub human_present: bool,
    /// People attached (tmux clients other than the controller's own).
    pub attached: u32,
    /// Sends waiting for the session.
    pub queued_sends: usize,
    /// The last notable event, in words.
    pub last_event: Option<String>,
    /// When the controller started (RFC 3339).
    pub started: String,
}

impl SessionStatus {
    /// The state as a person reads it: `blocked (permission)`, `idle`.
    pub fn state_words(&self) -> String {
        match self.blocked {
            Some(kind) => format!("{} ({kind})", self.state),
            None => self.state.to_string(),
        }
    }

    /// The session in a few lines for a person (`hyoka sessions`): name, state and how
    /// long, cycles, where it runs, whether a person is there; then why (the evidence) and
    /// the last event.
    pub fn render(&self) -> String {
        let lasted = Duration::from_secs(self.state_for_ms / 1000);
        let person = if self.human_present {
            "  person present"
        } else {
            ""
        };
        let mut out = format!(
            "{}  {} for {}  cycles {}  {} {}{person}",
            self.name,
            self.state_words(),
            humantime::format_duration(lasted),
            self.cycles,
            self.backend,
            self.agent,
        );
        if let Some(why) = self.evidence.first() {
            let _ = write!(out, "\n    why: {}: {}", why.rule, why.detail);
        }
        if let Some(last) = &self.last_event {
            let _ = write!(out, "\n    last: {last}");
        }
        out
    }
}

/// How `wait` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitOutcome {
    /// The state was reached; the session as it was then.
    Reached(Box<SessionStatus>),
    /// The time ran out; the session as it was last seen.
    TimedOut(Box<SessionStatus>),
    /// The session ended (its controller went away) before the state was reached.
    Ended,
}

/// What a controller knows about its session that the driver does not.
#[derive(Debug, Clone)]
pub(crate) struct SessionInfo {
    pub(crate) name: String,
    pub(crate) agent: String,
    pub(crate) profile: String,
    pub(crate) tmux: Option<TmuxTarget>,
    pub(crate) started_wall: SystemTime,
    pub(crate) started: Instant,
}

/// The controller's side: accepts connections and passes requests to the driver.
pub(crate) struct ControlServer {
    pub(crate) listener: std::os::unix::net::UnixListener,
    pub(crate) info: Arc<SessionInfo>,
    pub(crate) driver: mpsc::Sender<Control>,
}

fn rfc3339(time: SystemTime) -> String {
    // humantime cannot write a time before 1970; a clock that far off is shown as 1970.
    humantime::format_rfc3339_millis(time.max(SystemTime::UNIX_EPOCH)).to_string()
}

impl SessionInfo {
    fn status(&self, live: LiveStatus, now: Instant) -> SessionStatus {
        let wall_now = self.started_wall + now.saturating_duration_since(self.started);
        let since = wall_now.checked_sub(live.state_for).unwrap_or(wall_now);
        let deciding = live.verdict.deciding();
        SessionStatus {
            name: self.name.clone(),
            agent: self.agent.clone(),
            profile: self.profile.clone(),
            backend: if self.tmux.is_some() { "tmux" } else { "pty" }.to_owned(),
            tmux: self.tmux.clone(),
            controller_pid: std::process::id(),
            state: live.verdict.state,
            blocked: live.verdict.blocked,
            // The evidence that decided the state comes first: `why:` shows it.
            evidence: (deciding.into_iter())
                .chain(
                    (live.verdict.evidence.iter())
                        .filter(|e| deciding.is_none_or(|d| !std::ptr::eq(*e, d))),
                )
                .map(|e| EvidenceLine {
                    signal: e.signal.to_owned(),
                    rule: e.rule.clone(),
                    detail: e.detail.clone(),
                    age_ms: e.age_ms,
                })
                .collect(),
            since: rfc3339(since),
            state_for_ms: u64::try_from(live.state_for.as_millis()).unwrap_or(u64::MAX),
            machine: live.machine.state.as_str().to_owned(),
            cycles: live.machine.cycles,
            human_present: live.human_present,
            attached: live.attached,
            queued_sends: live.machine.queued_sends,
            last_event: live.last_event,
            started: rfc3339(self.started_wall),
        }
    }
}

impl ControlServer {
    /// Serves until `shutdown` completes; connections in progress are dropped then.
    pub(crate) async fn serve(self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        let Ok(listener) = tokio::net::UnixListener::from_std(self.listener) else {
            return;
        };
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let (info, driver) = (Arc::clone(&self.info), self.driver.clone());
                    connections.spawn(answer(stream, info, driver));
                }
            }
        }
        connections.shutdown().await;
    }
}

/// Answers one connection.
async fn answer(stream: UnixStream, info: Arc<SessionInfo>, driver: mpsc::Sender<Control>) {
    // Only the user's own processes may ask (the registry directory is private too).
    let own = stream
        .peer_cred()
        .is_ok_and(|cred| cred.uid() == rustix::process::geteuid().as_raw());
    if !own {
        return;
    }
    // Nor from inside an eval's sandbox, whatever its user: an agent must not type into,
    // list or stop the user's sessions.
    let peer = stream.peer_cred().ok().and_then(|cred| cred.pid());
    let refused = peer.map_or_else(
        || Some("its process is unknown".to_owned()),
        hyoka_proctrack::sandboxed_peer,
    );
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read.take(MAX_LINE));
    let reply = match tokio::time::timeout(IO_TIMEOUT, reader.read_line(&mut line)).await {
        Ok(Ok(_)) if let Some(why) = refused => Reply::Error {
            message: format!("refused: the request comes from inside a sandbox ({why})"),
        },
        Ok(Ok(_)) => match serde_json::from_str::<Request>(&line) {
            Ok(request) => handle(request, &info, &driver).await,
            Err(err) => Reply::Error {
                message: format!("invalid request: {err}"),
            },
        },
        _ => Reply::Error {
            message: "no request".to_owned(),
        },
    };
    if let Ok(mut bytes) = serde_json::to_vec(&reply) {
        bytes.push(b'\n');
        let _ = write.write_all(&bytes).await;
        let _ = write.shutdown().await;
    }
}

async fn handle(request: Request, info: &SessionInfo, driver: &mpsc::Sender<Control>) -> Reply {
    let gone = || Reply::Error {
        message: "the session is ending".to_owned(),
    };
    match request {
        Request::Status => {
            let (tx, rx) = oneshot::channel();
            if driver.send(Control::Status(tx)).await.is_err() {
                return gone();
            }
            match rx.await {
                Ok(live) => Reply::Status {
                    status: Box::new(info.status(live, crate::driver::now())),
                },
                Err(_) => gone(),
            }
        }
        Request::Send { text, queue } => {
            let (reply, rx) = oneshot::channel();
            if driver
                .send(Control::Send { text, queue, reply })
                .await
                .is_err()
            {
                return gone();
            }
            match rx.await {
                Ok(outcome) => Reply::Sent { outcome },
                Err(_) => gone(),
            }
        }
        Request::Stop => {
            let _ = driver.send(Control::Stop).await;
            Reply::Stopping
        }
    }
}

fn control_error(name: &str, reason: impl Into<String>) -> RespawnError {
    RespawnError::Control {
        name: name.to_owned(),
        reason: reason.into(),
    }
}

/// One request to the controller at `socket`, answered within `timeout` (none: wait).
async fn request(
    socket: &Path,
    name: &str,
    request: &Request,
    timeout: Option<Duration>,
) -> Result<Reply, RespawnError> {
    let stream = tokio::time::timeout(IO_TIMEOUT, UnixStream::connect(socket))
        .await
        .map_err(|_| control_error(name, "its controller does not accept connections"))?
        .map_err(|e| control_error(name, format!("cannot connect: {e}")))?;
    let own = stream
        .peer_cred()
        .is_ok_and(|cred| cred.uid() == rustix::process::geteuid().as_raw());
    if !own {
        return Err(control_error(name, "its socket is served by another user"));
    }
    let (read, mut write) = stream.into_split();
    let mut line = serde_json::to_vec(request).map_err(|e| control_error(name, e.to_string()))?;
    line.push(b'\n');
    write
        .write_all(&line)
        .await
        .map_err(|e| control_error(name, format!("cannot send the request: {e}")))?;
    let mut reply = String::new();
    let mut reader = BufReader::new(read.take(MAX_LINE));
    let read = reader.read_line(&mut reply);
    let read = match timeout {
        Some(limit) => tokio::time::timeout(limit, read)
            .await
            .map_err(|_| control_error(name, "its controller did not answer in time"))?,
        None => read.await,
    };
    match read {
        Ok(n) if n > 0 => serde_json::from_str(&reply)
            .map_err(|e| control_error(name, format!("unreadable answer: {e}"))),
        Ok(_) => Err(control_error(name, "its controller closed the connection")),
        Err(e) => Err(control_error(name, format!("cannot read the answer: {e}"))),
    }
}

fn unexpected(name: &str, reply: Reply) -> RespawnError {
    match reply {
        Reply::Error { message } => control_error(name, message),
        _ => control_error(name, "unexpected answer"),
    }
}

pub(super) async fn status(socket: &Path, name: &str) -> Result<SessionStatus, RespawnError> {
    match request(socket, name, &Request::Status, Some(IO_TIMEOUT)).await? {
        Reply::Status { status } if status.name == name => Ok(*status),
        Reply::Status { status } => Err(control_error(
            name,
            format!("its controller answers as {:?}", status.name),
        )),
        reply => Err(unexpected(name, reply)),
    }
}

pub(super) async fn send(
    socket: &Path,
    name: &str,
    text: &str,
    queue: bool,
) -> Result<SendOutcome, RespawnError> {
    let request_ = Request::Send {
        text: text.to_owned(),
        queue,
    };
    let timeout = (!queue).then_some(SEND_TIMEOUT);
    match request(socket, name, &request_, timeout).await? {
        Reply::Sent { outcome } => Ok(outcome),
        reply => Err(unexpected(name, reply)),
    }
}

pub(super) async fn stop(socket: &Path, name: &str) -> Result<(), RespawnError> {
    match request(socket, name, &Request::Stop, Some(IO_TIMEOUT)).await? {
        Reply::Stopping => Ok(()),
        reply => Err(unexpected(name, reply)),
    }
}

pub(super) async fn wait(
    socket: &Path,
    name: &str,
    until: SessionState,
    timeout: Option<Duration>,
) -> Result<WaitOutcome, RespawnError> {
    let deadline = timeout.and_then(|t| crate::driver::now().checked_add(t));
    let mut last = status(socket, name).await?;
    loop {
        if last.state == until {
            return Ok(WaitOutcome::Reached(Box::new(last)));
        }
        let now = crate::driver::now();
        if deadline.is_some_and(|d| now >= d) {
            return Ok(WaitOutcome::TimedOut(Box::new(last)));
        }
        let next = now + WAIT_POLL;
        let until_next = deadline.map_or(next, |d| d.min(next));
        tokio::time::sleep_until(tokio::time::Instant::from_std(until_next)).await;
        match status(socket, name).await {
            Ok(status) => last = status,
            // The controller removes its socket when it ends; a slow answer is not an end.
            Err(_) if !socket.exists() => return Ok(WaitOutcome::Ended),
            Err(_) => {}
        }
    }
}
