//! Plain-text renderings of a run's summary and of a comparison, as `hyoka run` and `hyoka
//! report` print them: one place for the wording, so every tool that embeds the harness
//! prints the same.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use hyoka_eval::{RunSummary, Status, Summary, TokenUsage};

use crate::compare::{Comparison, Flip, RunSide};

/// How many trials a summary lists before it points to `run.json`.
const ROWS: usize = 20;

fn duration(ms: u64) -> String {
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", r * 100.0))
}

/// A pass rate with its denominator, the trials that ran to a verdict (passed or failed), and
/// how many of all the trials did not: `75.0% of 4 trials`, `100.0% of 1 scored trial (5 of
/// 6 errored or not run)`, `- (none of 6 trials scored)`. Every view that heads with a pass
/// rate (the summary, `report compare`, the page, the Markdown summary) words it so.
pub(crate) fn pass_rate_text(passed: u64, failed: u64, trials: u64) -> String {
    let scored = passed.saturating_add(failed);
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    match hyoka_eval::pass_rate(passed, failed) {
        None => format!("- (none of {trials} trial{} scored)", plural(trials)),
        Some(rate) if scored >= trials => {
            format!(
                "{} of {scored} trial{}",
                percent(Some(rate)),
                plural(scored)
            )
        }
        Some(rate) => format!(
            "{} of {scored} scored trial{} ({} of {trials} errored or not run)",
            percent(Some(rate)),
            plural(scored),
            trials - scored
        ),
    }
}

/// What a figure averaged over tasks is averaged over: `mean over 12 tasks`, or `mean over
/// 11 of 12 tasks` when some tasks have no such figure (none of their trials was scored).
pub(crate) fn mean_over_text(with_figure: usize, tasks: usize) -> String {
    let plural = if tasks == 1 { "" } else { "s" };
    if with_figure == tasks {
        format!("mean over {tasks} task{plural}")
    } else {
        format!("mean over {with_figure} of {tasks} task{plural}")
    }
}

/// How many of `tasks` have a pass@`k` (the denominator of its mean over tasks).
pub(crate) fn tasks_with_pass_at(tasks: &[hyoka_eval::TaskSummary], k: &str) -> usize {
    tasks.iter().filter(|t| t.pass_at_k.contains_key(k)).count()
}

/// The line a table ends with when it shows fewer rows than it has: `… and 50 more of 70
/// (see run.json)`; `None` when nothing was left out.
pub(crate) fn left_out_text(shown: usize, total: usize, where_: &str) -> Option<String> {
    (total > shown).then(|| format!("… and {} more of {total} (see {where_})", total - shown))
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
        pass_rate_text(t.passed, t.failed, t.evals)
    );
    if !summary.missing_shards.is_empty() {
        let _ = writeln!(out, "{}", missing_shards_text(summary));
    }
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
        if (matches!(eval.status, Status::Failed | Status::Error)
            || eval.termination == hyoka_eval::Termination::Unavailable)
            && let Some(reason) = &eval.reason
        {
            let kind = eval
                .error_kind
                .map_or(String::new(), |k| format!("{} ", k.as_str()));
            let _ = writeln!(out, "          {kind}why: {reason}");
        }
        if let Some(events) = eval.events.as_ref().filter(|e| e.none_seen) {
            let none = none_seen(
                events.format.as_str(),
                events.unknown_lines,
                events.malformed_lines,
            );
            let _ = writeln!(out, "          events: {none}");
        }
    }
    if let Some(line) = left_out_text(shown, summary.evals.len(), "run.json") {
        let _ = writeln!(out, "  {line}");
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
    let shown = summary.tasks.len().min(ROWS);
    for task in &summary.tasks[..shown] {
        let n = task.trials.to_string();
        let _ = writeln!(
            out,
            "  {:<28} {:>6} {:>6}  {:>7}  {:>7}  {:>7}  {:>6}",
            task.name(),
            task.trials,
            task.passed,
            figure(task.pass_at_k.get("1")),
            figure(task.pass_at_k.get(&n)),
            figure(task.pass_hat_k.get(&n)),
            figure(task.mean_score)
        );
    }
    if let Some(line) = left_out_text(shown, summary.tasks.len(), "run.json") {
        let _ = writeln!(out, "  {line}");
    }
    let m = &summary.metrics;
    let _ = writeln!(
        out,
        "  {:<28} {:>6} {:>6}  {:>7}  ({})",
        "all tasks",
        "",
        "",
        figure(m.pass_at_k.get("1")),
        mean_over_text(tasks_with_pass_at(&summary.tasks, "1"), summary.tasks.len())
    );
}

/// A partial merge's headline of what it lacks: `partial: shards 2, 4 missing (their
/// trials are not in these figures)`.
pub(crate) fn missing_shards_text(summary: &RunSummary) -> String {
    let list: Vec<String> = summary
        .missing_shards
        .iter()
        .map(ToString::to_string)
        .collect();
    format!(
        "partial: shard{} {} missing (their trials are not in these figures)",
        if list.len() == 1 { "" } else { "s" },
        list.join(", ")
    )
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
            pass_rate_text(s.passed, s.failed, s.trials),
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

/// What a reader that saw no valid event says, in the summary and on the page: `none seen
/// (codex-json reader: 1 unknown, 1 malformed line(s))`.
pub(crate) fn none_seen(format: &str, unknown: u64, malformed: u64) -> String {
    format!("none seen ({format} reader: {unknown} unknown, {malformed} malformed line(s))")
}
