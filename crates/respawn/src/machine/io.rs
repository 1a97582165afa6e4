//! What goes into the machine ([`Input`]) and what comes out ([`Action`], [`Keys`]), and
//! the snapshots it gives of itself ([`Status`], [`TimerInfo`]).

use std::time::Duration;

use hyoka_idle_detect::{
    CheckError, CheckReply, ChunkSignals, HookEvent, IdleAnswer, PlanAnswer, Verdict,
};

use crate::config::RespawnConfig;
use crate::event::{Checker, Event, SendOutcome, State, TimerName};

/// One observation or command for the machine.
#[derive(Debug)]
#[non_exhaustive]
pub enum Input {
    /// Start watching (T1, T3). Ignored unless stopped.
    Start,
    /// Stop everything (T4). Safe to repeat.
    Stop,
    /// Pause automation: no timers, no checks, no typing; the state is kept. Output is
    /// still observed, so silence is measured correctly after [`Input::Resume`].
    Pause,
    /// Resume after [`Input::Pause`]: the current state's timers start again from now.
    Resume,
    /// One chunk of terminal output, as the detector classified it.
    Output(ChunkSignals),
    /// The detector's current verdict. Applied before any due timer fires, so the driver
    /// delivers it just before a [`Input::Tick`], a hook or a check result.
    Verdict(Verdict),
    /// A Claude Code hook (Stop, idle_prompt, permission_prompt, elicitation_dialog).
    Hook(HookEvent),
    /// Time passed: fire the timers that are due.
    Tick,
    /// The result of the AI idle check started by [`Action::StartCheck`].
    IdleCheckDone {
        /// The check id.
        id: u64,
        /// What the checker returned.
        result: Result<CheckReply<IdleAnswer>, CheckError>,
    },
    /// The result of the AI plan check started by [`Action::StartCheck`].
    PlanCheckDone {
        /// The check id.
        id: u64,
        /// What the checker returned.
        result: Result<CheckReply<PlanAnswer>, CheckError>,
    },
    /// The user typed into the session (human-presence lock).
    UserTyped,
    /// A person is attached to the session (another tmux client): the human-presence lock,
    /// refreshed for as long as they stay.
    PersonAttached,
    /// The text being delivered ([`Machine::delivery_text`](super::Machine::delivery_text))
    /// is visible on the screen now. With a fresh [`Input::Verdict`] first: before Enter a
    /// blocked(draft) verdict says it sits in the input box; after Enter, once it was seen
    /// there, any other verdict says it left the box for the transcript (the delivery is
    /// confirmed).
    TextShown,
    /// The driver did not perform the last [`Action::Type`]: the verdict it took just
    /// before the keystroke ([`Machine::may_type`](super::Machine::may_type)) did not allow
    /// it. The delivery in progress is abandoned.
    KeysWithheld {
        /// The keys that were not sent.
        keys: Keys,
        /// The verdict that withheld them.
        verdict: Verdict,
    },
    /// Text to deliver into the session (`hyoka send`), answered by [`Action::SendDone`].
    Send {
        /// The request's id, echoed in the answer.
        id: u64,
        /// The text (newlines become spaces).
        text: String,
        /// Wait for the session to be idle instead of refusing.
        queue: bool,
    },
    /// The session's process exited.
    SessionExited {
        /// Its exit code, if it exited normally.
        code: Option<i32>,
    },
    /// New configuration (Codeman's `updateConfig`). Running timers keep their durations.
    UpdateConfig(Box<RespawnConfig>),
}

/// Keys to type into the session. Text and Enter are always separate writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keys {
    /// Literal text, without any Enter.
    Text(String),
    /// One Enter key (`\r`).
    Enter,
}

/// Something the driver must do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Type into the session.
    Type(Keys),
    /// Run an AI check on the last `max_context` characters of stripped output and report
    /// it with [`Input::IdleCheckDone`] or [`Input::PlanCheckDone`]. The machine enforces
    /// the time limit.
    StartCheck {
        /// Which checker.
        checker: Checker,
        /// The check id.
        id: u64,
        /// How much output to show the checker.
        max_context: usize,
    },
    /// Cancel a running check; its result, if any, will be ignored.
    CancelCheck {
        /// Which checker.
        checker: Checker,
        /// The check id.
        id: u64,
    },
    /// Forget the output context kept for AI checks (Codeman clears its buffer at every
    /// step send and at the end of a cycle).
    ResetContext,
    /// The cycle budget is spent: stop the session. The machine is already stopped.
    StopSession,
    /// A send request ended.
    SendDone {
        /// The request's id.
        id: u64,
        /// How it ended.
        outcome: SendOutcome,
    },
    /// Report an event.
    Emit(Event),
}

/// A timer as [`Machine::active_timers`](super::Machine::active_timers) reports it
/// (Codeman's `getActiveTimers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerInfo {
    /// The timer.
    pub name: TimerName,
    /// Time left, never negative.
    pub remaining: Duration,
    /// Its full length.
    pub total: Duration,
}

/// A snapshot of the machine for status displays.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Status {
    /// The state.
    pub state: State,
    /// Cycles started.
    pub cycles: u32,
    /// `true` while paused.
    pub paused: bool,
    /// A prompt was the last notable thing seen (Codeman's `promptDetected`).
    pub prompt_detected: bool,
    /// Working output was the last notable thing seen (Codeman's `workingDetected`).
    pub working_detected: bool,
    /// An elicitation dialog blocks auto-accept.
    pub elicitation: bool,
    /// A Stop hook awaits confirmation.
    pub stop_hook_pending: bool,
    /// Consecutive errors of the idle checker.
    pub idle_check_errors: u32,
    /// `true` while the idle checker is usable (not disabled).
    pub idle_check_usable: bool,
    /// The last token count seen.
    pub tokens: Option<u64>,
    /// Time since the last output.
    pub silence: Option<Duration>,
    /// Time left on the human-presence lock.
    pub human_lock: Option<Duration>,
    /// Sends waiting in the queue.
    pub queued_sends: usize,
    /// An input is being delivered.
    pub delivering: bool,
}
