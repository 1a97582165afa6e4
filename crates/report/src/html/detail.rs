//! One trial's details as the page shows them: everything its records say, with texts
//! capped, phases placed relative to the trial's start, and events in a compact form.

use std::collections::BTreeMap;

use serde::Serialize;

use hyoka_eval::{TokenUsage, truncate_chars};

use super::load::{Tail, TrialRecords, agent_of, status, termination, usage};
use super::model::{CleanupFile, FIELD_CAP, ReportFile, ReviewFile, TimelineFile};

/// The most entries of a record's lists and maps a trial shows (phases, counts, limits, tool
/// names); the rest of a hostile record's thousands are left out.
const LIST_CAP: usize = 64;

/// One trial's details as the page shows them.
#[derive(Debug, Serialize)]
pub(super) struct Detail<'a> {
    task: &'a str,
    run: &'a str,
    label: &'a str,
    status: &'a str,
    termination: &'a str,
    error_kind: Option<&'a str>,
    exit_code: Option<i64>,
    signal: Option<i64>,
    error: Option<String>,
    attempts: Option<u64>,
    earlier_attempts: Option<String>,
    agent: Option<String>,
    command: String,
    workspace: String,
    started_at: &'a str,
    ended_at: &'a str,
    duration_ms: Option<u64>,
    counts: Vec<(String, String)>,
    limits: Vec<(String, String)>,
    usage: Option<TokenUsage>,
    phases: Vec<PhaseOut>,
    events: Vec<EventOut>,
    events_total: u64,
    tools: Vec<(String, u64)>,
    review: Option<ReviewOut>,
    cleanup: Option<CleanupOut>,
    output: Option<&'a Tail>,
    build_log: Option<&'a Tail>,
    review_log: Option<&'a Tail>,
    service_logs: &'a [(String, Tail)],
    changes: Option<ChangesOut>,
    problems: &'a [String],
}

/// `changes.json` as the page shows it: each file's diff or why it has none.
#[derive(Debug, Serialize)]
struct ChangesOut {
    files: Vec<ChangedOut>,
    total: u64,
    left_out: u64,
}

#[derive(Debug, Serialize)]
struct ChangedOut {
    path: String,
    change: String,
    bytes: u64,
    diff: Option<String>,
    note: Option<String>,
}

impl From<&hyoka_eval::ChangesRecord> for ChangesOut {
    fn from(c: &hyoka_eval::ChangesRecord) -> Self {
        Self {
            files: (c.files.iter().take(hyoka_eval::MAX_CHANGES_LISTED))
                .map(|f| ChangedOut {
                    path: truncate_chars(&f.path, FIELD_CAP),
                    change: truncate_chars(&f.change, 16),
                    bytes: f.bytes,
                    diff: f
                        .diff
                        .as_deref()
                        .map(|d| truncate_chars(d, hyoka_eval::MAX_DIFF_BYTES)),
                    note: cap(f.note.as_ref()),
                })
                .collect(),
            total: c.total,
            left_out: c.left_out,
        }
    }
}

/// A phase with its start relative to the trial's.
#[derive(Debug, Serialize)]
struct PhaseOut {
    name: String,
    start_ms: Option<u64>,
    duration_ms: u64,
    status: String,
    exit_code: Option<i64>,
    detail: Option<String>,
}

/// A timeline event, as `[dt, kind, tool, path, input, detail]` without trailing nulls:
/// `dt` is the milliseconds since the previous event (since the trial's start for the
/// first), `kind` a one-letter code for the known types (`t` turn, `c` tool call, `+` file
/// created, `~` changed, `-` deleted, `L` limit reached, `S` signal, `X` exit, `P` phase)
/// or the type's name.
#[derive(Debug)]
struct EventOut {
    dt: u64,
    kind: String,
    texts: [Option<String>; 4],
}

impl Serialize for EventOut {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let used = self
            .texts
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |i| i + 1);
        let mut seq = serializer.serialize_seq(Some(2 + used))?;
        seq.serialize_element(&self.dt)?;
        seq.serialize_element(&self.kind)?;
        for text in &self.texts[..used] {
            seq.serialize_element(text)?;
        }
        seq.end()
    }
}

fn event_code(kind: &str) -> String {
    let code = match kind {
        "turn" => "t",
        "tool_call" => "c",
        "file_created" => "+",
        "file_changed" => "~",
        "file_deleted" => "-",
        "limit_reached" => "L",
        "signal" => "S",
        "exit" => "X",
        "phase" => "P",
        "tool_result" => "r",
        "usage" => "u",
        other => return truncate_chars(other, 64),
    };
    code.to_owned()
}

#[derive(Debug, Serialize)]
struct ReviewOut {
    pass: Option<bool>,
    score: Option<f64>,
    notes: Option<String>,
}

/// The cleanup record, its texts capped.
#[derive(Debug, Serialize)]
struct CleanupOut {
    processes_seen: Option<u64>,
    processes_killed: Option<u64>,
    survivors: Option<u64>,
    workspace_removed: Option<bool>,
    workspace_kept_at: Option<String>,
    workspace_leftovers: Vec<String>,
    layers: Vec<String>,
}

impl From<&CleanupFile> for CleanupOut {
    fn from(c: &CleanupFile) -> Self {
        let list = |items: &[String]| -> Vec<String> {
            items
                .iter()
                .take(50)
                .map(|s| truncate_chars(s, 256))
                .collect()
        };
        Self {
            processes_seen: c.processes_seen,
            processes_killed: c.processes_killed,
            survivors: c.survivors,
            workspace_removed: c.workspace_removed,
            workspace_kept_at: cap(c.workspace_kept_at.as_ref()),
            workspace_leftovers: list(&c.workspace_leftovers),
            layers: list(&c.layers),
        }
    }
}

