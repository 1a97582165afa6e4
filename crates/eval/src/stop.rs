//! Stopping a run from outside: gracefully first, at once on a second request.
//!
//! The first [`Stopper::request`] asks each running eval to stop its agent with the usual
//! grace period (`termination: interrupted`) and evals that have not started are recorded as
//! not started; records are still written and workspaces removed. A second request turns
//! every stop into an immediate SIGKILL and still writes the records. The harness installs
//! no signal handler: the caller (the CLI, on SIGINT, SIGTERM and SIGHUP) requests the stop,
//! through [`Stopper::signal`], which takes one delivery that arrived twice (a signal sent to
//! hyoka and to its process group) as one request.

use std::time::{Duration, Instant};

use tokio::sync::watch;

/// Why a stop was requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// SIGINT.
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP.
    Hangup,
    /// The embedding program asked.
    Cancel,
}

impl StopReason {
    /// The name used in records (`SIGINT`, …, `a cancellation`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
            Self::Cancel => "a cancellation",
        }
    }
}

/// How hard the run has been asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopLevel {
    /// Not asked.
    Running,
    /// Stop with the grace period.
    Graceful(StopReason),
    /// Stop now: SIGKILL. The reason is the first request's.
    Force(StopReason),
}

/// Requests stops; every [`Stop`] made from it sees them.
#[derive(Debug)]
pub struct Stopper {
    tx: watch::Sender<StopLevel>,
    /// The last signal [`Stopper::signal`] took, and when.
    last_signal: std::sync::Mutex<Option<(StopReason, Instant)>>,
}

/// How long after a signal the same signal again is taken as the same delivery, not as a
/// second request (see [`Stopper::signal`]): 1 s for SIGTERM and SIGHUP, which `timeout(1)`,
/// `kill -- -PGID` scripts and service managers send to a process and then to its whole
/// process group, so one stop arrives twice microseconds apart; none for SIGINT, which a
/// terminal sends to the foreground group once, and which a person or a script sends again
/// on purpose to kill at once, however soon.
pub fn same_delivery_window(reason: StopReason) -> Duration {
    match reason {
        StopReason::Interrupt => Duration::ZERO,
        _ => Duration::from_secs(1),
    }
}

impl Stopper {
    /// A stopper and the first handle on it.
    pub fn new() -> (Self, Stop) {
        let (tx, rx) = watch::channel(StopLevel::Running);
        let stopper = Self {
            tx,
            last_signal: std::sync::Mutex::new(None),
        };
        (stopper, Stop { rx, _idle: None })
    }

    /// A signal of `reason` received at `now`: a [`request`](Self::request), unless the same
    /// signal was taken less than [`same_delivery_window`] before, which is one delivery
    /// that arrived twice (`timeout -s TERM` signals hyoka and then its process group; the
    /// kernel merges the two only when the first is still pending) and changes nothing.
    /// Returns the level now in force, and whether this signal was a request of its own.
    pub fn signal(&self, reason: StopReason, now: Instant) -> (StopLevel, bool) {
        let mut last = self
            .last_signal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let repeat = last.is_some_and(|(previous, at)| {
            previous == reason && now.saturating_duration_since(at) < same_delivery_window(reason)
        });
        if repeat {
            drop(last);
            return (*self.tx.borrow(), false);
        }
        // A repeat does not move the window: a signal sent again and again still escalates.
        *last = Some((reason, now));
        drop(last);
        (self.request(reason), true)
    }

    /// Requests a stop: the first request is graceful, any further one forces. Returns the
    /// level now in force.
    pub fn request(&self, reason: StopReason) -> StopLevel {
        let mut level = StopLevel::Running;
        self.tx.send_modify(|current| {
            *current = match *current {
                StopLevel::Running => StopLevel::Graceful(reason),
                StopLevel::Graceful(first) | StopLevel::Force(first) => StopLevel::Force(first),
            };
            level = *current;
        });
        level
    }
}

/// A handle every eval watches.
#[derive(Debug, Clone)]
pub struct Stop {
    rx: watch::Receiver<StopLevel>,
    /// Keeps a sender alive for handles no [`Stopper`] feeds.
    _idle: Option<std::sync::Arc<watch::Sender<StopLevel>>>,
}

impl Stop {
    /// A handle that is never asked to stop.
    pub fn never() -> Self {
        let (tx, rx) = watch::channel(StopLevel::Running);
        Self {
            rx,
            _idle: Some(std::sync::Arc::new(tx)),
        }
    }

    /// The level now.
    pub fn level(&self) -> StopLevel {
        *self.rx.borrow()
    }

    /// The reason of the first request, once there was one.
    pub fn reason(&self) -> Option<StopReason> {
        match self.level() {
            StopLevel::Running => None,
            StopLevel::Graceful(reason) | StopLevel::Force(reason) => Some(reason),
        }
    }

    /// Resolves once a stop is requested; returns its reason. Cancel-safe.
    pub async fn requested(&mut self) -> StopReason {
        loop {
            let level = *self.rx.borrow_and_update();
            if let StopLevel::Graceful(reason) | StopLevel::Force(reason) = level {
                return reason;
            }
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// Resolves once a forced stop is requested. Cancel-safe.
    pub async fn forced(&mut self) {
        loop {
            if matches!(*self.rx.borrow_and_update(), StopLevel::Force(_)) {
                return;
            }
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}

#[cfg(test)]
mod tests;
