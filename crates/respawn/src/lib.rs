//! The respawn controller: cycle an interactive agent session only when it is really idle.
//!
//! A port of Codeman's respawn controller (its 13 states, named timers, transitions T1–T47,
//! gate chain, step confirmation, AI checks and plan auto-accept; `docs/respawn.md`
//! §1–§6), as a sans-IO state machine with a thin tokio driver, plus the safety rules a
//! session left running for hours needs: it never types into a session that works or waits
//! for a human.
//!
//! # Overview
//!
//! - [`Machine`]: the sans-IO state machine. [`Machine::handle`] takes an [`Input`] and
//!   the time it happened and returns [`Action`]s; [`Machine::next_deadline`] says when it
//!   needs a [`Input::Tick`]. It is configured by [`RespawnConfig`] and reports [`Event`]s
//!   ([`State`], [`Step`], [`TimerName`], [`BlockReason`], …). Pluggable [`Gate`]s can hold
//!   a cycle back.
//! - [`Driver`]: the tokio loop around a machine, a [`Terminal`] and a [`SessionModel`]; it
//!   runs AI checks through `hyoka-idle-detect`'s checkers ([`AiCheckers`]), takes hooks, keys and resizes ([`DriverInputs`]),
//!   tells an [`Observer`], and ends with a [`Report`].
//! - [`Terminal`] backends: [`PtyTerminal`] (the embedded default) and [`TmuxTerminal`] (a
//!   private tmux server; the session survives hyoka and can be re-attached); with the
//!   `mock` feature also `FakeTerminal`. A session is stopped with a [`Signal`]
//!   (`hyoka-proctrack`'s).
//! - [`SessionModel`]: the detector seam; [`DetectorModel`] puts `hyoka-idle-detect`'s
//!   detector behind it.
//! - Hooks: [`HookListener`] on a Unix socket, [`send_hook`] for `hyoka hook`.
//! - [`Session`]: a supervised session in one call; [`Registry`]: the per-user registry of
//!   running sessions and the client of their control sockets; [`AlertClock`] and
//!   [`AlertOptions`]: `--on-blocked` / `--on-idle`; [`narrate`]: one line per event for a
//!   person; [`AgentCycle`]: the cycle steps each agent's CLI offers.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, Instant};
//! use hyoka_idle_detect::{ChunkSignals, SessionState, Verdict};
//! use hyoka_respawn::{Action, Input, Keys, Machine, RespawnConfig, State};
//!
//! let mut machine = Machine::new(RespawnConfig::fast_test());
//! let t0 = Instant::now();
//! machine.handle(Input::Start, t0);
//! // The detector's verdict: only one that says idle lets a keystroke go.
//! let idle = Verdict { state: SessionState::Idle, ..Verdict::default() };
//! machine.handle(Input::Verdict(idle), t0);
//! // "✻ Worked for 1m 2s": idle confirmation starts.
//! let completion = ChunkSignals { completion: true, substantial: true, ..Default::default() };
//! machine.handle(Input::Output(completion), t0);
//! assert_eq!(machine.state(), State::ConfirmingIdle);
//! // 50 ms of silence confirm it; 20 ms later the update prompt is typed into the empty box.
//! // Enter follows once the text shows there (the driver reports it from the screen), or,
//! // since nothing here draws a screen, after `text_wait` (1 s).
//! let mut typed = Vec::new();
//! while let Some(at) = machine.next_deadline().filter(|&at| at <= t0 + Duration::from_millis(1200)) {
//!     for action in machine.handle(Input::Tick, at) {
//!         if let Action::Type(keys) = action {
//!             typed.push(keys);
//!         }
//!     }
//! }
//! assert_eq!(typed.len(), 2);
//! assert_eq!(typed[1], Keys::Enter);
//! assert_eq!(machine.state(), State::WaitingUpdate);
//! ```
//!
//! # Testing with fakes and mocks
//!
//! With the `mock` feature, `FakeTerminal` is an in-memory session a test scripts (it
//! records every write and produces the output you give it); `hyoka-idle-detect`'s mocks
//! stand in for the AI checkers.
//! On tokio's paused clock a whole cycle through the [`Driver`] runs in virtual time; the
//! `scripted_session` example does exactly that. A smaller check:
//!
//! ```
//! # #[cfg(feature = "mock")] {
//! use hyoka_respawn::{FakeTerminal, Terminal, Written};
//!
//! let (mut terminal, handle) = FakeTerminal::new(Some(4242));
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! runtime.block_on(async {
//!     handle.output("✻ Worked for 1m 2s\r\n❯ ");
//!     let mut buf = [0u8; 64];
//!     let n = terminal.read(&mut buf).await?;
//!     assert!(std::str::from_utf8(&buf[..n])?.contains("Worked for"));
//!     terminal.send_text("/clear").await?;
//!     terminal.send_enter().await?;
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! assert_eq!(handle.written(), [Written::Text("/clear".to_owned()), Written::Enter]);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Theory of operation
//!
//! **Time is an argument.** The machine reads no clock: every input carries its instant,
//! and a call first fires every timer due at or before it, each at its own deadline, so a
//! late tick decides exactly as a punctual one would. Timers are a fixed table of
//! deadlines. The three that every output chunk restarts in Codeman (no-output fallback,
//! pre-filter, auto-accept) cost one store per chunk here: no OS timer, no event, no
//! allocation (Codeman's per-chunk timer churn is 30–70 % of its cost). The driver sleeps
//! until [`Machine::next_deadline`]; an idle session costs nothing between deadlines.
//!
//! **Signals per chunk, verdicts per decision.** The driver feeds each chunk to the model
//! and the resulting [`ChunkSignals`](hyoka_idle_detect::ChunkSignals) (completion,
//! working, prompt, substantial, tokens) to the machine, which reacts exactly where
//! Codeman's controller reacts to its own patterns (§3.1). Before anything that can lead
//! to typing — a tick, a hook, a check result — the driver hands over a fresh
//! [`Verdict`](hyoka_idle_detect::Verdict) from the model ([`Input::Verdict`]).
//!
//! **Typing is verified delivery.** Text goes only into an empty input box (the verdict says
//! idle: not working, not blocked, a person's draft included, not unknown, and nobody typed
//! recently), as a
//! bracketed paste where the agent asked for one; Enter is a separate write (Ink reads an
//! Enter that arrives with the text as a newline), pressed once the text shows in the box or
//! after `text_wait`, and only on a settled verdict: one that shows work or cannot judge the
//! screen holds Enter (event `enter_held`), tried again on a fresh verdict every
//! `enter_delay` for `verify_timeout`, then the delivery is unconfirmed. The delivery counts only when a new turn visibly starts within
//! `verify_timeout`: working output or a working verdict with evidence of work, or the text
//! echoed in the transcript after it was seen in the box ([`Input::TextShown`]). Otherwise
//! Enter is retried `verify_retries` times (once), then `delivery_unconfirmed`: a cycle is
//! abandoned and cycles pause until the session works again or a person steps in. Every
//! keystroke, retries included, is checked once more by the driver on a verdict taken just
//! before it ([`Machine::may_type`]): text only into an idle session, Enter only onto the
//! text just typed (or an idle input), a bare Enter only onto a plan menu; a keystroke that
//! fails the check is not sent ([`Input::KeysWithheld`], event `keys_withheld`). A step is
//! not done by silence while its delivery is unconfirmed.
//!
//! **Safety rules beyond Codeman.**
//! - Nothing is typed while the verdict is working or blocked; a session that starts
//!   waiting for a human in the middle of a cycle ends the cycle (`session blocked`).
//! - Auto-accept presses Enter only on a plan-approval menu (verdict blocked(plan)),
//!   never on a permission prompt, a question or a trust dialog.
//! - A keystroke from the user (human-presence lock, `human_lock`) aborts a running cycle
//!   and holds automation for that long.
//! - A cycle budget: `max_cycles` (then the session is stopped) and `max_cycles_per_hour`.
//! - A dry run decides and reports every step (`dry_run: true` in the events), types
//!   nothing, and waits in each step's waiting state as a real run would.
//! - Text sent through the controller ([`Input::Send`]) is delivered the same way, or
//!   refused with nothing typed ([`Refusal`]), or queued until the session can take it.
//! - Another tmux client attached counts as a person present ([`Input::PersonAttached`]).
//! - A session that never drew anything is never typed into (`blocked(no_output_yet)`).
//!
//! # Decisions on Codeman's quirks
//!
//! From `docs/respawn.md` §5b and §5d; each is a test named after its item.
//!
//! | item | decision |
//! |---|---|
//! | §4 race: plan check vs idle check | **fixed**: an idle check waits while a plan check runs, and runs after a negative plan verdict |
//! | 106 working-window blind spot, sticky working | **fixed** by the detector behind [`DetectorModel`]: every line of a chunk is classified; nothing is sticky |
//! | 107 completion flag survives a cycle | **fixed**: cleared when a cycle completes |
//! | 108 `detectionUpdate` interval dies after the first cycle | **fixed by design**: no interval; [`Machine::status`] answers at any time |
//! | 109 `pause()` is not a pause | **fixed**: pause cancels checks, stops state timers, types nothing; resume re-arms the current state's timers |
//! | 110 dead end in `confirming_idle` (AI cooldown, `isWorking`) | **fixed**: back to watching with the detection timers armed |
//! | 111 Stop hook aborted by any byte | **fixed**: only working output or substantial non-prompt output aborts it |
//! | 112 blocks leave detection unarmed | **fixed**: a pluggable gate re-arms detection; human lock and cycle rate re-arm at their end; a blocked screen or a silent session wait for output (which re-arms) |
//! | 113 forced idle after 10 min of work in `watching` | **fixed**: `watching` is never stuck; recovery in `confirming_idle`/`ai_checking` returns to watching without forcing idle; `waiting_*` recovery completes the cycle (reproduced) |
//! | 114 `/clear` skipped below 60k tokens by default | **fixed default**: never skipped unless `skip_clear_below_tokens` is set |
//! | 115 multi-line prompts glued together | **fixed**: newlines become spaces |
//! | 116 `$&` expanded in the checker prompt | **fixed** (the CLI's command checker inserts literally) |
//! | §5b 73/74 E2BIG, leftover prompt files | **fixed by design**: the prompt goes through stdin; no files |
//! | §5b 75 cancel/poll double resolve | **reproduced fix**: a cancelled check's result is ignored exactly once |
//! | §5b 76 checker session-name collision | **not applicable**: checks are processes, the previous one is always cancelled first |
//! | §5b 77 `outputSilent` measured with the wrong threshold | **display only**: [`Status::silence`] is plain time since output |
//! | §5b 78 resume bypasses the gates | **fixed**: resume never confirms idle directly |
//! | §5b 84 step confirmation tied to `completion_confirm` | **fixed**: `step_confirm` may be set on its own |
//! | CC-005 removed kickstart in `monitoring_init` types a bare Enter | **fixed**: the cycle completes instead |
//! | CO-004 an IDLE verdict after `pause()` starts a cycle | **fixed**: pause cancels the check |
//! | T46 resume confirms idle after `idleTimeoutMs` | **dropped** (see 78); `idle_timeout` is not a setting |
//!
//! Reproduced as Codeman does: the states and transitions, the timer names and their
//! durations, the gate order (working veto first), one Enter per silence period for
//! auto-accept, the elicitation flag cleared only by working output, the error back-off
//! (60 s × 2ⁿ⁻¹, capped at 5 min, disabled after 3), and the checkers' cooldowns.
#![warn(
    clippy::disallowed_methods,
    reason = "decisions are sans-IO: no clock, no environment"
)]

