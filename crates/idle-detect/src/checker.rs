//! AI checkers: the [`IdleChecker`] (IDLE / WORKING) and [`PlanChecker`] (PLAN_MODE /
//! NOT_PLAN_MODE) traits, Codeman's prompts and verdict parsing, the sans-IO
//! [`CheckerMachine`] (cooldowns, back-off, disabling, cancellation, stale results). The
//! command-backed implementation is `hyoka-respawn`'s `CommandChecker` (this crate has no
//! runtime).
//!
//! Codeman's contract (its `AiIdleChecker` and `AiPlanChecker`; `docs/detection.md`): the last 16,000 (idle) or 8,000
//! (plan) characters of stripped output go into a conservative prompt ("when in doubt, answer
//! WORKING"); the verdict is read from the first line (`^\s*(IDLE|WORKING)\b`, case-insensitive);
//! timeouts are 90 s and 60 s; a WORKING verdict starts a 180 s cooldown and NOT_PLAN_MODE a
//! 30 s one; errors back off 60 s (idle) or 30 s (plan) × 2^(n-1), capped at 5 minutes, and
//! three consecutive errors disable the checker; a cancel resolves exactly once and results
//! that arrive after a cancel or a newer check are ignored.

mod machine;
mod protocol;

pub use self::machine::{
    CheckTicket, CheckerConfig, CheckerEvent, CheckerMachine, CheckerStatus, Finish, Refusal,
};
pub use self::protocol::*;

#[cfg(test)]
mod tests;
