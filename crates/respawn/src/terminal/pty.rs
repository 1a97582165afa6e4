//! The PTY backend: the agent runs on a pseudo-terminal we own, through `pty-process`'s
//! tokio-native `AsyncFd` (no blocking reader thread, so a paused test clock is never held
//! up by a parked read).

use std::time::Duration;

use async_trait::async_trait;
use hyoka_proctrack::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::seam::{Exit, Size, SpawnOptions, Terminal};
use super::teardown::{kill_group_now, stop_group};
use crate::error::RespawnError;

/// After the agent exits, output is drained until it pauses this long: a descendant that
/// keeps the terminal open must not keep the session alive.
const DRAIN: Duration = Duration::from_millis(200);

/// An agent on a pseudo-terminal. It is the leader of a new session and process group
/// (pid = pgid), so stopping it reaches everything it started in that group.
pub struct PtyTerminal {
    pty: pty_process::Pty,
    child: tokio::process::Child,
    pid: Option<u32>,
    exit: Option<Exit>,
    stopped: bool,
    paste: PasteMode,
}

/// Whether the agent turned bracketed paste on (`ESC [ ? 2004 h`; `l` turns it off), from
/// its output: the last switch seen wins, also across reads.
#[derive(Debug, Default)]
pub(crate) struct PasteMode {
    on: bool,
    /// The end of the previous read, for a switch split between two reads.
    carry: Vec<u8>,
}

impl PasteMode {
    const ON: &'static [u8] = b"\x1b[?2004h";
    const OFF: &'static [u8] = b"\x1b[?2004l";

    pub(crate) fn scan(&mut self, bytes: &[u8]) {
        let keep = Self::ON.len() - 1;
        let mut seam = std::mem::take(&mut self.carry);
        seam.extend_from_slice(&bytes[..bytes.len().min(keep)]);
        let last = |hay: &[u8]| -> Option<(usize, bool)> {
            let on = memchr::memmem::rfind(hay, Self::ON).map(|i| (i, true));
            let off = memchr::memmem::rfind(hay, Self::OFF).map(|i| (i, false));
            on.max(off)
        };
        if let Some((_, on)) = last(bytes).or_else(|| last(&seam)) {
            self.on = on;
        }
        let tail = if bytes.len() >= keep {
            &bytes[bytes.len() - keep..]
        } else {
            &seam[seam.len().saturating_sub(keep)..]
        };
        self.carry = tail.to_vec();
    }

    pub(crate) fn on(&self) -> bool {
        self.on
    }
}

impl std::fmt::Debug for PtyTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtyTerminal")
            .field("pid", &self.pid)
            .field("exit", &self.exit)
            .finish_non_exhaustive()
    }
}

fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt as _;
    Exit {
        code: status.code(),
        signal: status.signal(),
    }
}

fn is_eio(err: &std::io::Error) -> bool {
    err.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error())
}

impl PtyTerminal {
    /// Opens a pseudo-terminal of `options.size` and starts the agent on it, in a new
    /// session. Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// [`RespawnError::Pty`] when no terminal can be opened, [`RespawnError::Spawn`] when
    /// the program cannot be started.
    pub fn spawn(options: &SpawnOptions) -> Result<Self, RespawnError> {
        let (pty, pts) =
            pty_process::open().map_err(|source| RespawnError::Pty { op: "open", source })?;
        pty.resize(pty_process::Size::new(options.size.rows, options.size.cols))
            .map_err(|source| RespawnError::Pty {
                op: "resize",
                source,
            })?;
        let mut command = pty_process::Command::new(&options.program)
            .args(&options.args)
            .envs(options.env.iter().map(|(k, v)| (k, v)))
            .kill_on_drop(true);
        if let Some(cwd) = &options.cwd {
            command = command.current_dir(cwd);
        }
        let child = command.spawn(pts).map_err(|err| match err {
            pty_process::Error::Io(source) => RespawnError::Spawn {
                program: options.program.to_string_lossy().into_owned(),
                source,
            },
            source => RespawnError::Pty {
                op: "spawn on",
                source,
            },
        })?;
        let pid = child.id();
        Ok(Self {
            pty,
            child,
            pid,
            exit: None,
            stopped: false,
            paste: PasteMode::default(),
        })
    }

    fn reap(&mut self) -> Option<Exit> {
        if self.exit.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.exit = Some(exit_of(status));
        }
        self.exit
    }

    async fn read_raw(&mut self, buf: &mut [u8]) -> Result<usize, RespawnError> {
        let map = |result: std::io::Result<usize>| match result {
            Ok(n) => Ok(n),
            // The last slave descriptor closed: Linux reports EIO where a pipe says EOF.
            Err(err) if is_eio(&err) => Ok(0),
            Err(source) => Err(RespawnError::Io { op: "read", source }),
        };
        if self.exit.is_some() {
            return match tokio::time::timeout(DRAIN, self.pty.read(buf)).await {
                Ok(result) => map(result),
                Err(_) => Ok(0),
            };
        }
        tokio::select! {
            result = self.pty.read(buf) => map(result),
            status = self.child.wait() => {
                self.exit = Some(status.map_or_else(|_| Exit::default(), exit_of));
                match tokio::time::timeout(DRAIN, self.pty.read(buf)).await {
                    Ok(result) => map(result),
                    Err(_) => Ok(0),
                }
            }
        }
    }
}

#[async_trait]
impl Terminal for PtyTerminal {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, RespawnError> {
        let n = self.read_raw(buf).await?;
        self.paste.scan(&buf[..n]);
        Ok(n)
    }

    async fn send_text(&mut self, text: &str) -> Result<(), RespawnError> {
        if !self.paste.on() {
            return self.send_raw(text.as_bytes()).await;
        }
        let mut paste = Vec::with_capacity(text.len() + 12);
        paste.extend_from_slice(b"\x1b[200~");
        // No escape inside the paste: nothing may end it early.
        paste.extend(text.bytes().filter(|&b| b != 0x1b));
        paste.extend_from_slice(b"\x1b[201~");
        self.send_raw(&paste).await
    }

    async fn send_enter(&mut self) -> Result<(), RespawnError> {
        self.send_raw(b"\r").await
    }

    async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), RespawnError> {
        let io = |source| RespawnError::Io {
            op: "write to",
            source,
        };
        self.pty.write_all(bytes).await.map_err(io)?;
        self.pty.flush().await.map_err(io)
    }

    async fn resize(&mut self, size: Size) -> Result<(), RespawnError> {
        self.pty
            .resize(pty_process::Size::new(size.rows, size.cols))
            .map_err(|source| RespawnError::Pty {
                op: "resize",
                source,
            })
    }

    fn child_pid(&self) -> Option<u32> {
        self.pid
    }

    fn exit(&mut self) -> Option<Exit> {
        self.reap()
    }

    async fn stop_with_signal(
        &mut self,
        signal: Signal,
        grace: Duration,
    ) -> Result<Exit, RespawnError> {
        if let Some(pid) = self.pid
            && !self.stopped
        {
            // The leader may be gone already while its group lives on.
            stop_group(pid, signal, grace).await;
        }
        self.stopped = true;
        if self.exit.is_none() {
            let waited = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
            self.exit = Some(match waited {
                Ok(Ok(status)) => exit_of(status),
                _ => Exit::default(),
            });
        }
        Ok(self.exit.unwrap_or_default())
    }
}

impl Drop for PtyTerminal {
    fn drop(&mut self) {
        if !self.stopped
            && let Some(pid) = self.pid
        {
            kill_group_now(pid);
        }
    }
}

#[cfg(test)]
mod tests;
