//! The library side of `hyoka clean` and `hyoka ps`: sweep abandoned runs, list live ones,
//! and read nothing that failed the checks of `trust`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::ProcTrackError;
use crate::cgroup::{CgroupLeaf, CgroupMounts};
use crate::clock::{Clock, SystemClock, unix_now};
use crate::discover::{Found, Marker, Scope, discover};
use crate::identity::{ProcInfo, validate_id};
use crate::instance::Instance;
use crate::ledger::{EvalPath, Ledger, LedgerEntry, LedgerProblem};
use crate::lock::LockState;
use crate::proc_table::{NativeProcTable, ProcTable};
use crate::signal::{NativeSignaller, Signaller};
use crate::teardown::{ProcessFate, ProcessReport, Seams, TeardownOptions, teardown};
use crate::trust::{Authority, RunDir};

/// What [`clean_run`] may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanOptions {
    /// SIGTERM→SIGKILL grace period (`--grace`). A period too long for the clock means
    /// waiting as long as it takes.
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
    /// The process started before the run's owner did, so it cannot be the run's.
    BeforeRun,
    /// The process belongs to a user other than the run directory's owner, whose power is
    /// all `clean` acts with.
    OtherUser,
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
    /// The eval id and path from the `# cgroup` (or `# cgroup-v1`) header.
    pub leaf: EvalPath,
    /// Whether it is a cgroup v1 leaf (of a resource limit on a hybrid host).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub v1: bool,
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
    /// Why the run directory, its lock or its ledger was refused as evidence (see
    /// [`ProcTrackError::Untrusted`]): then nothing in it was read, acted on or reported.
    pub refused: Option<String>,
    /// The user whose power `clean` acted with: the run directory's owner.
    pub authority: Option<Authority>,
    /// The run instance from the ledger (`None` for a ledger written before instances).
    pub instance: Option<Instance>,
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
    /// The workspaces from the `# workspace` headers, for the caller to remove (with
    /// `hyoka-workspace`'s checks, as [`CleanReport::authority`]).
    pub workspaces: Vec<EvalPath>,
    /// The workspaces the ledger records as kept for the user (`# kept`): the caller leaves
    /// them alone whatever their markers say.
    pub kept: Vec<EvalPath>,
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
            refused: None,
            authority: None,
            instance: None,
            dry_run,
            already_cleaned: false,
            found: Vec::new(),
            skipped: Vec::new(),
            problems: Vec::new(),
            cgroups: Vec::new(),
            workspaces: Vec::new(),
            kept: Vec::new(),
            killed: 0,
            survivors: 0,
            marked_cleaned: false,
        }
    }

    /// A run whose directory, lock or ledger failed the checks: nothing else is reported.
    fn refused(run_dir: &Path, run_id: &str, dry_run: bool, error: &ProcTrackError) -> Self {
        let mut report = Self::new(run_dir, run_id, LockState::Missing, dry_run);
        report.refused = Some(error.to_string());
        report
    }

    /// Whether nothing that should be gone remains (the CLI's exit status 0). A live run
    /// counts as fine: it is not `clean`'s to touch. A refused run does not: what it names
    /// could not be checked.
    pub fn is_clean(&self) -> bool {
        if self.refused.is_some() {
            return false;
        }
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
/// The directory, its `owner.lock` and its `pids.txt` are first checked as evidence (see
/// [`ProcTrackError::Untrusted`]): a link, a special file, a file others may write or one too
/// large makes the run *refused*, reported with the reason only. A run whose lock is held
/// (live) or missing is reported and never touched.
///
/// Otherwise, with the lock held for the duration and with the directory owner's power only
/// (see [`Authority::run`]): every ledger entry whose identity still matches a running
/// process of that user, every member of a recorded cgroup leaf of this run instance, and
/// every process carrying the instance's marker (`HYOKA_RUN_INSTANCE`, never `HYOKA_RUN_ID`
/// alone), plus their descendants and the groups they lead, are torn down (SIGTERM, grace,
/// SIGKILL rounds, each signal identity-verified); nothing that started before the run's
/// owner is ever attributed. The leaves are killed and removed, and when nothing survived the
/// ledger is marked `# cleaned` (rewritten in place, keeping its owner and mode). Entries
/// naming a stranger (same pid, other start time, other user, older than the run), entries
/// from another boot and hostile lines are reported, never acted on. The workspaces from the
/// ledger are returned for the caller to remove.
///
/// With `dry_run`, nothing is signalled, written or removed; the report says what would be.
///
/// Blocking (it waits out the grace period): from async code use `spawn_blocking`.
///
/// # Errors
/// [`ProcTrackError::InvalidId`] when the directory name is not a run id,
/// [`ProcTrackError::Io`] when the directory, lock or ledger cannot be read,
/// [`ProcTrackError::Task`] when acting as the directory's owner is impossible.
pub fn clean_run(run_dir: &Path, options: &CleanOptions) -> Result<CleanReport, ProcTrackError> {
    let (table, signaller) = (NativeProcTable::new(), NativeSignaller::new());
    clean_run_with(
        run_dir,
        options,
        &table,
        &signaller,
        &SystemClock,
        &CgroupMounts::detect(),
    )
}

/// Cleans every abandoned run under `reports_dir` (see [`clean_run`]), and reports the runs
/// that were refused as evidence; live runs and directories without a lock are left out.
///
/// # Errors
/// As [`list_runs`] and [`clean_run`].
pub fn clean_runs(
    reports_dir: &Path,
    options: &CleanOptions,
) -> Result<Vec<CleanReport>, ProcTrackError> {
    let mut reports = Vec::new();
    for listing in list_runs(reports_dir)? {
        if listing.state == LockState::Abandoned || listing.refused.is_some() {
            reports.push(clean_run(&listing.run_dir, options)?);
        }
    }
    Ok(reports)
}

/// [`clean_run`] against explicit seams (fakes in tests) and cgroup mounts.
///
/// # Errors
/// As [`clean_run`].
#[expect(
    clippy::too_many_lines,
    reason = "one linear sequence: check, lock, read, classify, signal, remove, mark"
)]
pub fn clean_run_with(
    run_dir: &Path,
    options: &CleanOptions,
    table: &dyn ProcTable,
    signaller: &dyn Signaller,
    clock: &dyn Clock,
    mounts: &CgroupMounts,
) -> Result<CleanReport, ProcTrackError> {
    let run_id = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    validate_id("run", &run_id)?;
    let refuse = |e: &ProcTrackError| CleanReport::refused(run_dir, &run_id, options.dry_run, e);
    let untouched = |state| Ok(CleanReport::new(run_dir, &run_id, state, options.dry_run));
    let dir = match RunDir::open(run_dir) {
        Ok(dir) => dir,
        Err(e @ ProcTrackError::Untrusted { .. }) => return Ok(refuse(&e)),
        Err(e) => return Err(e),
    };
    let lock = match dir.lock() {
        Ok(Some(lock)) => lock,
        Ok(None) => return untouched(LockState::Missing),
        Err(ProcTrackError::RunLive { .. }) => return untouched(LockState::Live),
        Err(e @ ProcTrackError::Untrusted { .. }) => return Ok(refuse(&e)),
        Err(e) => return Err(e),
    };
    let mut report = CleanReport::new(run_dir, &run_id, LockState::Abandoned, options.dry_run);
    let authority = dir.authority();
    report.authority = Some(authority);
    let parsed = match dir.read_ledger(table.self_pid()) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return Ok(report),
        Err(e @ ProcTrackError::Untrusted { .. }) => return Ok(refuse(&e)),
        Err(e) => return Err(e),
    };
    let mut ledger = parsed.ledger;
    report.problems = parsed.problems;
    report.already_cleaned = ledger.cleaned.is_some();
    report.instance.clone_from(&ledger.instance);
    report.workspaces.clone_from(&ledger.workspaces);
    report.kept.clone_from(&ledger.kept);
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
    let since = ledger.owner.as_ref().map_or(0, |o| o.proc_ref.start_ticks);
    let user = authority.user_filter();
    let snapshot = table.snapshot()?;
    let (live_entries, skipped) = classify(
        std::mem::take(&mut ledger.entries),
        &snapshot,
        table,
        other_boot,
        since,
        user,
    );
    report.skipped = skipped;

    let instance = ledger.instance.clone();
    let recorded: Vec<(&EvalPath, bool)> = ledger
        .cgroups
        .iter()
        .map(|c| (c, false))
        .chain(ledger.cgroups_v1.iter().map(|c| (c, true)))
        .collect();
    // In the order of `recorded`, so `finish` pairs each found leaf with its record.
    let leaves: Vec<CgroupLeaf> = if other_boot {
        Vec::new()
    } else {
        recorded
            .iter()
            .filter_map(|(c, v1)| open_leaf(c, *v1, &run_id, instance.as_ref(), mounts, user))
            .collect()
    };
    report.cgroups = recorded
        .iter()
        .map(|(c, v1)| CgroupCleanup {
            leaf: (*c).clone(),
            v1: *v1,
            found: leaves.iter().any(|l| l.path() == c.path),
            removed: false,
        })
        .collect();
    // Without an instance (an older ledger) there is no marker that only this run's
    // processes carry: `HYOKA_RUN_ID` alone may be anyone's.
    let marker = instance
        .as_ref()
        .filter(|_| !other_boot)
        .map(|i| Marker::instance(i).since(since));
    let scope = Scope {
        known: live_entries,
        marker,
        since,
        user,
        ..Scope::default()
    };

    if options.dry_run {
        report.found = would_clean(table, &snapshot, &scope, &leaves);
        drop(lock);
        return Ok(report);
    }

    let seams = Seams {
        table,
        signaller,
        clock,
    };
    let teardown_options = TeardownOptions {
        grace: options.grace,
        kill_timeout: options.kill_timeout,
        ..TeardownOptions::default()
    };
    let report = authority.run(|| {
        let torn = teardown(seams, &scope, &leaves, &teardown_options);
        report.found = torn
            .processes
            .iter()
            .filter(|p| p.outcome != ProcessFate::Exited)
            .map(CleanedProcess::from)
            .collect();
        report.killed = torn.processes_killed;
        report.survivors = torn.survivors;
        for cleanup in report.cgroups.iter().filter(|c| !c.found && !other_boot) {
            let mount = if cleanup.v1 {
                mounts.v1_containing(&cleanup.leaf.path)
            } else {
                mounts.v2.as_deref()
            };
            if let Some(mount) = mount {
                crate::cgroup::remove_empty_run_dir(
                    &cleanup.leaf.path,
                    &run_id,
                    instance.as_ref(),
                    mount,
                );
            }
        }
        finish(&mut report, &mut ledger, &leaves, clock, &dir, options).map(|()| report)
    })??;
    drop(lock);
    Ok(report)
}

