//! Idle confirmation (T10–T20, §1.4): completion and silence, the pre-filter, the
//! no-output fallback, the AI idle check and its slot, and the gate chain before a cycle.

use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    BlockedKind, CheckError, CheckReply, CheckerEvent, Finish, IdleAnswer, Refusal, SessionState,
};

use super::checks::{Slot, timers};
use super::timers::Timer;
use super::{Action, CheckTrigger, Machine, blocked_kind, millis};
use crate::event::{BlockReason, CheckSkip, Checker, Event, Stale, State, TimerName};
use crate::gate::GateContext;

impl Machine {
    pub(super) fn completion_confirm_fired(&mut self, now: Instant) {
        if self.state == State::Stopped {
            return;
        }
        if self.silence(now) >= self.config.completion_confirm {
            self.try_start_ai_check(CheckTrigger::CompletionSilence, now);
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
    pub(super) fn pre_filter(&mut self, now: Instant) {
        if self.state != State::Watching {
            return;
        }
        let since =
            |t: Option<Instant>| t.map_or(Duration::MAX, |t| now.saturating_duration_since(t));
        if self.silence(now) >= self.config.completion_confirm
            && since(self.last_working) >= self.config.working_absence
            && since(self.last_token_change) >= self.config.completion_confirm
        {
            self.try_start_ai_check(CheckTrigger::PreFilter, now);
        }
    }

    /// T17.
    pub(super) fn no_output_fallback(&mut self, now: Instant) {
        if !matches!(self.state, State::Watching | State::ConfirmingIdle) {
            return;
        }
        self.emit(Event::NoOutputFallback {
            silence_ms: millis(self.silence(now)),
        });
        if self.config.idle_check.enabled && !self.slot(Checker::Idle).disabled(now) {
            self.try_start_ai_check(CheckTrigger::NoOutputFallback, now);
        } else {
            self.on_idle_confirmed("no-output fallback (AI check disabled)", now);
        }
    }

    /// T13–T16.
    pub(super) fn try_start_ai_check(&mut self, trigger: CheckTrigger, now: Instant) {
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
        if !self.config.idle_check.enabled || self.slot(Checker::Idle).disabled(now) {
            self.on_idle_confirmed(trigger.without_ai(), now);
            return;
        }
        if self.plan.running.is_some() {
            // The §4 race fix: the idle check waits for the plan check.
            self.deferred_idle_check = Some(trigger);
            self.emit(Event::IdleCheckSkipped {
                skip: CheckSkip::PlanCheckRunning,
            });
            return;
        }
        let ticket = match self.idle.machine.try_start(now) {
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
                self.checker_events(Checker::Idle, now);
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
        self.idle.running = Some(ticket);
        self.set_state(State::AiChecking, now);
        self.emit(Event::IdleCheckStarted {
            id,
            reason: trigger.as_str(),
        });
        self.out.push(Action::StartCheck {
            checker: Checker::Idle,
            id,
            max_context: self.config.idle_check.max_context,
        });
        self.checker_events(Checker::Idle, now);
    }

    /// The slot of `checker`.
    pub(super) fn slot(&mut self, checker: Checker) -> &mut dyn Slot {
        match checker {
            Checker::Idle => &mut self.idle,
            Checker::Plan => &mut self.plan,
        }
    }

    pub(super) fn cancel_check(&mut self, checker: Checker, reason: &'static str) {
        if let Some(ticket) = self.slot(checker).cancel() {
            self.timers.take(timers(checker)[0]);
            self.out.push(Action::CancelCheck {
                checker,
                id: ticket.id(),
            });
            self.emit(Event::CheckCancelled {
                checker,
                id: ticket.id(),
                reason,
            });
        }
    }

    /// Reports what a checker did (cooldowns, disabling, a timed-out check) and re-arms the
    /// timer of its next deadline.
    pub(super) fn checker_events(&mut self, checker: Checker, now: Instant) {
        for event in self.slot(checker).drain_events() {
            match event {
                CheckerEvent::TimedOut { id } => {
                    if self.slot(checker).running().is_some_and(|t| t.id() == id) {
                        self.slot(checker).clear();
                        self.out.push(Action::CancelCheck { checker, id });
                        self.check_timed_out(checker, id, now);
                    }
                }
                CheckerEvent::CooldownEnded if checker == Checker::Idle => {
                    self.checker_event(checker, event, now);
                    // AIC-008: the pre-filter restarts when the cooldown ends in watching.
                    if self.state == State::Watching && self.config.idle_check.enabled {
                        self.arm(TimerName::PreFilter, self.config.completion_confirm, now);
                    }
                }
                event => self.checker_event(checker, event, now),
            }
        }
        let deadline = self.slot(checker).next_deadline();
        let checking = self.slot(checker).running().is_some();
        self.sync_checker_timer(deadline, checking, timers(checker), now);
    }

    /// A check ran out of time: reported as failed; an idle check's wait ends, a deferred
    /// idle check runs after a plan check.
    pub(super) fn check_timed_out(&mut self, checker: Checker, id: u64, now: Instant) {
        match checker {
            Checker::Idle => {
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
            Checker::Plan => {
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
    }

    pub(super) fn checker_event(&mut self, checker: Checker, event: CheckerEvent, now: Instant) {
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
    pub(super) fn sync_checker_timer(
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
    pub(super) fn idle_check_done(
        &mut self,
        id: u64,
        result: Result<CheckReply<IdleAnswer>, CheckError>,
        now: Instant,
    ) {
        let Some(ticket) = self.idle.running.filter(|t| t.id() == id) else {
            self.emit(Event::CheckResultIgnored {
                checker: Checker::Idle,
                id,
                stale: Stale::UnknownId,
                state: self.state,
            });
            return;
        };
        self.idle.running = None;
        let finish = self.idle.machine.finish(now, ticket, result);
        if self.state != State::AiChecking {
            self.checker_events(Checker::Idle, now);
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
                self.checker_events(Checker::Idle, now);
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
                self.checker_events(Checker::Idle, now);
                self.back_to_watching(now, false);
            }
            Finish::Stale => {
                self.checker_events(Checker::Idle, now);
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
    pub(super) fn back_to_watching(&mut self, now: Instant, auto_accept: bool) {
        self.timers.take(TimerName::CompletionConfirm);
        self.completion_at = None;
        self.set_state(State::Watching, now);
        self.restart_detection(now, auto_accept);
    }

    /// The gate chain (§1.4), then the cycle (T29).
    pub(super) fn on_idle_confirmed(&mut self, via: &'static str, now: Instant) {
        if !self.state.is_detecting() {
            return;
        }
        // Gate 1: the session works (Codeman's `isWorking` veto).
        if self.verdict.state == SessionState::Working {
            self.emit(Event::IdleRejected);
            self.back_to_watching(now, false);
            return;
        }
        if !self.config.cycle {
            // Supervision without cycles: idle is reported once, then nothing happens until
            // the session draws again (queued sends go through their own poll).
            if !self.idle_reported {
                self.idle_reported = true;
                self.emit(Event::IdleConfirmed { via });
            }
            self.timers.take(TimerName::CompletionConfirm);
            self.completion_at = None;
            self.set_state(State::Watching, now);
            return;
        }
        self.emit(Event::IdleConfirmed { via });
        if let Some((reason, details)) = self.gate_chain(now) {
            self.emit(Event::Blocked { reason, details });
            // §5d 112: a refusal that can end without any output (a pluggable gate, a send
            // in progress) keeps the detection timers armed; one that ends at a known time
            // (human lock, cycle rate) re-arms them then; the rest (a blocked screen, a
            // silent or unresponsive session) can only end with output, which re-arms them.
            // A plan menu keeps its auto-accept.
            self.timers.take(TimerName::CompletionConfirm);
            self.completion_at = None;
            self.set_state(State::Watching, now);
            if matches!(reason, BlockReason::Gate | BlockReason::SendPending) {
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
    pub(super) fn gate_chain(&mut self, now: Instant) -> Option<(BlockReason, String)> {
        if self.verdict.state == SessionState::Blocked {
            let kind = blocked_kind(&self.verdict);
            let what = self
                .verdict
                .evidence
                .first()
                .map(|e| format!(": {} ({})", e.detail, e.rule))
                .unwrap_or_default();
            return Some((
                BlockReason::SessionBlocked,
                format!("the session waits for a human ({kind}){what}"),
            ));
        }
        if self.delivery.is_some() || !self.sends.waiting.is_empty() {
            return Some((
                BlockReason::SendPending,
                "text sent through the controller goes first".to_owned(),
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
                    "the last input was not confirmed; waiting for the session to work again or a person to step in"
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
}
