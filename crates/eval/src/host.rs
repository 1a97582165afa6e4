//! The seams the harness runs against: where processes start ([`Processes`], [`Process`]),
//! where workspaces come from ([`Workspaces`], [`EvalWorkspace`]), and the clock
//! (`hyoka-proctrack`'s [`Clock`], the one clock of the house).
//!
//! The real implementations ([`TrackedProcesses`] over a `hyoka-proctrack` [`Tracker`],
//! [`TempWorkspaces`] over `hyoka-workspace`'s `TempWorkspace`, [`SystemClock`]) are what a
//! run uses; behind the `mock` feature, `FakeHost` (its processes `FakeProgram`s on
//! `hyoka-proctrack`'s `FakeSystem`, its workspaces in memory) and `FakeClock` run the same
//! harness policy in memory, on tokio's paused clock.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hyoka_proctrack::{
    Agent, AgentCommand, AgentExit, Clock, GroupChild, GroupExit, Layers, NetNamespace,
    ProcTrackError, SandboxSupport, SystemClock, TeardownOptions, TeardownReport, Tracker,
};
use hyoka_workspace::{
    Change, Closed, MarkerOwner, RunVerdict, TempWorkspace, Usage, Workspace, WorkspaceError,
    WorkspaceOptions,
};
use tokio::io::AsyncRead;
use tokio::sync::mpsc::UnboundedSender;

use crate::report::Status;
use crate::watch::{WatchUpdate, watch};

/// A readable pipe of a process (its stdout or stderr).
pub type Pipe = Box<dyn AsyncRead + Send + Unpin>;

/// One started process of an eval: the agent, a service, a build or a review, with
/// everything it starts.
#[async_trait]
pub trait Process: Send {
    /// Its standard output, once (piped).
    fn take_stdout(&mut self) -> Option<Pipe>;
    /// Its standard error, once (piped).
    fn take_stderr(&mut self) -> Option<Pipe>;
    /// The containment layers it runs under (read before teardown).
    fn layers(&self) -> Layers;
    /// Waits for the process itself to exit (its descendants may still run). Cancel-safe.
    /// `None` when waiting failed.
    async fn wait(&mut self) -> Option<AgentExit>;
    /// Its exit, if already known.
    fn exit(&self) -> Option<AgentExit>;
    /// Whether the kernel's OOM killer killed a process of its tree, as far as it can be
    /// told (a cgroup leaf counts OOM kills; without one, `false`). Read before teardown.
    fn oom_killed(&self) -> bool {
        false
    }
    /// What its resource limits' cgroup leaves say now (peaks, OOM kills), when it runs with
    /// limits. Read before teardown.
    fn resource_usage(&self) -> Option<hyoka_proctrack::ResourceUsage> {
        None
    }
    /// Finds what it started since the last call (and keeps any ledger current). May block
    /// for a `/proc` scan.
    fn refresh(&mut self);
    /// Stops its whole tree: SIGTERM, the grace period, SIGKILL rounds.
    async fn teardown(&mut self, options: TeardownOptions) -> TeardownReport;
}

