//! The sans-IO respawn state machine: inputs and the current time in, actions out.
//!
//! [`Machine::handle`] takes one [`Input`] and the time it happened and returns the
//! [`Action`]s to perform; [`Machine::next_deadline`] says when the machine next needs a
//! [`Input::Tick`]. Nothing here reads a clock, sleeps, spawns or prints. The transition
//! numbers (T1–T47) in the comments and docs are those of `respawn-reference.md` §1.3.

mod timers;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    BlockedKind, CheckError, CheckReply, CheckTicket, CheckVerdict, CheckerEvent, CheckerMachine,
    CheckerStatus, ChunkSignals, Finish, HookEvent, IdleAnswer, PlanAnswer, Refusal, SessionState,
    Verdict,
};

use crate::config::RespawnConfig;
use crate::event::{
    AutoAcceptSkip, BlockReason, CheckSkip, Checker, Event, Stale, State, Step, TimerName,
};
use crate::gate::{Gate, GateContext};

use self::timers::{Timer, Timers};

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
    /// The result of the AI idle check started by [`Action::StartIdleCheck`].
    IdleCheckDone {
        /// The check id.
        id: u64,
        /// What the checker returned.
        result: Result<CheckReply<IdleAnswer>, CheckError>,
    },
    /// The result of the AI plan check started by [`Action::StartPlanCheck`].
    PlanCheckDone {
        /// The check id.
        id: u64,
        /// What the checker returned.
        result: Result<CheckReply<PlanAnswer>, CheckError>,
    },
    /// The user typed into the session (human-presence lock).
    UserTyped,
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
    /// Run an AI idle check on the last `max_context` characters of stripped output and
    /// report it with [`Input::IdleCheckDone`]. The machine enforces the time limit.
    StartIdleCheck {
        /// The check id.
        id: u64,
        /// How much output to show the checker.
        max_context: usize,
    },
    /// Cancel a running idle check; its result, if any, will be ignored.
    CancelIdleCheck {
        /// The check id.
        id: u64,
    },
    /// Run an AI plan check and report it with [`Input::PlanCheckDone`].
    StartPlanCheck {
        /// The check id.
        id: u64,
        /// How much output to show the checker.
        max_context: usize,
    },
    /// Cancel a running plan check.
    CancelPlanCheck {
        /// The check id.
        id: u64,
    },
    /// Forget the output context kept for AI checks (Codeman clears its buffer at every
    /// step send and at the end of a cycle).
    ResetContext,
    /// The cycle budget is spent: stop the session. The machine is already stopped.
    StopSession,
    /// Report an event.
    Emit(Event),
}

/// A timer as [`Machine::active_timers`] reports it (Codeman's `getActiveTimers`).
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The text is typed; Enter follows after `enter_delay`.
    TextTyped,
    /// Enter is pressed; the session must react within `verify_timeout`.
    EnterPressed,
}

#[derive(Debug, Clone)]
struct Pending {
    step: Step,
    text: String,
    phase: Phase,
    retries: u32,
}

/// How many due timers one call may fire, a guard against zero-length timers re-arming
/// each other forever.
const MAX_FIRES_PER_CALL: usize = 256;

/// The respawn controller as a pure state machine (Codeman's 13 states, with hyoka's
/// safety rules). See the crate docs for the theory of operation and the decisions on
/// Codeman's quirks.
pub struct Machine {
    config: RespawnConfig,
    state: State,
    state_entered_at: Option<Instant>,
    stuck_warned: bool,
    stuck_recoveries: u32,
    paused: bool,
    timers: Timers,
    last_output: Option<Instant>,
    last_working: Option<Instant>,
    last_token_change: Option<Instant>,
    tokens: Option<u64>,
    completion_at: Option<Instant>,
    has_received_output: bool,
    /// Why no cycle may start until the session draws something (again).
    awaiting_output: Option<BlockReason>,
    working_detected: bool,
    prompt_detected: bool,
    elicitation: bool,
    stop_hook_at: Option<Instant>,
    stop_hook_contradicted: bool,
    idle_prompt_received: bool,
    idle_checker: CheckerMachine<IdleAnswer>,
    plan_checker: CheckerMachine<PlanAnswer>,
    idle_check: Option<CheckTicket>,
    plan_check: Option<CheckTicket>,
    deferred_idle_check: Option<&'static str>,
    cycles: u32,
    cycles_completed: u32,
    cycle_starts: VecDeque<Instant>,
    pending: Option<Pending>,
    deferred_reported: bool,
    verdict: Verdict,
    human_lock_until: Option<Instant>,
    gates: Vec<Box<dyn Gate>>,
    out: Vec<Action>,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("state", &self.state)
            .field("paused", &self.paused)
            .field("cycles", &self.cycles)
            .field("timers", &self.timers)
            .field("gates", &self.gates.len())
            .finish_non_exhaustive()
    }
}

