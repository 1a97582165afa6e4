//! Helpers shared by the integration tests: locating `../shared`, building detectors.

use std::io::Write as _;
use std::path::PathBuf;

/// The shared directory (`<CARGO_MANIFEST_DIR>/../../../shared`, or `HYOKA_SHARED_DIR`), or
/// `None` with a message on stderr when it is absent (a fresh clone has no `../shared`).
pub(crate) fn shared_dir(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("HYOKA_SHARED_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    if dir.is_dir() {
        Some(dir)
    } else {
        // Straight to stderr, past the test harness's capture, so the skip shows in the output.
        let _ = writeln!(
            std::io::stderr(),
            "skipping {what}: shared directory {} not found (set HYOKA_SHARED_DIR)",
            dir.display()
        );
        None
    }
}

/// One base instant per test; every other time derives from it.
pub(crate) fn base_instant() -> std::time::Instant {
    #[expect(clippy::disallowed_methods, reason = "tests need one base instant")]
    std::time::Instant::now()
}

/// Fragments of Claude-Code-shaped output for generated streams.
pub(crate) const FRAGMENTS: &[&str] = &[
    "plain text line with some words\r\n",
    "\x1b[38;5;174mcolour\x1b[39m \x1b[1mbold\x1b[22m \x1b[2mdim\x1b[22m\x1b[0m\r\n",
    "\r\x1b[2K\x1b[38;5;174m⠋\x1b[39m Thinking… \x1b[2m(12s · ↑ 1.2k tokens · esc to interrupt)\x1b[22m",
    "\r\x1b[2K\x1b[38;5;174m✻\x1b[39m Brewing… \x1b[2m(3s · ↓ 77 tokens · esc to interrupt)\x1b[22m",
    "\r\n\x1b[2m✻ Worked for 1m 2s\x1b[22m\r\n",
    "\r\n\x1b[2mCrunched for 5s\x1b[22m\r\n",
    "\r\n╭──────────╮\r\n│ ❯        │\r\n╰──────────╯\r\n  \x1b[2m? for shortcuts\x1b[22m",
    "\x1b[?2026h\x1b[2K\x1b[1A\x1b[2K\x1b[G╭────╮\x1b[?25l\x1b[?2026l",
    "\x1b]0;⠙ Claude Code\x07",
    "⏺ Read(src/main.rs)\r\n  ⎿  Read 120 lines\r\n",
    "  \x1b[2m12.5k tokens\x1b[22m\r\n",
    "\r\nWould you like to proceed?\r\n\r\n\x1b[36m❯ 1. Yes, and auto-accept edits\x1b[39m\r\n  2. No, keep planning\r\n",
    "✻ Worked for 5s before retrying\r\n",
    "中文 üñíçødé text\r\n",
];
