//! Repairing what abandoned runs left behind, and nothing else: `hyoka clean` as a library.
//!
//! A run is abandoned exactly when nobody holds its owner lock. For each one, every ledger
//! process whose identity still matches is stopped (TERM, grace, KILL), its cgroup leaves
//! are killed and removed, its workspaces are removed, and the ledger is marked cleaned.
//! Then the workspace root is swept for marked workspaces whose owner is gone (a run whose
//! reports are elsewhere). Live runs, identity mismatches, unmarked directories and hostile
//! ledger lines are reported and never acted on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyoka_proctrack::{
    CleanOptions, CleanReport, Identity, LockState, NativeProcTable, ProcRef, ProcTable, clean_run,
    list_runs,
};
use hyoka_workspace::{read_marker, remove_tree};
use serde::Serialize;

use crate::error::EvalError;

/// What to clean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupOptions {
    /// Where the runs' reports (and ledgers) are.
    pub reports: PathBuf,
    /// Where marked workspaces are looked for.
    pub workspace_root: PathBuf,
    /// How long processes get between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Report what would be done, and change nothing at all.
    pub dry_run: bool,
}

/// What became of one workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WorkspaceAction {
    /// It was removed completely.
    Removed,
    /// A dry run: it would be removed.
    WouldRemove,
    /// It no longer existed.
    AlreadyGone,
    /// Its owner still runs: it was kept.
    KeptLive,
    /// It is not provably the run's workspace: it was not touched.
    Refused,
    /// Some of it could not be removed.
    Incomplete,
}

impl WorkspaceAction {
    /// The snake_case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Removed => "removed",
            Self::WouldRemove => "would_remove",
            Self::AlreadyGone => "already_gone",
            Self::KeptLive => "kept_live",
            Self::Refused => "refused",
            Self::Incomplete => "incomplete",
        }
    }

    /// Whether something that should be gone is still there (or would be, in a dry run).
    fn remains(self) -> bool {
        matches!(self, Self::WouldRemove | Self::Incomplete)
    }
}

/// What happened to one workspace.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceCleanup {
    /// The workspace.
    pub path: PathBuf,
    /// The run it belongs to.
    pub run_id: String,
    /// What became of it.
    pub action: WorkspaceAction,
    /// Why, when it was refused, kept or left incomplete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a cleanup found and did (`hyoka clean --json`).
#[derive(Debug, Clone, Serialize)]
pub struct CleanupReport {
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Each abandoned run: the processes found, stopped and skipped, its cgroups, its
    /// ledger's problems.
    pub runs: Vec<CleanReport>,
    /// Each workspace looked at.
    pub workspaces: Vec<WorkspaceCleanup>,
    /// Whether anything that should be gone remains.
    pub remaining: bool,
}

/// Repairs every abandoned run (nobody holds its owner lock) under `options.reports`: every
/// ledger process whose identity still matches is stopped (TERM, grace, KILL), its cgroup
/// leaves are killed and removed, its workspaces are removed, and the ledger is marked
/// cleaned. Then marked workspaces under `options.workspace_root` whose owner is gone are
/// removed. Live runs, identity mismatches, unmarked directories and hostile ledger lines are
/// reported and never acted on. A dry run changes nothing. Blocks for the grace periods.
///
/// # Errors
/// [`EvalError::Clean`] when the runs cannot be listed or a run cannot be cleaned.
pub fn clean_abandoned(options: &CleanupOptions) -> Result<CleanupReport, EvalError> {
    let args = options;
    let workspace_root = &options.workspace_root;
    let options = CleanOptions {
        grace: args.grace,
        dry_run: args.dry_run,
        ..CleanOptions::default()
    };
    let listings = if args.reports.is_dir() {
        list_runs(&args.reports).map_err(|source| EvalError::Clean {
            context: "cannot list runs".to_owned(),
            source,
        })?
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
        let report = clean_run(&listing.run_dir, &options).map_err(|source| EvalError::Clean {
            context: format!("run {}", listing.run_id),
            source,
        })?;
        remaining |= if args.dry_run {
            !report.found.is_empty()
        } else {
            !report.is_clean()
        };
        for workspace in &report.workspaces {
            let result = remove_workspace(&workspace.path, &report.run_id, args.dry_run);
            remaining |= result.action.remains();
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
            WorkspaceCleanup {
                path,
                run_id: marker.run_id,
                action: WorkspaceAction::KeptLive,
                detail: Some(format!("owner {} is running", marker.owner)),
            }
        } else {
            remove_workspace(&path, &marker.run_id, args.dry_run)
        };
        remaining |= result.action.remains();
        workspaces.push(result);
    }
    Ok(CleanupReport {
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
fn remove_workspace(path: &Path, run_id: &str, dry_run: bool) -> WorkspaceCleanup {
    let result = |action, detail: Option<String>| WorkspaceCleanup {
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
            WorkspaceAction::Refused,
            Some("not a workspace of this run (name or path)".to_owned()),
        );
    }
    match std::fs::symlink_metadata(path) {
        Err(_) => return result(WorkspaceAction::AlreadyGone, None),
        Ok(meta) if !meta.is_dir() => {
            return result(WorkspaceAction::Refused, Some("not a directory".to_owned()));
        }
        Ok(_) => {}
    }
    if let Ok(Some(marker)) = read_marker(path)
        && marker.run_id != run_id
    {
        return result(
            WorkspaceAction::Refused,
            Some(format!("marked as run {}", marker.run_id)),
        );
    }
    if dry_run {
        return result(WorkspaceAction::WouldRemove, None);
    }
    let report = remove_tree(path);
    if report.is_complete() {
        result(WorkspaceAction::Removed, None)
    } else {
        result(WorkspaceAction::Incomplete, Some(report.summary()))
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