impl Machine {
    /// A stopped machine with `config` (normalized as Codeman's constructor does).
    pub fn new(config: RespawnConfig) -> Self {
        let config = config.normalized();
        Self {
            idle_checker: new_checker(config.idle_check.enabled, config.idle_check.timing),
            plan_checker: new_checker(config.plan_check.enabled, config.plan_check.timing),
            config,
            state: State::Stopped,
            state_entered_at: None,
            stuck_warned: false,
            stuck_recoveries: 0,
            paused: false,
            timers: Timers::default(),
            last_output: None,
            last_working: None,
            last_token_change: None,
            tokens: None,
            completion_at: None,
            has_received_output: false,
            awaiting_output: None,
            working_detected: false,
            prompt_detected: false,
            elicitation: false,
            stop_hook_at: None,
            stop_hook_contradicted: false,
            idle_prompt_received: false,
            idle_check: None,
            plan_check: None,
            deferred_idle_check: None,
            cycles: 0,
            cycles_completed: 0,
            cycle_starts: VecDeque::new(),
            pending: None,
            deferred_reported: false,
            verdict: Verdict::default(),
            human_lock_until: None,
            gates: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Adds a gate at the end of the chain (after the built-in checks).
    pub fn add_gate(&mut self, gate: Box<dyn Gate>) {
        self.gates.push(gate);
    }

    /// The configuration in effect.
    pub fn config(&self) -> &RespawnConfig {
        &self.config
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Cycles started so far (Codeman's `currentCycle`).
    pub fn cycles(&self) -> u32 {
        self.cycles
    }

    /// `true` unless stopped.
    pub fn is_running(&self) -> bool {
        self.state != State::Stopped
    }

    /// `true` while paused.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// The verdict the machine decides with.
    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }

    /// The earliest time at which the machine needs a [`Input::Tick`], if any. Computed
    /// from a fixed table of deadlines; output never moves an OS timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.earliest().map(|(_, at)| at)
    }

    /// The armed timers at `now` (Codeman's `getActiveTimers`).
    pub fn active_timers(&self, now: Instant) -> Vec<TimerInfo> {
        self.timers
            .armed()
            .map(|(name, timer)| TimerInfo {
                name,
                remaining: timer.deadline().saturating_duration_since(now),
                total: timer.duration,
            })
            .collect()
    }

    /// A status snapshot at `now`.
    pub fn status(&mut self, now: Instant) -> Status {
        let idle_check_usable = !matches!(
            self.idle_checker.status(now),
            CheckerStatus::Disabled { .. }
        );
        Status {
            state: self.state,
            cycles: self.cycles,
            paused: self.paused,
            prompt_detected: self.prompt_detected,
            working_detected: self.working_detected,
            elicitation: self.elicitation,
            stop_hook_pending: self.stop_hook_at.is_some(),
            idle_check_errors: self.idle_checker.consecutive_errors(),
            idle_check_usable,
            tokens: self.tokens,
            silence: self.last_output.map(|t| now.saturating_duration_since(t)),
            human_lock: self
                .human_lock_until
                .map(|t| t.saturating_duration_since(now))
                .filter(|d| !d.is_zero()),
        }
    }

    /// Handles one input at `now` and returns what to do. Timers due at or before `now`
    /// fire first, each at its own deadline, so a late call decides exactly as a punctual
    /// one would have.
    pub fn handle(&mut self, input: Input, now: Instant) -> Vec<Action> {
        if let Input::Verdict(verdict) = input {
            self.verdict = verdict;
            self.fire_due(now);
            return std::mem::take(&mut self.out);
        }
        self.fire_due(now);
        match input {
            Input::Start => self.start(now),
            Input::Stop => self.stop(),
            Input::Pause => self.pause(),
            Input::Resume => self.resume(now),
            Input::Output(signals) => self.output(signals, now),
            Input::Hook(hook) => self.hook(hook, now),
            Input::Tick | Input::Verdict(_) => {}
            Input::IdleCheckDone { id, result } => self.idle_check_done(id, result, now),
            Input::PlanCheckDone { id, result } => self.plan_check_done(id, result, now),
            Input::UserTyped => self.user_input(now),
            Input::SessionExited { code } => {
                self.emit(Event::SessionExited { code });
                self.stop();
            }
            Input::UpdateConfig(config) => self.update_config(*config, now),
        }
        std::mem::take(&mut self.out)
    }

    // ----- plumbing -------------------------------------------------------------------

    fn emit(&mut self, event: Event) {
        self.out.push(Action::Emit(event));
    }

    fn set_state(&mut self, to: State, now: Instant) {
        let from = self.state;
        if from == to {
            return;
        }
        self.state = to;
        self.state_entered_at = Some(now);
        self.stuck_warned = false;
        self.deferred_reported = false;
        if to == State::Watching && from != State::Stopped {
            self.stuck_recoveries = 0;
        }
        self.emit(Event::StateChanged { from, to });
        // Watching is the resting state: long stays there are normal (§5d 113).
        if self.config.stuck_detection && !matches!(to, State::Stopped | State::Watching) {
            self.timers.set(
                TimerName::StuckState,
                Timer {
                    started_at: now,
                    duration: self.config.stuck_warning,
                },
            );
        } else {
            self.timers.take(TimerName::StuckState);
        }
    }

    /// Timers that belong to the machine as a whole rather than to a state: they survive
    /// `clear_timers` and keep running while paused.
    fn is_global(name: TimerName) -> bool {
        matches!(
            name,
            TimerName::IdleCheckTimeout
                | TimerName::PlanCheckTimeout
                | TimerName::IdleCheckCooldown
                | TimerName::PlanCheckCooldown
                | TimerName::HumanLock
                | TimerName::CycleRate
        )
    }

    /// Starts `name` explicitly (reported). No-op for state timers while paused.
    fn arm(&mut self, name: TimerName, duration: Duration, now: Instant) {
        if self.paused && !Self::is_global(name) {
            return;
        }
        self.timers.set(
            name,
            Timer {
                started_at: now,
                duration,
            },
        );
        self.emit(Event::TimerStarted {
            timer: name,
            duration_ms: millis(duration),
        });
    }

    fn cancel(&mut self, name: TimerName, reason: &'static str) {
        if self.timers.take(name).is_some() {
            self.emit(Event::TimerCancelled {
                timer: name,
                reason,
            });
        }
    }

    /// Codeman's `clearTimers()`: every state timer goes, silently.
    fn clear_timers(&mut self) {
        for name in TimerName::ALL {
            if !Self::is_global(name) && name != TimerName::StuckState {
                self.timers.take(name);
            }
        }
    }

    /// Restarts the detection timers: no-output, pre-filter (AI on) and, when asked,
    /// auto-accept.
    fn restart_detection(&mut self, now: Instant, auto_accept: bool) {
        self.arm(
            TimerName::NoOutputFallback,
            self.config.no_output_timeout,
            now,
        );
        if self.config.idle_check.enabled {
            self.arm(TimerName::PreFilter, self.config.completion_confirm, now);
        }
        if auto_accept && self.config.auto_accept {
            self.arm(TimerName::AutoAccept, self.config.auto_accept_delay, now);
        }
    }

    fn silence(&self, now: Instant) -> Duration {
        self.last_output
            .map_or(Duration::MAX, |t| now.saturating_duration_since(t))
    }

    fn reset_hooks(&mut self) {
        self.stop_hook_at = None;
        self.stop_hook_contradicted = false;
        self.idle_prompt_received = false;
    }

    fn human_locked(&self, now: Instant) -> bool {
        self.human_lock_until.is_some_and(|t| t > now)
    }

    fn fire_due(&mut self, now: Instant) {
        for _ in 0..MAX_FIRES_PER_CALL {
            let Some((name, at)) = self.timers.earliest() else {
                return;
            };
            if at > now {
                return;
            }
            self.timers.take(name);
            if name != TimerName::StuckState {
                self.emit(Event::TimerFired { timer: name });
            }
            self.fire(name, at);
        }
    }

    fn fire(&mut self, name: TimerName, now: Instant) {
        match name {
            TimerName::NoOutputFallback => self.no_output_fallback(now),
            TimerName::PreFilter => self.pre_filter(now),
            TimerName::AutoAccept => self.try_auto_accept(now),
            TimerName::CompletionConfirm => self.completion_confirm_fired(now),
            TimerName::HookConfirm => self.hook_confirm_fired(now),
            TimerName::StepDelay => self.step_delay_fired(now),
            TimerName::EnterDelay => self.press_enter(now),
            TimerName::Verify => self.verify_fired(now),
            TimerName::StepConfirm => self.step_confirm_fired(now),
            TimerName::ClearFallback => {
                if self.state == State::WaitingClear {
                    self.emit(Event::StepCompleted {
                        step: Step::Clear,
                        via: "clear fallback",
                    });
                    self.after_clear(now);
                }
            }
            TimerName::InitMonitor => {
                if self.state == State::MonitoringInit && !self.working_detected {
                    self.init_monitor_done(now);
                }
            }
            TimerName::StuckState => self.stuck_fired(now),
            TimerName::HumanLock => {
                self.human_lock_until = None;
                self.emit(Event::HumanLockReleased);
                if self.state == State::Watching {
                    self.restart_detection(now, true);
                }
            }
            TimerName::CycleRate => {
                if self.state == State::Watching {
                    self.restart_detection(now, false);
                }
            }
            TimerName::IdleCheckCooldown | TimerName::IdleCheckTimeout => {
                self.idle_checker.poll(now);
                self.idle_checker_events(now);
            }
            TimerName::PlanCheckCooldown | TimerName::PlanCheckTimeout => {
                self.plan_checker.poll(now);
                self.plan_checker_events(now);
            }
        }
    }

    // ----- lifecycle (T1–T5, T45–T47) -------------------------------------------------

    fn start(&mut self, now: Instant) {
        if self.state != State::Stopped {
            self.emit(Event::StartIgnored {
                why: "already_running",
            });
            return;
        }
        if !self.config.enabled {
            self.emit(Event::StartIgnored { why: "disabled" });
            return;
        }
        self.paused = false;
        self.last_output = Some(now);
        self.last_working = Some(now);
        self.last_token_change = Some(now);
        self.completion_at = None;
        self.has_received_output = false;
        self.awaiting_output = Some(BlockReason::NoOutputYet);
        self.working_detected = false;
        self.prompt_detected = false;
        self.reset_hooks();
        self.idle_checker.reset();
        self.plan_checker.reset();
        self.pending = None;
        self.stuck_recoveries = 0;
        self.set_state(State::Watching, now);
        self.emit(Event::Started);
        self.restart_detection(now, true);
    }

    fn stop(&mut self) {
        if self.state == State::Stopped {
            return;
        }
        self.cancel_idle_check("stopped");
        self.cancel_plan_check("stopped");
        self.deferred_idle_check = None;
        self.clear_timers();
        for name in TimerName::ALL {
            self.timers.take(name);
        }
        self.pending = None;
        self.paused = false;
        let from = self.state;
        self.state = State::Stopped;
        self.emit(Event::StateChanged {
            from,
            to: State::Stopped,
        });
        self.emit(Event::Stopped);
    }

    /// A real pause (§5d 109): checks are cancelled, state timers stop, output is observed
    /// but moves nothing, and nothing is typed until [`Input::Resume`].
    fn pause(&mut self) {
        if self.state == State::Stopped || self.paused {
            return;
        }
        self.cancel_idle_check("paused");
        self.cancel_plan_check("paused");
        self.deferred_idle_check = None;
        self.clear_timers();
        self.timers.take(TimerName::StuckState);
        self.paused = true;
        self.emit(Event::Paused);
    }

    /// Resume re-arms the timers of the current state from `now`. Unlike Codeman's T46 it
    /// never confirms idle directly (that bypassed the gate chain, §5b 78), and unlike T47
    /// a paused step is still sent (STS-010).
    fn resume(&mut self, now: Instant) {
        if !self.paused {
            return;
        }
        self.paused = false;
        self.state_entered_at = Some(now);
        self.stuck_warned = false;
        self.emit(Event::Resumed);
        if self.config.stuck_detection && !matches!(self.state, State::Stopped | State::Watching) {
            self.timers.set(
                TimerName::StuckState,
                Timer {
                    started_at: now,
                    duration: self.config.stuck_warning,
                },
            );
        }
        match self.state {
            State::Stopped => {}
            State::Watching => self.restart_detection(now, true),
            State::ConfirmingIdle => {
                self.arm(
                    TimerName::CompletionConfirm,
                    self.config.completion_confirm,
                    now,
                );
                self.restart_detection(now, false);
            }
            State::AiChecking => {
                // The check was cancelled by the pause.
                self.set_state(State::Watching, now);
                self.restart_detection(now, true);
            }
            State::SendingUpdate
            | State::SendingClear
            | State::SendingInit
            | State::SendingKickstart => {
                if self
                    .pending
                    .as_ref()
                    .is_some_and(|p| p.phase == Phase::TextTyped)
                {
                    self.arm(TimerName::EnterDelay, self.config.enter_delay, now);
                } else {
                    self.arm(TimerName::StepDelay, self.config.inter_step_delay, now);
                }
            }
            State::WaitingUpdate | State::WaitingInit | State::WaitingKickstart => {
                self.arm(TimerName::StepConfirm, self.config.step_confirm(), now);
            }
            State::WaitingClear => {
                self.arm(TimerName::ClearFallback, self.config.clear_fallback, now);
            }
            State::MonitoringInit => {
                self.arm(TimerName::InitMonitor, self.config.init_monitor, now);
            }
        }
    }

    /// Codeman's `updateConfig`. Turning a check off cancels a running one (hyoka: Codeman
    /// lets it finish and acts on it, CO-003) and idle is then confirmed without it;
    /// turning it on re-enables a checker disabled by errors (AIC-010). New checker timings
    /// apply from the next check.
    fn update_config(&mut self, config: RespawnConfig, now: Instant) {
        let config = config.normalized();
        let (old_idle, new_idle) = (&self.config.idle_check, &config.idle_check);
        let (idle_off, idle_on) = (old_idle.enabled && !new_idle.enabled, new_idle.enabled);
        let idle_timing = (old_idle.timing != new_idle.timing).then_some(new_idle.timing);
        let (old_plan, new_plan) = (&self.config.plan_check, &config.plan_check);
        let (plan_off, plan_on) = (old_plan.enabled && !new_plan.enabled, new_plan.enabled);
        let plan_timing = (old_plan.timing != new_plan.timing).then_some(new_plan.timing);
        self.config = config;
        if idle_off {
            self.cancel_idle_check("disabled by config");
            self.idle_checker.disable("Disabled by config");
            if self.state == State::AiChecking {
                self.back_to_watching(now, false);
            }
        } else if idle_on && checker_disabled(&mut self.idle_checker, now) {
            self.idle_checker.enable();
            self.emit(Event::CheckerEnabled {
                checker: Checker::Idle,
            });
        }
        if plan_off {
            self.cancel_plan_check("disabled by config");
            self.plan_checker.disable("Disabled by config");
        } else if plan_on && checker_disabled(&mut self.plan_checker, now) {
            self.plan_checker.enable();
            self.emit(Event::CheckerEnabled {
                checker: Checker::Plan,
            });
        }
        if let Some(timing) = idle_timing.filter(|_| self.idle_check.is_none()) {
            self.idle_checker = replace_checker(&mut self.idle_checker, timing, now);
        }
        if let Some(timing) = plan_timing.filter(|_| self.plan_check.is_none()) {
            self.plan_checker = replace_checker(&mut self.plan_checker, timing, now);
        }
        self.idle_checker_events(now);
        self.plan_checker_events(now);
    }

    // ----- output (§3.1) --------------------------------------------------------------

    fn output(&mut self, signals: ChunkSignals, now: Instant) {
        if self.state == State::Stopped {
            return;
        }
        self.last_output = Some(now);
        self.has_received_output = true;
        self.awaiting_output = None;
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.phase == Phase::EnterPressed)
        {
            // The session reacted to the Enter.
            self.pending = None;
            self.timers.take(TimerName::Verify);
        }
        if let Some(tokens) = signals.tokens
            && self.tokens != Some(tokens)
        {
            self.tokens = Some(tokens);
            self.last_token_change = Some(now);
        }
        if signals.working {
            self.last_working = Some(now);
        }
        if self.stop_hook_at.is_some()
            && signals.substantial
            && !signals.prompt
            && !signals.completion
        {
            self.stop_hook_contradicted = true;
        }
        if self.paused {
            return;
        }
        // Step 2: one store per timer, no event, no OS timer.
        self.rearm_on_output(now);
        // Step 3: output makes a running plan check stale (APC-004).
        self.cancel_plan_check("output during plan check");
        self.deferred_idle_check = None;
        if signals.completion {
            self.completion_chunk(now);
        } else if signals.working {
            self.working_chunk(now);
        } else if signals.substantial
            && matches!(self.state, State::ConfirmingIdle | State::AiChecking)
        {
            self.substantial_chunk(now);
        } else if signals.prompt {
            self.prompt_chunk(now);
        }
    }

    fn rearm_on_output(&mut self, now: Instant) {
        let mut rearm = |name, duration| {
            self.timers.set(
                name,
                Timer {
                    started_at: now,
                    duration,
                },
            );
        };
        rearm(TimerName::NoOutputFallback, self.config.no_output_timeout);
        if self.config.idle_check.enabled {
            rearm(TimerName::PreFilter, self.config.completion_confirm);
        }
        if self.config.auto_accept {
            rearm(TimerName::AutoAccept, self.config.auto_accept_delay);
        }
    }

    /// T6, T9, T31, T35.
    fn completion_chunk(&mut self, now: Instant) {
        self.completion_at = Some(now);
        self.working_detected = false;
        match self.state {
            State::Watching => {
                self.timers.take(TimerName::AutoAccept);
                self.emit(Event::CompletionDetected);
                self.set_state(State::ConfirmingIdle, now);
                self.arm(
                    TimerName::CompletionConfirm,
                    self.config.completion_confirm,
                    now,
                );
            }
            State::ConfirmingIdle => {
                self.timers.take(TimerName::AutoAccept);
                self.emit(Event::CompletionDetected);
            }
            State::WaitingUpdate | State::WaitingInit | State::WaitingKickstart => {
                self.arm(TimerName::StepConfirm, self.config.step_confirm(), now);
            }
            State::WaitingClear => self.clear_done(now),
            _ => {}
        }
    }

    /// §3.1 step 7: T7, T21, T32, T39.
    fn working_chunk(&mut self, now: Instant) {
        self.working_detected = true;
        self.prompt_detected = false;
        self.elicitation = false;
        self.reset_hooks();
        self.cancel(TimerName::HookConfirm, "working patterns detected");
        if self.timers.is_armed(TimerName::CompletionConfirm) {
            self.completion_at = None;
        }
        self.cancel(TimerName::CompletionConfirm, "working detected");
        self.cancel(TimerName::StepConfirm, "working detected");
        match self.state {
            State::ConfirmingIdle => {
                self.completion_at = None;
                self.emit(Event::WorkingDetected { state: self.state });
                self.set_state(State::Watching, now);
            }
            State::AiChecking => {
                self.emit(Event::WorkingDetected { state: self.state });
                self.cancel_idle_check("working patterns detected during AI check");
                self.set_state(State::Watching, now);
            }
            State::MonitoringInit => {
                self.timers.take(TimerName::InitMonitor);
                self.emit(Event::StepCompleted {
                    step: Step::Init,
                    via: "work started",
                });
                self.complete_cycle(now);
            }
            _ => {}
        }
    }

    /// T8, T22.
    fn substantial_chunk(&mut self, now: Instant) {
        let state = self.state;
        self.emit(Event::SubstantialOutput { state });
        if state == State::ConfirmingIdle {
            self.cancel(TimerName::CompletionConfirm, "substantial output");
            self.completion_at = None;
        } else {
            self.cancel_idle_check("substantial output during AI check");
        }
        self.set_state(State::Watching, now);
    }

    /// §3.1 step 9: T31, T35, T40.
    fn prompt_chunk(&mut self, now: Instant) {
        self.prompt_detected = true;
        self.working_detected = false;
        match self.state {
            State::WaitingUpdate | State::WaitingInit | State::WaitingKickstart => {
                self.arm(TimerName::StepConfirm, self.config.step_confirm(), now);
            }
            State::WaitingClear => self.clear_done(now),
            State::MonitoringInit => {
                self.cancel(TimerName::InitMonitor, "prompt detected");
                self.init_monitor_done(now);
            }
            _ => {}
        }
    }

    // ----- idle confirmation (T10–T20, §1.4) ------------------------------------------

    fn completion_confirm_fired(&mut self, now: Instant) {
        if self.state == State::Stopped {
            return;
        }
        if self.silence(now) >= self.config.completion_confirm {
            self.try_start_ai_check("completion + silence", now);
        } else {
            self.emit(Event::ConfirmationReset);
            if self.state == State::ConfirmingIdle {
                self.arm(
                    TimerName::CompletionConfirm,
                    self.config.completion_confirm,
                    now,
                );
            }
        }
    }

    /// T12: silence, no working output for `working_absence`, stable tokens. Does not
    /// re-arm itself when the conditions fail (Codeman).
    fn pre_filter(&mut self, now: Instant) {
        if self.state != State::Watching {
            return;
        }
        let since =
            |t: Option<Instant>| t.map_or(Duration::MAX, |t| now.saturating_duration_since(t));
        if self.silence(now) >= self.config.completion_confirm
            && since(self.last_working) >= self.config.working_absence
            && since(self.last_token_change) >= self.config.completion_confirm
        {
            self.try_start_ai_check("pre-filter", now);
        }
    }

    /// T17.
    fn no_output_fallback(&mut self, now: Instant) {
        if !matches!(self.state, State::Watching | State::ConfirmingIdle) {
            return;
        }
        self.emit(Event::NoOutputFallback {
            silence_ms: millis(self.silence(now)),
        });
        if self.config.idle_check.enabled && !checker_disabled(&mut self.idle_checker, now) {
            self.try_start_ai_check("no-output fallback", now);
        } else {
            self.on_idle_confirmed("no-output fallback (AI check disabled)", now);
        }
    }

    /// T13–T16.
    fn try_start_ai_check(&mut self, reason: &'static str, now: Instant) {
        if !matches!(self.state, State::Watching | State::ConfirmingIdle) {
            return;
        }
        if self.verdict.state == SessionState::Working {
            // T13, but without Codeman's dead end (§5d 110): back to watching with the
            // detection timers armed, so the session is judged again later.
            self.emit(Event::IdleCheckSkipped {
                skip: CheckSkip::SessionWorking,
            });
            self.back_to_watching(now, false);
            return;
        }
        if !self.config.idle_check.enabled || checker_disabled(&mut self.idle_checker, now) {
            self.on_idle_confirmed(
                match reason {
                    "pre-filter" => "pre-filter (AI check disabled)",
                    "completion + silence" => "completion + silence (AI check disabled)",
                    _ => "no-output fallback (AI check disabled)",
                },
                now,
            );
            return;
        }
        if self.plan_check.is_some() {
            // The §4 race fix: the idle check waits for the plan check.
            self.deferred_idle_check = Some(reason);
            self.emit(Event::IdleCheckSkipped {
                skip: CheckSkip::PlanCheckRunning,
            });
            return;
        }
        let ticket = match self.idle_checker.try_start(now) {
            Ok(ticket) => ticket,
            Err(Refusal::OnCooldown { remaining }) => {
                self.emit(Event::IdleCheckSkipped {
                    skip: CheckSkip::Cooldown {
                        remaining_ms: millis(remaining),
                    },
                });
                if self.state == State::ConfirmingIdle {
                    // §5d 110: no dead end in confirming_idle; the cooldown's end re-arms
                    // the pre-filter in watching.
                    self.back_to_watching(now, false);
                }
                self.idle_checker_events(now);
                return;
            }
            Err(_) => {
                self.emit(Event::IdleCheckSkipped {
                    skip: CheckSkip::AlreadyChecking,
                });
                return;
            }
        };
        let id = ticket.id();
        self.idle_check = Some(ticket);
        self.set_state(State::AiChecking, now);
        self.emit(Event::IdleCheckStarted { id, reason });
        self.out.push(Action::StartIdleCheck {
            id,
            max_context: self.config.idle_check.max_context,
        });
        self.idle_checker_events(now);
    }

    fn cancel_idle_check(&mut self, reason: &'static str) {
        if let Some(ticket) = self.idle_check.take() {
            self.idle_checker.cancel();
            self.timers.take(TimerName::IdleCheckTimeout);
            self.out.push(Action::CancelIdleCheck { id: ticket.id() });
            self.emit(Event::CheckCancelled {
                checker: Checker::Idle,
                id: ticket.id(),
                reason,
            });
        }
    }

    fn cancel_plan_check(&mut self, reason: &'static str) {
        if let Some(ticket) = self.plan_check.take() {
            self.plan_checker.cancel();
            self.timers.take(TimerName::PlanCheckTimeout);
            self.out.push(Action::CancelPlanCheck { id: ticket.id() });
            self.emit(Event::CheckCancelled {
                checker: Checker::Plan,
                id: ticket.id(),
                reason,
            });
        }
    }

    /// Reports what the idle checker did (cooldowns, disabling, a timed-out check) and
    /// re-arms the timer of its next deadline.
    fn idle_checker_events(&mut self, now: Instant) {
        for event in self.idle_checker.drain_events() {
            match event {
                CheckerEvent::TimedOut { id } => {
                    if self.idle_check.is_some_and(|t| t.id() == id) {
                        self.idle_check = None;
                        self.out.push(Action::CancelIdleCheck { id });
                        self.emit(Event::IdleCheckFailed {
                            id,
                            message: format!(
                                "AI idle check timed out after {}ms",
                                millis(self.config.idle_check.timing.timeout)
                            ),
                        });
                        if self.state == State::AiChecking {
                            self.back_to_watching(now, false);
                        }
                    }
                }
                CheckerEvent::CooldownEnded => {
                    self.checker_event(Checker::Idle, event, now);
                    // AIC-008: the pre-filter restarts when the cooldown ends in watching.
                    if self.state == State::Watching && self.config.idle_check.enabled {
                        self.arm(TimerName::PreFilter, self.config.completion_confirm, now);
                    }
                }
                event => self.checker_event(Checker::Idle, event, now),
            }
        }
        let deadline = self.idle_checker.next_deadline();
        self.sync_checker_timer(
            deadline,
            self.idle_check.is_some(),
            [TimerName::IdleCheckTimeout, TimerName::IdleCheckCooldown],
            now,
        );
    }

    /// [`Machine::idle_checker_events`] for the plan checker.
    fn plan_checker_events(&mut self, now: Instant) {
        for event in self.plan_checker.drain_events() {
            match event {
                CheckerEvent::TimedOut { id } => {
                    if self.plan_check.is_some_and(|t| t.id() == id) {
                        self.plan_check = None;
                        self.out.push(Action::CancelPlanCheck { id });
                        self.emit(Event::PlanCheckFailed {
                            id,
                            message: format!(
                                "AI plan check timed out after {}ms",
                                millis(self.config.plan_check.timing.timeout)
                            ),
                        });
                        self.run_deferred_idle_check(now);
                    }
                }
                event => self.checker_event(Checker::Plan, event, now),
            }
        }
        let deadline = self.plan_checker.next_deadline();
        self.sync_checker_timer(
            deadline,
            self.plan_check.is_some(),
            [TimerName::PlanCheckTimeout, TimerName::PlanCheckCooldown],
            now,
        );
    }

    fn checker_event(&mut self, checker: Checker, event: CheckerEvent, now: Instant) {
        match event {
            CheckerEvent::CooldownStarted { until } => self.emit(Event::CheckerCooldown {
                checker,
                active: true,
                duration_ms: Some(millis(until.saturating_duration_since(now))),
            }),
            CheckerEvent::CooldownEnded => self.emit(Event::CheckerCooldown {
                checker,
                active: false,
                duration_ms: None,
            }),
            CheckerEvent::Disabled { reason } => {
                self.emit(Event::CheckerDisabled { checker, reason });
            }
            _ => {}
        }
    }

    /// One table slot per checker state: the running check's time limit, or the end of
    /// the cooldown.
    fn sync_checker_timer(
        &mut self,
        deadline: Option<Instant>,
        checking: bool,
        [timeout, cooldown]: [TimerName; 2],
        now: Instant,
    ) {
        self.timers.take(timeout);
        self.timers.take(cooldown);
        if let Some(at) = deadline {
            self.timers.set(
                if checking { timeout } else { cooldown },
                Timer {
                    started_at: now,
                    duration: at.saturating_duration_since(now),
                },
            );
        }
    }

    /// T18–T20, T23.
    fn idle_check_done(
        &mut self,
        id: u64,
        result: Result<CheckReply<IdleAnswer>, CheckError>,
        now: Instant,
    ) {
        let Some(ticket) = self.idle_check.filter(|t| t.id() == id) else {
            self.emit(Event::CheckResultIgnored {
                checker: Checker::Idle,
                id,
                stale: Stale::UnknownId,
                state: self.state,
            });
            return;
        };
        self.idle_check = None;
        let finish = self.idle_checker.finish(now, ticket, result);
        if self.state != State::AiChecking {
            self.idle_checker_events(now);
            self.emit(Event::CheckResultIgnored {
                checker: Checker::Idle,
                id,
                stale: Stale::StateChanged,
                state: self.state,
            });
            return;
        }
        match finish {
            Finish::Verdict(reply) => {
                self.emit(Event::IdleCheckCompleted {
                    id,
                    verdict: reply.verdict,
                    reasoning: reply.reasoning,
                });
                self.idle_checker_events(now);
                if reply.verdict == IdleAnswer::Idle {
                    self.timers.take(TimerName::CompletionConfirm);
                    self.timers.take(TimerName::PreFilter);
                    self.on_idle_confirmed("ai-check: idle", now);
                } else {
                    self.back_to_watching(now, false);
                }
            }
            Finish::Failed { error, .. } => {
                self.emit(Event::IdleCheckFailed { id, message: error });
                self.idle_checker_events(now);
                self.back_to_watching(now, false);
            }
            Finish::Stale => {
                self.idle_checker_events(now);
                self.emit(Event::CheckResultIgnored {
                    checker: Checker::Idle,
                    id,
                    stale: Stale::UnknownId,
                    state: self.state,
                });
                self.back_to_watching(now, false);
            }
        }
    }

    /// Back to watching with no-output and pre-filter (and, when asked, auto-accept)
    /// restarted; completion confirmation dropped.
    fn back_to_watching(&mut self, now: Instant, auto_accept: bool) {
        self.timers.take(TimerName::CompletionConfirm);
        self.completion_at = None;
        self.set_state(State::Watching, now);
        self.restart_detection(now, auto_accept);
    }

    /// The gate chain (§1.4), then the cycle (T29).
    fn on_idle_confirmed(&mut self, via: &'static str, now: Instant) {
        if !self.state.is_detecting() {
            return;
        }
        // Gate 1: the session works (Codeman's `isWorking` veto).
        if self.verdict.state == SessionState::Working {
            self.emit(Event::IdleRejected);
            self.back_to_watching(now, false);
            return;
        }
        self.emit(Event::IdleConfirmed { via });
        if let Some((reason, details)) = self.gate_chain(now) {
            self.emit(Event::Blocked { reason, details });
            // §5d 112: a refusal that can end without any output (a pluggable gate) keeps
            // the detection timers armed; one that ends at a known time (human lock, cycle
            // rate) re-arms them then; the rest (a blocked screen, a silent or unresponsive
            // session) can only end with output, which re-arms them. A plan menu keeps
            // its auto-accept.
            self.timers.take(TimerName::CompletionConfirm);
            self.completion_at = None;
            self.set_state(State::Watching, now);
            if reason == BlockReason::Gate {
                self.restart_detection(now, false);
            } else if self.verdict.blocked == Some(BlockedKind::Plan) && self.config.auto_accept {
                self.arm(TimerName::AutoAccept, self.config.auto_accept_delay, now);
            }
            return;
        }
        self.completion_at = None;
        self.timers.take(TimerName::CompletionConfirm);
        self.start_cycle(now);
    }

    /// hyoka's gates and the pluggable ones, in order; `Some` refuses.
    fn gate_chain(&mut self, now: Instant) -> Option<(BlockReason, String)> {
        if self.verdict.state == SessionState::Blocked {
            let kind = self.verdict.blocked.map_or("unknown", |k| blocked_name(k));
            return Some((
                BlockReason::SessionBlocked,
                format!("the session waits for a human ({kind})"),
            ));
        }
        match self.awaiting_output {
            Some(BlockReason::NoOutputYet) => {
                return Some((
                    BlockReason::NoOutputYet,
                    "the session has not drawn anything yet".to_owned(),
                ));
            }
            Some(reason) => {
                return Some((
                    reason,
                    "the session did not react to the last input; waiting for it to draw"
                        .to_owned(),
                ));
            }
            None => {}
        }
        if let Some(until) = self.human_lock_until.filter(|&t| t > now) {
            return Some((
                BlockReason::HumanPresent,
                format!(
                    "the user typed; automation resumes in {}ms",
                    millis(until - now)
                ),
            ));
        }
        let ctx = GateContext {
            now,
            verdict: &self.verdict,
            cycles: self.cycles,
        };
        for gate in &mut self.gates {
            if let Some(details) = gate.check(&ctx) {
                return Some((BlockReason::Gate, details));
            }
        }
        if let Some(max) = self.config.max_cycles
            && self.cycles_completed >= max
        {
            return Some((BlockReason::MaxCycles, format!("{max} cycle(s) done")));
        }
        if let Some(per_hour) = self.config.max_cycles_per_hour {
            let hour = Duration::from_hours(1);
            while self
                .cycle_starts
                .front()
                .is_some_and(|&t| now.saturating_duration_since(t) >= hour)
            {
                self.cycle_starts.pop_front();
            }
            if self.cycle_starts.len() >= per_hour as usize {
                let oldest = self.cycle_starts.front().copied().unwrap_or(now);
                let free_at = oldest + hour;
                self.timers.set(
                    TimerName::CycleRate,
                    Timer {
                        started_at: now,
                        duration: free_at.saturating_duration_since(now),
                    },
                );
                return Some((
                    BlockReason::CycleRate,
                    format!("{per_hour} cycle(s) in the last hour"),
                ));
            }
        }
        None
    }

    // ----- hooks (T24–T28) -------------------------------------------------------------

    fn hook(&mut self, hook: HookEvent, now: Instant) {
        if self.state == State::Stopped {
            return;
        }
        match hook {
            HookEvent::Stop | HookEvent::IdlePrompt
                if !self.state.is_detecting() || self.paused =>
            {
                self.emit(Event::HookReceived {
                    hook,
                    accepted: false,
                });
            }
            HookEvent::Stop => {
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.stop_hook_at = Some(now);
                self.stop_hook_contradicted = false;
                self.cancel_idle_check("stop hook");
                self.cancel(TimerName::CompletionConfirm, "stop hook");
                self.cancel(TimerName::PreFilter, "stop hook");
                self.arm(TimerName::HookConfirm, self.config.hook_confirm, now);
            }
            HookEvent::IdlePrompt => {
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.idle_prompt_received = true;
                self.cancel_idle_check("idle_prompt hook");
                self.cancel(TimerName::CompletionConfirm, "idle_prompt hook");
                self.cancel(TimerName::PreFilter, "idle_prompt hook");
                self.cancel(TimerName::NoOutputFallback, "idle_prompt hook");
                self.on_idle_confirmed("idle_prompt hook", now);
            }
            HookEvent::ElicitationDialog => {
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.elicitation = true;
                self.cancel(TimerName::AutoAccept, "elicitation dialog");
            }
            HookEvent::PermissionPrompt => {
                // The detector turns this into a blocked(permission) verdict; nothing is
                // ever auto-accepted for it.
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.cancel(TimerName::AutoAccept, "permission prompt");
            }
        }
    }

    /// T25, T26. Only output that contradicts the hook aborts it: a working chunk (which
    /// cancels the timer outright) or substantial output other than a prompt redraw
    /// (§5d 111; Codeman aborts on any byte).
    fn hook_confirm_fired(&mut self, now: Instant) {
        if !self.state.is_detecting() {
            return;
        }
        if self.stop_hook_contradicted {
            self.reset_hooks();
            self.back_to_watching(now, true);
        } else {
            self.on_idle_confirmed("stop hook (confirmed)", now);
        }
    }

    // ----- the cycle (T29–T43) ---------------------------------------------------------

    fn start_cycle(&mut self, now: Instant) {
        self.clear_timers();
        self.cancel_plan_check("cycle started");
        self.cancel_idle_check("cycle started");
        self.cycles += 1;
        self.cycle_starts.push_back(now);
        self.emit(Event::CycleStarted { cycle: self.cycles });
        self.send_step(State::SendingUpdate, now);
    }

    /// Codeman's `sendUpdateDocs`/`sendClear`/`sendInit`/`sendKickstart`: clear the
    /// context and start the step delay.
    fn send_step(&mut self, state: State, now: Instant) {
        self.out.push(Action::ResetContext);
        self.pending = None;
        self.set_state(state, now);
        self.arm(TimerName::StepDelay, self.config.inter_step_delay, now);
    }

    fn step_text(&self, step: Step) -> String {
        match step {
            Step::Update => single_line(&self.config.update_prompt),
            Step::Clear => "/clear".to_owned(),
            Step::Init => "/init".to_owned(),
            Step::Kickstart => single_line(self.config.kickstart_prompt.as_deref().unwrap_or("")),
            Step::AutoAccept => String::new(),
        }
    }

    /// Why typing into the session is not safe now, if it is not.
    fn unsafe_to_type(&self, now: Instant) -> Option<&'static str> {
        if self.human_locked(now) {
            return Some("human present");
        }
        match self.verdict.state {
            SessionState::Working => Some("session working"),
            SessionState::Blocked => Some("session blocked"),
            SessionState::Idle | SessionState::Unknown => None,
        }
    }

