//! Comparing two runs of the same suite (`hyoka report compare A B`): per task, the pass rate
//! in each run and the difference; the tasks that flipped; the totals of tokens, cost and
//! time; and a paired significance test over the tasks.
//!
//! Tasks are matched by eval id and agent. A task's pass rate is `passed / (passed +
//! failed)` over its trials ([`hyoka_eval::pass_rate`]): errors and trials that never ran are
//! not results.
//!
//! **Flips.** A task is *solved* in a run when more than half of its scored trials passed
//! (a pass rate above ½); it *flipped* when it was scored in both runs and is solved in one
//! and not in the other: `fixed` (solved in B only) or `broken` (solved in A only). A task at
//! exactly half is not solved: one pass in two trials is a coin toss, not a fix, so 0/2 → 1/2
//! is no flip and 1/2 → 2/2 is `fixed`. With one trial per task it is simply fail → pass.
//! [`Flip::between`] is this rule, and every view (`report compare`, its JSON, the HTML
//! page) takes its flips from it.
//!
//! The test is the **exact two-sided sign test** over the tasks present and scored in both
//! runs: each task is a pair; a task whose pass rate is higher in B counts for B, lower for
//! A, equal is a tie and is dropped; under the null hypothesis (no difference) the count for
//! B is Binomial(n, ½), and the p-value is the probability of a split at least as uneven.
//! With one trial per task this is McNemar's exact test on the discordant tasks. It uses
//! only the direction of each task's difference, so it assumes nothing about their
//! distribution; with few discordant tasks it cannot reach significance (five tasks that all
//! favour one run give p = 0.0625).

use std::collections::HashMap;

use serde::Serialize;

use hyoka_eval::{RunSummary, TaskSummary, TokenUsage};

use crate::error::ReportError;

/// The name of the test [`compare_runs`] applies, as reports print it.
pub const PAIRED_TEST: &str =
    "exact two-sided sign test over tasks (McNemar's exact test with one trial per task)";

/// Two runs compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The first run (the baseline).
    pub a: RunSide,
    /// The second run.
    pub b: RunSide,
    /// Every task of either run, in A's order, then B's new ones.
    pub tasks: Vec<TaskDelta>,
    /// The tasks that flipped, by name.
    pub flipped: Vec<String>,
    /// The paired test over tasks.
    pub test: PairedTest,
}

/// One run's totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSide {
    /// Where it was read from.
    pub source: String,
    /// Its run id.
    pub run_id: String,
    /// Its trials.
    pub trials: u64,
    /// Trials that passed.
    pub passed: u64,
    /// Trials that failed.
    pub failed: u64,
    /// Trials that ended in an error.
    pub errors: u64,
    /// Trials that never ran.
    pub not_run: u64,
    /// `passed / (passed + failed)`, when a trial was scored.
    pub pass_rate: Option<f64>,
    /// Tokens and cost the trials reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// Every token counted ([`TokenUsage::tokens`]), when any was reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// The run's wall time, in milliseconds.
    pub duration_ms: u64,
    /// The trials' time added up, in milliseconds.
    pub trial_time_ms: u64,
}

/// One task in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskDelta {
    /// `eval` or `eval/agent`.
    pub task: String,
    /// Its pass rate in A, when it was scored there.
    pub a: Option<f64>,
    /// Its pass rate in B, when it was scored there.
    pub b: Option<f64>,
    /// Its trials in A (0: not in A).
    pub a_trials: u64,
    /// Its trials in B (0: not in B).
    pub b_trials: u64,
    /// `b − a`, when both are known.
    pub delta: Option<f64>,
    /// How it flipped, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flip: Option<Flip>,
}

/// How a task flipped between the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Flip {
    /// Not solved in A, solved in B.
    Fixed,
    /// Solved in A, not solved in B.
    Broken,
}

