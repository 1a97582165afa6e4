//! `hyoka clean`: stop what abandoned runs left behind, and nothing else.
//!
//! A run is abandoned exactly when nobody holds its owner lock. For each one, every ledger
//! process whose identity still matches is stopped (TERM, grace, KILL), its cgroup leaves
//! are killed and removed, its workspaces are removed, and the ledger is marked cleaned.
//! Then the workspace root is swept for marked workspaces whose owner is gone (a run whose
//! reports are elsewhere). Live runs, identity mismatches, unmarked directories and hostile
//! ledger lines are reported and never acted on; so is a run directory that fails
//! `hyoka-proctrack`'s checks (links, loose modes, another user's files), and a run of
//! another user is cleaned with that user's power only.

use std::path::{Path, PathBuf};

use hyoka_proctrack::{
    Authority, CleanOptions, CleanReport, ReportsUse, check_reports_dir, clean_runs, owner_running,
};
use hyoka_workspace::{Disposal, Expected, InstanceRule, MarkerOwner, find_marked, remove_marked};
use serde::Serialize;

use crate::args::CleanArgs;
use crate::out::outln;
use crate::{ExitStatus, Fail};

/// What happened to one workspace.
#[derive(Debug, Serialize)]
pub(crate) struct WorkspaceResult {
    pub(crate) path: PathBuf,
    pub(crate) run_id: String,
    /// `removed`, `would_remove`, `already_gone`, `kept_live`, `refused` or `incomplete`.
    pub(crate) action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) detail: Option<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Output {
    pub(crate) dry_run: bool,
    pub(crate) runs: Vec<CleanReport>,
    pub(crate) workspaces: Vec<WorkspaceResult>,
    /// Whether anything that should be gone remains (exit 1 when true).
    pub(crate) remaining: bool,
}

pub(crate) async fn exec(args: CleanArgs) -> Result<ExitStatus, Fail> {
    check_reports_dir(&args.reports, ReportsUse::Read).map_err(|e| Fail::usage(e.to_string()))?;
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
    let output = tokio::task::spawn_blocking(move || clean(&args, &workspace_root))
        .await
        .map_err(|e| Fail::failure(format!("clean failed: {e}")))??;
    print(&output, json);
    Ok(if output.remaining {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

pub(crate) fn clean(args: &CleanArgs, workspace_root: &Path) -> Result<Output, Fail> {
    let options = CleanOptions {
        grace: args.grace,
        dry_run: args.dry_run,
        ..CleanOptions::default()
    };
    let runs = clean_runs(&args.reports, &options)
        .map_err(|e| Fail::failure(format!("cannot clean runs: {e}")))?;
    // A ledger's workspaces are removed only from these roots: the one given, and the
    // default one (the system temp directory).
    let mut roots = vec![workspace_root.to_owned(), std::env::temp_dir()];
    roots.dedup();
    let mut workspaces = Vec::new();
    let mut remaining = false;
    for report in &runs {
        remaining |= if args.dry_run {
            !report.found.is_empty() || report.refused.is_some()
        } else {
            !report.is_clean()
        };
        let Some(authority) = report.authority else {
            continue;
        };
        let instance = match &report.instance {
            Some(instance) => InstanceRule::Exactly(instance.as_str()),
            None => InstanceRule::Absent,
        };
        let expected = Expected {
            run_id: &report.run_id,
            instance,
            owner_uid: authority.user_filter(),
        };
        for workspace in &report.workspaces {
            let result = dispose(authority, &roots, &workspace.path, &expected, args.dry_run);
            remaining |= matches!(result.action, "would_remove" | "incomplete");
            workspaces.push(result);
        }
    }
    // Marked workspaces of runs whose reports are not under --reports.
    for (path, marker) in find_marked(workspace_root) {
        if workspaces.iter().any(|w| w.path == path) {
            continue;
        }
        let Ok(authority) = Authority::of(&path) else {
            continue;
        };
        let expected = Expected {
            run_id: &marker.run_id,
            instance: InstanceRule::Any,
            owner_uid: authority.user_filter(),
        };
        let roots = [workspace_root.to_owned()];
        let result = dispose(authority, &roots, &path, &expected, args.dry_run);
        remaining |= matches!(result.action, "would_remove" | "incomplete");
        workspaces.push(result);
    }
    Ok(Output {
        dry_run: args.dry_run,
        runs,
        workspaces,
        remaining,
    })
}

/// Removes one recorded workspace with `authority`'s power only, after `hyoka-workspace`'s
/// checks (see `remove_marked`).
fn dispose(
    authority: Authority,
    roots: &[PathBuf],
    path: &Path,
    expected: &Expected<'_>,
    dry_run: bool,
) -> WorkspaceResult {
    let alive = |owner: &MarkerOwner, created: u64| {
        owner_running(
            owner.pid,
            owner.start_ticks,
            owner.boot_id.as_deref(),
            created,
        )
    };
    let disposal = authority
        .run(|| remove_marked(roots, path, expected, &alive, dry_run))
        .unwrap_or_else(|e| Disposal::Refused(e.to_string()));
    let (action, detail) = match disposal {
        Disposal::Removed(_) => ("removed", None),
        Disposal::WouldRemove => ("would_remove", None),
        Disposal::AlreadyGone => ("already_gone", None),
        Disposal::KeptLive(owner) => ("kept_live", Some(format!("owner {owner} is running"))),
        Disposal::Incomplete(report) => ("incomplete", Some(report.summary())),
        Disposal::Refused(why) => ("refused", Some(why)),
        _ => ("refused", None),
    };
    WorkspaceResult {
        path: path.to_owned(),
        run_id: expected.run_id.to_owned(),
        action,
        detail,
    }
}

fn print(output: &Output, json: bool) {
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
            workspace.action.replace('_', " "),
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