    /// T30, T34, T37, T41: type the step's text; Enter follows as a separate write.
    fn step_delay_fired(&mut self, now: Instant) {
        let Some(step) = self.state.step() else {
            return;
        };
        if !matches!(
            self.state,
            State::SendingUpdate
                | State::SendingClear
                | State::SendingInit
                | State::SendingKickstart
        ) {
            return;
        }
        if self.verdict.state == SessionState::Blocked {
            // The session now waits for a human (a plan menu or a permission prompt opened
            // in answer to the last step): the cycle ends here, and in watching a plan menu
            // gets the usual auto-accept while anything else is left to the human.
            let kind = self.verdict.blocked.map_or("unknown", blocked_name);
            self.emit(Event::Blocked {
                reason: BlockReason::SessionBlocked,
                details: format!("the session waits for a human ({kind})"),
            });
            self.emit(Event::CycleAborted {
                cycle: self.cycles,
                reason: "session blocked",
            });
            self.clear_timers();
            let plan = self.verdict.blocked == Some(BlockedKind::Plan);
            self.back_to_watching(now, plan);
            return;
        }
        if let Some(reason) = self.unsafe_to_type(now) {
            if !self.deferred_reported {
                self.deferred_reported = true;
                self.emit(Event::StepDeferred { step, reason });
            }
            self.arm(TimerName::StepDelay, self.config.inter_step_delay, now);
            return;
        }
        let text = self.step_text(step);
        if self.config.dry_run {
            self.emit(Event::StepSent {
                step,
                input: text,
                dry_run: true,
            });
            self.dry_run_step_done(step, now);
            return;
        }
        let enter_now = text.is_empty();
        if !enter_now {
            self.out.push(Action::Type(Keys::Text(text.clone())));
        }
        self.pending = Some(Pending {
            step,
            text,
            phase: Phase::TextTyped,
            retries: 0,
        });
        if enter_now {
            self.press_enter(now);
        } else {
            self.arm(TimerName::EnterDelay, self.config.enter_delay, now);
        }
    }

