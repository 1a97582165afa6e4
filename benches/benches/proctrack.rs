//! proctrack benchmarks, each against a named baseline measured in the same run.
//!
//! - `teardown_1000`: an agent forks 1,000 children and exits; the run stops them
//!   (`Agent::teardown`, with the shim, with and without the cgroup leaf) against the bare
//!   baseline `kill -TERM -- -PGID` plus reaping of the same tree by a subreaper.
//! - `discovery`: one direct `/proc` scan (and a full marker discovery, which reads every
//!   process's `environ`) against a full `sysinfo` refresh, with 1,000 extra processes alive.
//!   Throughput is per process in the table.
//! - `teardown_engine_fake`: the decision loop alone over `FakeSystem`.
//! - `ledger_100k`: `clean --dry-run` of one abandoned run whose ledger has 100,000 process
//!   lines (`clean_run` with `dry_run`: the checks, the bounded read, the one-pass parse, one
//!   `/proc` snapshot, classification and discovery), against the baseline of merely reading
//!   the same file and counting its lines.
//!
//! - `sandbox_spawn`: one agent (`true`) spawned under the shim, waited for and torn down,
//!   with the Landlock sandbox (and with a network namespace too), and with today's
//!   `--sandbox` (a mount namespace with the host read-only, a private `/tmp`, a minimal
//!   `/dev`, the home and `/run` hidden, no capabilities, seccomp, and Landlock) against the
//!   same spawn without a sandbox and a bare `std::process::Command` spawn of `true` (also
//!   entering each sandbox, `bare_spawn_<variant>`, which isolates its cost): the
//!   sandbox's per-run cost (issue 17: Landlock under 5 ms; issue 25: the mount namespace
//!   under 10 ms).
//! - `limits`: a fork bomb (1,000 forks) under `pids` 256 and a memory hog under 256 MiB,
//!   each spawned under the shim, held by its cgroup limit and torn down, against the same
//!   tree without a limit (1,000 forks that succeed; 256 MiB touched, then exit), in the
//!   same run (issue 25). Skipped when the controller is missing.
//!
//! The binary is also its own helper: `--tree N FILE` forks N children that pause, writes
//! FILE and exits (or, with `--hold`, stays); `--bomb N FILE` tries N forks, writes how many
//! the kernel refused to FILE and exits; `--hog MIB` touches MIB MiB (0: without end) and
//! exits; `__shim …` is the subreaper shim.
#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks time real work with the real clock"
)]
#![allow(
    clippy::print_stderr,
    reason = "benchmarks say which groups the machine cannot run"
)]

use std::ffi::OsString;
use std::hint::black_box;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use hyoka_proctrack::{
    AgentCommand, CgroupMode, CleanOptions, Controller, FakeClock, FakeSystem, Instance, Launcher,
    Marker, Mount, MountPlan, NativeProcTable, Network, OnTerm, ProcTable, ResourceLimits,
    ResourceSupport, Sandbox, SandboxSupport, Scope, Seams, TeardownOptions, Tracker,
    TrackerOptions, clean_run, discover, teardown,
};

const TREE: u32 = 1000;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("__shim") => hyoka_proctrack::shim_main(args.into_iter().skip(2)),
        Some(mode @ ("--tree" | "--hold")) => {
            let n: u32 = args[2].to_str().and_then(|n| n.parse().ok()).unwrap_or(1);
            fork_tree(n, Path::new(&args[3]), mode == "--hold")
        }
        Some("--bomb") => {
            let n: u32 = args[2].to_str().and_then(|n| n.parse().ok()).unwrap_or(1);
            fork_bomb(n, Path::new(&args[3]))
        }
        Some("--hog") => hog(args[2].to_str().and_then(|n| n.parse().ok()).unwrap_or(0)),
        _ => {
            let mut criterion = Criterion::default().configure_from_args();
            teardown_1000(&mut criterion);
            discovery(&mut criterion);
            teardown_engine_fake(&mut criterion);
            ledger_100k(&mut criterion);
            sandbox_spawn(&mut criterion);
            limits(&mut criterion);
            criterion.final_summary();
            ExitCode::SUCCESS
        }
    }
}

