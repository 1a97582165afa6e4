//! A host that embeds the harness through `hyoka-eval` alone, the way another tool would:
//! it wraps any [`Processes`] and [`Workspaces`] to record what the harness asked of them.
//! Every type the seams speak is named here through `hyoka_eval`, so a type they speak that
//! `hyoka-eval` stopped re-exporting fails this crate's build.
//!
//! # Overview
//!
//! [`Recording`] wraps a [`Harness`]'s seams; [`Recording::spawned`] and
//! [`Recording::workspaces`] say what the harness did through them.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use std::time::SystemTime;
//! use hyoka_downstream_host::Recording;
//! use hyoka_eval::{EvalId, EvalSpec, FakeHost, FakeProgram, NoObserver, RunId, RunPlan, Stop, run};
//!
//! # let reports = tempfile::tempdir()?;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build()?;
//! runtime.block_on(async {
//!     // A real host wraps `Harness::tracked(tracker)`; the fake host runs in memory.
//!     let host = FakeHost::new(SystemTime::UNIX_EPOCH);
//!     host.program("agent", FakeProgram::new().exits(0));
//!     let recording = Arc::new(Recording::new(host.harness()));
//!     let spec = EvalSpec::new(EvalId::new("hello")?, vec!["agent".into()]);
//!     let plan = RunPlan::new(RunId::new("doc")?, reports.path(), "/mem", vec![spec]);
//!     run(plan, &recording.harness(), Stop::never(), Arc::new(NoObserver)).await?;
//!     assert_eq!(recording.spawned(), ["hello"]);
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyoka_eval::{
    AgentCommand, AgentExit, Entry, EvalWorkspace, Harness, Layers, MarkerOwner, NetNamespace,
    Pipe, ProcTrackError, Process, Processes, ResourceSupport, ResourceUsage, SandboxSupport,
    Status, TeardownOptions, TeardownReport, Usage, WatchUpdate, Workspace, WorkspaceEnd,
    WorkspaceError, WorkspaceOptions, Workspaces, async_trait,
};
use tokio::sync::mpsc::UnboundedSender;

/// Seams that pass every call on to a harness's own and remember the agents spawned and the
/// workspaces created.
pub struct Recording {
    inner: Harness,
    spawned: Mutex<Vec<String>>,
    workspaces: Mutex<Vec<PathBuf>>,
}

impl Recording {
    /// Records what goes through `inner`'s seams.
    pub fn new(inner: Harness) -> Self {
        Self {
            inner,
            spawned: Mutex::new(Vec::new()),
            workspaces: Mutex::new(Vec::new()),
        }
    }

    /// A harness whose processes and workspaces go through this recording (its clock is the
    /// inner harness's).
    pub fn harness(self: &Arc<Self>) -> Harness {
        Harness {
            processes: Arc::new(RecordingProcesses(Arc::clone(self))),
            workspaces: Arc::new(RecordingWorkspaces(Arc::clone(self))),
            clock: Arc::clone(&self.inner.clock),
        }
    }

