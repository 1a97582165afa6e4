//! The respawn controller: cycle an interactive agent session only when it is really idle.
//!
//! This crate will own the sans-IO respawn state machine, its tokio driver, and the
//! `Terminal` trait with PTY and tmux backends.
