//! `hyoka tasks check`: every task's oracle must pass and its nop agent must fail, as
//! Harbor's own task checks require (a task whose reference solution does not pass, or whose
//! tests pass on an untouched environment, measures nothing).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::report::{ErrorKind, Report, Status};
use crate::tasks::plan::TaskAgent;

/// The agents a check runs on every task: the oracle, then the nop agent.
pub fn check_agents() -> Vec<TaskAgent> {
    vec![TaskAgent::Oracle, TaskAgent::Nop]
}

/// One task's result in a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CheckRow {
    /// The task (its eval id).
    pub task: String,
    /// How the oracle's trial ended (`passed`, `failed`, `error`, `not_run`).
    pub oracle: String,
    /// The oracle's reward, when the verifier gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle_reward: Option<f64>,
    /// How the nop agent's trial ended.
    pub nop: String,
    /// The nop agent's reward, when the verifier gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nop_reward: Option<f64>,
    /// What is wrong; empty when the task behaves.
    pub problems: Vec<String>,
}

impl CheckRow {
    /// Whether the oracle passed and the nop agent failed.
    pub fn behaves(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The result of `hyoka tasks check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskCheck {
    /// Every task, in plan order.
    pub tasks: Vec<CheckRow>,
    /// How many behave.
    pub behave: usize,
    /// How many do not.
    pub misbehave: usize,
}

/// Judges a check run's trial reports: per task, the oracle's and the nop agent's.
pub fn check_tasks(reports: &[Report]) -> TaskCheck {
    let mut order: Vec<String> = Vec::new();
    for report in reports {
        if !order.contains(&report.eval_id) {
            order.push(report.eval_id.clone());
        }
    }
    let tasks: Vec<CheckRow> = order
        .into_iter()
        .map(|task| {
            let of = |agent: &str| {
                reports
                    .iter()
                    .find(|r| r.eval_id == task && r.agent.as_deref() == Some(agent))
            };
            let (oracle, nop) = (of("oracle"), of("nop"));
            let mut problems = Vec::new();
            match oracle {
                None => problems.push("the oracle did not run".to_owned()),
                Some(r) if r.status != Status::Passed => {
                    problems.push(format!("the oracle {}", why(r)));
                }
                Some(_) => {}
            }
            match nop {
                None => problems.push("the nop agent did not run".to_owned()),
                Some(r) if r.status == Status::Passed => problems.push(format!(
                    "the nop agent passes (reward {}): the tests accept an untouched environment",
                    reward(r).map_or_else(|| "?".to_owned(), |s| s.to_string())
                )),
                Some(r) if r.status != Status::Failed => {
                    problems.push(format!("the nop agent {}", why(r)));
                }
                Some(_) => {}
            }
            CheckRow {
                oracle: oracle.map_or("not_run", |r| r.status.as_str()).to_owned(),
                oracle_reward: oracle.and_then(reward),
                nop: nop.map_or("not_run", |r| r.status.as_str()).to_owned(),
                nop_reward: nop.and_then(reward),
                task,
                problems,
            }
        })
        .collect();
    let behave = tasks.iter().filter(|t| t.behaves()).count();
    TaskCheck {
        misbehave: tasks.len() - behave,
        behave,
        tasks,
    }
}

fn reward(report: &Report) -> Option<f64> {
    report.review.as_ref().and_then(|v| v.score)
}

/// Why a trial did not end as it should, in a few words.
fn why(report: &Report) -> String {
    let reason = report
        .error
        .clone()
        .or_else(|| {
            report
                .phases
                .iter()
                .rev()
                .find(|p| p.status != crate::report::PhaseStatus::Passed && p.detail.is_some())
                .and_then(|p| p.detail.clone())
        })
        .unwrap_or_else(|| report.termination.as_str().to_owned());
    match (report.status, report.error_kind) {
        (Status::Failed, _) => match reward(report) {
            Some(score) => format!("fails with reward {score}"),
            None => format!("fails: {reason}"),
        },
        (Status::Error, Some(ErrorKind::Scorer)) => format!("has a scorer error: {reason}"),
        (Status::Error, _) => format!("has an infrastructure error: {reason}"),
        (Status::NotRun, _) => format!("did not run: {reason}"),
        (Status::Passed, _) => "passes".to_owned(),
    }
}

/// The check for people: one line per task that does not behave, then a summary.
pub fn render_check(check: &TaskCheck) -> String {
    let mut out = String::new();
    let bad: Vec<&CheckRow> = check.tasks.iter().filter(|t| !t.behaves()).collect();
    if !bad.is_empty() {
        let width = bad.iter().map(|t| t.task.len()).max().unwrap_or(4).max(4);
        let _ = writeln!(
            out,
            "{:<width$}  {:<12}  {:<12}  problem",
            "task", "oracle", "nop"
        );
        for row in &bad {
            let cell = |status: &str, reward: Option<f64>| match reward {
                Some(r) => format!("{status} ({r})"),
                None => status.to_owned(),
            };
            for (i, problem) in row.problems.iter().enumerate() {
                if i == 0 {
                    let _ = writeln!(
                        out,
                        "{:<width$}  {:<12}  {:<12}  {problem}",
                        row.task,
                        cell(&row.oracle, row.oracle_reward),
                        cell(&row.nop, row.nop_reward),
                    );
                } else {
                    let _ = writeln!(out, "{:<width$}  {:<12}  {:<12}  {problem}", "", "", "");
                }
            }
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "{} task(s): {} behave (the oracle passes, the nop agent fails), {} do not",
        check.tasks.len(),
        check.behave,
        check.misbehave
    );
    out
}

#[cfg(test)]
mod tests;
