//! In-memory fakes of the harness seams (`mock` feature): [`FakeHost`] runs scripted
//! programs ([`FakeProgram`]) in `MemWorkspace`s, tears them down through `hyoka-proctrack`'s
//! real teardown against its `FakeSystem`, and tells time with [`FakeClock`] on tokio's
//! paused clock, so the harness policy runs in process on an exact virtual timeline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use hyoka_proctrack::{
    AgentCommand, AgentExit, Clock, FAKE_SELF_PID, FakeSystem, Layers, LedgerEntry, NetIsolation,
    NetNamespace, OnTerm, ProcRef, ProcTable, ProcTrackError, SandboxSupport, Scope, Seams,
    TeardownOptions, TeardownReport, teardown,
};
use hyoka_workspace::{
    Entry, MarkerOwner, MemWorkspace, Usage, Workspace, WorkspaceError, WorkspaceOptions,
};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;

use crate::host::{EvalWorkspace, Harness, Pipe, Process, Processes, WorkspaceEnd, Workspaces};
use crate::report::Status;
use crate::watch::{FileChange, WatchUpdate};

/// The instance token of the fake run.
const FAKE_INSTANCE: &str = "00000000000000fa";

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One step of a [`FakeProgram`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Sleep(Duration),
    Print(String),
    Write(PathBuf, Vec<u8>),
}

/// How a [`FakeProgram`] ends once its steps are done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Exit(i32),
    Killed(i32),
    Hang,
    OomKilled,
}

/// What a fake program does when it is started: steps in order (wait, print a line on
/// stdout, write a file into its working directory's workspace), then it exits with a code
/// or runs until it is stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeProgram {
    steps: Vec<Step>,
    end: End,
    stubborn_child: bool,
}

impl Default for FakeProgram {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeProgram {
    /// A program that exits 0 at once.
    pub fn new() -> Self {
        Self {
            steps: Vec::new(),
            end: End::Exit(0),
            stubborn_child: false,
        }
    }

    /// Waits `duration` (virtual time on a paused runtime).
    #[must_use]
    pub fn sleeps(mut self, duration: Duration) -> Self {
        self.steps.push(Step::Sleep(duration));
        self
    }

    /// Prints `line` (and a newline) on stdout.
    #[must_use]
    pub fn prints(mut self, line: impl Into<String>) -> Self {
        self.steps.push(Step::Print(line.into()));
        self
    }

    /// Writes `contents` to `path` in the workspace it runs in.
    #[must_use]
    pub fn writes(mut self, path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) -> Self {
        self.steps.push(Step::Write(path.into(), contents.into()));
        self
    }

    /// Exits with `code` after its steps.
    #[must_use]
    pub fn exits(mut self, code: i32) -> Self {
        self.end = End::Exit(code);
        self
    }

    /// Dies of `signal` after its steps, sent by someone other than the harness (Slurm's
    /// `scancel` signals every process of a job).
    #[must_use]
    pub fn killed_by(mut self, signal: i32) -> Self {
        self.end = End::Killed(signal);
        self
    }

    /// Runs until it is stopped after its steps.
    #[must_use]
    pub fn hangs(mut self) -> Self {
        self.end = End::Hang;
        self
    }

    /// Is killed by the kernel's OOM killer (SIGKILL, counted by its cgroup) after its steps.
    #[must_use]
    pub fn oom_killed(mut self) -> Self {
        self.end = End::OomKilled;
        self
    }

    /// Starts a child in its process group that ignores SIGTERM, so teardown needs SIGKILL.
    #[must_use]
    pub fn leaves_stubborn_child(mut self) -> Self {
        self.stubborn_child = true;
        self
    }
}

/// Wall time that follows tokio's clock from a fixed start: on a paused runtime every record
/// time is exact.
#[derive(Debug, Clone, Copy)]
pub struct FakeClock {
    wall: SystemTime,
    start: tokio::time::Instant,
}

impl FakeClock {
    /// A clock whose wall time is `wall` now (call it inside the runtime).
    pub fn new(wall: SystemTime) -> Self {
        Self {
            wall,
            start: tokio_now(),
        }
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the fake clock follows tokio's clock, which tests pause"
)]
fn tokio_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

impl Clock for FakeClock {
    fn now(&self) -> std::time::Instant {
        tokio_now().into_std()
    }

    fn wall(&self) -> SystemTime {
        self.wall + tokio_now().saturating_duration_since(self.start)
    }

