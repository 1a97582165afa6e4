//! The AI-checker seam of the driver: run one idle or plan check on some context.
//!
//! The machine decides when a check runs, how long it may take, and what its cooldowns
//! are; an implementation only answers. Implementations must be cancel-safe: the driver
//! cancels a check by dropping its future, which must tear down whatever it started.

use async_trait::async_trait;

use crate::event::{CheckOutcome, IdleVerdict, PlanVerdict};

/// Runs AI checks for the driver.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait Checks: Send + Sync {
    /// IDLE or WORKING, judged from `context` (the tail of the stripped output).
    async fn check_idle(&self, context: String) -> CheckOutcome<IdleVerdict>;

    /// PLAN_MODE or NOT_PLAN_MODE, judged from `context`.
    async fn check_plan(&self, context: String) -> CheckOutcome<PlanVerdict>;
}
