//! One summary from the `run.json` files of a suite's shards.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::error::EvalError;
use crate::records::{millis, rfc3339};
use crate::report::{EvalSummary, RunSummary};

/// Merges the summaries of a suite's shards, each with the run directory it came from (each
/// eval's `report` path is made relative to where the merged summary's reader starts). The
/// run id is `run_id`, else the shards' common one, else `merged`; the time span covers
/// every shard.
///
/// # Errors
/// [`EvalError::DuplicateEval`] when two shards name the same eval.
pub fn merge_summaries(
    shards: &[(PathBuf, RunSummary)],
    run_id: Option<&str>,
) -> Result<RunSummary, EvalError> {
    let mut seen = HashSet::new();
    let mut evals: Vec<EvalSummary> = Vec::new();
    for (dir, summary) in shards {
        for eval in &summary.evals {
            if !seen.insert(eval.eval_id.clone()) {
                return Err(EvalError::DuplicateEval {
                    eval_id: eval.eval_id.clone(),
                    input: dir.clone(),
                });
            }
            let mut eval = eval.clone();
            eval.report = dir.join(&eval.report).display().to_string();
            evals.push(eval);
        }
    }
    let common = shards
        .first()
        .map(|(_, s)| s.run_id.as_str())
        .filter(|first| shards.iter().all(|(_, s)| s.run_id == *first));
    let run_id = run_id.or(common).unwrap_or("merged").to_owned();
    let parse = |t: &str| humantime::parse_rfc3339(t).ok();
    let start = shards
        .iter()
        .filter_map(|(_, s)| parse(&s.started_at))
        .min();
    let end = shards.iter().filter_map(|(_, s)| parse(&s.ended_at)).max();
    let (start, end) = (
        start.unwrap_or(SystemTime::UNIX_EPOCH),
        end.unwrap_or(SystemTime::UNIX_EPOCH),
    );
    Ok(RunSummary::from_evals(
        &run_id,
        rfc3339(start),
        rfc3339(end),
        millis(end.duration_since(start).unwrap_or(Duration::ZERO)),
        evals,
    ))
}
