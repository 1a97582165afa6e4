//! Reading hyoka runs after they end: the offline HTML page of a run (or of two compared),
//! one summary from a suite's shards, two runs compared, and the plain-text summaries people
//! read, each from the records `hyoka-eval` writes.
//!
//! # Overview
//!
//! - [`read_summary`] reads a run's `run.json` ([`RunSummary`](hyoka_eval::RunSummary)) as
//!   evidence: not through a link, not a special file, not one others may write, bounded.
//! - [`merge_summaries`] joins the summaries of a suite's shards after checking that they
//!   make one run ([`MergeOptions`]); status, totals, tasks and metrics are recomputed with
//!   the harness's own definitions.
//! - [`compare_runs`] pairs two runs' tasks ([`pair_tasks`], [`task_delta`]) into a
//!   [`Comparison`]: each task's pass rate in both, the difference, its [`Flip`] and the
//!   exact [`sign_test`] over the paired tasks ([`PAIRED_TEST`]).
//! - [`render_summary`], [`render_comparison`], [`usage_text`] and [`timeline_text`] say it
//!   for people, in one wording every embedder shares.
//! - [`write_html_report`] writes one self-contained, offline HTML page of a run (or two
//!   compared) from its records ([`RunRecords`], [`HtmlOptions`], [`render_page`]): task
//!   table, per-trial timelines, transcripts, cleanup records; every record is read as
//!   untrusted input.
//! - [`render_junit`] and [`render_markdown`] say it for CI systems: JUnit XML with one
//!   testcase per trial (`hyoka report junit`), and a Markdown summary for step summaries
//!   (`hyoka report markdown`); [`write_text`] writes either atomically.
//! - One error, [`ReportError`]; [`ReportError::is_bad_input`] tells the caller's mistakes
//!   from failures to write.
//!
//! Every figure shown in more than one view has one definition: pass@k, pass^k, the pass
//! rate over scored trials and the means are `hyoka-eval`'s ([`hyoka_eval::pass_at_k`],
//! [`hyoka_eval::pass_rate`], [`hyoka_eval::mean`], `TaskSummary::fill_figures`), so
//! `run.json`, the summary, `report compare` and the page agree; tokens are
//! [`TokenUsage::reported_tokens`](hyoka_eval::TokenUsage::reported_tokens) (input, output,
//! cache reads and writes: what `--max-tokens` limits); a flip is [`Flip::between`].
//!
//! # Example
//!
//! ```no_run
//! use std::path::PathBuf;
//! use std::time::SystemTime;
//! use hyoka_report::{HtmlOptions, compare_runs, read_summary, render_comparison, write_html_report};
//!
//! let (a, b) = (PathBuf::from("reports/baseline"), PathBuf::from("reports/candidate"));
//! let (_, run_a) = read_summary(&a)?;
//! let (_, run_b) = read_summary(&b)?;
//! let comparison = compare_runs(("baseline", &run_a), ("candidate", &run_b))?;
//! print!("{}", render_comparison(&comparison));
//! let page = write_html_report(&[a, b], None, &HtmlOptions::default(), SystemTime::now())?;
//! println!("page: {}", page.display());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The `compare_two_runs` example records two small runs on `hyoka-eval`'s fake host and
//! compares them.

#![warn(
    clippy::disallowed_methods,
    reason = "libraries read no environment and take time from their callers"
)]

mod ci;
mod compare;
mod error;
mod html;
mod merge;
mod read;
mod render;

pub use crate::ci::{MARKDOWN_ROWS, render_junit, render_markdown, task_usage, write_text};
pub use crate::compare::{
    Comparison, Flip, PAIRED_TEST, PairedTest, RunSide, TaskDelta, check_related, compare_runs,
    pair_tasks, sign_test, task_delta,
};
pub use crate::error::ReportError;
pub use crate::html::{HtmlOptions, RunRecords, default_page_path, render_page, write_html_report};
pub use crate::merge::{MergeOptions, merge_summaries};
pub use crate::read::read_summary;
pub use crate::render::{render_comparison, render_summary, timeline_text, usage_text};
