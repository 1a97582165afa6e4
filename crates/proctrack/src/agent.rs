//! One eval's agent: its streams, its exit, discovery of its tree, and its teardown.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{BufReader, Lines};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::ProcTrackError;
use crate::caps::{Layer, Layers};
use crate::cgroup::CgroupLeaf;
use crate::clock::SystemClock;
use crate::discover::{Marker, Scope, Source, discover, ever_attributed};
use crate::identity::{ProcInfo, ProcRef};
use crate::ledger::{Ledger, LedgerEntry};
use crate::proc_table::{NativeProcTable, PidMark, ProcTable};
use crate::sampling::{TreeSample, cgroup_usage_usec, sample_processes};
use crate::shim::{ShimReport, parse_report};
use crate::signal::NativeSignaller;
use crate::teardown::{ProcessFate, Seams, TeardownOptions, TeardownReport, teardown};
use crate::tracker::{Shared, lock};

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentExit {
    /// It exited with this status.
    Code(i32),
    /// It was killed by this signal.
    Signal(i32),
    /// Unknown: the shim was killed before it could report.
    Unknown,
}

impl AgentExit {
    /// The exit code, if it exited normally.
    pub fn code(self) -> Option<i32> {
        match self {
            Self::Code(c) => Some(c),
            _ => None,
        }
    }

    /// The signal, if it was killed by one.
    pub fn signal(self) -> Option<i32> {
        match self {
            Self::Signal(s) => Some(s),
            _ => None,
        }
    }

    /// Whether it exited with status 0.
    pub fn success(self) -> bool {
        self == Self::Code(0)
    }
}

/// How long a teardown waits for the shim to say that the tree is gone (it says so right
/// after the agent's exit) before it scans for what is left.
const SETTLE_WAIT: Duration = Duration::from_millis(25);

/// How long a settled teardown waits for a young process inside `execve`, or exiting, to
/// show its environment (or end) before it scans for what is left.
const UNREADABLE_WAIT: Duration = Duration::from_millis(10);

/// Up to how many pids given out since a spawn the settled teardown reads one by one.
const YOUNG_PIDS_READ: usize = 64;

/// What one [`Agent::refresh`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Refresh {
    /// Processes tracked for this eval after the refresh.
    pub tracked: usize,
    /// Newly found.
    pub added: usize,
    /// Confirmed gone and dropped from the ledger.
    pub removed: usize,
}