impl Flip {
    /// Whether a task of pass rate `rate` is solved: more than half of its scored trials
    /// passed.
    pub fn solved(rate: f64) -> bool {
        rate > 0.5
    }

    /// How a task of pass rate `a` in run A and `b` in run B flipped, if it did (see the
    /// module's docs): `None` unless it was scored in both and solved in exactly one.
    pub fn between(a: Option<f64>, b: Option<f64>) -> Option<Self> {
        match (a?, b?) {
            (x, y) if !Self::solved(x) && Self::solved(y) => Some(Self::Fixed),
            (x, y) if Self::solved(x) && !Self::solved(y) => Some(Self::Broken),
            _ => None,
        }
    }

    /// The name as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fixed => "fixed",
            Self::Broken => "broken",
        }
    }
}

/// The paired test over tasks: the exact two-sided sign test (see [`compare_runs`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedTest {
    /// Which test ([`PAIRED_TEST`]).
    pub name: String,
    /// Tasks scored in both runs.
    pub tasks: u64,
    /// Tasks with a higher pass rate in B.
    pub b_better: u64,
    /// Tasks with a higher pass rate in A.
    pub a_better: u64,
    /// Tasks with the same pass rate (dropped by the test).
    pub ties: u64,
    /// The two-sided p-value (1 when no task differs).
    pub p_value: f64,
}

/// Compares run `b` with run `a` (each with where it was read from).
///
/// Tasks (an eval, with its agent) are matched by eval id and agent ([`pair_tasks`]); a
/// task's pass rate is `passed / (passed + failed)` (errors and trials not run are no
/// results), and its flip is [`Flip::between`] its two rates. The test is the exact
/// two-sided sign test over the tasks scored in both runs: a task whose rate is higher in B
/// counts for B, lower for A, equal is a tie and dropped; the p-value is [`sign_test`]'s.
/// With one trial per task this is McNemar's exact test.
///
/// # Errors
/// [`ReportError::Unrelated`] when the runs have no task in common ([`check_related`]).
pub fn compare_runs(
    a: (&str, &RunSummary),
    b: (&str, &RunSummary),
) -> Result<Comparison, ReportError> {
    let (a_tasks, b_tasks) = (
        TaskSummary::of_trials(&a.1.evals),
        TaskSummary::of_trials(&b.1.evals),
    );
    let pairs = pair_tasks(&a_tasks, &b_tasks);
    check_related(&pairs, (a.0, a_tasks.len()), (b.0, b_tasks.len()))?;
    let tasks: Vec<TaskDelta> = pairs
        .into_iter()
        .map(|(x, y)| task_delta(x.map(|i| &a_tasks[i]), y.map(|i| &b_tasks[i])))
        .collect();
    let (mut b_better, mut a_better, mut ties) = (0, 0, 0);
    for task in &tasks {
        match task.delta {
            Some(d) if d > 0.0 => b_better += 1,
            Some(d) if d < 0.0 => a_better += 1,
            Some(_) => ties += 1,
            None => {}
        }
    }
    Ok(Comparison {
        a: side(a.0, a.1),
        b: side(b.0, b.1),
        flipped: tasks
            .iter()
            .filter(|t| t.flip.is_some())
            .map(|t| t.task.clone())
            .collect(),
        tasks,
        test: PairedTest {
            name: PAIRED_TEST.to_owned(),
            tasks: b_better + a_better + ties,
            b_better,
            a_better,
            ties,
            p_value: sign_test(b_better, a_better),
        },
    })
}

/// Refuses to compare two runs whose paired tasks ([`pair_tasks`]) have none in common:
/// each side is where it was read from and how many tasks it has. Every view of a
/// comparison (`report compare`, its JSON, the compared page) asks this first.
///
/// # Errors
/// [`ReportError::Unrelated`] when no pair has both sides.
pub fn check_related(
    pairs: &[(Option<usize>, Option<usize>)],
    a: (&str, usize),
    b: (&str, usize),
) -> Result<(), ReportError> {
    if pairs.iter().any(|(x, y)| x.is_some() && y.is_some()) {
        return Ok(());
    }
    Err(ReportError::Unrelated {
        a: a.0.to_owned(),
        b: b.0.to_owned(),
        a_tasks: a.1,
        b_tasks: b.1,
    })
}

