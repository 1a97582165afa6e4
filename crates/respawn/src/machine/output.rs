//! How the machine reacts to the session's output (§3.1): completion, working and prompt
//! signals restart, cancel or confirm what is pending.

use std::time::Instant;

use hyoka_idle_detect::ChunkSignals;

use super::Machine;
use super::timers::Timer;
use crate::event::{BlockReason, Checker, Event, State, Step, TimerName};

impl Machine {
    pub(super) fn output(&mut self, signals: ChunkSignals, now: Instant) {
        if self.state == State::Stopped {
            return;
        }
        self.last_output = Some(now);
        self.has_received_output = true;
        self.idle_reported = false;
        if self.awaiting_output == Some(BlockReason::NoOutputYet) {
            self.awaiting_output = None;
        }
        if signals.working {
            // A new turn: it confirms a delivery and ends a pause after an unconfirmed one.
            self.turn_started(now);
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
        self.cancel_check(Checker::Plan, "output during plan check");
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

    pub(super) fn rearm_on_output(&mut self, now: Instant) {
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
    pub(super) fn completion_chunk(&mut self, now: Instant) {
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
    pub(super) fn working_chunk(&mut self, now: Instant) {
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
                self.cancel_check(Checker::Idle, "working patterns detected during AI check");
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
    pub(super) fn substantial_chunk(&mut self, now: Instant) {
        let state = self.state;
        self.emit(Event::SubstantialOutput { state });
        if state == State::ConfirmingIdle {
            self.cancel(TimerName::CompletionConfirm, "substantial output");
            self.completion_at = None;
        } else {
            self.cancel_check(Checker::Idle, "substantial output during AI check");
        }
        self.set_state(State::Watching, now);
    }

    /// §3.1 step 9: T31, T35, T40.
    pub(super) fn prompt_chunk(&mut self, now: Instant) {
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
}
