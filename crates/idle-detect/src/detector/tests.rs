//! Unit tests for `detector`: each layer and their combinations on exact virtual time.

use std::time::{Duration, Instant};

use super::{AiVerdict, Detector, DetectorConfig, ProcessActivity};
use crate::profile::Profile;
use crate::signals::{BlockedKind, HookEvent, SessionState};

const IDLE_SCREEN: &str =
    "⏺ Done.\r\n\r\n✻ Worked for 2s\r\n\r\n───────\r\n❯ \r\n───────\r\n  ? for shortcuts";
const WORKING_SCREEN: &str =
    "✻ Cultivating… (12s · ↓ 1.2k tokens)\r\n───────\r\n❯ \r\n───────\r\n  esc to interrupt";
const PERMISSION_SCREEN: &str = " Bash command\r\n   rm -rf build\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No\r\n\r\n Esc to cancel";

struct Clock(Instant);

impl Clock {
    fn new() -> Self {
        #[expect(
            clippy::disallowed_methods,
            reason = "tests need one base instant; all times derive from it"
        )]
        Self(Instant::now())
    }
    fn at(&self, ms: u64) -> Instant {
        self.0 + Duration::from_millis(ms)
    }
}

fn detector(profile: &str) -> Detector {
    Detector::new(
        Profile::builtin(profile).expect("profile"),
        DetectorConfig::default(),
    )
}

/// Clears the screen and draws `screen` at `ms`.
fn draw(d: &mut Detector, c: &Clock, ms: u64, screen: &str) {
    d.output(c.at(ms), format!("\x1b[2J\x1b[H{screen}").as_bytes());
}

#[track_caller]
fn check(
    d: &mut Detector,
    c: &Clock,
    ms: u64,
    state: SessionState,
    blocked: Option<BlockedKind>,
    first_signal: &str,
) {
    let v = d.verdict(c.at(ms)).clone();
    assert_eq!((v.state, v.blocked), (state, blocked), "at {ms} ms: {v:#?}");
    assert_eq!(
        v.evidence.first().map(|e| e.signal),
        Some(first_signal),
        "at {ms} ms: {v:#?}"
    );
}

#[test]
fn an_idle_screen_becomes_idle_after_the_settle_period() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, IDLE_SCREEN);
    check(&mut d, &c, 0, SessionState::Working, None, "screen_rule");
    check(&mut d, &c, 1499, SessionState::Working, None, "screen_rule");
    check(&mut d, &c, 1500, SessionState::Idle, None, "screen_rule");
    let v = d.verdict(c.at(1500)).clone();
    assert!(v.evidence.iter().any(|e| e.signal == "completion"));
    assert_eq!(v.evidence[0].rule, "claude-code/prompt-box");
}

#[test]
fn a_spinner_on_screen_stays_working_however_quiet() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, WORKING_SCREEN);
    check(&mut d, &c, 0, SessionState::Working, None, "screen_rule");
    check(
        &mut d,
        &c,
        600_000,
        SessionState::Working,
        None,
        "screen_rule",
    );
}

#[test]
fn a_redraw_removes_stale_working_text() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, WORKING_SCREEN);
    check(&mut d, &c, 10, SessionState::Working, None, "screen_rule");
    draw(&mut d, &c, 100, IDLE_SCREEN);
    check(&mut d, &c, 1600, SessionState::Idle, None, "screen_rule");
}

#[test]
fn a_permission_prompt_is_blocked_at_once_and_never_idle() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, PERMISSION_SCREEN);
    check(
        &mut d,
        &c,
        0,
        SessionState::Blocked,
        Some(BlockedKind::Permission),
        "screen_rule",
    );
    d.hook(c.at(10), HookEvent::Stop);
    check(
        &mut d,
        &c,
        3_600_000,
        SessionState::Blocked,
        Some(BlockedKind::Permission),
        "screen_rule",
    );
}

// See: issue 24 (structured signals fused with the screen: where they disagree, the
// verdict is not idle).
#[test]
fn a_stop_hook_is_idle_only_where_the_screen_shows_no_work() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, WORKING_SCREEN);
    d.hook(c.at(100), HookEvent::Stop);
    // The screen still shows the spinner: the two disagree.
    check(&mut d, &c, 100, SessionState::Working, None, "screen_rule");
    // Once the screen shows the turn's end, the hook decides at once (no settle period).
    draw(&mut d, &c, 150, IDLE_SCREEN);
    check(&mut d, &c, 160, SessionState::Idle, None, "hook");
    // A redraw without working indicators does not undo it (Codeman aborts on any output).
    d.output(c.at(170), b"\x1b[?25h");
    check(&mut d, &c, 180, SessionState::Idle, None, "hook");
    // A new turn's spinner does.
    d.output(
        c.at(200),
        "\r⠋ Thinking… (1s · esc to interrupt)".as_bytes(),
    );
    check(&mut d, &c, 200, SessionState::Working, None, "screen_rule");
}

