//! `hyoka report merge` (one summary from the shards' `run.json`), `hyoka report compare`
//! (two runs side by side), `hyoka report html`, and the CI formats `hyoka report junit` and
//! `hyoka report markdown`.

use hyoka_eval::{Status, write_json};
use hyoka_report::{
    HtmlOptions, MergeOptions, compare_runs, merge_summaries, read_summary, render_comparison,
    render_junit, render_markdown, render_summary, write_html_report, write_text,
};

use crate::args::{CiArgs, CompareArgs, HtmlArgs, MergeArgs};
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
            crate::out::text(&render_summary(&merged, path));
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
    )?;
    if args.json {
        crate::out::json(&comparison);
    } else {
        crate::out::text(&render_comparison(&comparison));
    }
    Ok(ExitStatus::Success)
}

pub(crate) fn html(args: &HtmlArgs) -> Result<ExitStatus, Fail> {
    let (out, now) = (args.output.as_deref(), std::time::SystemTime::now());
    let page = write_html_report(&args.inputs, out, &HtmlOptions::default(), now);
    let page = page?;
    outln!("{}", page.display());
    Ok(ExitStatus::Success)
}

pub(crate) fn junit(args: &CiArgs) -> Result<ExitStatus, Fail> {
    let summary = read_summary(&args.input)?.1;
    emit(args, &render_junit(&summary)?)
}

pub(crate) fn markdown(args: &CiArgs) -> Result<ExitStatus, Fail> {
    let summary = read_summary(&args.input)?.1;
    emit(args, &render_markdown(&summary))
}

/// A CI document to `-o FILE` (atomically; its path printed) or to stdout.
fn emit(args: &CiArgs, text: &str) -> Result<ExitStatus, Fail> {
    match &args.output {
        Some(path) => {
            write_text(path, text)?;
            outln!("{}", path.display());
        }
        None => crate::out::text(text),
    }
    Ok(ExitStatus::Success)
}
