//! The detector seam: what the driver asks about a session's output.
//!
//! The driver feeds every chunk of output to a [`SessionModel`] and the resulting
//! [`ChunkSignals`] to the machine; at decision time (before a tick, a hook or a check
//! result) it asks the model for the fused [`Verdict`]. [`DetectorModel`](crate::DetectorModel) puts
//! `hyoka-idle-detect`'s detector behind the seam; tests and benchmarks may plug in
//! anything else.

pub(crate) mod detector;

use std::time::Instant;

use hyoka_idle_detect::{ChunkSignals, HookEvent, ProcessActivity, Verdict};

/// A model of a session's terminal that turns output into signals and verdicts.
pub trait SessionModel: Send {
    /// Observes one chunk of output at `now` and says what it shows. Chunks may split
    /// escape sequences and UTF-8 characters anywhere.
    fn output(&mut self, now: Instant, bytes: &[u8]) -> ChunkSignals;

    /// Observes a Claude Code hook event.
    fn hook(&mut self, now: Instant, event: HookEvent);

    /// Observes that the user typed into the session.
    fn user_input(&mut self, now: Instant);

    /// The terminal was resized.
    fn resize(&mut self, rows: u16, cols: u16);

    /// Observes a sample of the agent's process tree (CPU used since the previous sample,
    /// busy children). Models that do not weigh process activity ignore it.
    fn process_activity(&mut self, now: Instant, activity: ProcessActivity) {
        let _ = (now, activity);
    }

    /// The fused verdict at `now`.
    fn verdict(&mut self, now: Instant) -> Verdict;

    /// The last `max_chars` characters of ANSI-stripped output since the last
    /// [`SessionModel::reset_context`], for an AI check.
    fn context(&self, max_chars: usize) -> String;

    /// Forgets the output context (the machine does so at every step and cycle end).
    fn reset_context(&mut self);

    /// Whether `text` (typed by the controller) is visible on the screen at `now`, in the
    /// input box or in the transcript. Models without a screen say `false`, and delivery
    /// is then confirmed by working output alone.
    fn shows(&mut self, now: Instant, text: &str) -> bool {
        let _ = (now, text);
        false
    }

    /// The screen's text now (for an alert command).
    fn screen_text(&mut self) -> String {
        String::new()
    }

    /// The earliest time after `now` at which the verdict may change with no new
    /// observation, if any (the driver looks again then).
    fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let _ = now;
        None
    }
}
