//! The library side of `hyoka clean` and `hyoka ps`: sweep abandoned runs, list live ones.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::ProcTrackError;
use crate::cgroup::{CgroupLeaf, cgroup2_mount};
use crate::clock::{Clock, SystemClock, unix_now};
use crate::discover::{Found, Marker, Scope, discover};
use crate::identity::validate_id;
use crate::ledger::{EvalPath, LEDGER_FILE, Ledger, LedgerEntry, LedgerProblem};
use crate::lock::{LOCK_FILE, LockState, OwnerLock};
use crate::proc_table::{NativeProcTable, ProcTable};
use crate::signal::{NativeSignaller, Signaller};
use crate::teardown::{ProcessFate, ProcessReport, Seams, TeardownOptions, teardown};

/// What [`clean_run`] may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanOptions {
    /// SIGTERM→SIGKILL grace period (`--grace`).
    pub grace: Duration,
    /// Extra time for SIGKILL rounds.
    pub kill_timeout: Duration,
    /// Change nothing at all: no signal, no write, no removal. Only report.
    pub dry_run: bool,
}

impl Default for CleanOptions {
    fn default() -> Self {
        Self {
            grace: Duration::from_secs(5),
            kill_timeout: Duration::from_secs(5),
            dry_run: false,
        }
    }
}

/// Why a ledger entry was not acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The pid is alive but has another start time: a stranger reusing the pid.
    IdentityMismatch,
    /// The ledger was written in another boot.
    OtherBoot,
    /// The process is gone (absent or a zombie): nothing to do.
    Gone,
}

/// One ledger entry `clean` did not signal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The entry.
    pub entry: LedgerEntry,
    /// Why.
    pub reason: SkipReason,
}

/// A recorded cgroup leaf and what `clean` did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupCleanup {
    /// The eval id and path from the `# cgroup` header.
    pub leaf: EvalPath,
    /// Whether it still existed and looked like ours.
    pub found: bool,
    /// Whether it is gone now.
    pub removed: bool,
}

/// What [`clean_run`] found and did in one run directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CleanReport {
    /// The run id (the directory's name).
    pub run_id: String,
    /// The run directory.
    pub run_dir: PathBuf,
    /// The owner lock's state when `clean` looked. Only `Abandoned` runs are touched.
    pub state: LockState,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the ledger was already marked cleaned.
    pub already_cleaned: bool,
    /// Processes attributed to the run and still running, with what became of them. In a dry
    /// run their outcome is `None`: nothing was signalled.
    pub found: Vec<CleanedProcess>,
    /// Ledger entries not acted on.
    pub skipped: Vec<Skipped>,
    /// Ledger lines refused as corrupt or hostile.
    pub problems: Vec<LedgerProblem>,
    /// The run's cgroup leaves.
    pub cgroups: Vec<CgroupCleanup>,
    /// The workspaces from the `# workspace` headers, for the caller to remove.
    pub workspaces: Vec<EvalPath>,
    /// Processes stopped by this clean.
    pub killed: usize,
    /// Processes still running afterwards (a non-zero value means `clean` failed).
    pub survivors: usize,
    /// Whether the ledger is now marked cleaned.
    pub marked_cleaned: bool,
}

/// One process found by `clean`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CleanedProcess {
    /// The process id.
    pub pid: i32,
    /// Its start ticks.
    pub start_ticks: u64,
    /// Its command name.
    pub comm: String,
    /// Why it was attributed to the run.
    pub source: crate::Source,
    /// What became of it (`None` in a dry run).
    pub outcome: Option<ProcessFate>,
}

impl From<&ProcessReport> for CleanedProcess {
    fn from(p: &ProcessReport) -> Self {
        Self {
            pid: p.pid,
            start_ticks: p.start_ticks,
            comm: p.comm.clone(),
            source: p.source,
            outcome: Some(p.outcome),
        }
    }
}

impl CleanReport {
    fn new(run_dir: &Path, run_id: &str, state: LockState, dry_run: bool) -> Self {
        Self {
            run_id: run_id.to_owned(),
            run_dir: run_dir.to_owned(),
            state,
            dry_run,
            already_cleaned: false,
            found: Vec::new(),
            skipped: Vec::new(),
            problems: Vec::new(),
            cgroups: Vec::new(),
            workspaces: Vec::new(),
            killed: 0,
            survivors: 0,
            marked_cleaned: false,
        }
    }

