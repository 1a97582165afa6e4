//! What the machine reports: its states, steps, timers, and the events it emits.
//!
//! Events carry no timestamps; the driver stamps them when it writes them out. Their names
//! and fields follow Codeman's events (`docs/respawn.md` §1.7) in snake case, with
//! typed reasons where Codeman logs a free-text line.

use std::fmt;

use hyoka_idle_detect::{BlockedKind, HookEvent, IdleAnswer, PlanAnswer, SessionState};
use serde::Serialize;

/// The 13 states of Codeman's respawn controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// The controller is not running (initial).
    Stopped,
    /// Watching the session for idle signals.
    Watching,
    /// A completion message was seen; waiting for silence to confirm it.
    ConfirmingIdle,
    /// An AI idle check runs.
    AiChecking,
    /// The update prompt is about to be typed.
    SendingUpdate,
    /// Waiting for the update prompt's work to finish.
    WaitingUpdate,
    /// `/clear` is about to be typed.
    SendingClear,
    /// Waiting for `/clear` to finish.
    WaitingClear,
    /// `/init` is about to be typed.
    SendingInit,
    /// Waiting for `/init` to finish.
    WaitingInit,
    /// Watching whether `/init` started any work.
    MonitoringInit,
    /// The kickstart prompt is about to be typed.
    SendingKickstart,
    /// Waiting for the kickstart prompt's work to finish.
    WaitingKickstart,
}

impl State {
    /// Codeman's name for the state (`confirming_idle`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stopped => "stopped",
            Self::Watching => "watching",
            Self::ConfirmingIdle => "confirming_idle",
            Self::AiChecking => "ai_checking",
            Self::SendingUpdate => "sending_update",
            Self::WaitingUpdate => "waiting_update",
            Self::SendingClear => "sending_clear",
            Self::WaitingClear => "waiting_clear",
            Self::SendingInit => "sending_init",
            Self::WaitingInit => "waiting_init",
            Self::MonitoringInit => "monitoring_init",
            Self::SendingKickstart => "sending_kickstart",
            Self::WaitingKickstart => "waiting_kickstart",
        }
    }

    /// `true` in the three states that look for idle (`watching`, `confirming_idle`,
    /// `ai_checking`).
    pub fn is_detecting(self) -> bool {
        matches!(
            self,
            Self::Watching | Self::ConfirmingIdle | Self::AiChecking
        )
    }

    /// `true` in the four `sending_*` states (a step is about to be typed).
    pub fn is_sending(self) -> bool {
        matches!(
            self,
            Self::SendingUpdate | Self::SendingClear | Self::SendingInit | Self::SendingKickstart
        )
    }

    /// `true` while a cycle runs (any `sending_*`, `waiting_*` or `monitoring_init`).
    pub fn in_cycle(self) -> bool {
        !matches!(self, Self::Stopped) && !self.is_detecting()
    }

    /// The step a `sending_*` or `waiting_*` state belongs to.
    pub fn step(self) -> Option<Step> {
        match self {
            Self::SendingUpdate | Self::WaitingUpdate => Some(Step::Update),
            Self::SendingClear | Self::WaitingClear => Some(Step::Clear),
            Self::SendingInit | Self::WaitingInit | Self::MonitoringInit => Some(Step::Init),
            Self::SendingKickstart | Self::WaitingKickstart => Some(Step::Kickstart),
            _ => None,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A step of a cycle, or the plan auto-accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// The update prompt.
    Update,
    /// `/clear`.
    Clear,
    /// `/init`.
    Init,
    /// The kickstart prompt.
    Kickstart,
    /// Enter on a plan-approval menu.
    AutoAccept,
    /// Text sent through the controller (`hyoka send`), not part of a cycle.
    Send,
}

impl Step {
    /// The step's name (`update`, `clear`, `init`, `kickstart`, `auto_accept`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Update => "update",
            Self::Clear => "clear",
            Self::Init => "init",
            Self::Kickstart => "kickstart",
            Self::AutoAccept => "auto_accept",
            Self::Send => "send",
        }
    }
}

