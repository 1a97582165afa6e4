//! Sans-IO detection of whether an interactive agent session is working, idle or blocked.
//!
//! This crate will own the detector: observations in (terminal output, hook events, process
//! activity, user input, AI verdicts, ticks), each with the current time, and a verdict out
//! with the evidence that produced it. Detector profiles are data, and the AI checker traits
//! live here.
//!
//! # Overview
//!
//! - [`Verdict`], [`SessionState`], [`BlockedKind`] and [`Evidence`]: what the detector says.
//! - [`ChunkSignals`]: what one chunk of output says, for the respawn controller.
//! - [`HookEvent`]: Claude Code hook events.
//!
//! # Example
//!
//! ```
//! use hyoka_idle_detect::{SessionState, Verdict};
//!
//! let verdict = Verdict::default();
//! assert_eq!(verdict.state, SessionState::Unknown);
//! assert!(!verdict.allows_input());
//! ```
#![warn(
    clippy::disallowed_methods,
    reason = "decisions are sans-IO: no clock, no environment"
)]

mod signals;

pub use crate::signals::{BlockedKind, ChunkSignals, Evidence, HookEvent, SessionState, Verdict};
