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

use hyoka_idle_detect::{BlockedKind, SessionState, Verdict};

use super::state::{Delivery, Phase, Purpose};
use super::{Action, Keys, Machine};
use crate::event::{BlockReason, Event, Refusal, SendOutcome, TimerName};

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

    /// Whether `keys` may be typed now, judged on `verdict` (taken just before the
    /// keystroke), with `text_shown` saying whether the text being delivered shows on the
    /// screen. Every keystroke the machine decides on goes through this one rule, delivery
    /// retries included:
    ///
    /// - text only into an idle session (its input empty, nothing running, no dialog);
    /// - Enter after typed text only while the input holds that text (a draft that is the
    ///   controller's own) or the session is idle, never onto a dialog, a menu or work;
    /// - a bare Enter (plan auto-accept) only onto a plan-approval menu.
    pub fn may_type(&self, keys: &Keys, verdict: &Verdict, text_shown: bool) -> bool {
        let bare = self.delivery.as_ref().is_none_or(|d| d.text.is_empty());
        match (keys, verdict.state, verdict.blocked) {
            (Keys::Text(_), SessionState::Idle, _) => true,
            (Keys::Enter, SessionState::Blocked, Some(BlockedKind::Plan)) => bare,
            (Keys::Enter, SessionState::Idle, _) => !bare,
            (Keys::Enter, SessionState::Blocked, Some(BlockedKind::Draft)) => !bare && text_shown,
            // The echo of the text just typed is output the screen settles from.
            (Keys::Enter, SessionState::Working, _) => {
                !bare && text_shown && !super::shows_work(verdict)
            }
            _ => false,
        }
    }

    /// [`Input::KeysWithheld`](super::Input::KeysWithheld): the driver did not send `keys`.
    /// Text not typed abandons the delivery (a cycle goes back to watching, a send is
    /// refused); an Enter not pressed after text leaves that text in the input, so the
    /// cycles pause as after an unconfirmed delivery.
    pub(super) fn keys_withheld(&mut self, keys: &Keys, verdict: &Verdict, now: Instant) {
        let Some(delivery) = self.delivery.as_ref() else {
            return;
        };
        let (purpose, typed) = (delivery.purpose, !delivery.text.is_empty());
        let rule = verdict
            .deciding()
            .map(|e| e.rule.clone())
            .unwrap_or_default();
        self.emit(Event::KeysWithheld {
            step: purpose.step(),
            keys: match keys {
                Keys::Text(_) => "text",
                Keys::Enter => "enter",
            },
            state: verdict.state,
            blocked: verdict.blocked,
            rule,
        });
        if matches!(keys, Keys::Enter) && typed {
            self.delivery_failed(now);
            return;
        }
        self.timers.take(TimerName::EnterDelay);
        self.timers.take(TimerName::Verify);
        self.delivery = None;
        match purpose {
            Purpose::Send(id) => self.send_done(
                id,
                SendOutcome::Refused(match (verdict.state, verdict.blocked) {
                    (SessionState::Working, _) => Refusal::Working,
                    (SessionState::Blocked, Some(BlockedKind::Draft)) => Refusal::Draft,
                    (SessionState::Blocked, _) => Refusal::Blocked,
                    _ => Refusal::Unknown,
                }),
            ),
            Purpose::Step(_) if self.state.in_cycle() => {
                self.emit(Event::CycleAborted {
                    cycle: self.cycles,
                    reason: "keystroke withheld",
                });
                self.clear_timers();
                self.back_to_watching(now, false);
            }
            Purpose::Step(_) => {}
        }
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
            held_since: None,
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
    /// delivery. `true` the first time.
    fn note_text_in_box(&mut self) -> bool {
        if self.verdict.blocked == Some(BlockedKind::Draft)
            && let Some(delivery) = self.delivery.as_mut()
            && matches!(delivery.phase, Phase::Typed { .. })
            && !delivery.saw_in_box
        {
            delivery.saw_in_box = true;
            return true;
        }
        false
    }

    /// `enter-delay` fired: Enter once the text shows in the box, or after `text_wait`, and
    /// only on a verdict that has settled. A verdict that shows work or cannot judge the
    /// screen (the echo of the text just typed, a child process the agent starts as the
    /// text arrives, a redraw pending) holds Enter: it is tried again on a fresh verdict
    /// every `enter_delay`, for `verify_timeout`, and then the delivery is unconfirmed (the
    /// text stays in the input). If the box is empty when Enter may go (the verdict says
    /// idle after the text was seen in it), the text left without Enter: the delivery is
    /// unconfirmed and no Enter goes. A dialog is not waited out: the driver withholds Enter
    /// onto it ([`Machine::may_type`]), and so does the machine when its own verdict shows one.
    pub(super) fn press_enter(&mut self, now: Instant) {
        self.note_text_in_box();
        let unsettled = match self.verdict.state {
            SessionState::Working => super::shows_work(&self.verdict),
            SessionState::Unknown => true,
            SessionState::Idle | SessionState::Blocked => false,
        };
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
        if !delivery.text.is_empty() && unsettled {
            let first = delivery.held_since.is_none();
            let since = *delivery.held_since.get_or_insert(now);
            let step = delivery.purpose.step();
            if first {
                let rule = self
                    .verdict
                    .deciding()
                    .map(|e| e.rule.clone())
                    .unwrap_or_default();
                self.emit(Event::EnterHeld {
                    step,
                    state: self.verdict.state,
                    rule,
                });
            }
            if now.saturating_duration_since(since) < self.config.verify_timeout {
                self.arm(TimerName::EnterDelay, self.config.enter_delay, now);
            } else {
                self.delivery_failed(now);
            }
            return;
        }
        if delivery.held_since.is_some()
            && delivery.saw_in_box
            && self.verdict.state == SessionState::Idle
        {
            // The text was in the box, and the box emptied while Enter waited (the agent
            // restarted, a person cleared it): nothing of ours is left to submit.
            self.delivery_failed(now);
            return;
        }
        if !delivery.text.is_empty()
            && self.verdict.state == SessionState::Blocked
            && self.verdict.blocked != Some(BlockedKind::Draft)
        {
            // A dialog opened over the text: never answered, never waited out.
            let verdict = self.verdict.clone();
            self.keys_withheld(&Keys::Enter, &verdict, now);
            return;
        }
        let Some(delivery) = self.delivery.as_mut() else {
            return;
        };
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
        if self.note_text_in_box() {
            // Enter waits `enter_delay` from the moment the agent shows the text: Gemini CLI
            // 0.61 takes an Enter within 40 ms of a paste for a newline (InputPrompt.tsx,
            // `recentUnsafePasteTime`).
            self.arm(TimerName::EnterDelay, self.config.enter_delay, now);
        }
        let confirmed = self.delivery.as_ref().is_some_and(|d| {
            matches!(d.phase, Phase::Submitted { .. })
                && d.saw_in_box
                && self.verdict.blocked != Some(BlockedKind::Draft)
        });
        if confirmed {
            self.confirm_delivery("echo", now);
        }
    }

    /// A verdict that says idle, with no draft in the input: text that was seen in the box
    /// and then left it was taken (a command that clears the screen, such as Gemini CLI's
    /// `/clear` or Codex's `/new`, leaves no echo). In a step's waiting state the screen's idle
    /// verdict is the prompt the agent draws once it is done, for agents whose prompt the
    /// per-chunk scanner does not know (Codex's `›`, Gemini CLI's `>`): it starts the step's
    /// confirmation as a prompt chunk does.
    pub(super) fn idle_verdict(&mut self, now: Instant) {
        let taken = self
            .delivery
            .as_ref()
            .is_some_and(|d| matches!(d.phase, Phase::Submitted { .. }) && d.saw_in_box);
        if taken {
            self.confirm_delivery("taken", now);
        }
        if self.delivery.is_some() {
            return;
        }
        match self.state {
            crate::event::State::WaitingUpdate
            | crate::event::State::WaitingInit
            | crate::event::State::WaitingKickstart
                if !self.timers.is_armed(TimerName::StepConfirm) =>
            {
                self.arm(TimerName::StepConfirm, self.config.step_confirm(), now);
            }
            crate::event::State::WaitingClear => self.clear_done(now),
            _ => {}
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
        self.delivery_failed(now);
    }

    /// The delivery in progress ends unconfirmed: its text may sit unsubmitted in the
    /// input, so nothing more is typed on the machine's own initiative until the session
    /// visibly works again or a person steps in.
    fn delivery_failed(&mut self, now: Instant) {
        self.timers.take(TimerName::EnterDelay);
        self.timers.take(TimerName::Verify);
        let Some(delivery) = self.delivery.take() else {
            return;
        };
        let step = delivery.purpose.step();
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
    pub(super) fn abandon_delivery(&mut self, refusal: Refusal) {
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
