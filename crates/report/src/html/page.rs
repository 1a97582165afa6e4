//! The page's data, from the records: the task table (tasks with their trials and figures),
//! the comparison of two runs, the header's facts, and each trial's details packed into
//! compressed chunks that the page inflates on demand.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use hyoka_eval::{ByK, Metrics, TaskSummary, TokenUsage, truncate_chars};

use super::detail::detail;
use super::load::{RunRecords, TrialRecords, agent_of, status, termination, usage};
use super::model::{FIELD_CAP, TaskLine};
use super::pack::{CHUNK, Packer};
use crate::compare::{Flip, check_related, pair_tasks, task_delta};
use crate::error::ReportError;

/// The longest tool input of one event on the page.
const INPUT_CAP: usize = 240;
/// The characters of tool inputs a page keeps in all, shared out among its events; below
/// [`INPUT_MIN`] characters each, inputs are left out (the records keep them).
const INPUT_BUDGET: usize = 8 << 20;
const INPUT_MIN: usize = 24;

/// Everything the page's script reads, as JSON: inflated once when the page opens.
#[derive(Debug, Serialize)]
pub(super) struct Index {
    /// `run` or `compare`.
    pub(super) kind: &'static str,
    pub(super) runs: Vec<RunIndex>,
    /// The rows of the comparison, for `compare`.
    pub(super) compare: Option<Vec<CompareRow>>,
    /// Trials per chunk: trial `g` is entry `g % chunk` of chunk `g / chunk`.
    pub(super) chunk: usize,
    /// The longest tool input kept per event; 0 when the run is too large to keep them.
    pub(super) input_cap: usize,
}

/// One run's table.
#[derive(Debug, Serialize)]
pub(super) struct RunIndex {
    /// `A` and `B` on a comparison, empty otherwise.
    pub(super) label: &'static str,
    pub(super) run_id: String,
    pub(super) tasks: Vec<TaskRow>,
}

/// One task (an eval, and its agent where the run names agents) with its trials.
#[derive(Debug, Clone, Serialize)]
pub(super) struct TaskRow {
    pub(super) id: String,
    pub(super) agent: Option<String>,
    /// `passed` (every counted trial), `failed` (none), `partial`, `error` (no counted trial,
    /// some errors) or `not_run`.
    pub(super) status: &'static str,
    /// Trials listed, whatever their status.
    pub(super) trials: u64,
    /// Trials that count in pass rates (passed or failed).
    pub(super) counted: u64,
    pub(super) passed: u64,
    pub(super) errors: u64,
    pub(super) not_run: u64,
    pub(super) pass_at_k: ByK,
    pub(super) pass_hat_k: ByK,
    pub(super) mean_score: Option<f64>,
    pub(super) tokens: Option<u64>,
    pub(super) cost_usd: Option<f64>,
    pub(super) time_ms: u64,
    /// The terminations of its trials, each once.
    pub(super) terminations: Vec<String>,
    /// Whether the figures are the run's own (`run.json` `tasks`) or the page's.
    pub(super) from_run: bool,
    pub(super) rows: Vec<TrialRow>,
    /// The task's counts and figures, as the harness defines them.
    #[serde(skip)]
    pub(super) summary: TaskSummary,
}

/// One trial's line in its task.
#[derive(Debug, Clone, Serialize)]
pub(super) struct TrialRow {
    /// The epoch, else its position in the task, from 1.
    pub(super) label: String,
    pub(super) status: String,
    pub(super) termination: String,
    pub(super) error_kind: Option<String>,
    pub(super) time_ms: Option<u64>,
    pub(super) tokens: Option<u64>,
    pub(super) cost_usd: Option<f64>,
    pub(super) score: Option<f64>,
    pub(super) attempts: Option<u64>,
    pub(super) agent: Option<String>,
    /// Whether some of its records are missing or were refused.
    pub(super) problems: bool,
    /// The trial's number on the page, which locates its details.
    pub(super) g: usize,
}

/// One task of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct CompareRow {
    pub(super) id: String,
    pub(super) agent: Option<String>,
    /// Its index in run A's (B's) tasks, if it ran there.
    pub(super) a: Option<usize>,
    pub(super) b: Option<usize>,
    /// Its pass rate in each run, when it has counted trials there.
    pub(super) rate_a: Option<f64>,
    pub(super) rate_b: Option<f64>,
    pub(super) delta: Option<f64>,
    /// How it flipped ([`Flip::between`]): `fixed` or `broken`.
    pub(super) flip: Option<Flip>,
}