    /// A real, blocking sleep: tokio's paused clock moves only while the runtime waits, so
    /// nothing on it may block. The harness never sleeps on its clock (teardown's waits run on
    /// `hyoka-proctrack`'s own `FakeClock`).
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// The fake processes, workspaces and clock of a harness, sharing one [`FakeSystem`].
///
/// Programs are looked up by the file name of the command's program; a command naming no
/// registered program fails to start (`ENOENT`). A started program is a process of the fake
/// system (its own session and group, pid from 1001); teardown is `hyoka-proctrack`'s real
/// [`teardown`] against that system, on its fake clock. Workspaces are in memory
/// (`/mem/hyoka-<run>[-<eval>]-<n>`); starters and injected files are not copied.
#[derive(Debug, Clone)]
pub struct FakeHost {
    inner: Arc<Inner>,
    clock: FakeClock,
    /// The ids started through this harness: like a run's tracker, a harness gives an id to
    /// one start only.
    ids: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

#[derive(Debug)]
struct Inner {
    /// Each name's programs, one per start in order (the last repeats), and how many
    /// starts there were.
    programs: Mutex<BTreeMap<String, (Vec<FakeProgram>, usize)>>,
    system: FakeSystem,
    workspaces: Mutex<Vec<Arc<MemEval>>>,
    spawned: Mutex<Vec<(String, AgentCommand)>>,
    recorded: Mutex<Vec<(String, PathBuf)>>,
    kept: Mutex<Vec<(String, PathBuf)>>,
    forgotten: Mutex<Vec<PathBuf>>,
    sandbox: Mutex<SandboxSupport>,
}

impl FakeHost {
    /// A host with no programs, whose wall clock reads `wall` now.
    pub fn new(wall: SystemTime) -> Self {
        Self {
            inner: Arc::new(Inner {
                programs: Mutex::new(BTreeMap::new()),
                system: FakeSystem::new(),
                workspaces: Mutex::new(Vec::new()),
                spawned: Mutex::new(Vec::new()),
                recorded: Mutex::new(Vec::new()),
                kept: Mutex::new(Vec::new()),
                forgotten: Mutex::new(Vec::new()),
                sandbox: Mutex::new(SandboxSupport {
                    landlock: Ok(hyoka_proctrack::LANDLOCK_TARGET_ABI),
                    network: NetIsolation::Direct,
                    mounts: Ok(()),
                    harden: Ok(()),
                }),
            }),
            clock: FakeClock::new(wall),
            ids: Arc::default(),
        }
    }

    /// Registers what the program named `name` does.
    pub fn program(&self, name: &str, program: FakeProgram) {
        self.programs(name, vec![program]);
    }

    /// Registers what the program named `name` does on each start: the first start runs
    /// `programs[0]`, the second `programs[1]`, and so on; the last one repeats. An empty
    /// list unregisters the name.
    pub fn programs(&self, name: &str, programs: Vec<FakeProgram>) {
        let mut registered = lock(&self.inner.programs);
        if programs.is_empty() {
            registered.remove(name);
        } else {
            registered.insert(name.to_owned(), (programs, 0));
        }
    }

    /// A harness on these fakes, for one run: as a run's tracker does, it refuses to start
    /// an id twice (`ProcTrackError::DuplicateEval`).
    pub fn harness(&self) -> Harness {
        let run = Self {
            ids: Arc::default(),
            ..self.clone()
        };
        Harness {
            processes: Arc::new(run),
            workspaces: Arc::new(self.clone()),
            clock: Arc::new(self.clock),
        }
    }

    /// Makes the host offer `support` for sandboxes (by default Landlock at the target ABI
    /// and network namespaces).
    pub fn set_sandbox_support(&self, support: SandboxSupport) {
        *lock(&self.inner.sandbox) = support;
    }

    /// The ids and commands started so far, in order.
    pub fn spawned(&self) -> Vec<(String, AgentCommand)> {
        lock(&self.inner.spawned).clone()
    }

    /// The workspaces recorded for crash cleanup so far, as a ledger lists them: one per
    /// id, in the order they were last recorded.
    pub fn recorded(&self) -> Vec<(String, PathBuf)> {
        lock(&self.inner.recorded).clone()
    }

    /// The workspaces whose records were dropped once they were removed, in order.
    pub fn forgotten(&self) -> Vec<PathBuf> {
        lock(&self.inner.forgotten).clone()
    }

    /// The workspaces recorded as kept for the user so far, as a ledger lists them: one
    /// per id.
    pub fn recorded_kept(&self) -> Vec<(String, PathBuf)> {
        lock(&self.inner.kept).clone()
    }

