//! Discovery: which processes in a table snapshot belong to a run, and why.
//!
//! Pure over its inputs: a snapshot, the cgroup members, a scope, and a process table asked
//! for environments and user ids (plus, for [`Scope::orphans`], the process's record of the
//! children it started itself).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::env_vars::EnvVars;
use crate::identity::{ProcInfo, ProcRef};
use crate::instance::Instance;
use crate::ledger::LedgerEntry;
use crate::proc_table::{ProcTable, environ_has};

/// An environment marker every agent process inherits: `HYOKA_RUN_INSTANCE=<token>` (or, for
/// callers without an instance, `HYOKA_RUN_ID=<run_id>`) and, for one eval,
/// `HYOKA_EVAL_ID=<eval_id>`. A process matches when its environment holds every entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    entries: Vec<Vec<u8>>,
    since: u64,
}

impl Marker {
    /// The marker of one run instance: what `clean` scans for. Nobody's environment carries
    /// it by accident, unlike `HYOKA_RUN_ID` (see [`EnvVars`](crate::EnvVars)).
    pub fn instance(instance: &Instance) -> Self {
        Self {
            entries: vec![instance.env_entry().into_bytes()],
            since: 0,
        }
    }

    /// The marker `HYOKA_RUN_ID=<run_id>` alone. Run ids are chosen by users and anyone may
    /// set the variable, so this is only for a caller whose run id is itself unguessable
    /// (`hyoka respawn` draws one at random); everything else uses [`Marker::instance`].
    pub fn run(run_id: &str) -> Self {
        Self {
            entries: vec![format!("{}={run_id}", EnvVars::HYOKA_RUN_ID).into_bytes()],
            since: 0,
        }
    }

    /// [`Marker::run`] narrowed to one eval.
    pub fn eval(run_id: &str, eval_id: &str) -> Self {
        Self::run(run_id).with_eval(eval_id)
    }

    /// Narrows the marker to one eval (`HYOKA_EVAL_ID=<eval_id>`).
    #[must_use]
    pub fn with_eval(mut self, eval_id: &str) -> Self {
        self.entries
            .push(format!("{}={eval_id}", EnvVars::HYOKA_EVAL_ID).into_bytes());
        self
    }

    /// Only processes started at or after `start_ticks` can carry the marker (a process
    /// older than the run cannot have inherited it), so older ones are never read: this is
    /// what keeps the scan cheap. Pass the owner's start ticks.
    #[must_use]
    pub fn since(mut self, start_ticks: u64) -> Self {
        self.since = start_ticks;
        self
    }

    /// Whether the NUL-separated environment block carries this marker.
    pub fn matches(&self, environ: &[u8]) -> bool {
        self.entries.iter().all(|entry| environ_has(environ, entry))
    }
}

/// Why a process was attributed to a run (the strongest reason wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// It is in the run's cgroup leaf.
    Cgroup,
    /// It is the agent or the shim itself.
    Root,
    /// It descends (by parent pid) from a process of the run.
    Descendant,
    /// It shares a process group with a process of the run.
    Group,
    /// It was re-parented to the calling process, a subreaper, from outside the caller's
    /// session: an orphan of the agent's tree whose nearer subreaper (the shim) is gone, or
    /// of an agent started without one (see [`Scope::orphans`]).
    Orphan,
    /// It was recorded earlier (ledger) and still has the recorded start time.
    Tracked,
    /// Its environment carries the run's marker.
    Marker,
}

/// One process attributed to a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    /// What the table said about it.
    pub info: ProcInfo,
    /// Why it is ours.
    pub source: Source,
    /// How many of its ancestors are also ours (0 for the top of a tree).
    pub depth: u32,
}

/// What to look for.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The agent (or the shim) at the top of the tree.
    pub roots: Vec<ProcRef>,
    /// Processes recorded earlier.
    pub known: Vec<LedgerEntry>,
    /// The environment marker, if a marker scan is wanted.
    pub marker: Option<Marker>,
    /// Processes never reported (the shim, which teardown stops last).
    pub exclude: Vec<ProcRef>,
    /// Also attribute the calling process's adopted orphans: children of the caller outside
    /// its own session that it did not start itself (see [`crate::Tracker`]: hyoka is a
    /// subreaper, so these come from the trees it tracks). Set it for a tree whose orphans
    /// come to the caller: an agent without a shim, or one whose shim was lost.
    pub orphans: bool,
    /// Only processes started at or after these clock ticks are attributed, whatever the
    /// reason (0: no bound). A run's processes cannot be older than its owner.
    pub since: u64,
    /// Only processes this user may signal (real or saved uid) are attributed: `clean` acts
    /// on a run directory with its owner's power only.
    pub user: Option<u32>,
}

/// Whether [`discover`] may attribute `p` at all, whatever the scope: not a zombie, not
/// pid 1, not a kernel thread (`kthreadd`, pid 2, and its children) and not the calling
/// process (`self_pid`).
pub(crate) fn ever_attributed(p: &ProcInfo, self_pid: i32) -> bool {
    p.pid > 1 && p.pid != 2 && p.ppid != 2 && p.pid != self_pid && !p.is_gone()
}