    /// The second write: Enter, then the step counts as sent.
    fn press_enter(&mut self, now: Instant) {
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        if pending.phase != Phase::TextTyped {
            return;
        }
        pending.phase = Phase::EnterPressed;
        let (step, text) = (pending.step, pending.text.clone());
        self.out.push(Action::Type(Keys::Enter));
        self.emit(Event::StepSent {
            step,
            input: if text.is_empty() {
                "↵".to_owned()
            } else {
                text
            },
            dry_run: false,
        });
        self.arm(TimerName::Verify, self.config.verify_timeout, now);
        self.after_send(step, now);
    }

    fn after_send(&mut self, step: Step, now: Instant) {
        match step {
            Step::Update => {
                self.prompt_detected = false;
                self.working_detected = false;
                self.set_state(State::WaitingUpdate, now);
            }
            Step::Clear => {
                self.prompt_detected = false;
                self.set_state(State::WaitingClear, now);
                self.arm(TimerName::ClearFallback, self.config.clear_fallback, now);
            }
            Step::Init => self.set_state(State::WaitingInit, now),
            Step::Kickstart => self.set_state(State::WaitingKickstart, now),
            Step::AutoAccept => {}
        }
    }

    /// In a dry run nothing reacts to a step, so each step completes as soon as it is
    /// decided and the cycle walks on.
    fn dry_run_step_done(&mut self, step: Step, now: Instant) {
        self.emit(Event::StepCompleted {
            step,
            via: "dry run",
        });
        match step {
            Step::Update => self.after_update(now),
            Step::Clear => self.after_clear(now),
            Step::Init => {
                if self.kickstart_configured() {
                    self.send_step(State::SendingKickstart, now);
                } else {
                    self.complete_cycle(now);
                }
            }
            Step::Kickstart | Step::AutoAccept => self.complete_cycle(now),
        }
    }

