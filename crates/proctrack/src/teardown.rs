//! Teardown: SIGTERM every verified process and group, wait for the grace period, SIGKILL what
//! remains round after round until a scan finds nothing, and report per process.
//!
//! The engine is blocking and reads the world only through [`ProcTable`], [`Signaller`] and
//! [`Clock`], so its decisions are tested against `FakeSystem` without real processes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::caps::Layer;
use crate::cgroup::CgroupLeaf;
use crate::clock::{Clock, deadline};
use crate::discover::{Found, Scope, Source, discover};
use crate::identity::{ProcInfo, ProcRef};
use crate::proc_table::ProcTable;
use crate::signal::{Delivery, Signal, Signaller};

/// How long teardown may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeardownOptions {
    /// Time between SIGTERM and SIGKILL (`--grace`). Zero sends SIGKILL at once.
    pub grace: Duration,
    /// Extra time after the grace period for SIGKILL rounds; after it teardown gives up and
    /// reports survivors. Teardown never takes longer than `grace + kill_timeout` plus one
    /// scan and the shim's stop.
    pub kill_timeout: Duration,
    /// Cuts the grace period short when triggered (the CLI's second Ctrl-C).
    pub escalation: Escalation,
}

impl Default for TeardownOptions {
    fn default() -> Self {
        Self {
            grace: Duration::from_secs(5),
            kill_timeout: Duration::from_secs(5),
            escalation: Escalation::new(),
        }
    }
}

impl TeardownOptions {
    /// `grace` with the default kill timeout and a fresh escalation switch.
    pub fn with_grace(grace: Duration) -> Self {
        Self {
            grace,
            ..Self::default()
        }
    }
}

/// A shared switch that makes a running teardown skip the rest of its grace period and send
/// SIGKILL at once. Clones share the switch.
///
/// ```
/// use hyoka_proctrack::{Escalation, TeardownOptions};
/// let options = TeardownOptions::default();
/// let switch: Escalation = options.escalation.clone();
/// // On a second SIGINT, from any thread or task:
/// switch.escalate();
/// assert!(options.escalation.is_escalated());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Escalation(Arc<AtomicBool>);

impl Escalation {
    /// A switch that is not triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Triggers the switch: SIGKILL now.
    pub fn escalate(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the switch was triggered.
    pub fn is_escalated(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl PartialEq for Escalation {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Escalation {}

/// What became of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessFate {
    /// It had exited on its own before teardown signalled anything.
    Exited,
    /// It exited after SIGTERM, within the grace period.
    Terminated,
    /// It needed SIGKILL (or `cgroup.kill`).
    Killed,
    /// It disappeared between being seen and being signalled, or its pid now names another
    /// process: the recorded process is gone, but not by our hand.
    Vanished,
    /// It is still running (a survivor), or signalling it failed.
    Failed,
}

/// One process in a [`TeardownReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessReport {
    /// The process id.
    pub pid: i32,
    /// Its start ticks.
    pub start_ticks: u64,
    /// Its process group when last seen.
    pub pgid: i32,
    /// Its command name when last seen.
    pub comm: String,
    /// Why it was attributed to the run.
    pub source: Source,
    /// What became of it.
    pub outcome: ProcessFate,
    /// The errno of the last failed signal, if any.
    pub errno: Option<i32>,
}

/// What a teardown did. The totals map to `report.json` `cleanup`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TeardownReport {
    /// Every process attributed to the run, with its outcome (the shim excluded).
    pub processes: Vec<ProcessReport>,
    /// `processes.len()`.
    pub processes_seen: usize,
    /// Processes that stopped because of our signals (`terminated` + `killed`).
    pub processes_killed: usize,
    /// Processes still running at the end (`failed`).
    pub survivors: usize,
    /// Whether `cgroup.kill` (or freeze and kill) was used.
    pub cgroup_killed: bool,
    /// SIGKILL rounds needed (0 when everything left during the grace period).
    pub kill_rounds: u32,
    /// Whether the kill timeout ran out with processes still found.
    pub timed_out: bool,
    /// What became of the subreaper shim, when there was one and it was still running.
    pub shim: Option<ProcessFate>,
    /// Containment layers that were lost before teardown (see [`Layer`]); filled in by
    /// [`Agent::teardown`](crate::Agent::teardown).
    pub layers_lost: Vec<Layer>,
    /// When set, `survivors` is not proof that nothing survived: no final scan could cover
    /// the tree (a layer was lost and nothing that remained could see what it contained),
    /// and this says why. Filled in by [`Agent::teardown`](crate::Agent::teardown).
    pub survivors_unknown: Option<String>,
    /// How long teardown took.
    #[serde(serialize_with = "millis")]
    pub elapsed: Duration,
    /// Whether the tree was proven gone without a scan of `/proc` (the shim had reaped its
    /// last child, the leaf was empty, no young process carried the marker), so nothing
    /// was signalled. Filled in by [`Agent::teardown`](crate::Agent::teardown).
    #[serde(skip)]
    pub settled: bool,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(d.as_millis())
}

impl TeardownReport {
    pub(crate) fn finish(&mut self) {
        self.processes_seen = self.processes.len();
        self.processes_killed = self
            .processes
            .iter()
            .filter(|p| matches!(p.outcome, ProcessFate::Terminated | ProcessFate::Killed))
            .count();
        self.survivors = self
            .processes
            .iter()
            .filter(|p| p.outcome == ProcessFate::Failed)
            .count();
    }
}

/// The OS seams teardown runs against.
#[derive(Clone, Copy)]
pub struct Seams<'a> {
    /// The process table.
    pub table: &'a dyn ProcTable,
    /// The signaller.
    pub signaller: &'a dyn Signaller,
    /// The clock.
    pub clock: &'a dyn Clock,
}

