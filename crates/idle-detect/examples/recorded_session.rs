//! Replays a recorded agent session in virtual time and prints every change of verdict with
//! its evidence.
//!
//! `cargo run -p hyoka-idle-detect --example recorded_session -- [FILE.cast] [PROFILE]`
//!
//! Without a file it replays a built-in Claude Code session: the agent works, finishes, is
//! asked for more, and stops at a permission question. The whole recording takes a few
//! seconds of virtual time and runs instantly: nothing reads the clock.

use std::time::Instant;

use hyoka_idle_detect::{DetectorConfig, Profile, render_explain, replay_cast};

/// A short asciicast v2 recording of a Claude Code session.
const SESSION: &str = r#"{"version": 2, "width": 80, "height": 24}
[0.2, "o", "\u001b[2J\u001b[H✻ Cultivating… (1s · ↓ 12 tokens · esc to interrupt)\r\n────────\r\n❯ \r\n────────\r\n"]
[1.8, "o", "\u001b[2J\u001b[H⏺ Read(src/lib.rs)\r\n✻ Cultivating… (3s · ↓ 240 tokens · esc to interrupt)\r\n────────\r\n❯ \r\n────────\r\n"]
[3.0, "o", "\u001b[2J\u001b[H⏺ The parser now rejects empty input.\r\n✻ Worked for 3s\r\n────────\r\n❯ \r\n────────\r\n"]
[7.0, "i", "now run the tests\r"]
[7.2, "o", "\u001b[2J\u001b[H✻ Pondering… (1s · ↓ 30 tokens · esc to interrupt)\r\n────────\r\n❯ \r\n────────\r\n"]
[8.5, "o", "\u001b[2J\u001b[H⏺ Bash(cargo test)\r\n\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No, and tell Claude what to do differently\r\n\r\n Esc to cancel\r\n"]
"#;

#[expect(clippy::print_stdout, reason = "an example prints its result")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let cast = match args.next() {
        Some(path) => std::fs::read_to_string(path)?,
        None => SESSION.to_owned(),
    };
    let profile = Profile::builtin(&args.next().unwrap_or_else(|| "claude-code".to_owned()))?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the instant that stands for time zero; the replay never reads the clock"
    )]
    let start = Instant::now();
    let changes = replay_cast(&profile, &DetectorConfig::default(), &cast, start)?;
    for change in &changes {
        println!("at {:>6} ms", change.at_ms);
        for line in render_explain(&change.verdict).lines() {
            println!("    {line}");
        }
    }
    Ok(())
}
