//! Verified delivery: text goes into an empty input box, Enter follows as a separate write,
//! and the delivery counts only when a new turn visibly starts.
//!
//! The stages, each an event: the text is typed (`step_typed`) once the verdict says the
//! input is empty (a person's draft is never typed over or cleared); Enter is pressed
//! (`step_sent`) once the typed text shows in the input box, or after `text_wait` for a
//! profile that cannot see the box; then the session has `verify_timeout` to start a new
//! turn: working output (`via: working`), or the text leaving the box and showing in the
//! transcript (`via: echo`, only when the text was seen in the box first, so a screen that
//! never showed it cannot confirm it). Without either, Enter is pressed once more
//! (`step_retried`), and then the delivery is `delivery_unconfirmed`.

use std::time::Instant;

use hyoka_idle_detect::BlockedKind;

use super::{Action, Keys, Machine};
use crate::event::{BlockReason, Event, SendOutcome, Step, TimerName};

/// What a delivery is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    /// A step of a cycle, or the plan auto-accept's Enter.
    Step(Step),
    /// A send request.
    Send(u64),
}

impl Purpose {
    pub(super) fn step(self) -> Step {
        match self {
            Self::Step(step) => step,
            Self::Send(_) => Step::Send,
        }
    }
}

/// Where a delivery is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The text is typed; Enter waits for it to show in the box (or for `text_wait`).
    Typed {
        /// When the text was typed.
        at: Instant,
    },
    /// Enter is pressed; a new turn must start within `verify_timeout`.
    Submitted {
        /// Enter retries so far.
        retries: u32,
    },
}

/// The input being delivered.
#[derive(Debug, Clone)]
pub(super) struct Delivery {
    pub(super) purpose: Purpose,
    /// The text typed (empty for a bare Enter).
    pub(super) text: String,
    pub(super) phase: Phase,
    /// The text was seen in the input box (the verdict said blocked(draft) while it was
    /// there), so its leaving the box is evidence.
    pub(super) saw_in_box: bool,
    /// Retries allowed (none for a bare Enter on a menu: a second one could confirm
    /// something else).
    pub(super) max_retries: u32,
}

impl Machine {
    /// The text being delivered, while it is typed or submitted and not yet confirmed:
    /// the driver reports with [`Input::TextShown`](super::Input::TextShown) when it
    /// shows on screen.
    pub fn delivery_text(&self) -> Option<&str> {
        self.delivery
            .as_ref()
            .map(|d| d.text.as_str())
            .filter(|t| !t.is_empty())
    }

    /// Types `text` for `purpose` (the caller checked that typing is safe): a bare Enter
    /// when `text` is empty.
    pub(super) fn deliver(&mut self, purpose: Purpose, text: String, now: Instant) {
        let step = purpose.step();
        let max_retries = if text.is_empty() {
            0
        } else {
            self.config.verify_retries
        };
        self.delivery = Some(Delivery {
            purpose,
            text: text.clone(),
            phase: Phase::Typed { at: now },
            saw_in_box: false,
            max_retries,
        });
        if text.is_empty() {
            self.press_enter(now);
            return;
        }
        self.out.push(Action::Type(Keys::Text(text.clone())));
        self.emit(Event::StepTyped {
            step,
            input: text,
            dry_run: false,
        });
        self.arm(TimerName::EnterDelay, self.config.enter_delay, now);
    }

    /// The typed text shows in the box: noted, so its leaving the box can confirm the
    /// delivery.
    fn note_text_in_box(&mut self) {
        if self.verdict.blocked == Some(BlockedKind::Draft)
            && let Some(delivery) = self.delivery.as_mut()
            && matches!(delivery.phase, Phase::Typed { .. })
        {
            delivery.saw_in_box = true;
        }
    }

    /// `enter-delay` fired: Enter once the text shows in the box, or after `text_wait`.
    pub(super) fn press_enter(&mut self, now: Instant) {
        self.note_text_in_box();
        let Some(delivery) = self.delivery.as_mut() else {
            return;
        };
        let Phase::Typed { at } = delivery.phase else {
            return;
        };
        let waited = now.saturating_duration_since(at);
        if !delivery.text.is_empty() && !delivery.saw_in_box && waited < self.config.text_wait {
            let left = self.config.text_wait.saturating_sub(waited);
            self.arm(
                TimerName::EnterDelay,
                left.min(self.config.enter_delay),
                now,
            );
            return;
        }
        delivery.phase = Phase::Submitted { retries: 0 };
        let (purpose, text) = (delivery.purpose, delivery.text.clone());
        self.out.push(Action::Type(Keys::Enter));
        self.emit(Event::StepSent {
            step: purpose.step(),
            input: if text.is_empty() {
                "↵".to_owned()
            } else {
                text
            },
            dry_run: false,
        });
        self.arm(TimerName::Verify, self.config.verify_timeout, now);
        if let Purpose::Step(step) = purpose {
            self.after_send(step, now);
        }
    }

