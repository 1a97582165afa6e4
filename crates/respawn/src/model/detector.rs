//! The real session model: `hyoka-idle-detect`'s profile-driven [`Detector`].

use std::time::Instant;

use hyoka_idle_detect::{ChunkSignals, Detector, HookEvent, ProcessActivity, Verdict};

use super::SessionModel;

/// A [`SessionModel`] over `hyoka-idle-detect`'s [`Detector`]: per-chunk signals from its
/// stream scanner, verdicts from its arbiter (screen rules of the profile, hooks, silence,
/// the process tree's activity, AI verdicts), AI-check context from its stripped tail.
///
/// The detector's tail cannot be cut at a step boundary the way Codeman clears its buffer;
/// the context is instead limited to as many characters as bytes arrived since the last
/// [`SessionModel::reset_context`], which never reaches further back than that.
#[derive(Debug)]
pub struct DetectorModel {
    // Boxed: a detector is several kilobytes, and drivers live in futures.
    detector: Box<Detector>,
    since_reset: usize,
}

impl DetectorModel {
    /// Wraps `detector`.
    pub fn new(detector: Detector) -> Self {
        Self {
            detector: Box::new(detector),
            since_reset: 0,
        }
    }

    /// The detector.
    pub fn detector(&self) -> &Detector {
        &self.detector
    }
}

impl SessionModel for DetectorModel {
    fn output(&mut self, now: Instant, bytes: &[u8]) -> ChunkSignals {
        self.since_reset = self.since_reset.saturating_add(bytes.len());
        self.detector.output(now, bytes)
    }

    fn hook(&mut self, now: Instant, event: HookEvent) {
        self.detector.hook(now, event);
    }

    fn user_input(&mut self, now: Instant) {
        self.detector.user_input(now);
    }

    fn resize(&mut self, rows: u16, cols: u16) {
        self.detector.resize(rows, cols);
    }

    fn process_activity(&mut self, now: Instant, activity: ProcessActivity) {
        self.detector.process_activity(now, activity);
    }

    fn verdict(&mut self, now: Instant) -> Verdict {
        self.detector.verdict(now).clone()
    }

    fn context(&self, max_chars: usize) -> String {
        self.detector.stripped_tail(max_chars.min(self.since_reset))
    }

    fn reset_context(&mut self) {
        self.since_reset = 0;
    }

    fn shows(&mut self, _now: Instant, text: &str) -> bool {
        // The start of the text is enough to recognise it, and survives a box that wraps
        // or clips a long line.
        let needle: String = text.trim().chars().take(SHOWN_CHARS).collect();
        if needle.is_empty() {
            return false;
        }
        self.detector
            .screen()
            .lines()
            .iter()
            .any(|line| line.contains(&needle))
    }

    fn screen_text(&mut self) -> String {
        self.detector.screen().text()
    }

    fn next_deadline(&self, now: Instant) -> Option<Instant> {
        self.detector.next_deadline(now)
    }
}

/// How many characters of a typed text identify it on screen.
const SHOWN_CHARS: usize = 40;

#[cfg(test)]
mod tests;