/// The tasks of two runs paired by eval id and agent, as indexes into `a` and `b`: A's tasks
/// in order (with B's match, if any), then the tasks only B has.
pub fn pair_tasks(a: &[TaskSummary], b: &[TaskSummary]) -> Vec<(Option<usize>, Option<usize>)> {
    let key = |t: &TaskSummary| (t.eval_id.clone(), t.agent.clone());
    let in_a: HashMap<_, usize> = (a.iter().enumerate()).map(|(i, t)| (key(t), i)).collect();
    let in_b: HashMap<_, usize> = (b.iter().enumerate()).map(|(i, t)| (key(t), i)).collect();
    let mut pairs: Vec<(Option<usize>, Option<usize>)> = (a.iter().enumerate())
        .map(|(i, task)| (Some(i), in_b.get(&key(task)).copied()))
        .collect();
    pairs.extend(
        (b.iter().enumerate())
            .filter(|(_, t)| !in_a.contains_key(&key(t)))
            .map(|(i, _)| (None, Some(i))),
    );
    pairs
}

/// One task in both runs: its pass rate in each, the difference and the flip.
pub fn task_delta(a: Option<&TaskSummary>, b: Option<&TaskSummary>) -> TaskDelta {
    let task = a.or(b).map(TaskSummary::name).unwrap_or_default();
    let (ra, rb) = (
        a.and_then(TaskSummary::pass_rate),
        b.and_then(TaskSummary::pass_rate),
    );
    TaskDelta {
        task,
        a: ra,
        b: rb,
        a_trials: a.map_or(0, |t| t.trials),
        b_trials: b.map_or(0, |t| t.trials),
        delta: ra.zip(rb).map(|(x, y)| y - x),
        flip: Flip::between(ra, rb),
    }
}

fn side(source: &str, run: &RunSummary) -> RunSide {
    let t = &run.totals;
    RunSide {
        source: source.to_owned(),
        run_id: run.run_id.clone(),
        trials: t.evals,
        passed: t.passed,
        failed: t.failed,
        errors: t.errors,
        not_run: t.not_run,
        pass_rate: hyoka_eval::pass_rate(t.passed, t.failed),
        usage: run.usage,
        tokens: run.usage.as_ref().and_then(TokenUsage::reported_tokens),
        duration_ms: run.duration_ms,
        trial_time_ms: run
            .evals
            .iter()
            .map(|e| e.duration_ms)
            .fold(0, u64::saturating_add),
    }
}

/// The exact two-sided sign test's p-value for `x` and `y` successes of each side:
/// `min(1, 2 · P(X ≤ min(x, y)))` with `X ~ Binomial(x + y, ½)`, summed in log space so
/// that it holds for any number of tasks.
pub fn sign_test(x: u64, y: u64) -> f64 {
    let n = x + y;
    if n == 0 {
        return 1.0;
    }
    let low = x.min(y);
    #[expect(clippy::cast_precision_loss, reason = "task counts are far below 2^52")]
    let (nf, ln_half) = (n as f64, -std::f64::consts::LN_2);
    // ln C(n, 0) · ½ⁿ = n · ln ½; each next term multiplies by (n − i) / (i + 1).
    let mut term = nf * ln_half;
    let mut terms = vec![term];
    for i in 0..low {
        #[expect(clippy::cast_precision_loss, reason = "task counts are far below 2^52")]
        let (up, down) = ((n - i) as f64, (i + 1) as f64);
        term += up.ln() - down.ln();
        terms.push(term);
    }
    let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tail = max.exp() * terms.iter().map(|t| (t - max).exp()).sum::<f64>();
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests;