struct Record {
    info: ProcInfo,
    source: Source,
    term: bool,
    kill: bool,
    outcome: Option<ProcessFate>,
    errno: Option<i32>,
}

impl Record {
    /// The process is gone: by our SIGKILL, our SIGTERM, or on its own. A first outcome
    /// stays.
    fn settle(&mut self) {
        self.outcome.get_or_insert(if self.kill {
            ProcessFate::Killed
        } else if self.term {
            ProcessFate::Terminated
        } else {
            ProcessFate::Vanished
        });
    }
}

struct Engine<'a> {
    seams: Seams<'a>,
    scope: &'a Scope,
    cgroups: &'a [CgroupLeaf],
    seen: BTreeMap<ProcRef, Record>,
    self_pgid: i32,
}

impl Engine<'_> {
    fn scan(&self) -> Vec<Found> {
        let Ok(snapshot) = self.seams.table.snapshot() else {
            return Vec::new();
        };
        let members: Vec<i32> = self.cgroups.iter().flat_map(CgroupLeaf::members).collect();
        // Everything attributed earlier keeps its descendants attributed, even after it was
        // re-parented out of the roots' tree.
        let mut scope = self.scope.clone();
        scope.known.extend(
            self.seen
                .values()
                .filter(|r| r.outcome.is_none())
                .map(|r| crate::ledger::LedgerEntry::from_info(&r.info, "")),
        );
        discover(&snapshot, &members, &scope, self.seams.table)
    }

    fn alive(&self, r: ProcRef) -> bool {
        self.seams
            .table
            .process(r.pid)
            .is_some_and(|p| p.start_ticks == r.start_ticks && !p.is_gone())
    }

    fn note(&mut self, found: &[Found]) {
        for f in found {
            let record = self
                .seen
                .entry(f.info.proc_ref())
                .or_insert_with(|| Record {
                    info: f.info.clone(),
                    source: f.source,
                    term: false,
                    kill: false,
                    outcome: None,
                    errno: None,
                });
            record.info = f.info.clone();
            record.outcome = None;
        }
    }

    /// Signals each process group of the found processes once, then every found process not
    /// covered by a delivered group signal.
    ///
    /// A group is signalled through its leader when the leader was found, else through a
    /// member attributed by containment or ancestry (cgroup, root, descendant, group, an
    /// adopted orphan): such a member's group lies in a session our agent's tree created, so
    /// every member is ours. A process found only by its marker (or only from a ledger) never
    /// lends its group, since it may sit in a stranger's group. With [`Scope::user`] no group
    /// is signalled at all.
    fn signal_all(&mut self, found: &[Found], signal: Signal) {
        let mut found: Vec<&Found> = found.iter().collect();
        // Parents first, so a parent that restarts its children dies before it can react.
        found.sort_by_key(|f| f.depth);
        let mut via: BTreeMap<i32, &Found> = BTreeMap::new();
        for f in &found {
            let p = &f.info;
            let leader = p.pid == p.pgid;
            let strong = matches!(
                f.source,
                Source::Cgroup | Source::Root | Source::Descendant | Source::Group | Source::Orphan
            );
            // Acting with another user's power only, a group signal would reach every member
            // whoever it belongs to: each process is signalled (and checked) on its own.
            let restricted = self.scope.user.is_some();
            if restricted || p.pgid <= 1 || p.pgid == self.self_pgid || !(leader || strong) {
                continue;
            }
            let slot = via.entry(p.pgid).or_insert(f);
            if leader {
                *slot = f;
            }
        }
        let mut covered: BTreeSet<i32> = BTreeSet::new();
        for (pgid, member) in via {
            if self
                .seams
                .signaller
                .signal_group(member.info.proc_ref(), pgid, signal)
                == Delivery::Sent
            {
                covered.insert(pgid);
            }
        }
        for f in found {
            let r = f.info.proc_ref();
            let delivery = if covered.contains(&f.info.pgid) {
                Delivery::Sent
            } else {
                self.seams.signaller.signal(r, signal)
            };
            let Some(record) = self.seen.get_mut(&r) else {
                continue;
            };
            match delivery {
                Delivery::Sent => match signal {
                    Signal::Term => record.term = true,
                    Signal::Kill => record.kill = true,
                },
                Delivery::Gone | Delivery::Mismatch => {
                    // Gone between the scan and this signal: by our earlier signal (or the
                    // cgroup kill just issued), or on its own.
                    record.settle();
                }
                Delivery::Refused(_) => record.errno = Some(libc::EPERM),
                Delivery::Failed(errno) => record.errno = Some(errno),
            }
        }
    }

    /// Polls the pending processes until all are gone or `deadline` passes (or, when
    /// `escalation` is given, until it is triggered).
    ///
    /// The poll interval starts at 1 ms and doubles up to 5 ms: while something lives a poll
    /// costs one `/proc/<pid>/stat` read, and a coarser interval (it was 50 ms) added up to
    /// half the kernel's own exit time to a 1,000-process teardown.
    fn wait_gone(&mut self, deadline: Option<Instant>, escalation: Option<&Escalation>) {
        let mut interval = Duration::from_millis(1);
        loop {
            let pending: Vec<ProcRef> = self
                .seen
                .iter()
                .filter(|(_, r)| r.outcome.is_none())
                .map(|(k, _)| *k)
                .collect();
            let mut all_gone = true;
            for r in pending {
                if self.alive(r) {
                    // One live process is enough to know we must keep waiting.
                    all_gone = false;
                    break;
                }
                self.settle(r);
            }
            let now = self.seams.clock.now();
            let expired = deadline.is_some_and(|d| now >= d);
            if all_gone || expired || escalation.is_some_and(Escalation::is_escalated) {
                return;
            }
            let left = deadline.map_or(interval, |d| d.saturating_duration_since(now));
            self.seams.clock.sleep(interval.min(left));
            interval = (interval * 2).min(Duration::from_millis(5));
        }
    }

    fn settle(&mut self, r: ProcRef) {
        if let Some(record) = self.seen.get_mut(&r) {
            record.settle();
        }
    }

    fn run(mut self, options: &TeardownOptions) -> TeardownReport {
        let clock = self.seams.clock;
        let start = clock.now();
        // A period too long for the clock never ends (`deadline` is `None`): the caller asked
        // to wait that long.
        let grace_deadline = deadline(start, options.grace);
        let hard_deadline = grace_deadline.and_then(|g| deadline(g, options.kill_timeout));
        let mut report = TeardownReport::default();

        for entry in &self.scope.known {
            if !self.alive(entry.proc_ref()) {
                self.seen.entry(entry.proc_ref()).or_insert(Record {
                    info: ProcInfo {
                        pid: entry.pid,
                        ppid: 0,
                        pgid: entry.pgid,
                        sid: 0,
                        start_ticks: entry.start_ticks,
                        state: 'X',
                        comm: entry.comm.clone(),
                        cpu_ticks: 0,
                    },
                    source: Source::Tracked,
                    term: false,
                    kill: false,
                    outcome: Some(ProcessFate::Exited),
                    errno: None,
                });
            }
        }

        let found = self.scan();
        self.note(&found);
        // Without a SIGTERM round, nothing changed that a second scan would see: the first
        // scan is the first kill round's (for a tree that is already gone, the one scan of
        // the whole teardown).
        let mut unchanged = Some(found);
        if !options.grace.is_zero()
            && unchanged.as_ref().is_some_and(|f| !f.is_empty())
            && !options.escalation.is_escalated()
        {
            let found = unchanged.take().unwrap_or_default();
            self.signal_all(&found, Signal::Term);
            self.wait_gone(grace_deadline, Some(&options.escalation));
        }

        loop {
            let found = match unchanged.take() {
                Some(found) => found,
                None => self.rescan(),
            };
            if found.is_empty() {
                break;
            }
            if hard_deadline.is_some_and(|d| clock.now() >= d) {
                report.timed_out = true;
                break;
            }
            report.kill_rounds += 1;
            for leaf in self.cgroups {
                report.cgroup_killed |= leaf.kill();
            }
            if !self.cgroups.is_empty() {
                for f in &found {
                    if let Some(record) = self.seen.get_mut(&f.info.proc_ref())
                        && f.source == Source::Cgroup
                    {
                        record.kill = true;
                    }
                }
            }
            self.signal_all(&found, Signal::Kill);
            let round_deadline =
                match (deadline(clock.now(), Duration::from_secs(1)), hard_deadline) {
                    (Some(round), Some(hard)) => Some(round.min(hard)),
                    (round, hard) => round.or(hard),
                };
            self.wait_gone(round_deadline, None);
        }

        if let Some(shim) = self.scope.exclude.first().copied() {
            report.shim = self.stop_shim(shim);
        }

        for r in self.pending() {
            if self.alive(r) {
                if let Some(record) = self.seen.get_mut(&r) {
                    record.outcome = Some(ProcessFate::Failed);
                }
            } else {
                self.settle(r);
            }
        }
        report.processes = self
            .seen
            .into_values()
            .map(|r| ProcessReport {
                pid: r.info.pid,
                start_ticks: r.info.start_ticks,
                pgid: r.info.pgid,
                comm: r.info.comm,
                source: r.source,
                outcome: r.outcome.unwrap_or(ProcessFate::Failed),
                errno: r.errno,
            })
            .collect();
        report.finish();
        report.elapsed = clock.now().saturating_duration_since(start);
        report
    }

    /// A scan plus every process seen earlier that still runs with its identity: once
    /// attributed, a process stays ours even if it leaves the scope (re-parented to init when
    /// there is no shim). Pending processes that are gone are settled.
    fn rescan(&mut self) -> Vec<Found> {
        let mut found = self.scan();
        self.note(&found);
        for r in self.pending() {
            if found.iter().any(|f| f.info.proc_ref() == r) {
                continue;
            }
            match self.seams.table.process(r.pid) {
                Some(info) if info.start_ticks == r.start_ticks && !info.is_gone() => {
                    let source = self.seen.get(&r).map_or(Source::Tracked, |rec| rec.source);
                    found.push(Found {
                        info,
                        source,
                        depth: 0,
                    });
                }
                _ => self.settle(r),
            }
        }
        found
    }

    fn pending(&self) -> Vec<ProcRef> {
        self.seen
            .iter()
            .filter(|(_, r)| r.outcome.is_none())
            .map(|(k, _)| *k)
            .collect()
    }

    /// Stops the shim once its tree is gone: SIGTERM (it then has nothing left to reap and
    /// exits), a short wait, SIGKILL.
    fn stop_shim(&self, shim: ProcRef) -> Option<ProcessFate> {
        if !self.alive(shim) {
            return None;
        }
        let clock = self.seams.clock;
        // The shim has nothing left to do, so it gets at most a second per step, even when
        // the kill timeout has already run out.
        let wait = || {
            let until = deadline(clock.now(), Duration::from_secs(1));
            let mut interval = Duration::from_millis(1);
            while self.alive(shim) {
                let now = clock.now();
                if until.is_some_and(|u| now >= u) {
                    return false;
                }
                let left = until.map_or(interval, |u| u.saturating_duration_since(now));
                clock.sleep(interval.min(left));
                interval = (interval * 2).min(Duration::from_millis(20));
            }
            true
        };
        if self.seams.signaller.signal(shim, Signal::Term) == Delivery::Sent && wait() {
            return Some(ProcessFate::Terminated);
        }
        if !self.alive(shim) {
            return Some(ProcessFate::Exited);
        }
        self.seams.signaller.signal(shim, Signal::Kill);
        Some(if wait() {
            ProcessFate::Killed
        } else {
            ProcessFate::Failed
        })
    }
}

