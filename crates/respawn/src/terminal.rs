//! The `Terminal` seam: what the driver needs from an interactive session (`seam.rs`), with a
//! PTY backend (embedded default), a tmux backend (the session outlives hyoka), and, behind
//! the `mock` feature, an in-memory fake.

#[cfg(any(test, feature = "mock"))]
#[cfg_attr(
    not(feature = "mock"),
    allow(dead_code, unreachable_pub, reason = "only the unit tests use it")
)]
mod fake;
mod pty;
mod seam;
mod teardown;
mod tmux;

#[cfg(all(test, not(feature = "mock")))]
pub(crate) use self::fake::{FakeHandle, FakeTerminal, Written};
#[cfg(feature = "mock")]
pub use self::fake::{FakeHandle, FakeTerminal, Written};
pub use self::pty::PtyTerminal;
pub use self::seam::{Exit, ReadEvent, Size, SpawnOptions, Terminal};
pub use self::tmux::{TmuxOptions, TmuxTerminal, valid_tmux_name};
