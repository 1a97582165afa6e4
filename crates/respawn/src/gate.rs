//! Pluggable gates: conditions outside the session that may hold a cycle back.
//!
//! Codeman hard-codes two product-specific gates in its chain (a team watcher that refuses
//! while teammates work, and a "ralph" tracker's circuit breaker, exit signal and blocked
//! status). hyoka makes the slot pluggable: any number of [`Gate`]s, asked in order after
//! the built-in checks, each able to refuse with a reason. A gate is part of the decision,
//! so it must be sans-IO too: it answers from state it was given, it does not go and look.

use std::time::Instant;

use hyoka_idle_detect::Verdict;

/// What a gate may look at when it is asked.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct GateContext<'a> {
    /// The time of the decision.
    pub now: Instant,
    /// The detector's current verdict.
    pub verdict: &'a Verdict,
    /// Cycles started so far.
    pub cycles: u32,
}

/// A condition that can refuse the start of a cycle.
///
/// A refusal becomes a `blocked` event with reason `gate` and the returned details, the
/// controller goes back to `watching`, and its detection timers are re-armed (unlike
/// Codeman, whose ralph gates leave them unarmed; see §5d 112 in the crate docs).
pub trait Gate: Send {
    /// A short name for logs (`teammates`).
    fn name(&self) -> &str;

    /// `None` lets the cycle start; `Some(details)` refuses it (`2 teammate(s) still
    /// working`).
    fn check(&mut self, ctx: &GateContext<'_>) -> Option<String>;
}

/// A gate from a closure, for tests and small integrations.
pub struct FnGate<F> {
    name: String,
    check: F,
}

impl<F> FnGate<F>
where
    F: FnMut(&GateContext<'_>) -> Option<String> + Send,
{
    /// A gate named `name` that asks `check`.
    pub fn new(name: impl Into<String>, check: F) -> Self {
        Self {
            name: name.into(),
            check,
        }
    }
}

impl<F> Gate for FnGate<F>
where
    F: FnMut(&GateContext<'_>) -> Option<String> + Send,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&mut self, ctx: &GateContext<'_>) -> Option<String> {
        (self.check)(ctx)
    }
}