/// Where an eval's processes start.
#[async_trait]
pub trait Processes: Send + Sync {
    /// The run instance's token, recorded in the markers of the run's workspaces: `clean`
    /// removes a workspace a ledger lists only when its marker names the same instance.
    fn instance(&self) -> Option<String>;
    /// The process recorded as the owner in the markers of the run's workspaces
    /// (`hyoka-workspace`'s [`MarkerOwner`] writes and parses the format).
    fn marker_owner(&self) -> Option<MarkerOwner>;
    /// Records a workspace of `id` so that a crash leaves its removal to `hyoka clean`;
    /// called before the workspace exists (see [`Workspaces::create`]).
    ///
    /// # Errors
    /// The tracker's, when the ledger cannot be written.
    fn record_workspace(&self, id: &str, path: &Path) -> Result<(), ProcTrackError>;
    /// Records that the workspace of `id` at `path` is kept for the user, where no eval's
    /// process can write (the ledger): `hyoka clean` keeps it whatever its marker says.
    ///
    /// # Errors
    /// The tracker's, when the ledger cannot be written.
    fn record_kept(&self, id: &str, path: &Path) -> Result<(), ProcTrackError>;
    /// Drops the record of the workspace at `path` once it was removed, so the ledger (and
    /// what the host keeps of it) stays the size of what is live, whatever the number of
    /// evals. The default keeps the record: `clean` finds the directory gone.
    ///
    /// # Errors
    /// The tracker's, when the ledger cannot be written.
    fn forget_workspace(&self, path: &Path) -> Result<(), ProcTrackError> {
        let _ = path;
        Ok(())
    }
    /// Starts `command` as `id` under the run's containment.
    ///
    /// # Errors
    /// [`ProcTrackError::Spawn`] when the program cannot be started, or the tracker's.
    async fn spawn(
        &self,
        id: &str,
        command: AgentCommand,
    ) -> Result<Box<dyn Process>, ProcTrackError>;
    /// What this host offers for sandboxes (Landlock, network namespaces); asked only when
    /// an eval wants one.
    fn sandbox_support(&self) -> SandboxSupport;
    /// Where resource limits can be enforced (memory, pids and CPU controllers); asked only
    /// when an eval sets one. The fakes enforce nothing and say so.
    fn resource_support(&self) -> hyoka_proctrack::ResourceSupport {
        let none = || Err("this host enforces no resource limits".to_owned());
        hyoka_proctrack::ResourceSupport {
            memory: none(),
            pids: none(),
            cpu: none(),
        }
    }
    /// A network namespace with only loopback, shared by the processes of one eval under
    /// `network: none`; `None` when this host spawns nothing real (the fakes).
    ///
    /// # Errors
    /// [`ProcTrackError::Sandbox`] when none can be made.
    fn network_namespace(&self) -> Result<Option<NetNamespace>, ProcTrackError>;
    /// Runs a service's readiness command to its end; `true` when it exits 0 within
    /// `timeout`. A command that overruns is killed with its process group.
    async fn probe(&self, command: AgentCommand, timeout: Duration) -> bool;
}

/// A workspace as the harness uses it: the [`Workspace`] operations, plus its baseline,
/// its watcher and its end.
pub trait EvalWorkspace: Workspace {
    /// Links of the starter that were not copied because they lead outside.
    fn skipped_links(&self) -> usize;
    /// Takes what the workspace holds now as the baseline (what services wrote before the
    /// agent starts is not the agent's output).
    ///
    /// # Errors
    /// The workspace's, when it cannot be scanned.
    fn rebaseline(&mut self) -> Result<(), WorkspaceError>;
    /// The final scan: [`Workspace::usage`](hyoka_workspace::Workspace::usage), naming up to
    /// `limit` of the paths it counts (none unless the implementation can name them).
    ///
    /// # Errors
    /// The workspace's, when it cannot be scanned.
    fn changes(&self, _limit: usize) -> Result<(Usage, Vec<Change>), WorkspaceError> {
        Ok((self.usage()?, Vec::new()))
    }
    /// Whether `path` (relative to the workspace, or absolute) exists.
    fn exists(&self, path: &Path) -> bool;
    /// Starts reporting usage changes and file events on `tx`; reporting stops when the
    /// returned guard is dropped.
    fn watch(&self, tx: UnboundedSender<WatchUpdate>) -> Box<dyn Send>;
    /// Removes the workspace, or keeps it as the keep policy says for an eval that ended
    /// with `status`.
    fn close(self: Box<Self>, status: Status) -> WorkspaceEnd;
}

/// What closing a workspace did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkspaceEnd {
    /// It is gone.
    Removed,
    /// It was kept here, per the keep policy.
    Kept(std::path::PathBuf),
    /// Some entries could not be removed (each with the reason).
    Incomplete(Vec<String>),
    /// Removal failed.
    Failed(String),
}

