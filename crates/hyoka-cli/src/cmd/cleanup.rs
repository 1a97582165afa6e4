//! `hyoka clean`: stop what abandoned runs left behind, and nothing else.
//!
//! The repair is `hyoka-eval`'s [`clean_abandoned`]: processes whose identity still matches
//! a ledger line, cgroup leaves, workspaces; then marked workspaces whose owner is gone.
//! Live runs, identity mismatches, unmarked directories and hostile ledger lines are
//! reported and never acted on; so is a run directory that fails `hyoka-proctrack`'s checks
//! (links, loose modes, another user's files), and a run of another user is cleaned with
//! that user's power only.

use hyoka_eval::{CleanupOptions, CleanupReport, clean_abandoned};

use crate::args::CleanArgs;
use crate::exit::{ExitStatus, Fail};
use crate::out::outln;

pub(crate) async fn exec(args: CleanArgs) -> Result<ExitStatus, Fail> {
    let workspace_root = args
        .workspace_root
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    if let Some(root) = &args.workspace_root
        && !root.is_dir()
    {
        return Err(Fail::usage(format!(
            "workspace root {} is not a directory",
            root.display()
        )));
    }
    let json = args.json;
    let options = CleanupOptions {
        reports: args.reports,
        workspace_root,
        grace: args.grace,
        dry_run: args.dry_run,
    };
    let output = tokio::task::spawn_blocking(move || clean_abandoned(&options))
        .await
        .map_err(|e| Fail::failure(format!("clean failed: {e}")))??;
    print(&output, json);
    Ok(if output.remaining {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn print(output: &CleanupReport, json: bool) {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(output).unwrap_or_default()
        );
        return;
    }
    let verb = |done: &'static str, would: &'static str| if output.dry_run { would } else { done };
    for run in &output.runs {
        if let Some(reason) = &run.refused {
            outln!(
                "run {}: refused, nothing read from it: {reason}",
                run.run_id
            );
            continue;
        }
        outln!(
            "run {}: found {} process(es), {} {}, {} skipped (identity mismatch or gone), {} ledger problem(s){}",
            run.run_id,
            run.found.len(),
            run.killed,
            verb("stopped", "to stop"),
            run.skipped.len(),
            run.problems.len(),
            if run.survivors > 0 {
                format!(", {} SURVIVED", run.survivors)
            } else {
                String::new()
            }
        );
        for process in &run.found {
            let outcome = process.outcome.map_or_else(
                || "would be stopped".to_owned(),
                |o| format!("{o:?}").to_lowercase(),
            );
            outln!("  process {} ({}): {outcome}", process.pid, process.comm);
        }
        for cgroup in &run.cgroups {
            outln!(
                "  cgroup {}: {}",
                cgroup.leaf.path.display(),
                if cgroup.removed {
                    "killed and removed"
                } else if cgroup.found {
                    "still present"
                } else {
                    "already gone"
                }
            );
        }
        for problem in &run.problems {
            outln!(
                "  ledger line {}: {} ({:?})",
                problem.line,
                problem.reason,
                problem.text
            );
        }
    }
    for workspace in &output.workspaces {
        outln!(
            "workspace {} (run {}): {}{}",
            workspace.path.display(),
            workspace.run_id,
            workspace.action.as_str().replace('_', " "),
            workspace
                .detail
                .as_ref()
                .map_or_else(String::new, |d| format!(" — {d}"))
        );
    }
    if output.runs.is_empty() && output.workspaces.is_empty() {
        outln!("nothing to clean");
    }
}
