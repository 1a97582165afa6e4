//! The controller's side of an AI checker: Codeman's `AiCheckerBase` status policy
//! (ready, checking, cooldown, disabled; error back-off; disable after repeated errors),
//! kept as plain data so the machine decides on exact virtual time.

use std::time::{Duration, Instant};

use crate::config::CheckerConfig;

/// Where a checker stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    Ready,
    Checking,
    Cooldown { until: Instant },
    Disabled { reason: String },
}

/// What happened to the checker's status after a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum After {
    /// Back to ready.
    Ready,
    /// A cooldown of this length started.
    Cooldown(Duration),
    /// The checker disabled itself.
    Disabled(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) status: Status,
    pub(crate) consecutive_errors: u32,
    /// Set when disabled by errors; survives [`Policy::reset`] like Codeman's
    /// `disabledReason`, until configuration re-enables the checker.
    disabled_reason: Option<String>,
}

impl Policy {
    pub(crate) fn new(config: &CheckerConfig) -> Self {
        let mut policy = Self {
            status: Status::Ready,
            consecutive_errors: 0,
            disabled_reason: None,
        };
        if !config.enabled {
            policy.disable("Disabled by config".to_owned());
        }
        policy
    }

    /// `true` unless disabled (by configuration or errors).
    pub(crate) fn usable(&self) -> bool {
        !matches!(self.status, Status::Disabled { .. })
    }

    pub(crate) fn cooldown_remaining(&self, now: Instant) -> Option<Duration> {
        match self.status {
            Status::Cooldown { until } if until > now => Some(until - now),
            _ => None,
        }
    }

    pub(crate) fn is_checking(&self) -> bool {
        self.status == Status::Checking
    }

    pub(crate) fn begin(&mut self) {
        self.status = Status::Checking;
    }

    /// A cancelled check: ready again, no error counted.
    pub(crate) fn cancelled(&mut self) {
        if self.is_checking() {
            self.status = Status::Ready;
        }
    }

    /// A positive verdict (IDLE, PLAN_MODE).
    pub(crate) fn positive(&mut self) -> After {
        self.consecutive_errors = 0;
        if self.is_checking() {
            self.status = Status::Ready;
        }
        After::Ready
    }

    /// A negative verdict (WORKING, NOT_PLAN_MODE): the cooldown starts.
    pub(crate) fn negative(&mut self, config: &CheckerConfig, now: Instant) -> After {
        self.consecutive_errors = 0;
        if !self.usable() {
            return After::Ready;
        }
        self.status = Status::Cooldown {
            until: now + config.cooldown,
        };
        After::Cooldown(config.cooldown)
    }

    /// An error: back off `error_cooldown × 2^(n-1)` (capped), or disable at the limit.
    pub(crate) fn error(&mut self, config: &CheckerConfig, now: Instant, message: &str) -> After {
        self.consecutive_errors += 1;
        if !self.usable() {
            return After::Ready;
        }
        if self.consecutive_errors >= config.max_consecutive_errors.max(1) {
            let reason = format!("{} consecutive errors: {message}", self.consecutive_errors);
            self.disable(reason.clone());
            return After::Disabled(reason);
        }
        let factor = 1u32
            .checked_shl(self.consecutive_errors - 1)
            .unwrap_or(u32::MAX);
        let backoff = config
            .error_cooldown
            .saturating_mul(factor)
            .min(config.max_error_cooldown);
        self.status = Status::Cooldown {
            until: now + backoff,
        };
        After::Cooldown(backoff)
    }

    /// The cooldown ran out.
    pub(crate) fn cooldown_ended(&mut self, now: Instant) -> bool {
        match self.status {
            Status::Cooldown { until } if until <= now => {
                self.status = Status::Ready;
                true
            }
            _ => false,
        }
    }

    /// Codeman's `reset()` on controller start: cancel, clear the cooldown and the error
    /// count; a checker disabled by errors stays disabled.
    pub(crate) fn reset(&mut self) {
        self.consecutive_errors = 0;
        self.status = match &self.disabled_reason {
            Some(reason) => Status::Disabled {
                reason: reason.clone(),
            },
            None => Status::Ready,
        };
    }

    pub(crate) fn disable(&mut self, reason: String) {
        self.disabled_reason = Some(reason.clone());
        self.status = Status::Disabled { reason };
    }

    /// Re-enabled by configuration: ready, the disable reason forgotten.
    pub(crate) fn enable(&mut self) {
        self.disabled_reason = None;
        self.consecutive_errors = 0;
        if !self.is_checking() {
            self.status = Status::Ready;
        }
    }
}