/// Where an eval's workspaces (and isolated homes) come from.
pub trait Workspaces: Send + Sync {
    /// Creates, marks and fills a workspace, calling `record` with its path *before* the
    /// directory exists (and again with a new path if that name was taken meanwhile), so
    /// an owner that dies while it is made leaves nothing unrecorded.
    ///
    /// # Errors
    /// The workspace's, when it cannot be created; [`WorkspaceError::Record`] (and nothing
    /// created) when `record` fails.
    fn create(
        &self,
        options: &WorkspaceOptions,
        record: &mut dyn FnMut(&Path) -> Result<(), ProcTrackError>,
    ) -> Result<Box<dyn EvalWorkspace>, WorkspaceError>;
}

/// The seams one run uses, shared by its evals.
#[derive(Clone)]
pub struct Harness {
    /// Where processes start.
    pub processes: Arc<dyn Processes>,
    /// Where workspaces come from.
    pub workspaces: Arc<dyn Workspaces>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness").finish_non_exhaustive()
    }
}

impl Harness {
    /// The real harness: processes through `tracker`, real workspaces, the system clock.
    pub fn tracked(tracker: Tracker) -> Self {
        Self {
            processes: Arc::new(TrackedProcesses { tracker }),
            workspaces: Arc::new(TempWorkspaces),
            clock: Arc::new(SystemClock),
        }
    }
}

/// [`Processes`] through a run's [`Tracker`]: every process in the ledger, under every
/// containment layer the machine offers.
#[derive(Debug, Clone)]
pub struct TrackedProcesses {
    /// The run's tracker.
    pub tracker: Tracker,
}

#[async_trait]
impl Processes for TrackedProcesses {
    fn instance(&self) -> Option<String> {
        Some(self.tracker.instance().to_string())
    }

    /// The tracker's owner process by pid; the workspace's creation time stands for its
    /// start time (`hyoka-workspace`'s `marker` docs).
    fn marker_owner(&self) -> Option<MarkerOwner> {
        Some(MarkerOwner::pid(self.tracker.owner().pid()))
    }

    fn record_workspace(&self, id: &str, path: &Path) -> Result<(), ProcTrackError> {
        self.tracker.record_workspace(id, path)
    }

    fn record_kept(&self, id: &str, path: &Path) -> Result<(), ProcTrackError> {
        self.tracker.record_kept(id, path)
    }

    fn forget_workspace(&self, path: &Path) -> Result<(), ProcTrackError> {
        self.tracker.forget_workspace_at(path)
    }

    async fn spawn(
        &self,
        id: &str,
        command: AgentCommand,
    ) -> Result<Box<dyn Process>, ProcTrackError> {
        let agent = self.tracker.spawn(id, command).await?;
        Ok(Box::new(TrackedProcess(agent)))
    }

    fn sandbox_support(&self) -> SandboxSupport {
        SandboxSupport::detect()
    }

    fn resource_support(&self) -> hyoka_proctrack::ResourceSupport {
        self.tracker.resource_support().clone()
    }

    fn network_namespace(&self) -> Result<Option<NetNamespace>, ProcTrackError> {
        NetNamespace::create().map(Some)
    }

    async fn probe(&self, command: AgentCommand, timeout: Duration) -> bool {
        // A probe is short-lived and runs in its own process group, killed as a whole
        // (through the verified signaller) when it overruns or ends; it is the one phase
        // process not spawned through the tracker. It runs in its eval's sandbox (and
        // network namespace).
        let mut probe = std::process::Command::new(&command.program);
        if let Err(err) = command.sandbox.apply_to(&mut probe) {
            tracing::warn!(error = %err, "cannot sandbox a readiness probe");
            return false;
        }
        let mut probe = tokio::process::Command::from(probe);
        probe
            .args(&command.args)
            .current_dir(command.cwd.as_deref().unwrap_or(Path::new(".")))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let Ok(mut child) = GroupChild::spawn(probe) else {
            return false;
        };
        matches!(
            child.wait_within(timeout, std::future::pending()).await,
            GroupExit::Exited(status) if status.success()
        )
    }
}

/// A process started through the tracker.
struct TrackedProcess(Agent);

