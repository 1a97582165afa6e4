//! The page's data, from the records: the task table (tasks with their trials and figures),
//! the comparison of two runs, the header's facts, and each trial's details packed into
//! compressed chunks that the page inflates on demand.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::detail::detail;
use super::error::HtmlError;
use super::load::{RunRecords, TrialRecords, agent_of, status, termination, usage};
use super::model::{FIELD_CAP, TaskLine, Usage};
use super::pack::{CHUNK, Packer};
use crate::events::truncate_chars;
use crate::metrics::{pass_at_k, pass_hat_k};

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
    pub(super) pass_at_k: BTreeMap<String, f64>,
    pub(super) pass_hat_k: BTreeMap<String, f64>,
    pub(super) mean_score: Option<f64>,
    pub(super) tokens: Option<u64>,
    pub(super) cost_usd: Option<f64>,
    pub(super) time_ms: u64,
    /// The terminations of its trials, each once.
    pub(super) terminations: Vec<String>,
    /// Whether the figures are the run's own (`run.json` `tasks`) or the page's.
    pub(super) from_run: bool,
    pub(super) rows: Vec<TrialRow>,
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
    /// pass@1 in each run, when it has counted trials there.
    pub(super) rate_a: Option<f64>,
    pub(super) rate_b: Option<f64>,
    pub(super) delta: Option<f64>,
    /// `fixed` (solved in B only) or `broke` (solved in A only); solved means more than half
    /// of its counted trials passed.
    pub(super) flip: Option<&'static str>,
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
    pub(super) pass_at_k: BTreeMap<String, f64>,
    pub(super) pass_hat_k: BTreeMap<String, f64>,
    pub(super) mean_score: Option<f64>,
    pub(super) metrics_from_run: bool,
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
pub(super) fn build(runs: &[&RunRecords]) -> Result<PageData, HtmlError> {
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
    let compare = (indexes.len() == 2).then(|| compare(&indexes[0].tasks, &indexes[1].tasks));
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
        tokens: used.and_then(|u| u.tokens()),
        cost_usd: used.and_then(|u| u.cost_usd).filter(|c| c.is_finite()),
        score: score(trial),
        attempts: (trial.line.attempts).or_else(|| report.and_then(|r| r.attempts)),
        agent: agent_of(trial).map(|a| truncate_chars(&a, 256)),
        problems: !trial.problems.is_empty(),
        g: 0,
    }
}

/// The sum of the values present, or `None` when none is.
fn sum<T: std::iter::Sum<T>>(values: impl Iterator<Item = Option<T>>) -> Option<T> {
    let mut present = values.flatten().peekable();
    present.peek().is_some().then(|| present.sum())
}

#[expect(clippy::cast_precision_loss, reason = "counts of trials")]
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
    let (passed, failed, not_run) = (count("passed"), count("failed"), count("not_run"));
    let errors = rows.len() as u64 - passed - failed - not_run;
    let mut terminations: Vec<String> = Vec::new();
    for row in &rows {
        if !row.termination.is_empty() && !terminations.contains(&row.termination) {
            terminations.push(row.termination.clone());
        }
    }
    let scores: Vec<f64> = rows.iter().filter_map(|r| r.score).collect();
    let counted = passed + failed;
    let status = match () {
        () if counted == 0 && errors > 0 => "error",
        () if counted == 0 => "not_run",
        () if passed == counted => "passed",
        () if passed == 0 => "failed",
        () => "partial",
    };
    let mut row = TaskRow {
        id: truncate_chars(id, FIELD_CAP),
        agent: agent.map(|a| truncate_chars(&a, 256)),
        status,
        trials: rows.len() as u64,
        counted,
        passed,
        errors,
        not_run,
        pass_at_k: BTreeMap::new(),
        pass_hat_k: BTreeMap::new(),
        mean_score: (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64),
        tokens: sum(rows.iter().map(|r| r.tokens)),
        cost_usd: sum(rows.iter().map(|r| r.cost_usd)),
        time_ms: rows
            .iter()
            .filter_map(|r| r.time_ms)
            .fold(0, u64::saturating_add),
        terminations,
        from_run: false,
        rows,
    };
    if counted > 0 {
        for k in [1, counted] {
            row.pass_at_k
                .insert(k.to_string(), pass_at_k(counted, passed, k).unwrap_or(0.0));
            row.pass_hat_k
                .insert(k.to_string(), pass_hat_k(counted, passed, k).unwrap_or(0.0));
        }
    }
    if let Some(line) = line {
        row.from_run = true;
        if let Some(n) = line.trials {
            row.counted = n;
        }
        if let Some(c) = line.passed {
            row.passed = c;
        }
        if !line.pass_at_k.is_empty() {
            row.pass_at_k.clone_from(&line.pass_at_k);
        }
        if !line.pass_hat_k.is_empty() {
            row.pass_hat_k.clone_from(&line.pass_hat_k);
        }
        row.mean_score = line.mean_score.or(row.mean_score);
    }
    row
}

