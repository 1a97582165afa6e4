//! Idle-detection benchmarks on the 50 MiB reference stream (`shared/bench/gen-stream.js`,
//! ported in `hyoka_benches::reference_stream`), against Codeman's figures on the same input:
//! 275 MB/s for its pattern detection and 61–121 MB/s for its live session path at 4 KiB
//! slices, 106 MB/s (patterns) at 256-byte slices (`shared/bench/README.md`).
//!
//! - `detector/<slice>`: the full per-chunk path of `Detector::output` (terminal model, line
//!   classification, raw-output ring), then one verdict at the end (screen render and rules).
//! - `codeman_compatible/<slice>`: `CodemanClassifier`, Codeman's own rules, for comparison
//!   with its `patterns` figure and counters.
//! - `detector_verdict_every_64_chunks/4096`: a live-session pattern where a decision is made
//!   regularly, so the screen emulator runs on most of the output.
//!
//! On a shared machine these timings move with the load; `examples/idle_detect_prefix.rs`
//! runs a prefix of the stream through `Detector::output` for callgrind, whose instruction
//! counts do not.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hyoka_benches::reference_stream;
use hyoka_idle_detect::{CodemanClassifier, Detector, DetectorConfig, Profile};

fn run_detector(
    profile: &Profile,
    stream: &[u8],
    slice: usize,
    verdict_every: Option<usize>,
    now: Instant,
) -> Detector {
    let mut d = Detector::new(profile.clone(), DetectorConfig::default());
    for (i, chunk) in stream.chunks(slice).enumerate() {
        d.output(now, chunk);
        if verdict_every.is_some_and(|n| i % n == n - 1) {
            d.verdict(now);
        }
    }
    d.verdict(now + Duration::from_secs(20));
    d
}

fn run_codeman(stream: &[u8], slice: usize) -> CodemanClassifier {
    let mut c = CodemanClassifier::new();
    for chunk in stream.chunks(slice) {
        c.feed(chunk);
    }
    c
}

fn idle_detect(c: &mut Criterion) {
    let stream = reference_stream();
    let profile = Profile::builtin("claude-code").expect("built-in profile");
    #[expect(
        clippy::disallowed_methods,
        reason = "a benchmark needs a base instant; the detector never reads the clock"
    )]
    let now = Instant::now();

    // The counts, once, for the report (they do not depend on timing).
    for slice in [4096, 256] {
        let d = run_detector(&profile, &stream, slice, None, now);
        let codeman = run_codeman(&stream, slice);
        #[expect(
            clippy::print_stderr,
            reason = "the benchmark reports its counts next to its timings"
        )]
        {
            eprintln!("detector counts at {slice}-byte slices: {:?}", d.counts());
            eprintln!("detector state size: {:?}", d.state_size());
            eprintln!(
                "codeman-compatible counters at {slice}-byte slices: {:?}",
                codeman.counters()
            );
        }
    }

    let mut group = c.benchmark_group("idle_detect");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    for slice in [4096usize, 256] {
        group.bench_with_input(BenchmarkId::new("detector", slice), &slice, |b, &slice| {
            b.iter(|| run_detector(&profile, &stream, slice, None, now));
        });
        group.bench_with_input(
            BenchmarkId::new("codeman_compatible", slice),
            &slice,
            |b, &slice| {
                b.iter(|| run_codeman(&stream, slice));
            },
        );
    }
    group.bench_function(
        BenchmarkId::new("detector_verdict_every_64_chunks", 4096),
        |b| {
            b.iter(|| run_detector(&profile, &stream, 4096, Some(64), now));
        },
    );
    group.finish();
}

criterion_group!(benches, idle_detect);
criterion_main!(benches);
