//! Where a supervised session runs: a PTY the controller owns, or a session on a private
//! tmux server that may outlive it.

use crate::error::RespawnError;
use crate::registry::TmuxTarget;
use crate::terminal::{PtyTerminal, SpawnOptions, Terminal, TmuxOptions, TmuxTerminal};

/// Where a supervised session runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A pseudo-terminal owned by the controller.
    Pty,
    /// A session on a private tmux server, named `session` (the run id when `None`). A named
    /// session survives the controller and is re-attached when it exists; its hook socket
    /// sits at a fixed path, so the agent still finds the next controller.
    Tmux {
        /// The session's name, when the caller chose one.
        session: Option<String>,
    },
}

/// What a tmux session's presence watch needs: where it runs, and the controller's own
/// client (which does not count as a person).
#[derive(Debug, Clone)]
pub(super) struct TmuxWatch {
    pub(super) socket: String,
    pub(super) session: String,
    pub(super) client: Option<u32>,
}

impl TmuxWatch {
    pub(super) fn target(&self) -> TmuxTarget {
        TmuxTarget {
            socket: self.socket.clone(),
            session: self.session.clone(),
        }
    }
}

/// Starts the agent on `backend`: a PTY, or the tmux session `session` on its private
/// server (re-attached when it exists).
pub(super) async fn start_terminal(
    backend: &Backend,
    spawn: &SpawnOptions,
    session: &str,
) -> Result<(Box<dyn Terminal>, Option<TmuxWatch>), RespawnError> {
    match backend {
        Backend::Pty => PtyTerminal::spawn(spawn).map(|t| (Box::new(t) as Box<dyn Terminal>, None)),
        Backend::Tmux { .. } => {
            let socket = TmuxOptions::default_socket(session);
            let exists = TmuxTerminal::exists(&socket, session)
                .await
                .map_err(|source| RespawnError::Backend {
                    backend: "tmux",
                    source: Box::new(source),
                })?;
            if !exists && spawn.program.is_empty() {
                // Re-attaching (no command) to a session that is gone: nothing to start.
                return Err(RespawnError::NoSession {
                    session: session.to_owned(),
                });
            }
            let terminal = if exists {
                TmuxTerminal::attach(&socket, session).await
            } else {
                TmuxTerminal::start(&TmuxOptions {
                    socket: socket.clone(),
                    session: session.to_owned(),
                    spawn: spawn.clone(),
                })
                .await
            };
            match terminal {
                Ok(terminal) => {
                    let watch = TmuxWatch {
                        socket,
                        session: session.to_owned(),
                        client: terminal.client_pid(),
                    };
                    Ok((Box::new(terminal) as Box<dyn Terminal>, Some(watch)))
                }
                // The same error as on a PTY: `cannot start "x": No such file or directory`.
                Err(err @ RespawnError::Spawn { .. }) => Err(err),
                Err(source) => Err(RespawnError::Start {
                    program: spawn.program.to_string_lossy().into_owned(),
                    backend: "tmux",
                    source: Box::new(source),
                }),
            }
        }
    }
}
