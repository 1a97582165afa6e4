//! The sans-IO respawn state machine: inputs and the current time in, actions out.
//!
//! [`Machine::handle`] takes one [`Input`] and the time it happened and returns the
//! [`Action`]s to perform; [`Machine::next_deadline`] says when the machine next needs a
//! [`Input::Tick`]. Nothing here reads a clock, sleeps, spawns or prints. The transition
//! numbers (T1–T47) in the comments and docs are those of `docs/respawn.md` §1.3.

mod auto_accept;
mod checks;
mod cycle;
mod delivery;
mod hooks;
mod human;
mod idle;
mod io;
mod output;
mod send;
mod state;
mod timers;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    BlockedKind, CheckerStatus, IdleAnswer, PlanAnswer, SessionState, Verdict,
};

use crate::config::RespawnConfig;
use crate::event::{BlockReason, Checker, Event, Refusal, State, Step, TimerName};
use crate::gate::Gate;

pub use self::io::{Action, Input, Keys, Status, TimerInfo};

use self::checks::CheckSlot;
use self::state::{Delivery, Phase, SendQueue};
use self::timers::{Timer, Timers};

/// What made the machine want an AI idle check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CheckTrigger {
    /// The pre-filter timer found the session silent, without working output, with stable
    /// tokens (T12).
    PreFilter,
    /// A completion message and the silence after it (T10).
    CompletionSilence,
    /// No output at all for `no_output_timeout` (T17).
    NoOutputFallback,
}

