//! `docs/respawn.md` §5c, Codeman's executable unit tests (85–104), against the
//! machine on exact virtual time. The text classification parts of 90 and 96 are the
//! detector's (see `model`), and 105 (parsing the checker's answer) is in `checks`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyoka_idle_detect::{HookEvent, IdleAnswer, SessionState};
use hyoka_respawn::{
    AutoAcceptSkip, BlockReason, Event, FnGate, Input, Keys, Machine, RespawnConfig, State,
    TimerName,
};

use crate::support::{Sim, ms};

fn fast() -> RespawnConfig {
    RespawnConfig::fast_test()
}

#[test]
fn s5c_085_a_new_controller() {
    let m = Machine::new(RespawnConfig::default());
    assert_eq!(m.state(), State::Stopped);
    assert!(!m.is_running());
    assert_eq!(m.cycles(), 0);
    assert_eq!(
        m.config().update_prompt,
        "write a brief progress summary to CLAUDE.md noting what you accomplished, then continue working."
    );
}

#[test]
fn s5c_086_start() {
    let sim = Sim::started(fast());
    let events = sim.events();
    assert_eq!(
        events[0],
        Event::StateChanged {
            from: State::Stopped,
            to: State::Watching
        }
    );
    assert!(events.contains(&Event::Started));
}

#[test]
fn s5c_087_completion_then_silence_starts_a_cycle() {
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.advance(200);
    assert!(sim.has(|e| *e == Event::CycleStarted { cycle: 1 }));
    let typed = sim.typed();
    assert!(matches!(&typed[0], Keys::Text(t) if t.contains("write a brief progress summary")));
    assert_eq!(typed[1], Keys::Enter, "Enter is a separate write");
}

#[test]
fn s5c_088_working_cancels_the_confirmation() {
    let mut sim = Sim::started(RespawnConfig {
        completion_confirm: ms(100),
        ..fast()
    });
    sim.completion();
    sim.advance(20);
    sim.working();
    assert_eq!(sim.state(), State::Watching);
    assert!(sim.m.status(sim.now).working_detected);
    sim.advance(100);
    assert_eq!(sim.cycles_started(), 0);
    assert!(sim.has(|e| matches!(
        e,
        Event::TimerCancelled {
            timer: TimerName::CompletionConfirm,
            ..
        }
    )));
}

#[test]
fn s5c_089_prompts_are_detected() {
    let mut sim = Sim::started(fast());
    sim.prompt();
    assert!(sim.m.status(sim.now).prompt_detected);
}

#[test]
fn s5c_090_working_chunks_set_working() {
    let mut sim = Sim::started(fast());
    sim.working();
    assert!(sim.m.status(sim.now).working_detected);
}

#[test]
fn s5c_091_auto_accept_with_ai_plan_off() {
    let mut sim = Sim::started(fast());
    sim.plan_menu();
    sim.advance(200);
    assert!(sim.has(|e| *e == Event::AutoAcceptSent { dry_run: false }));
    assert_eq!(sim.typed(), [Keys::Enter]);
}

#[test]
fn s5c_092_auto_accept_is_blocked() {
    // By a completion message (cc=200 > delay 100).
    let mut sim = Sim::started(RespawnConfig {
        completion_confirm: ms(200),
        ..fast()
    });
    sim.plan_menu();
    sim.completion();
    sim.advance(150);
    assert!(sim.typed().is_empty());
    // By `auto_accept: false`.
    let mut sim = Sim::started(RespawnConfig {
        auto_accept: false,
        ..fast()
    });
    sim.plan_menu();
    sim.advance(200);
    assert!(sim.typed().is_empty());
    // With no output since start.
    let mut sim = Sim::started(fast());
    sim.verdict(
        SessionState::Blocked,
        Some(hyoka_idle_detect::BlockedKind::Plan),
    );
    sim.advance(200);
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::NoNewOutput
        }));
    assert!(sim.typed().is_empty());
    // During a cycle.
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.advance(50 + 70);
    sim.plan_menu();
    sim.advance(150);
    assert_eq!(sim.enters(), 1, "only the update's Enter");
}

