//! Repairing what abandoned runs left behind, and nothing else: `hyoka clean` as a library.
//!
//! A run is abandoned exactly when nobody holds its owner lock. For each one, every ledger
//! process whose identity still matches is stopped (TERM, grace, KILL), its cgroup leaves
//! (v2, and the v1 ones of resource limits) are killed and removed, its workspaces are
//! removed, and the ledger is marked cleaned. A workspace is removed only when both records
//! agree: the run's ledger names it and its marker names the run instance; the marker alone,
//! which any process of the user may rewrite, never suffices. So the workspace root is swept
//! only to list marked workspaces no abandoned run records (in use by a live run, or of runs
//! whose reports are elsewhere). Workspaces kept for the user (`--keep-workspace`, by the
//! ledger's `# kept` or by the marker) are listed as kept and left alone, unless kept ones
//! are asked for (`hyoka clean --kept`). Live runs, identity mismatches, unmarked directories and hostile
//! ledger lines are reported and never acted on; so is a run directory that fails
//! `hyoka-proctrack`'s checks (links, loose modes, another user's files), and a run of
//! another user is cleaned with that user's power only.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[cfg(doc)]
use hyoka_proctrack::ProcTrackError;
use hyoka_proctrack::{
    Authority, CleanOptions, CleanReport, ProcessFate, ReportsUse, SkipReason, check_reports_dir,
    clean_runs, owner_running,
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
    /// Also remove workspaces kept for the user that were made at or before this time
    /// (`hyoka clean --kept [--older-than DUR]`); `None` leaves every kept one alone. Only
    /// the kept workspaces of runs recorded under `reports` are removed.
    pub remove_kept: Option<SystemTime>,
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
    /// It was kept for the user (`--keep-workspace`): left alone.
    Kept,
    /// It is not provably the run's workspace: it was not touched.
    Refused,
    /// Some of it could not be removed.
    Incomplete,
    /// It lies outside the workspace root the cleanup was given (the run used another
    /// `--workspace-root`): left alone, and the cleanup fails naming the flag.
    OutsideRoot,
}

