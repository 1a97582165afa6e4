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

/// A reports path runs are written to must be usable (`hyoka-proctrack`'s
/// [`check_reports_dir`](hyoka_proctrack::check_reports_dir)): a writable directory, or one
/// that can be created, not on a kernel or read-only file system.
pub(crate) fn check_reports_dir(path: &Path) -> Result<(), Fail> {
    hyoka_proctrack::check_reports_dir(path, hyoka_proctrack::ReportsUse::Write)
        .map_err(|e| Fail::usage(e.to_string()))
}

/// The session registry: `$HYOKA_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/hyoka`, else
/// `<temp>/hyoka.<uid>` (a private directory of the user's, checked by the library).
pub(crate) fn registry() -> Result<hyoka_respawn::Registry, Fail> {
    let dir = std::env::var_os(hyoka_proctrack::EnvVars::HYOKA_RUNTIME_DIR)
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("XDG_RUNTIME_DIR").map(|d| Path::new(&d).join("hyoka")))
        .unwrap_or_else(|| {
            let uid = rustix::process::geteuid().as_raw();
            std::env::temp_dir().join(format!("hyoka.{uid}"))
        });
    hyoka_respawn::Registry::open(&dir).map_err(|e| Fail::usage(e.to_string()))
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
