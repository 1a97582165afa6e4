//! The sans-IO state machine around an AI checker: when a check may start, what its result
//! does to cooldowns and error counts, and which results are stale.

use std::time::{Duration, Instant};

use super::protocol::{CheckReply, CheckVerdict};
use crate::error::CheckError;

/// Timings of a [`CheckerMachine`]; [`CheckerConfig::idle`] and [`CheckerConfig::plan`] give
/// Codeman's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckerConfig {
    /// How long a check may run before it counts as an error.
    pub timeout: Duration,
    /// The cooldown after the negative verdict (WORKING, NOT_PLAN_MODE).
    pub cooldown: Duration,
    /// The first error's cooldown; the n-th consecutive error waits `error_cooldown × 2^(n-1)`.
    pub error_cooldown: Duration,
    /// The cap of the error back-off.
    pub max_error_cooldown: Duration,
    /// Consecutive errors after which the checker disables itself.
    pub max_consecutive_errors: u32,
}

impl CheckerConfig {
    /// The idle checker: timeout 90 s, cooldown 180 s, error back-off 60 s doubling to 5 min,
    /// disabled after 3 consecutive errors.
    pub fn idle() -> Self {
        Self {
            timeout: Duration::from_secs(90),
            cooldown: Duration::from_mins(3),
            error_cooldown: Duration::from_mins(1),
            max_error_cooldown: Duration::from_mins(5),
            max_consecutive_errors: 3,
        }
    }

    /// The plan checker: timeout 60 s, cooldown 30 s, error back-off 30 s doubling to 5 min,
    /// disabled after 3 consecutive errors.
    pub fn plan() -> Self {
        Self {
            timeout: Duration::from_mins(1),
            cooldown: Duration::from_secs(30),
            error_cooldown: Duration::from_secs(30),
            max_error_cooldown: Duration::from_mins(5),
            max_consecutive_errors: 3,
        }
    }
}

/// What the checker is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckerStatus {
    /// A check may start.
    Ready,
    /// Check `id` is running since `since`.
    Checking {
        /// The running check.
        id: u64,
        /// When it started.
        since: Instant,
    },
    /// No check until `until`.
    Cooldown {
        /// When the cooldown ends.
        until: Instant,
    },
    /// No check until [`CheckerMachine::enable`].
    Disabled {
        /// Why.
        reason: String,
    },
}

/// Permission to run one check; hand it back to [`CheckerMachine::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckTicket {
    id: u64,
    started: Instant,
}

impl CheckTicket {
    /// The check's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// When the check started.
    pub fn started(&self) -> Instant {
        self.started
    }
}

/// Why a check may not start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The checker is disabled (`Disabled: <reason>`).
    Disabled(String),
    /// The checker is cooling down (`On cooldown`).
    OnCooldown {
        /// Time left.
        remaining: Duration,
    },
    /// A check is already running (`Already checking`).
    AlreadyChecking,
}

/// What a finished check means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish<V> {
    /// The verdict counts.
    Verdict(CheckReply<V>),
    /// The check failed; the error was counted (and may have disabled the checker).
    Failed {
        /// The error's message.
        error: String,
        /// Consecutive errors so far.
        consecutive: u32,
    },
    /// The result belongs to a cancelled, timed-out or superseded check: ignore it.
    Stale,
}

/// Something the machine did, for logs and event streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckerEvent {
    /// A check started.
    Started {
        /// Its id.
        id: u64,
    },
    /// A running check exceeded its timeout and counts as an error.
    TimedOut {
        /// Its id.
        id: u64,
    },
    /// A cooldown started.
    CooldownStarted {
        /// When it ends.
        until: Instant,
    },
    /// The cooldown ended.
    CooldownEnded,
    /// The checker disabled itself.
    Disabled {
        /// Why.
        reason: String,
    },
}

/// The checker state machine (Codeman's `AiCheckerBase`), generic over the verdict.
#[derive(Debug, Clone)]
pub struct CheckerMachine<V> {
    config: CheckerConfig,
    status: CheckerStatus,
    next_id: u64,
    consecutive_errors: u32,
    total_checks: u64,
    events: Vec<CheckerEvent>,
    _verdict: std::marker::PhantomData<fn() -> V>,
}