// See: issue 24 (a structured signal fused with the screen: a turn Claude Code says it
// started is not idle until it says it stopped, whatever the screen shows).
#[test]
fn a_prompt_submit_hook_keeps_an_idle_screen_working_until_the_stop_hook() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, IDLE_SCREEN);
    check(&mut d, &c, 2_000, SessionState::Idle, None, "screen_rule");
    d.hook(c.at(2_100), HookEvent::PromptSubmitted);
    // The screen still shows the last turn's end, settled: the hook says otherwise.
    check(&mut d, &c, 2_100, SessionState::Working, None, "hook");
    check(&mut d, &c, 60_000, SessionState::Working, None, "hook");
    d.hook(c.at(61_000), HookEvent::Stop);
    check(&mut d, &c, 61_000, SessionState::Idle, None, "hook");
    // A turn a person interrupts runs no Stop: the hook holds for `prompt_hook_ttl`, or
    // until the person types.
    d.hook(c.at(70_000), HookEvent::PromptSubmitted);
    check(
        &mut d,
        &c,
        70_000 + 299_999,
        SessionState::Working,
        None,
        "hook",
    );
    check(
        &mut d,
        &c,
        70_000 + 300_000,
        SessionState::Idle,
        None,
        "screen_rule",
    );
    d.hook(c.at(400_000), HookEvent::PromptSubmitted);
    d.user_input(c.at(401_000));
    check(&mut d, &c, 403_000, SessionState::Idle, None, "screen_rule");
    // A dialog still beats it.
    d.hook(c.at(404_000), HookEvent::PromptSubmitted);
    draw(&mut d, &c, 404_100, PERMISSION_SCREEN);
    check(
        &mut d,
        &c,
        406_000,
        SessionState::Blocked,
        Some(BlockedKind::Permission),
        "screen_rule",
    );
}

#[test]
fn permission_and_elicitation_hooks_block_until_answered() {
    let c = Clock::new();
    let mut d = detector("generic");
    d.hook(c.at(0), HookEvent::PermissionPrompt);
    check(
        &mut d,
        &c,
        0,
        SessionState::Blocked,
        Some(BlockedKind::Permission),
        "hook",
    );
    d.user_input(c.at(500));
    check(&mut d, &c, 500, SessionState::Unknown, None, "screen_rule");
    d.hook(c.at(600), HookEvent::ElicitationDialog);
    check(
        &mut d,
        &c,
        600,
        SessionState::Blocked,
        Some(BlockedKind::Question),
        "hook",
    );
    d.output(c.at(700), "⠋ Working… (esc to interrupt)\r\n".as_bytes());
    check(&mut d, &c, 700, SessionState::Working, None, "screen_rule");
}

// See: issue 24 (a second tmux client of another size attached and left: the model of the
// screen no longer matched the pane).
#[test]
fn after_a_resize_nothing_is_idle_until_the_program_redraws() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, IDLE_SCREEN);
    check(&mut d, &c, 2_000, SessionState::Idle, None, "screen_rule");
    // The same size changes nothing.
    d.resize(40, 120);
    check(&mut d, &c, 2_000, SessionState::Idle, None, "screen_rule");
    d.resize(24, 80);
    assert_eq!(d.size(), (24, 80));
    check(&mut d, &c, 2_100, SessionState::Unknown, None, "screen");
    check(&mut d, &c, 60_000, SessionState::Unknown, None, "screen");
    // A dialog found on the stale screen still blocks.
    draw(&mut d, &c, 60_000, PERMISSION_SCREEN);
    d.resize(40, 120);
    check(
        &mut d,
        &c,
        60_100,
        SessionState::Blocked,
        Some(BlockedKind::Permission),
        "screen_rule",
    );
    // The redraw, then the settle period as after any output.
    draw(&mut d, &c, 61_000, IDLE_SCREEN);
    check(
        &mut d,
        &c,
        61_100,
        SessionState::Working,
        None,
        "screen_rule",
    );
    check(&mut d, &c, 62_600, SessionState::Idle, None, "screen_rule");
}

#[test]
fn output_before_a_resize_is_drawn_at_the_old_size() {
    let c = Clock::new();
    let mut d = detector("generic");
    // 100 characters on one row of 120 columns; at 80 columns it would wrap.
    let long = "x".repeat(100);
    d.output(c.at(0), format!("\x1b[2J\x1b[H{long}\r\nnext").as_bytes());
    d.resize(24, 80);
    let lines = d.screen().lines().to_vec();
    assert_eq!(lines[1], "next", "{lines:?}");
}

