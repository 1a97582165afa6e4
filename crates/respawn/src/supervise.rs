//! A supervised session: the agent on a terminal, contained, sampled and swept.
//!
//! [`Session::start`] binds the hook socket (its path goes to the agent in
//! [`HYOKA_RESPAWN_SOCKET`](hyoka_proctrack::EnvVars::HYOKA_RESPAWN_SOCKET)) and starts the
//! agent on a PTY or in a tmux session on a private server. A PTY session is adopted into a `hyoka-proctrack` [`Tracker`] right after the spawn (a
//! cgroup leaf when there is one, the ledger, the owner lock, so `hyoka clean` repairs a
//! SIGKILLed controller): the agent carries the run instance's marker, and the socket's
//! directory is marked like a workspace of the run instance and recorded in the ledger
//! before it exists. [`Session::drive`] runs the [`Driver`] with every half second a
//! sample of the agent's process tree ([`ProcessActivity`]: the CPU it used, its busy
//! children), hooks from the socket, and the caller's keys and resizes; a force request
//! SIGKILLs the agent's group at once through the verified signaller. [`Driven::stop`] then
//! stops the session's whole tree through the tracker and sweeps every process still
//! carrying the session's `HYOKA_RUN_ID` marker (a tmux session, or an agent gone before it
//! could be adopted, is stopped by that sweep alone); a session torn down without survivors
//! leaves no ledger directory behind.

//!
//! Files by job: `session.rs` (the lifecycle: [`Session::start`], [`Session::drive`]),
//! `backend.rs` (a PTY or a tmux session), `socket_dir.rs` (the hook socket's private
//! directory), `records.rs` (the tracker, the ledger directory and `status.json`),
//! `sampling.rs` (the tree and a tmux session's people, every half second), `stopping.rs`
//! ([`Driven::stop`], [`stop_session`], the marker sweep) and `orphans.rs` (tmux sessions
//! whose controller died: [`orphaned_sessions`]).

mod backend;
mod orphans;
mod records;
mod sampling;
mod session;
mod socket_dir;
mod stopping;
#[cfg(test)]
mod tests;

pub use self::backend::Backend;
pub use self::orphans::{OrphanedSession, orphaned_sessions};
pub use self::records::{ALERT_EVAL, CHECKER_EVAL, SESSION_EVAL, summary};
pub use self::session::{Session, SessionOptions, Supervised};
pub use self::stopping::{
    Driven, Finished, Stopped, forget_orphaned_session, stop_detached, stop_session,
};
