//! Respawn benchmarks:
//!
//! - `respawn_chunk`: the per-chunk path of the driver — the session model's
//!   `output(now, chunk)`, the machine's `handle(Output(signals), now)`, and, when a
//!   deadline is due, a verdict and a tick — on the 50 MiB reference stream
//!   (`hyoka_benches::reference_stream`, the Rust port of `shared/bench/gen-stream.js`) in
//!   4 KiB slices, one virtual millisecond per chunk. `machine_only` feeds pre-computed
//!   signals (the machine's own cost); `detector+machine` runs `hyoka-idle-detect`'s
//!   detector through `DetectorModel`, as the driver does. The baseline is Codeman's
//!   `controller` figure on the same input and slicing, **189 MB/s** (its `patterns` mode:
//!   275 MB/s), from `shared/bench/README.md`; JavaScript cannot run here, so compare by
//!   hand.
//! - `idle_sessions`: 1,000 sessions driven by one process on one thread (a current-thread
//!   runtime), each a `Driver` over an in-memory terminal with the real detector. Each
//!   iteration lets one second of wall time pass and returns the CPU time the whole process
//!   used in it, so the reported "time" is CPU per wall second (1 % of a core = 10 ms).
//!   `waiting`: every session shows a permission prompt (blocked, nothing to do), measured
//!   after its first no-output fallback;
//!   `cycling`: every session's agent answers each Enter at once, so the sessions keep
//!   cycling on Codeman's default timers.

#![allow(
    clippy::print_stderr,
    reason = "benchmarks say which input they measured"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hyoka_benches::reference_stream;
use hyoka_idle_detect::{ChunkSignals, Detector, DetectorConfig, Profile};
use hyoka_respawn::{
    AiCheckers, DetectorModel, Driver, DriverInputs, DriverOptions, FakeTerminal, Input, Machine,
    NoObserver, RespawnConfig, SessionModel, Written,
};

const CHUNK: usize = 4096;

fn model(rows: u16, cols: u16) -> DetectorModel {
    let profile = Profile::builtin("claude-code").expect("built-in profile");
    let config = DetectorConfig {
        rows,
        cols,
        ..DetectorConfig::default()
    };
    DetectorModel::new(Detector::new(profile, config))
}

#[expect(
    clippy::disallowed_methods,
    reason = "a benchmark needs an origin for virtual time"
)]
fn origin() -> Instant {
    Instant::now()
}

fn chunk_path(c: &mut Criterion) {
    let stream = reference_stream();
    let chunks: Vec<&[u8]> = stream.chunks(CHUNK).collect();
    let t0 = origin();
    // Pre-computed signals for `machine_only`.
    let signals: Vec<ChunkSignals> = {
        let mut model = model(40, 120);
        chunks
            .iter()
            .enumerate()
            .map(|(i, chunk)| model.output(t0 + Duration::from_millis(i as u64), chunk))
            .collect()
    };
    let mut group = c.benchmark_group("respawn_chunk");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.sample_size(10);
    group.bench_function("machine_only/4096", |b| {
        b.iter(|| {
            let mut machine = Machine::new(RespawnConfig::default());
            black_box(machine.handle(Input::Start, t0));
            for (i, s) in signals.iter().enumerate() {
                let now = t0 + Duration::from_millis(i as u64);
                if machine.next_deadline().is_some_and(|d| d <= now) {
                    black_box(machine.handle(Input::Tick, now));
                }
                black_box(machine.handle(Input::Output(*s), now));
            }
        });
    });
    group.bench_function("detector+machine/4096", |b| {
        b.iter(|| {
            let mut machine = Machine::new(RespawnConfig::default());
            let mut model = model(40, 120);
            black_box(machine.handle(Input::Start, t0));
            for (i, chunk) in chunks.iter().enumerate() {
                let now = t0 + Duration::from_millis(i as u64);
                let s = model.output(now, chunk);
                if machine.next_deadline().is_some_and(|d| d <= now) {
                    let verdict = model.verdict(now);
                    black_box(machine.handle(Input::Verdict(verdict), now));
                }
                black_box(machine.handle(Input::Output(s), now));
            }
        });
    });
    group.finish();
}

const SESSIONS: usize = 1_000;

fn screen(body: &str) -> Vec<u8> {
    format!("\x1b[2J\x1b[H{body}\r\n────────\r\n❯ \r\n────────\r\n").into_bytes()
}

/// 1,000 drivers on one current-thread runtime in a thread of their own, until `stop`.
fn sessions(cycling: bool, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            // One watcher wakes every session at the end; nothing polls meanwhile.
            let (stop_tx, stopped) = tokio::sync::watch::channel(false);
            let watcher = tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                let _ = stop_tx.send(true);
            });
            let mut tasks = Vec::with_capacity(SESSIONS);
            for i in 0..SESSIONS {
                let (terminal, handle) = FakeTerminal::new(u32::try_from(1_000_000 + i).ok());
                let first = if cycling {
                    screen("✻ Worked for 0m 3s")
                } else {
                    screen(" Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No")
                };
                handle.output(first);
                if cycling {
                    handle.respond(move |w| {
                        (*w == Written::Enter).then(|| screen("✻ Worked for 0m 1s"))
                    });
                }
                let mut config = RespawnConfig::default();
                config.idle_check.enabled = false;
                config.plan_check.enabled = false;
                let driver = Driver::new(
                    Machine::new(config),
                    terminal,
                    model(24, 80),
                    NoObserver,
                    AiCheckers::default(),
                    DriverOptions::default(),
                );
                let mut stopped = stopped.clone();
                tasks.push(tokio::spawn(async move {
                    let _keep = handle;
                    driver
                        .run(DriverInputs::default(), async move {
                            let _ = stopped.changed().await;
                        })
                        .await
                }));
                // Spread the starts over five seconds, as sessions would be.
                if i % 200 == 199 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            for task in tasks {
                let _ = task.await;
            }
            let _ = watcher.await;
        });
    })
}

/// CPU time (user + system) of this whole process so far.
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &raw mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

fn idle_sessions(c: &mut Criterion) {
    let mut group = c.benchmark_group("idle_sessions");
    group.sample_size(10);
    for (name, cycling) in [("1000_waiting", false), ("1000_cycling", true)] {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = sessions(cycling, Arc::clone(&stop));
        // Let every session start, and the waiting ones pass their first no-output fallback
        // (30 s), so the window measures the steady state rather than the start-up.
        std::thread::sleep(Duration::from_secs(if cycling { 8 } else { 40 }));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let before = cpu_time();
                for _ in 0..iters {
                    std::thread::sleep(Duration::from_secs(1));
                }
                cpu_time().saturating_sub(before)
            });
        });
        stop.store(true, Ordering::Relaxed);
        thread.join().expect("sessions thread");
    }
    group.finish();
}

criterion_group!(benches, chunk_path, idle_sessions);
criterion_main!(benches);
