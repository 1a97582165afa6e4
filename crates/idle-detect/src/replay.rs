//! The entry points `hyoka detect` wraps: classify one screen, replay an asciicast recording
//! in virtual time, run a raw stream in fixed chunks, and render a verdict for people.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::detector::{Detector, DetectorConfig, StateSize, StreamCounts};
use crate::error::DetectError;
use crate::profile::Profile;
use crate::screen::Screen;
use crate::signals::{Evidence, SessionState, Verdict};

/// Classifies one saved screen (`hyoka detect --screen FILE`).
///
/// `bytes` is plain text or terminal output with escape sequences (rendered through a
/// terminal emulator first). There is no timing, so only the profile's screen rules decide;
/// the evidence is the rule that matched.
pub fn classify_screen(profile: &Profile, bytes: &[u8]) -> Verdict {
    let screen = Screen::from_bytes(bytes);
    let sv = profile.classify(&screen);
    let mut evidence = vec![Evidence {
        signal: "screen_rule",
        points_to: sv.state,
        rule: sv
            .rule
            .unwrap_or_else(|| format!("{}/(none)", profile.name())),
        detail: sv.detail,
        age_ms: 0,
        source: sv.source,
    }];
    // Every other rule that fired, in the order the fusion weighed them.
    evidence.extend(sv.hits.into_iter().skip(1).map(|hit| Evidence {
        signal: "screen_rule",
        points_to: hit.state,
        rule: hit.rule,
        detail: hit.line,
        age_ms: 0,
        source: hit.source,
    }));
    Verdict {
        state: sv.state,
        blocked: sv.blocked,
        evidence,
    }
}

/// One change of verdict during a replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerdictChange {
    /// Time since the start of the recording, in milliseconds.
    pub at_ms: u64,
    /// The new verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Replays an asciicast recording (v2, or v3 with relative times) in virtual time and returns
/// every change of verdict (`hyoka detect --cast FILE`).
///
/// Output events feed [`Detector::output`], input events [`Detector::user_input`], resize
/// events [`Detector::resize`]. Between events the detector is ticked at exactly the moments
/// its verdict may change on its own ([`Detector::next_deadline`]), and after the last event
/// until it settles, so the result does not depend on a tick period. `start` is the instant
/// that stands for time zero (any instant will do: nothing reads the clock).
pub fn replay_cast(
    profile: &Profile,
    config: &DetectorConfig,
    cast: &str,
    start: Instant,
) -> Result<Vec<VerdictChange>, DetectError> {
    let mut lines = cast
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(DetectError::Cast {
            line: 1,
            reason: "empty recording".to_owned(),
        });
    };
    let mut config = config.clone();
    let relative = parse_header(header, &mut config)?;
    let mut detector = Detector::new(profile.clone(), config);
    let mut changes = Vec::new();
    let mut last: Option<Verdict> = None;
    let mut clock = Duration::ZERO;
    let record = |detector: &mut Detector,
                  at: Duration,
                  last: &mut Option<Verdict>,
                  changes: &mut Vec<VerdictChange>| {
        let v = detector.verdict(start + at).clone();
        if last.as_ref().is_none_or(|l| !l.same_state(&v)) {
            changes.push(VerdictChange {
                at_ms: u64::try_from(at.as_millis()).unwrap_or(u64::MAX),
                verdict: v.clone(),
            });
            *last = Some(v);
        }
    };
    for (index, line) in lines {
        let n = index + 1;
        let event: serde_json::Value =
            serde_json::from_str(line).map_err(|e| DetectError::Cast {
                line: n,
                reason: format!("event is not JSON: {e}"),
            })?;
        let (Some(t), Some(code), Some(data)) = (
            event.get(0).and_then(serde_json::Value::as_f64),
            event.get(1).and_then(serde_json::Value::as_str),
            event.get(2).and_then(serde_json::Value::as_str),
        ) else {
            return Err(DetectError::Cast {
                line: n,
                reason: "expected [time, code, data]".to_owned(),
            });
        };
        if !t.is_finite() || t < 0.0 {
            return Err(DetectError::Cast {
                line: n,
                reason: format!("bad time {t}"),
            });
        }
        let t = Duration::from_secs_f64(t.min(1e9));
        let at = if relative { clock + t } else { t.max(clock) };
        // Verdict changes that happen on their own before this event.
        advance(&mut detector, start, &mut clock, at, &mut |d, at| {
            record(d, at, &mut last, &mut changes);
        });
        clock = at;
        match code {
            "o" => {
                detector.output(start + at, data.as_bytes());
            }
            "i" => detector.user_input(start + at),
            "r" => {
                if let Some((c, r)) = data.split_once('x')
                    && let (Ok(c), Ok(r)) = (c.trim().parse(), r.trim().parse())
                {
                    detector.resize(r, c);
                }
            }
            _ => {}
        }
        record(&mut detector, at, &mut last, &mut changes);
    }
    // Let the session go quiet after the recording ends.
    let horizon = clock + Duration::from_hours(1);
    advance(&mut detector, start, &mut clock, horizon, &mut |d, at| {
        record(d, at, &mut last, &mut changes);
    });
    Ok(changes)
}