/// Forks `n` children that pause until killed, writes `ready`, then exits or pauses.
fn fork_tree(n: u32, ready: &Path, hold: bool) -> ExitCode {
    for _ in 0..n {
        // SAFETY: this helper process is single-threaded, and the child only calls the
        // async-signal-safe `pause` until it is killed.
        if unsafe { libc::fork() } == 0 {
            loop {
                // SAFETY: `pause` has no preconditions.
                unsafe { libc::pause() };
            }
        }
    }
    std::fs::write(ready, b"ready").expect("write ready file");
    if hold {
        loop {
            // SAFETY: `pause` has no preconditions.
            unsafe { libc::pause() };
        }
    }
    ExitCode::SUCCESS
}

/// Tries `n` forks whose children pause until killed, writes how many the kernel refused to
/// `done`, then exits.
fn fork_bomb(n: u32, done: &Path) -> ExitCode {
    let mut refused = 0u32;
    for _ in 0..n {
        // SAFETY: this helper process is single-threaded, and the child only calls the
        // async-signal-safe `pause` until it is killed.
        match unsafe { libc::fork() } {
            0 => loop {
                // SAFETY: `pause` has no preconditions.
                unsafe { libc::pause() };
            },
            -1 => refused += 1,
            _ => {}
        }
    }
    std::fs::write(done, refused.to_string()).expect("write done file");
    ExitCode::SUCCESS
}

/// Touches `mib` MiB of memory, a page at a time, and exits; `0`: without end (until the
/// memory limit's OOM killer ends it).
fn hog(mib: usize) -> ExitCode {
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let mut chunk = 0usize;
    while mib == 0 || chunk < mib {
        let mut block = vec![0u8; 1 << 20];
        for page in block.iter_mut().step_by(4096) {
            *page = 1;
        }
        kept.push(black_box(block));
        chunk += 1;
    }
    black_box(&kept);
    ExitCode::SUCCESS
}

fn exe() -> PathBuf {
    std::env::current_exe().expect("current exe")
}