impl CheckTrigger {
    /// The name in `idle_check_started` events.
    fn as_str(self) -> &'static str {
        match self {
            Self::PreFilter => "pre-filter",
            Self::CompletionSilence => "completion + silence",
            Self::NoOutputFallback => "no-output fallback",
        }
    }

    /// How idle is confirmed when the AI check is off (the `idle_confirmed` event's `via`).
    fn without_ai(self) -> &'static str {
        match self {
            Self::PreFilter => "pre-filter (AI check disabled)",
            Self::CompletionSilence => "completion + silence (AI check disabled)",
            Self::NoOutputFallback => "no-output fallback (AI check disabled)",
        }
    }
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
    /// The AI idle checker and its check in flight.
    idle: CheckSlot<IdleAnswer>,
    /// The AI plan checker and its check in flight.
    plan: CheckSlot<PlanAnswer>,
    deferred_idle_check: Option<CheckTrigger>,
    cycles: u32,
    cycles_completed: u32,
    cycle_starts: VecDeque<Instant>,
    /// The input being delivered (a step, an auto-accept Enter or a send).
    delivery: Option<Delivery>,
    /// Sends waiting for the session.
    sends: SendQueue,
    /// Idle was confirmed with cycles off; reported once until output arrives.
    idle_reported: bool,
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
            idle: CheckSlot::new(config.idle_check.enabled, config.idle_check.timing),
            plan: CheckSlot::new(config.plan_check.enabled, config.plan_check.timing),
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
            deferred_idle_check: None,
            cycles: 0,
            cycles_completed: 0,
            cycle_starts: VecDeque::new(),
            delivery: None,
            sends: SendQueue::default(),
            idle_reported: false,
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
            self.idle.machine.status(now),
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
            idle_check_errors: self.idle.machine.consecutive_errors(),
            idle_check_usable,
            tokens: self.tokens,
            silence: self.last_output.map(|t| now.saturating_duration_since(t)),
            human_lock: self
                .human_lock_until
                .map(|t| t.saturating_duration_since(now))
                .filter(|d| !d.is_zero()),
            queued_sends: self.sends.waiting.len(),
            delivering: self.delivery.is_some(),
        }
    }

    /// Handles one input at `now` and returns what to do. Timers due at or before `now`
    /// fire first, each at its own deadline, so a late call decides exactly as a punctual
    /// one would have.
    pub fn handle(&mut self, input: Input, now: Instant) -> Vec<Action> {
        if let Input::Verdict(verdict) = input {
            self.verdict = verdict;
            if shows_work(&self.verdict) {
                self.turn_started(now);
            } else if self.verdict.state == SessionState::Idle {
                self.idle_verdict(now);
            }
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
            Input::UserTyped => self.user_input("typed", now),
            Input::PersonAttached => self.user_input("attached", now),
            Input::TextShown => self.text_shown(now),
            Input::KeysWithheld { keys, verdict } => self.keys_withheld(&keys, &verdict, now),
            Input::Send { id, text, queue } => self.send_request(id, &text, queue, now),
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
                | TimerName::SendQueue
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
            TimerName::SendQueue => self.send_queue_fired(now),
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
                self.slot(Checker::Idle).poll(now);
                self.checker_events(Checker::Idle, now);
            }
            TimerName::PlanCheckCooldown | TimerName::PlanCheckTimeout => {
                self.slot(Checker::Plan).poll(now);
                self.checker_events(Checker::Plan, now);
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
        self.idle.machine.reset();
        self.plan.machine.reset();
        self.stuck_recoveries = 0;
        self.set_state(State::Watching, now);
        self.emit(Event::Started);
        self.restart_detection(now, true);
    }

    fn stop(&mut self) {
        if self.state == State::Stopped {
            return;
        }
        self.cancel_check(Checker::Idle, "stopped");
        self.cancel_check(Checker::Plan, "stopped");
        self.deferred_idle_check = None;
        self.abandon_delivery(Refusal::Stopped);
        self.refuse_queued();
        self.clear_timers();
        for name in TimerName::ALL {
            self.timers.take(name);
        }
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
        self.cancel_check(Checker::Idle, "paused");
        self.cancel_check(Checker::Plan, "paused");
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
                    .delivery
                    .as_ref()
                    .is_some_and(|d| matches!(d.phase, Phase::Typed { .. }))
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
        for (checker, off, on) in [
            (Checker::Idle, idle_off, idle_on),
            (Checker::Plan, plan_off, plan_on),
        ] {
            if off {
                self.cancel_check(checker, "disabled by config");
                self.slot(checker).disable("Disabled by config");
                if checker == Checker::Idle && self.state == State::AiChecking {
                    self.back_to_watching(now, false);
                }
            } else if on && self.slot(checker).disabled(now) {
                self.slot(checker).enable();
                self.emit(Event::CheckerEnabled { checker });
            }
        }
        if let Some(timing) = idle_timing.filter(|_| self.idle.running.is_none()) {
            self.idle.retime(timing, now);
        }
        if let Some(timing) = plan_timing.filter(|_| self.plan.running.is_none()) {
            self.plan.retime(timing, now);
        }
        self.checker_events(Checker::Idle, now);
        self.checker_events(Checker::Plan, now);
    }
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

/// `true` when the verdict is working because something shows work (a spinner, a busy
/// process tree, a hook), not merely because output was recent and the screen has not
/// settled yet: only that confirms that a new turn started.
fn shows_work(verdict: &Verdict) -> bool {
    verdict.state == SessionState::Working
        && verdict
            .evidence
            .first()
            .is_none_or(|e| e.points_to == SessionState::Working)
}

/// The verdict's blocked kind, or `unknown`.
fn blocked_kind(verdict: &Verdict) -> &'static str {
    verdict.blocked.map_or("unknown", blocked_name)
}

/// Newlines become single spaces so that a multi-line prompt is typed as words rather
/// than glued lines (§5d 115) and never submits early; other control characters (an
/// escape sequence that would end a bracketed paste early, a Ctrl-C) become spaces too;
/// trailing whitespace goes.
fn single_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for part in text.split(['\r', '\n']).filter(|p| !p.trim().is_empty()) {
        if !line.is_empty() {
            line.push(' ');
        }
        line.extend(
            part.trim_end()
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c }),
        );
    }
    line
}

#[cfg(test)]
mod tests;
