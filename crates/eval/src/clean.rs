//! Repairing what abandoned runs left behind, and nothing else: `hyoka clean` as a library.
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
use std::time::Duration;

#[cfg(doc)]
use hyoka_proctrack::ProcTrackError;
use hyoka_proctrack::{
    Authority, CleanOptions, CleanReport, ReportsUse, check_reports_dir, clean_runs, owner_running,
};
use hyoka_workspace::{Disposal, Expected, InstanceRule, MarkerOwner, find_marked, remove_marked};
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
/// reported and never acted on; a run directory that fails `hyoka-proctrack`'s checks is
/// reported as refused and nothing is read from it; a run of another user is cleaned with
/// that user's power only. A ledger's workspaces are removed only from the workspace root
/// or the system temp directory, and only when `hyoka-workspace`'s checks prove them the
/// run instance's. A dry run changes nothing. Blocks for the grace periods.
///
/// # Errors
/// [`EvalError::Tracker`] with [`ProcTrackError::ReportsDir`] when `options.reports` is not
/// an existing directory (bad input: [`EvalError::is_bad_input`]); [`EvalError::Clean`] when
/// the runs cannot be listed or cleaned.
pub fn clean_abandoned(options: &CleanupOptions) -> Result<CleanupReport, EvalError> {
    check_reports_dir(&options.reports, ReportsUse::Read)?;
    let args = options;
    let workspace_root = &options.workspace_root;
    let options = CleanOptions {
        grace: args.grace,
        dry_run: args.dry_run,
        ..CleanOptions::default()
    };
    let runs = clean_runs(&args.reports, &options).map_err(|source| EvalError::Clean {
        context: "cannot clean runs".to_owned(),
        source,
    })?;
    // A ledger's workspaces are removed only from these roots: the one given, and the
    // default one (the system temp directory).
    let mut roots = vec![workspace_root.to_owned(), std::env::temp_dir()];
    roots.dedup();
    let mut workspaces = Vec::new();
    let mut remaining = false;
    for report in &runs {
        remaining |= dispose_run(report, &roots, args.dry_run, &mut workspaces);
    }
    // Marked workspaces of runs whose reports are not under `reports`.
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

/// Repairs one abandoned run, as [`clean_abandoned`] does for each (its processes, cgroup
/// leaves and workspaces; the ledger marked cleaned), before a resumed run takes its id
/// over. A live run is left alone (its owner lock then refuses the resume). Blocks for the
/// grace period.
///
/// # Errors
/// [`EvalError::Clean`] when the run cannot be cleaned.
pub(crate) fn clean_abandoned_run(
    run_dir: &Path,
    workspace_root: &Path,
    grace: Duration,
) -> Result<CleanupReport, EvalError> {
    let options = CleanOptions {
        grace,
        ..CleanOptions::default()
    };
    let report =
        hyoka_proctrack::clean_run(run_dir, &options).map_err(|source| EvalError::Clean {
            context: format!("cannot repair run {} to resume it", run_dir.display()),
            source,
        })?;
    let mut roots = vec![workspace_root.to_owned(), std::env::temp_dir()];
    roots.dedup();
    let mut workspaces = Vec::new();
    let remaining = dispose_run(&report, &roots, false, &mut workspaces);
    Ok(CleanupReport {
        dry_run: false,
        runs: vec![report],
        workspaces,
        remaining,
    })
}

/// Removes the workspaces a cleaned run's ledger names (into `out`); returns whether
/// anything that should be gone remains.
fn dispose_run(
    report: &CleanReport,
    roots: &[PathBuf],
    dry_run: bool,
    out: &mut Vec<WorkspaceCleanup>,
) -> bool {
    let mut remaining = if dry_run {
        !report.found.is_empty() || report.refused.is_some()
    } else {
        !report.is_clean()
    };
    let Some(authority) = report.authority else {
        return remaining;
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
        let result = dispose(authority, roots, &workspace.path, &expected, dry_run);
        remaining |= result.action.remains();
        out.push(result);
    }
    remaining
}

/// Removes one recorded workspace with `authority`'s power only, after `hyoka-workspace`'s
/// checks (see [`remove_marked`]); whether its owner still runs is decided from the
/// marker's [`MarkerOwner`].
fn dispose(
    authority: Authority,
    roots: &[PathBuf],
    path: &Path,
    expected: &Expected<'_>,
    dry_run: bool,
) -> WorkspaceCleanup {
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
        Disposal::Removed(_) => (WorkspaceAction::Removed, None),
        Disposal::WouldRemove => (WorkspaceAction::WouldRemove, None),
        Disposal::AlreadyGone => (WorkspaceAction::AlreadyGone, None),
        Disposal::KeptLive(owner) => (
            WorkspaceAction::KeptLive,
            Some(format!("owner {owner} is running")),
        ),
        Disposal::Incomplete(report) => (WorkspaceAction::Incomplete, Some(report.summary())),
        Disposal::Refused(why) => (WorkspaceAction::Refused, Some(why)),
        _ => (WorkspaceAction::Refused, None),
    };
    WorkspaceCleanup {
        path: path.to_owned(),
        run_id: expected.run_id.to_owned(),
        action,
        detail,
    }
}