/// One eval's agent: its streams, its exit, discovery of its tree, and teardown.
///
/// Dropping an `Agent` that was not torn down SIGKILLs its tree synchronously (no grace) as a
/// last resort; call [`Agent::teardown`] instead.
pub struct Agent {
    eval_id: String,
    shared: Arc<Shared>,
    pub(crate) child: Option<Child>,
    pub(crate) process: ProcRef,
    pub(crate) shim: Option<ProcRef>,
    pub(crate) report: Option<Lines<BufReader<pipe::Receiver>>>,
    pub(crate) leaf: Option<CgroupLeaf>,
    /// The agent's standard input, when [`StdioMode::Piped`](crate::StdioMode::Piped).
    pub stdin: Option<ChildStdin>,
    /// The agent's standard output, when [`StdioMode::Piped`](crate::StdioMode::Piped).
    pub stdout: Option<ChildStdout>,
    /// The agent's standard error, when [`StdioMode::Piped`](crate::StdioMode::Piped).
    pub stderr: Option<ChildStderr>,
    exit: Option<AgentExit>,
    known: Vec<LedgerEntry>,
    /// Every process ever attributed to this eval, for the final report.
    history: std::collections::BTreeMap<ProcRef, LedgerEntry>,
    pub(crate) torn_down: bool,
    /// Whether the process was adopted rather than spawned (see [`Tracker::adopt`]).
    ///
    /// [`Tracker::adopt`]: crate::Tracker::adopt
    pub(crate) adopted: bool,
    /// Whether the shim died before teardown asked it to stop.
    shim_lost: bool,
    /// Whether the run has the cgroup layer but this eval's leaf could not be made or joined.
    pub(crate) cgroup_lost: bool,
    /// What this agent has in the process-wide record of attributed processes (see
    /// `orphans`): its known set as of the last refresh.
    attributed: Vec<ProcRef>,
    /// The leaves holding its resource limits, when it has any.
    pub(crate) resources: Option<crate::resources::ResourceLeaves>,
    /// The kernel's pid allocation just before the spawn: every process of the tree has a
    /// pid given out after it.
    pub(crate) born_after: Option<PidMark>,
    /// Whether the shim reported that it reaped its last child ([`ShimReport::Empty`]).
    tree_empty: bool,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("eval_id", &self.eval_id)
            .field("process", &self.process)
            .field("shim", &self.shim)
            .field("cgroup", &self.leaf.as_ref().map(CgroupLeaf::path))
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A tracked agent with nothing observed yet (its cgroup leaf, if any, is already in the
    /// ledger: [`Shared::create_leaf`]).
    pub(crate) fn new(
        shared: &Arc<Shared>,
        eval_id: &str,
        process: ProcRef,
        leaf: Option<CgroupLeaf>,
    ) -> Self {
        Self {
            eval_id: eval_id.to_owned(),
            shared: Arc::clone(shared),
            child: None,
            process,
            shim: None,
            report: None,
            leaf,
            stdin: None,
            stdout: None,
            stderr: None,
            exit: None,
            known: Vec::new(),
            history: std::collections::BTreeMap::new(),
            torn_down: false,
            adopted: false,
            shim_lost: false,
            cgroup_lost: false,
            attributed: Vec::new(),
            resources: None,
            born_after: None,
            tree_empty: false,
        }
    }

    /// What the tree's resource leaves say now (memory and pids peaks, OOM kills, refused
    /// forks, CPU time), when it runs with [`ResourceLimits`](crate::ResourceLimits). Read it
    /// before [`Agent::teardown`], which removes the leaves.
    pub fn resource_usage(&self) -> Option<crate::ResourceUsage> {
        self.resources
            .as_ref()
            .map(crate::resources::ResourceLeaves::usage)
    }

    /// The eval id.
    pub fn eval_id(&self) -> &str {
        &self.eval_id
    }

    /// The agent process (not the shim).
    pub fn proc_ref(&self) -> ProcRef {
        self.process
    }

    /// The agent's pid.
    pub fn pid(&self) -> i32 {
        self.process.pid
    }

    /// The shim, when the agent runs under one.
    pub fn shim(&self) -> Option<ProcRef> {
        self.shim
    }

    /// The cgroup leaf, when the agent runs in one.
    pub fn cgroup(&self) -> Option<&Path> {
        self.leaf.as_ref().map(CgroupLeaf::path)
    }

    /// The layers this agent actually runs under.
    pub fn layers(&self) -> Layers {
        Layers {
            cgroup: self.leaf.is_some(),
            shim: self.shim.is_some(),
            session: true,
            marker: true,
        }
    }

    /// The processes tracked for this eval (as in the ledger).
    pub fn tracked(&self) -> &[LedgerEntry] {
        &self.known
    }

    /// Samples the CPU the agent's tree has used and its busy children, from the processes
    /// the last [`Agent::refresh`] found (and the cgroup leaf). Reads one `/proc/<pid>/stat`
    /// per tracked process; a process whose identity changed is skipped.
    pub fn sample(&self) -> TreeSample {
        let mut refs: Vec<ProcRef> = self
            .known
            .iter()
            .map(|e| ProcRef {
                pid: e.pid,
                start_ticks: e.start_ticks,
            })
            .collect();
        refs.push(self.process);
        refs.extend(self.shim);
        refs.sort_unstable();
        refs.dedup();
        let (own_ticks, busy_children) = sample_processes(
            refs.iter()
                .map(|&r| (r, r != self.process && Some(r) != self.shim)),
        );
        let cpu_ticks = self
            .leaf
            .as_ref()
            .and_then(|leaf| cgroup_usage_usec(leaf.path()))
            .map_or(own_ticks, |usec| {
                usec.saturating_mul(rustix::param::clock_ticks_per_second()) / 1_000_000
            });
        TreeSample {
            cpu_ticks,
            busy_children,
        }
    }

    /// The agent's exit, if already known.
    pub fn exit(&self) -> Option<AgentExit> {
        self.exit
    }

    /// Waits for the agent itself to exit (its descendants may still run).
    ///
    /// Cancel-safe: it may be used in `tokio::select!` with a timeout and called again.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when waiting fails.
    pub async fn wait(&mut self) -> Result<AgentExit, ProcTrackError> {
        if let Some(exit) = self.exit {
            return Ok(exit);
        }
        if let Some(lines) = &mut self.report {
            while let Ok(Some(line)) = lines.next_line().await {
                let exit = match parse_report(&line) {
                    Some(ShimReport::Exited(code)) => AgentExit::Code(code),
                    Some(ShimReport::Signaled(signal)) => AgentExit::Signal(signal),
                    Some(ShimReport::Empty) => {
                        self.tree_empty = true;
                        continue;
                    }
                    _ => continue,
                };
                self.exit = Some(exit);
                return Ok(exit);
            }
            self.report = None;
        }
        let Some(child) = &mut self.child else {
            return Ok(*self.exit.get_or_insert(AgentExit::Unknown));
        };
        let status = child
            .wait()
            .await
            .map_err(|e| ProcTrackError::io("wait for", format!("pid {}", self.process.pid), e))?;
        self.collected(status);
        let exit = if self.shim.is_some() {
            // The shim died without reporting the agent's status.
            AgentExit::Unknown
        } else {
            use std::os::unix::process::ExitStatusExt as _;
            status
                .code()
                .map(AgentExit::Code)
                .or_else(|| status.signal().map(AgentExit::Signal))
                .unwrap_or(AgentExit::Unknown)
        };
        self.exit = Some(exit);
        Ok(exit)
    }

    /// The containment layers this agent lost before teardown: the shim, when it died on
    /// its own (an agent may SIGKILL it), and the cgroup layer, when the run has it but this
    /// eval's leaf could not be made or joined. A process escaping the leaf is judged at
    /// teardown (see [`TeardownReport::layers_lost`]).
    pub fn layers_lost(&self) -> Vec<Layer> {
        let mut lost = Vec::new();
        if self.shim_lost {
            lost.push(Layer::Shim);
        }
        if self.cgroup_lost {
            lost.push(Layer::Cgroup);
        }
        lost
    }

    /// Takes note of the exit status of our own child (the shim, or an agent without one): a
    /// shim that a signal killed before teardown was lost.
    fn collected(&mut self, status: std::process::ExitStatus) {
        use std::os::unix::process::ExitStatusExt as _;
        if self.shim.is_some() && !self.torn_down && status.signal().is_some() {
            self.shim_lost = true;
        }
    }

    /// When no status reached us (a `cgroup.kill` ends the shim with the agent, before it can
    /// report), the agent's end is what teardown did to it: SIGTERM it obeyed, or SIGKILL.
    fn exit_from(&mut self, report: &TeardownReport) {
        if !matches!(self.exit, None | Some(AgentExit::Unknown)) {
            return;
        }
        let fate = report
            .processes
            .iter()
            .find(|p| p.pid == self.process.pid && p.start_ticks == self.process.start_ticks)
            .map(|p| p.outcome);
        let signal = match fate {
            Some(ProcessFate::Terminated) => libc::SIGTERM,
            Some(ProcessFate::Killed) => libc::SIGKILL,
            _ => return,
        };
        self.exit = Some(AgentExit::Signal(signal));
    }

    /// Looks, without waiting, whether our child has exited.
    fn poll_child(&mut self) {
        if let Some(status) = self
            .child
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
        {
            self.collected(status);
        }
    }

    /// Whether this tree's orphans come to this process (the subreaper): there is no shim,
    /// or it was lost.
    fn orphans_come_here(&self) -> bool {
        self.shim.is_none() || self.shim_lost
    }

    fn scope(&self) -> Scope {
        let owner_ticks = self.shared.owner.proc_ref.start_ticks;
        Scope {
            roots: vec![self.shim.unwrap_or(self.process)],
            known: self.known.clone(),
            marker: Some(
                Marker::instance(&self.shared.instance)
                    .with_eval(&self.eval_id)
                    .since(owner_ticks),
            ),
            exclude: self.shim.into_iter().collect(),
            orphans: self.orphans_come_here(),
            // An adopted process may be older than the run.
            since: if self.adopted {
                owner_ticks.min(self.process.start_ticks)
            } else {
                owner_ticks
            },
            user: None,
        }
    }

    /// Scans `/proc` for this eval's processes (cgroup members, descendants, process groups,
    /// the marker) and records new ones in the ledger; tracked processes confirmed gone are
    /// dropped from it. The ledger is rewritten only when the set changed.
    ///
    /// Blocking for the length of one scan (about 13 µs per process on the machine); call it
    /// every few hundred milliseconds while the agent runs.
    ///
    /// # Errors
    /// [`ProcTrackError::ProcTable`] or [`ProcTrackError::Io`] (ledger).
    pub fn refresh(&mut self) -> Result<Refresh, ProcTrackError> {
        self.poll_child();
        let table = NativeProcTable::new();
        let snapshot = table.snapshot()?;
        let members = self
            .leaf
            .as_ref()
            .map(CgroupLeaf::members)
            .unwrap_or_default();
        let mut scope = self.scope();
        scope.exclude.clear();
        let found = discover(&snapshot, &members, &scope, &table);
        if scope.orphans {
            crate::orphans::reap(&snapshot);
        }
        let now: HashSet<ProcRef> = found.iter().map(|f| f.info.proc_ref()).collect();
        let before = self.known.len();
        self.known.retain(|e| now.contains(&e.proc_ref()));
        let removed = before - self.known.len();
        let tracked: HashSet<ProcRef> = self.known.iter().map(LedgerEntry::proc_ref).collect();
        let mut added = 0;
        for f in &found {
            if !tracked.contains(&f.info.proc_ref()) {
                let entry = LedgerEntry::from_info(&f.info, &self.eval_id);
                if Some(entry.proc_ref()) != self.shim {
                    self.history.insert(entry.proc_ref(), entry.clone());
                }
                self.known.push(entry);
                added += 1;
            }
        }
        if added > 0 || removed > 0 {
            self.sync_ledger()?;
        }
        Ok(Refresh {
            tracked: self.known.len(),
            added,
            removed,
        })
    }

    /// Records what a spawn just started (the shim and the agent) in the ledger from their
    /// own `/proc/<pid>/stat`, without a scan of `/proc`: the first [`Agent::refresh`] or
    /// the teardown finds everything else. For a tree under the shim only: without one,
    /// orphans come to this process and [`Agent::refresh`] must reap them.
    pub(crate) fn record_started(&mut self) -> Result<(), ProcTrackError> {
        self.poll_child();
        let table = NativeProcTable::new();
        for r in self.shim.into_iter().chain([self.process]) {
            if r.pid <= 0 || self.known.iter().any(|e| e.proc_ref() == r) {
                continue;
            }
            let Some(info) = table
                .process(r.pid)
                .filter(|p| p.start_ticks == r.start_ticks && !p.is_gone())
            else {
                continue;
            };
            let entry = LedgerEntry::from_info(&info, &self.eval_id);
            if Some(r) != self.shim {
                self.history.insert(r, entry.clone());
            }
            self.known.push(entry);
        }
        self.sync_ledger()
    }

    fn sync_ledger(&mut self) -> Result<(), ProcTrackError> {
        self.sync_ledger_and(|_| {})
    }

    /// Puts the eval's known processes in the ledger, with `also`'s changes in the same
    /// write.
    fn sync_ledger_and(&mut self, also: impl FnOnce(&mut Ledger)) -> Result<(), ProcTrackError> {
        let known: Vec<ProcRef> = self.known.iter().map(LedgerEntry::proc_ref).collect();
        crate::orphans::attribute(&self.attributed, &known);
        self.attributed = known;
        let eval = &self.eval_id;
        self.shared.update(|l| {
            l.entries.retain(|e| &e.eval_id != eval);
            l.entries.extend(self.known.iter().cloned());
            also(l);
        })
    }

    /// Tears the eval's tree down (see [`teardown`](crate::teardown())), reaps the agent or
    /// the shim, removes the cgroup leaf and updates the ledger.
    ///
    /// The blocking work runs in `spawn_blocking`; the runtime is never blocked. Calling it
    /// again after success returns an empty report.
    ///
    /// # Errors
    /// [`ProcTrackError::Task`] if the blocking task panicked, [`ProcTrackError::Io`] for the
    /// ledger.
    pub async fn teardown(
        &mut self,
        options: TeardownOptions,
    ) -> Result<TeardownReport, ProcTrackError> {
        if self.torn_down {
            return Ok(TeardownReport::default());
        }
        self.poll_child();
        if let Some(mut report) = self.settled().await {
            self.complete(&mut report);
            self.judge_layers(&mut report);
            self.torn_down = true;
            self.reap().await;
            self.finish(&report)?;
            return Ok(report);
        }
        let scope = self.scope();
        let leaves: Vec<CgroupLeaf> = self.leaf.iter().cloned().collect();
        let mut report = tokio::task::spawn_blocking(move || {
            let (table, signaller) = (NativeProcTable::new(), NativeSignaller::new());
            let seams = Seams {
                table: &table,
                signaller: &signaller,
                clock: &SystemClock,
            };
            let report = teardown(seams, &scope, &leaves, &options);
            if scope.orphans
                && let Ok(snapshot) = table.snapshot()
            {
                crate::orphans::reap(&snapshot);
            }
            report
        })
        .await
        .map_err(|e| ProcTrackError::Task {
            reason: e.to_string(),
        })?;
        self.complete(&mut report);
        self.judge_layers(&mut report);
        self.torn_down = true;
        self.reap().await;
        self.exit_from(&report);
        self.finish(&report)?;
        Ok(report)
    }

    /// The teardown of a tree that is provably gone, without a scan of the whole of `/proc`:
    /// `None` unless every layer holds and says so.
    ///
    /// - The shim reported the agent's exit and then that it reaped its last child
    ///   ([`ShimReport::Empty`]). A subreaper without children has no living descendant:
    ///   everything the agent started, however it detached (`setsid`, double forks,
    ///   daemons, a move out of the cgroup leaf), stays below the shim while it lives. A tree
    ///   that still runs never says so: the shim is waited for only briefly.
    /// - The cgroup leaf, if any, holds nobody (no process was moved into it from outside).
    /// - Every process recorded for the eval (a refresh may have found some by their marker)
    ///   is gone.
    /// - No process created since the spawn carries the eval's marker: what another program
    ///   outside the tree started for the agent (a job scheduler that copies the environment).
    ///   Only pids given out since the spawn are read ([`PidMark`]); when the allocator may
    ///   have gone round `pid_max` in between, the full teardown runs instead.
    ///
    /// What a full teardown's scan would find, this finds: the cgroup members, the roots and
    /// their descendants and groups (none, by the shim's word), the recorded processes, and
    /// the marker among processes younger than the spawn (older ones cannot carry it).
    async fn settled(&mut self) -> Option<TeardownReport> {
        let clock = SystemClock;
        let start = crate::Clock::now(&clock);
        if self.shim.is_none() || self.shim_lost || self.adopted || self.resources.is_some() {
            return None;
        }
        if !matches!(self.exit, Some(AgentExit::Code(_) | AgentExit::Signal(_))) {
            return None;
        }
        if !self.tree_empty {
            let lines = self.report.as_mut()?;
            // Written the moment the shim reaps its last child, right after the agent.
            let next = tokio::time::timeout(SETTLE_WAIT, lines.next_line()).await;
            match next {
                Ok(Ok(Some(line))) if parse_report(&line) == Some(ShimReport::Empty) => {
                    self.tree_empty = true;
                }
                _ => return None,
            }
        }
        if self
            .leaf
            .as_ref()
            .is_some_and(|leaf| !leaf.members().is_empty())
        {
            return None;
        }
        let table = NativeProcTable::new();
        let alive = |pid: i32, ticks: u64| {
            table
                .process(pid)
                .is_some_and(|p| p.start_ticks == ticks && !p.is_gone())
        };
        let shim = self.shim;
        if self
            .known
            .iter()
            .any(|e| Some(e.proc_ref()) != shim && alive(e.pid, e.start_ticks))
        {
            return None;
        }
        let (before, now) = (self.born_after?, PidMark::now()?);
        // A short-lived tree leaves few new pids: each is read directly; many, and `/proc` is
        // listed instead.
        let young: Vec<ProcInfo> = match before.pids_since(now, YOUNG_PIDS_READ) {
            Some(pids) => pids.into_iter().filter_map(|p| table.process(p)).collect(),
            None => {
                NativeProcTable::snapshot_where(before.created_since(now)?)
                    .ok()?
                    .0
            }
        };
        let mut scope = self.scope();
        scope.known.clear();
        let started = |p: &ProcInfo| {
            p.ppid == table.self_pid() && crate::orphans::owned().contains(&p.proc_ref())
        };
        if !young_readable(&young, &table, shim, &started, UNREADABLE_WAIT).await {
            return None;
        }
        if !discover(&young, &[], &scope, &table)
            .iter()
            .all(|f| Some(f.info.proc_ref()) == shim)
        {
            return None;
        }
        Some(TeardownReport {
            elapsed: crate::Clock::now(&clock).saturating_duration_since(start),
            settled: true,
            ..TeardownReport::default()
        })
    }

    /// Fills in the layers lost and whether the survivor count is proof.
    ///
    /// The cgroup layer was lost when a process of the tree was alive outside the leaf: the
    /// teardown engine reads the leaf's members right after each process table snapshot, so
    /// a process it then signalled (terminated, killed or surviving) that is not attributed
    /// to the leaf was outside it. (Not for an adopted process, whose earlier children are
    /// outside by design.)
    ///
    /// The count is proof only when a final scan covered the whole tree: it did unless the
    /// tree's orphans could go to init, that is, the shim is absent or lost, this process is
    /// not a subreaper, and no intact cgroup leaf holds the tree instead.
    fn judge_layers(&self, report: &mut TeardownReport) {
        let mut lost = self.layers_lost();
        let escaped_leaf = self.leaf.is_some()
            && !self.adopted
            && report.processes.iter().any(|p| {
                // The shim starts the agent in the leaf but stays outside it.
                Some(ProcRef {
                    pid: p.pid,
                    start_ticks: p.start_ticks,
                }) != self.shim
                    && p.source != Source::Cgroup
                    && matches!(
                        p.outcome,
                        ProcessFate::Terminated | ProcessFate::Killed | ProcessFate::Failed
                    )
            });
        if escaped_leaf {
            lost.push(Layer::Cgroup);
        }
        let leaf_holds = self.leaf.is_some() && !escaped_leaf;
        if self.orphans_come_here() && !self.shared.subreaper && !leaf_holds {
            report.survivors_unknown = Some(if self.shim_lost {
                "the shim was lost and this process is not a subreaper: orphans of the tree \
                 went to init, out of sight"
                    .to_owned()
            } else {
                "no shim and this process is not a subreaper: orphans of the tree went to \
                 init, out of sight"
                    .to_owned()
            });
        }
        report.layers_lost = lost;
    }

    /// Adds the processes seen by earlier refreshes that exited on their own before teardown
    /// (outcome `exited`), so the report covers the eval's whole life.
    fn complete(&self, report: &mut TeardownReport) {
        for (r, entry) in &self.history {
            if !report
                .processes
                .iter()
                .any(|p| p.pid == r.pid && p.start_ticks == r.start_ticks)
            {
                report.processes.push(crate::ProcessReport {
                    pid: entry.pid,
                    start_ticks: entry.start_ticks,
                    pgid: entry.pgid,
                    comm: entry.comm.clone(),
                    source: Source::Tracked,
                    outcome: ProcessFate::Exited,
                    errno: None,
                });
            }
        }
        report.processes.sort_by_key(|p| (p.pid, p.start_ticks));
        report.finish();
    }

    async fn reap(&mut self) {
        if self.exit.is_none() && self.report.is_some() {
            let _ = tokio::time::timeout(Duration::from_millis(500), self.wait()).await;
        }
        if let Some(child) = &mut self.child {
            if let Ok(Ok(status)) = tokio::time::timeout(Duration::from_secs(2), child.wait()).await
            {
                self.collected(status);
            }
            if self.exit.is_none() && self.shim.is_none() {
                let _ = tokio::time::timeout(Duration::from_millis(10), self.wait()).await;
            }
        }
    }

    pub(crate) fn finish(&mut self, report: &TeardownReport) -> Result<(), ProcTrackError> {
        // A count that is not proof withholds the ledger's `# cleaned` mark, like a survivor.
        *lock(&self.shared.survivors) +=
            report.survivors + usize::from(report.survivors_unknown.is_some());

        let survivors: Vec<ProcRef> = report
            .processes
            .iter()
            .filter(|p| p.outcome == ProcessFate::Failed)
            .map(|p| ProcRef {
                pid: p.pid,
                start_ticks: p.start_ticks,
            })
            .collect();
        self.known.retain(|e| survivors.contains(&e.proc_ref()));
        // A v1 leaf left behind (a process that would not leave it) stays recorded for
        // `clean`; the tree's report says whether processes survived.
        let left = self
            .resources
            .as_ref()
            .map(crate::resources::ResourceLeaves::remove)
            .unwrap_or_default();
        let removed = self.remove_leaf();
        let eval = self.eval_id.clone();
        // One write: the processes left, and the leaves gone.
        self.sync_ledger_and(|l| {
            if removed {
                l.cgroups.retain(|c| c.eval_id != eval);
            }
            l.cgroups_v1
                .retain(|c| c.eval_id != eval || left.contains(&c.path));
        })
    }

    /// Removes the cgroup leaf; true when it is gone.
    fn remove_leaf(&mut self) -> bool {
        match &self.leaf {
            Some(leaf) if leaf.remove(Duration::from_secs(2), &SystemClock) => {
                self.leaf = None;
                true
            }
            _ => false,
        }
    }

    /// After a failed start: kill whatever the shim started, reap it, forget the eval.
    pub(crate) async fn abandon(&mut self) {
        let _ = self
            .teardown(TeardownOptions::with_grace(Duration::ZERO))
            .await;
        lock(&self.shared.evals).remove(&self.eval_id);
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if !self.torn_down {
            let scope = self.scope();
            let leaves: Vec<CgroupLeaf> = self.leaf.iter().cloned().collect();
            let (table, signaller) = (NativeProcTable::new(), NativeSignaller::new());
            let seams = Seams {
                table: &table,
                signaller: &signaller,
                clock: &SystemClock,
            };
            let options = TeardownOptions {
                grace: Duration::ZERO,
                kill_timeout: Duration::from_secs(2),
                ..TeardownOptions::default()
            };
            let report = teardown(seams, &scope, &leaves, &options);
            self.poll_child();
            let _ = self.finish(&report);
        }
        crate::orphans::attribute(&std::mem::take(&mut self.attributed), &[]);
    }
}

/// Whether every process of `young` that may carry a marker shows its environment, waiting
/// up to `patience` for those that cannot yet: the settled teardown's reading of the
/// processes started since a spawn.
///
/// A process inside `execve` shows no environment for a moment (the new stack is not set
/// up yet, and a child is not dumpable until its exec is done), and neither does one that
/// is exiting: each is read again, with its state, every millisecond. Such a process is
/// often another trial's, so without the wait a busy run sent many teardowns the long way.
///
/// Not waited for: what [`discover`] never attributes (kernel threads, this process,
/// processes gone), the eval's own `shim`, and the processes the tracker itself started
/// (`started`: another eval's shim, not dumpable when it is hardened, and so unreadable to
/// a process without `CAP_SYS_PTRACE`), whose environment the tracker chose. A full
/// teardown could not read those either, and they are no part of this tree.
async fn young_readable(
    young: &[ProcInfo],
    table: &dyn ProcTable,
    shim: Option<ProcRef>,
    started: &(dyn Fn(&ProcInfo) -> bool + Sync),
    patience: Duration,
) -> bool {
    let own = table.self_pid();
    let blank = |pid: i32| table.environ(pid).is_none_or(|e| e.is_empty());
    let unreadable = |p: &ProcInfo| {
        blank(p.pid)
            && table
                .process(p.pid)
                .is_some_and(|now| now.start_ticks == p.start_ticks && !now.is_gone())
            && blank(p.pid)
    };
    let mut waiting: Vec<&ProcInfo> = young
        .iter()
        .filter(|p| ever_attributed(p, own) && Some(p.proc_ref()) != shim)
        .filter(|p| unreadable(p))
        .collect();
    if !waiting.is_empty() {
        waiting.retain(|p| !started(p));
    }
    for _ in 0..patience.as_millis() {
        if waiting.is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        waiting.retain(|p| unreadable(p));
    }
    waiting.is_empty()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::proc_table::MockProcTable;

    const ME: i32 = 10;

    fn process(pid: i32, ppid: i32) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            start_ticks: 500,
            state: 'R',
            comm: "p".into(),
            cpu_ticks: 0,
        }
    }

    /// A table where every process lives (or none), whose environments read blank
    /// `blank_reads` times before the first that shows one.
    fn table(blank_reads: usize, alive: bool) -> (MockProcTable, Arc<AtomicUsize>) {
        let reads = Arc::new(AtomicUsize::new(0));
        let mut table = MockProcTable::new();
        table.expect_self_pid().return_const(ME);
        let counted = Arc::clone(&reads);
        table.expect_environ().returning(move |_| {
            (counted.fetch_add(1, Ordering::SeqCst) >= blank_reads).then(|| b"A=1\0".to_vec())
        });
        table
            .expect_process()
            .returning(move |pid| alive.then(|| process(pid, 1)));
        (table, reads)
    }

    fn nobody(_: &ProcInfo) -> bool {
        false
    }

    const PATIENCE: Duration = Duration::from_millis(20);

    /// One young process, as `table(blank_reads, alive)` shows it: whether it was judged
    /// readable, and how often its environment was read.
    async fn one_young(blank_reads: usize, alive: bool) -> (bool, usize) {
        let (table, reads) = table(blank_reads, alive);
        let young = [process(100, 1)];
        let readable = young_readable(&young, &table, None, &nobody, PATIENCE).await;
        (readable, reads.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn a_process_inside_execve_is_waited_for_until_it_reads() {
        // Two blank reads at first sight, one more after the first wait, then its environment.
        assert_eq!(one_young(3, true).await, (true, 4));
    }

    #[tokio::test]
    async fn a_process_that_never_reads_sends_the_teardown_the_long_way() {
        let (readable, reads) = one_young(usize::MAX, true).await;
        assert!(!readable);
        assert!(reads > 2, "it was read again before giving up");
    }

    #[tokio::test]
    async fn a_process_gone_since_the_listing_is_not_waited_for() {
        assert_eq!(one_young(usize::MAX, false).await, (true, 1));
    }

    #[tokio::test]
    async fn what_cannot_carry_the_marker_is_never_read() {
        let (table, reads) = table(usize::MAX, true);
        let shim = process(101, ME);
        let started = process(102, ME);
        let young = [
            process(100, 2), // a kernel thread
            process(ME, 1),  // this process
            shim.clone(),
            started.clone(),
        ];
        let ours = |p: &ProcInfo| p.pid == started.pid;
        assert!(young_readable(&young, &table, Some(shim.proc_ref()), &ours, PATIENCE).await);
        // Only the one the tracker started is read (it shows nothing), then let go.
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }
}
