//! `status.json`: what a live eval or respawn session is doing, which `hyoka ps` shows. Both
//! harnesses write it through [`write_status`] (`hyoka-eval` at each phase, `hyoka-respawn`
//! when a session starts), and `hyoka ps` reads it back through [`read_status`], with the
//! checks of every reports file; the file's name and shape are declared here only.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ProcTrackError;

/// The file in an eval's (or respawn session's) directory of a live run that names what it
/// is doing now.
pub const STATUS_FILE: &str = "status.json";

/// The largest `status.json` read: hyoka writes a few hundred bytes.
pub const MAX_STATUS_BYTES: u64 = 64 * 1024;

/// What the agent did, counted one way for enforcement and reporting alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Counts {
    /// Assistant messages.
    pub turns: u64,
    /// Tool calls.
    pub actions: u64,
    /// Files created or changed in the workspace.
    pub files: u64,
    /// Bytes of those files.
    pub output_bytes: u64,
    /// Files in the private `/tmp` (the sandbox's temp directory) when the agent stopped.
    #[serde(default)]
    pub tmp_files: u64,
    /// Their bytes.
    #[serde(default)]
    pub tmp_bytes: u64,
    /// Files in the isolated home (created by the eval: the XDG directories are not files).
    #[serde(default)]
    pub home_files: u64,
    /// Their bytes.
    #[serde(default)]
    pub home_bytes: u64,
}

/// What an eval (or a respawn session) is doing: its `status.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseNow {
    /// The phase: `setup`, `services`, `agent`, `build`, `review`, `cleanup`, or
    /// [`SESSION_PHASE`] for a respawn session.
    pub phase: String,
    /// Since when (RFC 3339).
    pub since: String,
    /// When the eval (or session) started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// The agent's counts so far, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// A respawn session's backend: `pty` or `tmux`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// A tmux-backed session's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_session: Option<String>,
    /// A respawn session's agent (for tmux, the pane's process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The start time of `pid` (field 22 of `/proc/<pid>/stat`, clock ticks since boot), so
    /// a reader can tell that the process running under that pid is still the one recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start_ticks: Option<u64>,
    /// The command of `pid` now, while it runs (filled by `hyoka ps` when it lists the run,
    /// never read from the file).
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub pid_comm: Option<String>,
}

/// The phase a respawn session's status names.
pub const SESSION_PHASE: &str = "session";

/// Writes `status` as `<dir>/status.json`, atomically but not synced (see
/// [`write_atomic_unsynced`](crate::write_atomic_unsynced)): it names what a live run does
/// now, which means nothing after a reboot, and an eval writes it at every phase.
///
/// # Errors
/// [`ProcTrackError::Io`] when the file cannot be written.
pub fn write_status(dir: &Path, status: &PhaseNow) -> Result<(), ProcTrackError> {
    let mut bytes = serde_json::to_vec_pretty(status)
        .map_err(|e| ProcTrackError::io("serialize", dir.join(STATUS_FILE), e.into()))?;
    bytes.push(b'\n');
    crate::write_atomic_unsynced(&dir.join(STATUS_FILE), &bytes)
}

/// What `<dir>/status.json` says, read bounded and with the checks of every reports file
/// (no links, no special files, nobody else may write it; see
/// [`read_reports_file`](crate::read_reports_file)); `None` when there is none, it fails
/// them, or it is not a status.
pub fn read_status(dir: &Path) -> Option<PhaseNow> {
    let bytes = crate::read_reports_file(&dir.join(STATUS_FILE), MAX_STATUS_BYTES).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Removes `<dir>/status.json` (the eval or session is over); a missing file is fine.
pub fn remove_status(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(STATUS_FILE));
}

#[cfg(test)]
mod tests;
