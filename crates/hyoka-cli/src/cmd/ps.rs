//! `hyoka ps`: the live runs (owner lock held), their evals, workspaces and processes.

use hyoka_eval::{LiveRun, live_runs};

use crate::args::PsArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

pub(crate) fn exec(args: &PsArgs) -> Result<ExitStatus, Fail> {
    let runs = live_runs(&args.reports)?;
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
