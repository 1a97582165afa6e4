//! The tracker: one per run. It holds the owner lock and the ledger, spawns each eval's agent
//! under every available layer, refreshes discovery, and tears each tree down.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use rustix::io::FdFlags;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt as _, BufReader, Lines};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::ProcTrackError;
use crate::caps::{Capabilities, Layers};
use crate::cgroup::{CgroupLeaf, CgroupRoot};
use crate::clock::{SystemClock, unix_now};
use crate::discover::{Marker, Scope, discover};
use crate::identity::{Identity, ProcRef, parse_stat, parse_stat_cpu_ticks, validate_id};
use crate::ledger::{LEDGER_FILE, Ledger, LedgerEntry};
use crate::lock::{LOCK_FILE, OwnerLock};
use crate::proc_table::{NativeProcTable, ProcTable};
use crate::shim::shim_args;
use crate::signal::NativeSignaller;
use crate::teardown::{Seams, TeardownOptions, TeardownReport, teardown};

/// Whether to use the cgroup v2 layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CgroupMode {
    /// Use it when this machine offers a writable cgroup2 tree, else degrade (the default).
    #[default]
    Auto,
    /// Never use it.
    Off,
    /// Fail [`Tracker::start`] when it is unavailable.
    Required,
}

/// How to start the subreaper shim: a program and its leading arguments, to which the
/// tracker appends the shim protocol ([`shim_args`](crate::shim_args)).
///
/// For hyoka this is the current executable and `["__shim"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// The program (absolute, or found on `PATH`).
    pub program: PathBuf,
    /// Arguments before the shim protocol, such as the hidden subcommand.
    pub args: Vec<OsString>,
}

/// What [`Tracker::start`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackerOptions {
    /// The run id (`[A-Za-z0-9][A-Za-z0-9._-]{0,63}`).
    pub run_id: String,
    /// The reports directory; the run's directory is `<reports_dir>/<run_id>`.
    pub reports_dir: PathBuf,
    /// Whether to use the cgroup layer.
    pub cgroup: CgroupMode,
    /// The shim launcher; `None` runs agents without the shim layer.
    pub shim: Option<Launcher>,
    /// The grace period the shim uses when it tears its tree down on its own (when hyoka dies).
    pub shim_grace: Duration,
}

impl TrackerOptions {
    /// Options with the defaults: cgroup `Auto`, no shim, a 5 s shim grace period.
    pub fn new(run_id: impl Into<String>, reports_dir: impl Into<PathBuf>) -> Self {
        Self {
            run_id: run_id.into(),
            reports_dir: reports_dir.into(),
            cgroup: CgroupMode::Auto,
            shim: None,
            shim_grace: Duration::from_secs(5),
        }
    }
}

/// Where one of the agent's standard streams goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum StdioMode {
    /// Inherited from hyoka.
    #[default]
    Inherit,
    /// `/dev/null`.
    Null,
    /// A pipe, available as `Agent::stdin` / `stdout` / `stderr`.
    Piped,
}

impl StdioMode {
    fn stdio(self) -> Stdio {
        match self {
            Self::Inherit => Stdio::inherit(),
            Self::Null => Stdio::null(),
            Self::Piped => Stdio::piped(),
        }
    }
}

/// The agent to run: program, arguments, environment, directory and streams.
///
/// The tracker adds `HYOKA_RUN_ID` and `HYOKA_EVAL_ID` to the environment (overriding any
/// values given here): they are the marker discovery scans for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Start from an empty environment instead of hyoka's.
    pub env_clear: bool,
    /// Variables to set.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory (hyoka's when `None`).
    pub cwd: Option<PathBuf>,
    /// Standard input.
    pub stdin: StdioMode,
    /// Standard output.
    pub stdout: StdioMode,
    /// Standard error.
    pub stderr: StdioMode,
}

