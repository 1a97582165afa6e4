//! Runs a prefix of the reference stream through `Detector::output` for an instruction-count
//! profile, which is deterministic where wall-clock benchmarks on a shared machine are not:
//!
//! ```sh
//! cargo build --profile bench -p hyoka-benches --example idle_detect_prefix
//! valgrind --tool=callgrind --toggle-collect='*feed_all*' \
//!     target/release/examples/idle_detect_prefix 8388608 4096
//! ```
//!
//! Arguments: prefix bytes (default 8 MiB) and slice size (default 4096). Only `feed_all`
//! (the chunk path) is worth collecting: generating the stream costs more than detecting on it.

use std::time::Instant;

use hyoka_benches::{REFERENCE_SEED, generate_stream};
use hyoka_idle_detect::{Detector, DetectorConfig, Profile};

#[inline(never)]
fn feed_all(detector: &mut Detector, stream: &[u8], slice: usize, now: Instant) -> u64 {
    let mut working = 0;
    for chunk in stream.chunks(slice) {
        working += u64::from(detector.output(now, chunk).working);
    }
    working
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bytes = args
        .next()
        .map_or(8 << 20, |a| a.parse().expect("prefix bytes"));
    let slice = args
        .next()
        .map_or(4096, |a| a.parse().expect("slice bytes"));
    let stream = generate_stream(bytes, REFERENCE_SEED);
    let profile = Profile::builtin("claude-code").expect("built-in profile");
    let mut detector = Detector::new(profile, DetectorConfig::default());
    #[expect(
        clippy::disallowed_methods,
        reason = "a driver needs a base instant; the detector never reads the clock"
    )]
    let now = Instant::now();
    let working = feed_all(&mut detector, &stream, slice, now);
    #[expect(clippy::print_stdout, reason = "a driver reports what it did")]
    {
        println!(
            "{} bytes in {slice}-byte slices: {working} working chunks, {:?}, {:?}",
            stream.len(),
            detector.counts(),
            detector.state_size()
        );
    }
}