#[test]
fn an_idle_prompt_hook_is_idle_immediately() {
    let c = Clock::new();
    let mut d = detector("generic");
    d.output(c.at(0), b"building...\r\n");
    d.hook(c.at(5), HookEvent::IdlePrompt);
    check(&mut d, &c, 5, SessionState::Idle, None, "hook");
}

#[test]
fn a_busy_process_tree_keeps_an_idle_screen_working() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, IDLE_SCREEN);
    let busy = ProcessActivity {
        cpu_ticks: 80,
        interval: Duration::from_secs(1),
        busy_children: 0,
    };
    d.process_activity(c.at(2000), busy);
    check(
        &mut d,
        &c,
        2000,
        SessionState::Working,
        None,
        "process_activity",
    );
    // The sample expires after 10 s without a new one.
    check(&mut d, &c, 12_000, SessionState::Idle, None, "screen_rule");
    let children = ProcessActivity {
        cpu_ticks: 0,
        interval: Duration::from_secs(1),
        busy_children: 1,
    };
    d.process_activity(c.at(13_000), children);
    check(
        &mut d,
        &c,
        13_000,
        SessionState::Working,
        None,
        "process_activity",
    );
    let quiet = ProcessActivity {
        cpu_ticks: 2,
        interval: Duration::from_secs(1),
        busy_children: 0,
    };
    d.process_activity(c.at(14_000), quiet);
    check(&mut d, &c, 14_000, SessionState::Idle, None, "screen_rule");
}

#[test]
fn ai_verdicts_decide_unknown_screens_until_output_makes_them_stale() {
    let c = Clock::new();
    let mut d = detector("generic");
    d.output(c.at(0), b"some output that no rule knows\r\n");
    check(&mut d, &c, 5000, SessionState::Unknown, None, "screen_rule");
    d.ai_verdict(c.at(5000), AiVerdict::Idle);
    check(&mut d, &c, 5000, SessionState::Idle, None, "ai_verdict");
    d.output(c.at(6000), b"more output\r\n");
    check(&mut d, &c, 6000, SessionState::Working, None, "silence");
    check(&mut d, &c, 7500, SessionState::Unknown, None, "screen_rule");
    d.ai_verdict(c.at(8000), AiVerdict::PlanMode);
    check(
        &mut d,
        &c,
        8000,
        SessionState::Blocked,
        Some(BlockedKind::Plan),
        "ai_verdict",
    );
    d.ai_verdict(c.at(9000), AiVerdict::Working);
    check(&mut d, &c, 9000, SessionState::Working, None, "ai_verdict");
}

#[test]
fn a_completion_and_silence_make_an_unrecognised_screen_idle() {
    let c = Clock::new();
    let mut d = detector("generic");
    d.output(c.at(0), "\r\n\x1b[2m✻ Worked for 5s\x1b[22m\r\n".as_bytes());
    check(
        &mut d,
        &c,
        9_999,
        SessionState::Unknown,
        None,
        "screen_rule",
    );
    check(&mut d, &c, 10_000, SessionState::Idle, None, "completion");
}

#[test]
fn tick_reports_only_changes_and_deadlines_are_exact() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    draw(&mut d, &c, 0, IDLE_SCREEN);
    assert_eq!(
        d.tick(c.at(0)).map(|v| v.state),
        Some(SessionState::Working)
    );
    assert_eq!(d.tick(c.at(100)).map(|v| v.state), None);
    assert_eq!(d.next_deadline(c.at(100)), Some(c.at(1500)));
    assert_eq!(
        d.tick(c.at(1500)).map(|v| v.state),
        Some(SessionState::Idle)
    );
    assert_eq!(d.last_verdict().state, SessionState::Idle);
}

#[test]
fn state_stays_bounded_whatever_the_stream_length() {
    let c = Clock::new();
    let mut d = detector("claude-code");
    let line = "x".repeat(1000) + "\r\n";
    for i in 0..10_000 {
        d.output(c.at(i), line.as_bytes());
    }
    let size = d.state_size();
    assert!(size.bounded_bytes <= 64 * 1024, "{size:?}");
    // 1000-character lines wrap over 9 rows of 120 columns; wrapped rows read as one line.
    let lines = d.screen().lines().to_vec();
    assert!(!lines.is_empty() && lines.len() <= 40);
    assert!(
        lines.iter().skip(1).all(|l| l.len() == 1000),
        "{:?}",
        lines.iter().map(String::len).collect::<Vec<_>>()
    );
    assert!(d.stripped_tail(100).chars().count() <= 100);
}
