//! A run's `run.json`, read as evidence.

use std::path::{Path, PathBuf};

use hyoka_eval::RunSummary;

use crate::error::ReportError;

/// The largest `run.json` read (a suite of a hundred thousand evals stays well below it).
const MAX_RUN_JSON: u64 = 256 << 20;

/// Reads one run's summary (a shard's for [`merge_summaries`](crate::merge_summaries), a
/// side of [`compare_runs`](crate::compare_runs)): `input` is a run directory (its
/// `run.json` is read) or a `run.json` file. The file is read as evidence, the way `clean`
/// reads a ledger: not through a link, not a FIFO or a device, not writable by others than
/// its owner, and bounded in size. Returns the run directory with the summary.
///
/// # Errors
/// [`ReportError::Summary`] when the file fails those checks, cannot be read, or is not a
/// run summary.
pub fn read_summary(input: &Path) -> Result<(PathBuf, RunSummary), ReportError> {
    let (file, dir) = if input.is_dir() {
        (input.join("run.json"), input.to_owned())
    } else {
        (
            input.to_owned(),
            input.parent().map_or_else(PathBuf::new, Path::to_owned),
        )
    };
    let fail = |message: String| ReportError::Summary {
        path: file.clone(),
        message,
    };
    let text = hyoka_proctrack::read_reports_file(&file, MAX_RUN_JSON)
        .map_err(|e| fail(format!("cannot read {}: {e}", file.display())))?;
    let summary = serde_json::from_slice(&text)
        .map_err(|e| fail(format!("{} is not a run.json: {e}", file.display())))?;
    Ok((dir, summary))
}