    /// Whether nothing that should be gone remains (the CLI's exit status 0). A live run
    /// counts as fine: it is not `clean`'s to touch.
    pub fn is_clean(&self) -> bool {
        match self.state {
            LockState::Live | LockState::Missing => true,
            LockState::Abandoned if self.dry_run => self.found.is_empty(),
            LockState::Abandoned => {
                self.survivors == 0 && self.cgroups.iter().all(|c| c.removed || !c.found)
            }
        }
    }
}

/// Cleans one run directory `reports/<run_id>` whose owner lock is free.
///
/// A run whose lock is held (live) or missing is reported and never touched. Otherwise, with
/// the lock held for the duration: every ledger entry whose identity still matches a running
/// process, every member of a recorded cgroup leaf, and every process carrying the run's
/// `HYOKA_RUN_ID` marker (plus their descendants and groups) are torn down (SIGTERM, grace,
/// SIGKILL rounds, each signal identity-verified); the leaves are killed and removed; and
/// when nothing survived the ledger is marked `# cleaned`. Entries naming a stranger (same pid,
/// other start time), entries from another boot and hostile lines are reported, never acted
/// on. The workspaces from the ledger are returned for the caller to remove.
///
/// With `dry_run`, nothing is signalled, written or removed; the report says what would be.
///
/// Blocking (it waits out the grace period): from async code use `spawn_blocking`.
///
/// # Errors
/// [`ProcTrackError::InvalidId`] when the directory name is not a run id,
/// [`ProcTrackError::Io`] when the lock or ledger cannot be read.
pub fn clean_run(run_dir: &Path, options: &CleanOptions) -> Result<CleanReport, ProcTrackError> {
    let (table, signaller) = (NativeProcTable::new(), NativeSignaller::new());
    let mount = std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|m| cgroup2_mount(&m));
    clean_run_with(
        run_dir,
        options,
        &table,
        &signaller,
        &SystemClock,
        mount.as_deref(),
    )
}

