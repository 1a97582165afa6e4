//! Limits and their enforcement while the agent runs.
//!
//! [`Monitor`] is sans-IO: it takes counted events (turns, tool calls, spending, workspace
//! usage) and says, in O(1) per event, whether a limit has just been crossed. The first
//! limit crossed wins; its [`Termination`] and the counts at that moment are frozen for the
//! report. Spending is accumulated here, in the monitor's one [`UsageMeter`], whatever
//! reader reported it.

use serde::{Deserialize, Serialize};

use crate::events::AgentEvent;
use crate::report::{Counts, Termination};
use crate::usage::{TokenUsage, UsageEvent, UsageMeter};

/// Built-in limits, used when neither the command line, the eval nor the suite's defaults
/// set one. `0` disables a limit.
pub const DEFAULT_MAX_TURNS: u64 = 25;
/// See [`DEFAULT_MAX_TURNS`].
pub const DEFAULT_MAX_FILES: u64 = 50;
/// See [`DEFAULT_MAX_TURNS`].
pub const DEFAULT_MAX_OUTPUT_SIZE: u64 = 1024 * 1024;
/// See [`DEFAULT_MAX_TURNS`].
pub const DEFAULT_MAX_SESSION_ACTIONS: u64 = 50;

/// The counted limits in force for one eval (`0` disables one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LimitSet {
    /// Assistant messages.
    pub max_turns: u64,
    /// Files created or changed.
    pub max_files: u64,
    /// Bytes of files created or changed.
    pub max_output_size: u64,
    /// Tool calls.
    pub max_session_actions: u64,
    /// Tokens the agent reports (input, output, cache reads and writes); off by default.
    pub max_tokens: u64,
    /// Dollars the agent reports spending; off by default.
    pub max_cost: f64,
}

impl Default for LimitSet {
    fn default() -> Self {
        Self {
            max_turns: DEFAULT_MAX_TURNS,
            max_files: DEFAULT_MAX_FILES,
            max_output_size: DEFAULT_MAX_OUTPUT_SIZE,
            max_session_actions: DEFAULT_MAX_SESSION_ACTIONS,
            max_tokens: 0,
            max_cost: 0.0,
        }
    }
}

/// Limits given at one level (command line, eval, suite defaults): unset fields fall through
/// to the next level.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PartialLimits {
    /// Assistant messages.
    pub max_turns: Option<u64>,
    /// Files created or changed.
    pub max_files: Option<u64>,
    /// Bytes of files created or changed.
    pub max_output_size: Option<u64>,
    /// Tool calls.
    pub max_session_actions: Option<u64>,
    /// Tokens the agent reports.
    pub max_tokens: Option<u64>,
    /// Dollars the agent reports spending.
    pub max_cost: Option<f64>,
}

impl PartialLimits {
    /// Fills unset fields from `lower`.
    #[must_use]
    pub fn or(self, lower: Self) -> Self {
        Self {
            max_turns: self.max_turns.or(lower.max_turns),
            max_files: self.max_files.or(lower.max_files),
            max_output_size: self.max_output_size.or(lower.max_output_size),
            max_session_actions: self.max_session_actions.or(lower.max_session_actions),
            max_tokens: self.max_tokens.or(lower.max_tokens),
            max_cost: self.max_cost.or(lower.max_cost),
        }
    }

    /// Resolves to a complete set, using the built-in defaults for unset fields.
    pub fn resolve(self) -> LimitSet {
        let builtin = LimitSet::default();
        LimitSet {
            max_turns: self.max_turns.unwrap_or(builtin.max_turns),
            max_files: self.max_files.unwrap_or(builtin.max_files),
            max_output_size: self.max_output_size.unwrap_or(builtin.max_output_size),
            max_session_actions: self
                .max_session_actions
                .unwrap_or(builtin.max_session_actions),
            max_tokens: self.max_tokens.unwrap_or(builtin.max_tokens),
            max_cost: self.max_cost.unwrap_or(builtin.max_cost),
        }
    }
}

/// Counts events against a [`LimitSet`] and reports the first limit crossed.
#[derive(Debug, Clone)]
pub struct Monitor {
    limits: LimitSet,
    counts: Counts,
    spending: UsageMeter,
    stopped: Option<(Termination, Counts)>,
}

impl Monitor {
    /// A monitor with nothing counted yet.
    pub fn new(limits: LimitSet) -> Self {
        Self {
            limits,
            counts: Counts::default(),
            spending: UsageMeter::default(),
            stopped: None,
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The limit that stopped the session and the counts at that moment, once one has.
    pub fn stopped(&self) -> Option<(Termination, Counts)> {
        self.stopped
    }

    /// The tokens and cost the agent reported so far, or `None` when it reported none.
    pub fn spending(&self) -> Option<TokenUsage> {
        self.spending.usage()
    }

    /// Counts one agent event (a turn, a tool call, a report of spending). Returns the limit
    /// crossed, if this crossed the first.
    pub fn event(&mut self, event: &AgentEvent) -> Option<Termination> {
        match event {
            AgentEvent::Turn { .. } => self.turn(),
            AgentEvent::ToolCall { .. } => self.action(),
            AgentEvent::Usage(usage) => self.spend(usage),
        }
    }

    /// Counts one report of spending against `max_tokens` and `max_cost`.
    pub fn spend(&mut self, event: &UsageEvent) -> Option<Termination> {
        self.spending.apply(event);
        let usage = self.spending.usage().unwrap_or_default();
        let max_cost = self.limits.max_cost;
        self.check(
            usage.tokens(),
            self.limits.max_tokens,
            Termination::MaxTokens,
        )
        .or_else(|| {
            (max_cost > 0.0 && usage.cost_usd.is_some_and(|c| c > max_cost))
                .then(|| self.stop(Termination::MaxCost))
                .flatten()
        })
    }

    /// Counts one assistant message. Returns the limit crossed, if this crossed the first.
    pub fn turn(&mut self) -> Option<Termination> {
        self.counts.turns += 1;
        self.check(
            self.counts.turns,
            self.limits.max_turns,
            Termination::MaxTurns,
        )
    }

    /// Counts one tool call.
    pub fn action(&mut self) -> Option<Termination> {
        self.counts.actions += 1;
        self.check(
            self.counts.actions,
            self.limits.max_session_actions,
            Termination::MaxSessionActions,
        )
    }

    /// Records the workspace usage (files created or changed, and their bytes).
    pub fn usage(&mut self, files: u64, bytes: u64) -> Option<Termination> {
        self.counts.files = files;
        self.counts.output_bytes = bytes;
        self.check(files, self.limits.max_files, Termination::MaxFiles)
            .or_else(|| {
                self.check(
                    bytes,
                    self.limits.max_output_size,
                    Termination::MaxOutputSize,
                )
            })
    }

    /// Stops with `termination` when `count` is over `limit` (0: no limit).
    fn check(&mut self, count: u64, limit: u64, termination: Termination) -> Option<Termination> {
        if limit == 0 || count <= limit {
            return None;
        }
        self.stop(termination)
    }

    /// Freezes `termination` and the counts, unless a limit already stopped the session.
    fn stop(&mut self, termination: Termination) -> Option<Termination> {
        if self.stopped.is_some() {
            return None;
        }
        self.stopped = Some((termination, self.counts));
        Some(termination)
    }
}

#[cfg(test)]
mod tests;
