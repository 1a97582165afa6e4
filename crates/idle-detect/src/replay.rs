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
/// that stands for time zero (any instant will do: nothing reads the clock). For a recording
/// too large to hold, feed it a line at a time with [`CastReplay`].
pub fn replay_cast(
    profile: &Profile,
    config: &DetectorConfig,
    cast: &str,
    start: Instant,
) -> Result<Vec<VerdictChange>, DetectError> {
    let mut replay = CastReplay::new(profile, config, start);
    let mut changes = Vec::new();
    for line in cast.lines() {
        replay.feed_line(line)?;
        changes.append(&mut replay.take_changes());
    }
    changes.extend(replay.finish()?);
    Ok(changes)
}

/// The largest terminal a recording's header or resize events may give the screen model
/// (rows, columns); larger sizes are clamped to it, so a forged `65535x65535` costs no more
/// memory than a very large real terminal.
pub const MAX_CAST_SIZE: (u16, u16) = (500, 1000);

/// An asciicast replay fed one line at a time, so a recording of any length is replayed in
/// bounded memory: the detector's state (its screen at most [`MAX_CAST_SIZE`]), the current
/// line and the changes not yet taken.
#[derive(Debug)]
pub struct CastReplay {
    profile: Profile,
    config: DetectorConfig,
    start: Instant,
    /// `None` until the header line arrives.
    detector: Option<Detector>,
    relative: bool,
    clock: Duration,
    line: usize,
    last: Option<Verdict>,
    changes: Vec<VerdictChange>,
}

impl CastReplay {
    /// A replay with `profile`; `start` stands for time zero.
    pub fn new(profile: &Profile, config: &DetectorConfig, start: Instant) -> Self {
        Self {
            profile: profile.clone(),
            config: config.clone(),
            start,
            detector: None,
            relative: false,
            clock: Duration::ZERO,
            line: 0,
            last: None,
            changes: Vec::new(),
        }
    }

    /// Feeds the recording's next line (the header first, then events; blank lines are
    /// skipped). Verdict changes it causes are kept for [`CastReplay::take_changes`].
    pub fn feed_line(&mut self, line: &str) -> Result<(), DetectError> {
        self.line += 1;
        let n = self.line;
        if line.trim().is_empty() {
            return Ok(());
        }
        let Some(detector) = self.detector.as_mut() else {
            let mut config = self.config.clone();
            self.relative = parse_header(line, n, &mut config)?;
            self.detector = Some(Detector::new(self.profile.clone(), config));
            return Ok(());
        };
        let cast_error = |reason: String| DetectError::Cast { line: n, reason };
        let event: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| cast_error(format!("event is not JSON: {e}")))?;
        let (Some(t), Some(code), Some(data)) = (
            event.get(0).and_then(serde_json::Value::as_f64),
            event.get(1).and_then(serde_json::Value::as_str),
            event.get(2).and_then(serde_json::Value::as_str),
        ) else {
            return Err(cast_error("expected [time, code, data]".to_owned()));
        };
        if !t.is_finite() || t < 0.0 {
            return Err(cast_error(format!("bad time {t}")));
        }
        let t = Duration::from_secs_f64(t.min(1e9));
        let at = if self.relative {
            self.clock.saturating_add(t)
        } else {
            t.max(self.clock)
        };
        let (start, last, changes) = (self.start, &mut self.last, &mut self.changes);
        // Verdict changes that happen on their own before this event.
        advance(detector, start, &mut self.clock, at, &mut |d, at| {
            record(d, start, at, last, changes);
        });
        self.clock = at;
        match code {
            "o" => {
                detector.output(start + at, data.as_bytes());
            }
            "i" => detector.user_input(start + at),
            "r" => {
                if let Some((c, r)) = data.split_once('x')
                    && let (Ok(c), Ok(r)) = (c.trim().parse::<u16>(), r.trim().parse::<u16>())
                {
                    detector.resize(r.min(MAX_CAST_SIZE.0), c.min(MAX_CAST_SIZE.1));
                }
            }
            _ => {}
        }
        record(detector, start, at, last, changes);
        Ok(())
    }

    /// The verdict changes found since the last call.
    pub fn take_changes(&mut self) -> Vec<VerdictChange> {
        std::mem::take(&mut self.changes)
    }

    /// Ends the recording: lets the session go quiet for an hour of virtual time and returns
    /// the remaining changes. An empty recording (no header) is an error.
    pub fn finish(mut self) -> Result<Vec<VerdictChange>, DetectError> {
        let Some(detector) = self.detector.as_mut() else {
            return Err(DetectError::Cast {
                line: self.line.max(1),
                reason: "empty recording".to_owned(),
            });
        };
        let horizon = self.clock.saturating_add(Duration::from_hours(1));
        let (start, last, changes) = (self.start, &mut self.last, &mut self.changes);
        advance(detector, start, &mut self.clock, horizon, &mut |d, at| {
            record(d, start, at, last, changes);
        });
        Ok(self.changes)
    }
}

