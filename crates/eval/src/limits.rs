//! Limits and their enforcement while the agent runs.
//!
//! [`Monitor`] is sans-IO: it takes counted events (turns, tool calls, spending, workspace
//! usage) and says, in O(1) per event, whether a limit has just been crossed. The first
//! limit crossed wins; its [`Termination`] and the counts at that moment are frozen for the
//! report. Spending is accumulated here, in the monitor's one [`UsageMeter`], whatever
//! reader reported it.

use serde::{Deserialize, Serialize};

use crate::report::{Counts, Termination};
use hyoka_events::AgentEvent;
use hyoka_events::{TokenUsage, UsageEvent, UsageMeter};

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
    /// Bytes of memory each process tree of the eval may use (cgroup); off by default.
    #[serde(default)]
    pub max_memory: u64,
    /// Processes each tree may have at once (cgroup); off by default.
    #[serde(default)]
    pub max_pids: u64,
    /// Thousandths of a CPU each tree may use (cgroup); off by default.
    #[serde(default)]
    pub cpu_millis: u32,
    /// Bytes the workspace's changes, the private `/tmp` and the isolated home may hold
    /// together; off by default.
    #[serde(default)]
    pub max_disk: u64,
}

impl LimitSet {
    /// The cgroup limits of each process tree of the eval.
    pub fn resources(&self) -> hyoka_proctrack::ResourceLimits {
        hyoka_proctrack::ResourceLimits {
            memory: (self.max_memory > 0).then_some(self.max_memory),
            pids: (self.max_pids > 0).then_some(self.max_pids),
            cpu_millis: (self.cpu_millis > 0).then_some(self.cpu_millis),
        }
    }
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
            max_memory: 0,
            max_pids: 0,
            cpu_millis: 0,
            max_disk: 0,
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
    /// Bytes of memory per process tree.
    pub max_memory: Option<u64>,
    /// Processes per tree.
    pub max_pids: Option<u64>,
    /// Thousandths of a CPU per tree.
    pub cpu_millis: Option<u32>,
    /// Bytes of the workspace's changes, the private `/tmp` and the isolated home.
    pub max_disk: Option<u64>,
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
            max_memory: self.max_memory.or(lower.max_memory),
            max_pids: self.max_pids.or(lower.max_pids),
            cpu_millis: self.cpu_millis.or(lower.cpu_millis),
            max_disk: self.max_disk.or(lower.max_disk),
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
            max_memory: self.max_memory.unwrap_or(builtin.max_memory),
            max_pids: self.max_pids.unwrap_or(builtin.max_pids),
            cpu_millis: self.cpu_millis.unwrap_or(builtin.cpu_millis),
            max_disk: self.max_disk.unwrap_or(builtin.max_disk),
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
    disk_peak: u64,
}

impl Monitor {
    /// A monitor with nothing counted yet.
    pub fn new(limits: LimitSet) -> Self {
        Self {
            limits,
            counts: Counts::default(),
            spending: UsageMeter::default(),
            stopped: None,
            disk_peak: 0,
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
            AgentEvent::ToolResult { .. }
            | AgentEvent::Announced { .. }
            | AgentEvent::ApiError { .. } => None,
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

    /// Records the bytes on disk (the workspace's changes, the private `/tmp` and the
    /// isolated home together) against `max_disk`.
    pub fn disk(&mut self, bytes: u64) -> Option<Termination> {
        self.disk_peak = self.disk_peak.max(bytes);
        self.check(bytes, self.limits.max_disk, Termination::MaxDisk)
    }

    /// The most bytes on disk at one check.
    pub fn disk_peak(&self) -> u64 {
        self.disk_peak
    }

    /// The kernel's OOM killer ended a process at the memory limit: the session stops.
    pub fn out_of_memory(&mut self) -> Option<Termination> {
        if self.limits.max_memory == 0 {
            return None;
        }
        self.stop(Termination::MaxMemory)
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
