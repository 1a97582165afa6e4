//! Finds where two chunkings of a stream disagree on completions (development aid).

#[expect(
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a development aid"
)]
fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let stream = std::fs::read(path).expect("stream");
    let run = |chunk: usize| -> Vec<usize> {
        let profile = hyoka_idle_detect::Profile::builtin("claude-code").expect("profile");
        let mut d =
            hyoka_idle_detect::Detector::new(profile, hyoka_idle_detect::DetectorConfig::default());
        let now = std::time::Instant::now();
        let mut out = Vec::new();
        let mut off = 0;
        for s in stream.chunks(chunk) {
            off += s.len();
            if d.output(now, s).completion {
                out.push(off);
            }
        }
        out
    };
    let a = run(4096);
    let b = run(256);
    println!("{} {}", a.len(), b.len());
    for &x in &b {
        let w = x.div_ceil(4096) * 4096;
        if !a.iter().any(|&y| y == w.min(stream.len())) {
            let lo = x.saturating_sub(400);
            println!(
                "missing near {x}: {:?}",
                String::from_utf8_lossy(&stream[lo..x.min(stream.len())])
            );
        }
    }
}