impl AgentCommand {
    /// `program` with `args`, hyoka's environment and directory, streams inherited.
    pub fn new<I, S>(program: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }
}

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

struct Shared {
    run_id: String,
    run_dir: PathBuf,
    ledger_path: PathBuf,
    owner: Identity,
    lock: Mutex<Option<OwnerLock>>,
    ledger: Mutex<Ledger>,
    cgroup: Option<CgroupRoot>,
    cgroup_unavailable: Option<String>,
    mode: CgroupMode,
    shim: Option<Launcher>,
    shim_grace: Duration,
    evals: Mutex<BTreeSet<String>>,
    survivors: Mutex<usize>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    fn write_ledger(&self, ledger: &Ledger) -> Result<(), ProcTrackError> {
        ledger.write_atomic(&self.ledger_path)
    }

    fn update(&self, f: impl FnOnce(&mut Ledger)) -> Result<(), ProcTrackError> {
        let mut ledger = lock(&self.ledger);
        f(&mut ledger);
        self.write_ledger(&ledger)
    }

    /// Creates eval `eval_id`'s cgroup leaf, when the run has the layer. The leaf is in the
    /// ledger before it exists, so an owner killed in between leaves nothing `clean` does
    /// not know of; a leaf that could not be made is forgotten again.
    fn create_leaf(&self, eval_id: &str) -> Option<Result<CgroupLeaf, ProcTrackError>> {
        let root = self.cgroup.as_ref()?;
        let path = root.leaf_path(&self.run_id, eval_id);
        if let Err(e) = self.update(|l| {
            let _ = l.set_cgroup(eval_id, &path);
        }) {
            return Some(Err(e));
        }
        let created = root.create_leaf(&self.run_id, eval_id);
        if created.is_err() {
            let _ = self.update(|l| l.cgroups.retain(|c| c.eval_id != eval_id));
        }
        Some(created)
    }

    /// Removes a leaf no agent joined, and its ledger record.
    fn forget_leaf(&self, leaf: &CgroupLeaf, eval_id: &str) {
        if leaf.remove(Duration::ZERO, &SystemClock) {
            let _ = self.update(|l| l.cgroups.retain(|c| c.eval_id != eval_id));
        }
    }
}

/// One run's process tracking: the owner lock, the ledger, and the evals' agents.
///
/// Cheap to clone (an `Arc` inside); clones share the run.
#[derive(Clone)]
pub struct Tracker {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("run_id", &self.shared.run_id)
            .field("run_dir", &self.shared.run_dir)
            .finish_non_exhaustive()
    }
}

impl Tracker {
    /// Starts tracking a run: creates `<reports_dir>/<run_id>/`, takes the owner lock, detects
    /// the cgroup layer and writes the ledger's headers.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`], [`ProcTrackError::RunLive`] (another process owns this
    /// run id), [`ProcTrackError::UncleanRun`] (an earlier run with this id crashed and was
    /// not cleaned), [`ProcTrackError::CgroupUnavailable`] with [`CgroupMode::Required`], or
    /// [`ProcTrackError::Io`].
    pub fn start(options: TrackerOptions) -> Result<Self, ProcTrackError> {
        validate_id("run", &options.run_id)?;
        let run_dir = options.reports_dir.join(&options.run_id);
        std::fs::create_dir_all(&run_dir).map_err(|e| ProcTrackError::io("create", &run_dir, e))?;
        let owner_lock = OwnerLock::acquire(&run_dir.join(LOCK_FILE))?;
        let ledger_path = run_dir.join(LEDGER_FILE);
        if let Ok(previous) = Ledger::read(&ledger_path, std::process::id().try_into().unwrap_or(0))
        {
            let previous = previous.ledger;
            if previous.cleaned.is_none()
                && !(previous.entries.is_empty() && previous.cgroups.is_empty())
            {
                return Err(ProcTrackError::UncleanRun { path: ledger_path });
            }
        }
        let owner = Identity::current()?;
        let (cgroup, cgroup_unavailable) = match options.cgroup {
            CgroupMode::Off => (None, Some("disabled".to_owned())),
            CgroupMode::Auto | CgroupMode::Required => {
                let caps = Capabilities::detect();
                if options.cgroup == CgroupMode::Required && caps.cgroup.is_none() {
                    return Err(ProcTrackError::CgroupUnavailable {
                        reason: caps.cgroup_unavailable.unwrap_or_default(),
                    });
                }
                (caps.cgroup, caps.cgroup_unavailable)
            }
        };
        let ledger = Ledger::new(&options.run_id, owner.clone())?;
        ledger.write_atomic(&ledger_path)?;
        Ok(Self {
            shared: Arc::new(Shared {
                run_id: options.run_id,
                run_dir,
                ledger_path,
                owner,
                lock: Mutex::new(Some(owner_lock)),
                ledger: Mutex::new(ledger),
                cgroup,
                cgroup_unavailable,
                mode: options.cgroup,
                shim: options.shim,
                shim_grace: options.shim_grace,
                evals: Mutex::new(BTreeSet::new()),
                survivors: Mutex::new(0),
            }),
        })
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.shared.run_id
    }

