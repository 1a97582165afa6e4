//! `hyoka report merge`: one summary from the `run.json` files of a suite's shards.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::args::MergeArgs;
use crate::out::outln;
use crate::records::{millis, rfc3339, write_json};
use crate::report::{EvalSummary, RunSummary, Status};
use crate::{ExitStatus, Fail};

/// The largest `run.json` read (a suite of a hundred thousand evals stays well below it).
const MAX_RUN_JSON: u64 = 256 << 20;

pub(crate) fn merge(args: &MergeArgs) -> Result<ExitStatus, Fail> {
    let mut shards = Vec::new();
    for input in &args.inputs {
        let (file, dir) = if input.is_dir() {
            (input.join("run.json"), input.clone())
        } else {
            (
                input.clone(),
                input.parent().map_or_else(PathBuf::new, Path::to_owned),
            )
        };
        // As evidence: not through a link, not a special file, bounded.
        let text = hyoka_proctrack::read_reports_file(&file, MAX_RUN_JSON)
            .map_err(|e| Fail::usage(format!("cannot read {}: {e}", file.display())))?;
        let summary: RunSummary = serde_json::from_slice(&text)
            .map_err(|e| Fail::usage(format!("{} is not a run.json: {e}", file.display())))?;
        shards.push((dir, summary));
    }
    let merged = merge_summaries(
        &shards,
        args.run_id.as_ref().map(hyoka_workspace::RunId::as_str),
    )?;
    match &args.output {
        Some(path) => write_json(path, &merged)
            .map_err(|e| Fail::failure(format!("cannot write {}: {e}", path.display())))?,
        None => outln!(
            "{}",
            serde_json::to_string_pretty(&merged).unwrap_or_default()
        ),
    }
    Ok(if merged.status == Status::Passed {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn merge_summaries(
    shards: &[(PathBuf, RunSummary)],
    run_id: Option<&str>,
) -> Result<RunSummary, Fail> {
    let mut seen = HashSet::new();
    let mut evals: Vec<EvalSummary> = Vec::new();
    for (dir, summary) in shards {
        for eval in &summary.evals {
            if !seen.insert(eval.eval_id.clone()) {
                return Err(Fail::usage(format!(
                    "eval {} appears in more than one input (again in {})",
                    eval.eval_id,
                    dir.display()
                )));
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
