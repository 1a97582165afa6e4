//! `docs/respawn.md` §5a, AI idle checker (AIC-001 … AIC-013) and AI plan checker
//! (APC-001 … APC-011) integration, with scripted checkers on exact virtual time
//! (Codeman's `AI_ENABLED_TEST_CONFIG`: the fast config with both checks on, 500 ms
//! timeouts, 200 ms cooldowns).

use hyoka_idle_detect::{BlockedKind, HookEvent, IdleAnswer, PlanAnswer, SessionState};
use hyoka_respawn::{
    AutoAcceptSkip, CheckSkip, Checker, Event, Input, Keys, RespawnConfig, Stale, State, TimerName,
};

use crate::support::{Sim, ms};

fn ai() -> RespawnConfig {
    RespawnConfig::fast_test_with_ai()
}

/// Idle checks only (the plan checker off).
fn ai_idle() -> RespawnConfig {
    let mut config = ai();
    config.plan_check.enabled = false;
    config
}

/// Completion at t=10; completion-confirm fires at t=60 and starts the check.
fn completion_then_check(sim: &mut Sim) {
    sim.advance(10);
    sim.completion();
    sim.advance(50);
}

#[test]
fn aic_001_idle_verdict() {
    let mut sim = Sim::started(ai_idle());
    sim.idle.answer(10, IdleAnswer::Idle, "all done");
    completion_then_check(&mut sim);
    assert_eq!(sim.state(), State::AiChecking);
    sim.advance(10);
    assert!(sim.has(|e| matches!(
        e,
        Event::IdleCheckCompleted {
            verdict: IdleAnswer::Idle,
            ..
        }
    )));
    assert!(sim.has(|e| matches!(e, Event::CycleStarted { cycle: 1 })));
    assert!(!sim.has(|e| matches!(e, Event::CheckerCooldown { .. })));
}

#[test]
fn aic_002_working_verdict() {
    let mut sim = Sim::started(ai_idle());
    sim.idle.answer(10, IdleAnswer::Working, "spinner");
    completion_then_check(&mut sim);
    sim.advance(10);
    assert_eq!(sim.state(), State::Watching);
    assert!(sim.has(|e| *e
        == Event::CheckerCooldown {
            checker: Checker::Idle,
            active: true,
            duration_ms: Some(200)
        }));
    assert_eq!(sim.cycles_started(), 0);
}

#[test]
fn aic_003_error_verdict() {
    let mut sim = Sim::started(ai_idle());
    sim.idle.fail(10, "Could not parse verdict from: \"hmm\"");
    completion_then_check(&mut sim);
    sim.clear_log();
    sim.advance(10);
    assert!(sim.has(|e| matches!(e, Event::IdleCheckFailed { .. })));
    assert_eq!(sim.state(), State::Watching);
    assert_eq!(sim.m.status(sim.now).idle_check_errors, 1);
    for timer in [TimerName::NoOutputFallback, TimerName::PreFilter] {
        assert!(sim.has(|e| matches!(e, Event::TimerStarted { timer: t, .. } if *t == timer)));
    }
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckerCooldown {
            active: true,
            duration_ms: Some(60_000),
            ..
        }
    )));
}

#[test]
fn aic_004_checker_throws() {
    // The driver turns a crash, a spawn failure or a panic of the checker into `Failed`.
    let mut sim = Sim::started(ai_idle());
    sim.idle.fail(
        5,
        "Failed to spawn AI idle check: No such file or directory",
    );
    completion_then_check(&mut sim);
    sim.advance(5);
    assert!(
        sim.has(
            |e| matches!(e, Event::IdleCheckFailed { message, .. } if message.contains("spawn"))
        )
    );
    assert_eq!(sim.state(), State::Watching);
    assert!(sim.m.is_running());
}

#[test]
fn aic_005_working_during_the_check() {
    let mut sim = Sim::started(ai_idle());
    sim.idle.answer(100, IdleAnswer::Idle, "late");
    completion_then_check(&mut sim);
    sim.advance(20);
    sim.working();
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckCancelled {
            checker: Checker::Idle,
            reason: "working patterns detected during AI check",
            ..
        }
    )));
    assert_eq!(sim.state(), State::Watching);
    sim.advance(100);
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckResultIgnored {
            stale: Stale::UnknownId,
            ..
        }
    )));
    assert_eq!(sim.cycles_started(), 0);
}

