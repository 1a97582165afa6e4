//! The cycle (T29–T43): update, `/clear`, `/init`, kickstart; each step typed as text then
//! Enter, confirmed by the session's reaction, retried or given up.

use std::time::Instant;

use hyoka_idle_detect::{BlockedKind, SessionState};

use super::state::Purpose;
use super::{Action, Machine, blocked_kind, single_line};
use crate::event::{BlockReason, Checker, Event, State, Step, TimerName};

impl Machine {
    pub(super) fn start_cycle(&mut self, now: Instant) {
        self.clear_timers();
        self.cancel_check(Checker::Plan, "cycle started");
        self.cancel_check(Checker::Idle, "cycle started");
        self.cycles += 1;
        self.cycle_starts.push_back(now);
        self.emit(Event::CycleStarted { cycle: self.cycles });
        self.send_step(State::SendingUpdate, now);
    }

    /// Codeman's `sendUpdateDocs`/`sendClear`/`sendInit`/`sendKickstart`: clear the
    /// context and start the step delay.
    pub(super) fn send_step(&mut self, state: State, now: Instant) {
        self.out.push(Action::ResetContext);
        self.set_state(state, now);
        self.arm(TimerName::StepDelay, self.config.inter_step_delay, now);
    }

    pub(super) fn step_text(&self, step: Step) -> String {
        match step {
            Step::Update => single_line(&self.config.update_prompt),
            Step::Clear => single_line(&self.config.clear_command),
            Step::Init => single_line(&self.config.init_command),
            Step::Kickstart => single_line(self.config.kickstart_prompt.as_deref().unwrap_or("")),
            Step::AutoAccept | Step::Send => String::new(),
        }
    }

    /// Why typing into the session is not safe now, if it is not.
    pub(super) fn unsafe_to_type(&self, now: Instant) -> Option<&'static str> {
        if self.human_locked(now) {
            return Some("human present");
        }
        match self.verdict.state {
            SessionState::Working => Some("session working"),
            SessionState::Blocked => Some("session blocked"),
            // A screen that cannot be judged (or that a resize made stale) may hold a
            // dialog: only a verdict that says idle lets a keystroke go.
            SessionState::Unknown => Some("screen not judged"),
            SessionState::Idle => None,
        }
    }

    /// T30, T34, T37, T41: type the step's text into an empty input box; Enter follows as a
    /// separate write (`machine/delivery`).
    pub(super) fn step_delay_fired(&mut self, now: Instant) {
        let Some(step) = self.state.step() else {
            return;
        };
        if !self.state.is_sending() {
            return;
        }
        if self.verdict.state == SessionState::Blocked {
            // The session now waits for a human (a plan menu or a permission prompt opened
            // in answer to the last step, or a person's draft in the input): the cycle ends
            // here, and in watching a plan menu gets the usual auto-accept while anything
            // else is left to the human.
            let kind = blocked_kind(&self.verdict);
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
        let reason = if self.delivery.is_some() {
            // The previous step's delivery is not confirmed yet: its confirmation re-arms
            // the step delay.
            Some("previous input not confirmed")
        } else {
            self.unsafe_to_type(now)
        };
        if let Some(reason) = reason {
            if !self.deferred_reported {
                self.deferred_reported = true;
                self.emit(Event::StepDeferred { step, reason });
            }
            if self.delivery.is_none() {
                self.arm(TimerName::StepDelay, self.config.inter_step_delay, now);
            }
            return;
        }
        let text = self.step_text(step);
        if self.config.dry_run {
            self.dry_run_step(step, text, now);
            return;
        }
        self.deliver(Purpose::Step(step), text, now);
    }

    pub(super) fn after_send(&mut self, step: Step, now: Instant) {
        match step {
            Step::Update => {
                self.prompt_detected = false;
                self.working_detected = false;
                self.set_state(State::WaitingUpdate, now);
            }
            Step::Clear => {
                self.prompt_detected = false;
                self.set_state(State::WaitingClear, now);
                if !self.config.dry_run {
                    self.arm(TimerName::ClearFallback, self.config.clear_fallback, now);
                }
            }
            Step::Init => self.set_state(State::WaitingInit, now),
            Step::Kickstart => self.set_state(State::WaitingKickstart, now),
            Step::AutoAccept | Step::Send => {}
        }
    }

    /// A dry run reports what would have been typed and then waits as a real run would:
    /// in the step's waiting state, until the session has been silent for `step_confirm`
    /// (nothing was typed, so nothing else will come). Its cycles take as long as real
    /// ones, and its cycle count is realistic.
    fn dry_run_step(&mut self, step: Step, text: String, now: Instant) {
        self.emit(Event::StepTyped {
            step,
            input: text.clone(),
            dry_run: true,
        });
        self.emit(Event::StepSent {
            step,
            input: text,
            dry_run: true,
        });
        self.after_send(step, now);
        self.arm(TimerName::StepConfirm, self.config.step_confirm(), now);
    }

    /// T33, T38, T42, and the silence re-arm.
    pub(super) fn step_confirm_fired(&mut self, now: Instant) {
        let dry_clear = self.config.dry_run && self.state == State::WaitingClear;
        if !dry_clear
            && !matches!(
                self.state,
                State::WaitingUpdate | State::WaitingInit | State::WaitingKickstart
            )
        {
            return;
        }
        // Silence after an Enter the agent did not take (Gemini CLI loses the first Enter
        // after a paste) is not the step done: the delivery is confirmed, retried or given
        // up first. Nor is silence while the verdict shows work (a tool running quietly).
        if self.silence(now) < self.config.step_confirm()
            || self.delivery.is_some()
            || super::shows_work(&self.verdict)
        {
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
            State::WaitingClear => {
                self.emit(Event::StepCompleted {
                    step: Step::Clear,
                    via: "silence",
                });
                self.after_clear(now);
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

    pub(super) fn kickstart_configured(&self) -> bool {
        self.config.kickstart_prompt.is_some()
    }

    /// T33's choice: `/clear` (unless skipped), `/init`, or the end of the cycle. Read at
    /// decision time (CC-003).
    pub(super) fn after_update(&mut self, now: Instant) {
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

    pub(super) fn after_clear(&mut self, now: Instant) {
        if self.config.send_init {
            self.send_step(State::SendingInit, now);
        } else {
            self.complete_cycle(now);
        }
    }

    /// T35.
    pub(super) fn clear_done(&mut self, now: Instant) {
        self.cancel(TimerName::ClearFallback, "prompt detected");
        self.emit(Event::StepCompleted {
            step: Step::Clear,
            via: "prompt detected",
        });
        self.after_clear(now);
    }

    /// T40. If the kickstart was removed meanwhile the cycle ends (Codeman types a bare
    /// Enter, CC-005).
    pub(super) fn init_monitor_done(&mut self, now: Instant) {
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
    pub(super) fn complete_cycle(&mut self, now: Instant) {
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
}
