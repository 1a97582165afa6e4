//! The Rust port of `gen-stream.js` produces the reference stream byte for byte.

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
