//! `--shard I/N`: splitting a suite across machines, round-robin.

use std::str::FromStr;

use crate::error::EvalError;

/// The 1-based shard `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl Shard {
    /// The most shards a suite may be split into: more machines than any array scheduler
    /// starts (Slurm's default `MaxArraySize` is 1,001), and few enough that a merge may list
    /// the missing ones.
    pub const MAX_COUNT: usize = 10_000;

    /// Whether the eval at `position` (0-based, in suite order) belongs to this shard.
    /// Evals are dealt round-robin, so shards differ in size by at most one and together
    /// cover the suite exactly once.
    pub fn includes(self, position: usize) -> bool {
        position % self.count == self.index - 1
    }
}

impl FromStr for Shard {
    type Err = EvalError;

    /// Parses `I/N` with `1 <= I <= N <=` [`Shard::MAX_COUNT`].
    fn from_str(text: &str) -> Result<Self, EvalError> {
        let err = || {
            EvalError::invalid(
                "shard",
                text,
                "expected I/N with 1 <= I <= N <= 10000, for example 2/4",
            )
        };
        let (index, count) = text.split_once('/').ok_or_else(err)?;
        let index: usize = index.trim().parse().map_err(|_| err())?;
        let count: usize = count.trim().parse().map_err(|_| err())?;
        if index == 0 || count == 0 || index > count || count > Self::MAX_COUNT {
            return Err(err());
        }
        Ok(Self { index, count })
    }
}

#[cfg(test)]
mod tests;
