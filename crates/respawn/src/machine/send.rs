//! Text sent through the controller (`hyoka send`): delivered only into an idle session
//! whose input box is empty and that nobody is at, or refused with nothing typed; a queued
//! send waits for that moment instead.

use std::time::Instant;

use hyoka_idle_detect::{BlockedKind, SessionState};

use super::state::Purpose;
use super::timers::Timer;
use super::{Action, Machine, single_line};
use crate::event::{Event, Refusal, SendOutcome, TimerName};

impl Machine {
    /// [`Input::Send`](super::Input::Send).
    pub(super) fn send_request(&mut self, id: u64, text: &str, queue: bool, now: Instant) {
        self.emit(Event::SendRequested { id, queue });
        let text = single_line(text);
        let hard = if text.is_empty() {
            Some(Refusal::EmptyText)
        } else if self.config.dry_run {
            Some(Refusal::DryRun)
        } else if self.state == crate::event::State::Stopped {
            Some(Refusal::Stopped)
        } else {
            None
        };
        if let Some(reason) = hard {
            self.refuse_send(id, reason);
            return;
        }
        match self.send_refusal(now) {
            None if self.sends.waiting.is_empty() => self.deliver(Purpose::Send(id), text, now),
            refusal if queue => {
                self.emit(Event::SendQueued {
                    id,
                    reason: refusal.unwrap_or(Refusal::Busy),
                });
                self.sends.waiting.push_back((id, text));
                if !self.timers.is_armed(TimerName::SendQueue) {
                    self.poll_queue(now);
                }
            }
            refusal => self.refuse_send(id, refusal.unwrap_or(Refusal::Busy)),
        }
    }

    /// Why text cannot go into the session now, if it cannot.
    pub(super) fn send_refusal(&self, now: Instant) -> Option<Refusal> {
        if self.delivery.is_some() {
            return Some(Refusal::Busy);
        }
        if self.state.in_cycle() {
            return Some(Refusal::CycleRunning);
        }
        if self.human_locked(now) {
            return Some(Refusal::HumanPresent);
        }
        match (self.verdict.state, self.verdict.blocked) {
            (SessionState::Idle, _) => None,
            (SessionState::Working, _) => Some(Refusal::Working),
            (SessionState::Blocked, Some(BlockedKind::Draft)) => Some(Refusal::Draft),
            (SessionState::Blocked, _) => Some(Refusal::Blocked),
            (SessionState::Unknown, _) => Some(Refusal::Unknown),
        }
    }

    fn refuse_send(&mut self, id: u64, reason: Refusal) {
        self.emit(Event::SendRefused { id, reason });
        self.send_done(id, SendOutcome::Refused(reason));
    }

    /// Reports how send `id` ended.
    pub(super) fn send_done(&mut self, id: u64, outcome: SendOutcome) {
        self.emit(Event::SendDone { id, outcome });
        self.out.push(Action::SendDone { id, outcome });
    }

    /// `send-queue` fired: the oldest queued send goes if the session can take it now.
    pub(super) fn send_queue_fired(&mut self, now: Instant) {
        if self.sends.waiting.is_empty() {
            return;
        }
        if self.state != crate::event::State::Stopped
            && !self.paused
            && self.send_refusal(now).is_none()
            && let Some((id, text)) = self.sends.waiting.pop_front()
        {
            self.deliver(Purpose::Send(id), text, now);
        }
        if !self.sends.waiting.is_empty() {
            self.poll_queue(now);
        }
    }

    /// Looks at the queue again after `queue_poll`, silently (a poll is not news).
    fn poll_queue(&mut self, now: Instant) {
        self.timers.set(
            TimerName::SendQueue,
            Timer {
                started_at: now,
                duration: self.config.queue_poll,
            },
        );
    }

    /// The machine stops: every queued send is refused.
    pub(super) fn refuse_queued(&mut self) {
        while let Some((id, _)) = self.sends.waiting.pop_front() {
            self.refuse_send(id, Refusal::Stopped);
        }
    }
}