    /// The session did not react to Enter in time: retry, or give the step up.
    fn verify_fired(&mut self, now: Instant) {
        let safe = self.unsafe_to_type(now).is_none();
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        if pending.phase != Phase::EnterPressed {
            return;
        }
        let step = pending.step;
        if self.verdict.state == SessionState::Working {
            // It reacted, just quietly.
            self.pending = None;
            return;
        }
        if pending.retries < self.config.verify_retries && safe {
            pending.retries += 1;
            let attempt = pending.retries;
            self.out.push(Action::Type(Keys::Enter));
            self.emit(Event::StepRetried { step, attempt });
            self.arm(TimerName::Verify, self.config.verify_timeout, now);
            return;
        }
        self.pending = None;
        // Nothing more is typed into a session that does not react until it draws again.
        self.awaiting_output = Some(BlockReason::NoReaction);
        self.emit(Event::Blocked {
            reason: BlockReason::NoReaction,
            details: format!("the session did not react to the {} step", step.as_str()),
        });
        if self.state.in_cycle() {
            self.emit(Event::CycleAborted {
                cycle: self.cycles,
                reason: "no reaction",
            });
            self.clear_timers();
            self.back_to_watching(now, true);
        }
    }

    /// T33, T38, T42, and the silence re-arm.
    fn step_confirm_fired(&mut self, now: Instant) {
        if !matches!(
            self.state,
            State::WaitingUpdate | State::WaitingInit | State::WaitingKickstart
        ) {
            return;
        }
        if self.silence(now) < self.config.step_confirm() {
            self.arm(TimerName::StepConfirm, self.config.step_confirm(), now);
            return;
        }
        match self.state {
            State::WaitingUpdate => {
                self.emit(Event::StepCompleted {
                    step: Step::Update,
                    via: "silence",
                });
                self.after_update(now);
            }
            State::WaitingInit => {
                if self.kickstart_configured() {
                    self.out.push(Action::ResetContext);
                    self.working_detected = false;
                    self.set_state(State::MonitoringInit, now);
                    self.arm(TimerName::InitMonitor, self.config.init_monitor, now);
                } else {
                    self.emit(Event::StepCompleted {
                        step: Step::Init,
                        via: "silence",
                    });
                    self.complete_cycle(now);
                }
            }
            _ => {
                self.emit(Event::StepCompleted {
                    step: Step::Kickstart,
                    via: "silence",
                });
                self.complete_cycle(now);
            }
        }
    }

