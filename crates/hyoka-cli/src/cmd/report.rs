//! `hyoka report merge` (one summary from the shards' `run.json`) and `hyoka report html`.

use std::path::{Path, PathBuf};

use hyoka_eval::{HtmlOptions, RunSummary, Status, merge_summaries, write_html_report, write_json};

use crate::args::{HtmlArgs, MergeArgs};
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

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
        let text = std::fs::read_to_string(&file)
            .map_err(|e| Fail::usage(format!("cannot read {}: {e}", file.display())))?;
        let summary: RunSummary = serde_json::from_str(&text)
            .map_err(|e| Fail::usage(format!("{} is not a run.json: {e}", file.display())))?;
        shards.push((dir, summary));
    }
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
