//! The human and stuck states: a keystroke holds automation; a state held too long is
//! recovered.

use std::time::Instant;

use super::timers::Timer;
use super::{Machine, millis};
use crate::event::{BlockReason, Checker, Event, Refusal, State, TimerName};

impl Machine {
    /// A person at the session (`via`: `typed` through the mirror, or `attached` as another
    /// tmux client): automation pauses for `human_lock`, and a running cycle, check or
    /// delivery is abandoned (the person is in charge of the session now).
    pub(super) fn user_input(&mut self, via: &'static str, now: Instant) {
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
                via,
            });
        }
        if self.awaiting_output == Some(BlockReason::DeliveryUnconfirmed) {
            // The person sees what was left in the box; automation resumes after them.
            self.awaiting_output = None;
        }
        self.abandon_delivery(Refusal::HumanPresent);
        if self.paused {
            return;
        }
        self.cancel_check(Checker::Plan, "user input");
        self.deferred_idle_check = None;
        if self.state.in_cycle() {
            self.emit(Event::CycleAborted {
                cycle: self.cycles,
                reason: "user input",
            });
            self.clear_timers();
            self.back_to_watching(now, false);
        } else if self.state != State::Watching {
            self.cancel_check(Checker::Idle, "user input");
            self.cancel(TimerName::HookConfirm, "user input");
            self.reset_hooks();
            self.back_to_watching(now, false);
        }
    }

    pub(super) fn stuck_fired(&mut self, now: Instant) {
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
    pub(super) fn stuck_recover(&mut self, now: Instant) {
        self.cancel_check(Checker::Idle, "stuck recovery");
        self.cancel_check(Checker::Plan, "stuck recovery");
        self.clear_timers();
        self.completion_at = None;
        self.prompt_detected = false;
        self.working_detected = false;
        self.reset_hooks();
        self.abandon_delivery(Refusal::Busy);
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