    /// The typed text is on screen now ([`Input::TextShown`](super::Input::TextShown)):
    /// in the box before Enter, or (once it was seen there) out of it after Enter.
    pub(super) fn text_shown(&mut self, now: Instant) {
        self.note_text_in_box();
        let confirmed = self.delivery.as_ref().is_some_and(|d| {
            matches!(d.phase, Phase::Submitted { .. })
                && d.saw_in_box
                && self.verdict.blocked != Some(BlockedKind::Draft)
        });
        if confirmed {
            self.confirm_delivery("echo", now);
        }
    }

    /// Working output or a working verdict after Enter: a new turn started.
    pub(super) fn turn_started(&mut self, now: Instant) {
        if self
            .delivery
            .as_ref()
            .is_some_and(|d| matches!(d.phase, Phase::Submitted { .. }))
        {
            self.confirm_delivery("working", now);
        }
        if self.awaiting_output == Some(BlockReason::DeliveryUnconfirmed) {
            self.awaiting_output = None;
        }
    }

    fn confirm_delivery(&mut self, via: &'static str, now: Instant) {
        let Some(delivery) = self.delivery.take() else {
            return;
        };
        self.timers.take(TimerName::Verify);
        self.emit(Event::DeliveryConfirmed {
            step: delivery.purpose.step(),
            via,
        });
        if let Purpose::Send(id) = delivery.purpose {
            self.send_done(id, SendOutcome::Delivered);
        }
        // A step waiting for this confirmation may go now.
        if self.state.is_sending() && !self.timers.is_armed(TimerName::StepDelay) {
            self.arm(TimerName::StepDelay, self.config.inter_step_delay, now);
        }
    }

    /// `verify` fired: Enter once more, or the delivery is unconfirmed.
    pub(super) fn verify_fired(&mut self, now: Instant) {
        if super::shows_work(&self.verdict) {
            self.confirm_delivery("working", now);
            return;
        }
        let human = self.human_locked(now);
        let Some(delivery) = self.delivery.as_mut() else {
            return;
        };
        let Phase::Submitted { retries } = delivery.phase else {
            return;
        };
        let step = delivery.purpose.step();
        if retries < delivery.max_retries && !human {
            delivery.phase = Phase::Submitted {
                retries: retries + 1,
            };
            self.out.push(Action::Type(Keys::Enter));
            self.emit(Event::StepRetried {
                step,
                attempt: retries + 1,
            });
            self.arm(TimerName::Verify, self.config.verify_timeout, now);
            return;
        }
        let Some(delivery) = self.delivery.take() else {
            return;
        };
        self.emit(Event::DeliveryUnconfirmed {
            step,
            input: delivery.text,
        });
        match delivery.purpose {
            Purpose::Send(id) => self.send_done(id, SendOutcome::Unconfirmed),
            Purpose::Step(step) => {
                // Nothing more is typed on the machine's own initiative until the session
                // visibly works again or a person steps in.
                self.awaiting_output = Some(BlockReason::DeliveryUnconfirmed);
                self.emit(Event::Blocked {
                    reason: BlockReason::DeliveryUnconfirmed,
                    details: format!(
                        "no new turn started after the {} step's Enter: cycles pause until the session works again or a person steps in",
                        step.as_str()
                    ),
                });
                if self.state.in_cycle() {
                    self.emit(Event::CycleAborted {
                        cycle: self.cycles,
                        reason: "delivery unconfirmed",
                    });
                    self.clear_timers();
                    self.back_to_watching(now, false);
                }
            }
        }
    }

    /// Drops the delivery in progress (a person took over, or the machine stops). A send
    /// typed but not confirmed is reported as unconfirmed, one not typed as refused.
    pub(super) fn abandon_delivery(&mut self, refusal: crate::event::Refusal) {
        self.timers.take(TimerName::EnterDelay);
        self.timers.take(TimerName::Verify);
        if let Some(delivery) = self.delivery.take()
            && let Purpose::Send(id) = delivery.purpose
        {
            self.send_done(
                id,
                match delivery.phase {
                    Phase::Typed { .. } if delivery.text.is_empty() => {
                        SendOutcome::Refused(refusal)
                    }
                    _ => SendOutcome::Unconfirmed,
                },
            );
        }
    }
}
