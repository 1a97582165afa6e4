//! `hyoka report html`: one self-contained HTML page of a run, or of two runs compared,
//! readable offline and fit to attach to a CI artifact.
//!
//! [`RunRecords::load`] reads a run directory (or a `run.json`, merged ones too): `run.json`,
//! then each trial's `report.json` at the path `run.json` names and the
//! `action_timeline.json`, `output.log`, `build.log` and `review.log` beside it.
//! [`render_page`] turns one run (or two) into the page; [`write_html_report`] does both and
//! writes the file atomically.
//!
//! # Theory of operation
//!
//! Records are untrusted input. They are read through the page's own lenient view of them
//! (fields of newer or older hyoka versions show when present: epochs, pass@k, error kinds,
//! attempts, usage), never outside the run directory (paths and links are resolved and the
//! opened file is checked through `/proc/self/fd`), only as regular files, within size caps;
//! a trial whose records are missing, refused or invalid is shown with the reason.
//!
//! The page is one file with no external reference: styles and scripts inline, allowed by
//! hash in a content security policy that forbids every other source. Its data are
//! gzip-compressed JSON in base64 blocks: an index (the task table and the comparison) that
//! the page inflates with the browser's `DecompressionStream` when it opens, and the
//! trials' details in chunks of 64, inflated only when a trial is opened, so a run of 10,000
//! trials opens fast and stays a few megabytes. Every text from the records reaches the
//! document as a text node or escaped, so a hostile eval id or log cannot inject markup.

mod detail;
mod load;
mod model;
mod pack;
mod page;
mod render;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::ReportError;

pub use self::load::{HtmlOptions, RunRecords};

/// Renders the page of one run, or the comparison of two (`runs[0]` is A, `runs[1]` B);
/// `generated` is the wall-clock time the footer names.
///
/// # Errors
/// [`ReportError::Inputs`] for other than one or two runs; [`ReportError::Encode`] if the data
/// cannot be compressed.
pub fn render_page(runs: &[&RunRecords], generated: SystemTime) -> Result<String, ReportError> {
    if !(1..=2).contains(&runs.len()) {
        return Err(ReportError::Inputs { count: runs.len() });
    }
    let data = page::build(runs)?;
    render::render(&data, &hyoka_eval::rfc3339(generated))
}

/// Where a page goes when the caller names no file: the run's [`RunRecords::default_page`];
/// for a comparison, `compare.html` beside the first run's page.
pub fn default_page_path(runs: &[&RunRecords]) -> PathBuf {
    match runs {
        [one] => one.default_page().to_owned(),
        [first, ..] => first.default_page().with_file_name("compare.html"),
        [] => PathBuf::from("report.html"),
    }
}

/// Reads one or two runs (run directories or `run.json` files), renders their page and
/// writes it atomically to `output` (default: [`default_page_path`]); returns the path.
///
/// # Errors
/// Bad input ([`ReportError::is_bad_input`]): not one or two inputs, an input that is not a
/// run, an output whose directory does not exist or that is a directory. Otherwise
/// [`ReportError::Encode`] or [`ReportError::Write`].
pub fn write_html_report(
    inputs: &[PathBuf],
    output: Option<&Path>,
    options: &HtmlOptions,
    now: SystemTime,
) -> Result<PathBuf, ReportError> {
    if !(1..=2).contains(&inputs.len()) {
        return Err(ReportError::Inputs {
            count: inputs.len(),
        });
    }
    if let Some(path) = output {
        check_output(path)?;
    }
    let runs = inputs
        .iter()
        .map(|input| RunRecords::load(input, options))
        .collect::<Result<Vec<_>, _>>()?;
    let runs: Vec<&RunRecords> = runs.iter().collect();
    let path = output.map_or_else(|| default_page_path(&runs), Path::to_owned);
    check_output(&path)?;
    let html = render_page(&runs, now)?;
    hyoka_proctrack::write_atomic(&path, html.as_bytes()).map_err(|source| ReportError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

pub(crate) fn check_output(path: &Path) -> Result<(), ReportError> {
    let fail = |reason: &str| ReportError::Output {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    if path.is_dir() {
        return Err(fail("it is a directory"));
    }
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            Err(fail("its directory does not exist"))
        }
        _ => Ok(()),
    }
}
