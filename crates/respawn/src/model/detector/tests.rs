//! The real detector through the model seam: the per-chunk signals the machine relies on,
//! including the detection scenarios PD-001 … PD-008 of `docs/respawn.md` §5a and the
//! blind spot of §5d 106, and the verdicts that gate typing.
#![allow(
    clippy::disallowed_methods,
    reason = "tests need an origin for virtual time"
)]

use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    BlockedKind, ChunkSignals, Detector, DetectorConfig, Profile, SessionState,
};

use super::DetectorModel;
use crate::model::SessionModel;

fn model() -> DetectorModel {
    let profile = Profile::builtin("claude-code").unwrap();
    DetectorModel::new(Detector::new(profile, DetectorConfig::default()))
}

fn signals(chunks: &[&[u8]]) -> ChunkSignals {
    let mut model = model();
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
    ] {
        if on {
            got.push(name);
        }
    }
    assert_eq!(got.join(" "), expected, "{chunks:?}");
}

#[test]
fn pd_001_waiting_for_is_not_a_completion() {
    check(&[b"Waiting for 5s before retry\r\n"], "");
}

#[test]
fn pd_002_pd_008_words_and_glyphs_in_prose_are_not_working() {
    // Codeman counts both as working (its accepted false positives); the detector only
    // believes a working verb or spinner on a status line.
    check(&[b"The 'Thinking' file was created\r\n"], "");
    check(
        &["The sequence is: \u{280b} \u{2819} \u{2839}\r\n".as_bytes()],
        "",
    );
}

#[test]
fn pd_003_prompts() {
    check(&["\u{276f} \r\n".as_bytes()], "prompt");
    check(&["\u{23f5} \r\n".as_bytes()], "prompt");
    check(&[b"> \r\n"], "");
    check(&["\u{ff1e} \r\n".as_bytes()], "");
}

#[test]
fn pd_004_sgr_inside_the_completion() {
    // Codeman misses both (no stripping before its regex).
    check(&[b"Wor\x1b[32mked\x1b[0m for 2m 46s\r\n"], "completion");
    check(&[b"\x1b[2mWorked for 5s\r\n"], "completion");
}

#[test]
fn pd_005_pd_006_tokens() {
    assert_eq!(signals(&[b"999.9k tokens\r\n"]).tokens, Some(999_900));
    assert_eq!(signals(&[b"1.0M tokens\r\n"]).tokens, Some(1_000_000));
    for none in [&b"tokens\r\n"[..], b" tokens\r\n", b".k tokens\r\n"] {
        assert_eq!(signals(&[none]).tokens, None, "{none:?}");
    }
}

#[test]
fn pd_007_two_completions_in_one_chunk() {
    check(&[b"Worked for 1s... Worked for 2m 30s\r\n"], "completion");
}

#[test]
fn d106_no_blind_spot_early_in_a_large_chunk() {
    // Codeman's 300-unit window misses a working line followed by more output in the same
    // chunk; the detector scans every line of the chunk.
    let mut chunk = "\u{2722} Thinking\u{2026} (3s \u{b7} esc to interrupt)\r\n"
        .as_bytes()
        .to_vec();
    for _ in 0..100 {
        chunk.extend_from_slice(b"a line of ordinary tool output that goes on\r\n");
    }
    check(&[&chunk], "working");
    // And working is not sticky: the next chunk of plain text is not working.
    let mut model = model();
    let now = Instant::now();
    assert!(model.output(now, &chunk).working);
    assert!(!model.output(now, b"plain text\r\n").working);
}

#[track_caller]
fn verdict_after(screen: &str, after: Duration) -> (SessionState, Option<BlockedKind>) {
    let mut model = model();
    let t0 = Instant::now();
    model.output(t0, screen.replace('\n', "\r\n").as_bytes());
    let v = model.verdict(t0 + after);
    (v.state, v.blocked)
}

#[test]
fn the_simulated_agents_screens_are_classified() {
    let rule = "\u{2500}".repeat(40);
    let prompt = format!("{rule}\n\u{276f} \n{rule}\n  ? for shortcuts");
    let busy = format!(
        "> task\n\n\u{2722} Thinking\u{2026} (1s \u{b7} \u{2193} 37 tokens \u{b7} esc to interrupt)\n\n{prompt}"
    );
    let done = format!("> task\n\u{23fa} Done.\n\n\u{273b} Worked for 0m 1s\n\n{prompt}");
    let second = Duration::from_secs(1);
    assert_eq!(verdict_after(&busy, second).0, SessionState::Working);
    assert_eq!(
        verdict_after(&done, Duration::from_secs(3)),
        (SessionState::Idle, None)
    );
    let plan = " Would you like to proceed?\n\n \u{276f} 1. Yes, and auto-accept edits\n   2. Yes, and manually approve edits\n   3. No, keep planning";
    assert_eq!(
        verdict_after(plan, second),
        (SessionState::Blocked, Some(BlockedKind::Plan))
    );
    let permission = " Bash command\n   rm -rf build\n\n Do you want to proceed?\n \u{276f} 1. Yes\n   2. Yes, and don't ask again for rm commands in this project\n   3. No, and tell Claude what to do differently (esc)";
    assert_eq!(
        verdict_after(permission, second),
        (SessionState::Blocked, Some(BlockedKind::Permission))
    );
}

#[test]
fn the_context_is_limited_to_output_since_the_last_reset() {
    let mut model = model();
    let now = Instant::now();
    model.output(now, b"old output\r\n");
    model.reset_context();
    assert_eq!(model.context(1_000), "");
    model.output(now, b"\x1b[1mnew\x1b[0m\r\n");
    let context = model.context(1_000);
    assert!(context.contains("new") && !context.contains("old") && !context.contains('\x1b'));
}

#[test]
fn er_001_bm_002_hostile_and_heavy_output() {
    // ER-001: empty, binary, NUL-containing, 100,000-character and 500 KiB chunks go
    // through the model and the machine without a panic, and the machine keeps running.
    // BM-002: after 10 MiB (1 MB/s for 10 s), state stays bounded and detection still works.
    use crate::machine::{Input, Machine};
    use crate::{RespawnConfig, State};
    let mut model = model();
    let mut machine = Machine::new(RespawnConfig::default());
    let t0 = Instant::now();
    machine.handle(Input::Start, t0);
    let mut chunks: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\x00\x01\x02\xef\xbf\xbd".to_vec(),
        b"a\x00b\x00c".to_vec(),
        b"\xff\xfe\xfd\x1b]0;unterminated".to_vec(),
        vec![b'x'; 100_000],
        vec![b'y'; 500 * 1024],
    ];
    chunks.extend((0..10).map(|i| {
        format!("line {i} of a flood\r\n")
            .repeat(50_000)
            .into_bytes()
    }));
    for (i, chunk) in chunks.iter().enumerate() {
        let now = t0 + Duration::from_millis(u64::try_from(i).unwrap() * 100);
        let signals = model.output(now, chunk);
        machine.handle(Input::Output(signals), now);
    }
    assert!(machine.is_running());
    assert!(model.context(usize::MAX).len() <= 64 * 1024);
    let now = t0 + Duration::from_secs(5);
    let signals = model.output(now, "\u{273b} Worked for 1m 2s\r\n".as_bytes());
    assert!(signals.completion);
    machine.handle(Input::Output(signals), now);
    assert_eq!(machine.state(), State::ConfirmingIdle);
}
