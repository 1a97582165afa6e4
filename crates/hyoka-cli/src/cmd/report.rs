//! `hyoka report merge`: one summary from the `run.json` files of a suite's shards;
//! `hyoka report compare`: two runs side by side.

use hyoka_eval::{MergeOptions, Status, compare_runs, merge_summaries, read_summary, write_json};

use crate::args::{CompareArgs, MergeArgs};
use crate::exit::{ExitStatus, Fail};

pub(crate) fn merge(args: &MergeArgs) -> Result<ExitStatus, Fail> {
    let shards = args
        .inputs
        .iter()
        .map(|input| read_summary(input))
        .collect::<Result<Vec<_>, _>>()?;
    let options = MergeOptions {
        run_id: args.run_id.as_ref().map(ToString::to_string),
        allow_partial: args.allow_partial,
    };
    let merged = merge_summaries(&shards, &options)?;
    match &args.output {
        Some(path) => {
            write_json(path, &merged)?;
            crate::out::text(&hyoka_eval::render_summary(&merged, path));
        }
        None => crate::out::json(&merged),
    }
    Ok(if merged.status == Status::Passed {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

pub(crate) fn compare(args: &CompareArgs) -> Result<ExitStatus, Fail> {
    let (a, b) = (read_summary(&args.a)?.1, read_summary(&args.b)?.1);
    let comparison = compare_runs(
        (&args.a.display().to_string(), &a),
        (&args.b.display().to_string(), &b),
    );
    if args.json {
        crate::out::json(&comparison);
    } else {
        crate::out::text(&hyoka_eval::render_comparison(&comparison));
    }
    Ok(ExitStatus::Success)
}