/// Records the verdict at `at` if its state changed.
fn record(
    detector: &mut Detector,
    start: Instant,
    at: Duration,
    last: &mut Option<Verdict>,
    changes: &mut Vec<VerdictChange>,
) {
    let v = detector.verdict(start + at).clone();
    if last.as_ref().is_none_or(|l| !l.same_state(&v)) {
        changes.push(VerdictChange {
            at_ms: u64::try_from(at.as_millis()).unwrap_or(u64::MAX),
            verdict: v.clone(),
        });
        *last = Some(v);
    }
}

/// Reads an asciicast header: returns whether event times are relative (v3), and takes the
/// terminal size into `config`.
fn parse_header(
    header: &str,
    line: usize,
    config: &mut DetectorConfig,
) -> Result<bool, DetectError> {
    let cast_error = |reason: String| DetectError::Cast { line, reason };
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
        config.cols = cols.min(MAX_CAST_SIZE.1);
        config.rows = rows.min(MAX_CAST_SIZE.0);
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
/// For a stream too large to hold, feed it piece by piece with [`StreamRun`].
pub fn run_stream(
    profile: &Profile,
    config: &DetectorConfig,
    bytes: &[u8],
    chunk_bytes: usize,
    start: Instant,
) -> StreamReport {
    let mut run = StreamRun::new(config, chunk_bytes, start);
    run.feed(bytes);
    run.finish(profile)
}

/// A raw stream fed piece by piece in bounded memory. Pieces of any size are cut into
/// `chunk_bytes` slices at the same offsets as if the stream came whole (at most one partial
/// slice, under `chunk_bytes`, is held between pieces), so the counts do not depend on how the
/// caller reads.
///
/// The per-chunk path does not need the profile: it is given to [`StreamRun::finish`], which
/// judges the last screen with it, so a caller can compile the profile on another thread
/// while the stream runs.
#[derive(Debug)]
pub struct StreamRun {
    detector: Detector,
    chunk_bytes: usize,
    carry: Vec<u8>,
    start: Instant,
}

impl StreamRun {
    /// A run cutting slices of `chunk_bytes` (at least 1); `start` is the instant every slice
    /// is observed at.
    pub fn new(config: &DetectorConfig, chunk_bytes: usize, start: Instant) -> Self {
        let chunk_bytes = chunk_bytes.max(1);
        Self {
            detector: Detector::new(Profile::none(), config.clone()),
            chunk_bytes,
            carry: Vec::new(),
            start,
        }
    }

    /// Feeds the stream's next piece.
    ///
    /// Only the piece's last [`DetectorConfig::raw_bytes`] (and what follows) can be on the
    /// final screen, so the bytes before them are not copied into the detector's ring: the
    /// signals are the same, and a piece several times the ring's size costs no copy.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if !self.carry.is_empty() {
            let take = (self.chunk_bytes - self.carry.len()).min(bytes.len());
            self.carry.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.carry.len() < self.chunk_bytes {
                return;
            }
            self.detector.output(self.start, &self.carry);
            self.carry.clear();
        }
        // Slices that end before this offset are overwritten in the ring by later ones.
        let kept_from = bytes.len().saturating_sub(self.detector.config().raw_bytes);
        let mut offset = 0;
        let mut slices = bytes.chunks_exact(self.chunk_bytes);
        for slice in &mut slices {
            offset += slice.len();
            self.detector
                .output_kept(self.start, slice, offset > kept_from);
        }
        self.carry.extend_from_slice(slices.remainder());
    }

    /// Ends the stream: feeds the last partial slice and returns the report, with the verdict
    /// `profile` gives once the stream has been quiet for longer than every confirmation
    /// period.
    pub fn finish(mut self, profile: &Profile) -> StreamReport {
        if !self.carry.is_empty() {
            self.detector.output(self.start, &self.carry);
        }
        self.detector.set_profile(profile.clone());
        let config = self.detector.config().clone();
        let quiet = config
            .completion_confirm
            .max(config.settle)
            .max(config.working_hold)
            + Duration::from_secs(1);
        let verdict = self.detector.verdict(self.start + quiet).clone();
        StreamReport {
            chunk_bytes: self.chunk_bytes,
            counts: *self.detector.counts(),
            verdict,
            state: self.detector.state_size(),
        }
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
