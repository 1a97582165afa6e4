//! The `Terminal` seam: what the driver needs from an interactive session, with a PTY
//! backend (embedded default), a tmux backend (the session outlives hyoka), and, behind the
//! `mock` feature, an in-memory fake and a `mockall` mock.

#[cfg(any(test, feature = "mock"))]
#[cfg_attr(
    not(feature = "mock"),
    allow(dead_code, unreachable_pub, reason = "only the unit tests use it")
)]
mod fake;
mod pty;
mod teardown;
mod tmux;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::RespawnError;

#[cfg(all(test, not(feature = "mock")))]
pub(crate) use self::fake::{FakeHandle, FakeTerminal, Written};
#[cfg(feature = "mock")]
pub use self::fake::{FakeHandle, FakeTerminal, Written};
pub use self::pty::PtyTerminal;
pub(crate) use self::teardown::stop_group;
pub use self::tmux::{TmuxOptions, TmuxTerminal, valid_tmux_name};

/// A terminal size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Size {
    /// Rows.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

impl Default for Size {
    /// 40 rows by 120 columns, the size Codeman gives its sessions.
    fn default() -> Self {
        Self {
            rows: 40,
            cols: 120,
        }
    }
}

/// A signal that stops a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Signal {
    /// SIGTERM.
    Term,
    /// SIGINT.
    Int,
    /// SIGHUP.
    Hup,
    /// SIGKILL.
    Kill,
}

impl Signal {
    pub(crate) fn to_rustix(self) -> rustix::process::Signal {
        match self {
            Self::Term => rustix::process::Signal::TERM,
            Self::Int => rustix::process::Signal::INT,
            Self::Hup => rustix::process::Signal::HUP,
            Self::Kill => rustix::process::Signal::KILL,
        }
    }
}

/// How a session's process ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Exit {
    /// The exit code, when it exited normally.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
}

/// What to run in a new session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnOptions {
    /// The program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its working directory (default: ours).
    pub cwd: Option<PathBuf>,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
    /// The initial terminal size.
    pub size: Size,
}

/// An interactive session the driver talks to: output in, keys out.
///
/// Text and Enter are separate calls so that every backend sends them as separate writes
/// (an Ink application such as Claude Code reads an Enter that arrives with the text as a
/// newline). Implementations must make [`Terminal::read`] cancel-safe: the driver selects
/// on it together with timers, hooks and the user's keystrokes.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait Terminal: Send {
    /// Reads the next piece of output into `buf`. `Ok(0)` means the session is over (its
    /// terminal closed, or its process exited and the output has been drained).
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, RespawnError>;

    /// Types `text` literally, without pressing Enter: as a bracketed paste when the agent
    /// turned bracketed paste on (an Ink application takes a paste as text, never as
    /// keystrokes that could trigger shortcuts), else as keystrokes.
    async fn send_text(&mut self, text: &str) -> Result<(), RespawnError>;

    /// Presses Enter (`\r`).
    async fn send_enter(&mut self) -> Result<(), RespawnError>;

    /// Forwards raw bytes the user typed (control keys and escape sequences included).
    async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), RespawnError>;

    /// Changes the terminal size (the agent gets SIGWINCH).
    async fn resize(&mut self, size: Size) -> Result<(), RespawnError>;

    /// The pid of the agent's process, when known.
    fn child_pid(&self) -> Option<u32>;

    /// How the agent ended, once it has (never blocks).
    fn exit(&mut self) -> Option<Exit>;

    /// Stops the session: `signal` to the agent's whole process group, up to `grace` for
    /// the group to go, then SIGKILL; then the session's own resources (a tmux server) go
    /// too. With a zero `grace` the group gets SIGKILL at once after `signal`. Safe to call
    /// twice.
    async fn stop_with_signal(
        &mut self,
        signal: Signal,
        grace: Duration,
    ) -> Result<Exit, RespawnError>;

    /// [`Terminal::stop_with_signal`] with SIGTERM.
    async fn stop(&mut self, grace: Duration) -> Result<Exit, RespawnError> {
        self.stop_with_signal(Signal::Term, grace).await
    }

    /// Lets go of the session without stopping it, when it can outlive the controller
    /// (tmux): `Ok(true)`, and the agent keeps running. `Ok(false)` for a session that
    /// cannot (a PTY dies with its controller): the caller stops it.
    async fn detach(&mut self) -> Result<bool, RespawnError> {
        Ok(false)
    }
}

#[async_trait]
impl<T: Terminal + ?Sized> Terminal for Box<T> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, RespawnError> {
        (**self).read(buf).await
    }

    async fn send_text(&mut self, text: &str) -> Result<(), RespawnError> {
        (**self).send_text(text).await
    }

    async fn send_enter(&mut self) -> Result<(), RespawnError> {
        (**self).send_enter().await
    }

    async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), RespawnError> {
        (**self).send_raw(bytes).await
    }

    async fn resize(&mut self, size: Size) -> Result<(), RespawnError> {
        (**self).resize(size).await
    }

    fn child_pid(&self) -> Option<u32> {
        (**self).child_pid()
    }

    fn exit(&mut self) -> Option<Exit> {
        (**self).exit()
    }

    async fn stop_with_signal(
        &mut self,
        signal: Signal,
        grace: Duration,
    ) -> Result<Exit, RespawnError> {
        (**self).stop_with_signal(signal, grace).await
    }

    async fn detach(&mut self) -> Result<bool, RespawnError> {
        (**self).detach().await
    }
}