    /// `<reports_dir>/<run_id>`.
    pub fn run_dir(&self) -> &Path {
        &self.shared.run_dir
    }

    /// The ledger file.
    pub fn ledger_path(&self) -> &Path {
        &self.shared.ledger_path
    }

    /// The owner's identity (this process), as written in the ledger and workspace markers.
    pub fn owner(&self) -> &Identity {
        &self.shared.owner
    }

    /// The layers agents of this run get (the cgroup layer may still degrade per eval if a
    /// leaf cannot be created).
    pub fn layers(&self) -> Layers {
        Layers {
            cgroup: self.shared.cgroup.is_some(),
            shim: self.shared.shim.is_some(),
            session: true,
            marker: true,
        }
    }

    /// Why the cgroup layer is not used, when it is not.
    pub fn cgroup_unavailable(&self) -> Option<&str> {
        self.shared.cgroup_unavailable.as_deref()
    }

    /// Records an eval's workspace in the ledger (`# workspace`), so `clean` can remove it
    /// after a crash. Call it before spawning the agent.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`], [`ProcTrackError::InvalidPath`] or
    /// [`ProcTrackError::Io`].
    pub fn record_workspace(&self, eval_id: &str, path: &Path) -> Result<(), ProcTrackError> {
        let mut ledger = lock(&self.shared.ledger);
        ledger.set_workspace(eval_id, path)?;
        self.shared.write_ledger(&ledger)
    }

    /// Spawns `command` as eval `eval_id`'s agent under every available layer: a cgroup leaf
    /// (joined between fork and exec), the shim (if configured), a new session, the marker.
    ///
    /// Must be called within a tokio runtime. The fork happens on one long-lived dedicated
    /// thread, because the parent-death signal fires when the thread that forked exits.
    ///
    /// # Errors
    /// [`ProcTrackError::Spawn`] when the program (or the shim) cannot be started: the CLI's
    /// `spawn_failed`; [`ProcTrackError::DuplicateEval`]; [`ProcTrackError::Shim`];
    /// [`ProcTrackError::Io`] for the ledger or the cgroup.
    pub async fn spawn(
        &self,
        eval_id: &str,
        command: AgentCommand,
    ) -> Result<Agent, ProcTrackError> {
        validate_id("eval", eval_id)?;
        if !lock(&self.shared.evals).insert(eval_id.to_owned()) {
            return Err(ProcTrackError::DuplicateEval {
                eval_id: eval_id.to_owned(),
            });
        }
        let result = self.spawn_inner(eval_id, command).await;
        if result.is_err() {
            lock(&self.shared.evals).remove(eval_id);
        }
        result
    }

