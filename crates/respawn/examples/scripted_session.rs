//! Drives one full respawn cycle against a scripted agent on an in-memory terminal, with a
//! mock AI idle checker, and prints every event and everything typed, with its virtual time.
//!
//! `cargo run -p hyoka-respawn --features mock --example scripted_session`
//!
//! The agent is a few lines of script behind [`FakeTerminal`]: it draws Claude Code's
//! completion message and prompt, and answers each Enter with a second of work. The idle
//! checker is a `mockall` mock (`hyoka-idle-detect`'s `mock` feature) that answers IDLE and
//! records the context it was shown. Tokio's clock is paused, so the cycle (AI check, update
//! prompt, `/clear`, `/init`) takes minutes of virtual time and runs instantly. Swap
//! [`FakeTerminal`] for `PtyTerminal::spawn` and the mock for `CommandChecker` and the same
//! driver controls a real session.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    CheckReply, Detector, DetectorConfig, IdleAnswer, MockIdleChecker, Profile,
};
use hyoka_respawn::{
    AiCheckers, DetectorModel, Driver, DriverInputs, DriverOptions, Event, FakeHandle,
    FakeTerminal, Machine, Observer, RespawnConfig, Written,
};

/// A Claude Code screen with `top` above the input box.
fn screen(top: &str) -> Vec<u8> {
    format!("\x1b[2J\x1b[H{top}\r\n────────\r\n❯ \r\n────────\r\n").into_bytes()
}

/// The scripted agent: idle at start; `/clear` redraws an empty prompt; every other Enter
/// gets a second of work and a completion message.
async fn agent(handle: FakeHandle) {
    handle.output(screen("✻ Worked for 0m 12s"));
    let (mut seen, mut last_text) = (0, String::new());
    loop {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let written = handle.written();
        for w in &written[seen..] {
            match w {
                Written::Text(text) => last_text.clone_from(text),
                Written::Enter if last_text == "/clear" => handle.output(screen("")),
                Written::Enter => {
                    handle.output(screen("✢ Thinking… (1s · esc to interrupt)"));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    handle.output(screen("✻ Worked for 0m 1s"));
                }
                _ => {}
            }
        }
        seen = written.len();
    }
}

/// Prints each event with its time since the start.
struct Print(Instant);

impl Observer for Print {
    #[expect(clippy::print_stdout, reason = "an example prints what happens")]
    fn event(&mut self, at: Instant, event: &Event) {
        let json = serde_json::to_string(event).unwrap_or_else(|e| e.to_string());
        println!("{:>8.3} s  {json}", at.duration_since(self.0).as_secs_f64());
    }
}

#[expect(clippy::print_stdout, reason = "an example prints what happens")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    runtime.block_on(async {
        let mut config = RespawnConfig {
            max_cycles: Some(1),
            ..RespawnConfig::default()
        };
        // Silence after the completion message starts an AI idle check; its IDLE starts the
        // cycle. (No plan check: this agent never shows a plan menu.)
        config.idle_check.enabled = true;
        config.plan_check.enabled = false;
        let mut checker = MockIdleChecker::new();
        checker.expect_check_idle().times(1).returning(|context| {
            println!(
                "  idle checker asked about {} chars of output",
                context.len()
            );
            Ok(CheckReply {
                verdict: IdleAnswer::Idle,
                reasoning: "a completion message above an empty prompt".to_owned(),
            })
        });
        let checkers = AiCheckers {
            idle: Some(Arc::new(checker)),
            plan: None,
        };

        let (terminal, handle) = FakeTerminal::new(None);
        let profile = Profile::builtin("claude-code")?;
        let model = DetectorModel::new(Detector::new(profile, DetectorConfig::default()));
        let start = tokio::time::Instant::now().into_std();
        let driver = Driver::new(
            Machine::new(config),
            terminal,
            model,
            Print(start),
            checkers,
            DriverOptions::default(),
        );
        let script = tokio::spawn(agent(handle.clone()));
        let report = driver
            .run(
                DriverInputs::default(),
                tokio::time::sleep(Duration::from_mins(10)),
            )
            .await?;
        script.abort();

        println!("\ntyped into the session:");
        for w in handle.written() {
            println!("  {w:?}");
        }
        println!("\nended: {:?} after {} cycle(s)", report.end, report.cycles);
        Ok(())
    })
}
