//! Hostile input: NUL floods, invalid UTF-8, 1 MiB lines, unterminated escapes, random bytes.
//! Nothing may panic, state stays bounded, and a verdict is always available.

use std::time::Duration;

use hyoka_idle_detect::{
    CodemanClassifier, Detector, DetectorConfig, Profile, SessionState, classify_screen,
    replay_cast, run_stream,
};
use proptest::prelude::*;

use crate::support::base_instant;

#[track_caller]
fn check(input: &[u8]) {
    let t0 = base_instant();
    for profile in Profile::builtin_names() {
        let p = Profile::builtin(profile).expect("profile");
        let mut d = Detector::new(p.clone(), DetectorConfig::default());
        for (i, chunk) in input.chunks(4096).enumerate() {
            d.output(t0 + Duration::from_millis(i as u64), chunk);
        }
        let v = d.verdict(t0 + Duration::from_mins(1)).clone();
        assert!(!v.evidence.is_empty());
        assert!(
            d.state_size().bounded_bytes <= 64 * 1024,
            "{:?}",
            d.state_size()
        );
        let _ = d.stripped_tail(16_000);
        let _ = classify_screen(&p, input);
    }
    let mut c = CodemanClassifier::new();
    for chunk in input.chunks(256) {
        c.feed(chunk);
    }
}

#[test]
fn nul_and_control_floods() {
    check(&vec![0u8; 200_000]);
    check(&(0u8..32).cycle().take(100_000).collect::<Vec<u8>>());
}

#[test]
fn invalid_utf8() {
    check(&[0xff, 0xfe, 0xc0, 0x80, 0xe2, 0x9d, 0xf0, 0x9f, 0x98].repeat(20_000));
}

#[test]
fn a_one_mebibyte_line() {
    let mut line = "✻ Worked for 5s ".repeat(70_000).into_bytes();
    line.truncate(1 << 20);
    check(&line);
    let t0 = base_instant();
    let mut d = Detector::new(
        Profile::builtin("claude-code").expect("profile"),
        DetectorConfig::default(),
    );
    let s = d.output(t0, &line);
    assert!(!s.completion, "a 1 MiB line is not a completion line");
}

#[test]
fn unterminated_escapes() {
    check(b"\x1b]0;never ends ".repeat(10_000).as_slice());
    check(b"\x1b[".repeat(50_000).as_slice());
    check(b"\x1bP".repeat(50_000).as_slice());
    check(&[b"\x1b[999999999999999999;99999999999999m".as_slice(); 1000].concat());
    check(b"text\x1b");
}

#[test]
fn an_unterminated_title_does_not_swallow_the_screen_forever() {
    let t0 = base_instant();
    let mut d = Detector::new(
        Profile::builtin("claude-code").expect("profile"),
        DetectorConfig::default(),
    );
    let mut input = b"\x1b]0;".to_vec();
    input.extend(std::iter::repeat_n(b'x', 70_000));
    input.extend_from_slice("\r\n✻ Worked for 3s\r\n────\r\n❯ \r\n────\r\n".as_bytes());
    let s = d.output(t0, &input);
    assert!(s.completion);
    assert_eq!(
        d.verdict(t0 + Duration::from_secs(5)).state,
        SessionState::Idle
    );
}

#[test]
fn hostile_casts_are_errors_not_panics() {
    let p = Profile::builtin("generic").expect("profile");
    for cast in [
        "{\"version\":2}\n[1e308, \"o\", \"x\"]",
        "{\"version\":2}\n[\"x\", 1, 2]",
        "{\"version\":2}\n[1, \"o\", \"\\u0000\\u001b[\"]",
    ] {
        let _ = replay_cast(&p, &DetectorConfig::default(), cast, base_instant());
    }
    let r = run_stream(
        &p,
        &DetectorConfig::default(),
        &[0xff; 10_000],
        0,
        base_instant(),
    );
    assert_eq!(r.chunk_bytes, 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..20_000)) {
        check(&bytes);
    }
}