    /// Tracks a process that was started by other means (a PTY session, for example) as
    /// eval `eval_id`, so that it and everything it starts are contained and torn down like
    /// a spawned agent: it is recorded in the ledger (and [`Agent::refresh`] keeps its
    /// descendants and marker-carrying processes there, so `clean` finds them after a crash),
    /// moved into a cgroup leaf of its own when that layer is available, and stopped with
    /// its whole tree by [`Agent::teardown`].
    ///
    /// Call it right after starting the process: children it forked before being moved into
    /// the leaf stay outside the leaf, though ancestry and the marker still find them. The
    /// process is not a child of the tracker, so [`Agent::wait`] answers
    /// [`AgentExit::Unknown`] at once; its own parent waits for it.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`], [`ProcTrackError::DuplicateEval`], or
    /// [`ProcTrackError::InvalidIdentity`] when `pid` is not a live process that may be
    /// tracked (pid ≤ 1, ourselves, our own process group).
    pub fn adopt(&self, eval_id: &str, pid: i32) -> Result<Agent, ProcTrackError> {
        validate_id("eval", eval_id)?;
        let table = NativeProcTable::new();
        let info = table.process(pid).filter(|p| !p.is_gone()).ok_or_else(|| {
            ProcTrackError::InvalidIdentity {
                text: pid.to_string(),
                reason: "no such live process",
            }
        })?;
        if crate::signal::refusal(pid, Some(info.pgid), table.self_pid(), table.self_pgid())
            .is_some()
        {
            return Err(ProcTrackError::InvalidIdentity {
                text: pid.to_string(),
                reason: "pid 1, hyoka itself or hyoka's own process group",
            });
        }
        if !lock(&self.shared.evals).insert(eval_id.to_owned()) {
            return Err(ProcTrackError::DuplicateEval {
                eval_id: eval_id.to_owned(),
            });
        }
        let shared = &self.shared;
        let leaf = shared
            .create_leaf(eval_id)
            .and_then(Result::ok)
            .and_then(|leaf| {
                let joined = leaf
                    .procs_fd()
                    .ok()
                    .is_some_and(|fd| rustix::io::write(&fd, pid.to_string().as_bytes()).is_ok());
                if joined {
                    Some(leaf)
                } else {
                    shared.forget_leaf(&leaf, eval_id);
                    None
                }
            });
        let mut agent = Agent::new(shared, eval_id, info.proc_ref(), leaf);
        agent.refresh()?;
        Ok(agent)
    }

    async fn spawn_inner(
        &self,
        eval_id: &str,
        command: AgentCommand,
    ) -> Result<Agent, ProcTrackError> {
        let shared = &self.shared;
        let leaf = match shared.create_leaf(eval_id) {
            Some(Ok(leaf)) => Some(leaf),
            Some(Err(e)) if shared.mode == CgroupMode::Required => return Err(e),
            Some(Err(_)) | None => None,
        };
        let placeholder = ProcRef {
            pid: 0,
            start_ticks: 0,
        };
        let mut agent = Agent::new(shared, eval_id, placeholder, leaf);
        let procs_fd = agent.leaf.as_ref().map(CgroupLeaf::procs_fd).transpose()?;
        let (report_read, report_write) = if shared.shim.is_some() {
            let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                .map_err(|e| ProcTrackError::io("create pipe for", "shim", e.into()))?;
            (Some(r), Some(w))
        } else {
            (None, None)
        };
        let parent = std::process::id();
        let (program, mut cmd) = build_command(
            shared,
            eval_id,
            &command,
            report_write.as_ref().map(AsRawFd::as_raw_fd),
            parent,
        );
        let procs_raw = procs_fd.as_ref().map(AsRawFd::as_raw_fd);
        let report_raw = report_write.as_ref().map(AsRawFd::as_raw_fd);
        // SAFETY: the closure runs between fork and exec and only makes async-signal-safe
        // system calls (write, setsid, prctl, getppid, fcntl) on descriptors the parent keeps
        // open until `spawn` returns; it allocates nothing on success.
        unsafe {
            cmd.as_std_mut()
                .pre_exec(move || pre_exec(procs_raw, report_raw, parent));
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|e| ProcTrackError::Task {
            reason: e.to_string(),
        })?;
        let spawned = on_spawner(move || {
            let _enter = handle.enter();
            cmd.spawn()
        })
        .await?;
        drop(report_write);
        drop(procs_fd);
        let mut child = match spawned {
            Ok(child) => child,
            Err(source) => {
                agent.torn_down = true;
                let _ = agent.finish(&TeardownReport::default());
                return Err(ProcTrackError::Spawn { program, source });
            }
        };
        agent.stdin = child.stdin.take();
        agent.stdout = child.stdout.take();
        agent.stderr = child.stderr.take();
        let child_pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        let table = NativeProcTable::new();
        let child_ref = ProcRef {
            pid: child_pid,
            start_ticks: table.process(child_pid).map_or(0, |p| p.start_ticks),
        };
        agent.child = Some(child);
        match report_read {
            Some(fd) => {
                agent.shim = Some(child_ref);
                handshake(&mut agent, fd, program, &command.program).await?;
            }
            None => agent.process = child_ref,
        }
        agent.refresh()?;
        Ok(agent)
    }

