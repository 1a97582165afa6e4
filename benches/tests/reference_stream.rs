//! The Rust port of `gen-stream.js` produces the reference stream byte for byte.

use std::io::Write as _;

use hyoka_benches::{REFERENCE_BYTES, REFERENCE_SHA256, generate_stream, reference_stream};
use sha2::{Digest, Sha256};

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[test]
fn reference_stream_matches_the_published_sha256() {
    let stream = reference_stream();
    assert_eq!(stream.len(), REFERENCE_BYTES);
    assert_eq!(hex(&Sha256::digest(&stream)), REFERENCE_SHA256);
}

#[test]
fn a_short_stream_is_cut_back_to_a_character_boundary() {
    // `node gen-stream.js --bytes 200000` writes 199,999 bytes with this SHA-256.
    let stream = generate_stream(200_000, 3_235_818_001);
    assert_eq!(stream.len(), 199_999);
    assert_eq!(
        hex(&Sha256::digest(&stream)),
        "8fda38bf2fd9e2ddb7b03f6db0064b97307cab0bfe813533ddea2727dd8fcd50"
    );
    assert!(std::str::from_utf8(&stream).is_ok());
}

/// Feeds the stream to the Codeman-compatible classifier in `chunk`-byte slices and compares
/// its counters with Codeman's own (`shared/bench/codeman-expected-<chunk>.json`).
fn check_codeman_counters(stream: &[u8], chunk: usize) {
    let shared = std::env::var_os("HYOKA_SHARED_DIR").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
        std::path::PathBuf::from,
    );
    let path = shared.join(format!("bench/codeman-expected-{chunk}.json"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        // Straight to stderr, past the test harness's capture, so the skip shows in the output.
        let _ = writeln!(
            std::io::stderr(),
            "skipping the Codeman comparison: {} not found (set HYOKA_SHARED_DIR)",
            path.display()
        );
        return;
    };
    let expected: serde_json::Value =
        serde_json::from_str(&text).expect("expected counters are JSON");
    let mut classifier = hyoka_idle_detect::CodemanClassifier::new();
    for slice in stream.chunks(chunk) {
        classifier.feed(slice);
    }
    let got = serde_json::to_value(classifier.counters()).expect("counters serialise");
    let mut want = expected["patterns"].clone();
    // Codeman spells the final state as its state name.
    want["finalState"] = serde_json::Value::String("watching".to_owned());
    assert_eq!(
        got, want,
        "Codeman-compatible counters at {chunk}-byte chunks"
    );
}

#[test]
fn codeman_compatible_counters_match_codeman_on_the_reference_stream() {
    let stream = reference_stream();
    check_codeman_counters(&stream, 4096);
    check_codeman_counters(&stream, 256);
}