fn unique(label: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "bench-{}-{label}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn wait_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_mins(1);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} did not appear",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One tracked run: spawn the tree under the shim (and the cgroup, if `cgroup`), let the
/// agent exit, and time only `Agent::teardown`.
async fn tracked_round(dir: &Path, cgroup: CgroupMode) -> Duration {
    let run_id = unique("t");
    let mut options = TrackerOptions::new(&run_id, dir.join("reports"));
    options.cgroup = cgroup;
    options.shim = Some(Launcher::new(exe(), vec!["__shim".into()]));
    let tracker = Tracker::start(options).expect("tracker");
    let ready = dir.join(format!("{run_id}.ready"));
    let command = AgentCommand::new(
        exe(),
        [
            OsString::from("--tree"),
            TREE.to_string().into(),
            ready.clone().into(),
        ],
    );
    let mut agent = tracker.spawn("main", command).await.expect("spawn");
    agent.wait().await.expect("agent exits");
    wait_file(&ready);
    let start = Instant::now();
    let report = agent
        .teardown(TeardownOptions::with_grace(Duration::from_secs(5)))
        .await
        .expect("teardown");
    let elapsed = start.elapsed();
    assert_eq!(report.survivors, 0);
    assert!(
        report.processes_seen >= TREE as usize,
        "{}",
        report.processes_seen
    );
    tracker.close().expect("close");
    elapsed
}

/// The baseline: the same tree in its own group, its agent exited, the children re-parented
/// to this process (a subreaper); time `killpg(SIGTERM)` plus reaping every child.
fn bare_round(dir: &Path) -> Duration {
    let ready = dir.join(format!("{}.ready", unique("b")));
    let mut agent = Command::new(exe())
        .arg("--tree")
        .arg(TREE.to_string())
        .arg(&ready)
        .process_group(0)
        .spawn()
        .expect("spawn");
    let pgid = rustix::process::Pid::from_child(&agent);
    agent.wait().expect("agent exits");
    wait_file(&ready);
    let start = Instant::now();
    rustix::process::kill_process_group(pgid, rustix::process::Signal::TERM).expect("killpg");
    while let Ok(Some(_)) = rustix::process::waitpgid(pgid, rustix::process::WaitOptions::empty()) {
    }
    start.elapsed()
}

/// A scratch directory and a two-worker runtime for the tracked benchmarks.
fn scratch_and_runtime() -> (tempfile::TempDir, tokio::runtime::Runtime) {
    let dir = tempfile::Builder::new()
        .prefix("pt-bench-")
        .tempdir()
        .expect("tempdir");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    (dir, rt)
}

fn teardown_1000(c: &mut Criterion) {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).expect("subreaper");
    let (dir, rt) = scratch_and_runtime();
    let mut group = c.benchmark_group("teardown_1000");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_millis(500));
    group.bench_function("bare_killpg_and_reap", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| bare_round(dir.path())).sum());
    });
    group.bench_function("tracker_shim", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| rt.block_on(tracked_round(dir.path(), CgroupMode::Off)))
                .sum()
        });
    });
    if hyoka_proctrack::Capabilities::detect().cgroup.is_some() {
        group.bench_function("tracker_shim_cgroup", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| rt.block_on(tracked_round(dir.path(), CgroupMode::Required)))
                    .sum()
            });
        });
    }
    group.finish();
}

fn discovery(c: &mut Criterion) {
    let dir = tempfile::Builder::new()
        .prefix("pt-bench-")
        .tempdir()
        .expect("tempdir");
    let ready = dir.path().join("hold.ready");
    let mut holder = Command::new(exe())
        .arg("--hold")
        .arg(TREE.to_string())
        .arg(&ready)
        .process_group(0)
        .spawn()
        .expect("spawn holder");
    wait_file(&ready);
    let table = NativeProcTable::new();
    let n = table.snapshot().expect("snapshot").len();
    let mut group = c.benchmark_group("discovery");
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(BenchmarkId::new("proc_scan", n), |b| {
        b.iter(|| black_box(table.snapshot().expect("snapshot")));
    });
    let scope = Scope {
        marker: Some(Marker::run("no-such-run")),
        ..Scope::default()
    };
    group.bench_function(BenchmarkId::new("proc_discover_with_marker", n), |b| {
        b.iter(|| {
            let snapshot = table.snapshot().expect("snapshot");
            black_box(discover(&snapshot, &[], &scope, &table))
        });
    });
    // What the tracker really scans: the marker is only looked for in processes younger
    // than the owner (this benchmark process).
    let own_ticks = table.process(table.self_pid()).map_or(0, |p| p.start_ticks);
    let young = Scope {
        marker: Some(Marker::run("no-such-run").since(own_ticks)),
        ..Scope::default()
    };
    group.bench_function(
        BenchmarkId::new("proc_discover_with_marker_since_owner", n),
        |b| {
            b.iter(|| {
                let snapshot = table.snapshot().expect("snapshot");
                black_box(discover(&snapshot, &[], &young, &table))
            });
        },
    );
    let mut system = sysinfo::System::new().expect("sysinfo");
    group.bench_function(BenchmarkId::new("sysinfo_refresh_all", n), |b| {
        b.iter(|| black_box(system.refresh_processes(sysinfo::ProcessesToUpdate::All, true)));
    });
    group.bench_function(BenchmarkId::new("sysinfo_refresh_everything", n), |b| {
        b.iter(|| {
            black_box(system.refresh_processes_specifics(
                sysinfo::ProcessesToUpdate::All,
                true,
                sysinfo::ProcessRefreshKind::everything(),
            ))
        });
    });
    group.finish();
    let pgid = rustix::process::Pid::from_child(&holder);
    let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    let _ = holder.wait();
    while let Ok(Some(_)) = rustix::process::waitpgid(pgid, rustix::process::WaitOptions::empty()) {
    }
}