impl<V: CheckVerdict> CheckerMachine<V> {
    /// A ready machine.
    pub fn new(config: CheckerConfig) -> Self {
        Self {
            config,
            status: CheckerStatus::Ready,
            next_id: 1,
            consecutive_errors: 0,
            total_checks: 0,
            events: Vec::new(),
            _verdict: std::marker::PhantomData,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CheckerConfig {
        &self.config
    }

    /// The status at `now` (an expired cooldown reads as `Ready`; see [`CheckerMachine::poll`]).
    pub fn status(&mut self, now: Instant) -> &CheckerStatus {
        self.poll(now);
        &self.status
    }

    /// Consecutive errors so far.
    pub fn consecutive_errors(&self) -> u32 {
        self.consecutive_errors
    }

    /// Checks started so far.
    pub fn total_checks(&self) -> u64 {
        self.total_checks
    }

    /// Takes the events recorded since the last call.
    pub fn drain_events(&mut self) -> Vec<CheckerEvent> {
        std::mem::take(&mut self.events)
    }

    /// Applies the passage of time: ends an expired cooldown, and times out a check that ran
    /// past its timeout (counted as an error; its late result will be stale).
    pub fn poll(&mut self, now: Instant) {
        match self.status {
            CheckerStatus::Cooldown { until } if now >= until => {
                self.status = CheckerStatus::Ready;
                self.events.push(CheckerEvent::CooldownEnded);
            }
            CheckerStatus::Checking { id, since }
                if now.saturating_duration_since(since) >= self.config.timeout =>
            {
                self.events.push(CheckerEvent::TimedOut { id });
                self.status = CheckerStatus::Ready;
                let msg = CheckError::Timeout {
                    after: self.config.timeout,
                }
                .to_string();
                self.record_error(now, &msg);
            }
            _ => {}
        }
    }

    /// The next time [`CheckerMachine::poll`] has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        match self.status {
            CheckerStatus::Cooldown { until } => Some(until),
            CheckerStatus::Checking { since, .. } => Some(since + self.config.timeout),
            _ => None,
        }
    }

    /// Starts a check at `now`, or says why not.
    pub fn try_start(&mut self, now: Instant) -> Result<CheckTicket, Refusal> {
        self.poll(now);
        match &self.status {
            CheckerStatus::Disabled { reason } => Err(Refusal::Disabled(reason.clone())),
            CheckerStatus::Cooldown { until } => Err(Refusal::OnCooldown {
                remaining: until.saturating_duration_since(now),
            }),
            CheckerStatus::Checking { .. } => Err(Refusal::AlreadyChecking),
            CheckerStatus::Ready => {
                let id = self.next_id;
                self.next_id += 1;
                self.total_checks += 1;
                self.status = CheckerStatus::Checking { id, since: now };
                self.events.push(CheckerEvent::Started { id });
                Ok(CheckTicket { id, started: now })
            }
        }
    }

    /// Records the result of the check `ticket` at `now`.
    ///
    /// A verdict resets the error count; the negative verdict starts the cooldown. An error
    /// (other than [`CheckError::Cancelled`]) counts towards the back-off and disabling. A
    /// result for a check that is no longer the running one is [`Finish::Stale`] and changes
    /// nothing.
    pub fn finish(
        &mut self,
        now: Instant,
        ticket: CheckTicket,
        result: Result<CheckReply<V>, CheckError>,
    ) -> Finish<V> {
        self.poll(now);
        if self.status
            != (CheckerStatus::Checking {
                id: ticket.id,
                since: ticket.started,
            })
        {
            return Finish::Stale;
        }
        self.status = CheckerStatus::Ready;
        match result {
            Ok(reply) => {
                self.consecutive_errors = 0;
                if reply.verdict.starts_cooldown() {
                    self.start_cooldown(now + self.config.cooldown);
                }
                Finish::Verdict(reply)
            }
            Err(CheckError::Cancelled) => Finish::Stale,
            Err(e) => {
                let error = e.to_string();
                self.record_error(now, &error);
                Finish::Failed {
                    error,
                    consecutive: self.consecutive_errors,
                }
            }
        }
    }

    /// Cancels the running check: `Some(ticket id)` the first time, `None` when nothing runs.
    /// A cancelled check counts no error and starts no cooldown; its result, if it still
    /// arrives, is stale.
    pub fn cancel(&mut self) -> Option<u64> {
        match self.status {
            CheckerStatus::Checking { id, .. } => {
                self.status = CheckerStatus::Ready;
                Some(id)
            }
            _ => None,
        }
    }

    /// Clears cooldowns and errors (Codeman's `reset()`); a disabled checker stays disabled.
    pub fn reset(&mut self) {
        self.consecutive_errors = 0;
        if !matches!(self.status, CheckerStatus::Disabled { .. }) {
            self.status = CheckerStatus::Ready;
        }
    }

    /// Re-enables a disabled checker with a clean error count.
    pub fn enable(&mut self) {
        self.consecutive_errors = 0;
        self.status = CheckerStatus::Ready;
    }

    /// Disables the checker (a running check's result becomes stale).
    pub fn disable(&mut self, reason: &str) {
        self.status = CheckerStatus::Disabled {
            reason: reason.to_owned(),
        };
        self.events.push(CheckerEvent::Disabled {
            reason: reason.to_owned(),
        });
    }

    fn start_cooldown(&mut self, until: Instant) {
        self.status = CheckerStatus::Cooldown { until };
        self.events.push(CheckerEvent::CooldownStarted { until });
    }

    fn record_error(&mut self, now: Instant, message: &str) {
        self.consecutive_errors += 1;
        let n = self.consecutive_errors;
        if n >= self.config.max_consecutive_errors {
            self.disable(&format!("{n} consecutive errors: {message}"));
            return;
        }
        let factor = 1u32.checked_shl(n - 1).unwrap_or(u32::MAX);
        let wait = self
            .config
            .error_cooldown
            .saturating_mul(factor)
            .min(self.config.max_error_cooldown);
        self.start_cooldown(now + wait);
    }
}
