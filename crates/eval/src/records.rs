//! Records on disk: `report.json`, `run.json`, `action_timeline.json`, always written
//! atomically (temp file in the same directory, fsync, rename, fsync of the directory).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;

/// Writes `bytes` to `path` atomically: readers see the old file or the new one, never a
/// torn one, even if hyoka dies mid-write.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "record".into(), |n| n.to_string_lossy());
    let tmp = dir.join(format!(".{name}.tmp-{}", fastrand::u64(..)));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Serializes `value` as pretty JSON (with a trailing newline) and writes it atomically.
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// A wall-clock instant rendered as RFC 3339 with milliseconds, in UTC.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// Milliseconds in `duration`, saturating.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
