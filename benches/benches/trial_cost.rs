//! The cost of a trial (issue 29): the real `hyoka run` binary on a suite of N trivial trials
//! (the agent `sh -c 'echo x > a.txt'`, a review `sh -c 'grep -qx x a.txt'` that checks it),
//! next to a bare shell loop doing the same work (`mktemp -d`, the command, the check,
//! `rm -rf`), both in the same run, interleaved round by round so the machine's load falls on
//! each alike.
//!
//! Per configuration (one worker or four; plain, `--sandbox`, `--sandbox --network none`) and
//! N it prints, per trial: wall time, CPU (user + system of the process and every child it
//! waited for, from `wait4`), hyoka's own CPU (its CPU minus the loop's for the same work),
//! the peak RSS of the run (`ru_maxrss`, the largest process of the tree: hyoka itself), and
//! the split of hyoka's time per phase from the trials' `report.json` `phases` and
//! `action_timeline.json` (setup: the workspace; the agent phase up to the agent's exit:
//! containment, spawn, watch; after it: teardown; the review; cleanup; and what is left of
//! the trial's share of the wall time: records, the runner, start-up).
//!
//! A 2,000-trial run takes about a minute, too long for criterion's sampling, so this is a
//! `harness = false` bench that measures and prints a table (medians over `--reps` rounds).
//!
//! ```sh
//! cargo build --profile bench -p hyoka-cli --bin hyoka     # the binary measured
//! cargo bench -p hyoka-benches --bench trial_cost           # the full table
//! cargo bench -p hyoka-benches --bench trial_cost -- --quick
//! cargo bench -p hyoka-benches --bench trial_cost -- --n 200 --workers 1 --modes plain
//! ```
//!
//! `HYOKA_BIN` names another binary to measure, and `HYOKA_BASE_BIN` a baseline build (say,
//! `main`'s) measured in the same rounds, its rows marked `base`. Without a binary the bench
//! says how to build one and measures nothing.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a harness = false bench prints its table"
)]
#![allow(
    clippy::cast_precision_loss,
    reason = "counts of trials and bytes far below 2^52 become figures"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The agent every trial runs, and the check of its work.
const AGENT: &str = "echo x > a.txt";
const CHECK: &str = "grep -qx x a.txt";

/// How a configuration contains its trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Sandbox,
    SandboxNetNone,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Sandbox => "sandbox",
            Self::SandboxNetNone => "sandbox+netns",
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Self::Plain => &[],
            Self::Sandbox => &["--sandbox"],
            Self::SandboxNetNone => &["--sandbox", "--network", "none"],
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [Self::Plain, Self::Sandbox, Self::SandboxNetNone]
            .into_iter()
            .find(|m| m.name() == name || (name == "netns" && *m == Self::SandboxNetNone))
    }
}

/// What one process tree cost: wall time, user + system CPU of it and its waited-for
/// children, and its peak RSS.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    wall: Duration,
    cpu: Duration,
    user: Duration,
    sys: Duration,
    max_rss_kib: u64,
}

/// The mean per trial of each phase (milliseconds), from the trials' records.
#[derive(Debug, Clone, Copy, Default)]
struct Split {
    /// The setup phase: the workspace (and the sandbox's directories).
    setup: f64,
    /// The agent phase up to the agent's exit: containment, the spawn through the shim, the
    /// agent's own run, the watch.
    spawn: f64,
    /// The agent phase after the exit: teardown, draining the output, the final scan.
    teardown: f64,
    /// The review phase: the check's spawn, run and teardown.
    review: f64,
    /// The cleanup phase: the workspace removed.
    cleanup: f64,
    /// Bytes of records per trial (every file in the trial's directory, and its share of
    /// `run.json` and the ledger).
    record_bytes: f64,
}

struct Options {
    ns: Vec<usize>,
    workers: Vec<usize>,
    modes: Vec<Mode>,
    reps: usize,
    big_reps: usize,
}

