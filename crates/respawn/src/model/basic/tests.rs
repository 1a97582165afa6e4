//! The built-in model's per-chunk signals and verdicts (including the detection scenarios
//! PD-001 … PD-008 of `respawn-reference.md` §5a and the blind spot of §5d 106).
#![allow(
    clippy::disallowed_methods,
    reason = "tests need an origin for virtual time"
)]

use std::time::Instant;

use hyoka_idle_detect::{BlockedKind, ChunkSignals, SessionState};

use super::BasicModel;
use crate::model::SessionModel;

fn signals(chunks: &[&[u8]]) -> ChunkSignals {
    let mut model = BasicModel::new(40, 120);
    let now = Instant::now();
    chunks
        .iter()
        .map(|c| model.output(now, c))
        .last()
        .unwrap_or_default()
}

#[track_caller]
fn check(chunks: &[&[u8]], expected: &str) {
    let s = signals(chunks);
    let mut got = Vec::new();
    for (on, name) in [
        (s.completion, "completion"),
        (s.working, "working"),
        (s.prompt, "prompt"),
        (s.substantial, "substantial"),
    ] {
        if on {
            got.push(name);
        }
    }
    assert_eq!(got.join(" "), expected, "{chunks:?}");
}

#[test]
fn pd_001_waiting_for_is_not_a_completion() {
    check(&[b"Waiting for 5s before retry"], "substantial");
}

#[test]
fn pd_002_a_working_word_in_prose_counts() {
    check(&[b"The 'Thinking' file was created"], "working substantial");
}

#[test]
fn pd_003_prompts() {
    check(&["❯ ".as_bytes()], "prompt");
    check(&["⏵ ".as_bytes()], "prompt");
    check(&[b"> "], "");
    check(&["＞ ".as_bytes()], "");
}

#[test]
fn pd_004_sgr_inside_the_completion() {
    // Codeman misses it (no stripping before its regex); this model strips first.
    check(
        &[b"\x1b[32m\xe2\x9c\xbb Wor\x1b[32mked\x1b[0m for 2m 46s"],
        "completion substantial",
    );
    check(&[b"\x1b[2mWorked for 5s"], "completion substantial");
}

#[test]
fn pd_005_pd_006_tokens() {
    assert_eq!(signals(&[b"999.9k tokens"]).tokens, Some(999_900));
    assert_eq!(signals(&[b"1.0M tokens"]).tokens, Some(1_000_000));
    assert_eq!(signals(&[b"500 tokens"]).tokens, Some(500));
    for none in [&b"tokens"[..], b" tokens", b".k tokens"] {
        assert_eq!(signals(&[none]).tokens, None, "{none:?}");
    }
}

#[test]
fn pd_007_two_completions_in_one_chunk() {
    check(
        &[b"Worked for 1s... Worked for 2m 30s"],
        "completion substantial",
    );
}

#[test]
fn pd_008_spinner_glyphs_in_prose() {
    check(
        &["The sequence is: ⠋ ⠙ ⠹".as_bytes()],
        "working substantial",
    );
}

#[test]
fn d106_no_blind_spot_early_in_a_large_chunk() {
    // Codeman's 300-unit window misses "Thinking" followed by 400 characters.
    let mut chunk = b"Thinking".to_vec();
    chunk.extend(std::iter::repeat_n(b'x', 400));
    check(&[&chunk], "working substantial");
    // And working is not sticky: the next chunk of plain text is not working.
    let mut model = BasicModel::new(40, 120);
    let now = Instant::now();
    assert!(model.output(now, &chunk).working);
    assert!(!model.output(now, b"plain text").working);
}

#[test]
fn patterns_split_across_chunks_are_found() {
    check(&[b"Thin", b"king"], "working substantial");
    check(
        &[b"\xe2\x9c\xbb Worked fo", b"r 3s"],
        "completion substantial",
    );
    check(&[b"\x1b[3", b"2mok"], "");
}

#[test]
fn hostile_chunks_do_not_panic() {
    // ER-001: NUL, invalid UTF-8, replacement characters, huge chunks.
    let mut model = BasicModel::new(40, 120);
    let now = Instant::now();
    for chunk in [
        b"\x00\x01\x02".to_vec(),
        b"\xff\xfe\xfd".to_vec(),
        "\u{FFFD}".as_bytes().to_vec(),
        b"\x1b]0;unterminated title".to_vec(),
        vec![b'a'; 100_000],
        vec![b'\n'; 500 * 1024],
    ] {
        model.output(now, &chunk);
    }
    let _ = model.verdict(now);
    assert!(model.context(usize::MAX).len() <= 256 * 1024);
}

#[track_caller]
fn verdict(screen: &str) -> (SessionState, Option<BlockedKind>) {
    let mut model = BasicModel::new(40, 120);
    let t0 = Instant::now();
    model.output(t0, screen.replace('\n', "\r\n").as_bytes());
    let v = model.verdict(t0 + std::time::Duration::from_secs(5));
    (v.state, v.blocked)
}

#[test]
fn screens_are_classified() {
    assert_eq!(
        verdict("✻ Worked for 3s\n────\n❯ \n────\n  ? for shortcuts"),
        (SessionState::Idle, None)
    );
    assert_eq!(
        verdict("✢ Thinking… (3s · esc to interrupt)\n────\n❯ \n────"),
        (SessionState::Working, None)
    );
    assert_eq!(
        verdict(
            "Ready to code? Here is the plan.\n Would you like to proceed?\n ❯ 1. Yes, and auto-accept edits\n   2. Yes, and manually approve edits\n   3. No, keep planning"
        ),
        (SessionState::Blocked, Some(BlockedKind::Plan))
    );
    assert_eq!(
        verdict(
            " Bash command\n   rm -rf build\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and don't ask again\n   3. No, and tell Claude what to do differently (esc)"
        ),
        (SessionState::Blocked, Some(BlockedKind::Permission))
    );
}

#[test]
fn context_is_stripped_and_resettable() {
    let mut model = BasicModel::new(40, 120);
    let now = Instant::now();
    model.output(now, b"\x1b[1mhello\x1b[0m world");
    assert_eq!(model.context(5), "world");
    model.reset_context();
    assert_eq!(model.context(100), "");
}

#[test]
fn completion_variants() {
    check(&[b"WORKED FOR 10s"], "completion substantial");
    check(&[b"Worked  for\n3m"], "completion substantial");
    check(&["✻ Crunched for 3s".as_bytes()], "completion substantial");
}