/// [`clean_run`] against explicit seams (fakes in tests) and cgroup2 mount.
///
/// # Errors
/// As [`clean_run`].
#[expect(
    clippy::too_many_lines,
    reason = "one linear sequence: lock, read, classify, signal, remove, mark"
)]
pub fn clean_run_with(
    run_dir: &Path,
    options: &CleanOptions,
    table: &dyn ProcTable,
    signaller: &dyn Signaller,
    clock: &dyn Clock,
    cgroup_mount: Option<&Path>,
) -> Result<CleanReport, ProcTrackError> {
    let run_id = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    validate_id("run", &run_id)?;
    let untouched = |state| Ok(CleanReport::new(run_dir, &run_id, state, options.dry_run));
    let lock = match OwnerLock::acquire_existing(&run_dir.join(LOCK_FILE)) {
        Ok(Some(lock)) => lock,
        Ok(None) => return untouched(LockState::Missing),
        Err(ProcTrackError::RunLive { .. }) => return untouched(LockState::Live),
        Err(e) => return Err(e),
    };
    let mut report = CleanReport::new(run_dir, &run_id, LockState::Abandoned, options.dry_run);
    let ledger_path = run_dir.join(LEDGER_FILE);
    let parsed = match Ledger::read(&ledger_path, table.self_pid()) {
        Ok(parsed) => parsed,
        Err(ProcTrackError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            drop(lock);
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    let mut ledger = parsed.ledger;
    report.problems = parsed.problems;
    report.already_cleaned = ledger.cleaned.is_some();
    report.workspaces.clone_from(&ledger.workspaces);
    if !ledger.run_id.is_empty() && ledger.run_id != run_id {
        report.problems.push(LedgerProblem {
            line: 0,
            text: ledger.run_id.clone(),
            reason: "`# run` header names another run: entries not acted on",
        });
        ledger.entries.clear();
    }

    let other_boot = ledger
        .owner
        .as_ref()
        .is_some_and(|o| table.boot_id().is_ok_and(|b| b != o.boot_id));
    let (live_entries, skipped) = classify(&ledger.entries, table, other_boot);
    report.skipped = skipped;

    let leaves = if other_boot {
        Vec::new()
    } else {
        open_leaves(&ledger.cgroups, &run_id, cgroup_mount)
    };
    report.cgroups = ledger
        .cgroups
        .iter()
        .map(|c| CgroupCleanup {
            leaf: c.clone(),
            found: leaves.iter().any(|l| l.path() == c.path),
            removed: false,
        })
        .collect();
    let scope = Scope {
        roots: Vec::new(),
        known: live_entries,
        marker: (!other_boot).then(|| {
            Marker::run(&run_id).since(ledger.owner.as_ref().map_or(0, |o| o.proc_ref.start_ticks))
        }),
        exclude: Vec::new(),
    };

    if options.dry_run {
        report.found = would_clean(table, &scope, &leaves)?;
        drop(lock);
        return Ok(report);
    }

    let seams = Seams {
        table,
        signaller,
        clock,
    };
    let torn = teardown(
        seams,
        &scope,
        &leaves,
        &TeardownOptions {
            grace: options.grace,
            kill_timeout: options.kill_timeout,
            ..TeardownOptions::default()
        },
    );
    report.found = torn
        .processes
        .iter()
        .filter(|p| p.outcome != ProcessFate::Exited)
        .map(CleanedProcess::from)
        .collect();
    report.killed = torn.processes_killed;
    report.survivors = torn.survivors;
    if let Some(mount) = cgroup_mount.filter(|_| !other_boot) {
        for cleanup in report.cgroups.iter().filter(|c| !c.found) {
            crate::cgroup::remove_empty_run_dir(&cleanup.leaf.path, &run_id, mount);
        }
    }
    finish(
        &mut report,
        &mut ledger,
        &leaves,
        clock,
        &ledger_path,
        options,
    )?;
    drop(lock);
    Ok(report)
}

/// Removes the leaves and, when nothing survived, marks the ledger cleaned.
fn finish(
    report: &mut CleanReport,
    ledger: &mut Ledger,
    leaves: &[CgroupLeaf],
    clock: &dyn Clock,
    ledger_path: &Path,
    options: &CleanOptions,
) -> Result<(), ProcTrackError> {
    let patience = options.kill_timeout.max(Duration::from_secs(2));
    // Killed processes whose parent died with the owner are zombies until init reaps them,
    // which some inits do lazily (seconds); a leaf stays busy until then.
    for (cleanup, leaf) in report.cgroups.iter_mut().filter(|c| c.found).zip(leaves) {
        cleanup.removed = leaf.remove(patience, clock);
    }
    for cleanup in report.cgroups.iter_mut().filter(|c| !c.found) {
        cleanup.removed = !cleanup.leaf.path.exists();
    }
    if report.survivors == 0 {
        ledger.cleaned = Some(unix_now());
        ledger.entries.clear();
        ledger.cgroups.retain(|c| {
            report
                .cgroups
                .iter()
                .any(|r| r.leaf.path == c.path && !r.removed)
        });
        ledger.write_atomic(ledger_path)?;
        report.marked_cleaned = true;
    }
    Ok(())
}

/// The recorded leaves that still exist and look like ours.
fn open_leaves(recorded: &[EvalPath], run_id: &str, mount: Option<&Path>) -> Vec<CgroupLeaf> {
    let Some(mount) = mount else {
        return Vec::new();
    };
    recorded
        .iter()
        .filter_map(|c| CgroupLeaf::open_recorded(&c.path, run_id, mount))
        .collect()
}

/// Splits ledger entries into those still running with their identity, and the rest.
fn classify(
    entries: &[LedgerEntry],
    table: &dyn ProcTable,
    other_boot: bool,
) -> (Vec<LedgerEntry>, Vec<Skipped>) {
    let mut live = Vec::new();
    let mut skipped = Vec::new();
    for entry in entries {
        let reason = if other_boot {
            Some(SkipReason::OtherBoot)
        } else {
            match table.process(entry.pid) {
                None => Some(SkipReason::Gone),
                Some(p) if p.start_ticks != entry.start_ticks => Some(SkipReason::IdentityMismatch),
                Some(p) if p.is_gone() => Some(SkipReason::Gone),
                Some(_) => None,
            }
        };
        match reason {
            Some(reason) => skipped.push(Skipped {
                entry: entry.clone(),
                reason,
            }),
            None => live.push(entry.clone()),
        }
    }
    (live, skipped)
}

/// What a real clean would signal: one scan, no side effect.
fn would_clean(
    table: &dyn ProcTable,
    scope: &Scope,
    leaves: &[CgroupLeaf],
) -> Result<Vec<CleanedProcess>, ProcTrackError> {
    let snapshot = table.snapshot()?;
    let members: Vec<i32> = leaves.iter().flat_map(CgroupLeaf::members).collect();
    let found: Vec<Found> = discover(
        &snapshot,
        &members,
        scope,
        &|pid| table.environ(pid),
        table.self_pid(),
        table.self_pgid(),
    );
    Ok(found
        .into_iter()
        .map(|f| CleanedProcess {
            pid: f.info.pid,
            start_ticks: f.info.start_ticks,
            comm: f.info.comm,
            source: f.source,
            outcome: None,
        })
        .collect())
}

/// One run directory, as `hyoka ps` and `hyoka clean` see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunListing {
    /// The run id.
    pub run_id: String,
    /// The run directory.
    pub run_dir: PathBuf,
    /// Live, abandoned or without lock.
    pub state: LockState,
    /// The ledger (empty when it is missing), with its problems.
    pub ledger: Ledger,
    /// Ledger lines that were refused.
    pub problems: Vec<LedgerProblem>,
    /// The eval ids named anywhere in the ledger, sorted.
    pub evals: Vec<String>,
    /// The tracked processes with whether each is still running with its recorded identity.
    pub processes: Vec<ListedProcess>,
}

/// One tracked process in a [`RunListing`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListedProcess {
    /// The ledger entry.
    pub entry: LedgerEntry,
    /// Whether the pid still runs with the recorded start time.
    pub alive: bool,
}