/// The rows of a comparison: A's tasks in order, then those only B ran.
pub(super) fn compare(a: &[TaskRow], b: &[TaskRow]) -> Vec<CompareRow> {
    let key = |t: &TaskRow| (t.id.clone(), t.agent.clone());
    let in_b: HashMap<_, usize> = b.iter().enumerate().map(|(i, t)| (key(t), i)).collect();
    let in_a: HashMap<_, usize> = a.iter().enumerate().map(|(i, t)| (key(t), i)).collect();
    let rows_a = a
        .iter()
        .enumerate()
        .map(|(i, t)| (t, Some(i), in_b.get(&key(t)).copied()));
    let rows_b = (b.iter().enumerate())
        .filter(|(_, t)| !in_a.contains_key(&key(t)))
        .map(|(i, t)| (t, None, Some(i)));
    rows_a
        .chain(rows_b)
        .map(|(task, ia, ib)| {
            let rate_a = ia.and_then(|i| rate(&a[i]));
            let rate_b = ib.and_then(|i| rate(&b[i]));
            let flip = match (rate_a, rate_b) {
                (Some(x), Some(y)) if x <= 0.5 && y > 0.5 => Some("fixed"),
                (Some(x), Some(y)) if x > 0.5 && y <= 0.5 => Some("broke"),
                _ => None,
            };
            CompareRow {
                id: task.id.clone(),
                agent: task.agent.clone(),
                a: ia,
                b: ib,
                rate_a,
                rate_b,
                delta: rate_a.zip(rate_b).map(|(x, y)| y - x),
                flip,
            }
        })
        .collect()
}

/// A task's pass@1: its run's figure, else the share of counted trials that passed.
#[expect(clippy::cast_precision_loss, reason = "counts of trials")]
fn rate(task: &TaskRow) -> Option<f64> {
    task.pass_at_k
        .get("1")
        .copied()
        .or_else(|| (task.counted > 0).then(|| task.passed as f64 / task.counted as f64))
        .filter(|r| r.is_finite())
}

#[expect(clippy::cast_precision_loss, reason = "counts of tasks")]
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
    let total = file.usage.as_ref();
    let tokens = total
        .and_then(Usage::tokens)
        .or_else(|| sum(tasks.iter().map(|t| t.tokens)));
    let cost = (total.and_then(|u| u.cost_usd)).or_else(|| sum(tasks.iter().map(|t| t.cost_usd)));
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let (at_k, hat_k, mean_score, metrics_from_run) = if let Some(m) = &file.metrics {
        (
            m.pass_at_k.clone(),
            m.pass_hat_k.clone(),
            m.mean_score,
            true,
        )
    } else {
        let rates: BTreeMap<String, f64> = mean(tasks.iter().filter_map(rate).collect())
            .map(|r| ("1".to_owned(), r))
            .into_iter()
            .collect();
        let scores = mean(tasks.iter().filter_map(|t| t.mean_score).collect());
        (rates.clone(), rates, scores, false)
    };
    Header {
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
