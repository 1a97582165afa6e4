//! One summary from the `run.json` files of a suite's shards.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hyoka_eval::{EvalSummary, RunInfo, RunSummary, Shard, millis, rfc3339};
use hyoka_workspace::{EvalId, RunId};

use crate::error::ReportError;

/// How [`merge_summaries`] merges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeOptions {
    /// The merged run's id. Default: the shards' (they must share one).
    pub run_id: Option<String>,
    /// Merge even when shards are missing (they are listed in `missing_shards`).
    pub allow_partial: bool,
}

/// Merges the summaries of a suite's shards, each with the run directory it came from (each
/// trial's `report` path is made relative to where the merged summary's reader starts),
/// after checking that they make one run: every input names the same run id and the same
/// suite identity, ids keep the id grammar, report paths stay inside their run directory,
/// times do not run backwards, every input holds trials, no shard appears twice, and (unless
/// `allow_partial`) every shard `1..=N` is there. Status, totals, tasks and metrics are
/// recomputed; the time span covers every shard.
///
/// # Errors
/// [`ReportError::Merge`] naming the inputs when they do not make one run;
/// [`ReportError::DuplicateEval`] when two shards hold the same trial.
pub fn merge_summaries(
    shards: &[(PathBuf, RunSummary)],
    options: &MergeOptions,
) -> Result<RunSummary, ReportError> {
    let Inputs {
        span,
        count,
        missing,
    } = check_inputs(shards)?;
    if !missing.is_empty() && !options.allow_partial {
        let list: Vec<String> = missing.iter().map(ToString::to_string).collect();
        return Err(ReportError::Merge {
            message: format!(
                "shard{} {} of {} missing (give --allow-partial to merge without {})",
                if missing.len() == 1 { "" } else { "s" },
                list.join(", "),
                count,
                if missing.len() == 1 { "it" } else { "them" }
            ),
        });
    }
    let mut seen = HashSet::new();
    let mut evals: Vec<EvalSummary> = Vec::new();
    for (dir, summary) in shards {
        for eval in &summary.evals {
            let trial = if eval.trial.is_empty() {
                &eval.eval_id
            } else {
                &eval.trial
            };
            if !seen.insert(trial.clone()) {
                return Err(ReportError::DuplicateEval {
                    eval_id: trial.clone(),
                    input: dir.clone(),
                });
            }
            let mut eval = eval.clone();
            eval.report = dir.join(&eval.report).display().to_string();
            evals.push(eval);
        }
    }
    let (start, end) = span;
    let mut merged = RunSummary::from_evals(
        RunInfo {
            run_id: options
                .run_id
                .clone()
                .unwrap_or_else(|| shards[0].1.run_id.clone()),
            started_at: rfc3339(start),
            ended_at: rfc3339(end),
            duration_ms: millis(end.duration_since(start).unwrap_or(Duration::ZERO)),
            suite: shards[0].1.suite.clone(),
            shard: None,
        },
        evals,
    );
    merged.missing_shards = missing;
    Ok(merged)
}

/// What the inputs of a merge make, once checked.
struct Inputs {
    /// The earliest start and the latest end.
    span: (SystemTime, SystemTime),
    /// The number of shards of the suite.
    count: usize,
    /// The shards not among the inputs.
    missing: Vec<usize>,
}

/// Checks that `shards` make one run (see [`merge_summaries`]).
fn check_inputs(shards: &[(PathBuf, RunSummary)]) -> Result<Inputs, ReportError> {
    let fail = |message: String| ReportError::Merge { message };
    let name = |dir: &Path| dir.display().to_string();
    let Some((first_dir, first)) = shards.first() else {
        return Err(fail("nothing to merge".to_owned()));
    };
    let mut span: Option<(SystemTime, SystemTime)> = None;
    let mut seen_shards: Vec<(usize, &Path)> = Vec::new();
    let mut count = None;
    for (dir, summary) in shards {
        check_summary(dir, summary).map_err(fail)?;
        if summary.run_id != first.run_id {
            return Err(fail(format!(
                "{} and {} are runs of different ids ({} and {}); merge the shards of one run",
                name(first_dir),
                name(dir),
                first.run_id,
                summary.run_id
            )));
        }
        if summary.suite != first.suite {
            return Err(fail(format!(
                "{} and {} are runs of different suites; merge the shards of one suite",
                name(first_dir),
                name(dir)
            )));
        }
        let (index, of) = match &summary.shard {
            Some(shard) => match shard.parse::<Shard>() {
                Ok(shard) => (shard.index, shard.count),
                Err(_) => return Err(fail(format!("{}: shard {shard:?} is not I/N", name(dir)))),
            },
            None => (1, 1),
        };
        match count {
            Some(count) if count != of => {
                return Err(fail(format!(
                    "{} is a shard of {of} but {} of {count}",
                    name(dir),
                    name(first_dir)
                )));
            }
            _ => count = Some(of),
        }
        if let Some((_, other)) = seen_shards.iter().find(|(i, _)| *i == index) {
            return Err(fail(format!(
                "shard {index}/{of} appears twice: {} and {}",
                name(other),
                name(dir)
            )));
        }
        seen_shards.push((index, dir));
        let (start, end) = times(summary).map_err(|why| fail(format!("{}: {why}", name(dir))))?;
        span = Some(match span {
            Some((s, e)) => (s.min(start), e.max(end)),
            None => (start, end),
        });
    }
    let count = count.unwrap_or(1);
    let missing: Vec<usize> = (1..=count)
        .filter(|i| !seen_shards.iter().any(|(s, _)| s == i))
        .collect();
    Ok(Inputs {
        span: span.unwrap_or((SystemTime::UNIX_EPOCH, SystemTime::UNIX_EPOCH)),
        count,
        missing,
    })
}

/// What a shard's summary must hold to be merged: ids of the id grammar, a suite identity,
/// trials, and report paths inside its run directory.
fn check_summary(dir: &Path, summary: &RunSummary) -> Result<(), String> {
    let name = dir.display();
    if RunId::new(summary.run_id.clone()).is_err() {
        return Err(format!(
            "{name}: run id {:?} breaks the id grammar",
            summary.run_id
        ));
    }
    if summary.suite.is_none() {
        return Err(format!(
            "{name}: the run records no suite identity (written by an older hyoka); rerun it"
        ));
    }
    if summary.evals.is_empty() {
        return Err(format!("{name}: the run holds no evals"));
    }
    for eval in &summary.evals {
        for id in [&eval.eval_id, &eval.trial] {
            if !(id.is_empty() && id != &eval.eval_id) && EvalId::new(id.clone()).is_err() {
                return Err(format!("{name}: eval id {id:?} breaks the id grammar"));
            }
        }
        let report = Path::new(&eval.report);
        if eval.report.is_empty()
            || !report
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
        {
            return Err(format!(
                "{name}: eval {}: report path {:?} leaves the run directory",
                eval.eval_id, eval.report
            ));
        }
    }
    Ok(())
}

/// A summary's start and end, which must be RFC 3339 and in order.
fn times(summary: &RunSummary) -> Result<(SystemTime, SystemTime), String> {
    let parse = |t: &str| {
        humantime::parse_rfc3339_weak(t).map_err(|_| format!("time {t:?} is not RFC 3339"))
    };
    let (start, end) = (parse(&summary.started_at)?, parse(&summary.ended_at)?);
    if end < start {
        return Err(format!(
            "its times run backwards (ended {} before it started {})",
            summary.ended_at, summary.started_at
        ));
    }
    Ok((start, end))
}