/// Removes the leaves and, when nothing survived, marks the ledger cleaned.
fn finish(
    report: &mut CleanReport,
    ledger: &mut Ledger,
    leaves: &[CgroupLeaf],
    clock: &dyn Clock,
    dir: &RunDir,
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
        let left = |c: &EvalPath| {
            report
                .cgroups
                .iter()
                .any(|r| r.leaf.path == c.path && !r.removed)
        };
        ledger.cgroups.retain(left);
        ledger.cgroups_v1.retain(left);
        dir.write_ledger(&ledger.render())?;
        report.marked_cleaned = true;
    }
    Ok(())
}

/// A recorded leaf, if it still exists and looks like ours (with `owner`, that user's): in
/// the cgroup2 mount, or (`v1`) in a cgroup v1 hierarchy.
fn open_leaf(
    recorded: &EvalPath,
    v1: bool,
    run_id: &str,
    instance: Option<&Instance>,
    mounts: &CgroupMounts,
    owner: Option<u32>,
) -> Option<CgroupLeaf> {
    if v1 {
        CgroupLeaf::open_recorded_v1(&recorded.path, run_id, instance, mounts, owner)
    } else {
        let mount = mounts.v2.as_deref()?;
        CgroupLeaf::open_recorded(&recorded.path, run_id, instance, mount, owner)
    }
}