#[test]
fn s5c_093_auto_accept_timer_reset() {
    let mut sim = Sim::started(RespawnConfig {
        auto_accept_delay: ms(150),
        ..fast()
    });
    sim.plan_menu();
    sim.advance(100);
    sim.text("status line redraw");
    sim.advance(100);
    assert!(sim.typed().is_empty(), "no Enter at 200");
    sim.advance(100);
    assert_eq!(sim.typed(), [Keys::Enter], "Enter by 300");
}

#[test]
fn s5c_094_one_enter_per_silence() {
    let mut sim = Sim::started(fast());
    sim.plan_menu();
    sim.advance(200);
    assert_eq!(sim.enters(), 1);
    sim.advance(200);
    assert_eq!(sim.enters(), 1);
    sim.plan_menu();
    sim.advance(200);
    assert_eq!(sim.enters(), 2);
}

#[test]
fn s5c_095_elicitation_blocks_until_working() {
    let mut sim = Sim::started(fast());
    sim.text("Which option do you prefer?");
    sim.hook(HookEvent::ElicitationDialog);
    sim.plan_menu();
    sim.advance(200);
    assert!(sim.typed().is_empty());
    sim.working();
    sim.plan_menu();
    sim.advance(200);
    assert_eq!(sim.typed(), [Keys::Enter]);
}

#[test]
fn s5c_096_plan_pre_filter() {
    let mut sim = Sim::started(fast());
    sim.text("Claude is just thinking about something...\nSome regular output here.");
    sim.advance(200);
    assert!(sim.typed().is_empty());
    sim.verdict(SessionState::Working, None);
    sim.working(); // "❯ 1. Yes\n  2. No\nThinking ⠋\n"
    sim.advance(200);
    assert!(sim.typed().is_empty());
}

#[test]
fn s5c_097_ai_plan_check_then_output() {
    let mut sim = Sim::started(RespawnConfig::fast_test_with_ai());
    sim.plan
        .answer(50, hyoka_idle_detect::PlanAnswer::PlanMode, "menu");
    sim.plan_menu();
    sim.advance(200);
    assert!(sim.when(|e| matches!(e, Event::PlanCheckStarted { .. })) <= Some(200));
    let mut sim = Sim::started(RespawnConfig::fast_test_with_ai());
    sim.plan
        .answer(50, hyoka_idle_detect::PlanAnswer::PlanMode, "menu");
    sim.plan_menu();
    sim.advance(110);
    sim.text("new output");
    sim.advance(200);
    assert!(sim.typed().is_empty());
}

#[test]
fn s5c_098_ai_idle_check_visits_ai_checking() {
    let mut config = RespawnConfig::fast_test_with_ai();
    config.plan_check.enabled = false;
    let mut sim = Sim::started(config.clone());
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.state(), State::AiChecking);
    sim.working();
    assert_eq!(sim.state(), State::Watching);

    let mut sim = Sim::started(config.clone());
    sim.completion();
    sim.advance(50);
    sim.text("substantial");
    assert_eq!(sim.state(), State::Watching);

    config.idle_check.timing.timeout = ms(100);
    let mut sim = Sim::started(config);
    sim.completion();
    sim.advance(50);
    sim.advance(100);
    assert_eq!(sim.state(), State::Watching);
    assert!(sim.has(
        |e| matches!(e, Event::IdleCheckFailed { message, .. } if message.contains("timed out"))
    ));
}

#[test]
fn s5c_099_ai_off_completion_and_no_output_paths() {
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.advance(100);
    assert_eq!(sim.cycles_started(), 1);

    let mut sim = Sim::started(RespawnConfig {
        completion_confirm: ms(100),
        no_output_timeout: ms(150),
        ..fast()
    });
    sim.text("Some text output");
    sim.advance(300);
    assert_eq!(sim.cycles_started(), 1);
    assert!(sim.when(|e| matches!(e, Event::CycleStarted { .. })) <= Some(300));
}

#[test]
fn s5c_100_ai_check_status() {
    let mut sim = Sim::started(fast());
    assert!(!sim.m.status(sim.now).idle_check_usable);
    let mut sim = Sim::started(RespawnConfig::fast_test_with_ai());
    assert!(sim.m.status(sim.now).idle_check_usable);
}

