//! Unit tests for `replay`: the `hyoka detect` entry points.

use std::time::Instant;

use super::{
    CastReplay, MAX_CAST_SIZE, StreamRun, classify_screen, render_explain, replay_cast, run_stream,
};
use crate::detector::{Detector, DetectorConfig};
use crate::error::DetectError;
use crate::profile::Profile;
use crate::signals::SessionState;

fn start() -> Instant {
    #[expect(
        clippy::disallowed_methods,
        reason = "tests need one base instant; all times derive from it"
    )]
    Instant::now()
}

#[track_caller]
fn check(cast: &str, expected: &[(u64, SessionState)]) {
    let p = Profile::builtin("claude-code").expect("profile");
    let changes = replay_cast(&p, &DetectorConfig::default(), cast, start()).expect("valid cast");
    let got: Vec<(u64, SessionState)> =
        changes.iter().map(|c| (c.at_ms, c.verdict.state)).collect();
    assert_eq!(got, expected);
}

#[test]
fn a_cast_replays_in_virtual_time() {
    let cast = r#"{"version": 2, "width": 80, "height": 24}
[0.5, "o", "\u001b[2J\u001b[H✻ Cultivating… (1s · ↓ 12 tokens)\r\n────────\r\n❯ \r\n────────\r\n"]
[4.0, "o", "\u001b[2J\u001b[H⏺ Done.\r\n✻ Worked for 4s\r\n────────\r\n❯ \r\n────────\r\n"]
[9.0, "i", "hello"]
"#;
    // Working from the first frame; idle 1.5 s after the last output; user input changes nothing
    // on screen, so the verdict stays.
    check(
        cast,
        &[(500, SessionState::Working), (5500, SessionState::Idle)],
    );
}

#[test]
fn asciicast_v3_uses_relative_times() {
    let cast = "{\"version\": 3, \"term\": {\"cols\": 80, \"rows\": 24}}\n[0.25, \"o\", \"⠋ Thinking… (esc to interrupt)\"]\n[0.25, \"o\", \"\\r\\u001b[2K✻ Worked for 1s\\r\\n❯ \"]\n";
    check(
        cast,
        &[(250, SessionState::Working), (2000, SessionState::Idle)],
    );
}

#[test]
fn bad_casts_are_errors_with_a_line_number() {
    let p = Profile::builtin("generic").expect("profile");
    let err =
        |c: &str| replay_cast(&p, &DetectorConfig::default(), c, start()).expect_err("invalid");
    assert!(matches!(err(""), DetectError::Cast { line: 1, .. }));
    assert!(matches!(
        err("{\"version\": 9}"),
        DetectError::Cast { line: 1, .. }
    ));
    assert!(matches!(
        err("{\"version\": 2}\n[1, \"o\"]"),
        DetectError::Cast { line: 2, .. }
    ));
    assert!(matches!(
        err("{\"version\": 2}\n\n[-1, \"o\", \"x\"]"),
        DetectError::Cast { line: 3, .. }
    ));
    assert!(matches!(err("not json"), DetectError::Cast { line: 1, .. }));
}

#[test]
fn a_screen_verdict_serialises_to_the_design_shape() {
    let p = Profile::builtin("claude-code").expect("profile");
    let v = classify_screen(
        &p,
        " Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel".as_bytes(),
    );
    let json = serde_json::to_value(&v).expect("serialises");
    assert_eq!(json["state"], "blocked");
    assert_eq!(json["blocked"], "permission");
    assert_eq!(json["evidence"][0]["signal"], "screen_rule");
    assert_eq!(json["evidence"][0]["rule"], "claude-code/permission-prompt");
    let idle =
        serde_json::to_value(classify_screen(&p, "────\n❯ \n────".as_bytes())).expect("serialises");
    assert_eq!(idle["blocked"], serde_json::Value::Null);
    let text = render_explain(&v);
    assert!(text.starts_with("state: blocked (permission)\n"), "{text}");
    assert!(text.contains("claude-code/permission-prompt"), "{text}");
}

