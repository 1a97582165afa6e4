//! Records on disk: `report.json`, `run.json`, `action_timeline.json`, `changes.json` (and
//! `status.json`, `hyoka-proctrack`'s, through `ps.rs`), always written atomically through
//! `hyoka-proctrack`'s [`write_atomic_with`] (temp file in the same directory, fsync, rename,
//! fsync of the directory), the helper the ledger uses too. A trial's records before its
//! `report.json` leave the directory's fsync to the report's write, which covers them all.

use std::path::Path;
use std::time::{Duration, SystemTime};

use hyoka_proctrack::{write_atomic_file_synced, write_atomic_with};
use serde::Serialize;

use crate::error::EvalError;

/// Serializes `value` as pretty JSON (with a trailing newline) and writes it atomically.
///
/// # Errors
/// [`EvalError::Record`] naming the file (a value that cannot be serialized fails as its
/// write); the file is then unchanged.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), EvalError> {
    // Serialized straight into the file: a long run's `run.json` is never held whole.
    write_atomic_with(path, |out| {
        serde_json::to_writer_pretty(&mut *out, value)?;
        out.write_all(b"\n")
    })
    .map_err(|source| EvalError::Record {
        path: path.to_owned(),
        source,
    })
}

/// [`write_json`] for a trial's record that its `report.json`, written after it in the same
/// directory, makes count: the file is synced before its name appears, and the directory
/// once, by the report's write (a crash before it leaves no report, and the trial runs
/// again on resume).
///
/// # Errors
/// As [`write_json`].
pub(crate) fn write_json_before_report(
    path: &Path,
    value: &impl Serialize,
) -> Result<(), EvalError> {
    write_atomic_file_synced(path, &to_json(path, value)?).map_err(|source| EvalError::Record {
        path: path.to_owned(),
        source,
    })
}

/// `value` as pretty JSON with a trailing newline.
fn to_json(path: &Path, value: &impl Serialize) -> Result<Vec<u8>, EvalError> {
    let mut bytes =
        serde_json::to_vec_pretty(value).map_err(|e| EvalError::io("serialize", path, e.into()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// A wall-clock instant rendered as RFC 3339 with milliseconds, in UTC.
pub fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// Milliseconds in `duration`, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