mod alert;
mod checker;
mod claude_hooks;
mod config;
mod driver;
mod error;
mod event;
mod event_log;
mod gate;
mod hook;
mod machine;
mod model;
mod narrate;
mod registry;
pub mod replies;
#[cfg(feature = "schema")]
mod schema;
mod supervise;
mod terminal;
mod tty;

pub use crate::alert::{AlertClock, AlertOptions};
pub use crate::checker::{CommandChecker, CommandCheckerOptions, SpawnHook};
pub use crate::claude_hooks::{HooksInstalled, install_claude_hooks};
pub use crate::config::{AgentCycle, AiCheckConfig, DEFAULT_UPDATE_PROMPT, RespawnConfig};
pub use crate::driver::{
    AiCheckers, Control, Driver, DriverInputs, DriverOptions, LiveStatus, NoObserver, Observer,
    Report, SessionEnd,
};
pub use crate::error::RespawnError;
pub use crate::event::{
    AlertKind, AutoAcceptSkip, BlockReason, CheckSkip, Checker, Event, Refusal, SendOutcome, Stale,
    State, Step, TimerName,
};
pub use crate::event_log::EventLog;
pub use crate::gate::{FnGate, Gate, GateContext};
pub use crate::hook::{HOOK_EVENT_NAMES, HookListener, HookMessage, is_hook_event_name, send_hook};
pub use crate::machine::{Action, Input, Keys, Machine, Status, TimerInfo};
pub use crate::model::SessionModel;
pub use crate::model::detector::DetectorModel;
pub use crate::narrate::narrate;
pub use crate::registry::{
    EvidenceLine, Listing, Registration, Registry, SessionStatus, TmuxTarget, WaitOutcome,
    valid_session_name,
};
#[cfg(feature = "schema")]
pub use crate::schema::event_line_schema;
pub use crate::supervise::{
    ALERT_EVAL, Backend, CHECKER_EVAL, Driven, Finished, OrphanedSession, SESSION_EVAL, Session,
    SessionOptions, Stopped, Supervised, forget_orphaned_session, orphaned_sessions, stop_detached,
    stop_session, summary,
};
pub use crate::terminal::{
    Exit, PtyTerminal, ReadEvent, Size, SpawnOptions, Terminal, TmuxOptions, TmuxTerminal,
    valid_tmux_name,
};
#[cfg(feature = "mock")]
pub use crate::terminal::{FakeHandle, FakeTerminal, Written};
pub use crate::tty::{RawMode, terminal_size};
pub use hyoka_proctrack::Signal;