#[test]
fn a_stream_reports_counts_and_the_final_verdict() {
    let p = Profile::builtin("claude-code").expect("profile");
    let stream = "⠋ Thinking… (1s · ↑ 5 tokens · esc to interrupt)\r\x1b[2K✻ Worked for 1s\r\n────\r\n❯ \r\n────\r\n".repeat(100);
    let r = run_stream(
        &p,
        &DetectorConfig::default(),
        stream.as_bytes(),
        7,
        start(),
    );
    assert_eq!(r.chunk_bytes, 7);
    assert_eq!(r.counts.completions, 100);
    assert_eq!(r.counts.bytes, stream.len() as u64);
    assert_eq!(r.verdict.state, SessionState::Idle);
    assert!(r.state.bounded_bytes <= 64 * 1024);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Pieces of any size give the counts of the whole stream fed at once.
    #[test]
    fn a_stream_fed_in_pieces_counts_like_a_whole_one(
        cuts in proptest::collection::vec(1usize..9000, 1..40),
        chunk in 1usize..5000,
    ) {
        let unit = "\x1b[2K⠙ Thinking… (12s · ↓ 1.2k tokens)\r\n✻ Worked for 1s\r\n❯ \r\n";
        let bytes = unit.repeat(600).into_bytes();
        let p = Profile::builtin("claude-code").expect("profile");
        let t0 = start();
        let whole = run_stream(&p, &DetectorConfig::default(), &bytes, chunk, t0);
        let mut run = StreamRun::new(&DetectorConfig::default(), chunk, t0);
        let mut rest: &[u8] = &bytes;
        for cut in cuts.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let n = (*cut).min(rest.len());
            run.feed(&rest[..n]);
            rest = &rest[n..];
        }
        let pieces = run.finish(&p);
        proptest::prop_assert_eq!(whole.counts, pieces.counts);
        proptest::prop_assert_eq!(whole.verdict.state, pieces.verdict.state);
    }
}

#[test]
fn a_cast_fed_a_line_at_a_time_replays_like_a_whole_one() {
    let cast = "{\"version\": 2, \"width\": 80, \"height\": 24}\n\n[0.5, \"o\", \"⠋ Thinking… (esc to interrupt)\"]\n[3.0, \"o\", \"\\r\\u001b[2K✻ Worked for 3s\\r\\n❯ \"]\n";
    let p = Profile::builtin("claude-code").expect("profile");
    let t0 = start();
    let whole = replay_cast(&p, &DetectorConfig::default(), cast, t0).expect("valid");
    let mut replay = CastReplay::new(&p, &DetectorConfig::default(), t0);
    let mut changes = Vec::new();
    for line in cast.lines() {
        replay.feed_line(line).expect("valid line");
        changes.extend(replay.take_changes());
    }
    changes.extend(replay.finish().expect("a header was seen"));
    assert_eq!(changes, whole);
    assert!(matches!(
        CastReplay::new(&p, &DetectorConfig::default(), t0).finish(),
        Err(DetectError::Cast { .. })
    ));
}

/// Issue 25: a header or a resize event naming a huge terminal is clamped to
/// [`MAX_CAST_SIZE`], so the screen model stays bounded.
#[test]
fn a_huge_terminal_in_a_cast_is_clamped() {
    let profile = Profile::builtin("generic").expect("profile");
    let mut replay = CastReplay::new(&profile, &DetectorConfig::default(), start());
    replay
        .feed_line(r#"{"version": 2, "width": 65535, "height": 65535}"#)
        .unwrap();
    let size = |r: &CastReplay| r.detector.as_ref().map(Detector::size);
    assert_eq!(size(&replay), Some(MAX_CAST_SIZE));
    replay.feed_line(r#"[0.5, "r", "80x24"]"#).unwrap();
    assert_eq!(size(&replay), Some((24, 80)));
    replay.feed_line(r#"[1.0, "r", "65535x65535"]"#).unwrap();
    assert_eq!(size(&replay), Some(MAX_CAST_SIZE));
    replay.feed_line(r#"[1.5, "o", "hello"]"#).unwrap();
    assert!(replay.finish().is_ok());
}
