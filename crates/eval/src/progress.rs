//! A run's progress told as numbered lines, for a terminal, a log or any other sink.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::report::{Report, RunSummary};
use crate::runner::Observer;
use crate::trials::Trial;

fn duration(ms: u64) -> String {
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

/// Where [`ProgressLines`] sends its lines (a terminal's progress bar, stderr, a log).
pub trait ProgressSink: Send + Sync {
    /// A line to show; `finished` when it reports a trial done (kept, or ended).
    fn line(&self, line: &str, finished: bool);

    /// A trial started.
    fn started(&self, trial: &str) {
        let _ = trial;
    }

    /// The run ended.
    fn done(&self) {}
}

/// An [`Observer`] that tells a run's progress as numbered lines: `[3/12] fix-bug.2: passed
/// (exited) in 2s`, `[3/12] fix-bug.3: infra error (…); retrying in 1s`, `[4/12]
/// fix-bug.1: passed (kept)`.
#[derive(Debug)]
pub struct ProgressLines<S> {
    total: usize,
    finished: AtomicUsize,
    sink: S,
}

impl<S: ProgressSink> ProgressLines<S> {
    /// Progress of `total` trials into `sink`.
    pub fn new(total: usize, sink: S) -> Self {
        Self {
            total,
            finished: AtomicUsize::new(0),
            sink,
        }
    }

    fn line(&self, text: &str, finished: bool) {
        let n = if finished {
            self.finished.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            self.finished.load(Ordering::Relaxed)
        };
        self.sink
            .line(&format!("[{n}/{}] {text}", self.total), finished);
    }
}

impl<S: ProgressSink> Observer for ProgressLines<S> {
    fn eval_started(&self, trial: &Trial) {
        self.sink.started(trial.id.as_str());
    }

    fn attempt_failed(&self, report: &Report, retry_in: Duration) {
        self.line(
            &format!(
                "{}: infra error ({}); retrying in {}",
                report.trial,
                report.reason().unwrap_or_default(),
                humantime::format_duration(retry_in)
            ),
            false,
        );
    }

    fn eval_finished(&self, report: &Report) {
        self.line(
            &format!(
                "{}: {} ({}) in {}",
                report.trial,
                report.status.as_str(),
                report.termination.as_str(),
                duration(report.duration_ms)
            ),
            true,
        );
    }

    fn eval_kept(&self, report: &Report) {
        self.line(
            &format!("{}: {} (kept)", report.trial, report.status.as_str()),
            true,
        );
    }

    fn run_finished(&self, _summary: &RunSummary) {
        self.sink.done();
    }
}