fn teardown_engine_fake(c: &mut Criterion) {
    let mut group = c.benchmark_group("teardown_engine_fake");
    group.throughput(Throughput::Elements(u64::from(TREE)));
    group.bench_function("tree_1000_with_stubborn_half", |b| {
        b.iter_with_setup(
            || {
                let fake = FakeSystem::new();
                let agent = fake.spawn(100, true, "agent", None);
                for i in 0..TREE {
                    let child = fake.spawn(agent.pid, false, "child", None);
                    if i % 2 == 0 {
                        fake.set_on_term(child.pid, OnTerm::Ignore);
                    }
                }
                (fake, agent)
            },
            |(fake, agent)| {
                let clock = FakeClock::new(Instant::now());
                let seams = Seams {
                    table: &fake,
                    signaller: &fake,
                    clock: &clock,
                };
                let scope = Scope {
                    roots: vec![agent],
                    ..Scope::default()
                };
                black_box(teardown(seams, &scope, &[], &TeardownOptions::default()))
            },
        );
    });
    group.finish();
}

/// Lines in the `ledger_100k` ledger.
const LEDGER_LINES: u32 = 100_000;

fn ledger_100k(c: &mut Criterion) {
    use std::fmt::Write as _;
    let dir = tempfile::Builder::new()
        .prefix("pt-bench-ledger-")
        .tempdir()
        .expect("tempdir");
    let run = dir.path().join("big");
    std::fs::create_dir(&run).expect("run dir");
    std::fs::write(run.join("owner.lock"), b"").expect("lock");
    let boot = NativeProcTable::new().boot_id().expect("boot id");
    let instance = Instance::generate().expect("instance");
    let mut text =
        format!("# hyoka-pids v1\n# run big\n# owner 4194000 1 {boot}\n# instance {instance}\n");
    // Pids above any pid_max: every line is a process that is gone, as after a crash.
    for i in 0..LEDGER_LINES {
        let pid = 10_000_000 + i;
        let _ = writeln!(text, "{pid}\t{}\t{pid}\tmain\tagent-tool", 1000 + i);
    }
    let ledger = run.join("pids.txt");
    std::fs::write(&ledger, &text).expect("ledger");
    let mut group = c.benchmark_group("ledger_100k");
    group.throughput(Throughput::Elements(u64::from(LEDGER_LINES)));
    group.sample_size(20);
    let options = CleanOptions {
        dry_run: true,
        ..CleanOptions::default()
    };
    group.bench_function("clean_dry_run", |b| {
        b.iter(|| {
            let report = clean_run(&run, &options).expect("clean");
            assert_eq!(report.skipped.len(), LEDGER_LINES as usize);
            black_box(report)
        });
    });
    // `wc -l` in process: read the file, count its newlines with memchr.
    group.bench_function("baseline_read_and_count_lines", |b| {
        b.iter(|| {
            let bytes = std::fs::read(&ledger).expect("read");
            black_box(memchr::memchr_iter(b'\n', &bytes).count())
        });
    });
    group.finish();
}

/// Spawns `true` under the shim with `sandbox`, waits for it and tears it down.
async fn sandboxed_round(tracker: &Tracker, sandbox: &Sandbox) {
    static EVAL: AtomicU32 = AtomicU32::new(0);
    let eval = format!("e{}", EVAL.fetch_add(1, Ordering::Relaxed));
    let mut command = AgentCommand::new("true", Vec::<OsString>::new());
    command.sandbox = sandbox.clone();
    let mut agent = tracker.spawn(&eval, command).await.expect("spawn");
    agent.wait().await.expect("agent exits");
    let report = agent
        .teardown(TeardownOptions::with_grace(Duration::from_secs(1)))
        .await
        .expect("teardown");
    assert_eq!(report.survivors, 0);
}

