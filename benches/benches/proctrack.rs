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
//!   with the Landlock sandbox (and with a network namespace too) against the same spawn
//!   without a sandbox: the sandbox's per-run cost (issue 17: under 5 ms).
//!
//! The binary is also its own helper: `--tree N FILE` forks N children that pause, writes
//! FILE and exits (or, with `--hold`, stays); `__shim …` is the subreaper shim.
#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks time real work with the real clock"
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
    AgentCommand, CgroupMode, CleanOptions, FakeClock, FakeSystem, Instance, Launcher, Marker,
    NativeProcTable, Network, OnTerm, ProcTable, Sandbox, SandboxSupport, Scope, Seams,
    TeardownOptions, Tracker, TrackerOptions, clean_run, discover, teardown,
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
        _ => {
            let mut criterion = Criterion::default().configure_from_args();
            teardown_1000(&mut criterion);
            discovery(&mut criterion);
            teardown_engine_fake(&mut criterion);
            ledger_100k(&mut criterion);
            sandbox_spawn(&mut criterion);
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
    options.shim = Some(Launcher {
        program: exe(),
        args: vec!["__shim".into()],
    });
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
    options.shim = Some(Launcher {
        program: exe(),
        args: vec!["__shim".into()],
    });
    let tracker = Tracker::start(options).expect("tracker");
    let landlock = Sandbox {
        writable: Some(vec![dir.path().to_owned()]),
        ..Sandbox::default()
    };
    let mut variants = vec![("unsandboxed", Sandbox::default())];
    if support.landlock.is_ok() {
        variants.push(("landlock", landlock.clone()));
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
    for (name, sandbox) in variants {
        group.bench_function(name, |b| {
            b.iter(|| rt.block_on(sandboxed_round(&tracker, &sandbox)));
        });
    }
    group.finish();
    tracker.close().expect("close");
}
