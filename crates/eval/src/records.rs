//! Records on disk: `report.json`, `run.json`, `action_timeline.json` and `status.json`,
//! always written atomically through `hyoka-proctrack`'s [`write_atomic`] (temp file in the
//! same directory, fsync, rename, fsync of the directory), the helper the ledger uses too.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use hyoka_proctrack::{RunListing, write_atomic};
use serde::Serialize;

use crate::error::EvalError;

/// The file an eval of a live run names its current phase in, for `hyoka ps`.
pub const STATUS_FILE: &str = "status.json";

/// Serializes `value` as pretty JSON (with a trailing newline) and writes it atomically.
///
/// # Errors
/// [`EvalError::Record`] (or [`EvalError::Io`] for a value that cannot be serialized)
/// naming the file.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), EvalError> {
    let mut bytes =
        serde_json::to_vec_pretty(value).map_err(|e| EvalError::io("serialize", path, e.into()))?;
    bytes.push(b'\n');
    write_atomic(path, &bytes).map_err(|source| EvalError::Record {
        path: path.to_owned(),
        source,
    })
}

/// A wall-clock instant rendered as RFC 3339 with milliseconds, in UTC.
pub fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// Milliseconds in `duration`, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Writes `<eval_dir>/status.json` (`{"phase": …, "since": …}`), which tells `hyoka ps`
/// where a live eval is.
pub(crate) fn mark_phase(eval_dir: &Path, phase: &str, now: SystemTime) {
    let status = serde_json::json!({ "phase": phase, "since": rfc3339(now) });
    if let Err(err) = write_json(&eval_dir.join(STATUS_FILE), &status) {
        tracing::debug!(error = %err, "cannot record the phase");
    }
}

/// The phase an eval of a live run is in and since when, from its `status.json`.
pub fn current_phase(eval_dir: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string(eval_dir.join(STATUS_FILE)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some((
        value.get("phase")?.as_str()?.to_owned(),
        value.get("since")?.as_str()?.to_owned(),
    ))
}

/// A live run as `hyoka ps` shows it: the ledger's view, plus the phase each eval is in.
#[derive(Debug, Clone, Serialize)]
pub struct LiveRun {
    /// The run's owner, ledger, evals and tracked processes.
    #[serde(flatten)]
    pub run: RunListing,
    /// The phase each eval is in (`setup`, `services`, `agent`, `build`, `review`,
    /// `cleanup`), by eval id.
    pub phases: BTreeMap<String, PhaseNow>,
}

/// The phase an eval is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseNow {
    /// The phase.
    pub phase: String,
    /// Since when (RFC 3339).
    pub since: String,
}

/// The live runs (owner lock held) under `reports`, each with its evals' phases.
///
/// # Errors
/// [`EvalError::Clean`] when the runs cannot be listed.
pub fn live_runs(reports: &Path) -> Result<Vec<LiveRun>, EvalError> {
    let listings = hyoka_proctrack::live_runs(reports).map_err(|source| EvalError::Clean {
        context: "cannot list runs".to_owned(),
        source,
    })?;
    Ok(listings
        .into_iter()
        .map(|run| LiveRun {
            phases: run
                .evals
                .iter()
                .filter_map(|eval| {
                    let (phase, since) = current_phase(&run.run_dir.join(eval))?;
                    Some((eval.clone(), PhaseNow { phase, since }))
                })
                .collect(),
            run,
        })
        .collect())
}