fn options() -> Options {
    let mut opts = Options {
        ns: vec![200, 2000],
        workers: vec![1, 4],
        modes: vec![Mode::Plain, Mode::Sandbox, Mode::SandboxNetNone],
        reps: 3,
        big_reps: 1,
    };
    let mut args = std::env::args().skip(1);
    let list = |v: Option<String>| -> Vec<String> {
        v.unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => {
                opts.ns = vec![50];
                opts.reps = 1;
            }
            "--n" => {
                opts.ns = list(args.next())
                    .iter()
                    .filter_map(|s| s.parse().ok())
                    .collect();
            }
            "--workers" => {
                opts.workers = list(args.next())
                    .iter()
                    .filter_map(|s| s.parse().ok())
                    .collect();
            }
            "--modes" => {
                opts.modes = list(args.next())
                    .iter()
                    .filter_map(|s| Mode::parse(s))
                    .collect();
            }
            "--reps" => opts.reps = args.next().and_then(|s| s.parse().ok()).unwrap_or(3),
            "--big-reps" => opts.big_reps = args.next().and_then(|s| s.parse().ok()).unwrap_or(1),
            // `cargo bench` passes `--bench`; criterion-style filters are not used here.
            _ => {}
        }
    }
    opts
}

fn hyoka_bin() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("HYOKA_BIN") {
        return Some(PathBuf::from(bin));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let bin = target.join("release/hyoka");
    bin.is_file().then_some(bin)
}

#[expect(
    clippy::too_many_lines,
    reason = "the rounds and the two tables read best as one sequence"
)]
fn main() {
    let opts = options();
    let Some(hyoka) = hyoka_bin() else {
        eprintln!(
            "trial_cost: no hyoka binary; build it first with \
             `cargo build --profile bench -p hyoka-cli --bin hyoka` (or set HYOKA_BIN)"
        );
        return;
    };
    let scratch = tempfile::Builder::new()
        .prefix("hyoka-bench-trials-")
        .tempdir()
        .expect("scratch directory");
    println!("trial_cost: {}", hyoka.display());
    // The binaries measured, each in every mode, round by round: this build, and with
    // `HYOKA_BASE_BIN` a baseline build (main's) in the same rounds.
    let mut bins = vec![(String::new(), hyoka)];
    if let Some(base) = std::env::var_os("HYOKA_BASE_BIN") {
        println!("baseline: {}", base.to_string_lossy());
        bins.push(("base ".to_owned(), PathBuf::from(base)));
    }
    let variants: Vec<(String, &Path, Mode)> = bins
        .iter()
        .flat_map(|(label, bin)| {
            opts.modes
                .iter()
                .map(move |&m| (format!("{label}{}", m.name()), bin.as_path(), m))
        })
        .collect();
    println!("load average at start: {}", load_average());
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| N | workers | mode | bare loop wall/trial | hyoka wall/trial | ratio | hyoka CPU/trial (user+sys) | own CPU/trial | peak RSS | trials/s |"
    );
    let _ = writeln!(table, "|---|---|---|---|---|---|---|---|---|---|");
    let mut splits = String::new();
    let _ = writeln!(
        splits,
        "| N | workers | mode | setup (workspace) | agent: containment, spawn, run, watch | agent: teardown | review (spawn, run, teardown) | cleanup | records and the rest | record bytes/trial |"
    );
    let _ = writeln!(splits, "|---|---|---|---|---|---|---|---|---|---|");
    let mut scaling = String::new();
    let _ = writeln!(
        scaling,
        "| N | mode | workers | throughput against {} worker(s) | each round |",
        opts.workers.first().copied().unwrap_or(1)
    );
    let _ = writeln!(scaling, "|---|---|---|---|---|");
    for &n in &opts.ns {
        let suite = write_suite(scratch.path(), n);
        let reps = if n > 500 { opts.big_reps } else { opts.reps };
        // Round by round, every worker count and every mode next to the bare loop (the same
        // for every mode): what the machine's load does over the minutes falls on all of
        // them alike, and the throughput with more workers is read from the same rounds.
        let mut loops: Vec<Vec<Cost>> = vec![Vec::new(); opts.workers.len()];
        let mut runs: Vec<Vec<Vec<Cost>>> =
            vec![vec![Vec::new(); variants.len()]; opts.workers.len()];
        let mut mode_splits = vec![vec![Split::default(); variants.len()]; opts.workers.len()];
        for rep in 0..reps {
            for (w, &workers) in opts.workers.iter().enumerate() {
                loops[w].push(bare_loop(scratch.path(), n, workers));
                for (i, (_, bin, mode)) in variants.iter().enumerate() {
                    let reports = scratch
                        .path()
                        .join(format!("reports-{n}-{workers}-{i}-{rep}"));
                    let cost = hyoka_run(bin, &suite, &reports, scratch.path(), workers, *mode);
                    if rep == 0 {
                        mode_splits[w][i] = split(&reports, n);
                    }
                    let _ = std::fs::remove_dir_all(&reports);
                    runs[w][i].push(cost);
                }
            }
            println!(
                "done: N = {n}, round {} of {reps} (load {})",
                rep + 1,
                load_average()
            );
        }
        for (w, &workers) in opts.workers.iter().enumerate() {
            let bare = median(&loops[w]);
            for (i, (name, _, _)) in variants.iter().enumerate() {
                let cost = median(&runs[w][i]);
                let per = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
                let own = per(cost.cpu) - per(bare.cpu);
                let _ = writeln!(
                    table,
                    "| {n} | {workers} | {} | {:.2} ms | {:.2} ms | {:.2}× | {:.2} ms ({:.2} + {:.2}) | {:.2} ms | {:.1} MiB | {:.0} |",
                    name,
                    per(bare.wall),
                    per(cost.wall),
                    cost.wall.as_secs_f64() / bare.wall.as_secs_f64(),
                    per(cost.cpu),
                    per(cost.user),
                    per(cost.sys),
                    own,
                    cost.max_rss_kib as f64 / 1024.0,
                    n as f64 / cost.wall.as_secs_f64(),
                );
                let s = mode_splits[w][i];
                // What the phases do not cover: the runner, the records, start-up and the end,
                // per trial and per worker.
                let phases = s.setup + s.spawn + s.teardown + s.review + s.cleanup;
                let rest = per(cost.wall) * workers as f64 - phases;
                let _ = writeln!(
                    splits,
                    "| {n} | {workers} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} |",
                    name, s.setup, s.spawn, s.teardown, s.review, s.cleanup, rest, s.record_bytes,
                );
                if w > 0 {
                    // Each round's own ratio (the first worker count's wall over this one's),
                    // then their median.
                    let mut ratios: Vec<f64> = runs[0][i]
                        .iter()
                        .zip(&runs[w][i])
                        .map(|(one, many)| one.wall.as_secs_f64() / many.wall.as_secs_f64())
                        .collect();
                    let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}×")).collect();
                    ratios.sort_by(f64::total_cmp);
                    // For an even count, the mean of the middle two.
                    let half = ratios.len() / 2;
                    let mid = match ratios.len() {
                        0 => None,
                        len if len % 2 == 0 => Some(f64::midpoint(ratios[half - 1], ratios[half])),
                        _ => Some(ratios[half]),
                    };
                    if let Some(mid) = mid {
                        let each = each.join(", ");
                        let _ =
                            writeln!(scaling, "| {n} | {name} | {workers} | {mid:.2}× | {each} |");
                    }
                }
            }
        }
    }
    println!("load average at end: {}", load_average());
    println!("\nPer trial (medians of the rounds; own CPU = hyoka's CPU - the loop's):\n");
    println!("{table}");
    println!(
        "hyoka's time per trial by phase, ms (first round; the agent phase split by its timeline):\n"
    );
    println!("{splits}");
    println!("Throughput with more workers (median of the rounds' own ratios):\n");
    println!("{scaling}");
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A suite of `n` evals, each the trivial agent and its check.
fn write_suite(dir: &Path, n: usize) -> PathBuf {
    let mut yaml = String::from("defaults: { timeout: 1m }\nevals:\n");
    for i in 0..n {
        let _ = writeln!(
            yaml,
            "  - {{ id: t{i:05}, command: [sh, -c, '{AGENT}'], review: {{ command: [sh, -c, '{CHECK}'] }} }}"
        );
    }
    let path = dir.join(format!("suite-{n}.yaml"));
    std::fs::write(&path, yaml).expect("write the suite");
    path
}

