//! The AI checker slots: one per checker (idle, plan), each the checker's cooldown and
//! disable state (`hyoka-idle-detect`'s `CheckerMachine`) and the check in flight. The
//! machine handles both through [`Slot`], so what a slot does (cancel a check, report its
//! events, keep its deadline in the timer table) is written once.

use std::time::Instant;

use hyoka_idle_detect::{
    CheckTicket, CheckVerdict, CheckerConfig, CheckerEvent, CheckerMachine, CheckerStatus,
};

use crate::event::{Checker, TimerName};

/// One checker and the check it runs.
pub(super) struct CheckSlot<V: CheckVerdict> {
    /// Cooldowns, errors, disabling, time limits.
    pub(super) machine: CheckerMachine<V>,
    /// The check in flight, if any.
    pub(super) running: Option<CheckTicket>,
}

impl<V: CheckVerdict> CheckSlot<V> {
    /// A slot with `timing`, disabled when the check is off.
    pub(super) fn new(enabled: bool, timing: CheckerConfig) -> Self {
        let mut machine = CheckerMachine::new(timing);
        if !enabled {
            machine.disable("Disabled by config");
            machine.drain_events();
        }
        Self {
            machine,
            running: None,
        }
    }

    /// New timings, keeping a disabled state (a cooldown in progress is dropped).
    pub(super) fn retime(&mut self, timing: CheckerConfig, now: Instant) {
        let mut machine = CheckerMachine::new(timing);
        if let CheckerStatus::Disabled { reason } = self.machine.status(now) {
            let reason = reason.clone();
            machine.disable(&reason);
            machine.drain_events();
        }
        self.machine = machine;
    }
}

/// What the machine does with a slot whatever its verdict type.
pub(super) trait Slot {
    /// The check in flight.
    fn running(&self) -> Option<CheckTicket>;
    /// Forgets the check in flight and tells the checker; returns it.
    fn cancel(&mut self) -> Option<CheckTicket>;
    /// Forgets the check in flight (it timed out or answered).
    fn clear(&mut self);
    /// `true` when the checker is disabled (by configuration or by errors).
    fn disabled(&mut self, now: Instant) -> bool;
    /// Disables the checker.
    fn disable(&mut self, reason: &str);
    /// Enables the checker again.
    fn enable(&mut self);
    /// Fires the checker's due deadlines.
    fn poll(&mut self, now: Instant);
    /// What happened since the last call.
    fn drain_events(&mut self) -> Vec<CheckerEvent>;
    /// The end of the running check's time limit, or of the cooldown.
    fn next_deadline(&self) -> Option<Instant>;
}

impl<V: CheckVerdict> Slot for CheckSlot<V> {
    fn running(&self) -> Option<CheckTicket> {
        self.running
    }

    fn cancel(&mut self) -> Option<CheckTicket> {
        let ticket = self.running.take()?;
        self.machine.cancel();
        Some(ticket)
    }

    fn clear(&mut self) {
        self.running = None;
    }

    fn disabled(&mut self, now: Instant) -> bool {
        matches!(self.machine.status(now), CheckerStatus::Disabled { .. })
    }

    fn disable(&mut self, reason: &str) {
        self.machine.disable(reason);
    }

    fn enable(&mut self) {
        self.machine.enable();
    }

    fn poll(&mut self, now: Instant) {
        self.machine.poll(now);
    }

    fn drain_events(&mut self) -> Vec<CheckerEvent> {
        self.machine.drain_events()
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.machine.next_deadline()
    }
}

/// The timers a checker's deadline lives in: its check's time limit, and its cooldown.
pub(super) fn timers(checker: Checker) -> [TimerName; 2] {
    match checker {
        Checker::Idle => [TimerName::IdleCheckTimeout, TimerName::IdleCheckCooldown],
        Checker::Plan => [TimerName::PlanCheckTimeout, TimerName::PlanCheckCooldown],
    }
}
