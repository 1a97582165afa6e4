//! The figures of a run: its status and totals ([`RunSummary::from_evals`]), and per task over
//! repeated trials pass@k, pass^k and the mean review score.
//!
//! A task is one eval (with one agent, when a suite names several). Of its `n` scored
//! trials (passed or failed: errors and trials that never ran are not results), `c`
//! passed. Then:
//!
//! - **pass@k**, the chance that at least one of `k` trials drawn without replacement passes,
//!   by the unbiased estimator `1 − C(n−c, k) / C(n, k)` (Chen et al., 2021), computed as a
//!   product so that it stays exact for large `n`;
//! - **pass^k**, the chance that all `k` drawn trials pass, `C(c, k) / C(n, k)` (Yao et al.,
//!   τ-bench, 2024).
//!
//! Both are reported for `k` = 1, for the task's number of trials `N`, and for 2, 3, 5, 10,
//! 20, 50, … in between; a `k` above `n` (some trials errored) has no figure. Run-level
//! [`Metrics`] average each figure over the tasks that have it.
//!
//! This file is the one definition of these figures: `run.json` is written with them, and
//! every view of a run (the summary, `report compare`, the HTML page) takes them from here,
//! with the [`pass_rate`] (`passed / (passed + failed)`: its denominator is the scored
//! trials) and the [`mean`] they share. Tokens and cost are [`TokenUsage`]'s
//! ([`TokenUsage::reported_tokens`], [`TokenUsage::total`]).
//!
//! [`TokenUsage`]: crate::TokenUsage
//! [`TokenUsage::reported_tokens`]: crate::TokenUsage::reported_tokens
//! [`TokenUsage::total`]: crate::TokenUsage::total

use std::collections::BTreeMap;

use crate::report::{
    ByK, ErrorKind, EvalSummary, Metrics, Report, RunInfo, RunSummary, Status, TaskSummary, Totals,
};
use hyoka_events::TokenUsage;

/// The pass rate: `passed / (passed + failed)`, over the scored trials only (errors and
/// trials that never ran are no results); `None` when no trial was scored. Its denominator,
/// `passed + failed`, is what a view names beside it.
pub fn pass_rate(passed: u64, failed: u64) -> Option<f64> {
    let scored = passed.saturating_add(failed);
    (scored > 0).then(|| as_f64(passed) / as_f64(scored))
}

/// The arithmetic mean of `values`; `None` when there are none.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / as_f64(values.len() as u64))
}

/// pass@k: the chance that at least one of `k` of the `n` trials, `c` of which passed,
/// passes. `None` unless `1 <= k <= n` and `c <= n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    // 1 − Π_{i = n−c+1}^{n} (1 − k / i)
    let mut none_pass = 1.0;
    for i in (n - c + 1)..=n {
        none_pass *= 1.0 - as_f64(k) / as_f64(i);
    }
    Some(1.0 - none_pass)
}

/// pass^k: the chance that all of `k` of the `n` trials, `c` of which passed, pass. `None`
/// unless `1 <= k <= n` and `c <= n`.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    // C(c, k) / C(n, k) = Π_{i = 0}^{k−1} (c − i) / (n − i)
    let mut all_pass = 1.0;
    for i in 0..k {
        if c < i + 1 {
            return Some(0.0);
        }
        all_pass *= as_f64(c - i) / as_f64(n - i);
    }
    Some(all_pass)
}

#[expect(
    clippy::cast_precision_loss,
    reason = "trial counts are far below 2^52, where f64 is exact"
)]
fn as_f64(n: u64) -> f64 {
    n as f64
}

/// The `k`s reported for a task of `trials` trials: 1, 2, 3, 5, 10, 20, 50, 100, … below
/// `trials`, and `trials`.
fn ks(trials: u64) -> Vec<u64> {
    let mut ks = vec![3];
    let mut decade = 1u64;
    while decade < trials {
        ks.extend([decade, decade.saturating_mul(2), decade.saturating_mul(5)]);
        decade = decade.saturating_mul(10);
    }
    ks.retain(|k| *k < trials);
    ks.push(trials.max(1));
    ks.sort_unstable();
    ks.dedup();
    ks
}

impl RunSummary {
    /// Builds the summary of a run from its trials' reports.
    pub fn from_reports(info: RunInfo, reports: &[Report]) -> Self {
        Self::from_evals(info, reports.iter().map(EvalSummary::of).collect())
    }

