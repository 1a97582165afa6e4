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
//! - `end_to_end/stream_run_file` against `end_to_end/memmem_count_file`: what
//!   `hyoka detect --stream FILE` does (the profile compiled on another thread, the file read in
//!   256 KiB blocks from the page cache and fed through `StreamRun`, the last screen judged)
//!   next to what `grep -c -F` does on the same file (read it, count a literal), in the same
//!   run.
//!
//! - `baselines/vte_parser/4096` and `baselines/vt100_screen/4096`: the same bytes in the
//!   same slices through the `vte` parser alone (a `Perform` that does nothing) and through
//!   the `vt100` screen model (40 × 120, as the detector's), the floor and the usual way of
//!   following a terminal, next to `baselines/detector/4096` in the same group (issue 24).
//!
//! On a shared machine these timings move with the load; `examples/idle_detect_prefix.rs`
//! runs a prefix of the stream through `Detector::output` for callgrind, whose instruction
//! counts do not.

use std::io::Read as _;
use std::num::NonZeroU16;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hyoka_benches::reference_stream;
use hyoka_idle_detect::{CodemanClassifier, Detector, DetectorConfig, Profile, StreamRun};

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

/// `hyoka detect --stream FILE`'s work: compile the profile on another thread while the file is
/// read in blocks and fed through the detector, then judge the last screen.
fn stream_run_file(path: &Path, now: Instant) -> u64 {
    let compile = std::thread::spawn(|| Profile::builtin("claude-code").expect("built-in profile"));
    let mut file = std::fs::File::open(path).expect("reference stream file");
    let mut run = StreamRun::new(&DetectorConfig::default(), 4096, now);
    let mut block = vec![0u8; 256 << 10];
    loop {
        let n = file.read(&mut block).expect("read");
        if n == 0 {
            break;
        }
        run.feed(&block[..n]);
    }
    let report = run.finish(&compile.join().expect("compile thread"));
    report.counts.bytes
}

/// `grep -c -F`'s work: read the file, count the lines holding a literal.
fn memmem_count_file(path: &Path) -> usize {
    let mut file = std::fs::File::open(path).expect("reference stream file");
    let mut block = vec![0u8; 256 << 10];
    let finder = memchr::memmem::Finder::new(b"esc to interrupt");
    let mut count = 0;
    loop {
        let n = file.read(&mut block).expect("read");
        if n == 0 {
            break;
        }
        // Blocks may split a match: a benchmark baseline, not an exact count.
        count += finder.find_iter(&block[..n]).count();
    }
    count
}

fn end_to_end(c: &mut Criterion) {
    let stream = reference_stream();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("reference.stream");
    std::fs::write(&path, &stream).expect("write the reference stream");
    #[expect(
        clippy::disallowed_methods,
        reason = "a benchmark needs a base instant; the detector never reads the clock"
    )]
    let now = Instant::now();
    let mut group = c.benchmark_group("end_to_end");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("stream_run_file", |b| {
        b.iter(|| stream_run_file(&path, now));
    });
    group.bench_function("memmem_count_file", |b| {
        b.iter(|| memmem_count_file(&path));
    });
    group.finish();
}

/// A `vte` performer that does nothing: the parser's own cost.
struct Nothing;

impl vte::Perform for Nothing {}

fn baselines(c: &mut Criterion) {
    let stream = reference_stream();
    let profile = Profile::builtin("claude-code").expect("built-in profile");
    #[expect(
        clippy::disallowed_methods,
        reason = "a benchmark needs a base instant; the detector never reads the clock"
    )]
    let now = Instant::now();
    let mut group = c.benchmark_group("baselines");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function(BenchmarkId::new("detector", 4096), |b| {
        b.iter(|| run_detector(&profile, &stream, 4096, None, now));
    });
    group.bench_function(BenchmarkId::new("vte_parser", 4096), |b| {
        b.iter(|| {
            let mut parser = vte::Parser::new();
            let mut nothing = Nothing;
            for chunk in stream.chunks(4096) {
                parser.advance(&mut nothing, chunk);
            }
            std::hint::black_box(parser);
        });
    });
    group.bench_function(BenchmarkId::new("vt100_screen", 4096), |b| {
        b.iter(|| {
            let (rows, cols) = (NonZeroU16::new(40).unwrap(), NonZeroU16::new(120).unwrap());
            let mut parser = vt100::Parser::new(rows, cols, 0);
            for chunk in stream.chunks(4096) {
                parser.process(chunk);
            }
            std::hint::black_box(parser.screen().cursor_position())
        });
    });
    group.finish();
}

criterion_group!(benches, idle_detect, end_to_end, baselines);
criterion_main!(benches);
