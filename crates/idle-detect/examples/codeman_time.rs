//! Times the detector and the Codeman-compatible classifier on a stream file (a development
//! aid; the figures that count come from `cargo bench -p hyoka-benches --bench idle_detect`).
//!
//! `cargo run --release -p hyoka-idle-detect --example codeman_time -- FILE [CHUNK]`

#[expect(
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a development aid"
)]
fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let chunk: usize = std::env::args()
        .nth(2)
        .map_or(4096, |s| s.parse().expect("chunk size"));
    let stream = std::fs::read(path).expect("stream");
    let only_detector = std::env::args().nth(3).is_some();
    let t = std::time::Instant::now();
    let mut c = hyoka_idle_detect::CodemanClassifier::new();
    for s in stream.chunks(chunk) {
        if only_detector {
            break;
        }
        c.feed(s);
    }
    let el = t.elapsed();
    println!(
        "codeman  {el:?} {:.0} MB/s {:?}",
        stream.len() as f64 / el.as_secs_f64() / 1e6,
        c.counters()
    );
    let profile = hyoka_idle_detect::Profile::builtin("claude-code").expect("profile");
    let mut d =
        hyoka_idle_detect::Detector::new(profile, hyoka_idle_detect::DetectorConfig::default());
    let now = std::time::Instant::now();
    let passes: u32 = std::env::var("PASSES")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(5);
    let t = std::time::Instant::now();
    for _ in 0..passes {
        for s in stream.chunks(chunk) {
            d.output(now, s);
        }
    }
    let el = t.elapsed() / passes;
    let v = d.verdict(now + std::time::Duration::from_secs(20)).clone();
    println!(
        "detector {el:?} {:.0} MB/s {:?} {:?} {:?}",
        stream.len() as f64 / el.as_secs_f64() / 1e6,
        d.counts(),
        d.state_size(),
        v.state
    );
}
