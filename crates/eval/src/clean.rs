//! `hyoka clean`: stop what abandoned runs left behind, and nothing else.
//!
//! A run is abandoned exactly when nobody holds its owner lock. For each one, every ledger
//! process whose identity still matches is stopped (TERM, grace, KILL), its cgroup leaves
//! are killed and removed, its workspaces are removed, and the ledger is marked cleaned.
//! Then the workspace root is swept for marked workspaces whose owner is gone (a run whose
//! reports are elsewhere). Live runs, identity mismatches, unmarked directories and hostile
//! ledger lines are reported and never acted on.

use std::path::{Path, PathBuf};

use hyoka_proctrack::{
    CleanOptions, CleanReport, Identity, LockState, NativeProcTable, ProcRef, ProcTable, clean_run,
    list_runs,
};
use hyoka_workspace::{read_marker, remove_tree};
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
    match std::fs::metadata(&args.reports) {
        Ok(meta) if !meta.is_dir() => {
            return Err(Fail::usage(format!(
                "reports path {} is not a directory",
                args.reports.display()
            )));
        }
        _ => {}
    }
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
    let listings = if args.reports.is_dir() {
        list_runs(&args.reports).map_err(|e| Fail::failure(format!("cannot list runs: {e}")))?
    } else {
        Vec::new()
    };
    let mut runs = Vec::new();
    let mut workspaces = Vec::new();
    let mut remaining = false;
    for listing in listings {
        if listing.state != LockState::Abandoned {
            continue;
        }
        let report = clean_run(&listing.run_dir, &options)
            .map_err(|e| Fail::failure(format!("run {}: {e}", listing.run_id)))?;
        remaining |= if args.dry_run {
            !report.found.is_empty()
        } else {
            !report.is_clean()
        };
        for workspace in &report.workspaces {
            let result = remove_workspace(&workspace.path, &report.run_id, args.dry_run);
            remaining |= matches!(result.action, "would_remove" | "incomplete");
            workspaces.push(result);
        }
        runs.push(report);
    }
    // Marked workspaces of runs whose reports are not under --reports.
    for path in marked_candidates(workspace_root) {
        if workspaces.iter().any(|w| w.path == path) {
            continue;
        }
        let Ok(Some(marker)) = read_marker(&path) else {
            continue;
        };
        let result = if owner_alive(&marker.owner) {
            WorkspaceResult {
                path,
                run_id: marker.run_id,
                action: "kept_live",
                detail: Some(format!("owner {} is running", marker.owner)),
            }
        } else {
            remove_workspace(&path, &marker.run_id, args.dry_run)
        };
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

/// Directories (not links) in `root` whose name starts with `hyoka-`.
fn marked_candidates(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hyoka-"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths
}

/// Removes one workspace of `run_id`, after checking it really is one: an absolute path whose
/// name is `hyoka-<run_id>-…`, and whose marker, if it has one, names the same run. Anything
/// else a ledger might name is refused.
fn remove_workspace(path: &Path, run_id: &str, dry_run: bool) -> WorkspaceResult {
    let result = |action, detail: Option<String>| WorkspaceResult {
        path: path.to_owned(),
        run_id: run_id.to_owned(),
        action,
        detail,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !path.is_absolute() || !name.starts_with(&format!("hyoka-{run_id}-")) {
        return result(
            "refused",
            Some("not a workspace of this run (name or path)".to_owned()),
        );
    }
    match std::fs::symlink_metadata(path) {
        Err(_) => return result("already_gone", None),
        Ok(meta) if !meta.is_dir() => {
            return result("refused", Some("not a directory".to_owned()));
        }
        Ok(_) => {}
    }
    if let Ok(Some(marker)) = read_marker(path)
        && marker.run_id != run_id
    {
        return result("refused", Some(format!("marked as run {}", marker.run_id)));
    }
    if dry_run {
        return result("would_remove", None);
    }
    let report = remove_tree(path);
    if report.is_complete() {
        result("removed", None)
    } else {
        result("incomplete", Some(report.summary()))
    }
}

/// Whether the process named by a marker's owner identity still runs. An owner that cannot
/// be parsed counts as alive: what cannot be proven abandoned is not touched.
/// Whether a workspace marker's owner (`<pid> <start_ticks>`, or a full identity with the
/// boot id) still runs. Anything unreadable counts as alive: the workspace is kept.
fn owner_alive(owner: &str) -> bool {
    let table = NativeProcTable::new();
    let proc_ref = if let Ok(identity) = owner.parse::<Identity>() {
        if table.boot_id().is_ok_and(|boot| boot != identity.boot_id) {
            return false;
        }
        identity.proc_ref
    } else {
        let mut fields = owner.split_ascii_whitespace();
        let (Some(Ok(pid)), Some(Ok(start_ticks)), None) = (
            fields.next().map(str::parse::<i32>),
            fields.next().map(str::parse::<u64>),
            fields.next(),
        ) else {
            return true;
        };
        ProcRef { pid, start_ticks }
    };
    table
        .process(proc_ref.pid)
        .is_some_and(|p| p.start_ticks == proc_ref.start_ticks && !p.is_gone())
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
