//! Tokens and cost an agent reports, accumulated in one place.
//!
//! Readers of an agent's output ([`StreamJsonParser`](crate::StreamJsonParser), the
//! `$HYOKA_EVENTS` lines, and readers of other agents' formats added later) turn what the
//! agent says about its spending into [`AgentEvent::Usage`](crate::AgentEvent::Usage) events,
//! each carrying a [`UsageEvent`]: an [increment](UsageEvent::Increment) (spending since the
//! last report) or an [authoritative total](UsageEvent::Total) (the agent's own running
//! total, which replaces what was counted, field by field). A [`UsageMeter`] accumulates
//! them; `hyoka-eval`'s limits' `Monitor` holds the one meter of an eval, and the
//! records (`report.json` `usage`, the run's totals) read it. A reader never touches the
//! limits or the records, so a new format only has to produce these events.
//!
//! Nothing is guessed: a field no event reported stays absent (`null` is never written as
//! 0), and an eval whose agent reported nothing has no `usage` at all.

use serde::{Deserialize, Serialize};

/// Tokens and cost, as `report.json` `usage` and the run's totals record them. Each field is
/// absent when the agent never reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenUsage {
    /// Input tokens (not read from or written to a prompt cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens read from a prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to a prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u64>,
    /// Cost in US dollars, as the agent computed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl TokenUsage {
    /// Whether no field is known.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether any token field is known.
    pub fn has_tokens(&self) -> bool {
        self.input_tokens.is_some()
            || self.output_tokens.is_some()
            || self.cache_read_tokens.is_some()
            || self.cache_creation_tokens.is_some()
    }

    /// Every token counted: input, output, cache reads and cache writes (what `--max-tokens`
    /// limits).
    pub fn tokens(&self) -> u64 {
        [
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_creation_tokens,
        ]
        .into_iter()
        .flatten()
        .fold(0, u64::saturating_add)
    }

    /// [`tokens`](Self::tokens) when any token field is known, else `None`: the one figure
    /// of "tokens" every view shows (the summary, `report compare`, the HTML page).
    pub fn reported_tokens(&self) -> Option<u64> {
        self.has_tokens().then(|| self.tokens())
    }

    /// Adds `other` field by field; a field known on either side is known in the sum.
    pub fn add(&mut self, other: &Self) {
        fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                (a, b) => a.or(b),
            }
        }
        self.input_tokens = sum(self.input_tokens, other.input_tokens);
        self.output_tokens = sum(self.output_tokens, other.output_tokens);
        self.cache_read_tokens = sum(self.cache_read_tokens, other.cache_read_tokens);
        self.cache_creation_tokens = sum(self.cache_creation_tokens, other.cache_creation_tokens);
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// Replaces every field `total` knows; the others keep their value.
    pub fn replace_with(&mut self, total: &Self) {
        self.input_tokens = total.input_tokens.or(self.input_tokens);
        self.output_tokens = total.output_tokens.or(self.output_tokens);
        self.cache_read_tokens = total.cache_read_tokens.or(self.cache_read_tokens);
        self.cache_creation_tokens = total.cache_creation_tokens.or(self.cache_creation_tokens);
        self.cost_usd = total.cost_usd.or(self.cost_usd);
    }

    /// The larger of each figure of `self` and `other`; a figure known on either side is
    /// known.
    #[must_use]
    pub fn max_each(&self, other: &Self) -> Self {
        fn most(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            }
        }
        Self {
            input_tokens: most(self.input_tokens, other.input_tokens),
            output_tokens: most(self.output_tokens, other.output_tokens),
            cache_read_tokens: most(self.cache_read_tokens, other.cache_read_tokens),
            cache_creation_tokens: most(self.cache_creation_tokens, other.cache_creation_tokens),
            cost_usd: match (self.cost_usd, other.cost_usd) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// The field-by-field difference `self - earlier` (saturating at zero): what a repeated
    /// report of one message adds to its earlier report.
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        let minus = |now: Option<u64>, then: Option<u64>| {
            now.map(|now| now.saturating_sub(then.unwrap_or(0)))
        };
        Self {
            input_tokens: minus(self.input_tokens, earlier.input_tokens),
            output_tokens: minus(self.output_tokens, earlier.output_tokens),
            cache_read_tokens: minus(self.cache_read_tokens, earlier.cache_read_tokens),
            cache_creation_tokens: minus(self.cache_creation_tokens, earlier.cache_creation_tokens),
            cost_usd: self
                .cost_usd
                .map(|now| (now - earlier.cost_usd.unwrap_or(0.0)).max(0.0)),
        }
    }

    /// The sum of every usage that is known; `None` when none is.
    pub fn total<'a>(usages: impl IntoIterator<Item = &'a Self>) -> Option<Self> {
        usages.into_iter().fold(None, |acc, usage| {
            let mut acc = acc.unwrap_or_default();
            acc.add(usage);
            Some(acc)
        })
    }
}

/// One report of spending by the agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum UsageEvent {
    /// Spending since the previous report: added to what was counted.
    Increment(TokenUsage),
    /// The agent's own total so far: replaces what was counted, for every field it gives.
    Total(TokenUsage),
}

/// The one accumulator of an eval's [`UsageEvent`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageMeter {
    usage: TokenUsage,
    reported: bool,
}

impl UsageMeter {
    /// Counts one report.
    pub fn apply(&mut self, event: &UsageEvent) {
        match event {
            UsageEvent::Increment(usage) => self.usage.add(usage),
            UsageEvent::Total(usage) => self.usage.replace_with(usage),
        }
        self.reported |= !self.usage.is_empty();
    }

    /// What was counted, or `None` when the agent reported nothing.
    pub fn usage(&self) -> Option<TokenUsage> {
        self.reported.then_some(self.usage)
    }
}

#[cfg(test)]
mod tests;
