//! Reads runs after they end: records two small runs of one suite on `hyoka-eval`'s fake host
//! (in memory, on tokio's paused clock), then compares them and writes the page of the
//! comparison.
//!
//! `cargo run -p hyoka-report --example compare_two_runs`
#![allow(clippy::print_stdout, reason = "an example program reports on stdout")]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hyoka_eval::{EvalSpec, FakeHost, FakeProgram, NoObserver, RunPlan, Stop, run};
use hyoka_report::{HtmlOptions, compare_runs, read_summary, render_comparison, write_html_report};
use hyoka_workspace::{EvalId, RunId};

/// Records run `id` of two evals under `reports`: `stable` passes, `fixed` exits `code`.
async fn record(
    reports: &std::path::Path,
    id: &str,
    code: i32,
) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let host = FakeHost::new(SystemTime::UNIX_EPOCH + Duration::from_hours(500_000));
    host.program("stable", FakeProgram::new().exits(0));
    host.program("fixed", FakeProgram::new().exits(code));
    let evals = ["stable", "fixed"]
        .into_iter()
        .map(|name| Ok(EvalSpec::new(EvalId::new(name)?, vec![name.into()])))
        .collect::<Result<Vec<_>, hyoka_workspace::WorkspaceError>>()?;
    let plan = RunPlan::new(RunId::new(id)?, reports, "/mem", evals);
    run(plan, &host.harness(), Stop::never(), Arc::new(NoObserver)).await?;
    Ok(reports.join(id))
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reports = tempfile::tempdir()?;
    let before = record(reports.path(), "before", 1).await?;
    let after = record(reports.path(), "after", 0).await?;
    let (_, a) = read_summary(&before)?;
    let (_, b) = read_summary(&after)?;
    print!(
        "{}",
        render_comparison(&compare_runs(("before", &a), ("after", &b))?)
    );
    let page = write_html_report(
        &[before, after],
        None,
        &HtmlOptions::default(),
        SystemTime::now(),
    )?;
    println!(
        "page: {} ({} bytes)",
        page.display(),
        std::fs::metadata(&page)?.len()
    );
    Ok(())
}