#[test]
fn aic_006_substantial_output_during_the_check() {
    let mut sim = Sim::started(ai_idle());
    completion_then_check(&mut sim);
    sim.advance(20);
    sim.text("some more text");
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckCancelled {
            reason: "substantial output during AI check",
            ..
        }
    )));
    assert!(sim.has(|e| *e
        == Event::SubstantialOutput {
            state: State::AiChecking
        }));
    assert_eq!(sim.state(), State::Watching);
}

#[test]
fn aic_007_cooldown() {
    // The pre-filter's 8 s working-absence is shortened so the pre-filter path itself
    // runs into the cooldown.
    let mut config = ai_idle();
    config.working_absence = ms(0);
    config.idle_check.timing.cooldown = ms(10_000);
    let mut sim = Sim::started(config);
    sim.idle.answer(10, IdleAnswer::Working, "busy");
    completion_then_check(&mut sim);
    sim.advance(10); // t=70: WORKING, cooldown until 10 070, pre-filter until 120.
    sim.clear_log();
    sim.advance(50);
    assert!(sim.has(|e| matches!(
        e,
        Event::IdleCheckSkipped {
            skip: CheckSkip::Cooldown {
                remaining_ms: 9_950
            }
        }
    )));
    assert_eq!(sim.state(), State::Watching);
    assert_eq!(sim.idle.started.len(), 1);
}

#[test]
fn aic_008_cooldown_expiry() {
    let mut config = ai_idle();
    config.working_absence = ms(0);
    config.no_output_timeout = ms(60_000);
    let mut sim = Sim::started(config);
    sim.idle.answer(10, IdleAnswer::Working, "busy");
    sim.idle.answer(10, IdleAnswer::Working, "still busy");
    completion_then_check(&mut sim);
    sim.advance(10); // t=70, cooldown until 270.
    sim.advance(200);
    assert_eq!(
        sim.when(|e| *e
            == Event::CheckerCooldown {
                checker: Checker::Idle,
                active: false,
                duration_ms: None
            }),
        Some(270)
    );
    // The pre-filter restarted at 270 and starts the next check at 320.
    assert!(sim.timer_armed(TimerName::PreFilter));
    sim.advance(50);
    assert_eq!(sim.idle.started.len(), 2);
    assert_eq!(
        sim.when(|e| matches!(e, Event::IdleCheckStarted { id: 2, .. })),
        Some(320)
    );
}

#[test]
fn aic_009_three_consecutive_errors() {
    let mut sim = Sim::started(ai_idle());
    for _ in 0..3 {
        sim.idle.fail(10, "garbage");
    }
    sim.advance(1);
    sim.text("hello"); // The session drew something.
    // Errors back off 60 s then 120 s; the pre-filter and no-output timers find the next
    // check once each cooldown has ended.
    sim.advance(400_000);
    assert_eq!(sim.idle.started.len(), 3);
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckerDisabled { checker: Checker::Idle, reason } if reason.contains("3 consecutive errors")
    )));
    assert!(!sim.m.status(sim.now).idle_check_usable);
    // From now on idle is confirmed directly.
    assert!(sim.has(|e| matches!(
        e,
        Event::IdleConfirmed {
            via: "pre-filter (AI check disabled)" | "no-output fallback (AI check disabled)"
        }
    )));
    assert_eq!(sim.cycles_started(), 1);
}

#[test]
fn aic_010_re_enable() {
    let mut sim = Sim::started(ai_idle());
    for _ in 0..3 {
        sim.idle.fail(10, "garbage");
    }
    sim.advance(400_000);
    assert!(!sim.m.status(sim.now).idle_check_usable);
    let config = sim.m.config().clone();
    sim.send(Input::UpdateConfig(Box::new(config)));
    assert!(sim.has(|e| *e
        == Event::CheckerEnabled {
            checker: Checker::Idle
        }));
    let status = sim.m.status(sim.now);
    assert!(status.idle_check_usable);
    assert_eq!(status.idle_check_errors, 0);
}

#[test]
fn aic_011_no_output_at_all_since_start() {
    let mut sim = Sim::started(ai_idle());
    sim.advance(300);
    assert!(sim.has(|e| *e == Event::NoOutputFallback { silence_ms: 300 }));
    assert_eq!(
        sim.when(|e| matches!(
            e,
            Event::IdleCheckStarted {
                reason: "no-output fallback",
                ..
            }
        )),
        Some(300)
    );
}

