//! The page's data, from the records: the task table (tasks with their trials and figures),
//! the comparison of two runs, the header's facts, and each trial's details packed into
//! compressed chunks that the page inflates on demand.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;

use super::error::HtmlError;
use super::load::{RunRecords, Tail, TrialRecords};
use super::model::{CleanupFile, ReviewFile, TaskLine, Usage};
use crate::events::truncate_chars;

/// Trials per compressed chunk: large enough to compress well, small enough to inflate in a
/// few milliseconds when one trial is opened.
pub(super) const CHUNK: usize = 64;
/// The longest text of one field on the page (notes, details, paths, tool inputs).
const FIELD_CAP: usize = 2048;
/// The longest tool input of one event on the page.
const INPUT_CAP: usize = 240;

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
                packer.push(&detail(&id, label, &row.label, trial))?;
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
        },
        headers,
        chunks: packer.finish()?,
    })
}

/// The trials of each task, in the order tasks first appear; a task is an eval id and the
/// agent its trials record.
fn group(trials: &[TrialRecords]) -> Vec<((String, Option<String>), Vec<usize>)> {
    let mut order: Vec<((String, Option<String>), Vec<usize>)> = Vec::new();
    let mut seen: HashMap<(String, Option<String>), usize> = HashMap::new();
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

fn agent_of(trial: &TrialRecords) -> Option<String> {
    (trial.line.agent.clone()).or_else(|| trial.report.as_ref().and_then(|r| r.agent.clone()))
}

fn status(trial: &TrialRecords) -> &str {
    match &trial.report {
        Some(r) if !r.status.is_empty() => &r.status,
        _ if !trial.line.status.is_empty() => &trial.line.status,
        _ => "unknown",
    }
}

fn termination(trial: &TrialRecords) -> &str {
    match &trial.report {
        Some(r) if !r.termination.is_empty() => &r.termination,
        _ => &trial.line.termination,
    }
}

fn usage(trial: &TrialRecords) -> Option<Usage> {
    trial
        .report
        .as_ref()
        .and_then(|r| r.usage)
        .or(trial.line.usage)
}

fn score(trial: &TrialRecords) -> Option<f64> {
    trial
        .report
        .as_ref()
        .and_then(|r| r.review.as_ref())
        .and_then(|v| v.score)
        .filter(|s| s.is_finite())
}

/// pass@k with the unbiased estimator 1 − C(n−c, k) / C(n, k): the chance that at least one
/// of k trials drawn from the n passes.
pub(super) fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
    1.0 - ratio(n.saturating_sub(c), n, k)
}

/// pass^k = C(c, k) / C(n, k): the chance that k trials drawn from the n all pass.
pub(super) fn pass_hat_k(n: u64, c: u64, k: u64) -> f64 {
    ratio(c, n, k)
}

/// C(a, k) / C(n, k) as a product, which neither overflows nor loses precision.
#[expect(
    clippy::cast_precision_loss,
    reason = "trial counts are far below 2^52"
)]
fn ratio(a: u64, n: u64, k: u64) -> f64 {
    if k > a || k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (a - i) as f64 / (n - i) as f64)
}

