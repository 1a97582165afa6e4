//! The verifier's reward: `/logs/verifier/reward.txt` or `reward.json`, read as untrusted
//! files and turned into a score.
//!
//! Harbor's verifier (`harbor/verifier/verifier.py`) reads `reward.txt` as one float
//! (`{"reward": value}`) and `reward.json` as a flat object of numbers, keeping the numeric
//! fields; an empty file is an error, and its default metric takes the single value of each
//! trial's rewards. hyoka reads them the same way, with these rules for the score:
//!
//! - `reward.txt` decides when it exists (the task format's documentation: "Harbor will read
//!   `reward.txt` by default and fall back to `reward.json`"); `reward.json`'s metrics are
//!   still recorded.
//! - In `reward.json`, the metric that decides is `reward` (or the [`RewardRules::key`] a
//!   caller names); a file with one metric decides with it whatever its name; a file with
//!   several and none of that name is an error naming them.
//! - The score must be a finite number from 0 to 1. A trial passes when it is at least
//!   [`RewardRules::threshold`] (1 by default); a lower score is a failure with that score.
//! - No file, an empty one, one that is not a number or a JSON object of numbers, trailing
//!   text, a link, a FIFO, a file larger than [`MAX_REWARD_BYTES`], or a score out of range
//!   is a scorer error: the verifier did not say.

use std::collections::BTreeMap;
use std::path::Path;

use hyoka_workspace::{Entry, EntryKind, Workspace, WorkspaceError};
use serde::{Deserialize, Serialize};

/// The most bytes of a reward file read.
pub const MAX_REWARD_BYTES: u64 = 64 * 1024;

/// How a reward becomes a verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct RewardRules {
    /// The score at or above which a trial passes (1 by default).
    pub threshold: f64,
    /// The metric of a `reward.json` with several that decides (`reward` by default).
    pub key: String,
}

impl Default for RewardRules {
    fn default() -> Self {
        Self {
            threshold: 1.0,
            key: "reward".to_owned(),
        }
    }
}

/// Which file a reward came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RewardFile {
    /// `reward.txt`.
    #[serde(rename = "reward.txt")]
    Text,
    /// `reward.json`.
    #[serde(rename = "reward.json")]
    Json,
}

impl RewardFile {
    /// The file's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Text => "reward.txt",
            Self::Json => "reward.json",
        }
    }
}

/// A verifier's reward, as recorded in `report.json` `reward`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Reward {
    /// The score that decides (the trial's `review.score`).
    pub score: f64,
    /// The metric it is (`reward` for `reward.txt`).
    pub key: String,
    /// The file it came from.
    pub file: RewardFile,
    /// Every numeric metric the verifier wrote (`reward.json`'s fields, and `reward` from
    /// `reward.txt`).
    pub metrics: BTreeMap<String, f64>,
    /// The score a pass needs.
    pub threshold: f64,
}

/// Why there is no reward: a scorer error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewardError {
    /// Neither file exists.
    #[error("the verifier wrote no reward (/logs/verifier/reward.txt or reward.json)")]
    Missing,
    /// A file cannot be read as a reward file (a link, a special file, too large,
    /// unreadable).
    #[error("{file} {reason}")]
    Unreadable {
        /// The file's name.
        file: &'static str,
        /// Why.
        reason: String,
    },
    /// A file's content is not a reward.
    #[error("{file} is not a valid reward: {reason}")]
    Malformed {
        /// The file's name.
        file: &'static str,
        /// Why.
        reason: String,
    },
    /// `reward.json` has several metrics and none is the one that decides.
    #[error(
        "reward.json has no {key:?} metric to decide with (it has {}); name one with --reward-key",
        keys.join(", ")
    )]
    NoMetric {
        /// The metric looked for.
        key: String,
        /// The metrics there are.
        keys: Vec<String>,
    },
    /// The score is not a number from 0 to 1.
    #[error("{file} {key} is {value}, outside 0 to 1")]
    OutOfRange {
        /// The file's name.
        file: &'static str,
        /// The metric.
        key: String,
        /// The value, as text (it may be infinite or not a number).
        value: String,
    },
}

impl Reward {
    /// Whether the score passes.
    pub fn passes(&self) -> bool {
        self.score >= self.threshold
    }
}