/// The named timers (Codeman's tracked timers, plus hyoka's own).
///
/// `no-output-fallback`, `pre-filter` and `auto-accept` are restarted by every output chunk,
/// as in Codeman, but that restart is one store of the chunk's time: no event, no OS timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum TimerName {
    /// The idle check's time limit.
    IdleCheckTimeout,
    /// The plan check's time limit.
    PlanCheckTimeout,
    /// The end of the idle checker's cooldown.
    IdleCheckCooldown,
    /// The end of the plan checker's cooldown.
    PlanCheckCooldown,
    /// The end of the human-presence lock.
    HumanLock,
    /// The next look at whether a queued send can be delivered.
    SendQueue,
    /// When the hourly cycle budget frees a slot.
    CycleRate,
    /// Between a step's text and its separate Enter.
    EnterDelay,
    /// How long the session has to react to an Enter.
    Verify,
    /// The delay before a step is typed.
    StepDelay,
    /// The 3 s after a Stop hook.
    HookConfirm,
    /// Silence after a completion message.
    CompletionConfirm,
    /// Silence after a step's completion or prompt.
    StepConfirm,
    /// The 10 s fallback after `/clear`.
    ClearFallback,
    /// The 3 s watch after `/init`.
    InitMonitor,
    /// Silence of `auto_accept_delay`: a plan menu may be accepted.
    AutoAccept,
    /// Silence of `completion_confirm` with AI on: the pre-filter may start an AI check.
    PreFilter,
    /// Silence of `no_output_timeout`: idle is considered without a completion.
    NoOutputFallback,
    /// When the current state counts as stuck (warning, then recovery).
    StuckState,
}

impl TimerName {
    /// Every timer, in declaration order, which is also the order in which timers due at the
    /// same instant fire.
    pub const ALL: [Self; 19] = [
        Self::IdleCheckTimeout,
        Self::PlanCheckTimeout,
        Self::IdleCheckCooldown,
        Self::PlanCheckCooldown,
        Self::HumanLock,
        Self::SendQueue,
        Self::CycleRate,
        Self::EnterDelay,
        Self::Verify,
        Self::StepDelay,
        Self::HookConfirm,
        Self::CompletionConfirm,
        Self::StepConfirm,
        Self::ClearFallback,
        Self::InitMonitor,
        Self::AutoAccept,
        Self::PreFilter,
        Self::NoOutputFallback,
        Self::StuckState,
    ];

    /// The timer's name (`no-output-fallback`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoOutputFallback => "no-output-fallback",
            Self::PreFilter => "pre-filter",
            Self::AutoAccept => "auto-accept",
            Self::CompletionConfirm => "completion-confirm",
            Self::HookConfirm => "hook-confirm",
            Self::StepDelay => "step-delay",
            Self::StepConfirm => "step-confirm",
            Self::ClearFallback => "clear-fallback",
            Self::InitMonitor => "init-monitor",
            Self::StuckState => "stuck-state",
            Self::EnterDelay => "enter-delay",
            Self::Verify => "verify",
            Self::HumanLock => "human-lock",
            Self::SendQueue => "send-queue",
            Self::CycleRate => "cycle-rate",
            Self::IdleCheckCooldown => "idle-check-cooldown",
            Self::PlanCheckCooldown => "plan-check-cooldown",
            Self::IdleCheckTimeout => "idle-check-timeout",
            Self::PlanCheckTimeout => "plan-check-timeout",
        }
    }
}

impl fmt::Display for TimerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which AI checker an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Checker {
    /// The idle checker (IDLE / WORKING).
    Idle,
    /// The plan checker (PLAN_MODE / NOT_PLAN_MODE).
    Plan,
}

