//! Embeds the harness: a two-eval suite built in Rust (one passes, one hits a limit), run
//! with real containment and an observer that prints progress, then the summary.
//!
//! `cargo run --release -p hyoka-eval --example embedded_suite`
#![allow(clippy::print_stdout, reason = "an example program reports on stdout")]

use std::sync::Arc;
use std::time::Duration;

use hyoka_eval::{
    Containment, EvalId, EvalSpec, Observer, Report, RunId, RunPlan, RunSummary, Stop, Trial,
    run_tracked,
};

/// Prints one line per eval as it starts and ends.
struct Progress;

impl Observer for Progress {
    fn eval_started(&self, trial: &Trial) {
        println!("started  {}", trial.id);
    }

    fn eval_finished(&self, report: &Report) {
        println!(
            "finished {}: {} ({}), {} file(s), {} process(es) stopped",
            report.eval_id,
            report.status.as_str(),
            report.termination.as_str(),
            report.counts.files,
            report.cleanup.processes_killed,
        );
    }

    fn run_finished(&self, summary: &RunSummary) {
        println!("run {}: {}", summary.run_id, summary.status.as_str());
    }
}

fn shell(id: &str, script: &str) -> Result<EvalSpec, Box<dyn std::error::Error>> {
    let command = vec!["sh".into(), "-c".into(), script.into()];
    let mut spec = EvalSpec::new(EvalId::new(id)?, command);
    spec.timeout = Duration::from_secs(30);
    spec.grace = Duration::from_secs(1);
    Ok(spec)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reports = tempfile::tempdir()?;
    let workspaces = tempfile::tempdir()?;
    let passes = shell("writes-a-file", "echo hello > hello.txt")?;
    // Writes a file every 50 ms; the third crosses `max_files` and stops it at once.
    let mut limited = shell(
        "writes-too-many",
        "i=0; while [ $i -lt 20 ]; do echo x > f$i.txt; i=$((i+1)); sleep 0.05; done",
    )?;
    limited.limits.max_files = 2;
    let plan = RunPlan::new(
        RunId::new("embedded-example")?,
        reports.path(),
        workspaces.path(),
        vec![passes, limited],
    );
    let outcome = run_tracked(
        plan,
        Containment::default(),
        Stop::never(),
        Arc::new(Progress),
    )
    .await?;
    let totals = &outcome.summary.totals;
    println!(
        "summary: {} evals, {} passed, {} failed; terminations {:?}",
        totals.evals, totals.passed, totals.failed, totals.terminations
    );
    println!(
        "records: {} (a temporary directory, removed now)",
        outcome.run_dir.display()
    );
    Ok(())
}