#[test]
fn aic_012_pre_filter_path_without_a_completion() {
    let mut config = ai_idle();
    config.no_output_timeout = ms(60_000);
    let mut sim = Sim::started(config);
    // At 7 000 ms the 8 s working-absence fails and the pre-filter does not re-arm.
    sim.advance(7_000);
    sim.text("output");
    sim.advance(50);
    assert!(sim.idle.started.is_empty());
    assert!(!sim.timer_armed(TimerName::PreFilter));
    // Output at 8 000 ms: at 8 050 silence, absence and stable tokens all hold.
    sim.advance_to(8_000);
    sim.text("more output");
    sim.advance(50);
    assert_eq!(
        sim.when(|e| matches!(
            e,
            Event::IdleCheckStarted {
                reason: "pre-filter",
                ..
            }
        )),
        Some(8_050)
    );
}

#[test]
fn aic_013_stop_during_the_check() {
    let mut sim = Sim::started(ai_idle());
    sim.idle.answer(100, IdleAnswer::Idle, "late");
    completion_then_check(&mut sim);
    sim.send(Input::Stop);
    sim.clear_log();
    sim.advance(200);
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckResultIgnored {
            state: State::Stopped,
            ..
        }
    )));
    assert!(sim.states().is_empty(), "no transition");
    assert_eq!(sim.cycles_started(), 0);
}

// ----- plan checker -------------------------------------------------------------------

/// A plan menu at t=10; the auto-accept timer fires at t=110.
fn plan_menu_then_wait(sim: &mut Sim) {
    sim.advance(10);
    sim.plan_menu();
    sim.advance(100);
}

#[test]
fn apc_001_plan_mode() {
    let mut sim = Sim::started(ai());
    sim.plan.answer(10, PlanAnswer::PlanMode, "menu");
    plan_menu_then_wait(&mut sim);
    assert!(sim.has(|e| matches!(e, Event::PlanCheckStarted { .. })));
    assert!(sim.typed().is_empty());
    sim.advance(10);
    assert!(sim.has(|e| matches!(
        e,
        Event::PlanCheckCompleted {
            verdict: PlanAnswer::PlanMode,
            ..
        }
    )));
    assert_eq!(sim.typed(), [Keys::Enter]);
    assert!(sim.has(|e| *e == Event::AutoAcceptSent { dry_run: false }));
    // hasReceivedOutput is false: no second Enter without new output.
    sim.advance(1_000);
    assert_eq!(sim.enters(), 1);
}

#[test]
fn apc_002_not_plan_mode() {
    let mut sim = Sim::started(ai());
    sim.plan.answer(10, PlanAnswer::NotPlanMode, "no menu");
    plan_menu_then_wait(&mut sim);
    sim.advance(10);
    assert!(sim.has(|e| matches!(
        e,
        Event::PlanCheckCompleted {
            verdict: PlanAnswer::NotPlanMode,
            ..
        }
    )));
    assert!(sim.typed().is_empty());
    assert!(sim.has(|e| *e
        == Event::CheckerCooldown {
            checker: Checker::Plan,
            active: true,
            duration_ms: Some(200)
        }));
}

#[test]
fn apc_003_second_attempt_while_checking() {
    // A Stop hook confirmed at t=3 110 meets the blocked(plan) verdict, which re-arms the
    // auto-accept; it fires at 3 210 while the first (slow) plan check still runs.
    let mut config = ai();
    config.plan_check.timing.timeout = ms(10_000);
    let mut sim = Sim::started(config);
    plan_menu_then_wait(&mut sim);
    sim.hook(HookEvent::Stop);
    sim.advance(3_200);
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::PlanCheckInProgress
        }));
    assert_eq!(sim.plan.started.len(), 1);
    assert!(sim.typed().is_empty());
}

#[test]
fn apc_004_output_during_the_plan_check() {
    let mut sim = Sim::started(ai());
    sim.plan.answer(50, PlanAnswer::PlanMode, "menu");
    plan_menu_then_wait(&mut sim);
    sim.advance(10);
    sim.text("a redraw");
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckCancelled {
            checker: Checker::Plan,
            reason: "output during plan check",
            ..
        }
    )));
    sim.advance(45);
    assert!(sim.typed().is_empty());
}