    /// Ends the run: marks the ledger cleaned when every agent was torn down without
    /// survivors (an agent still running keeps its entries, so the mark is withheld), and
    /// releases the owner lock. Call it after every agent was torn down.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when the ledger cannot be written (the lock is released anyway).
    pub fn close(self) -> Result<(), ProcTrackError> {
        let survivors = *lock(&self.shared.survivors);
        let result = self.shared.update(|l| {
            if survivors == 0 && l.entries.is_empty() {
                l.cleaned = Some(unix_now());
            }
        });
        lock(&self.shared.lock).take();
        result
    }
}

fn build_command(
    shared: &Shared,
    eval_id: &str,
    command: &AgentCommand,
    report_fd: Option<i32>,
    parent: u32,
) -> (PathBuf, tokio::process::Command) {
    let (program, mut cmd) = if let Some(launcher) = &shared.shim {
        let mut cmd = tokio::process::Command::new(&launcher.program);
        cmd.args(&launcher.args).args(shim_args(
            report_fd.unwrap_or(-1),
            i32::try_from(parent).unwrap_or(0),
            shared.shim_grace,
            command.program.as_os_str(),
            &command.args,
        ));
        (launcher.program.clone(), cmd)
    } else {
        let mut cmd = tokio::process::Command::new(&command.program);
        cmd.args(&command.args);
        (command.program.clone(), cmd)
    };
    if command.env_clear {
        cmd.env_clear();
    }
    cmd.envs(command.env.iter().map(|(k, v)| (k, v)))
        .env("HYOKA_RUN_ID", &shared.run_id)
        .env("HYOKA_EVAL_ID", eval_id)
        .stdin(command.stdin.stdio())
        .stdout(command.stdout.stdio())
        .stderr(command.stderr.stdio())
        .kill_on_drop(false);
    if let Some(cwd) = &command.cwd {
        cmd.current_dir(cwd);
    }
    (program, cmd)
}