/// Reads the reward the verifier left in `verifier` (the trial's `/logs/verifier`, relative
/// to `logs`, the trial's logs directory), through the workspace's contained operations (no
/// link leads out of it): each file must be a regular file of at most [`MAX_REWARD_BYTES`],
/// listed before it is read (so a FIFO is never opened). Call it once every process that
/// could write there has been stopped.
///
/// # Errors
/// [`RewardError`]: no reward, or one that cannot be trusted or read.
pub fn read_reward(
    logs: &dyn Workspace,
    verifier: &Path,
    rules: &RewardRules,
) -> Result<Reward, RewardError> {
    let entries = match logs.list(verifier) {
        Ok(entries) => entries,
        Err(WorkspaceError::NotFound { .. }) => return Err(RewardError::Missing),
        Err(WorkspaceError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(RewardError::Missing);
        }
        Err(e) => {
            return Err(RewardError::Unreadable {
                file: "/logs/verifier",
                reason: format!("cannot be listed: {e}"),
            });
        }
    };
    let text = read_file(logs, verifier, &entries, RewardFile::Text)?;
    let json = read_file(logs, verifier, &entries, RewardFile::Json)?;
    match (text, json) {
        (None, None) => Err(RewardError::Missing),
        (Some(text), json) => {
            let score = parse_text(&text)?;
            let mut metrics = json
                .and_then(|json| parse_json(&json).ok())
                .unwrap_or_default();
            metrics.insert("reward".to_owned(), score);
            checked(
                Reward {
                    score,
                    key: "reward".to_owned(),
                    file: RewardFile::Text,
                    metrics,
                    threshold: rules.threshold,
                },
                RewardFile::Text,
            )
        }
        (None, Some(json)) => {
            let metrics = parse_json(&json)?;
            let key = if metrics.contains_key(&rules.key) {
                rules.key.clone()
            } else if metrics.len() == 1 {
                metrics.keys().next().cloned().unwrap_or_default()
            } else {
                return Err(RewardError::NoMetric {
                    key: rules.key.clone(),
                    keys: metrics.keys().cloned().collect(),
                });
            };
            let score = metrics[&key];
            checked(
                Reward {
                    score,
                    key,
                    file: RewardFile::Json,
                    metrics,
                    threshold: rules.threshold,
                },
                RewardFile::Json,
            )
        }
    }
}

fn checked(reward: Reward, file: RewardFile) -> Result<Reward, RewardError> {
    if reward.score.is_finite() && (0.0..=1.0).contains(&reward.score) {
        Ok(reward)
    } else {
        Err(RewardError::OutOfRange {
            file: file.name(),
            key: reward.key,
            value: reward.score.to_string(),
        })
    }
}

/// `reward.txt`: one number, with whitespace around it (as Python's `float()` reads it).
fn parse_text(text: &str) -> Result<f64, RewardError> {
    let malformed = |reason: String| RewardError::Malformed {
        file: "reward.txt",
        reason,
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(malformed("the file is empty".to_owned()));
    }
    trimmed.parse::<f64>().map_err(|_| {
        let shown: String = trimmed.chars().take(40).collect();
        malformed(format!("{shown:?} is not a number"))
    })
}

/// `reward.json`: an object; its numeric fields are the metrics (booleans and other values
/// are left out, as Harbor leaves them out).
fn parse_json(text: &str) -> Result<BTreeMap<String, f64>, RewardError> {
    let malformed = |reason: String| RewardError::Malformed {
        file: "reward.json",
        reason,
    };
    if text.trim().is_empty() {
        return Err(malformed("the file is empty".to_owned()));
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
    let Some(object) = value.as_object() else {
        return Err(malformed("not a JSON object".to_owned()));
    };
    let metrics: BTreeMap<String, f64> = object
        .iter()
        .filter_map(|(key, value)| Some((key.clone(), value.as_f64()?)))
        .collect();
    if metrics.is_empty() {
        return Err(malformed("no numeric metric".to_owned()));
    }
    Ok(metrics)
}

/// One reward file's text: `None` when it does not exist.
fn read_file(
    logs: &dyn Workspace,
    verifier: &Path,
    entries: &[Entry],
    file: RewardFile,
) -> Result<Option<String>, RewardError> {
    let name = file.name();
    let unreadable = |reason: String| RewardError::Unreadable { file: name, reason };
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        return Ok(None);
    };
    match entry.kind {
        EntryKind::File => {}
        EntryKind::Symlink => return Err(unreadable("is a symbolic link".to_owned())),
        _ => return Err(unreadable("is not a regular file".to_owned())),
    }
    if entry.len > MAX_REWARD_BYTES {
        return Err(unreadable(format!(
            "is larger than {MAX_REWARD_BYTES} bytes"
        )));
    }
    let bytes = logs
        .read_file(&verifier.join(name))
        .map_err(|e| unreadable(format!("cannot be read: {e}")))?;
    if bytes.len() as u64 > MAX_REWARD_BYTES {
        return Err(unreadable(format!("grew past {MAX_REWARD_BYTES} bytes")));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| RewardError::Malformed {
            file: name,
            reason: "not UTF-8 text".to_owned(),
        })
}

#[cfg(test)]
mod tests;
