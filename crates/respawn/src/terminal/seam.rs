//! The seam itself: what the driver needs from an interactive session ([`Terminal`]), and
//! the words it speaks ([`Size`], [`ReadEvent`], [`Exit`], [`SpawnOptions`]; signals are
//! `hyoka-proctrack`'s [`Signal`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use hyoka_proctrack::Signal;

use crate::error::RespawnError;

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

/// What [`Terminal::read_event`] found: output, or a change of the terminal's size that the
/// output after it is drawn at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadEvent {
    /// `n` bytes of output are in the buffer; `0` means the session is over.
    Output(usize),
    /// The terminal now has this size: another tmux client of another size attached or
    /// left, the window was resized from outside, or (re-attaching) the session already had
    /// a size of its own. Everything read after this event was drawn at this size.
    Resized(Size),
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
#[async_trait]
pub trait Terminal: Send {
    /// Reads the next piece of output into `buf`. `Ok(0)` means the session is over (its
    /// terminal closed, or its process exited and the output has been drained).
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, RespawnError>;

    /// Reads the next piece of output, or a size change that happened before it, in the
    /// order the session produced them: a model of the screen that applies them in this
    /// order draws every byte at the size the agent drew it at. Cancel-safe, like
    /// [`Terminal::read`]. The default reads output only, for a terminal whose size changes
    /// only through [`Terminal::resize`].
    async fn read_event(&mut self, buf: &mut [u8]) -> Result<ReadEvent, RespawnError> {
        self.read(buf).await.map(ReadEvent::Output)
    }

    /// Types `text` literally, without pressing Enter: as a bracketed paste when the agent
    /// turned bracketed paste on (an Ink application takes a paste as text, never as
    /// keystrokes that could trigger shortcuts), else as keystrokes.
    async fn send_text(&mut self, text: &str) -> Result<(), RespawnError>;

    /// Presses Enter (`\r`).
    async fn send_enter(&mut self) -> Result<(), RespawnError>;

    /// Forwards raw bytes the user typed (control keys and escape sequences included).
    async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), RespawnError>;

    /// Whether the session's terminal answers the agent's queries itself (a tmux server
    /// does), so that the answers of the person's terminal to the mirrored queries must not
    /// reach the agent as keys ([`crate::replies`]).
    fn answers_queries(&self) -> bool {
        false
    }

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

    async fn read_event(&mut self, buf: &mut [u8]) -> Result<ReadEvent, RespawnError> {
        (**self).read_event(buf).await
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

    fn answers_queries(&self) -> bool {
        (**self).answers_queries()
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