    /// The ids the harness spawned processes under, in order.
    pub fn spawned(&self) -> Vec<String> {
        self.spawned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The workspaces the harness created, in order.
    pub fn workspaces(&self) -> Vec<PathBuf> {
        self.workspaces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

struct RecordingProcesses(Arc<Recording>);

#[async_trait]
impl Processes for RecordingProcesses {
    fn instance(&self) -> Option<String> {
        self.0.inner.processes.instance()
    }

    fn marker_owner(&self) -> Option<MarkerOwner> {
        self.0.inner.processes.marker_owner()
    }

    fn record_workspace(&self, id: &str, path: &Path) -> Result<(), ProcTrackError> {
        self.0.inner.processes.record_workspace(id, path)
    }

    fn record_kept(&self, id: &str, path: &Path) -> Result<(), ProcTrackError> {
        self.0.inner.processes.record_kept(id, path)
    }

    fn forget_workspace(&self, path: &Path) -> Result<(), ProcTrackError> {
        self.0.inner.processes.forget_workspace(path)
    }

    async fn spawn(
        &self,
        id: &str,
        command: AgentCommand,
    ) -> Result<Box<dyn Process>, ProcTrackError> {
        self.0
            .spawned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(id.to_owned());
        let process = self.0.inner.processes.spawn(id, command).await?;
        Ok(Box::new(RecordedProcess(process)))
    }

    fn sandbox_support(&self) -> SandboxSupport {
        self.0.inner.processes.sandbox_support()
    }

    fn resource_support(&self) -> ResourceSupport {
        self.0.inner.processes.resource_support()
    }

    fn network_namespace(&self) -> Result<Option<NetNamespace>, ProcTrackError> {
        self.0.inner.processes.network_namespace()
    }

    async fn probe(&self, command: AgentCommand, timeout: Duration) -> bool {
        self.0.inner.processes.probe(command, timeout).await
    }
}

struct RecordedProcess(Box<dyn Process>);

#[async_trait]
impl Process for RecordedProcess {
    fn take_stdout(&mut self) -> Option<Pipe> {
        self.0.take_stdout()
    }

    fn take_stderr(&mut self) -> Option<Pipe> {
        self.0.take_stderr()
    }

    fn layers(&self) -> Layers {
        self.0.layers()
    }

    async fn wait(&mut self) -> Option<AgentExit> {
        self.0.wait().await
    }

    fn exit(&self) -> Option<AgentExit> {
        self.0.exit()
    }

    fn oom_killed(&self) -> bool {
        self.0.oom_killed()
    }

    fn resource_usage(&self) -> Option<ResourceUsage> {
        self.0.resource_usage()
    }

    fn refresh(&mut self) {
        self.0.refresh();
    }

    async fn teardown(&mut self, options: TeardownOptions) -> TeardownReport {
        self.0.teardown(options).await
    }
}

struct RecordingWorkspaces(Arc<Recording>);

impl Workspaces for RecordingWorkspaces {
    fn create(
        &self,
        options: &WorkspaceOptions,
        record: &mut dyn FnMut(&Path) -> Result<(), ProcTrackError>,
    ) -> Result<Box<dyn EvalWorkspace>, WorkspaceError> {
        let workspace = self.0.inner.workspaces.create(options, record)?;
        self.0
            .workspaces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(workspace.path().to_owned());
        Ok(Box::new(RecordedWorkspace(workspace)))
    }
}

struct RecordedWorkspace(Box<dyn EvalWorkspace>);

impl Workspace for RecordedWorkspace {
    fn path(&self) -> &Path {
        self.0.path()
    }

    fn write_file(&self, rel: &Path, contents: &[u8]) -> Result<(), WorkspaceError> {
        self.0.write_file(rel, contents)
    }

    fn read_file(&self, rel: &Path) -> Result<Vec<u8>, WorkspaceError> {
        self.0.read_file(rel)
    }

    fn create_dir(&self, rel: &Path) -> Result<(), WorkspaceError> {
        self.0.create_dir(rel)
    }

    fn remove(&self, rel: &Path) -> Result<(), WorkspaceError> {
        self.0.remove(rel)
    }

    fn list(&self, rel: &Path) -> Result<Vec<Entry>, WorkspaceError> {
        self.0.list(rel)
    }

    fn usage(&self) -> Result<Usage, WorkspaceError> {
        self.0.usage()
    }
}

impl EvalWorkspace for RecordedWorkspace {
    fn skipped_links(&self) -> usize {
        self.0.skipped_links()
    }

    fn rebaseline(&mut self) -> Result<(), WorkspaceError> {
        self.0.rebaseline()
    }

    fn exists(&self, path: &Path) -> bool {
        self.0.exists(path)
    }

    fn watch(&self, tx: UnboundedSender<WatchUpdate>) -> Box<dyn Send> {
        self.0.watch(tx)
    }

    fn close(self: Box<Self>, status: Status) -> WorkspaceEnd {
        self.0.close(status)
    }
}

#[cfg(test)]
mod tests;