/// Reads the shim's first report: the agent's identity, or why it could not start.
async fn handshake(
    agent: &mut Agent,
    fd: OwnedFd,
    program: PathBuf,
    agent_program: &Path,
) -> Result<(), ProcTrackError> {
    let mut lines = report_lines(fd).map_err(|e| ProcTrackError::Shim {
        program: program.clone(),
        reason: e.to_string(),
    })?;
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
    agent.report = Some(lines);
    let error = match first {
        Ok(Ok(Some(line))) => match parse_report(&line) {
            Some(ReportLine::Started(r)) => {
                agent.process = r;
                return Ok(());
            }
            Some(ReportLine::SpawnFailed(errno)) => ProcTrackError::Spawn {
                program: agent_program.to_owned(),
                source: std::io::Error::from_raw_os_error(errno),
            },
            _ => ProcTrackError::Shim {
                program,
                reason: format!("unexpected report {line:?}"),
            },
        },
        Err(_) => ProcTrackError::Shim {
            program,
            reason: "no report within 30 s".to_owned(),
        },
        Ok(Err(e)) => ProcTrackError::Shim {
            program,
            reason: e.to_string(),
        },
        Ok(Ok(None)) => ProcTrackError::Shim {
            program,
            reason: "exited without starting the agent".to_owned(),
        },
    };
    agent.abandon().await;
    Err(error)
}

/// Gives a child about to exec the signal state a fresh process has: nothing blocked (the
/// shim blocks the signals it waits for, and a mask survives exec) and SIGPIPE at its default
/// (Rust runtimes ignore it, and an ignored disposition survives exec too).
///
/// Async-signal-safe: for use between fork and exec.
pub(crate) fn reset_signals() {
    // SAFETY: `sigemptyset`, `pthread_sigmask` and `signal` are async-signal-safe; the set is a
    // local, initialised before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const set, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn pre_exec(procs: Option<i32>, report: Option<i32>, parent: u32) -> std::io::Result<()> {
    reset_signals();
    if let Some(fd) = procs {
        // SAFETY: the parent holds this descriptor open until spawn returns.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        rustix::io::write(fd, b"0")?;
    }
    rustix::process::setsid()?;
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
    let ppid = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    if u32::try_from(ppid).ok() != Some(parent) {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    if let Some(fd) = report {
        // SAFETY: the parent holds this descriptor open until spawn returns.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        rustix::io::fcntl_setfd(fd, FdFlags::empty())?;
    }
    Ok(())
}

type Job = Box<dyn FnOnce() + Send>;

// The CLI moves trackers and agents across tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    const fn assert_send<T: Send>() {}
    assert_send_sync::<Tracker>();
    assert_send::<Agent>();
};

/// Runs `job` on the process's one long-lived spawner thread and returns its result.
async fn on_spawner<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ProcTrackError> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        // The thread lives as long as the process: a parent-death signal set by a child
        // fires when the thread that forked it exits.
        let _ = std::thread::Builder::new()
            .name("hyoka-spawner".into())
            .spawn(move || {
                for job in rx {
                    // A panicking job must not take the spawner, and every later spawn, down.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            });
        Mutex::new(tx)
    });
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(job());
    });
    lock(sender).send(job).map_err(|_| ProcTrackError::Task {
        reason: "spawner thread is gone".to_owned(),
    })?;
    rx.await.map_err(|_| ProcTrackError::Task {
        reason: "spawner thread dropped the request".to_owned(),
    })
}

enum ReportLine {
    Started(ProcRef),
    SpawnFailed(i32),
    Exit(AgentExit),
}

fn parse_report(line: &str) -> Option<ReportLine> {
    let mut words = line.split_ascii_whitespace();
    let kind = words.next()?;
    let a: i64 = words.next()?.parse().ok()?;
    let int = |v: i64| i32::try_from(v).ok();
    Some(match kind {
        "started" => ReportLine::Started(ProcRef {
            pid: int(a)?,
            start_ticks: words.next()?.parse().ok()?,
        }),
        "spawn-failed" => ReportLine::SpawnFailed(int(a)?),
        "exited" => ReportLine::Exit(AgentExit::Code(int(a)?)),
        "signaled" => ReportLine::Exit(AgentExit::Signal(int(a)?)),
        _ => return None,
    })
}

fn report_lines(fd: OwnedFd) -> std::io::Result<Lines<BufReader<pipe::Receiver>>> {
    let receiver = pipe::Receiver::from_owned_fd(fd)?;
    Ok(BufReader::new(receiver).lines())
}