/// Why the gate chain refused to start a cycle (Codeman's `respawnBlocked` reasons plus
/// hyoka's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum BlockReason {
    /// The session waits for a human (permission, question, plan, trust).
    SessionBlocked,
    /// The user typed recently (human-presence lock).
    HumanPresent,
    /// A pluggable [`Gate`](crate::Gate) refused (for example active teammates).
    Gate,
    /// `max_cycles` cycles ran.
    MaxCycles,
    /// `max_cycles_per_hour` cycles started in the last hour.
    CycleRate,
    /// The session never drew anything: nothing to judge, nothing to type into.
    NoOutputYet,
    /// A step's delivery was not confirmed after the Enter retry: cycles pause until the
    /// session visibly works again or a person steps in.
    DeliveryUnconfirmed,
    /// Text sent through the controller is being delivered or waits in the queue.
    SendPending,
    /// Stuck recovery gave up after `max_stuck_recoveries` attempts.
    StuckGaveUp,
}

/// Why an attempt to start an AI idle check did not start one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum CheckSkip {
    /// The detector says the session works (Codeman's `isWorking` veto, T13).
    SessionWorking,
    /// The checker is cooling down (T15).
    Cooldown {
        /// Time left, in milliseconds.
        remaining_ms: u64,
    },
    /// A check is already running (T15).
    AlreadyChecking,
    /// A plan check runs; the idle check waits for it (hyoka fix of the §4 race).
    PlanCheckRunning,
}

/// Why an auto-accept did not press Enter (Codeman's skip log lines, typed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum AutoAcceptSkip {
    /// Not in `watching`.
    NotWatching,
    /// A completion message was seen.
    CompletionSeen,
    /// No output since start or since the last Enter.
    NoNewOutput,
    /// An elicitation dialog (AskUserQuestion) is open.
    Elicitation,
    /// The screen is not a plan-approval menu (Codeman's pre-filter).
    NotPlanMenu,
    /// The screen is a permission, question or trust prompt: never auto-accepted.
    HumanDecision {
        /// What the session waits for.
        kind: BlockedKind,
    },
    /// The plan checker is cooling down.
    PlanCheckCooldown {
        /// Time left, in milliseconds.
        remaining_ms: u64,
    },
    /// A plan check is already running.
    PlanCheckInProgress,
    /// An idle check runs; the plan check waits (hyoka fix of the §4 race).
    IdleCheckRunning,
    /// The user typed recently.
    HumanPresent,
}

/// Why a check result was ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Stale {
    /// The id is not the running check's (cancelled or superseded).
    UnknownId,
    /// The state changed since the check started.
    StateChanged,
    /// Output arrived while the plan check ran.
    OutputArrived,
}

/// Why a send was refused, with nothing typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Refusal {
    /// The session works.
    Working,
    /// The session waits for a human decision (a dialog).
    Blocked,
    /// The input box holds a person's draft.
    Draft,
    /// A person is at the session (typed recently, or another tmux client is attached).
    HumanPresent,
    /// A respawn cycle is running.
    CycleRunning,
    /// Another input is being delivered.
    Busy,
    /// The screen cannot be judged, so its input box cannot be known to be empty.
    Unknown,
    /// A dry run types nothing.
    DryRun,
    /// The text is empty.
    EmptyText,
    /// The controller is stopped (or stopping).
    Stopped,
}

impl Refusal {
    /// The snake_case name (`working`, `draft`, `human_present`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::Blocked => "blocked",
            Self::Draft => "draft",
            Self::HumanPresent => "human_present",
            Self::CycleRunning => "cycle_running",
            Self::Busy => "busy",
            Self::Unknown => "unknown",
            Self::DryRun => "dry_run",
            Self::EmptyText => "empty_text",
            Self::Stopped => "stopped",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Working => "the session is working",
            Self::Blocked => "the session waits for a human decision",
            Self::Draft => "the input box holds a draft",
            Self::HumanPresent => "a person is at the session",
            Self::CycleRunning => "a respawn cycle is running",
            Self::Busy => "another input is being delivered",
            Self::Unknown => "the screen cannot be judged",
            Self::DryRun => "a dry run types nothing",
            Self::EmptyText => "the text is empty",
            Self::Stopped => "the controller is stopping",
        })
    }
}