fn sandbox_spawn(c: &mut Criterion) {
    let support = SandboxSupport::detect();
    let (dir, rt) = scratch_and_runtime();
    let mut options = TrackerOptions::new(unique("s"), dir.path().join("reports"));
    options.cgroup = CgroupMode::Off;
    options.shim = Some(Launcher::new(exe(), vec!["__shim".into()]));
    let tracker = Tracker::start(options).expect("tracker");
    let landlock = Sandbox {
        writable: Some(vec![dir.path().to_owned()]),
        ..Sandbox::default()
    };
    let mut variants = vec![("unsandboxed", Sandbox::default())];
    if support.landlock.is_ok() {
        variants.push(("landlock", landlock.clone()));
    }
    if support.mounts.is_ok() && support.harden.is_ok() {
        variants.push((
            "mount_namespace",
            Sandbox {
                mounts: Some(mount_plan(dir.path())),
                harden: true,
                writable: support
                    .landlock
                    .is_ok()
                    .then(|| vec![dir.path().to_owned()]),
                ..Sandbox::default()
            },
        ));
    }
    if support.landlock.is_ok() && support.network.is_available() {
        variants.push((
            "landlock_netns",
            Sandbox {
                network: Network::None,
                ..landlock
            },
        ));
    }
    let mut group = c.benchmark_group("sandbox_spawn");
    group.sample_size(50);
    group.bench_function("bare_spawn", |b| {
        b.iter(|| {
            let status = Command::new("true").status().expect("spawn true");
            assert!(status.success());
        });
    });
    // The sandbox alone, without the tracker and the shim: a bare spawn of `true` entering it.
    for (name, sandbox) in variants.iter().filter(|(n, _)| *n != "unsandboxed") {
        group.bench_function(format!("bare_spawn_{name}"), |b| {
            b.iter(|| {
                let mut command = Command::new("true");
                sandbox.apply_to(&mut command).expect("sandbox");
                let status = command.status().expect("spawn true");
                assert!(status.success());
            });
        });
    }
    for (name, sandbox) in variants {
        group.bench_function(name, |b| {
            b.iter(|| rt.block_on(sandboxed_round(&tracker, &sandbox)));
        });
    }
    group.finish();
    tracker.close().expect("close");
}

/// The mount plan `--sandbox` gives an agent whose workspace is `workspace`: the caller's
/// home and `/run` hidden, a private `/tmp` (a directory of `workspace`), a minimal `/dev`,
/// the workspace writable.
fn mount_plan(workspace: &Path) -> MountPlan {
    let tmp = workspace.join("private-tmp");
    std::fs::create_dir_all(&tmp).expect("private tmp");
    let mut mounts = Vec::new();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for hidden in [Some(PathBuf::from("/run")), home].into_iter().flatten() {
        if hidden.is_dir() && !workspace.starts_with(&hidden) && hidden.parent().is_some() {
            mounts.push(Mount::Tmpfs {
                target: hidden,
                writable: false,
            });
        }
    }
    mounts.push(Mount::Bind {
        source: tmp,
        target: PathBuf::from("/tmp"),
        writable: true,
    });
    mounts.push(Mount::Devices {
        target: PathBuf::from("/dev"),
    });
    mounts.push(Mount::Bind {
        source: workspace.to_owned(),
        target: workspace.to_owned(),
        writable: true,
    });
    MountPlan { mounts, cwd: None }
}

/// The fork bomb's and the memory hog's size, and their limits.
const BOMB: u32 = 1000;
const MAX_PIDS: u32 = 256;
const HOG_MIB: u64 = 256;

