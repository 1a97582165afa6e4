//! The crate's one error type.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong outside the (infallible) machine: starting, tracking,
/// talking to and stopping a session, running a checker, the hook socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RespawnError {
    /// The agent could not be started.
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A tmux session to re-attach (no agent command given) does not exist.
    #[error(
        "no tmux session {session:?} to re-attach: it ended or was never started (give the agent command after `--` to start one)"
    )]
    NoSession {
        /// The session's name.
        session: String,
    },
    /// A pseudo-terminal could not be opened or configured.
    #[error("cannot {op} the pseudo-terminal: {source}")]
    Pty {
        /// `open`, `resize`, `spawn on`.
        op: &'static str,
        /// Why.
        #[source]
        source: pty_process::Error,
    },
    /// Reading from or writing to the session failed.
    #[error("cannot {op} the session: {source}")]
    Io {
        /// `read`, `write to`, `signal`.
        op: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The session is gone (its terminal closed, or its tmux server died).
    #[error("the session is gone")]
    Closed,
    /// `tmux` is not installed.
    #[error("tmux is not installed (or not on PATH)")]
    TmuxMissing,
    /// A tmux command failed.
    #[error("tmux {args:?} failed (exit code {code:?}): {stderr}")]
    Tmux {
        /// The arguments after `tmux -L <socket>`.
        args: Vec<String>,
        /// Its exit code.
        code: Option<i32>,
        /// Its stderr.
        stderr: String,
    },
    /// A tmux session name that tmux would misread.
    #[error("invalid tmux session name {name:?}: use 1 to 64 of [A-Za-z0-9_-]")]
    SessionName {
        /// The name.
        name: String,
    },
    /// The tmux session asked for does not exist.
    #[error("no tmux session {session:?} on socket {socket:?}")]
    NoSuchSession {
        /// The session.
        session: String,
        /// The socket name.
        socket: String,
    },
    /// The hook socket could not be bound, reached or read.
    #[error("hook socket {path}: {source}")]
    Socket {
        /// The socket path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The hook socket's directory of a tracked session could not be created as a marked
    /// directory of the session's run, recorded in its ledger.
    #[error("cannot create the hook socket directory: {source}")]
    SocketDir {
        /// Why.
        #[source]
        source: hyoka_workspace::WorkspaceError,
    },
    /// A supervised session could not be tracked (its ledger and owner lock).
    #[error("cannot track the session: {source}")]
    Track {
        /// Why.
        #[source]
        source: hyoka_proctrack::ProcTrackError,
    },
    /// A terminal backend cannot be used on this machine.
    #[error("{backend} cannot be used: {source}")]
    Backend {
        /// `tmux`.
        backend: &'static str,
        /// Why.
        #[source]
        source: Box<RespawnError>,
    },
    /// The agent could not be started on a backend.
    #[error("cannot start {program:?} in {backend}: {source}")]
    Start {
        /// The program.
        program: String,
        /// `tmux`.
        backend: &'static str,
        /// Why.
        #[source]
        source: Box<RespawnError>,
    },
    /// The event log could not be created.
    #[error("cannot create the event log {path}: {source}")]
    Log {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Claude Code's settings file could not be read, is not what Claude Code writes (it is
    /// left untouched), or could not be written.
    #[error("{message}")]
    ClaudeSettings {
        /// The settings file.
        path: PathBuf,
        /// What is wrong, naming the file.
        message: String,
        /// Whether the file (or the directory) is the problem rather than the system.
        bad_input: bool,
    },
    /// A hook message was not valid.
    #[error("invalid hook message: {reason}")]
    HookMessage {
        /// Why.
        reason: String,
    },
    /// The session registry's directory cannot be used.
    #[error("session registry {path}: {reason}")]
    Registry {
        /// The directory or file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Another live controller supervises a session of that name.
    #[error("a session named {name:?} is already supervised")]
    SessionTaken {
        /// The name.
        name: String,
    },
    /// No live session has that name.
    #[error("no session named {name:?} (see `hyoka sessions`)")]
    UnknownSession {
        /// The name.
        name: String,
    },
    /// A session's controller did not answer as it should.
    #[error("session {name:?}: {reason}")]
    Control {
        /// The session.
        name: String,
        /// What went wrong.
        reason: String,
    },
}

impl RespawnError {
    /// `true` when the error is the caller's input (a bad name or path, a missing program,
    /// tmux missing, a name in use, an unknown session) rather than a failure while
    /// running: the CLI exits 2 for these.
    pub fn is_bad_input(&self) -> bool {
        match self {
            Self::Spawn { .. }
            | Self::TmuxMissing
            | Self::SessionName { .. }
            | Self::NoSuchSession { .. }
            | Self::Registry { .. }
            | Self::SessionTaken { .. }
            | Self::UnknownSession { .. }
            | Self::Backend { .. }
            | Self::Log { .. }
            | Self::Track {
                source: hyoka_proctrack::ProcTrackError::Io { .. },
            } => true,
            Self::Start { source, .. } => source.is_bad_input(),
            Self::ClaudeSettings { bad_input, .. } => *bad_input,
            _ => false,
        }
    }
}
