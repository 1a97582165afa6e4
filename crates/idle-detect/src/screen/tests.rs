//! Unit tests for `screen`: snapshots and the lazily fed screen model.

use super::{Screen, ScreenModel};
use crate::ring::Ring;

#[track_caller]
fn check(input: &[u8], expected: &[&str]) {
    assert_eq!(Screen::from_bytes(input).lines(), expected);
}

#[test]
fn plain_snapshots_keep_their_lines() {
    check(b"one  \ntwo\n\n\n", &["one", "two"]);
    check("⏺ Done\r\n❯ \r\n".as_bytes(), &["⏺ Done", "❯"]);
}

#[test]
fn ansi_snapshots_are_rendered() {
    check(b"\x1b[1mbold\x1b[0m\nnext", &["bold", "next"]);
    // A spinner line redrawn in place leaves only its last frame.
    check(
        "⠋ Thinking\r\x1b[2K⠙ Thinking\r\x1b[2K❯ \n".as_bytes(),
        &["❯"],
    );
    // Ink's redraw: erase the frame, move up, draw the new one.
    check(
        "✽ Tempering…\n\x1b[1A\x1b[2K✻ Worked for 3s\n❯ ".as_bytes(),
        &["✻ Worked for 3s", "❯"],
    );
}

#[test]
fn the_title_is_kept() {
    let s = Screen::from_bytes("\x1b]0;✳ Claude Code\x07❯ ".as_bytes());
    assert_eq!(s.title(), "✳ Claude Code");
}

#[test]
fn the_model_parses_only_when_synced_and_restarts_after_overflow() {
    let mut raw = Ring::new(64);
    let mut m = ScreenModel::new(5, 20);
    raw.push(b"hello\r\n");
    m.mark_stale();
    assert!(m.is_stale());
    assert_eq!(m.sync(&raw, "").lines(), ["hello"]);
    assert!(!m.is_stale());
    // More than the ring holds arrives: the parser restarts from what is left.
    for i in 0..20 {
        raw.push(format!("line {i}\r\n").as_bytes());
    }
    m.mark_stale();
    let lines = m.sync(&raw, "t").lines().to_vec();
    assert_eq!(lines.last().map(String::as_str), Some("line 19"));
    assert!(!lines.iter().any(|l| l == "hello"));
    assert_eq!(m.sync(&raw, "t").title(), "t");
}
