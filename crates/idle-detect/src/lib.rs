//! Sans-IO detection of whether an interactive agent session is working, idle or blocked, with
//! the evidence behind every verdict.
//!
//! # Overview
//!
//! - [`Detector`]: observations in, each with the current time ([`Detector::output`],
//!   [`Detector::hook`], [`Detector::process_activity`], [`Detector::user_input`],
//!   [`Detector::ai_verdict`], [`Detector::tick`]); a [`Verdict`] out
//!   (`working | idle | blocked(kind) | unknown`) with [`Evidence`]: which signal fired, which
//!   rule or pattern matched, since when. [`DetectorConfig`] holds the timings.
//! - [`ChunkSignals`]: what one chunk of output says (completion message, working indicator,
//!   prompt, substantial output, token counter), returned by [`Detector::output`] for the
//!   respawn controller.
//! - [`Profile`]: per-agent screen rules as data (`claude-code`, `codex`, `gemini`, `copilot`,
//!   `aider`, `generic`), embedded TOML files that a user file can replace or extend.
//! - [`CodemanClassifier`]: Codeman's per-chunk rules reproduced exactly, with its counters.
//! - [`IdleChecker`] and [`PlanChecker`]: the AI checkers, with [`CheckerMachine`] (cooldowns,
//!   back-off, disabling, cancellation); `hyoka-respawn`'s `CommandChecker` answers them with
//!   a command, and `mockall` mocks sit behind the `mock` feature.
//! - The entry points of `hyoka detect`: [`classify_screen`] (`--screen`), [`replay_cast`]
//!   and [`CastReplay`] (`--cast`, whole or a line at a time), [`run_stream`] and
//!   [`StreamRun`] (`--stream`, whole or piece by piece in bounded memory),
//!   [`Profile::builtin`] / [`Profile::from_toml`] (`--profile`, `--profile-file`) and
//!   [`render_explain`] (`--explain`: every rule that fired, its line and its source); a
//!   [`Verdict`] serialises to `{"state":…,"blocked":…,"evidence":[…]}`.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, Instant};
//!
//! use hyoka_idle_detect::{Detector, DetectorConfig, HookEvent, Profile, SessionState};
//!
//! let profile = Profile::builtin("claude-code")?;
//! let mut detector = Detector::new(profile, DetectorConfig::default());
//! # #[expect(clippy::disallowed_methods, reason = "the caller owns the clock")]
//! let t0 = Instant::now(); // The caller's clock; the detector never reads one.
//!
//! let chunk = "\r\x1b[2K✻ Cultivating… (3s · ↓ 120 tokens · esc to interrupt)";
//! let signals = detector.output(t0, chunk.as_bytes());
//! assert!(signals.working);
//! assert_eq!(signals.tokens, Some(120));
//!
//! let done = "\r\x1b[2K✻ Worked for 4s\r\n────────\r\n❯ \r\n────────\r\n";
//! assert!(detector.output(t0 + Duration::from_secs(4), done.as_bytes()).completion);
//! // Still settling right after the last output, idle 1.5 s later.
//! assert_eq!(detector.verdict(t0 + Duration::from_secs(4)).state, SessionState::Working);
//! let verdict = detector.verdict(t0 + Duration::from_millis(5500));
//! assert_eq!(verdict.state, SessionState::Idle);
//! assert_eq!(verdict.evidence[0].rule, "claude-code/prompt-box");
//!
//! // Hooks are authoritative; a permission prompt is never idle.
//! detector.hook(t0 + Duration::from_secs(6), HookEvent::PermissionPrompt);
//! assert!(!detector.verdict(t0 + Duration::from_secs(6)).allows_input());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Testing with mocks
//!
//! With the `mock` feature, `MockIdleChecker` and `MockPlanChecker` (`mockall`) stand in for
//! the AI checkers, so code that asks them is tested without a model:
//!
//! ```
//! # #[cfg(feature = "mock")] {
//! use hyoka_idle_detect::{CheckReply, IdleAnswer, IdleChecker, MockIdleChecker};
//!
//! // Downstream code, written against the trait.
//! async fn finished(checker: &dyn IdleChecker, tail: &str) -> bool {
//!     matches!(
//!         checker.check_idle(tail).await,
//!         Ok(CheckReply { verdict: IdleAnswer::Idle, .. })
//!     )
//! }
//!
//! let mut checker = MockIdleChecker::new();
//! checker
//!     .expect_check_idle()
//!     .withf(|context| context.contains("Worked for"))
//!     .times(1)
//!     .returning(|_| Ok(CheckReply { verdict: IdleAnswer::Idle, reasoning: String::new() }));
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//! assert!(runtime.block_on(finished(&checker, "✻ Worked for 2m 46s\n❯ ")));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Theory of operation
//!
//! **Per chunk** (the hot path, bounded work and no allocation per byte) the detector runs a
//! tokenizer that keeps its state across reads (a sequence or a character may be split
//! anywhere), a one-line model that turns the text into stripped lines (SGR codes cannot hide
//! `✻ Worked for 5s`; a carriage-return redraw starts a new line, so stale spinner frames
//! never accumulate), and cheap line patterns. Each fact is reported in the chunk holding the
//! byte that decides it (facts that more text could undo wait for the end of their line), so
//! every cut of a stream reports the same facts. Raw bytes go into a 48 KiB ring.
//!
//! That path does a few bulk scans and little per-byte work. Control bytes are found 16 bytes
//! at a time (SSE2, part of the x86-64 baseline; plain `u64` arithmetic on other targets), so a
//! text run costs one short scan and one fixed-size copy; CSI parameters are measured eight
//! bytes at a time and SGR and private-mode sequences are skipped without being parsed. A line
//! is classified only when its first bytes could start a signal (an upper-case letter, a
//! prompt or status glyph, `│`, `─`) or it holds a hint word (`tokens`, `interrupt`), found
//! for the whole chunk in one pass over its stripped text (32 bytes at a time where the CPU
//! has AVX2). On the reference stream of `benches/` this is about 8.4 instructions per byte
//! at 4 KiB slices and 12.3 at 256-byte ones (callgrind, `benches/examples/idle_detect_prefix.rs`).
//!
//! **Per decision** ([`Detector::verdict`], [`Detector::tick`]) the `vt100` screen is fed the
//! ring's new bytes (or rebuilt from the ring after a flood) and the profile classifies what is
//! visible now. It finds the live region (the last input prompt, what is drawn just above it,
//! and what is below it; the bottom of the screen when a dialog replaced the prompt), evaluates
//! every rule there, and fuses the evidence safety first: a dialog, then work, then a rule that
//! says the screen cannot be judged, then a person's draft in the input (told from a
//! placeholder by the faint rendering agents use for placeholders), and only then positive idle
//! evidence; no evidence is `unknown` (`docs/detection.md` has the details and the rules'
//! sources). The arbiter then fuses the layers in this order: a blocked screen; a permission or
//! elicitation hook, or a PLAN_MODE answer, not superseded by later work or input; a draft on
//! screen; a `Stop` / `idle_prompt` hook newer than the last working output; a busy process
//! tree; a working screen; a recent working indicator on an unrecognised screen; a fresh
//! WORKING answer; an idle screen once output has been quiet for [`DetectorConfig::settle`];
//! a fresh IDLE answer; a completion message followed by [`DetectorConfig::completion_confirm`]
//! of silence; otherwise `unknown`. Ticks without new output reuse the last classification,
//! and [`Detector::next_deadline`] says when the verdict can next change on its own, so a
//! driver can sleep until then.
//!
//! **Where this differs from Codeman** (whose rules [`CodemanClassifier`] keeps): completion
//! messages are matched on stripped text with any `<Verb>ed for <duration>` (Codeman misses
//! `ESC[2mWorked for 5s` and `✻ Crunched for 3s`); working means a status-line shape or an
//! interrupt hint on the line, not a bare word anywhere in the last 300 characters (`The
//! 'Thinking' file` is not work, and work early in a large chunk is not missed); the screen,
//! not stale stream text, decides; a redrawn prompt box is not substantial output; a `Stop`
//! hook is not undone by a one-character redraw.
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
mod scan;
mod screen;
mod signals;
mod stream;
mod terminal;

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
    profile::{Profile, Rule, RuleHit, ScreenVerdict},
    replay::{
        CastReplay, MAX_CAST_SIZE, StreamReport, StreamRun, VerdictChange, classify_screen,
        render_explain, replay_cast, run_stream,
    },
    screen::Screen,
    signals::{BlockedKind, ChunkSignals, Evidence, HookEvent, SessionState, Verdict},
};