#[test]
fn apc_005_result_after_output() {
    // Output during the check makes its result stale: whatever arrives later is
    // discarded and nothing is typed for it.
    let mut sim = Sim::started(ai());
    sim.plan.answer(30, PlanAnswer::PlanMode, "menu");
    plan_menu_then_wait(&mut sim);
    sim.advance(20);
    sim.verdict(SessionState::Working, None);
    sim.working();
    sim.advance(20);
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckResultIgnored {
            checker: Checker::Plan,
            ..
        }
    )));
    assert!(sim.typed().is_empty());
}

#[test]
fn apc_006_plan_mode_while_not_watching() {
    // The menu went away and an idle_prompt hook started a cycle while the plan check ran:
    // the cycle cancels the check and its PLAN_MODE result is not acted on.
    let mut sim = Sim::started(ai());
    sim.plan.answer(100, PlanAnswer::PlanMode, "menu");
    plan_menu_then_wait(&mut sim);
    sim.verdict(SessionState::Idle, None);
    sim.hook(HookEvent::IdlePrompt);
    assert_eq!(sim.state(), State::SendingUpdate);
    sim.advance(100);
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckResultIgnored {
            checker: Checker::Plan,
            ..
        } | Event::PlanAcceptRefused { .. }
    )));
    assert!(!sim.has(|e| matches!(e, Event::AutoAcceptSent { .. })));
}

#[test]
fn apc_007_no_numbered_option() {
    let mut sim = Sim::started(ai());
    sim.advance(10);
    sim.text("Claude is just thinking about something...\nSome regular output here.");
    sim.advance(100);
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::NotPlanMenu
        }));
    assert!(sim.plan.started.is_empty());
}

#[test]
fn apc_008_numbered_list_without_selector() {
    // "1. Yes\n2. No" with no `❯`/`>`: the detector does not call it a plan menu.
    let mut sim = Sim::started(ai());
    sim.advance(10);
    sim.verdict(SessionState::Idle, None);
    sim.text("1. Yes\n2. No");
    sim.advance(100);
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::NotPlanMenu
        }));
    assert!(sim.plan.started.is_empty());
}

#[test]
fn apc_009_working_after_the_selector() {
    // "1. Yes\n> 1.\nThinking...": working output after the selector; the verdict works.
    let mut sim = Sim::started(ai());
    sim.advance(10);
    sim.verdict(SessionState::Working, None);
    sim.working();
    sim.advance(100);
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::NotPlanMenu
        }));
    assert!(sim.typed().is_empty());
}

#[test]
fn apc_010_working_before_the_selector_with_ai_plan_off() {
    let mut config = ai();
    config.plan_check.enabled = false;
    let mut sim = Sim::started(config);
    sim.advance(10);
    sim.working(); // "Thinking..."
    sim.plan_menu(); // "Done.\n> 1. Yes\n  2. No"
    sim.advance(99);
    assert!(sim.typed().is_empty());
    sim.advance(1);
    assert_eq!(sim.typed(), [Keys::Enter]);
    assert_eq!(
        sim.when(|e| matches!(e, Event::AutoAcceptSent { .. })),
        Some(110)
    );
}

#[test]
fn apc_011_plan_checker_on_cooldown() {
    let mut config = ai();
    config.plan_check.timing.cooldown = ms(5_000);
    let mut sim = Sim::started(config);
    sim.plan.answer(10, PlanAnswer::NotPlanMode, "no");
    plan_menu_then_wait(&mut sim);
    sim.advance(10);
    sim.plan_menu(); // Redrawn at t=120.
    sim.advance(100);
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::PlanCheckCooldown {
                remaining_ms: 4_900
            }
        }));
    assert!(sim.typed().is_empty());
    assert_eq!(sim.plan.started.len(), 1);
}

#[test]
fn permission_prompts_and_questions_are_never_accepted() {
    for kind in [
        BlockedKind::Permission,
        BlockedKind::Question,
        BlockedKind::Trust,
    ] {
        let mut config = ai();
        config.plan_check.enabled = false;
        let mut sim = Sim::started(config);
        sim.advance(10);
        sim.permission_prompt();
        sim.verdict(SessionState::Blocked, Some(kind));
        sim.advance(100_000);
        assert!(sim.typed().is_empty(), "{kind:?}: {:?}", sim.typed());
        assert!(sim.has(|e| *e
            == Event::AutoAcceptSkipped {
                skip: AutoAcceptSkip::HumanDecision { kind }
            }));
    }
}