    fn kickstart_configured(&self) -> bool {
        self.config.kickstart_prompt.is_some()
    }

    /// T33's choice: `/clear` (unless skipped), `/init`, or the end of the cycle. Read at
    /// decision time (CC-003).
    fn after_update(&mut self, now: Instant) {
        if self.config.send_clear {
            let skip = self
                .config
                .skip_clear_below_tokens
                .is_some_and(|limit| self.tokens.is_some_and(|t| t > 0 && t < limit));
            if !skip {
                self.send_step(State::SendingClear, now);
                return;
            }
            self.emit(Event::StepSkipped {
                step: Step::Clear,
                reason: "low context",
            });
        }
        self.after_clear(now);
    }

    fn after_clear(&mut self, now: Instant) {
        if self.config.send_init {
            self.send_step(State::SendingInit, now);
        } else {
            self.complete_cycle(now);
        }
    }

    /// T35.
    fn clear_done(&mut self, now: Instant) {
        self.cancel(TimerName::ClearFallback, "prompt detected");
        self.emit(Event::StepCompleted {
            step: Step::Clear,
            via: "prompt detected",
        });
        self.after_clear(now);
    }

    /// T40. If the kickstart was removed meanwhile the cycle ends (Codeman types a bare
    /// Enter, CC-005).
    fn init_monitor_done(&mut self, now: Instant) {
        self.emit(Event::StepCompleted {
            step: Step::Init,
            via: "no work started",
        });
        if self.kickstart_configured() {
            self.send_step(State::SendingKickstart, now);
        } else {
            self.complete_cycle(now);
        }
    }