    /// The fake processes still alive.
    pub fn alive(&self) -> Vec<ProcRef> {
        self.inner.system.alive()
    }

    /// The workspaces (and isolated homes) still open, by path.
    pub fn open_workspaces(&self) -> Vec<PathBuf> {
        lock(&self.inner.workspaces)
            .iter()
            .filter(|w| !*lock(&w.closed))
            .map(|w| w.path.clone())
            .collect()
    }

    fn workspace_at(&self, path: &Path) -> Option<Arc<MemEval>> {
        lock(&self.inner.workspaces)
            .iter()
            .find(|w| w.path == path)
            .cloned()
    }
}

#[async_trait]
impl Processes for FakeHost {
    fn instance(&self) -> Option<String> {
        Some(FAKE_INSTANCE.to_owned())
    }

    fn marker_owner(&self) -> Option<MarkerOwner> {
        Some(MarkerOwner::pid(FAKE_SELF_PID))
    }

    fn record_workspace(&self, id: &str, path: &Path) -> Result<(), ProcTrackError> {
        // As the ledger records it: a later record of the same id replaces the earlier one.
        let mut recorded = lock(&self.inner.recorded);
        recorded.retain(|(known, _)| known != id);
        recorded.push((id.to_owned(), path.to_owned()));
        Ok(())
    }

    fn record_kept(&self, id: &str, path: &Path) -> Result<(), ProcTrackError> {
        let mut kept = lock(&self.inner.kept);
        kept.retain(|(known, _)| known != id);
        kept.push((id.to_owned(), path.to_owned()));
        Ok(())
    }

    fn forget_workspace(&self, path: &Path) -> Result<(), ProcTrackError> {
        lock(&self.inner.forgotten).push(path.to_owned());
        Ok(())
    }