/// Lists every run directory under `reports_dir` that has an owner lock or a ledger, without
/// side effects (the lock is probed with a shared lock released at once).
///
/// # Errors
/// [`ProcTrackError::Io`] when `reports_dir` cannot be read (a missing directory is empty).
pub fn list_runs(reports_dir: &Path) -> Result<Vec<RunListing>, ProcTrackError> {
    list_runs_with(reports_dir, &NativeProcTable::new())
}

/// [`list_runs`] against an explicit process table.
///
/// # Errors
/// As [`list_runs`].
pub fn list_runs_with(
    reports_dir: &Path,
    table: &dyn ProcTable,
) -> Result<Vec<RunListing>, ProcTrackError> {
    let entries = match std::fs::read_dir(reports_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ProcTrackError::io("read", reports_dir, e)),
    };
    let mut runs = Vec::new();
    for entry in entries.flatten() {
        let run_dir = entry.path();
        let Some(run_id) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if validate_id("run", &run_id).is_err() || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let state = OwnerLock::probe(&run_dir.join(LOCK_FILE))?;
        let parsed = match Ledger::read(&run_dir.join(LEDGER_FILE), table.self_pid()) {
            Ok(parsed) => parsed,
            Err(_) if state == LockState::Missing => continue,
            Err(_) => crate::ledger::ParsedLedger::default(),
        };
        let mut evals: Vec<String> = parsed
            .ledger
            .workspaces
            .iter()
            .chain(&parsed.ledger.cgroups)
            .map(|e| e.eval_id.clone())
            .chain(parsed.ledger.entries.iter().map(|e| e.eval_id.clone()))
            .collect();
        evals.sort();
        evals.dedup();
        let processes = parsed
            .ledger
            .entries
            .iter()
            .map(|e| ListedProcess {
                entry: e.clone(),
                alive: table
                    .process(e.pid)
                    .is_some_and(|p| p.start_ticks == e.start_ticks && !p.is_gone()),
            })
            .collect();
        runs.push(RunListing {
            run_id,
            run_dir,
            state,
            ledger: parsed.ledger,
            problems: parsed.problems,
            evals,
            processes,
        });
    }
    runs.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    Ok(runs)
}

/// The live runs under `reports_dir` (owner lock held), for `hyoka ps`.
///
/// # Errors
/// As [`list_runs`].
pub fn live_runs(reports_dir: &Path) -> Result<Vec<RunListing>, ProcTrackError> {
    Ok(list_runs(reports_dir)?
        .into_iter()
        .filter(|r| r.state == LockState::Live)
        .collect())
}

#[cfg(test)]
mod tests;
