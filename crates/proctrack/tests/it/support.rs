//! Shared helpers: sandboxes that kill what they started, layer configurations, readiness
//! files, and proofs through `/proc` that processes are gone.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use hyoka_proctrack::{
    AgentCommand, Capabilities, CgroupMode, Launcher, NativeProcTable, NativeSignaller, ProcRef,
    ProcTable, Signal, Signaller, Tracker, TrackerOptions,
};

/// Which optional layers a test runs with (session and marker are always on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Config {
    pub(crate) cgroup: bool,
    pub(crate) shim: bool,
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}{}",
            if self.cgroup { "cgroup+" } else { "" },
            if self.shim {
                "shim+session+marker"
            } else {
                "session+marker"
            }
        )
    }
}

/// Agents without a shim hand their orphans to this process (a subreaper since its first
/// tracker), and every such agent claims them: two tests running them at once could take
/// each other's. They take turns on this lock (agents with a shim never see the pool).
static ORPHAN_POOL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The turn on the orphan pool a test running `config` needs (`None` with a shim).
pub(crate) fn orphan_pool(config: Config) -> Option<std::sync::MutexGuard<'static, ()>> {
    (!config.shim).then(|| {
        ORPHAN_POOL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    })
}

/// The whole orphan pool, for a test that runs agents without a shim in several configs.
pub(crate) fn orphan_pool_all() -> std::sync::MutexGuard<'static, ()> {
    ORPHAN_POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether this machine lets us create cgroup v2 leaves.
pub(crate) fn cgroup_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| Capabilities::detect().cgroup.is_some())
}

/// Every layer combination this machine offers: with and without the cgroup and the shim.
pub(crate) fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for cgroup in [true, false] {
        if cgroup && !cgroup_available() {
            continue;
        }
        for shim in [true, false] {
            out.push(Config { cgroup, shim });
        }
    }
    out
}