    async fn spawn(
        &self,
        id: &str,
        command: AgentCommand,
    ) -> Result<Box<dyn Process>, ProcTrackError> {
        let name = command
            .program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !lock(&self.ids).insert(id.to_owned()) {
            return Err(ProcTrackError::DuplicateEval {
                eval_id: id.to_owned(),
            });
        }
        let next = lock(&self.inner.programs)
            .get_mut(&name)
            .map(|(programs, starts)| {
                let program = programs[(*starts).min(programs.len() - 1)].clone();
                *starts += 1;
                program
            });
        let Some(program) = next else {
            // As the tracker does after a failed start, the id is free again.
            lock(&self.ids).remove(id);
            return Err(ProcTrackError::Spawn {
                program: command.program,
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        };
        lock(&self.inner.spawned).push((id.to_owned(), command.clone()));
        let system = &self.inner.system;
        let root = system.spawn(FAKE_SELF_PID, true, &name, None);
        let mut known = Vec::new();
        if program.stubborn_child {
            let child = system.spawn(root.pid, false, "stubborn", None);
            system.set_on_term(child.pid, OnTerm::Ignore);
            // Tracked like a ledger entry, so teardown finds it after its parent exited.
            known.extend(
                system
                    .process(child.pid)
                    .map(|info| LedgerEntry::from_info(&info, id)),
            );
        }
        let workspace = command
            .cwd
            .as_deref()
            .and_then(|cwd| self.workspace_at(cwd));
        let (exit_tx, exit_rx) = watch::channel(None);
        let exit_tx = Arc::new(exit_tx);
        let (stdout, writer) = tokio::io::duplex(64 * 1024);
        let oom = program.end == End::OomKilled;
        let script = tokio::spawn(run_script(
            program,
            writer,
            workspace,
            Arc::clone(&exit_tx),
            system.clone(),
            root,
        ));
        Ok(Box::new(FakeProcess {
            oom,
            system: system.clone(),
            root,
            known,
            stdout: Some(Box::new(stdout)),
            exit_tx,
            exit: exit_rx,
            script,
        }))
    }

    fn sandbox_support(&self) -> SandboxSupport {
        lock(&self.inner.sandbox).clone()
    }

    /// No namespace: fake programs have no network to take away.
    fn network_namespace(&self) -> Result<Option<NetNamespace>, ProcTrackError> {
        Ok(None)
    }

    async fn probe(&self, command: AgentCommand, _timeout: Duration) -> bool {
        let name = command
            .program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        lock(&self.inner.programs)
            .get(&name)
            .and_then(|(programs, starts)| programs.get((*starts).min(programs.len() - 1)))
            .is_some_and(|p| p.end == End::Exit(0))
    }
}

async fn run_script(
    program: FakeProgram,
    mut stdout: tokio::io::DuplexStream,
    workspace: Option<Arc<MemEval>>,
    exit: Arc<watch::Sender<Option<AgentExit>>>,
    system: FakeSystem,
    root: ProcRef,
) {
    for step in program.steps {
        match step {
            Step::Sleep(duration) => tokio::time::sleep(duration).await,
            Step::Print(line) => {
                let _ = stdout.write_all(format!("{line}\n").as_bytes()).await;
            }
            Step::Write(path, contents) => {
                if let Some(workspace) = &workspace {
                    workspace.write_watched(&path, &contents);
                }
            }
        }
    }
    match program.end {
        End::Exit(code) => {
            system.exit(root.pid);
            exit.send_replace(Some(AgentExit::Code(code)));
        }
        End::OomKilled => {
            system.exit(root.pid);
            exit.send_replace(Some(AgentExit::Signal(SIGKILL)));
        }
        End::Killed(signal) => {
            system.exit(root.pid);
            exit.send_replace(Some(AgentExit::Signal(signal)));
        }
        End::Hang => std::future::pending().await,
    }
}

/// A running fake program.
struct FakeProcess {
    oom: bool,
    system: FakeSystem,
    root: ProcRef,
    known: Vec<LedgerEntry>,
    stdout: Option<Pipe>,
    exit_tx: Arc<watch::Sender<Option<AgentExit>>>,
    exit: watch::Receiver<Option<AgentExit>>,
    script: tokio::task::JoinHandle<()>,
}

#[async_trait]
impl Process for FakeProcess {
    fn take_stdout(&mut self) -> Option<Pipe> {
        self.stdout.take()
    }

    fn take_stderr(&mut self) -> Option<Pipe> {
        Some(Box::new(tokio::io::empty()))
    }

    fn layers(&self) -> Layers {
        Layers {
            cgroup: false,
            shim: false,
            session: true,
            marker: true,
        }
    }

    async fn wait(&mut self) -> Option<AgentExit> {
        let exit = self.exit.wait_for(Option::is_some).await.ok()?;
        *exit
    }

    fn exit(&self) -> Option<AgentExit> {
        *self.exit.borrow()
    }

    fn oom_killed(&self) -> bool {
        self.oom
    }

    fn refresh(&mut self) {}

    async fn teardown(&mut self, options: TeardownOptions) -> TeardownReport {
        // The program stops running: its stdout closes, its script goes no further.
        self.script.abort();
        let clock = hyoka_proctrack::FakeClock::new(std_now());
        let seams = Seams {
            table: &self.system,
            signaller: &self.system,
            clock: &clock,
        };
        let scope = Scope {
            roots: vec![self.root],
            known: self.known.clone(),
            ..Scope::default()
        };
        let report = teardown(seams, &scope, &[], &options);
        if self.exit().is_none() {
            let terminated = report.processes.iter().any(|p| {
                p.pid == self.root.pid && p.outcome == hyoka_proctrack::ProcessFate::Terminated
            });
            let signal = if terminated { SIGTERM } else { SIGKILL };
            self.exit_tx.send_replace(Some(AgentExit::Signal(signal)));
        }
        report
    }
}

const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;

#[expect(
    clippy::disallowed_methods,
    reason = "proctrack's fake clock starts somewhere; only differences are used"
)]
fn std_now() -> std::time::Instant {
    std::time::Instant::now()
}

/// An in-memory workspace of a [`FakeHost`]: a `MemWorkspace` at a path of its own, whose
/// writes by fake programs reach the harness's watcher.
#[derive(Debug)]
struct MemEval {
    path: PathBuf,
    inner: Mutex<Arc<MemWorkspace>>,
    watcher: Arc<Mutex<Option<UnboundedSender<WatchUpdate>>>>,
    closed: Mutex<bool>,
    keep: hyoka_workspace::KeepPolicy,
}

impl MemEval {
    fn mem(&self) -> Arc<MemWorkspace> {
        Arc::clone(&lock(&self.inner))
    }

    /// A fake program's write: into the workspace, and on to the watcher.
    fn write_watched(&self, path: &Path, contents: &[u8]) {
        let mem = self.mem();
        let existed = mem.read_file(path).is_ok();
        if mem.write_file(path, contents).is_err() {
            return;
        }
        if let (Some(tx), Ok(usage)) = (lock(&self.watcher).as_ref(), mem.usage()) {
            let change = if existed {
                FileChange::Changed
            } else {
                FileChange::Created
            };
            let _ = tx.send(WatchUpdate {
                usage,
                change: Some((change, path.display().to_string())),
            });
        }
    }