/// One sample of an agent's tree, for telling an agent at work from an idle one (for
/// example `hyoka-idle-detect`'s `ProcessActivity`, from the difference of two samples).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeSample {
    /// CPU the tree has used so far, in clock ticks (`sysconf(_SC_CLK_TCK)`, usually 100
    /// per second). From the cgroup leaf's `cpu.stat` when the agent has one (every process
    /// that ever ran in it, exited ones included); otherwise the sum over the live tracked
    /// processes and the shim of their own and their waited-for children's ticks, which
    /// drops when a process exits before anyone waits for it, so compare samples with a
    /// saturating difference.
    pub cpu_ticks: u64,
    /// Tracked processes other than the agent and the shim that were running or in
    /// uninterruptible sleep (`R`, `D`) when sampled: a build or a test run, not an idle
    /// shell.
    pub busy_children: u32,
}

/// Samples a process tree that is not tracked by an [`Agent`] (a tmux pane's, for
/// example): `root` and every descendant, found by one `/proc` scan. The CPU is the sum of
/// their own and their waited-for children's ticks; processes deeper than `agent_depth`
/// (0: the root is the agent; 1: the root is a wrapper whose children are the agent) count
/// as busy children when running.
///
/// # Errors
/// [`ProcTrackError::ProcTable`] when `/proc` cannot be read.
pub fn sample_tree(root: ProcRef, agent_depth: u32) -> Result<TreeSample, ProcTrackError> {
    let table = NativeProcTable::new();
    let snapshot = table.snapshot()?;
    let scope = Scope {
        roots: vec![root],
        ..Scope::default()
    };
    let found = discover(
        &snapshot,
        &[],
        &scope,
        &|_| None,
        table.self_pid(),
        table.self_pgid(),
    );
    let (cpu_ticks, busy_children) = sample_processes(
        found
            .iter()
            .map(|f| (f.info.proc_ref(), f.depth > agent_depth)),
    );
    Ok(TreeSample {
        cpu_ticks,
        busy_children,
    })
}

/// Reads each process's `stat` once: the sum of their CPU ticks (own and waited-for
/// children's), and how many of those flagged as children are running (`R`, `D`). A process
/// whose identity changed, or that is gone, counts for nothing.
fn sample_processes(processes: impl Iterator<Item = (ProcRef, bool)>) -> (u64, u32) {
    let (mut ticks, mut busy) = (0u64, 0u32);
    for (r, child) in processes {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{}/stat", r.pid)) else {
            continue;
        };
        let Some(info) = parse_stat(&text) else {
            continue;
        };
        if info.start_ticks != r.start_ticks || info.is_gone() {
            continue;
        }
        ticks = ticks.saturating_add(parse_stat_cpu_ticks(&text).unwrap_or(0));
        if child && matches!(info.state, 'R' | 'D') {
            busy += 1;
        }
    }
    (ticks, busy)
}

/// `usage_usec` from a cgroup's `cpu.stat`.
fn cgroup_usage_usec(leaf: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(leaf.join("cpu.stat")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse().ok())
}

/// One eval's agent: its streams, its exit, discovery of its tree, and teardown.
///
/// Dropping an `Agent` that was not torn down SIGKILLs its tree synchronously (no grace) as a
/// last resort; call [`Agent::teardown`] instead.
pub struct Agent {
    eval_id: String,
    shared: Arc<Shared>,
    child: Option<Child>,
    process: ProcRef,
    shim: Option<ProcRef>,
    report: Option<Lines<BufReader<pipe::Receiver>>>,
    leaf: Option<CgroupLeaf>,
    /// The agent's standard input, when [`StdioMode::Piped`].
    pub stdin: Option<ChildStdin>,
    /// The agent's standard output, when [`StdioMode::Piped`].
    pub stdout: Option<ChildStdout>,
    /// The agent's standard error, when [`StdioMode::Piped`].
    pub stderr: Option<ChildStderr>,
    exit: Option<AgentExit>,
    known: Vec<LedgerEntry>,
    /// Every process ever attributed to this eval, for the final report.
    history: std::collections::BTreeMap<ProcRef, LedgerEntry>,
    torn_down: bool,
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
    fn new(
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
        }
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
                if let Some(ReportLine::Exit(exit)) = parse_report(&line) {
                    self.exit = Some(exit);
                    return Ok(exit);
                }
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

