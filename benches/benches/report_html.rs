//! The HTML report of a run of 10,000 trials (2,500 tasks × 4 epochs, synthesised records
//! of hyoka's shape, `hyoka_benches::synthetic_run`), each against its named baseline
//! measured in the same run:
//!
//! - `report_html/generate_10k`: `hyoka report html`'s library call from the files (read
//!   and check every record, build the page, compress its data) vs `serde_json/
//!   read_parse_serialize_10k`: reading the same files, parsing each into a
//!   `serde_json::Value` and serialising them all into one JSON document (what a page that
//!   just embedded the records would cost, before any compression);
//! - `report_html/render_10k`: rendering the page from records already read vs
//!   `serde_json/serialize_10k`: serialising the already parsed records into one JSON string.
//!
//! After the timings it writes the page to `target/report-html-bench/report.html`, prints
//! its size, and, when headless Chromium is on this machine, its time to interactive: the
//! page's own `performance.now()` when the table is drawn and its handlers are in place
//! (`data-interactive-ms`), and the wall time of a `--dump-dom` run against the same run on
//! a blank page.

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "benchmarks print the figures they measured, in MiB"
)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use criterion::Criterion;
use hyoka_benches::{Chromium, file_url, synthetic_run};
use hyoka_report::{HtmlOptions, RunRecords, render_page};
use serde_json::Value;

const TRIALS: usize = 10_000;
const EPOCHS: usize = 4;

/// Every record of the run, parsed.
fn parse_all(run: &Path) -> Vec<Value> {
    let read = |p: &Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).expect("record")).expect("json")
    };
    let summary = read(&run.join("run.json"));
    let mut all = Vec::with_capacity(1 + 3 * TRIALS);
    for eval in summary["evals"].as_array().expect("evals") {
        let report = run.join(eval["report"].as_str().expect("path"));
        let dir = report.parent().expect("dir");
        all.push(read(&report));
        all.push(read(&dir.join("action_timeline.json")));
        all.push(Value::String(
            std::fs::read_to_string(dir.join("output.log")).expect("log"),
        ));
    }
    all.push(summary);
    all
}

fn benches(c: &mut Criterion, run: &Path) {
    let options = HtmlOptions::default();
    let mut group = c.benchmark_group("report_html");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("generate_10k", |b| {
        b.iter(|| {
            let records = RunRecords::load(run, &options).expect("load");
            black_box(
                render_page(&[&records], SystemTime::UNIX_EPOCH)
                    .expect("render")
                    .len(),
            )
        });
    });
    group.bench_function("serde_json/read_parse_serialize_10k", |b| {
        b.iter(|| black_box(serde_json::to_string(&parse_all(run)).expect("json").len()));
    });
    let records = RunRecords::load(run, &options).expect("load");
    let parsed = parse_all(run);
    group.bench_function("render_10k", |b| {
        b.iter(|| {
            black_box(
                render_page(&[&records], SystemTime::UNIX_EPOCH)
                    .expect("render")
                    .len(),
            )
        });
    });
    group.bench_function("serde_json/serialize_10k", |b| {
        b.iter(|| black_box(serde_json::to_string(&parsed).expect("json").len()));
    });
    group.finish();
}

/// The page's size and, with Chromium, its time to interactive.
fn page_figures(run: &Path, out_dir: &Path) {
    let records = RunRecords::load(run, &HtmlOptions::default()).expect("load");
    let html = render_page(&[&records], SystemTime::UNIX_EPOCH).expect("render");
    std::fs::create_dir_all(out_dir).expect("output directory");
    let page = out_dir.join("report.html");
    std::fs::write(&page, &html).expect("page");
    let records_bytes: u64 = walk_size(run);
    println!(
        "report_html/page_size_10k: {} bytes ({:.2} MiB) for {} bytes of records; {}",
        html.len(),
        html.len() as f64 / 1_048_576.0,
        records_bytes,
        page.display()
    );
    let Some(chromium) = Chromium::find() else {
        println!("report_html/time_to_interactive: skipped, no Chromium on PATH");
        return;
    };
    let blank = out_dir.join("blank.html");
    std::fs::write(&blank, "<!doctype html><title>blank</title>").expect("blank page");
    let budget = Duration::from_secs(10);
    // The first run warms the disk cache and Chromium's own files.
    let _ = chromium.dump_dom(&file_url(&page, ""), budget);
    let mut interactive = Vec::new();
    let mut wall = Vec::new();
    let mut blank_wall = Vec::new();
    for _ in 0..5 {
        let out = chromium
            .dump_dom(&file_url(&page, ""), budget)
            .expect("chromium");
        let ms =
            attribute(&out.stdout, "data-interactive-ms").expect("the page became interactive");
        interactive.push(ms);
        wall.push(out.elapsed.as_secs_f64() * 1000.0);
        let out = chromium
            .dump_dom(&file_url(&blank, ""), budget)
            .expect("chromium");
        blank_wall.push(out.elapsed.as_secs_f64() * 1000.0);
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0], v[v.len() - 1])
    };
    let (i_med, i_min, i_max) = stats(&mut interactive);
    let (w_med, w_min, w_max) = stats(&mut wall);
    let (b_med, b_min, b_max) = stats(&mut blank_wall);
    println!(
        "report_html/time_to_interactive_10k: performance.now() at interactive: median {i_med:.0} ms [{i_min:.0}–{i_max:.0}] over 5 runs"
    );
    println!(
        "report_html/chromium_dump_dom_10k: wall {w_med:.0} ms [{w_min:.0}–{w_max:.0}] vs blank page {b_med:.0} ms [{b_min:.0}–{b_max:.0}] ({})",
        chromium.program().display()
    );
}

fn attribute(dom: &str, name: &str) -> Option<f64> {
    let at = dom.find(&format!("{name}=\""))? + name.len() + 2;
    dom[at..at + dom[at..].find('"')?].parse().ok()
}

fn walk_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let meta = e.metadata().expect("metadata");
            if meta.is_dir() {
                walk_size(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

fn main() {
    let scratch = tempfile::Builder::new()
        .prefix("report-html-bench-")
        .tempdir()
        .expect("scratch");
    let run = scratch.path().join("run");
    std::fs::create_dir(&run).expect("run directory");
    synthetic_run(&run, TRIALS, EPOCHS, 19).expect("synthetic records");
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion, &run);
    criterion.final_summary();
    let target: PathBuf = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    page_figures(&run, &target.join("report-html-bench"));
}