/// Attributes processes of `snapshot` to the scope. Zombies, pid ≤ 1, kernel threads, the
/// calling process, processes older than [`Scope::since`] and other users' processes (with
/// [`Scope::user`]) are never returned. `table` is asked for environments only for processes
/// not already attributed otherwise, and only when the scope has a marker.
pub fn discover(
    snapshot: &[ProcInfo],
    cgroup_members: &[i32],
    scope: &Scope,
    table: &dyn ProcTable,
) -> Vec<Found> {
    let (self_pid, self_pgid) = (table.self_pid(), table.self_pgid());
    let by_pid: BTreeMap<i32, &ProcInfo> = snapshot.iter().map(|p| (p.pid, p)).collect();
    let user_ok = |p: &ProcInfo| {
        scope
            .user
            .is_none_or(|uid| table.uids(p.pid).is_some_and(|u| u.signalable_by(uid)))
    };
    let eligible = |p: &ProcInfo| ever_attributed(p, self_pid) && p.start_ticks >= scope.since;
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for p in snapshot {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut found: BTreeMap<i32, Source> = BTreeMap::new();
    let add = |found: &mut BTreeMap<i32, Source>, pid: i32, source: Source| {
        if let Some(slot) = found.get_mut(&pid) {
            *slot = (*slot).min(source);
        } else if by_pid.get(&pid).is_some_and(|p| eligible(p) && user_ok(p)) {
            found.insert(pid, source);
        }
    };
    for &pid in cgroup_members {
        add(&mut found, pid, Source::Cgroup);
    }
    let matches = |r: ProcRef| {
        by_pid
            .get(&r.pid)
            .is_some_and(|p| p.start_ticks == r.start_ticks)
    };
    let live_roots: Vec<i32> = scope
        .roots
        .iter()
        .filter(|r| r.pid > 1 && matches(**r))
        .map(|r| r.pid)
        .collect();
    for &root in &live_roots {
        add(&mut found, root, Source::Root);
    }
    for entry in &scope.known {
        if matches(entry.proc_ref()) {
            add(&mut found, entry.pid, Source::Tracked);
        }
    }
    if scope.orphans {
        for pid in crate::orphans::adopted(snapshot, self_pid) {
            add(&mut found, pid, Source::Orphan);
        }
    }
    // Close over descendants and shared process groups until nothing new appears; then look
    // for the marker only among the processes still unattributed (reading `environ` is the
    // expensive part), and close over what it found.
    let close = |found: &mut BTreeMap<i32, Source>| {
        loop {
            let before = found.len();
            // Roots seed the walk even when they are not reported themselves (the shim walking
            // its own tree is the calling process).
            let mut queue: Vec<i32> = found.keys().chain(&live_roots).copied().collect();
            while let Some(pid) = queue.pop() {
                for &child in children.get(&pid).into_iter().flatten() {
                    if !found.contains_key(&child) {
                        add(found, child, Source::Descendant);
                        if found.contains_key(&child) {
                            queue.push(child);
                        }
                    }
                }
            }
            // A group is ours only when its leader is: a process found by its marker may sit in
            // a stranger's group (a shell that exported the variable), and that group is not ours.
            let groups: BTreeSet<i32> = found
                .keys()
                .filter_map(|pid| by_pid.get(pid))
                .filter(|p| p.pgid == p.pid && p.pgid != self_pgid)
                .map(|p| p.pgid)
                .collect();
            for p in snapshot {
                if groups.contains(&p.pgid) && !found.contains_key(&p.pid) {
                    add(found, p.pid, Source::Group);
                }
            }
            if found.len() == before {
                break;
            }
        }
    };
    close(&mut found);
    if let Some(marker) = &scope.marker {
        for p in snapshot {
            if !found.contains_key(&p.pid)
                && p.start_ticks >= marker.since
                && eligible(p)
                && table.environ(p.pid).is_some_and(|e| marker.matches(&e))
            {
                add(&mut found, p.pid, Source::Marker);
            }
        }
        close(&mut found);
    }
    collect(&found, &by_pid, scope)
}

/// The attributed processes with their depth, minus the excluded ones, in pid order.
fn collect(
    found: &BTreeMap<i32, Source>,
    by_pid: &BTreeMap<i32, &ProcInfo>,
    scope: &Scope,
) -> Vec<Found> {
    let excluded = |p: &ProcInfo| scope.exclude.contains(&p.proc_ref());
    let depth = |pid: i32| {
        let mut depth = 0;
        let mut cursor = by_pid.get(&pid).map(|p| p.ppid);
        while let Some(parent) = cursor.filter(|pp| found.contains_key(pp)) {
            depth += 1;
            if depth > 4096 {
                break;
            }
            cursor = by_pid.get(&parent).map(|p| p.ppid);
        }
        depth
    };
    found
        .iter()
        .filter_map(|(&pid, &source)| {
            let info = by_pid.get(&pid)?;
            (!excluded(info)).then(|| Found {
                info: (*info).clone(),
                source,
                depth: depth(pid),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