    fn scope(&self) -> Scope {
        Scope {
            roots: vec![self.shim.unwrap_or(self.process)],
            known: self.known.clone(),
            marker: Some(
                Marker::eval(&self.shared.run_id, &self.eval_id)
                    .since(self.shared.owner.proc_ref.start_ticks),
            ),
            exclude: self.shim.into_iter().collect(),
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
        let table = NativeProcTable::new();
        let snapshot = table.snapshot()?;
        let members = self
            .leaf
            .as_ref()
            .map(CgroupLeaf::members)
            .unwrap_or_default();
        let mut scope = self.scope();
        scope.exclude.clear();
        let found = discover(
            &snapshot,
            &members,
            &scope,
            &|pid| table.environ(pid),
            table.self_pid(),
            table.self_pgid(),
        );
        let before = self.known.len();
        self.known
            .retain(|e| found.iter().any(|f| f.info.proc_ref() == e.proc_ref()));
        let removed = before - self.known.len();
        let mut added = 0;
        for f in &found {
            if !self.known.iter().any(|e| e.proc_ref() == f.info.proc_ref()) {
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

    fn sync_ledger(&self) -> Result<(), ProcTrackError> {
        let eval = &self.eval_id;
        self.shared.update(|l| {
            l.entries.retain(|e| &e.eval_id != eval);
            l.entries.extend(self.known.iter().cloned());
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
        let scope = self.scope();
        let leaves: Vec<CgroupLeaf> = self.leaf.iter().cloned().collect();
        let mut report = tokio::task::spawn_blocking(move || {
            let (table, signaller) = (NativeProcTable::new(), NativeSignaller::new());
            let seams = Seams {
                table: &table,
                signaller: &signaller,
                clock: &SystemClock,
            };
            teardown(seams, &scope, &leaves, &options)
        })
        .await
        .map_err(|e| ProcTrackError::Task {
            reason: e.to_string(),
        })?;
        self.complete(&mut report);
        self.torn_down = true;
        self.reap().await;
        self.finish(&report)?;
        Ok(report)
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
                    source: crate::Source::Tracked,
                    outcome: crate::Outcome::Exited,
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
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            if self.exit.is_none() && self.shim.is_none() {
                let _ = tokio::time::timeout(Duration::from_millis(10), self.wait()).await;
            }
        }
    }

    fn finish(&mut self, report: &TeardownReport) -> Result<(), ProcTrackError> {
        *lock(&self.shared.survivors) += report.survivors;
        let survivors: Vec<ProcRef> = report
            .processes
            .iter()
            .filter(|p| p.outcome == crate::Outcome::Failed)
            .map(|p| ProcRef {
                pid: p.pid,
                start_ticks: p.start_ticks,
            })
            .collect();
        self.known.retain(|e| survivors.contains(&e.proc_ref()));
        let removed = self.remove_leaf();
        let eval = self.eval_id.clone();
        self.sync_ledger()?;
        if removed {
            self.shared
                .update(|l| l.cgroups.retain(|c| c.eval_id != eval))?;
        }
        Ok(())
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
    async fn abandon(&mut self) {
        let _ = self
            .teardown(TeardownOptions::with_grace(Duration::ZERO))
            .await;
        lock(&self.shared.evals).remove(&self.eval_id);
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.torn_down {
            return;
        }
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
        if let Some(child) = &mut self.child {
            let _ = child.try_wait();
        }
        let _ = self.finish(&report);
    }
}