fn cap(text: Option<&String>) -> Option<String> {
    text.map(|t| truncate_chars(t, FIELD_CAP))
}

pub(super) fn detail<'a>(
    task: &'a str,
    run: &'a str,
    label: &'a str,
    trial: &'a TrialRecords,
    input_cap: usize,
) -> Detail<'a> {
    let report = trial.report.as_ref();
    let phases = report.map_or_else(Vec::new, phases);
    let timeline = trial.timeline.as_ref();
    let events = timeline.map_or_else(Vec::new, |t| events(t, input_cap));
    let pairs = |map: Option<&BTreeMap<String, serde_json::Value>>| {
        map.map_or_else(Vec::new, |m| {
            (m.iter().take(LIST_CAP))
                .map(|(k, v)| (truncate_chars(k, 64), truncate_chars(&v.to_string(), 64)))
                .collect()
        })
    };
    let review = report
        .and_then(|r| r.review.as_ref())
        .map(|v: &ReviewFile| ReviewOut {
            pass: v.pass,
            score: v.score,
            notes: cap(v.notes.as_ref()),
        });
    let command = report.map_or_else(String::new, |r| shell_words(&r.command));
    Detail {
        task,
        run,
        label,
        status: status(trial),
        termination: termination(trial),
        error_kind: (trial.line.error_kind.as_deref())
            .or_else(|| report.and_then(|r| r.error_kind.as_deref())),
        exit_code: report.map_or(trial.line.exit_code, |r| r.exit_code),
        signal: report.and_then(|r| r.signal),
        error: report.and_then(|r| cap(r.error.as_ref())),
        attempts: trial
            .line
            .attempts
            .or_else(|| report.and_then(|r| r.attempts)),
        earlier_attempts: report
            .and_then(|r| r.earlier_attempts.as_ref())
            .map(|v| truncate_chars(&v.to_string(), FIELD_CAP)),
        agent: agent_of(trial),
        command: truncate_chars(&command, FIELD_CAP),
        workspace: report.map_or_else(String::new, |r| truncate_chars(&r.workspace, FIELD_CAP)),
        started_at: report.map_or("", |r| r.started_at.as_str()),
        ended_at: report.map_or("", |r| r.ended_at.as_str()),
        duration_ms: report
            .and_then(|r| r.duration_ms)
            .or(trial.line.duration_ms),
        counts: {
            let mut counts = pairs(report.map(|r| &r.counts));
            if let Some(events) = report.and_then(|r| r.events.as_ref()) {
                counts.push(("events".to_owned(), truncate_chars(&events.describe(), 160)));
            }
            counts
        },
        limits: pairs(report.map(|r| &r.limits)),
        usage: usage(trial),
        phases,
        events_total: timeline
            .and_then(|t| t.summary.events)
            .unwrap_or(events.len() as u64),
        events,
        tools: timeline.map_or_else(Vec::new, |t| {
            (t.summary.tools.iter().take(LIST_CAP))
                .map(|(k, v)| (truncate_chars(k, 128), *v))
                .collect()
        }),
        review,
        cleanup: report
            .and_then(|r| r.cleanup.as_ref())
            .map(CleanupOut::from),
        output: trial.output.as_ref(),
        build_log: trial.build_log.as_ref(),
        review_log: trial.review_log.as_ref(),
        service_logs: &trial.service_logs,
        changes: trial.changes.as_ref().map(ChangesOut::from),
        problems: &trial.problems,
    }
}

/// A report's phases, each placed relative to the trial's start.
fn phases(report: &ReportFile) -> Vec<PhaseOut> {
    let start = humantime::parse_rfc3339_weak(&report.started_at).ok();
    (report.phases.iter().take(LIST_CAP))
        .map(|p| PhaseOut {
            name: truncate_chars(&p.name, 64),
            start_ms: start
                .zip(humantime::parse_rfc3339_weak(&p.started_at).ok())
                .map(|(s, at)| {
                    at.duration_since(s)
                        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                }),
            duration_ms: p.duration_ms,
            status: truncate_chars(&p.status, 64),
            exit_code: p.exit_code,
            detail: cap(p.detail.as_ref()),
        })
        .collect()
}

/// A timeline's events in the page's compact form, tool inputs cut at `input_cap`
/// characters (left out at 0). Times that go backwards count as no time.
fn events(timeline: &TimelineFile, input_cap: usize) -> Vec<EventOut> {
    let mut last = 0;
    timeline
        .events
        .iter()
        .map(|e| {
            let dt = e.t_ms.saturating_sub(last);
            last = last.max(e.t_ms);
            EventOut {
                dt,
                kind: event_code(&e.kind),
                texts: [
                    e.tool.as_deref().map(|s| truncate_chars(s, 128)),
                    cap(e.path.as_ref()),
                    e.input
                        .as_deref()
                        .filter(|_| input_cap > 0)
                        .map(|s| truncate_chars(s, input_cap)),
                    cap(e.detail.as_ref()),
                ],
            }
        })
        .collect()
}

/// An argv as one line, quoting the words a shell would split or expand.
fn shell_words(argv: &[String]) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    };
    argv.iter()
        .map(|w| {
            if plain(w) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
