//! Checks of what the user gave before anything is created, and the default run id.

use std::path::Path;
use std::time::SystemTime;

use hyoka_workspace::RunId;

use crate::exit::Fail;

/// `path` must be an existing directory (`what` names it in the error).
pub(crate) fn require_dir(path: &Path, what: &str) -> Result<(), Fail> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Fail::usage(format!(
            "{what} {} is not a directory",
            path.display()
        ))),
        Err(err) => Err(Fail::usage(format!("{what} {}: {err}", path.display()))),
    }
}

/// A reports path that exists must be a directory (a missing one is created later).
pub(crate) fn check_reports_dir(path: &Path) -> Result<(), Fail> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => Err(Fail::usage(format!(
            "reports path {} is not a directory",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// `YYYYMMDD-HHMMSS-xxxxxx` in UTC, with a random suffix so two runs in one second differ.
pub(crate) fn default_run_id() -> RunId {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let digits: String = stamp.chars().filter(char::is_ascii_digit).collect();
    let suffix: String = (0..6)
        .map(|_| fastrand::alphanumeric().to_ascii_lowercase())
        .collect();
    RunId::new(format!("{}-{}-{suffix}", &digits[..8], &digits[8..14]))
        .expect("generated run ids are valid")
}
