//! Plain-text renderings of a run's summary and of a comparison, as `hyoka run` and `hyoka
//! report` print them: one place for the wording, so every tool that embeds the harness
//! prints the same.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::compare::{Comparison, Flip, RunSide};
use crate::report::{Report, RunSummary, Status};
use crate::runner::Observer;
use crate::timeline::Summary;
use crate::trials::Trial;
use crate::usage::TokenUsage;

/// How many trials a summary lists before it points to `run.json`.
const ROWS: usize = 20;

fn duration(ms: u64) -> String {
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", r * 100.0))
}

fn figure(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

/// Tokens and cost in one phrase: `12345 tokens (in 100, out 200, cache read 45, cache
/// write 0), $0.4200`; only what was reported.
pub fn usage_text(usage: &TokenUsage) -> String {
    let mut parts = Vec::new();
    if usage.has_tokens() {
        let detail: Vec<String> = [
            ("in", usage.input_tokens),
            ("out", usage.output_tokens),
            ("cache read", usage.cache_read_tokens),
            ("cache write", usage.cache_creation_tokens),
        ]
        .into_iter()
        .filter_map(|(name, n)| Some(format!("{name} {}", n?)))
        .collect();
        parts.push(format!("{} tokens ({})", usage.tokens(), detail.join(", ")));
    }
    if let Some(cost) = usage.cost_usd {
        parts.push(format!("${cost:.4}"));
    }
    parts.join(", ")
}

/// The human summary of a run: the totals, each trial (up to 20) with why it did not pass,
/// the tasks' pass@k and pass^k when evals ran several trials, spending, and where the
/// records are.
pub fn render_summary(summary: &RunSummary, run_dir: &Path) -> String {
    let mut out = String::new();
    let t = &summary.totals;
    let mut counts = vec![
        format!("{} passed", t.passed),
        format!("{} failed", t.failed),
    ];
    if t.errors > 0 {
        counts.push(format!(
            "{} error{} ({} infra, {} scorer)",
            t.errors,
            if t.errors == 1 { "" } else { "s" },
            t.errors_infra,
            t.errors_scorer
        ));
    } else {
        counts.push("0 errors".to_owned());
    }
    if t.not_run > 0 {
        counts.push(format!("{} not run", t.not_run));
    }
    let _ = writeln!(
        out,
        "run {}: {} — {} in {} (pass rate {})",
        summary.run_id,
        summary.status.as_str(),
        counts.join(", "),
        duration(summary.duration_ms),
        percent(t.pass_rate)
    );
    let shown = summary.evals.len().min(ROWS);
    for eval in &summary.evals[..shown] {
        let _ = writeln!(
            out,
            "  {:<7} {:<24} {:<20} turns {:>3}  actions {:>3}  files {:>4}  {}",
            eval.status.as_str(),
            if eval.trial.is_empty() {
                &eval.eval_id
            } else {
                &eval.trial
            },
            eval.termination.as_str(),
            eval.counts.turns,
            eval.counts.actions,
            eval.counts.files,
            duration(eval.duration_ms)
        );
        if matches!(eval.status, Status::Failed | Status::Error)
            && let Some(reason) = &eval.reason
        {
            let kind = eval
                .error_kind
                .map_or(String::new(), |k| format!("{} ", k.as_str()));
            let _ = writeln!(out, "          {kind}why: {reason}");
        }
        if let Some(events) = eval.events.filter(|e| e.none_seen) {
            let none = none_seen(
                events.format.as_str(),
                events.unknown_lines,
                events.malformed_lines,
            );
            let _ = writeln!(out, "          events: {none}");
        }
    }
    if summary.evals.len() > shown {
        let _ = writeln!(
            out,
            "  … and {} more (see run.json)",
            summary.evals.len() - shown
        );
    }
    if summary.tasks.iter().any(|task| task.trials > 1) {
        tasks_table(&mut out, summary);
    }
    if t.retried > 0 {
        let _ = writeln!(
            out,
            "retried: {} trial(s) after infrastructure errors",
            t.retried
        );
    }
    if let Some(usage) = &summary.usage {
        let _ = writeln!(out, "usage: {}", usage_text(usage));
    }
    let _ = writeln!(out, "reports: {}", run_dir.display());
    out
}

/// The tasks' table of a summary: trials, passes, pass@1, pass@N and pass^N (N: the task's
/// trials), the mean score, and the mean over tasks.
fn tasks_table(out: &mut String, summary: &RunSummary) {
    let _ = writeln!(
        out,
        "tasks: {:<24} {:>6} {:>6}  {:>7}  {:>7}  {:>7}  {:>6}",
        "", "trials", "passed", "pass@1", "pass@N", "pass^N", "score"
    );
    for task in summary.tasks.iter().take(ROWS) {
        let n = task.trials.to_string();
        let _ = writeln!(
            out,
            "  {:<28} {:>6} {:>6}  {:>7}  {:>7}  {:>7}  {:>6}",
            task.name(),
            task.trials,
            task.passed,
            figure(task.pass_at_k.get("1").copied()),
            figure(task.pass_at_k.get(&n).copied()),
            figure(task.pass_hat_k.get(&n).copied()),
            figure(task.mean_score)
        );
    }
    let m = &summary.metrics;
    let _ = writeln!(
        out,
        "  {:<28} {:>6} {:>6}  {:>7}  (mean over {} tasks)",
        "all tasks",
        "",
        "",
        figure(m.pass_at_k.get("1").copied()),
        m.tasks
    );
}

/// The human rendering of a [`Comparison`]: both runs' totals, the per-task table with the
/// difference and the flips, and the paired test.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let side = |name: &str, s: &RunSide| {
        let mut line = format!(
            "{name}: {} ({}): {} trials, {} passed, {} failed, {} errors, {} not run, pass rate {}, \
             {} wall, {} in trials",
            s.run_id,
            s.source,
            s.trials,
            s.passed,
            s.failed,
            s.errors,
            s.not_run,
            percent(s.pass_rate),
            duration(s.duration_ms),
            duration(s.trial_time_ms)
        );
        if let Some(usage) = &s.usage {
            let _ = write!(line, ", {}", usage_text(usage));
        }
        line
    };
    let _ = writeln!(out, "{}", side("A", &c.a));
    let _ = writeln!(out, "{}", side("B", &c.b));
    let _ = writeln!(out, "  {:<32} {:>8} {:>8} {:>8}", "task", "A", "B", "B − A");
    for task in &c.tasks {
        let flip = match task.flip {
            Some(Flip::Fixed) => "  fixed",
            Some(Flip::Broken) => "  broken",
            None => "",
        };
        let delta = task
            .delta
            .map_or_else(|| "-".to_owned(), |d| format!("{:+.1}%", d * 100.0));
        let _ = writeln!(
            out,
            "  {:<32} {:>8} {:>8} {:>8}{flip}",
            task.task,
            percent(task.a),
            percent(task.b),
            delta
        );
    }
    let _ = writeln!(
        out,
        "flipped: {}",
        if c.flipped.is_empty() {
            "none".to_owned()
        } else {
            c.flipped.join(", ")
        }
    );
    let test = &c.test;
    let _ = writeln!(
        out,
        "{}: {} paired tasks, B better on {}, A better on {}, {} ties; p = {:.4}",
        test.name, test.tasks, test.b_better, test.a_better, test.ties, test.p_value
    );
    out
}

/// One line of an `action_timeline.json` summary: `12 events: 3 turns, tool calls Write ×5,
/// 5 files created`.
pub fn timeline_text(summary: &Summary) -> String {
    let tools: Vec<String> = (summary.tools.iter())
        .map(|(name, n)| format!("{name} ×{n}"))
        .collect();
    format!(
        "{} events: {} turns, tool calls {}, {} files created",
        summary.events,
        summary.turns,
        if tools.is_empty() {
            "none".to_owned()
        } else {
            tools.join(", ")
        },
        summary.files_created
    )
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

/// What a reader that saw no valid event says, in the summary and on the page.
pub(crate) fn none_seen(format: &str, unknown: u64, malformed: u64) -> String {
    format!("none seen ({format} reader: {unknown} unknown, {malformed} malformed line(s))")
}