/// The facts of a run's header.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Header {
    pub(super) run_id: String,
    pub(super) source: String,
    pub(super) status: String,
    pub(super) started_at: String,
    pub(super) ended_at: String,
    pub(super) duration_ms: Option<u64>,
    pub(super) suite: Option<String>,
    pub(super) shard: Option<String>,
    pub(super) version: Option<String>,
    pub(super) tasks: usize,
    pub(super) trials: usize,
    /// Trials per status, in a fixed order (`passed`, `failed`, `error`, `not_run`, others).
    pub(super) statuses: Vec<(String, usize)>,
    pub(super) pass_at_k: ByK,
    pub(super) pass_hat_k: ByK,
    pub(super) mean_score: Option<f64>,
    pub(super) metrics_from_run: bool,
    /// The tasks with a pass@1 (the denominator of its mean over tasks).
    pub(super) tasks_with_pass_at_1: usize,
    /// Trials that passed and failed (the pass rate's counts).
    pub(super) passed: u64,
    pub(super) failed: u64,
    /// The shards a partial merge lacks.
    pub(super) missing_shards: Vec<u64>,
    pub(super) tokens: Option<u64>,
    pub(super) cost_usd: Option<f64>,
    /// Containment layers with the number of trials that ran under each.
    pub(super) layers: Vec<(String, usize)>,
}

/// A page's data: the index, the compressed detail chunks, and the headers.
#[derive(Debug)]
pub(super) struct PageData {
    pub(super) index: Index,
    pub(super) headers: Vec<Header>,
    /// Base64 of each gzip chunk of trial details.
    pub(super) chunks: Vec<String>,
}

