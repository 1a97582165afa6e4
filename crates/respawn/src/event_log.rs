//! `hyoka respawn --events FILE`: one JSON object per line, flushed per line.
//!
//! Each controller [`Event`] is written with `t_ms` (milliseconds since the log started) and
//! `time` (RFC 3339); a supervised session ends the file with a `finished` line (how the
//! session ended) and a `teardown` line (what stopping it found). The `schema` feature
//! describes the lines as a JSON Schema.

use std::io::Write;
use std::path::Path;
use std::time::{Instant, SystemTime};

use hyoka_proctrack::TeardownReport;
use serde_json::{Value, json};

use crate::driver::Report;
use crate::error::RespawnError;
use crate::event::Event;

/// A JSON-lines record of a session's events.
#[derive(Debug)]
pub struct EventLog {
    file: std::io::BufWriter<std::fs::File>,
    started: Instant,
    wall: SystemTime,
}

impl EventLog {
    /// Creates (truncates) the log at `path`; `started` and `wall` are the same moment on
    /// the monotonic and the wall clock, from which every line's time is counted.
    ///
    /// # Errors
    /// [`RespawnError::Log`] when the file cannot be created.
    pub fn create(path: &Path, started: Instant, wall: SystemTime) -> Result<Self, RespawnError> {
        let file = std::fs::File::create(path).map_err(|source| RespawnError::Log {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self {
            file: std::io::BufWriter::new(file),
            started,
            wall,
        })
    }

    /// Writes one controller event, decided at `at`.
    pub fn event(&mut self, at: Instant, event: &Event) {
        self.write(at, serde_json::to_value(event).unwrap_or(Value::Null));
    }

    /// Writes the two closing lines: how the session ended, and what stopping it found.
    pub fn finished(&mut self, at: Instant, report: &Report, teardown: &TeardownReport) {
        self.write(
            at,
            json!({
                "event": "finished",
                "outcome": report.end.as_str(),
                "cycles": report.cycles,
                "exit_code": report.exit.code,
                "exit_signal": report.exit.signal,
            }),
        );
        self.write(
            at,
            json!({
                "event": "teardown",
                "processes_seen": teardown.processes_seen,
                "processes_killed": teardown.processes_killed,
                "survivors": teardown.survivors,
            }),
        );
    }

    fn write(&mut self, at: Instant, mut line: Value) {
        let since = at.saturating_duration_since(self.started);
        if let Value::Object(map) = &mut line {
            map.insert(
                "t_ms".to_owned(),
                json!(u64::try_from(since.as_millis()).unwrap_or(u64::MAX)),
            );
            map.insert(
                "time".to_owned(),
                json!(humantime::format_rfc3339_millis(self.wall + since).to_string()),
            );
        }
        // A full disk or a closed file must not stop the session; the log is best effort.
        let _ = writeln!(self.file, "{line}");
        let _ = self.file.flush();
    }
}