/// A scratch directory for one test, holding readiness files and `reports/`. On drop it
/// SIGKILLs (identity-verified) every process that wrote a readiness file and is still
/// running, so a failing test leaks nothing.
pub(crate) struct Sandbox {
    pub(crate) root: tempfile::TempDir,
    runs: std::sync::Mutex<Vec<String>>,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let root = tempfile::Builder::new()
            .prefix("pt-test-")
            .tempdir()
            .expect("scratch dir");
        std::fs::create_dir(root.path().join("ready")).unwrap();
        Self {
            root,
            runs: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// A unique run id, remembered so that its marked processes are killed on drop.
    pub(crate) fn run_id(&self, label: &str) -> String {
        let id = run_id(label);
        self.runs.lock().unwrap().push(id.clone());
        id
    }

    pub(crate) fn dir(&self) -> PathBuf {
        self.root.path().join("ready")
    }

    pub(crate) fn reports(&self) -> PathBuf {
        self.root.path().join("reports")
    }

    /// A fresh ready directory (for several runs in one sandbox).
    pub(crate) fn subdir(&self, name: &str) -> PathBuf {
        let dir = self.dir().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Every readiness file's identity under the ready directory.
    pub(crate) fn all_ready(&self) -> Vec<ProcRef> {
        fn walk(dir: &Path, out: &mut Vec<ProcRef>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if let Some(r) = parse_ready(&path) {
                    out.push(r);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.dir(), &mut out);
        out
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let signaller = NativeSignaller::new();
        for r in self.all_ready() {
            let _ = signaller.signal(r, Signal::Kill);
        }
        let table = NativeProcTable::new();
        let cgroup = Capabilities::detect().cgroup;
        for run in self
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
        {
            for pid in marked(run) {
                if let Some(p) = table.process(pid) {
                    let _ = signaller.signal(p.proc_ref(), Signal::Kill);
                }
            }
            // A failed test may leave its leaf behind: kill what is in it and remove it.
            for run_dir in cgroup
                .as_ref()
                .map(|root| run_cgroups(&root.base, run))
                .unwrap_or_default()
            {
                for leaf in std::fs::read_dir(&run_dir).into_iter().flatten().flatten() {
                    if leaf.path().join("cgroup.procs").is_file() {
                        let _ = std::fs::write(leaf.path().join("cgroup.kill"), b"1");
                        let deadline = Instant::now() + Duration::from_secs(2);
                        while std::fs::remove_dir(leaf.path()).is_err() && Instant::now() < deadline
                        {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                    }
                }
                let _ = std::fs::remove_dir(&run_dir);
            }
        }
    }
}

/// The cgroup directories of run `run_id` under `base`: `hyoka-<run_id>-<instance>`.
pub(crate) fn run_cgroups(base: &Path, run_id: &str) -> Vec<PathBuf> {
    let prefix = format!("hyoka-{run_id}-");
    std::fs::read_dir(base)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// A unique run id for this test process.
fn run_id(label: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "pt-{}-{label}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

pub(crate) fn launcher() -> Launcher {
    Launcher::new(
        std::env::current_exe().expect("current exe"),
        vec!["__shim".into()],
    )
}

pub(crate) fn tracker(reports: &Path, run_id: &str, config: Config) -> Tracker {
    let mut options = TrackerOptions::new(run_id, reports);
    options.cgroup = if config.cgroup {
        CgroupMode::Required
    } else {
        CgroupMode::Off
    };
    options.shim = config.shim.then(launcher);
    options.shim_grace = Duration::from_secs(1);
    Tracker::start(options).expect("start tracker")
}

/// The agent of `scenario` (see `roles`), writing readiness files to `dir`.
pub(crate) fn agent_command(dir: &Path, mode: &str, scenario: &str, n: u32) -> AgentCommand {
    AgentCommand::new(
        std::env::current_exe().expect("current exe"),
        [
            "--hyoka-role".into(),
            "agent".into(),
            dir.as_os_str().to_owned(),
            mode.into(),
            scenario.into(),
            n.to_string().into(),
        ],
    )
}

fn parse_ready(path: &Path) -> Option<ProcRef> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_ascii_whitespace();
    Some(ProcRef {
        pid: words.next()?.parse().ok()?,
        start_ticks: words.next()?.parse().ok()?,
    })
}

/// Waits for a readiness file and returns the identity it names; panics after `timeout`.
#[track_caller]
pub(crate) fn wait_file(path: &Path, timeout: Duration) -> ProcRef {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(r) = parse_ready(path) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not appear",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits for every named readiness file in `dir`.
#[track_caller]
pub(crate) fn wait_ready(dir: &Path, names: &[&str]) -> Vec<(String, ProcRef)> {
    names
        .iter()
        .map(|n| {
            (
                (*n).to_owned(),
                wait_file(&dir.join(n), Duration::from_mins(1)),
            )
        })
        .collect()
}

/// Whether the process is running with this identity (a zombie counts as gone).
pub(crate) fn alive(r: ProcRef) -> bool {
    NativeProcTable::new()
        .process(r.pid)
        .is_some_and(|p| p.start_ticks == r.start_ticks && !p.is_gone())
}

/// Waits until none of `refs` is alive; returns those still alive after `timeout`.
pub(crate) fn wait_gone(refs: &[(String, ProcRef)], timeout: Duration) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let left: Vec<String> = refs
            .iter()
            .filter(|(_, r)| alive(*r))
            .map(|(n, _)| n.clone())
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Live processes whose environment carries `HYOKA_RUN_ID=<run_id>`.
pub(crate) fn marked(run_id: &str) -> Vec<i32> {
    let table = NativeProcTable::new();
    let entry = format!("HYOKA_RUN_ID={run_id}");
    table
        .snapshot()
        .unwrap()
        .into_iter()
        .filter(|p| !p.is_gone())
        .filter(|p| {
            table
                .environ(p.pid)
                .is_some_and(|e| e.split(|&b| b == 0).any(|x| x == entry.as_bytes()))
        })
        .map(|p| p.pid)
        .collect()
}

/// Asserts through `/proc` that nothing of the run survived.
#[track_caller]
pub(crate) fn assert_nothing_left(run_id: &str, refs: &[(String, ProcRef)], context: &str) {
    let left = wait_gone(refs, Duration::from_secs(1));
    assert!(left.is_empty(), "{context}: still running: {left:?}");
    let marked = marked(run_id);
    assert!(
        marked.is_empty(),
        "{context}: marked processes left: {marked:?}"
    );
}

/// The `owner` role: a hyoka stand-in that starts a run, spawns an agent scenario, records
/// everything in the ledger, signals readiness and then waits to be SIGKILLed.
///
/// Arguments: `<reports> <run_id> <ready_dir> <shim 0|1> <cgroup 0|1> <scenario>`.
pub(crate) fn owner_role(args: &[String]) -> ExitCode {
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let (reports, run_id, dir) = (PathBuf::from(arg(0)), arg(1), PathBuf::from(arg(2)));
    let config = Config {
        shim: arg(3) == "1",
        cgroup: arg(4) == "1",
    };
    let scenario = arg(5);
    let rt = runtime();
    rt.block_on(async {
        let tracker = tracker(&reports, &run_id, config);
        tracker
            .record_workspace("main", &dir.join("workspace"))
            .expect("record workspace");
        let mut agent = tracker
            .spawn("main", agent_command(&dir, "stay", &scenario, 0))
            .await
            .expect("spawn agent");
        let mut names = crate::roles::scenario_names(&scenario);
        names.push("agent");
        wait_ready(&dir, &names);
        agent.refresh().expect("refresh");
        crate::roles::ready(&dir, "owner");
        std::future::pending::<()>().await;
    });
    ExitCode::SUCCESS
}
