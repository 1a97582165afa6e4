//! The named timers as plain deadlines: a fixed table, no allocation, no OS timers.

use std::time::{Duration, Instant};

use crate::event::TimerName;

/// One armed timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timer {
    /// When it was (re)started.
    pub(crate) started_at: Instant,
    /// Its length, fixed when it was started (a configuration change does not move it).
    pub(crate) duration: Duration,
}

impl Timer {
    pub(crate) fn deadline(self) -> Instant {
        self.started_at + self.duration
    }
}

/// The table of armed timers, indexed by [`TimerName`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Timers {
    slots: [Option<Timer>; TimerName::ALL.len()],
}

fn index(name: TimerName) -> usize {
    // `TimerName::ALL` lists the variants in declaration order.
    name as usize
}

impl Timers {
    pub(crate) fn get(&self, name: TimerName) -> Option<Timer> {
        self.slots[index(name)]
    }

    pub(crate) fn is_armed(&self, name: TimerName) -> bool {
        self.get(name).is_some()
    }

    /// Arms (or re-arms) `name`; returns the timer it replaced.
    pub(crate) fn set(&mut self, name: TimerName, timer: Timer) -> Option<Timer> {
        self.slots[index(name)].replace(timer)
    }

    /// Disarms `name`; returns the timer if it was armed.
    pub(crate) fn take(&mut self, name: TimerName) -> Option<Timer> {
        self.slots[index(name)].take()
    }

    /// The earliest deadline, with its timer. Ties go to the timer listed first in
    /// [`TimerName::ALL`].
    pub(crate) fn earliest(&self) -> Option<(TimerName, Instant)> {
        let mut best: Option<(TimerName, Instant)> = None;
        for (slot, &name) in self.slots.iter().zip(TimerName::ALL.iter()) {
            if let Some(timer) = slot {
                let deadline = timer.deadline();
                if best.is_none_or(|(_, b)| deadline < b) {
                    best = Some((name, deadline));
                }
            }
        }
        best
    }

    /// Every armed timer, in table order.
    pub(crate) fn armed(&self) -> impl Iterator<Item = (TimerName, Timer)> + '_ {
        self.slots
            .iter()
            .zip(TimerName::ALL.iter())
            .filter_map(|(slot, &name)| slot.map(|t| (name, t)))
    }
}