    /// Builds a summary from per-trial lines, computing the status, the totals, the tasks
    /// and the metrics.
    pub fn from_evals(info: RunInfo, evals: Vec<EvalSummary>) -> Self {
        let mut totals = Totals::default();
        for eval in &evals {
            totals.evals += 1;
            match (eval.status, eval.error_kind) {
                (Status::Passed, _) => totals.passed += 1,
                (Status::Failed, _) => totals.failed += 1,
                (Status::Error, kind) => {
                    totals.errors += 1;
                    match kind {
                        Some(ErrorKind::Scorer) => totals.errors_scorer += 1,
                        _ => totals.errors_infra += 1,
                    }
                }
                (Status::NotRun, _) => totals.not_run += 1,
            }
            if eval.attempts > 1 {
                totals.retried += 1;
            }
            *totals
                .terminations
                .entry(eval.termination.as_str().to_owned())
                .or_default() += 1;
        }
        let status = if totals.passed == totals.evals {
            Status::Passed
        } else if totals.failed > 0 {
            Status::Failed
        } else if totals.errors > 0 {
            Status::Error
        } else {
            Status::NotRun
        };
        totals.pass_rate = pass_rate(totals.passed, totals.failed);
        let tasks = TaskSummary::of_trials(&evals);
        let metrics = Metrics::of_tasks(&tasks);
        Self {
            run_id: info.run_id,
            hyoka_version: env!("CARGO_PKG_VERSION").to_owned(),
            suite: info.suite,
            shard: info.shard,
            missing_shards: Vec::new(),
            started_at: info.started_at,
            ended_at: info.ended_at,
            duration_ms: info.duration_ms,
            status,
            usage: TokenUsage::total(evals.iter().filter_map(|e| e.usage.as_deref())),
            evals,
            tasks,
            metrics,
            totals,
        }
    }
}

impl TaskSummary {
    /// The tasks of a run's trials, in the order each first appears.
    pub fn of_trials(trials: &[EvalSummary]) -> Vec<Self> {
        let mut tasks: Vec<Self> = Vec::new();
        let mut scores: Vec<Vec<f64>> = Vec::new();
        // Each task's index, by eval and agent: a long run has one task per trial.
        let mut index_of: std::collections::HashMap<(&str, Option<&str>), usize> =
            std::collections::HashMap::new();
        for trial in trials {
            let key = (trial.eval_id.as_str(), trial.agent.as_deref());
            let index = *index_of.entry(key).or_insert_with(|| {
                tasks.push(Self {
                    eval_id: trial.eval_id.clone(),
                    agent: trial.agent.clone(),
                    ..Self::default()
                });
                scores.push(Vec::new());
                tasks.len() - 1
            });
            let task = &mut tasks[index];
            task.trials += 1;
            match trial.status {
                Status::Passed => task.passed += 1,
                Status::Failed => task.failed += 1,
                Status::Error => task.errors += 1,
                Status::NotRun => task.not_run += 1,
            }
            if trial.status.is_scored() {
                scores[index].extend(trial.score.filter(|s| s.is_finite()));
            }
        }
        for (task, scores) in tasks.iter_mut().zip(scores) {
            task.fill_figures(&scores);
        }
        tasks
    }

    /// Fills the task's figures from its counts (`trials`, `passed`, `failed`) and the review
    /// `scores` of its scored trials: pass@k and pass^k for the `k`s of its number of
    /// trials, and the mean score. Every view that has a task's counts but not `run.json`'s
    /// figures computes them here.
    pub fn fill_figures(&mut self, scores: &[f64]) {
        let (n, c) = (self.passed + self.failed, self.passed);
        self.pass_at_k.clear();
        self.pass_hat_k.clear();
        for k in ks(self.trials) {
            if let Some(p) = pass_at_k(n, c, k) {
                self.pass_at_k.insert(k, p);
            }
            if let Some(p) = pass_hat_k(n, c, k) {
                self.pass_hat_k.insert(k, p);
            }
        }
        let finite: Vec<f64> = scores.iter().copied().filter(|s| s.is_finite()).collect();
        self.mean_score = mean(&finite);
    }

    /// `eval` or `eval/agent`: how tables name the task.
    pub fn name(&self) -> String {
        match &self.agent {
            Some(agent) => format!("{}/{agent}", self.eval_id),
            None => self.eval_id.clone(),
        }
    }

    /// Its [`pass_rate`] over its scored trials.
    pub fn pass_rate(&self) -> Option<f64> {
        pass_rate(self.passed, self.failed)
    }

    /// Its scored trials (passed or failed): the denominator of its pass rate.
    pub fn scored(&self) -> u64 {
        self.passed.saturating_add(self.failed)
    }
}

impl Metrics {
    /// The averages over `tasks`.
    pub fn of_tasks(tasks: &[TaskSummary]) -> Self {
        let average = |pick: fn(&TaskSummary) -> &ByK| {
            let mut by_k: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
            for task in tasks {
                for (k, p) in pick(task).iter() {
                    by_k.entry(k).or_default().push(p);
                }
            }
            by_k.into_iter()
                .filter_map(|(k, ps)| Some((k, mean(&ps)?)))
                .collect()
        };
        let scores: Vec<f64> = tasks.iter().filter_map(|t| t.mean_score).collect();
        Self {
            tasks: tasks.len() as u64,
            pass_at_k: average(|t| &t.pass_at_k),
            pass_hat_k: average(|t| &t.pass_hat_k),
            mean_score: mean(&scores),
        }
    }
}

#[cfg(test)]
mod tests;