/// Tears down everything `scope` (and the `cgroups` leaves) attribute to a run.
///
/// Bounded: at most `grace + kill_timeout`, one scan, and 2 s to stop the shim.
/// Blocking: it sleeps between polls. From async code run it in
/// `tokio::task::spawn_blocking` (the `Agent` methods do).
///
/// 1. Every tracked process that is already gone is reported [`ProcessFate::Exited`].
/// 2. A scan finds the run's processes; each process group led by one of them is signalled
///    through its verified leader, every other process through its own verified pidfd; then
///    teardown waits up to `grace` for them to go. With a zero grace this step is skipped.
/// 3. Rounds of: scan (the first round takes step 2's when step 2 sent nothing, so a tree
///    that is already gone costs one scan), `cgroup.kill` if there is a leaf, SIGKILL to
///    every group and process found (parents first), wait up to 1 s, until a scan finds
///    nothing or `grace + kill_timeout` has passed.
/// 4. The shim (the first `scope.exclude` entry) is stopped last.
pub fn teardown(
    seams: Seams<'_>,
    scope: &Scope,
    cgroups: &[CgroupLeaf],
    options: &TeardownOptions,
) -> TeardownReport {
    let engine = Engine {
        seams,
        scope,
        cgroups,
        seen: BTreeMap::new(),
        self_pgid: seams.table.self_pgid(),
    };
    engine.run(options)
}

#[cfg(test)]
mod tests;
