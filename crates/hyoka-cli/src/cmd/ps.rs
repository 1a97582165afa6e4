//! `hyoka ps`: the live runs (owner lock held), their evals, workspaces and processes.

use std::collections::BTreeMap;

use hyoka_proctrack::{ReportsUse, RunListing, check_reports_dir, live_runs};
use serde::Serialize;

use crate::phases::current_phase;

use crate::args::PsArgs;
use crate::out::outln;
use crate::{ExitStatus, Fail};

pub(crate) fn exec(args: &PsArgs) -> Result<ExitStatus, Fail> {
    check_reports_dir(&args.reports, ReportsUse::Read).map_err(|e| Fail::usage(e.to_string()))?;
    let listings =
        live_runs(&args.reports).map_err(|e| Fail::failure(format!("cannot list runs: {e}")))?;
    let runs: Vec<LiveRun<'_>> = listings
        .iter()
        .map(|run| LiveRun {
            phases: run
                .evals
                .iter()
                .filter_map(|eval| {
                    let (phase, since) = current_phase(&run.run_dir.join(eval))?;
                    Some((eval.clone(), PhaseNow { phase, since }))
                })
                .collect(),
            run,
        })
        .collect();
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&runs).unwrap_or_default()
        );
        return Ok(ExitStatus::Success);
    }
    if runs.is_empty() {
        outln!("no live runs");
    }
    for LiveRun { run, phases } in &runs {
        let owner = run
            .ledger
            .owner
            .as_ref()
            .map_or_else(|| "?".to_owned(), |o| o.pid().to_string());
        outln!(
            "run {} (owner pid {owner}): evals {}",
            run.run_id,
            run.evals.join(", ")
        );
        for (eval, now) in phases {
            outln!("  phase     {eval:<12} {} since {}", now.phase, now.since);
        }
        for workspace in &run.ledger.workspaces {
            outln!(
                "  workspace {:<12} {}",
                workspace.eval_id,
                workspace.path.display()
            );
        }
        for process in &run.processes {
            outln!(
                "  process   {:<12} pid {:>7} pgid {:>7} {:<16} {}",
                process.entry.eval_id,
                process.entry.pid,
                process.entry.pgid,
                process.entry.comm,
                if process.alive { "running" } else { "gone" }
            );
        }
    }
    Ok(ExitStatus::Success)
}

/// A live run as `hyoka ps` shows it: the ledger's view plus each eval's current phase.
#[derive(Serialize)]
struct LiveRun<'a> {
    #[serde(flatten)]
    run: &'a RunListing,
    /// The phase each eval is in (`setup`, `services`, `agent`, `build`, `review`, `cleanup`).
    phases: BTreeMap<String, PhaseNow>,
}

#[derive(Serialize)]
struct PhaseNow {
    phase: String,
    since: String,
}
