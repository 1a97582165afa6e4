//! `hyoka report merge`: one summary from the `run.json` files of a suite's shards.

use hyoka_eval::{Status, merge_summaries, read_summary, write_json};

use crate::args::MergeArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

pub(crate) fn merge(args: &MergeArgs) -> Result<ExitStatus, Fail> {
    let shards = args
        .inputs
        .iter()
        .map(|input| read_summary(input))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Fail::usage(e.to_string()))?;
    let merged = merge_summaries(
        &shards,
        args.run_id.as_ref().map(hyoka_workspace::RunId::as_str),
    )
    .map_err(|e| Fail::usage(e.to_string()))?;
    match &args.output {
        Some(path) => write_json(path, &merged).map_err(|e| Fail::failure(e.to_string()))?,
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