    /// Every file below `dir`, recursively.
    fn files(mem: &MemWorkspace, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for entry in mem.list(dir).unwrap_or_default() {
            let path = dir.join(&entry.name);
            match entry.kind {
                hyoka_workspace::EntryKind::Dir => Self::files(mem, &path, out),
                _ => {
                    if let Ok(bytes) = mem.read_file(&path) {
                        out.push((path, bytes));
                    }
                }
            }
        }
    }
}

/// Stops a [`MemEval`]'s watcher when dropped.
struct WatchGuard(Arc<Mutex<Option<UnboundedSender<WatchUpdate>>>>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        lock(&self.0).take();
    }
}

/// A [`FakeHost`] workspace handed to the harness.
#[derive(Debug)]
struct MemHandle(Arc<MemEval>);

impl Workspace for MemHandle {
    fn path(&self) -> &Path {
        &self.0.path
    }

    fn write_file(&self, rel: &Path, contents: &[u8]) -> Result<(), WorkspaceError> {
        self.0.mem().write_file(rel, contents)
    }

    fn read_file(&self, rel: &Path) -> Result<Vec<u8>, WorkspaceError> {
        self.0.mem().read_file(rel)
    }

    fn create_dir(&self, rel: &Path) -> Result<(), WorkspaceError> {
        self.0.mem().create_dir(rel)
    }

    fn remove(&self, rel: &Path) -> Result<(), WorkspaceError> {
        self.0.mem().remove(rel)
    }

    fn list(&self, rel: &Path) -> Result<Vec<Entry>, WorkspaceError> {
        self.0.mem().list(rel)
    }

    fn usage(&self) -> Result<Usage, WorkspaceError> {
        self.0.mem().usage()
    }
}

impl EvalWorkspace for MemHandle {
    fn skipped_links(&self) -> usize {
        0
    }

    fn rebaseline(&mut self) -> Result<(), WorkspaceError> {
        let mem = self.0.mem();
        let mut files = Vec::new();
        MemEval::files(&mem, Path::new(""), &mut files);
        *lock(&self.0.inner) = Arc::new(MemWorkspace::with_files(files)?);
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let mem = self.0.mem();
        path.is_relative() && (mem.read_file(path).is_ok() || mem.list(path).is_ok())
    }

    fn watch(&self, tx: UnboundedSender<WatchUpdate>) -> Box<dyn Send> {
        *lock(&self.0.watcher) = Some(tx);
        Box::new(WatchGuard(Arc::clone(&self.0.watcher)))
    }

    fn close(self: Box<Self>, status: Status) -> WorkspaceEnd {
        *lock(&self.0.closed) = true;
        let keep = match self.0.keep {
            hyoka_workspace::KeepPolicy::Never => false,
            hyoka_workspace::KeepPolicy::OnFailure => status != Status::Passed,
            hyoka_workspace::KeepPolicy::Always => true,
        };
        if keep {
            WorkspaceEnd::Kept(self.0.path.clone())
        } else {
            WorkspaceEnd::Removed
        }
    }
}

impl Workspaces for FakeHost {
    fn create(
        &self,
        options: &WorkspaceOptions,
        record: &mut dyn FnMut(&Path) -> Result<(), ProcTrackError>,
    ) -> Result<Box<dyn EvalWorkspace>, WorkspaceError> {
        let mut workspaces = lock(&self.inner.workspaces);
        let name = match &options.eval_id {
            Some(eval) => format!("hyoka-{}-{eval}-{}", options.run_id, workspaces.len()),
            None => format!("hyoka-{}-{}", options.run_id, workspaces.len()),
        };
        let path = Path::new("/mem").join(name);
        // Recorded before it exists, as `TempWorkspace::create_recorded` does.
        record(&path).map_err(|e| WorkspaceError::Record {
            path: path.clone(),
            source: Box::new(e),
        })?;
        let workspace = Arc::new(MemEval {
            path,
            inner: Mutex::new(Arc::new(MemWorkspace::new())),
            watcher: Arc::new(Mutex::new(None)),
            closed: Mutex::new(false),
            keep: options.keep,
        });
        workspaces.push(Arc::clone(&workspace));
        Ok(Box::new(MemHandle(workspace)))
    }
}
