//! Sans-IO detection of whether an interactive agent session is working, idle or blocked.
//!
//! # Overview
//!
//! - [`Detector`]: observations in ([`Detector::output`], [`Detector::hook`],
//!   [`Detector::process_activity`], [`Detector::user_input`], [`Detector::ai_verdict`],
//!   [`Detector::tick`]), each with the current time; a [`Verdict`] out, with [`Evidence`].
//! - [`ChunkSignals`]: what one chunk of output says, for the respawn controller.
//! - [`Profile`]: per-agent screen rules as data (`claude-code`, `codex`, `gemini`,
//!   `copilot`, `aider`, `generic`), overridable from TOML.
//! - [`Screen`]: what a terminal shows; [`classify_screen`], [`replay_cast`] and
//!   [`run_stream`] are the entry points of `hyoka detect`.
//!
//! # Example
//!
//! ```
//! use hyoka_idle_detect::{classify_screen, Profile, SessionState};
//!
//! let profile = Profile::builtin("claude-code")?;
//! let screen = "⏺ Done.\n\n✻ Worked for 12s\n\n────────\n❯ \n────────\n  ? for shortcuts\n";
//! let verdict = classify_screen(&profile, screen.as_bytes());
//! assert_eq!(verdict.state, SessionState::Idle);
//! assert!(verdict.allows_input());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(
    clippy::disallowed_methods,
    reason = "decisions are sans-IO: no clock, no environment"
)]

mod checker;
mod codeman;
mod detector;
mod error;
mod patterns;
mod profile;
mod replay;
mod ring;
mod screen;
mod signals;
mod stream;
mod terminal;

#[cfg(feature = "command")]
pub use crate::checker::{CommandChecker, CommandCheckerOptions, SpawnHook};
#[cfg(feature = "mock")]
pub use crate::checker::{MockIdleChecker, MockPlanChecker};
pub use crate::{
    checker::{
        CheckReply, CheckTicket, CheckVerdict, CheckerConfig, CheckerEvent, CheckerMachine,
        CheckerStatus, Finish, IDLE_CONTEXT_CHARS, IdleAnswer, IdleChecker, PLAN_CONTEXT_CHARS,
        PlanAnswer, PlanChecker, Refusal, idle_prompt, parse_idle_reply, parse_plan_reply,
        plan_prompt, tail_chars,
    },
    codeman::{CodemanClassifier, CodemanCounters, CodemanState, WORKING_PATTERNS},
    detector::{AiVerdict, Detector, DetectorConfig, ProcessActivity, StateSize, StreamCounts},
    error::{CheckError, DetectError},
    profile::{Profile, Rule, ScreenVerdict},
    replay::{
        StreamReport, VerdictChange, classify_screen, render_explain, replay_cast, run_stream,
    },
    screen::Screen,
    signals::{BlockedKind, ChunkSignals, Evidence, HookEvent, SessionState, Verdict},
};
