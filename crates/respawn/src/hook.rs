//! Claude Code hooks over a local socket: `hyoka hook EVENT` sends one message, the
//! running controller's [`HookListener`] receives it.
//!
//! The wire format is one JSON line, `{"event":"stop","payload":{…}}`, on a fresh
//! connection of a Unix stream socket. The socket lives in a private directory (mode
//! 0700) and is removed when the listener is dropped.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyoka_idle_detect::HookEvent;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use crate::error::RespawnError;

/// The largest message accepted (a hook payload is a few hundred bytes).
const MAX_MESSAGE: u64 = 1024 * 1024;
/// How long a connection may take to deliver its message.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// One hook, as sent over the socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookMessage {
    /// The event name as given to `hyoka hook` (`stop`, `idle_prompt`, `notification`, …).
    pub event: String,
    /// Claude Code's JSON payload from the hook's stdin (`null` when there was none).
    #[serde(default)]
    pub payload: serde_json::Value,
}

impl HookMessage {
    /// The hook event this message means, if any. `notification` is resolved from the
    /// payload's `notification_type` (or, failing that, its `message`).
    pub fn hook_event(&self) -> Option<HookEvent> {
        match parse_event_name(&self.event)? {
            Parsed::Event(event) => Some(event),
            Parsed::Notification => {
                let kind = self
                    .payload
                    .get("notification_type")
                    .and_then(serde_json::Value::as_str);
                if let Some(Parsed::Event(event)) = kind.and_then(parse_event_name) {
                    return Some(event);
                }
                let message = self
                    .payload
                    .get("message")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_lowercase();
                if message.contains("permission") {
                    Some(HookEvent::PermissionPrompt)
                } else if message.contains("waiting for your input") {
                    Some(HookEvent::IdlePrompt)
                } else {
                    None
                }
            }
        }
    }
}

enum Parsed {
    Event(HookEvent),
    Notification,
}

fn parse_event_name(name: &str) -> Option<Parsed> {
    let name = name.trim().to_ascii_lowercase().replace('-', "_");
    Some(match name.as_str() {
        "stop" => Parsed::Event(HookEvent::Stop),
        "user_prompt_submit" | "userpromptsubmit" => Parsed::Event(HookEvent::PromptSubmitted),
        "idle_prompt" => Parsed::Event(HookEvent::IdlePrompt),
        "permission_prompt" => Parsed::Event(HookEvent::PermissionPrompt),
        "elicitation_dialog" => Parsed::Event(HookEvent::ElicitationDialog),
        "notification" => Parsed::Notification,
        _ => return None,
    })
}

/// `true` when `name` is an event `hyoka hook` accepts.
pub fn is_hook_event_name(name: &str) -> bool {
    parse_event_name(name).is_some()
}

/// The names `hyoka hook` accepts.
pub const HOOK_EVENT_NAMES: &[&str] = &[
    "stop",
    "user_prompt_submit",
    "idle_prompt",
    "permission_prompt",
    "elicitation_dialog",
    "notification",
];

/// The controller's end of the hook socket.
#[derive(Debug)]
pub struct HookListener {
    listener: UnixListener,
    path: PathBuf,
}

impl HookListener {
    /// Listens on `path`. A stale socket file (nobody listening) is replaced; a live one is
    /// an error.
    ///
    /// # Errors
    /// [`RespawnError::Socket`] when the socket cannot be bound.
    pub async fn bind(path: &Path) -> Result<Self, RespawnError> {
        let err = |source| RespawnError::Socket {
            path: path.to_owned(),
            source,
        };
        if path.exists() {
            if UnixStream::connect(path).await.is_ok() {
                return Err(err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    "another controller listens here",
                )));
            }
            std::fs::remove_file(path).map_err(err)?;
        }
        let listener = UnixListener::bind(path).map_err(err)?;
        Ok(Self {
            listener,
            path: path.to_owned(),
        })
    }

    /// The socket path (what `HYOKA_RESPAWN_SOCKET` is set to).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Accepts one connection and reads its message. Cancel-safe up to the accept.
    ///
    /// # Errors
    /// [`RespawnError::Socket`] on accept failures; [`RespawnError::HookMessage`] for a
    /// slow, oversized or malformed message.
    pub async fn next(&self) -> Result<HookMessage, RespawnError> {
        let (stream, _) = self
            .listener
            .accept()
            .await
            .map_err(|source| RespawnError::Socket {
                path: self.path.clone(),
                source,
            })?;
        let mut line = String::new();
        let mut reader = BufReader::new(stream.take(MAX_MESSAGE));
        match tokio::time::timeout(READ_TIMEOUT, reader.read_line(&mut line)).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => {
                return Err(RespawnError::HookMessage {
                    reason: err.to_string(),
                });
            }
            Err(_) => {
                return Err(RespawnError::HookMessage {
                    reason: "timed out".to_owned(),
                });
            }
        }
        serde_json::from_str(&line).map_err(|err| RespawnError::HookMessage {
            reason: err.to_string(),
        })
    }

    /// Forwards every valid hook to `tx` until `shutdown` completes or `tx` closes.
    /// Malformed messages are skipped.
    pub async fn serve(self, tx: mpsc::Sender<HookEvent>, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => return,
                message = self.next() => {
                    if let Ok(Some(event)) = message.map(|m| m.hook_event())
                        && tx.send(event).await.is_err()
                    {
                        return;
                    }
                }
            }
        }
    }
}

impl Drop for HookListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sends one hook message to the controller listening on `path`.
///
/// # Errors
/// [`RespawnError::Socket`] when nobody listens there or the write fails.
pub async fn send_hook(path: &Path, message: &HookMessage) -> Result<(), RespawnError> {
    let err = |source| RespawnError::Socket {
        path: path.to_owned(),
        source,
    };
    let mut line = serde_json::to_vec(message).map_err(|e| err(std::io::Error::other(e)))?;
    line.push(b'\n');
    let mut stream = tokio::time::timeout(READ_TIMEOUT, UnixStream::connect(path))
        .await
        .map_err(|_| err(std::io::ErrorKind::TimedOut.into()))?
        .map_err(err)?;
    stream.write_all(&line).await.map_err(err)?;
    stream.shutdown().await.map_err(err)
}

#[cfg(test)]
mod tests;
