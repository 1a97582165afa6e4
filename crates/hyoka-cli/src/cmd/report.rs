//! `hyoka report merge` (one summary from the shards' `run.json`), `hyoka report compare`
//! (two runs side by side) and `hyoka report html`.

use hyoka_eval::{
    HtmlOptions, MergeOptions, Status, compare_runs, merge_summaries, read_summary,
    write_html_report, write_json,
};

use crate::args::{CompareArgs, HtmlArgs, MergeArgs};
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

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

pub(crate) fn html(args: &HtmlArgs) -> Result<ExitStatus, Fail> {
    let (out, now) = (args.output.as_deref(), std::time::SystemTime::now());
    let page = write_html_report(&args.inputs, out, &HtmlOptions::default(), now);
    let page = page.map_err(|e| match e {
        e if e.is_bad_input() => Fail::usage(e.to_string()),
        e => Fail::failure(e.to_string()),
    })?;
    outln!("{}", page.display());
    Ok(ExitStatus::Success)
}