/// One limited round: `args` spawned under the shim with `limits`, waited for (for the
/// bomb: until it wrote how many forks were refused), checked with `check` on its resource
/// figures, and torn down with nothing surviving.
async fn limited_round(
    tracker: &Tracker,
    args: Vec<OsString>,
    limits: ResourceLimits,
    check: impl Fn(Option<hyoka_proctrack::ResourceUsage>),
) {
    static EVAL: AtomicU32 = AtomicU32::new(0);
    let eval = format!("l{}", EVAL.fetch_add(1, Ordering::Relaxed));
    let mut command = AgentCommand::new(exe(), args);
    command.resources = limits;
    let mut agent = tracker.spawn(&eval, command).await.expect("spawn");
    agent.wait().await.expect("agent exits");
    check(agent.resource_usage());
    let report = agent
        .teardown(TeardownOptions::with_grace(Duration::from_secs(5)))
        .await
        .expect("teardown");
    assert_eq!(report.survivors, 0);
}

fn limits(c: &mut Criterion) {
    let support = ResourceSupport::detect();
    let (dir, rt) = scratch_and_runtime();
    let mut options = TrackerOptions::new(unique("r"), dir.path().join("reports"));
    options.shim = Some(Launcher::new(exe(), vec!["__shim".into()]));
    let tracker = Tracker::start(options).expect("tracker");
    let mut group = c.benchmark_group("limits");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    let bomb = |pids: Option<u32>| {
        let done = dir.path().join(unique("bomb"));
        let args = vec![
            OsString::from("--bomb"),
            BOMB.to_string().into(),
            done.clone().into(),
        ];
        let limits = ResourceLimits {
            pids: pids.map(u64::from),
            ..ResourceLimits::default()
        };
        (args, limits, done)
    };
    match support.get(Controller::Pids) {
        Ok(_) => {
            group.bench_function("fork_bomb_1000_under_max_pids_256", |b| {
                b.iter(|| {
                    let (args, limits, done) = bomb(Some(MAX_PIDS));
                    rt.block_on(limited_round(&tracker, args, limits, |usage| {
                        let usage = usage.expect("figures");
                        assert!(
                            usage.pids_peak.is_some_and(|p| p <= u64::from(MAX_PIDS)),
                            "{usage:?}"
                        );
                        assert!(usage.pids_refused > Some(0), "{usage:?}");
                    }));
                    let refused: u32 = std::fs::read_to_string(&done)
                        .expect("done")
                        .parse()
                        .expect("count");
                    assert!(refused >= BOMB - MAX_PIDS, "{refused}");
                });
            });
            group.bench_function("fork_1000_unlimited", |b| {
                b.iter(|| {
                    let (args, limits, done) = bomb(None);
                    rt.block_on(limited_round(&tracker, args, limits, |_| {}));
                    assert_eq!(std::fs::read_to_string(&done).expect("done"), "0");
                });
            });
        }
        Err(why) => eprintln!("limits/fork_bomb: skipped: {why}"),
    }
    match support.get(Controller::Memory) {
        Ok(_) => {
            group.bench_function("memory_hog_under_max_memory_256MiB", |b| {
                b.iter(|| {
                    let args = vec![OsString::from("--hog"), "0".into()];
                    let limits = ResourceLimits {
                        memory: Some(HOG_MIB << 20),
                        ..ResourceLimits::default()
                    };
                    rt.block_on(limited_round(&tracker, args, limits, |usage| {
                        let usage = usage.expect("figures");
                        assert!(usage.oom_kills > Some(0), "{usage:?}");
                    }));
                });
            });
            group.bench_function("touch_256MiB_unlimited", |b| {
                b.iter(|| {
                    let args = vec![OsString::from("--hog"), HOG_MIB.to_string().into()];
                    rt.block_on(limited_round(
                        &tracker,
                        args,
                        ResourceLimits::default(),
                        |_| {},
                    ));
                });
            });
        }
        Err(why) => eprintln!("limits/memory_hog: skipped: {why}"),
    }
    group.finish();
    tracker.close().expect("close");
}