impl WorkspaceAction {
    /// The snake_case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Removed => "removed",
            Self::WouldRemove => "would_remove",
            Self::AlreadyGone => "already_gone",
            Self::KeptLive => "kept_live",
            Self::Kept => "kept",
            Self::Refused => "refused",
            Self::Incomplete => "incomplete",
            Self::OutsideRoot => "outside_root",
        }
    }

    /// Whether something that should be gone is still there (or would be, in a dry run).
    fn remains(self) -> bool {
        matches!(
            self,
            Self::WouldRemove | Self::Incomplete | Self::OutsideRoot
        )
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
/// cleaned. Then marked workspaces under `options.workspace_root` that no abandoned run
/// records are listed, never removed (a marker alone proves nothing). Live runs, identity mismatches, unmarked directories and hostile ledger lines are
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
    // Recorded paths are absolute: a relative root is compared as the absolute path it names.
    let workspace_root = &std::path::absolute(&options.workspace_root)
        .unwrap_or_else(|_| options.workspace_root.clone());
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
    let kept_before = args.remove_kept.map(|t| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    let mut workspaces = Vec::new();
    let mut remaining = false;
    for report in &runs {
        remaining |= dispose_run(report, &roots, args.dry_run, kept_before, &mut workspaces);
    }
    if !args.dry_run {
        for report in runs.iter().filter(|r| r.refused.is_none()) {
            remove_stale_temporaries(&args.reports.join(&report.run_id));
        }
    }
    // Marked workspaces no abandoned run under `reports` records: never removed, since the
    // marker alone is no proof (any process of the user may rewrite it); listed, with why.
    // So `--kept` acts on the kept workspaces of runs recorded under `reports` only.
    let live = hyoka_proctrack::live_runs(&args.reports).unwrap_or_default();
    for (path, marker) in find_marked(workspace_root) {
        if workspaces.iter().any(|w| w.path == path) {
            continue;
        }
        workspaces.push(unrecorded(&path, &marker, &live, &args.reports));
    }
    Ok(CleanupReport {
        dry_run: args.dry_run,
        runs,
        workspaces,
        remaining,
    })
}

/// What the sweep says of a marked workspace no abandoned run under `reports` records: in
/// use by a live run (its ledger names it, or the marker's owner runs), or not provably
/// anyone's to remove.
fn unrecorded(
    path: &Path,
    marker: &hyoka_workspace::Marker,
    live: &[hyoka_proctrack::RunListing],
    reports: &Path,
) -> WorkspaceCleanup {
    let by_run = live
        .iter()
        .find(|r| r.ledger.workspaces.iter().any(|w| w.path == path));
    let owner = marker.owner.as_ref().filter(|o| {
        owner_running(
            o.pid,
            o.start_ticks,
            o.boot_id.as_deref(),
            marker.created_unix,
        )
    });
    let (action, detail) = match (by_run, owner) {
        (Some(run), _) => (
            WorkspaceAction::KeptLive,
            format!("run {} is live", run.run_id),
        ),
        (None, Some(owner)) => (
            WorkspaceAction::KeptLive,
            format!("owner {owner} is running"),
        ),
        (None, None) => (
            WorkspaceAction::Refused,
            format!(
                "no abandoned run under {} records it (clean with the --reports its run wrote to; its marker alone proves nothing)",
                reports.display()
            ),
        ),
    };
    WorkspaceCleanup {
        path: path.to_owned(),
        run_id: marker.run_id.clone(),
        action,
        detail: Some(detail),
    }
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
    let remaining = dispose_run(&report, &roots, false, None, &mut workspaces);
    if report.refused.is_none() {
        remove_stale_temporaries(run_dir);
    }
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
    kept_before: Option<u64>,
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
    for workspace in &report.workspaces {
        // A workspace recorded outside every root it may be removed from (a custom
        // `--workspace-root` the cleanup was not given) is left, and the cleanup says so and
        // fails: it could not do its job.
        // Only a directory named as this run's workspace, reached without a link, is taken
        // for one (a hostile ledger's `/etc` or a path through a link is refused below, as
        // any path that is not provably the run's).
        let parent = workspace.path.parent();
        let named = (workspace.path.file_name().and_then(|n| n.to_str()))
            .is_some_and(|n| n.starts_with(&format!("hyoka-{}-", report.run_id)));
        if named
            && !roots
                .iter()
                .any(|root| parent.is_some_and(|p| p.components().eq(root.components())))
            && parent.is_some_and(|p| std::fs::canonicalize(p).is_ok_and(|c| c == p))
            && std::fs::symlink_metadata(&workspace.path).is_ok_and(|m| m.is_dir())
        {
            remaining = true;
            let parent = parent.unwrap_or(Path::new("/"));
            out.push(WorkspaceCleanup {
                path: workspace.path.clone(),
                run_id: report.run_id.clone(),
                action: WorkspaceAction::OutsideRoot,
                detail: Some(format!(
                    "outside the workspace root; pass --workspace-root {} to clean it",
                    parent.display()
                )),
            });
            continue;
        }
        let expected = Expected {
            run_id: &report.run_id,
            instance,
            owner_uid: authority.user_filter(),
            kept_before,
            recorded_kept: report.kept.iter().any(|k| k.path == workspace.path),
        };
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
        Disposal::Kept => (WorkspaceAction::Kept, None),
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

impl CleanupReport {
    /// The human report of `hyoka clean`: each run once (its processes, cgroups, ledger
    /// problems and workspaces under it), in one voice (`would stop` in a dry run,
    /// `stopped` otherwise). Runs already marked cleaned with nothing left to report are
    /// left out unless `verbose`; kept workspaces are always listed.
    pub fn render(&self, verbose: bool) -> String {
        let mut out = String::new();
        let mut shown: Vec<&str> = Vec::new();
        let of_run = |run_id: &str| -> Vec<&WorkspaceCleanup> {
            self.workspaces
                .iter()
                .filter(|w| w.run_id == run_id)
                .collect()
        };
        for run in &self.runs {
            shown.push(&run.run_id);
            self.render_run(&mut out, run, &of_run(&run.run_id), verbose);
        }
        // Workspaces of runs whose reports are not here, found in the workspace root.
        for workspace in &self.workspaces {
            let run_id = workspace.run_id.as_str();
            if shown.contains(&run_id) {
                continue;
            }
            shown.push(run_id);
            let same = of_run(run_id);
            if !verbose
                && same
                    .iter()
                    .all(|w| w.action == WorkspaceAction::AlreadyGone)
            {
                continue;
            }
            let counts = workspace_counts(&same).unwrap_or_else(|| "nothing to do".to_owned());
            let _ = writeln!(out, "run {run_id} (found in the workspace root): {counts}");
            render_workspaces(&mut out, &same, verbose);
        }
        if out.is_empty() {
            out.push_str("nothing to clean\n");
        }
        out
    }

    fn render_run(
        &self,
        out: &mut String,
        run: &CleanReport,
        workspaces: &[&WorkspaceCleanup],
        verbose: bool,
    ) {
        if let Some(reason) = &run.refused {
            let _ = writeln!(
                out,
                "run {}: refused, nothing read from it: {reason}",
                run.run_id
            );
            return;
        }
        let strangers = run
            .skipped
            .iter()
            .filter(|s| s.reason != SkipReason::Gone)
            .count();
        let quiet = run.found.is_empty()
            && strangers == 0
            && run.problems.is_empty()
            && run.survivors == 0
            && run.cgroups.iter().all(|c| !c.found || c.removed)
            && workspaces
                .iter()
                .all(|w| w.action == WorkspaceAction::AlreadyGone);
        if quiet && !verbose && run.already_cleaned {
            return;
        }
        let _ = writeln!(
            out,
            "run {}: {}",
            run.run_id,
            self.headline(run, strangers, workspaces)
        );
        for process in &run.found {
            let fate = match process.outcome {
                None => "would stop",
                Some(ProcessFate::Terminated) => "stopped (SIGTERM)",
                Some(ProcessFate::Killed) => "killed (SIGKILL)",
                Some(ProcessFate::Exited | ProcessFate::Vanished) => "already gone",
                Some(ProcessFate::Failed) => "SURVIVED",
            };
            let _ = writeln!(out, "  process {} ({}): {fate}", process.pid, process.comm);
        }
        for skipped in run
            .skipped
            .iter()
            .filter(|s| verbose || s.reason != SkipReason::Gone)
        {
            let why = match skipped.reason {
                SkipReason::IdentityMismatch => "pid reused by another process",
                SkipReason::OtherBoot => "recorded in another boot",
                SkipReason::Gone => "gone",
                SkipReason::BeforeRun => "started before the run",
                SkipReason::OtherUser => "another user's",
            };
            let entry = &skipped.entry;
            let _ = writeln!(
                out,
                "  process {} ({}): left alone, {why}",
                entry.pid, entry.comm
            );
        }
        for cgroup in run.cgroups.iter().filter(|c| c.found || verbose) {
            let what = match (cgroup.found, cgroup.removed, self.dry_run) {
                (true, _, true) => "would be killed and removed",
                (true, true, false) => "killed and removed",
                (true, false, false) => "still present",
                (false, _, _) => "already gone",
            };
            let _ = writeln!(out, "  cgroup {}: {what}", cgroup.leaf.path.display());
        }
        for problem in &run.problems {
            let (line, reason, text) = (problem.line, problem.reason, &problem.text);
            let _ = writeln!(out, "  ledger line {line}: {reason} ({text:?})");
        }
        render_workspaces(out, workspaces, verbose);
    }

    /// `stopped 3 process(es), removed 1 workspace`, or what else there is to say.
    fn headline(
        &self,
        run: &CleanReport,
        strangers: usize,
        workspaces: &[&WorkspaceCleanup],
    ) -> String {
        let mut parts = Vec::new();
        if !run.found.is_empty() {
            let (verb, n) = if self.dry_run {
                ("would stop", run.found.len())
            } else {
                ("stopped", run.killed)
            };
            parts.push(format!("{verb} {n} process(es)"));
        }
        if run.survivors > 0 {
            parts.push(format!("{} SURVIVED", run.survivors));
        }
        if strangers > 0 {
            parts.push(format!(
                "{strangers} ledger process(es) not the run's (pid reused, another user's or older), left alone"
            ));
        }
        if !run.problems.is_empty() {
            parts.push(format!(
                "{} hostile ledger line(s) ignored",
                run.problems.len()
            ));
        }
        parts.extend(workspace_counts(workspaces));
        if parts.is_empty() {
            parts.push(
                match (run.already_cleaned, run.marked_cleaned) {
                    (true, _) => "already cleaned, nothing to do",
                    (false, true) => "nothing left behind; marked cleaned",
                    (false, false) => "nothing left behind",
                }
                .to_owned(),
            );
        }
        parts.join(", ")
    }
}

/// The workspaces' lines; those already gone only when `verbose` (nothing to say of them).
fn render_workspaces(out: &mut String, workspaces: &[&WorkspaceCleanup], verbose: bool) {
    for workspace in workspaces {
        if !verbose && workspace.action == WorkspaceAction::AlreadyGone {
            continue;
        }
        let what = match workspace.action {
            WorkspaceAction::Kept if workspace.detail.is_some() => "kept for you".to_owned(),
            WorkspaceAction::Kept => {
                "kept for you (`hyoka clean --kept` removes kept workspaces)".to_owned()
            }
            action => action.as_str().replace('_', " "),
        };
        let detail = workspace
            .detail
            .as_ref()
            .map_or_else(String::new, |d| format!(": {d}"));
        let _ = writeln!(
            out,
            "  workspace {}: {what}{detail}",
            workspace.path.display()
        );
    }
}

/// `removed 1 workspace, kept 2 workspaces`, or `None` when there is nothing to say.
fn workspace_counts(workspaces: &[&WorkspaceCleanup]) -> Option<String> {
    let parts: Vec<String> = [
        (WorkspaceAction::Removed, "removed"),
        (WorkspaceAction::WouldRemove, "would remove"),
        (WorkspaceAction::Kept, "kept"),
        (WorkspaceAction::KeptLive, "kept in use"),
        (WorkspaceAction::Refused, "refused"),
        (WorkspaceAction::Incomplete, "could not fully remove"),
        (
            WorkspaceAction::OutsideRoot,
            "could not reach (outside the workspace root)",
        ),
    ]
    .into_iter()
    .filter_map(
        |(action, verb)| match workspaces.iter().filter(|w| w.action == action).count() {
            0 => None,
            1 => Some(format!("{verb} 1 workspace")),
            n => Some(format!("{verb} {n} workspaces")),
        },
    )
    .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Removes what an atomic write of a killed owner left in a run directory and its trials'
/// directories: regular files named `.<name>.tmp-<pid>-<n>` (see
/// [`write_atomic`](hyoka_proctrack::write_atomic)). Called only for a run nobody owns any
/// more, after its directory passed the cleanup's checks; links and other files are left.
fn remove_stale_temporaries(run_dir: &Path) {
    fn stale(name: &str) -> bool {
        let numeric = |p: Option<&str>| {
            p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        };
        let Some((_, tail)) = name.strip_prefix('.').and_then(|r| r.rsplit_once(".tmp-")) else {
            return false;
        };
        let mut parts = tail.split('-');
        numeric(parts.next()) && numeric(parts.next()) && parts.next().is_none()
    }
    fn sweep(dir: &Path, deeper: bool) -> Vec<PathBuf> {
        let mut subdirs = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return subdirs;
        };
        for entry in entries.flatten().take(1 << 16) {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_file() && entry.file_name().to_str().is_some_and(stale) {
                let _ = std::fs::remove_file(entry.path());
            } else if deeper && kind.is_dir() {
                subdirs.push(entry.path());
            }
        }
        subdirs
    }
    for trial_dir in sweep(run_dir, true) {
        sweep(&trial_dir, false);
    }
}