    /// T43, with the completion flag cleared (§5d 107) and the cycle budget applied.
    fn complete_cycle(&mut self, now: Instant) {
        self.cycles_completed += 1;
        self.emit(Event::CycleCompleted { cycle: self.cycles });
        self.out.push(Action::ResetContext);
        self.clear_timers();
        self.prompt_detected = false;
        self.working_detected = false;
        self.reset_hooks();
        self.completion_at = None;
        if let Some(max) = self.config.max_cycles
            && self.cycles_completed >= max
        {
            self.emit(Event::BudgetExhausted {
                cycles: self.cycles_completed,
            });
            self.stop();
            self.out.push(Action::StopSession);
            return;
        }
        self.set_state(State::Watching, now);
        self.restart_detection(now, true);
    }

    // ----- plan auto-accept (§4) ---------------------------------------------------------

    fn try_auto_accept(&mut self, now: Instant) {
        let skip = if self.state != State::Watching {
            Some(AutoAcceptSkip::NotWatching)
        } else if self.completion_at.is_some() {
            Some(AutoAcceptSkip::CompletionSeen)
        } else if !self.config.auto_accept {
            return;
        } else if !self.has_received_output {
            Some(AutoAcceptSkip::NoNewOutput)
        } else if self.elicitation {
            Some(AutoAcceptSkip::Elicitation)
        } else if self.human_locked(now) {
            Some(AutoAcceptSkip::HumanPresent)
        } else {
            self.plan_menu_skip()
        };
        if let Some(skip) = skip {
            self.emit(Event::AutoAcceptSkipped { skip });
            return;
        }
        if self.config.plan_check.enabled && !checker_disabled(&mut self.plan_checker, now) {
            if self.idle_check.is_some() {
                self.emit(Event::AutoAcceptSkipped {
                    skip: AutoAcceptSkip::IdleCheckRunning,
                });
                return;
            }
            match self.plan_checker.try_start(now) {
                Ok(ticket) => {
                    let id = ticket.id();
                    self.plan_check = Some(ticket);
                    self.emit(Event::PlanCheckStarted { id });
                    self.out.push(Action::StartPlanCheck {
                        id,
                        max_context: self.config.plan_check.max_context,
                    });
                }
                Err(Refusal::OnCooldown { remaining }) => {
                    self.emit(Event::AutoAcceptSkipped {
                        skip: AutoAcceptSkip::PlanCheckCooldown {
                            remaining_ms: millis(remaining),
                        },
                    });
                }
                Err(_) => self.emit(Event::AutoAcceptSkipped {
                    skip: AutoAcceptSkip::PlanCheckInProgress,
                }),
            }
            self.plan_checker_events(now);
            return;
        }
        self.send_auto_accept(now);
    }

    /// Only a plan-approval menu is ever accepted; the detector's verdict decides what is
    /// on screen (it replaces Codeman's regex pre-filter).
    fn plan_menu_skip(&self) -> Option<AutoAcceptSkip> {
        match (self.verdict.state, self.verdict.blocked) {
            (SessionState::Blocked, Some(BlockedKind::Plan)) => None,
            (SessionState::Blocked, Some(kind)) => Some(AutoAcceptSkip::HumanDecision { kind }),
            _ => Some(AutoAcceptSkip::NotPlanMenu),
        }
    }