/// Reads an asciicast header: returns whether event times are relative (v3), and takes the
/// terminal size into `config`.
fn parse_header(header: &str, config: &mut DetectorConfig) -> Result<bool, DetectError> {
    let cast_error = |reason: String| DetectError::Cast { line: 1, reason };
    let header: serde_json::Value =
        serde_json::from_str(header).map_err(|e| cast_error(format!("header is not JSON: {e}")))?;
    let relative = match header.get("version").and_then(serde_json::Value::as_u64) {
        Some(2) => false,
        Some(3) => true,
        other => {
            return Err(cast_error(format!(
                "unsupported asciicast version {other:?}"
            )));
        }
    };
    let size = |a: &str, b: &str| -> Option<u16> {
        let v = header
            .get(a)
            .or_else(|| header.get("term").and_then(|t| t.get(b)))?;
        u16::try_from(v.as_u64()?).ok()
    };
    if let (Some(cols), Some(rows)) = (size("width", "cols"), size("height", "rows")) {
        config.cols = cols;
        config.rows = rows;
    }
    Ok(relative)
}

/// Ticks `detector` at each deadline up to `until`.
fn advance(
    detector: &mut Detector,
    start: Instant,
    clock: &mut Duration,
    until: Duration,
    on_tick: &mut dyn FnMut(&mut Detector, Duration),
) {
    for _ in 0..64 {
        let Some(deadline) = detector.next_deadline(start + *clock) else {
            return;
        };
        let at = deadline.saturating_duration_since(start);
        if at > until {
            return;
        }
        *clock = at;
        on_tick(detector, at);
    }
}

/// What [`run_stream`] reports (`hyoka detect --stream FILE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamReport {
    /// The chunk size used.
    pub chunk_bytes: usize,
    /// The per-chunk signal totals.
    pub counts: StreamCounts,
    /// The verdict once the stream has been quiet for longer than every confirmation period.
    pub verdict: Verdict,
    /// The detector's memory at the end.
    pub state: StateSize,
}

/// Runs raw output through the detector in `chunk_bytes` slices with no timing
/// (`hyoka detect --stream FILE`), as fast as possible. The caller times it for throughput.
/// Chunks are cut at byte offsets, splitting escape sequences and characters as a PTY read may.
pub fn run_stream(
    profile: &Profile,
    config: &DetectorConfig,
    bytes: &[u8],
    chunk_bytes: usize,
    start: Instant,
) -> StreamReport {
    let chunk_bytes = chunk_bytes.max(1);
    let mut detector = Detector::new(profile.clone(), config.clone());
    for chunk in bytes.chunks(chunk_bytes) {
        detector.output(start, chunk);
    }
    let quiet = config
        .completion_confirm
        .max(config.settle)
        .max(config.working_hold)
        + Duration::from_secs(1);
    let verdict = detector.verdict(start + quiet).clone();
    StreamReport {
        chunk_bytes,
        counts: *detector.counts(),
        verdict,
        state: detector.state_size(),
    }
}

/// Renders a verdict and its evidence for people (`hyoka detect --explain`).
pub fn render_explain(verdict: &Verdict) -> String {
    let mut out = String::new();
    match verdict.blocked {
        Some(kind) => {
            let _ = writeln!(out, "state: blocked ({kind})");
        }
        None => {
            let _ = writeln!(out, "state: {}", verdict.state);
        }
    }
    if verdict.evidence.is_empty() {
        out.push_str("evidence: none\n");
        return out;
    }
    out.push_str("evidence, strongest first:\n");
    for (i, e) in verdict.evidence.iter().enumerate() {
        let arrow = match e.points_to {
            SessionState::Unknown => "·".to_owned(),
            s => format!("→ {s}"),
        };
        let _ = writeln!(
            out,
            "  {}. {:<16} {:<10} {} ({} ago)\n     {}",
            i + 1,
            e.signal,
            arrow,
            e.rule,
            human_ms(e.age_ms),
            e.detail
        );
        if !e.source.is_empty() {
            let _ = writeln!(out, "     source: {}", e.source);
        }
    }
    out
}

fn human_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 120_000 {
        format!("{:.1} s", Duration::from_millis(ms).as_secs_f64())
    } else {
        format!("{} min", ms / 60_000)
    }
}

#[cfg(test)]
mod tests;
