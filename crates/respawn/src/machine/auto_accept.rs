//! Plan auto-accept (§4): Enter on a plan-approval menu only, optionally after an AI plan
//! check.

use std::time::Instant;

use hyoka_idle_detect::{
    BlockedKind, CheckError, CheckReply, Finish, PlanAnswer, Refusal, SessionState,
};

use super::state::Purpose;
use super::{Action, Machine, millis};
use crate::event::{AutoAcceptSkip, Checker, Event, Stale, State, Step, TimerName};

impl Machine {
    pub(super) fn try_auto_accept(&mut self, now: Instant) {
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
        if self.config.plan_check.enabled && !self.slot(Checker::Plan).disabled(now) {
            if self.idle.running.is_some() {
                self.emit(Event::AutoAcceptSkipped {
                    skip: AutoAcceptSkip::IdleCheckRunning,
                });
                return;
            }
            match self.plan.machine.try_start(now) {
                Ok(ticket) => {
                    let id = ticket.id();
                    self.plan.running = Some(ticket);
                    self.emit(Event::PlanCheckStarted { id });
                    self.out.push(Action::StartCheck {
                        checker: Checker::Plan,
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
            self.checker_events(Checker::Plan, now);
            return;
        }
        self.send_auto_accept(now);
    }

    /// Only a plan-approval menu is ever accepted; the detector's verdict decides what is
    /// on screen (it replaces Codeman's regex pre-filter).
    pub(super) fn plan_menu_skip(&self) -> Option<AutoAcceptSkip> {
        match (self.verdict.state, self.verdict.blocked) {
            (SessionState::Blocked, Some(BlockedKind::Plan)) => None,
            (SessionState::Blocked, Some(kind)) => Some(AutoAcceptSkip::HumanDecision { kind }),
            _ => Some(AutoAcceptSkip::NotPlanMenu),
        }
    }

    pub(super) fn plan_check_done(
        &mut self,
        id: u64,
        result: Result<CheckReply<PlanAnswer>, CheckError>,
        now: Instant,
    ) {
        let Some(ticket) = self.plan.running.filter(|t| t.id() == id) else {
            self.emit(Event::CheckResultIgnored {
                checker: Checker::Plan,
                id,
                stale: Stale::UnknownId,
                state: self.state,
            });
            return;
        };
        self.plan.running = None;
        let finish = self.plan.machine.finish(now, ticket, result);
        self.checker_events(Checker::Plan, now);
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
    pub(super) fn run_deferred_idle_check(&mut self, now: Instant) {
        if let Some(trigger) = self.deferred_idle_check.take() {
            self.try_start_ai_check(trigger, now);
        }
    }

    /// `sendAutoAcceptEnter`: one Enter per silence period.
    pub(super) fn send_auto_accept(&mut self, now: Instant) {
        self.cancel_check(Checker::Idle, "auto-accept");
        self.cancel(TimerName::CompletionConfirm, "auto-accept");
        self.completion_at = None;
        self.set_state(State::Watching, now);
        self.has_received_output = false;
        let dry_run = self.config.dry_run;
        if dry_run {
            self.emit(Event::StepSent {
                step: Step::AutoAccept,
                input: "↵".to_owned(),
                dry_run,
            });
        }
        if !dry_run {
            // A bare Enter, never retried: a second one on a menu could confirm something
            // else.
            self.deliver(Purpose::Step(Step::AutoAccept), String::new(), now);
        }
        self.emit(Event::AutoAcceptSent { dry_run });
    }
}