#[async_trait]
impl Process for TrackedProcess {
    fn take_stdout(&mut self) -> Option<Pipe> {
        self.0.stdout.take().map(|p| Box::new(p) as Pipe)
    }

    fn take_stderr(&mut self) -> Option<Pipe> {
        self.0.stderr.take().map(|p| Box::new(p) as Pipe)
    }

    fn layers(&self) -> Layers {
        self.0.layers()
    }

    async fn wait(&mut self) -> Option<AgentExit> {
        self.0.wait().await.ok()
    }

    fn exit(&self) -> Option<AgentExit> {
        self.0.exit()
    }

    fn oom_killed(&self) -> bool {
        // `memory.events` exists where the memory controller is enabled for the leaf; its
        // `oom_kill` line counts the processes the OOM killer ended in it.
        self.0
            .cgroup()
            .and_then(|leaf| std::fs::read_to_string(leaf.join("memory.events")).ok())
            .is_some_and(|events| {
                events.lines().any(|line| {
                    line.strip_prefix("oom_kill ")
                        .and_then(|n| n.trim().parse::<u64>().ok())
                        .is_some_and(|n| n > 0)
                })
            })
    }

    fn resource_usage(&self) -> Option<hyoka_proctrack::ResourceUsage> {
        self.0.resource_usage()
    }

    fn refresh(&mut self) {
        // One `/proc` scan (about 10 µs per process); off the runtime's worker where the
        // runtime allows it.
        let refreshed = match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| self.0.refresh())
            }
            _ => self.0.refresh(),
        };
        if let Err(err) = refreshed {
            tracing::debug!(error = %err, "process refresh failed");
        }
    }

    async fn teardown(&mut self, options: TeardownOptions) -> TeardownReport {
        match self.0.teardown(options).await {
            Ok(report) => report,
            Err(err) => {
                tracing::error!(error = %err, "teardown failed");
                TeardownReport::default()
            }
        }
    }
}

/// [`Workspaces`] of real, marked, self-removing directories.
#[derive(Debug, Clone, Copy, Default)]
pub struct TempWorkspaces;

impl Workspaces for TempWorkspaces {
    fn create(
        &self,
        options: &WorkspaceOptions,
        record: &mut dyn FnMut(&Path) -> Result<(), ProcTrackError>,
    ) -> Result<Box<dyn EvalWorkspace>, WorkspaceError> {
        Ok(Box::new(TempWorkspace::create_recorded(options, record)?))
    }
}

impl EvalWorkspace for TempWorkspace {
    fn skipped_links(&self) -> usize {
        self.starter_report().map_or(0, |r| r.skipped.len())
    }

    fn rebaseline(&mut self) -> Result<(), WorkspaceError> {
        TempWorkspace::rebaseline(self)
    }

    fn changes(&self, limit: usize) -> Result<(Usage, Vec<Change>), WorkspaceError> {
        hyoka_workspace::scan_changes(self.path(), self.snapshot(), limit)
    }

    fn exists(&self, path: &Path) -> bool {
        self.path().join(path).exists()
    }

    fn watch(&self, tx: UnboundedSender<WatchUpdate>) -> Box<dyn Send> {
        Box::new(watch(self.path(), self.snapshot().clone(), tx))
    }

    fn close(self: Box<Self>, status: Status) -> WorkspaceEnd {
        let outcome = if status == Status::Passed {
            RunVerdict::Success
        } else {
            RunVerdict::Failure
        };
        match TempWorkspace::close(*self, outcome) {
            Ok(Closed::Kept(path)) => WorkspaceEnd::Kept(path),
            Ok(_) => WorkspaceEnd::Removed,
            Err(WorkspaceError::RemoveIncomplete { path, report }) => {
                tracing::error!(workspace = %path.display(), "{}", report.summary());
                WorkspaceEnd::Incomplete(
                    report
                        .leftovers
                        .iter()
                        .map(|l| format!("{}: {}", l.path.display(), l.reason))
                        .collect(),
                )
            }
            Err(err) => WorkspaceEnd::Failed(err.to_string()),
        }
    }
}