#[test]
fn s5c_101_stop_hook() {
    let mut sim = Sim::started(RespawnConfig {
        no_output_timeout: ms(60_000),
        ..fast()
    });
    sim.text("done");
    sim.hook(HookEvent::Stop);
    assert!(sim.m.status(sim.now).stop_hook_pending);
    assert!(sim.timer_armed(TimerName::HookConfirm));
    sim.advance(3_100);
    assert_eq!(
        sim.when(|e| matches!(e, Event::CycleStarted { .. })),
        Some(3_000)
    );

    let mut sim = Sim::started(RespawnConfig {
        no_output_timeout: ms(60_000),
        ..fast()
    });
    sim.text("done");
    sim.hook(HookEvent::Stop);
    sim.advance(100);
    sim.working();
    sim.advance(3_500);
    assert_eq!(sim.cycles_started(), 0);
    assert!(!sim.m.status(sim.now).stop_hook_pending);
}

#[test]
fn s5c_102_idle_prompt_and_ignored_hooks() {
    let mut sim = Sim::started(fast());
    sim.text("done");
    sim.hook(HookEvent::IdlePrompt);
    assert_eq!(
        sim.when(|e| matches!(e, Event::CycleStarted { .. })),
        Some(0)
    );
    assert_eq!(sim.state(), State::SendingUpdate);
    sim.hook(HookEvent::Stop);
    assert!(sim.has(|e| *e
        == Event::HookReceived {
            hook: HookEvent::Stop,
            accepted: false
        }));
    assert!(!sim.m.status(sim.now).stop_hook_pending);
}

#[test]
fn s5c_103_configuration_defaults() {
    // Rust durations cannot be negative or undefined; the CLI refuses negative durations
    // with exit 2. What remains of 103 is the zero fallback and the cap.
    let m = Machine::new(RespawnConfig {
        completion_confirm: ms(60_000),
        no_output_timeout: ms(30_000),
        ..RespawnConfig::default()
    });
    assert_eq!(m.config().completion_confirm, ms(30_000));
    let mut config = RespawnConfig::default();
    config.idle_check.timing.timeout = ms(0);
    config.idle_check.max_context = 0;
    config.plan_check.timing.timeout = ms(0);
    let m = Machine::new(config);
    assert_eq!(m.config().idle_check.timing.timeout, ms(90_000));
    assert_eq!(m.config().idle_check.max_context, 16_000);
    assert_eq!(m.config().plan_check.timing.timeout, ms(60_000));
}

#[test]
fn s5c_104_team_awareness_gate() {
    let config = RespawnConfig {
        completion_confirm: ms(200),
        send_clear: false,
        send_init: false,
        ..fast()
    };
    let with_teammates = |active: Arc<AtomicUsize>| {
        let mut sim = Sim::started(config.clone());
        sim.m.add_gate(Box::new(FnGate::new("teammates", move |_| {
            let n = active.load(Ordering::SeqCst);
            (n > 0).then(|| format!("{n} teammate(s) still working"))
        })));
        sim
    };
    // No watcher.
    let mut sim = Sim::started(config.clone());
    sim.completion();
    sim.advance(200);
    assert_eq!(sim.cycles_started(), 1);
    // A watcher reporting none active.
    let mut sim = with_teammates(Arc::new(AtomicUsize::new(0)));
    sim.completion();
    sim.advance(200);
    assert_eq!(sim.cycles_started(), 1);
    // Two, then three active.
    for n in [2, 3] {
        let active = Arc::new(AtomicUsize::new(n));
        let mut sim = with_teammates(Arc::clone(&active));
        sim.completion();
        sim.advance(200);
        assert_eq!(sim.cycles_started(), 0);
        assert!(sim.has(|e| *e
            == Event::Blocked {
                reason: BlockReason::Gate,
                details: format!("{n} teammate(s) still working")
            }));
        assert_eq!(sim.state(), State::Watching);
        // They finish; the next completion starts exactly one cycle.
        active.store(0, Ordering::SeqCst);
        sim.completion();
        sim.advance(200);
        assert_eq!(sim.cycles_started(), 1);
    }
    let _ = (IdleAnswer::Idle, Input::Tick);
}