/// Splits ledger entries into those still running with their identity (and, with `user`,
/// belonging to that user), and the rest. One pass over the snapshot, whatever the size of
/// the ledger.
fn classify(
    entries: Vec<LedgerEntry>,
    snapshot: &[ProcInfo],
    table: &dyn ProcTable,
    other_boot: bool,
    since: u64,
    user: Option<u32>,
) -> (Vec<LedgerEntry>, Vec<Skipped>) {
    let by_pid: BTreeMap<i32, &ProcInfo> = snapshot.iter().map(|p| (p.pid, p)).collect();
    let mut live = Vec::new();
    let mut skipped = Vec::new();
    for entry in entries {
        let reason = if other_boot {
            Some(SkipReason::OtherBoot)
        } else {
            match by_pid.get(&entry.pid) {
                None => Some(SkipReason::Gone),
                Some(p) if p.start_ticks != entry.start_ticks => Some(SkipReason::IdentityMismatch),
                Some(p) if p.is_gone() => Some(SkipReason::Gone),
                Some(p) if p.start_ticks < since => Some(SkipReason::BeforeRun),
                Some(p)
                    if user.is_some_and(|uid| {
                        !table.uids(p.pid).is_some_and(|u| u.signalable_by(uid))
                    }) =>
                {
                    Some(SkipReason::OtherUser)
                }
                Some(_) => None,
            }
        };
        match reason {
            Some(reason) => skipped.push(Skipped { entry, reason }),
            None => live.push(entry),
        }
    }
    (live, skipped)
}