    fn plan_check_done(
        &mut self,
        id: u64,
        result: Result<CheckReply<PlanAnswer>, CheckError>,
        now: Instant,
    ) {
        let Some(ticket) = self.plan_check.filter(|t| t.id() == id) else {
            self.emit(Event::CheckResultIgnored {
                checker: Checker::Plan,
                id,
                stale: Stale::UnknownId,
                state: self.state,
            });
            return;
        };
        self.plan_check = None;
        let finish = self.plan_checker.finish(now, ticket, result);
        self.plan_checker_events(now);
        if self.last_output.is_some_and(|t| t > ticket.started()) {
            self.emit(Event::CheckResultIgnored {
                checker: Checker::Plan,
                id,
                stale: Stale::OutputArrived,
                state: self.state,
            });
            return;
        }
        match finish {
            Finish::Verdict(reply) if reply.verdict == PlanAnswer::PlanMode => {
                if self.state == State::Watching {
                    self.emit(Event::PlanCheckCompleted {
                        id,
                        verdict: reply.verdict,
                        reasoning: reply.reasoning,
                    });
                    // The screen must still be a plan menu, and the user must not be typing.
                    let skip = if self.human_locked(now) {
                        Some(AutoAcceptSkip::HumanPresent)
                    } else if self.elicitation {
                        Some(AutoAcceptSkip::Elicitation)
                    } else {
                        self.plan_menu_skip()
                    };
                    if let Some(skip) = skip {
                        self.emit(Event::AutoAcceptSkipped { skip });
                    } else {
                        self.deferred_idle_check = None;
                        self.send_auto_accept(now);
                        return;
                    }
                } else {
                    self.emit(Event::PlanAcceptRefused { state: self.state });
                }
            }
            Finish::Verdict(reply) => self.emit(Event::PlanCheckCompleted {
                id,
                verdict: reply.verdict,
                reasoning: reply.reasoning,
            }),
            Finish::Failed { error, .. } => {
                self.emit(Event::PlanCheckFailed { id, message: error });
            }
            Finish::Stale => self.emit(Event::CheckResultIgnored {
                checker: Checker::Plan,
                id,
                stale: Stale::UnknownId,
                state: self.state,
            }),
        }
        self.run_deferred_idle_check(now);
    }

    /// The idle check that waited for the plan check (the §4 race fix) runs now.
    fn run_deferred_idle_check(&mut self, now: Instant) {
        if let Some(reason) = self.deferred_idle_check.take() {
            self.try_start_ai_check(reason, now);
        }
    }

    /// `sendAutoAcceptEnter`: one Enter per silence period.
    fn send_auto_accept(&mut self, now: Instant) {
        self.cancel_idle_check("auto-accept");
        self.cancel(TimerName::CompletionConfirm, "auto-accept");
        self.completion_at = None;
        self.set_state(State::Watching, now);
        self.has_received_output = false;
        let dry_run = self.config.dry_run;
        self.emit(Event::StepSent {
            step: Step::AutoAccept,
            input: "↵".to_owned(),
            dry_run,
        });
        if !dry_run {
            self.out.push(Action::Type(Keys::Enter));
            self.pending = Some(Pending {
                step: Step::AutoAccept,
                text: String::new(),
                phase: Phase::EnterPressed,
                // A second Enter on a menu could confirm something else: never retried.
                retries: self.config.verify_retries,
            });
            self.arm(TimerName::Verify, self.config.verify_timeout, now);
        }
        self.emit(Event::AutoAcceptSent { dry_run });
    }

    // ----- the human, stuck states ----------------------------------------------------

    /// A keystroke from the user: automation pauses for `human_lock`, and a running cycle
    /// or check is abandoned (the user is in charge of the session now).
    fn user_input(&mut self, now: Instant) {
        if self.state == State::Stopped || self.config.human_lock.is_zero() {
            return;
        }
        let was_locked = self.human_locked(now);
        self.human_lock_until = Some(now + self.config.human_lock);
        self.timers.set(
            TimerName::HumanLock,
            Timer {
                started_at: now,
                duration: self.config.human_lock,
            },
        );
        if !was_locked {
            self.emit(Event::HumanPresent {
                lock_ms: millis(self.config.human_lock),
            });
        }
        if self.paused {
            return;
        }
        self.cancel_plan_check("user input");
        self.deferred_idle_check = None;
        if self.state.in_cycle() {
            self.emit(Event::CycleAborted {
                cycle: self.cycles,
                reason: "user input",
            });
            self.pending = None;
            self.clear_timers();
            self.back_to_watching(now, false);
        } else if self.state != State::Watching {
            self.cancel_idle_check("user input");
            self.cancel(TimerName::HookConfirm, "user input");
            self.reset_hooks();
            self.back_to_watching(now, false);
        }
    }

    fn stuck_fired(&mut self, now: Instant) {
        let Some(entered) = self.state_entered_at else {
            return;
        };
        let lasted = now.saturating_duration_since(entered);
        if lasted >= self.config.stuck_recovery {
            if self.stuck_recoveries < self.config.max_stuck_recoveries {
                self.stuck_recoveries += 1;
                self.emit(Event::StuckRecovery {
                    state: self.state,
                    duration_ms: millis(lasted),
                    attempt: self.stuck_recoveries,
                });
                self.stuck_recover(now);
            } else {
                self.emit(Event::Blocked {
                    reason: BlockReason::StuckGaveUp,
                    details: format!(
                        "{} for {}s after {} recoveries: manual intervention needed",
                        self.state,
                        lasted.as_secs(),
                        self.stuck_recoveries
                    ),
                });
            }
            return;
        }
        if !self.stuck_warned {
            self.stuck_warned = true;
            self.emit(Event::StuckWarning {
                state: self.state,
                duration_ms: millis(lasted),
            });
        }
        self.timers.set(
            TimerName::StuckState,
            Timer {
                started_at: entered,
                duration: self.config.stuck_recovery,
            },
        );
    }

    /// §1.6 `handleStuckStateRecovery`, without the forced idle in detection states
    /// (§5d 113).
    fn stuck_recover(&mut self, now: Instant) {
        self.cancel_idle_check("stuck recovery");
        self.cancel_plan_check("stuck recovery");
        self.clear_timers();
        self.completion_at = None;
        self.prompt_detected = false;
        self.working_detected = false;
        self.reset_hooks();
        self.pending = None;
        match self.state {
            State::Stopped | State::Watching => {}
            State::ConfirmingIdle | State::AiChecking => self.back_to_watching(now, true),
            State::WaitingUpdate
            | State::WaitingClear
            | State::WaitingInit
            | State::WaitingKickstart
            | State::MonitoringInit => self.complete_cycle(now),
            State::SendingUpdate
            | State::SendingClear
            | State::SendingInit
            | State::SendingKickstart => {
                self.emit(Event::CycleAborted {
                    cycle: self.cycles,
                    reason: "stuck recovery",
                });
                self.back_to_watching(now, true);
            }
        }
    }
}

/// A checker of `timing`, disabled when the check is off.
fn new_checker<V: CheckVerdict>(
    enabled: bool,
    timing: hyoka_idle_detect::CheckerConfig,
) -> CheckerMachine<V> {
    let mut checker = CheckerMachine::new(timing);
    if !enabled {
        checker.disable("Disabled by config");
        checker.drain_events();
    }
    checker
}

/// `true` when `checker` is disabled (by configuration or by errors).
fn checker_disabled<V: CheckVerdict>(checker: &mut CheckerMachine<V>, now: Instant) -> bool {
    matches!(checker.status(now), CheckerStatus::Disabled { .. })
}

/// A checker with new timings, keeping a disabled state (the cooldown in progress is
/// dropped).
fn replace_checker<V: CheckVerdict>(
    old: &mut CheckerMachine<V>,
    timing: hyoka_idle_detect::CheckerConfig,
    now: Instant,
) -> CheckerMachine<V> {
    let mut checker = CheckerMachine::new(timing);
    if let CheckerStatus::Disabled { reason } = old.status(now) {
        let reason = reason.clone();
        checker.disable(&reason);
        checker.drain_events();
    }
    checker
}

/// Milliseconds, saturating.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn blocked_name(kind: BlockedKind) -> &'static str {
    match kind {
        BlockedKind::Permission => "permission",
        BlockedKind::Question => "question",
        BlockedKind::Plan => "plan",
        BlockedKind::Trust => "trust",
        BlockedKind::Draft => "draft",
    }
}

/// Newlines become single spaces so that a multi-line prompt is typed as words rather
/// than glued lines (§5d 115) and never submits early; trailing whitespace goes.
fn single_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for part in text.split(['\r', '\n']).filter(|p| !p.trim().is_empty()) {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(part.trim_end());
    }
    line
}

#[cfg(test)]
mod tests;
