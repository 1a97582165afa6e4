//! Per-task figures over repeated trials: pass@k, pass^k and the mean review score.
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

use std::collections::BTreeMap;

use crate::report::{EvalSummary, Metrics, Status, TaskSummary};

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

impl TaskSummary {
    /// The tasks of a run's trials, in the order each first appears.
    pub fn of_trials(trials: &[EvalSummary]) -> Vec<Self> {
        let mut tasks: Vec<Self> = Vec::new();
        let mut scores: Vec<Vec<f64>> = Vec::new();
        for trial in trials {
            let known = tasks
                .iter()
                .position(|t| t.eval_id == trial.eval_id && t.agent == trial.agent);
            let index = known.unwrap_or_else(|| {
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
            let (n, c) = (task.passed + task.failed, task.passed);
            for k in ks(task.trials) {
                if let Some(p) = pass_at_k(n, c, k) {
                    task.pass_at_k.insert(k.to_string(), p);
                }
                if let Some(p) = pass_hat_k(n, c, k) {
                    task.pass_hat_k.insert(k.to_string(), p);
                }
            }
            task.mean_score = mean(&scores);
        }
        tasks
    }

    /// `eval` or `eval/agent`: how tables name the task.
    pub fn name(&self) -> String {
        match &self.agent {
            Some(agent) => format!("{}/{agent}", self.eval_id),
            None => self.eval_id.clone(),
        }
    }

    /// `passed / (passed + failed)`, when a trial was scored.
    pub fn pass_rate(&self) -> Option<f64> {
        let scored = self.passed + self.failed;
        (scored > 0).then(|| as_f64(self.passed) / as_f64(scored))
    }
}

impl Metrics {
    /// The averages over `tasks`.
    pub fn of_tasks(tasks: &[TaskSummary]) -> Self {
        let average = |pick: fn(&TaskSummary) -> &BTreeMap<String, f64>| {
            let mut by_k: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for task in tasks {
                for (k, p) in pick(task) {
                    by_k.entry(k.clone()).or_default().push(*p);
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

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / as_f64(values.len() as u64))
}

#[cfg(test)]
mod tests;