#[expect(
    clippy::cast_precision_loss,
    reason = "sums of scores and counts of trials"
)]
fn task_row(
    id: &str,
    agent: Option<String>,
    trials: &[&TrialRecords],
    line: Option<&TaskLine>,
) -> TaskRow {
    let (mut passed, mut failed, mut errors, mut not_run) = (0, 0, 0, 0);
    let mut terminations: Vec<String> = Vec::new();
    let (mut tokens, mut cost) = (None::<u64>, None::<f64>);
    let (mut scores, mut scored) = (0.0, 0u32);
    let mut time_ms = 0u64;
    let mut rows = Vec::with_capacity(trials.len());
    for (i, trial) in trials.iter().enumerate() {
        match status(trial) {
            "passed" => passed += 1,
            "failed" => failed += 1,
            "not_run" => not_run += 1,
            _ => errors += 1,
        }
        let term = termination(trial);
        if !term.is_empty() && !terminations.iter().any(|t| t == term) {
            terminations.push(term.to_owned());
        }
        let used = usage(trial);
        if let Some(t) = used.and_then(|u| u.tokens()) {
            tokens = Some(tokens.unwrap_or(0).saturating_add(t));
        }
        if let Some(c) = used.and_then(|u| u.cost_usd).filter(|c| c.is_finite()) {
            cost = Some(cost.unwrap_or(0.0) + c);
        }
        if let Some(s) = score(trial) {
            scores += s;
            scored += 1;
        }
        let report = trial.report.as_ref();
        let duration = report
            .and_then(|r| r.duration_ms)
            .or(trial.line.duration_ms);
        time_ms = time_ms.saturating_add(duration.unwrap_or(0));
        let epoch = trial.line.epoch.or_else(|| report.and_then(|r| r.epoch));
        rows.push(TrialRow {
            label: epoch.map_or_else(|| (i + 1).to_string(), |e| e.to_string()),
            status: status(trial).to_owned(),
            termination: term.to_owned(),
            error_kind: (trial.line.error_kind.clone())
                .or_else(|| report.and_then(|r| r.error_kind.clone())),
            time_ms: duration,
            tokens: used.and_then(|u| u.tokens()),
            cost_usd: used.and_then(|u| u.cost_usd),
            score: score(trial),
            attempts: trial
                .line
                .attempts
                .or_else(|| report.and_then(|r| r.attempts)),
            agent: agent_of(trial),
            problems: !trial.problems.is_empty(),
            g: 0,
        });
    }
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
        agent,
        status,
        trials: trials.len() as u64,
        counted,
        passed,
        errors,
        not_run,
        pass_at_k: BTreeMap::new(),
        pass_hat_k: BTreeMap::new(),
        mean_score: (scored > 0).then(|| scores / f64::from(scored)),
        tokens,
        cost_usd: cost,
        time_ms,
        terminations,
        from_run: false,
        rows,
    };
    if counted > 0 {
        for k in [1, counted] {
            row.pass_at_k
                .insert(k.to_string(), pass_at_k(counted, passed, k));
            row.pass_hat_k
                .insert(k.to_string(), pass_hat_k(counted, passed, k));
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
    let (mut tokens, mut cost) = (None::<u64>, None::<f64>);
    for trial in &run.trials {
        let s = status(trial);
        match statuses.iter_mut().find(|(name, _)| name == s) {
            Some(entry) => entry.1 += 1,
            None => statuses.push((s.to_owned(), 1)),
        }
        let cleanup = trial.report.as_ref().and_then(|r| r.cleanup.as_ref());
        for layer in cleanup.map(|c| c.layers.as_slice()).unwrap_or_default() {
            match layers.iter_mut().find(|(name, _)| name == layer) {
                Some(entry) => entry.1 += 1,
                None => layers.push((truncate_chars(layer, 64), 1)),
            }
        }
        let used = usage(trial);
        if let Some(t) = used.and_then(|u| u.tokens()) {
            tokens = Some(tokens.unwrap_or(0).saturating_add(t));
        }
        if let Some(c) = used.and_then(|u| u.cost_usd).filter(|c| c.is_finite()) {
            cost = Some(cost.unwrap_or(0.0) + c);
        }
    }
    if let Some(total) = &file.usage {
        tokens = total.tokens().or(tokens);
        cost = total.cost_usd.or(cost);
    }
    let (pass_at_k, pass_hat_k, mean_score, metrics_from_run) = match &file.metrics {
        Some(m) => (
            m.pass_at_k.clone(),
            m.pass_hat_k.clone(),
            m.mean_score,
            true,
        ),
        None => {
            let rated: Vec<f64> = tasks.iter().filter_map(rate).collect();
            let mut at = BTreeMap::new();
            if !rated.is_empty() {
                at.insert(
                    "1".to_owned(),
                    rated.iter().sum::<f64>() / rated.len() as f64,
                );
            }
            let scores: Vec<f64> = tasks.iter().filter_map(|t| t.mean_score).collect();
            let mean =
                (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64);
            (at.clone(), at, mean, false)
        }
    };
    Header {
        run_id: truncate_chars(&file.run_id, FIELD_CAP),
        source: truncate_chars(&run.source, FIELD_CAP),
        status: file.status.clone(),
        started_at: file.started_at.clone(),
        ended_at: file.ended_at.clone(),
        duration_ms: file.duration_ms,
        suite: file.suite.as_ref().and_then(describe),
        shard: file.shard.as_ref().and_then(describe),
        version: (file.hyoka_version.as_ref())
            .or(file.version.as_ref())
            .and_then(describe),
        tasks: tasks.len(),
        trials: run.trials.len(),
        statuses,
        pass_at_k,
        pass_hat_k,
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

/// One trial's details as the page shows them.
#[derive(Debug, Serialize)]
struct Detail<'a> {
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
    counts: Vec<(&'a str, String)>,
    limits: Vec<(&'a str, String)>,
    usage: Option<Usage>,
    phases: Vec<PhaseOut>,
    events: Vec<EventOut>,
    events_total: u64,
    tools: Vec<(&'a str, u64)>,
    review: Option<ReviewOut>,
    cleanup: Option<CleanupOut>,
    output: Option<&'a Tail>,
    build_log: Option<&'a Tail>,
    review_log: Option<&'a Tail>,
    problems: &'a [String],
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

/// A timeline event, as `[t_ms, type, tool, path, input, detail]`.
#[derive(Debug, Serialize)]
struct EventOut(
    u64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

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

fn detail<'a>(task: &'a str, run: &'a str, label: &'a str, trial: &'a TrialRecords) -> Detail<'a> {
    let report = trial.report.as_ref();
    let start = report.and_then(|r| humantime::parse_rfc3339_weak(&r.started_at).ok());
    let phases = report.map_or_else(Vec::new, |r| {
        r.phases
            .iter()
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
    });
    let timeline = trial.timeline.as_ref();
    let events = timeline.map_or_else(Vec::new, |t| {
        t.events
            .iter()
            .map(|e| {
                EventOut(
                    e.t_ms,
                    truncate_chars(&e.kind, 64),
                    e.tool.as_deref().map(|s| truncate_chars(s, 128)),
                    cap(e.path.as_ref()),
                    e.input.as_deref().map(|s| truncate_chars(s, INPUT_CAP)),
                    cap(e.detail.as_ref()),
                )
            })
            .collect()
    });
    let pairs = |map: Option<&'a BTreeMap<String, serde_json::Value>>| {
        map.map_or_else(Vec::new, |m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), truncate_chars(&v.to_string(), 64)))
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
        counts: pairs(report.map(|r| &r.counts)),
        limits: pairs(report.map(|r| &r.limits)),
        usage: usage(trial),
        phases,
        events_total: timeline
            .and_then(|t| t.summary.events)
            .unwrap_or(events.len() as u64),
        events,
        tools: timeline.map_or_else(Vec::new, |t| {
            t.summary
                .tools
                .iter()
                .map(|(k, v)| (k.as_str(), *v))
                .collect()
        }),
        review,
        cleanup: report
            .and_then(|r| r.cleanup.as_ref())
            .map(CleanupOut::from),
        output: trial.output.as_ref(),
        build_log: trial.build_log.as_ref(),
        review_log: trial.review_log.as_ref(),
        problems: &trial.problems,
    }
}

/// Packs trial details into gzip chunks of [`CHUNK`] trials, each a JSON array.
#[derive(Default)]
struct Packer {
    current: Option<GzEncoder<Vec<u8>>>,
    in_current: usize,
    done: Vec<String>,
}

impl Packer {
    fn push(&mut self, detail: &impl Serialize) -> Result<(), HtmlError> {
        let encode = |source| HtmlError::Encode { source };
        let first = self.current.is_none();
        let writer = self
            .current
            .get_or_insert_with(|| GzEncoder::new(Vec::new(), Compression::default()));
        writer
            .write_all(if first { b"[" } else { b"," })
            .map_err(encode)?;
        serde_json::to_writer(&mut *writer, detail).map_err(|e| encode(e.into()))?;
        self.in_current += 1;
        if self.in_current == CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), HtmlError> {
        if let Some(mut writer) = self.current.take() {
            writer
                .write_all(b"]")
                .map_err(|source| HtmlError::Encode { source })?;
            let bytes = writer
                .finish()
                .map_err(|source| HtmlError::Encode { source })?;
            self.done
                .push(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
        self.in_current = 0;
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<String>, HtmlError> {
        self.flush()?;
        Ok(self.done)
    }
}

/// Gzip and base64 of `value` as JSON.
pub(super) fn pack(value: &impl Serialize) -> Result<String, HtmlError> {
    let encode = |source| HtmlError::Encode { source };
    let mut writer = GzEncoder::new(Vec::new(), Compression::default());
    serde_json::to_writer(&mut writer, value).map_err(|e| encode(e.into()))?;
    let bytes = writer.finish().map_err(encode)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
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