/// How a send ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "outcome", content = "reason", rename_all = "snake_case")]
pub enum SendOutcome {
    /// Typed, and a new turn visibly started.
    Delivered,
    /// Refused: nothing was typed.
    Refused(Refusal),
    /// Typed, but no new turn was seen after the Enter retry.
    Unconfirmed,
}

/// Which alert command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// `--on-blocked`: the session has been blocked for `--blocked-after`.
    Blocked,
    /// `--on-idle`: the session has been idle for `--idle-after`.
    Idle,
}

/// Something the controller did or decided. One JSON object per event in `--events`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// `start` ran (T1/T5).
    Started,
    /// `start` was refused: already running (T3) or disabled (T2).
    StartIgnored {
        /// `already_running`.
        why: &'static str,
    },
    /// `stop` ran (T4).
    Stopped,
    /// Automation paused: no timers, no typing.
    Paused,
    /// Automation resumed.
    Resumed,
    /// The state changed.
    StateChanged {
        /// The previous state.
        from: State,
        /// The new state.
        to: State,
    },
    /// A timer was started explicitly (restarts by output are not reported).
    TimerStarted {
        /// The timer.
        timer: TimerName,
        /// Its duration.
        duration_ms: u64,
    },
    /// A timer was cancelled.
    TimerCancelled {
        /// The timer.
        timer: TimerName,
        /// Why (`working detected`, `prompt detected`, …).
        reason: &'static str,
    },
    /// A timer fired.
    TimerFired {
        /// The timer.
        timer: TimerName,
    },
    /// A completion message started idle confirmation (T6) or refreshed it (T9).
    CompletionDetected,
    /// Working output cancelled idle confirmation or a check (T7, T21).
    WorkingDetected {
        /// The state it was seen in.
        state: State,
    },
    /// Substantial output cancelled idle confirmation or a check (T8, T22).
    SubstantialOutput {
        /// The state it was seen in.
        state: State,
    },
    /// Completion-confirm fired with recent output and restarted (T11, TC-002).
    ConfirmationReset,
    /// The no-output fallback fired (T17).
    NoOutputFallback {
        /// The silence, in milliseconds.
        silence_ms: u64,
    },
    /// Idle was confirmed and the gate chain starts (`Idle confirmed via`).
    IdleConfirmed {
        /// The path: `completion + silence`, `ai-check: idle`, `stop hook (confirmed)`, …
        via: &'static str,
    },
    /// Idle confirmation was rejected because the session works (gate 1).
    IdleRejected,
    /// The gate chain refused a cycle, or the session could not be typed into.
    Blocked {
        /// Why.
        reason: BlockReason,
        /// Details for humans (`2 teammate(s) still working`, the blocked kind, …).
        details: String,
    },
    /// An AI idle check started (T16).
    IdleCheckStarted {
        /// The check id.
        id: u64,
        /// What triggered it (`pre-filter`, `completion + silence`, `no-output fallback`).
        reason: &'static str,
    },
    /// An AI idle check was not started.
    IdleCheckSkipped {
        /// Why.
        skip: CheckSkip,
    },
    /// An AI idle check answered (T18/T19).
    IdleCheckCompleted {
        /// The check id.
        id: u64,
        /// The verdict.
        verdict: IdleAnswer,
        /// The reasoning.
        reasoning: String,
    },
    /// An AI idle check failed or timed out (T20).
    IdleCheckFailed {
        /// The check id.
        id: u64,
        /// Why.
        message: String,
    },
    /// A check was cancelled (working or substantial output, a hook, stop).
    CheckCancelled {
        /// Which checker.
        checker: Checker,
        /// The check id.
        id: u64,
        /// Why.
        reason: &'static str,
    },
    /// A check result arrived too late and was ignored (T23, APC-005).
    CheckResultIgnored {
        /// Which checker.
        checker: Checker,
        /// The check id.
        id: u64,
        /// Why.
        stale: Stale,
        /// The state when it arrived.
        state: State,
    },
    /// A checker's cooldown started or ended (`aiCheckCooldown`).
    CheckerCooldown {
        /// Which checker.
        checker: Checker,
        /// `true` when it starts.
        active: bool,
        /// Its length when it starts.
        duration_ms: Option<u64>,
    },
    /// A checker was disabled (3 consecutive errors, or by configuration).
    CheckerDisabled {
        /// Which checker.
        checker: Checker,
        /// Why.
        reason: String,
    },
    /// A checker was re-enabled by configuration.
    CheckerEnabled {
        /// Which checker.
        checker: Checker,
    },
    /// An AI plan check started.
    PlanCheckStarted {
        /// The check id.
        id: u64,
    },
    /// An AI plan check answered.
    PlanCheckCompleted {
        /// The check id.
        id: u64,
        /// The verdict.
        verdict: PlanAnswer,
        /// The reasoning.
        reasoning: String,
    },
    /// An AI plan check failed or timed out.
    PlanCheckFailed {
        /// The check id.
        id: u64,
        /// Why.
        message: String,
    },
    /// PLAN_MODE arrived while the state was no longer `watching` (APC-006).
    PlanAcceptRefused {
        /// The state.
        state: State,
    },
    /// The auto-accept timer fired but no Enter was pressed.
    AutoAcceptSkipped {
        /// Why.
        skip: AutoAcceptSkip,
    },
    /// Enter was pressed on a plan menu (or would have been, in a dry run).
    AutoAcceptSent {
        /// `true` in a dry run: nothing was typed.
        dry_run: bool,
    },
    /// A cycle started (T29).
    CycleStarted {
        /// Its number, from 1.
        cycle: u32,
    },
    /// A cycle completed (T43).
    CycleCompleted {
        /// Its number.
        cycle: u32,
    },
    /// A cycle was abandoned (the user typed, the session did not react, stuck recovery).
    CycleAborted {
        /// Its number.
        cycle: u32,
        /// Why.
        reason: &'static str,
    },
    /// A step's text was typed into an empty input box (as a bracketed paste where the
    /// agent asked for one); Enter follows as a separate write.
    StepTyped {
        /// The step.
        step: Step,
        /// What was typed.
        input: String,
        /// `true` in a dry run: nothing was typed.
        dry_run: bool,
    },
    /// A step was typed (text, then a separate Enter), or would have been in a dry run.
    StepSent {
        /// The step.
        step: Step,
        /// What was typed (`↵` for a bare Enter).
        input: String,
        /// `true` in a dry run: nothing was typed.
        dry_run: bool,
    },
    /// A step completed.
    StepCompleted {
        /// The step.
        step: Step,
        /// How (`silence`, `prompt detected`, `clear fallback`, `work started`, …).
        via: &'static str,
    },
    /// A step was skipped (`/clear` with a low token count).
    StepSkipped {
        /// The step.
        step: Step,
        /// Why.
        reason: &'static str,
    },
    /// A step was not typed yet because the session is not safe to type into.
    StepDeferred {
        /// The step.
        step: Step,
        /// Why (`session working`, `session blocked`, `human present`).
        reason: &'static str,
    },
    /// No new turn started after an Enter; it is pressed again.
    StepRetried {
        /// The step.
        step: Step,
        /// The retry number, from 1.
        attempt: u32,
    },
    /// A new turn visibly started after an Enter: the delivery is confirmed.
    DeliveryConfirmed {
        /// The step (or `send`).
        step: Step,
        /// The evidence: `working` (the agent works) or `echo` (the text left the input box
        /// and shows in the transcript).
        via: &'static str,
    },
    /// A keystroke the machine decided on was not sent: the verdict taken just before it
    /// did not allow it (text only into an idle session's empty input, Enter only onto the
    /// text just typed or an idle input, a bare Enter only onto a plan menu). What was being
    /// delivered is abandoned.
    KeysWithheld {
        /// The step (or `send`).
        step: Step,
        /// `text` or `enter`.
        keys: &'static str,
        /// The state the verdict said.
        state: SessionState,
        /// What a blocked session waits for.
        blocked: Option<BlockedKind>,
        /// The rule or signal that decided the verdict.
        rule: String,
    },
    /// Enter after the typed text waits: the verdict taken just before it says the screen
    /// has not settled (output a moment ago, a busy child process, a screen not judged).
    /// Enter is pressed on a later fresh verdict that allows it, within `verify_timeout`;
    /// otherwise the delivery is unconfirmed. Reported once per delivery.
    EnterHeld {
        /// The step (or `send`).
        step: Step,
        /// The state the verdict said.
        state: SessionState,
        /// The rule or signal that decided the verdict.
        rule: String,
    },
    /// No new turn started after the Enter and its retry: the text may sit unsubmitted in
    /// the input box. A cycle pauses.
    DeliveryUnconfirmed {
        /// The step (or `send`).
        step: Step,
        /// What was typed.
        input: String,
    },
    /// Text arrived through the controller (`hyoka send`).
    SendRequested {
        /// The request's id.
        id: u64,
        /// `true` when it waits for the session to be idle instead of being refused.
        queue: bool,
    },
    /// A send was refused; nothing was typed.
    SendRefused {
        /// The request's id.
        id: u64,
        /// Why.
        reason: Refusal,
    },
    /// A queued send waits for the session.
    SendQueued {
        /// The request's id.
        id: u64,
        /// Why it cannot go now.
        reason: Refusal,
    },
    /// A send ended.
    SendDone {
        /// The request's id.
        id: u64,
        /// How.
        #[serde(flatten)]
        outcome: SendOutcome,
    },
    /// The detector's verdict changed (state or blocked kind), with the evidence that
    /// decided it.
    VerdictChanged {
        /// The new state.
        state: SessionState,
        /// What a blocked session waits for.
        blocked: Option<BlockedKind>,
        /// The rule or signal that decided (`claude-code/permission-prompt`, `silence`, …).
        rule: String,
        /// What it saw (the matched line, …).
        detail: String,
    },
    /// An alert command started.
    AlertStarted {
        /// Which alert.
        alert: AlertKind,
        /// What the session waits for (`on-blocked`), or `null`.
        blocked: Option<BlockedKind>,
    },
    /// An alert command ended.
    AlertFinished {
        /// Which alert.
        alert: AlertKind,
        /// Its exit code, when it exited normally.
        code: Option<i32>,
        /// `true` when it was stopped for running too long.
        timed_out: bool,
        /// Why it could not run, if it could not.
        error: Option<String>,
    },
    /// The user detached: the session keeps running, supervised by nobody.
    Detached,
    /// A hook arrived.
    HookReceived {
        /// The hook.
        hook: HookEvent,
        /// `false` when the state ignores it (T28).
        accepted: bool,
    },
    /// A state has lasted `stuck_warning` (once per state entry).
    StuckWarning {
        /// The state.
        state: State,
        /// How long, in milliseconds.
        duration_ms: u64,
    },
    /// A stuck state is being recovered.
    StuckRecovery {
        /// The state.
        state: State,
        /// How long it lasted, in milliseconds.
        duration_ms: u64,
        /// The attempt, from 1.
        attempt: u32,
    },
    /// A person is at the session: automation pauses for `human_lock` after they leave.
    HumanPresent {
        /// How long automation stays paused, in milliseconds.
        lock_ms: u64,
        /// `typed` (keys through the mirror) or `attached` (another tmux client).
        via: &'static str,
    },
    /// The human-presence lock ran out.
    HumanLockReleased,
    /// `max_cycles` cycles completed: the controller stops the session.
    BudgetExhausted {
        /// Cycles completed.
        cycles: u32,
    },
    /// The session's process exited.
    SessionExited {
        /// Its exit code, when it exited normally.
        code: Option<i32>,
    },
}