/// Builds the data of a page of one run (or two, compared).
pub(super) fn build(runs: &[&RunRecords]) -> Result<PageData, ReportError> {
    let labels: &[&'static str] = if runs.len() == 2 { &["A", "B"] } else { &[""] };
    let events: usize = (runs.iter().flat_map(|r| &r.trials))
        .filter_map(|t| t.timeline.as_ref().map(|t| t.events.len()))
        .sum();
    let input_cap = match INPUT_BUDGET / events.max(1) {
        cap if cap < INPUT_MIN => 0,
        cap => cap.min(INPUT_CAP),
    };
    let mut next = 0;
    let mut indexes = Vec::new();
    let mut headers = Vec::new();
    let mut packer = Packer::default();
    for (run, label) in runs.iter().zip(labels) {
        let groups = group(&run.trials);
        let mut tasks = Vec::with_capacity(groups.len());
        for ((id, agent), members) in groups {
            let line = run
                .run
                .tasks
                .iter()
                .find(|t| t.eval_id == id && (t.agent.is_none() || t.agent == agent));
            let trials: Vec<&TrialRecords> = members.iter().map(|&i| &run.trials[i]).collect();
            let mut task = task_row(&id, agent, &trials, line);
            for (row, trial) in task.rows.iter_mut().zip(&trials) {
                row.g = next;
                next += 1;
                packer.push(&detail(&id, label, &row.label, trial, input_cap))?;
            }
            tasks.push(task);
        }
        headers.push(header(run, &tasks));
        indexes.push(RunIndex {
            label,
            run_id: run.run.run_id.clone(),
            tasks,
        });
    }
    let compare = match (&indexes[..], runs) {
        ([a, b], [ra, rb]) => Some(compare((&ra.source, &a.tasks), (&rb.source, &b.tasks))?),
        _ => None,
    };
    Ok(PageData {
        index: Index {
            kind: if compare.is_some() { "compare" } else { "run" },
            runs: indexes,
            compare,
            chunk: CHUNK,
            input_cap,
        },
        headers,
        chunks: packer.finish()?,
    })
}

/// A task: an eval id, and the agent its trials record.
type TaskKey = (String, Option<String>);

/// The trials of each task, in the order tasks first appear; a task is an eval id and the
/// agent its trials record.
fn group(trials: &[TrialRecords]) -> Vec<(TaskKey, Vec<usize>)> {
    let mut order: Vec<(TaskKey, Vec<usize>)> = Vec::new();
    let mut seen: HashMap<TaskKey, usize> = HashMap::new();
    for (i, trial) in trials.iter().enumerate() {
        let key = (eval_id(trial).to_owned(), agent_of(trial));
        let slot = *seen.entry(key.clone()).or_insert_with(|| {
            order.push((key, Vec::new()));
            order.len() - 1
        });
        order[slot].1.push(i);
    }
    order
}

fn eval_id(trial: &TrialRecords) -> &str {
    if !trial.line.eval_id.is_empty() {
        return &trial.line.eval_id;
    }
    trial
        .report
        .as_ref()
        .map_or("(unnamed)", |r| r.eval_id.as_str())
}

fn score(trial: &TrialRecords) -> Option<f64> {
    trial
        .report
        .as_ref()
        .and_then(|r| r.review.as_ref())
        .and_then(|v| v.score)
        .filter(|s| s.is_finite())
}

/// One trial's line: the report's facts where it has them, else `run.json`'s.
fn trial_row(position: usize, trial: &TrialRecords) -> TrialRow {
    let report = trial.report.as_ref();
    let used = usage(trial);
    let epoch = trial.line.epoch.or_else(|| report.and_then(|r| r.epoch));
    TrialRow {
        label: epoch.map_or_else(|| (position + 1).to_string(), |e| e.to_string()),
        status: truncate_chars(status(trial), 64),
        termination: truncate_chars(termination(trial), 64),
        error_kind: (trial.line.error_kind.clone())
            .or_else(|| report.and_then(|r| r.error_kind.clone()))
            .map(|k| truncate_chars(&k, 64)),
        time_ms: report
            .and_then(|r| r.duration_ms)
            .or(trial.line.duration_ms),
        tokens: used.as_ref().and_then(TokenUsage::reported_tokens),
        cost_usd: used.and_then(|u| u.cost_usd).filter(|c| c.is_finite()),
        score: score(trial),
        attempts: (trial.line.attempts).or_else(|| report.and_then(|r| r.attempts)),
        agent: agent_of(trial).map(|a| truncate_chars(&a, 256)),
        problems: !trial.problems.is_empty(),
        g: 0,
    }
}

/// One task's line: its counts from its trials, its figures from `run.json` when the run has
/// them, else computed from those counts the way the harness computes `run.json`'s
/// ([`TaskSummary::fill_figures`]).
fn task_row(
    id: &str,
    agent: Option<String>,
    trials: &[&TrialRecords],
    line: Option<&TaskLine>,
) -> TaskRow {
    let rows: Vec<TrialRow> = (trials.iter().enumerate())
        .map(|(i, trial)| trial_row(i, trial))
        .collect();
    let count = |s: &str| rows.iter().filter(|r| r.status == s).count() as u64;
    let mut summary = TaskSummary {
        eval_id: id.to_owned(),
        agent: agent.clone(),
        trials: rows.len() as u64,
        passed: count("passed"),
        failed: count("failed"),
        not_run: count("not_run"),
        ..TaskSummary::default()
    };
    summary.errors = summary.trials - summary.passed - summary.failed - summary.not_run;
    let scores: Vec<f64> = (rows.iter())
        .filter(|r| r.status == "passed" || r.status == "failed")
        .filter_map(|r| r.score)
        .collect();
    summary.fill_figures(&scores);
    if let Some(line) = line {
        if !line.pass_at_k.is_empty() {
            summary.pass_at_k = by_k(&line.pass_at_k);
        }
        if !line.pass_hat_k.is_empty() {
            summary.pass_hat_k = by_k(&line.pass_hat_k);
        }
        summary.mean_score = line.mean_score.or(summary.mean_score);
    }
    let mut terminations: Vec<String> = Vec::new();
    for row in &rows {
        if !row.termination.is_empty() && !terminations.contains(&row.termination) {
            terminations.push(row.termination.clone());
        }
    }
    let (counted, passed, errors) = (summary.scored(), summary.passed, summary.errors);
    let status = match () {
        () if counted == 0 && errors > 0 => "error",
        () if counted == 0 => "not_run",
        () if passed == counted => "passed",
        () if passed == 0 => "failed",
        () => "partial",
    };
    let usages: Vec<TokenUsage> = trials.iter().filter_map(|t| usage(t)).collect();
    let total = TokenUsage::total(&usages);
    TaskRow {
        id: truncate_chars(id, FIELD_CAP),
        agent: agent.map(|a| truncate_chars(&a, 256)),
        status,
        trials: summary.trials,
        counted,
        passed,
        errors,
        not_run: summary.not_run,
        pass_at_k: summary.pass_at_k.clone(),
        pass_hat_k: summary.pass_hat_k.clone(),
        mean_score: summary.mean_score,
        tokens: total.as_ref().and_then(TokenUsage::reported_tokens),
        cost_usd: total.and_then(|u| u.cost_usd).filter(|c| c.is_finite()),
        time_ms: rows
            .iter()
            .filter_map(|r| r.time_ms)
            .fold(0, u64::saturating_add),
        terminations,
        from_run: line.is_some(),
        rows,
        summary,
    }
}

/// The rows of a comparison: A's tasks in order, then those only B ran, paired, rated and
/// flipped as `report compare` does it ([`pair_tasks`], [`task_delta`]); refused as it
/// refuses runs with no task in common ([`check_related`]). Each side is where it was read
/// from and its tasks.
pub(super) fn compare(
    (source_a, a): (&str, &[TaskRow]),
    (source_b, b): (&str, &[TaskRow]),
) -> Result<Vec<CompareRow>, ReportError> {
    let summaries = |rows: &[TaskRow]| rows.iter().map(|t| t.summary.clone()).collect::<Vec<_>>();
    let (sa, sb) = (summaries(a), summaries(b));
    let pairs = pair_tasks(&sa, &sb);
    check_related(&pairs, (source_a, sa.len()), (source_b, sb.len()))?;
    Ok(pairs
        .into_iter()
        .map(|(ia, ib)| {
            let task = ia.map_or_else(|| &b[ib.unwrap_or_default()], |i| &a[i]);
            let delta = task_delta(ia.map(|i| &sa[i]), ib.map(|i| &sb[i]));
            CompareRow {
                id: task.id.clone(),
                agent: task.agent.clone(),
                a: ia,
                b: ib,
                rate_a: delta.a,
                rate_b: delta.b,
                delta: delta.delta,
                flip: delta.flip,
            }
        })
        .collect())
}

/// A figure by `k` as a page shows it: a `k` that is not a whole number above 0 is dropped.
fn by_k(map: &BTreeMap<String, f64>) -> ByK {
    (map.iter())
        .filter_map(|(k, v)| Some((ByK::parse_k(k)?, *v)))
        .collect()
}

fn header(run: &RunRecords, tasks: &[TaskRow]) -> Header {
    let file = &run.run;
    let mut statuses: Vec<(String, usize)> = ["passed", "failed", "error", "not_run"]
        .iter()
        .map(|s| ((*s).to_owned(), 0))
        .collect();
    let mut layers: Vec<(String, usize)> = Vec::new();
    for trial in &run.trials {
        let s = truncate_chars(status(trial), 64);
        match statuses.iter_mut().find(|(name, _)| *name == s) {
            Some(entry) => entry.1 += 1,
            None => statuses.push((s, 1)),
        }
        let cleanup = trial.report.as_ref().and_then(|r| r.cleanup.as_ref());
        for layer in cleanup.map(|c| c.layers.as_slice()).unwrap_or_default() {
            match layers.iter_mut().find(|(name, _)| name == layer) {
                Some(entry) => entry.1 += 1,
                None => layers.push((truncate_chars(layer, 64), 1)),
            }
        }
    }
    // The run's own total when it has one, else the same total over its trials' records:
    // one sum (`TokenUsage::total`) and one count of tokens, as every view has them.
    let total = file.usage.or_else(|| {
        let usages: Vec<TokenUsage> = run.trials.iter().filter_map(usage).collect();
        TokenUsage::total(&usages)
    });
    let tokens = total.as_ref().and_then(TokenUsage::reported_tokens);
    let cost = total.and_then(|u| u.cost_usd).filter(|c| c.is_finite());
    let (at_k, hat_k, mean_score, metrics_from_run) = if let Some(m) = &file.metrics {
        (by_k(&m.pass_at_k), by_k(&m.pass_hat_k), m.mean_score, true)
    } else {
        let summaries: Vec<TaskSummary> = tasks.iter().map(|t| t.summary.clone()).collect();
        let m = Metrics::of_tasks(&summaries);
        (m.pass_at_k, m.pass_hat_k, m.mean_score, false)
    };
    let count = |name: &str| {
        (statuses.iter())
            .find(|(s, _)| s == name)
            .map_or(0, |(_, n)| *n as u64)
    };
    let summaries: Vec<TaskSummary> = tasks.iter().map(|t| t.summary.clone()).collect();
    Header {
        passed: count("passed"),
        failed: count("failed"),
        tasks_with_pass_at_1: crate::render::tasks_with_pass_at(&summaries, "1"),
        missing_shards: file.missing_shards.iter().copied().take(4096).collect(),
        run_id: truncate_chars(&file.run_id, FIELD_CAP),
        source: truncate_chars(&run.source, FIELD_CAP),
        status: truncate_chars(&file.status, 64),
        started_at: truncate_chars(&file.started_at, 64),
        ended_at: truncate_chars(&file.ended_at, 64),
        duration_ms: file.duration_ms,
        suite: file.suite.as_ref().and_then(describe),
        shard: file.shard.as_ref().and_then(describe),
        version: (file.hyoka_version.as_ref())
            .or(file.version.as_ref())
            .and_then(describe),
        tasks: tasks.len(),
        trials: run.trials.len(),
        statuses,
        pass_at_k: at_k,
        pass_hat_k: hat_k,
        mean_score,
        metrics_from_run,
        tokens,
        cost_usd: cost,
        layers,
    }
}

/// A short text for a header value of any JSON shape: a string as is; a shard object as
/// `index/count`; a suite object by its `name` or `path`; anything else as compact JSON.
fn describe(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let text = match value {
        Value::Null => return None,
        Value::String(s) => s.clone(),
        Value::Object(map) => match (map.get("index"), map.get("count")) {
            (Some(i), Some(n)) => format!("{i}/{n}"),
            _ => match map.get("name").or_else(|| map.get("path")) {
                Some(Value::String(s)) => s.clone(),
                _ => value.to_string(),
            },
        },
        other => other.to_string(),
    };
    Some(truncate_chars(&text, 256))
}