/// What a real clean would signal: one scan, no side effect.
fn would_clean(
    table: &dyn ProcTable,
    snapshot: &[ProcInfo],
    scope: &Scope,
    leaves: &[CgroupLeaf],
) -> Vec<CleanedProcess> {
    let members: Vec<i32> = leaves.iter().flat_map(CgroupLeaf::members).collect();
    let found: Vec<Found> = discover(snapshot, &members, scope, table);
    found
        .into_iter()
        .map(|f| CleanedProcess {
            pid: f.info.pid,
            start_ticks: f.info.start_ticks,
            comm: f.info.comm,
            source: f.source,
            outcome: None,
        })
        .collect()
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
    /// Why the directory, its lock or its ledger was refused as evidence; nothing was read
    /// from a refused run.
    pub refused: Option<String>,
    /// The ledger of a live run, or of an abandoned run not yet marked cleaned (read
    /// bounded, through the checks of [`clean_run`]); empty for other runs.
    pub ledger: Ledger,
    /// Whether the ledger is marked cleaned (the run ended, or `clean` repaired it).
    pub cleaned: bool,
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
    /// Its command name now, while it runs with the recorded identity: the ledger's
    /// `comm` is what it was when it was recorded (a shell that `exec`s is another
    /// program now).
    pub comm_now: Option<String>,
}

/// Lists every run directory under `reports_dir` that has an owner lock or a ledger, without
/// side effects (the lock is probed with a shared lock released at once). Only the ledgers
/// of live runs and of abandoned runs are read (bounded, through the checks of
/// [`clean_run`]); the tracked processes of a ledger not marked cleaned are listed, so an
/// abandoned run whose processes still run (a shim tearing its tree down after its owner
/// was killed) shows. A run that fails those checks is listed with the reason it was
/// refused.
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
        if validate_id("run", &run_id).is_err() {
            continue;
        }
        let mut listing = RunListing {
            run_id,
            run_dir,
            state: LockState::Missing,
            refused: None,
            ledger: Ledger::default(),
            cleaned: false,
            problems: Vec::new(),
            evals: Vec::new(),
            processes: Vec::new(),
        };
        match list_one(&mut listing, table) {
            Ok(true) => runs.push(listing),
            Ok(false) => {}
            Err(e @ ProcTrackError::Untrusted { .. }) => {
                listing.refused = Some(e.to_string());
                runs.push(listing);
            }
            Err(e) => return Err(e),
        }
    }
    runs.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    Ok(runs)
}

/// Fills in one listing; `Ok(false)` when the directory is not a run (no lock, no ledger).
fn list_one(listing: &mut RunListing, table: &dyn ProcTable) -> Result<bool, ProcTrackError> {
    let dir = match RunDir::open(&listing.run_dir) {
        Ok(dir) => dir,
        // A plain file or a link among the runs: refused only if it looks like one.
        Err(e @ ProcTrackError::Untrusted { .. }) => {
            return if listing.run_dir.join(crate::LOCK_FILE).exists()
                || listing.run_dir.join(crate::LEDGER_FILE).exists()
            {
                Err(e)
            } else {
                Ok(false)
            };
        }
        Err(e) => return Err(e),
    };
    listing.state = dir.probe()?;
    if listing.state == LockState::Missing {
        return Ok(dir.path().join(crate::LEDGER_FILE).exists());
    }
    let Some(parsed) = dir.read_ledger(table.self_pid())? else {
        return Ok(true);
    };
    if parsed.ledger.cleaned.is_some() {
        listing.cleaned = true;
        if listing.state == LockState::Abandoned {
            return Ok(true);
        }
    }
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
    listing.evals = evals;
    listing.processes = parsed
        .ledger
        .entries
        .iter()
        .map(|e| {
            let now = table
                .process(e.pid)
                .filter(|p| p.start_ticks == e.start_ticks && !p.is_gone());
            ListedProcess {
                entry: e.clone(),
                alive: now.is_some(),
                comm_now: now.map(|p| p.comm),
            }
        })
        .collect();
    listing.ledger = parsed.ledger;
    listing.problems = parsed.problems;
    if listing.state == LockState::Live {
        // A live owner appends to its ledger: the last line may be read half written.
        listing.problems.retain(|p| p.reason != crate::ledger::TORN);
    }
    Ok(true)
}

/// The live runs under `reports_dir` (owner lock held).
///
/// # Errors
/// As [`list_runs`].
pub fn live_runs(reports_dir: &Path) -> Result<Vec<RunListing>, ProcTrackError> {
    Ok(list_runs(reports_dir)?
        .into_iter()
        .filter(|r| r.state == LockState::Live && r.refused.is_none())
        .collect())
}

#[cfg(test)]
mod tests;