/// `hyoka run --suite` of the suite on `workers`, measured.
fn hyoka_run(
    hyoka: &Path,
    suite: &Path,
    reports: &Path,
    root: &Path,
    workers: usize,
    mode: Mode,
) -> Cost {
    let workspaces = root.join("ws");
    std::fs::create_dir_all(&workspaces).expect("workspace root");
    let mut command = Command::new(hyoka);
    command
        .args(["-q", "run", "--suite"])
        .arg(suite)
        .arg("--reports")
        .arg(reports)
        .arg("--workspace-root")
        .arg(&workspaces)
        .args(["--workers", &workers.to_string()])
        .args(mode.flags())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let (cost, status) = measure(&mut command);
    assert_eq!(
        status,
        0,
        "hyoka run ({} on {workers}) did not pass every trial",
        mode.name()
    );
    cost
}

/// The bare loop: `workers` shells, each doing its share of the `n` trials one at a time.
fn bare_loop(root: &Path, n: usize, workers: usize) -> Cost {
    let tmp = root.join("loop");
    std::fs::create_dir_all(&tmp).expect("loop root");
    let per = n / workers;
    let one = format!(
        "i=0; while [ $i -lt {per} ]; do d=$(mktemp -d) && cd \"$d\" && sh -c '{AGENT}' && sh -c '{CHECK}' && cd / && rm -rf \"$d\" || exit 1; i=$((i+1)); done"
    );
    // Each worker's status counts: a bare `wait` returns 0 whatever its children did, and a
    // loop that failed would be timed as if it had done the work.
    let script = format!(
        "pids=; for w in $(seq {workers}); do ( {one} ) & pids=\"$pids $!\"; done; \
         failed=0; for p in $pids; do wait $p || failed=1; done; exit $failed"
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", &script])
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let (cost, status) = measure(&mut command);
    assert_eq!(
        status, 0,
        "the bare loop ({workers} workers) failed: not timed"
    );
    cost
}

/// Runs `command` to its end and takes its `wait4` resource usage.
fn measure(command: &mut Command) -> (Cost, i32) {
    let started = Instant::now();
    let child = command.spawn().expect("spawn");
    let pid = i32::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: a zeroed `rusage` is a valid value for `wait4` to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for (std never reaps on its own), and
    // both pointers are valid for writes.
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    let wall = started.elapsed();
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    std::mem::forget(child);
    let time = |tv: libc::timeval| {
        Duration::from_secs(u64::try_from(tv.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(tv.tv_usec).unwrap_or(0))
    };
    let (user, sys) = (time(usage.ru_utime), time(usage.ru_stime));
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let cost = Cost {
        wall,
        cpu: user + sys,
        user,
        sys,
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    };
    (cost, code)
}

/// The round with the median wall time (for an even count, the slower of the middle two).
fn median(costs: &[Cost]) -> Cost {
    let mut sorted = costs.to_vec();
    sorted.sort_by_key(|c| c.wall);
    sorted[sorted.len() / 2]
}

/// The mean per trial of each phase, from the records of the run in `reports`: the phases'
/// durations in `report.json`, the agent phase split at its exit (the `exit` entry of
/// `action_timeline.json`, whose times count from the trial's start).
fn split(reports: &Path, n: usize) -> Split {
    let Some(run_dir) = std::fs::read_dir(reports)
        .ok()
        .and_then(|mut d| d.next())
        .and_then(Result::ok)
        .map(|e| e.path())
    else {
        return Split::default();
    };
    let mut total = Split::default();
    let mut counted = 0usize;
    for i in 0..n {
        let dir = run_dir.join(format!("t{i:05}"));
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .ok()
                .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
                .unwrap_or_default()
        };
        let (report, timeline) = (read("report.json"), read("action_timeline.json"));
        if report.is_null() {
            continue;
        }
        let bytes: u64 = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        let at = |v: &serde_json::Value| {
            v.as_str()
                .and_then(|t| humantime::parse_rfc3339(t).ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        let started = at(&report["started_at"]);
        let phase = |name: &str| {
            report["phases"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["name"] == name))
                .map_or((0.0, 0.0), |p| {
                    (
                        at(&p["started_at"]) - started,
                        p["duration_ms"].as_f64().unwrap_or(0.0),
                    )
                })
        };
        let (agent_start, agent) = phase("agent");
        let exit = timeline["events"]
            .as_array()
            .and_then(|es| es.iter().find(|e| e["type"] == "exit"))
            .and_then(|e| e["t_ms"].as_f64());
        let to_exit = exit.map_or(agent, |e| (e - agent_start).clamp(0.0, agent));
        total.setup += phase("setup").1;
        total.spawn += to_exit;
        total.teardown += agent - to_exit;
        total.review += phase("review").1;
        total.cleanup += phase("cleanup").1;
        total.record_bytes += bytes as f64;
        counted += 1;
    }
    let c = counted.max(1) as f64;
    // The run's own records, shared by its trials: `run.json` (a line per trial) and the
    // ledger.
    let shared: u64 = ["run.json", "pids.txt"]
        .iter()
        .filter_map(|f| std::fs::metadata(run_dir.join(f)).ok())
        .map(|m| m.len())
        .sum();
    total.record_bytes += shared as f64;
    Split {
        setup: total.setup / c,
        spawn: total.spawn / c,
        teardown: total.teardown / c,
        review: total.review / c,
        cleanup: total.cleanup / c,
        record_bytes: total.record_bytes / c,
    }
}
