//! `docs/respawn.md` §5b, the analysis items (73–84), against the machine. Items 73
//! and 74 (how a check's prompt reaches the checker, and what a check leaves behind)
//! concern the command checker and are tested in `checks`.

use hyoka_idle_detect::{BlockedKind, HookEvent, IdleAnswer, SessionState};
use hyoka_respawn::{
    Action, AutoAcceptSkip, Checker, Event, Input, Keys, RespawnConfig, Stale, State, Step,
    TimerName,
};

use crate::support::{Sim, ms};

fn ai_idle() -> RespawnConfig {
    let mut config = RespawnConfig::fast_test_with_ai();
    config.plan_check.enabled = false;
    config
}

#[test]
fn issue_3_cancel_resolves_exactly_once() {
    let mut sim = Sim::started(ai_idle());
    sim.idle.answer(100, IdleAnswer::Idle, "late");
    sim.advance(10);
    sim.completion();
    sim.advance(50);
    sim.working(); // Cancels the check.
    sim.advance(200);
    assert_eq!(sim.idle.cancelled, [1]);
    assert_eq!(
        sim.count(|e| matches!(
            e,
            Event::CheckResultIgnored {
                stale: Stale::UnknownId,
                id: 1,
                ..
            }
        )),
        1
    );
    assert!(!sim.has(|e| matches!(e, Event::IdleCheckCompleted { .. })));
    // The checker is ready again: the next completion starts check 2.
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.idle.started, [1, 2]);
}

#[test]
fn issue_4_a_new_check_never_overlaps_the_previous_one() {
    // Codeman reuses one tmux session name per checker and kills a leftover before a new
    // check. hyoka's checks are separate processes: the previous check is always cancelled
    // (and torn down by the driver) before the next one starts.
    let mut sim = Sim::started(ai_idle());
    sim.advance(10);
    sim.completion();
    sim.advance(50);
    sim.working();
    sim.completion();
    sim.advance(50);
    let order: Vec<_> = sim
        .log
        .iter()
        .filter_map(|(_, a)| match a {
            Action::StartCheck {
                checker: Checker::Idle,
                id,
                ..
            } => Some(("start", *id)),
            Action::CancelCheck {
                checker: Checker::Idle,
                id,
            } => Some(("cancel", *id)),
            _ => None,
        })
        .collect();
    assert_eq!(order, [("start", 1), ("cancel", 1), ("start", 2)]);
}

#[test]
fn issue_5_silence_is_measured_from_the_last_output() {
    let mut sim = Sim::started(ai_idle());
    sim.advance(10);
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.state(), State::AiChecking);
    sim.advance(30);
    assert_eq!(sim.m.status(sim.now).silence, Some(ms(80)));
}

#[test]
fn gap_resume_never_bypasses_the_gates() {
    // Codeman's resume in watching with a prompt and inactivity calls `onIdleDetected`
    // directly, skipping the `isWorking` veto and the gates. hyoka's resume only re-arms.
    let mut sim = Sim::started(RespawnConfig::fast_test());
    sim.advance(10);
    sim.prompt();
    sim.send(Input::Pause);
    sim.advance(60_000);
    sim.verdict(SessionState::Working, None);
    sim.clear_log();
    sim.send(Input::Resume);
    assert_eq!(sim.cycles_started(), 0);
    assert!(sim.timer_armed(TimerName::NoOutputFallback));
    sim.advance(300);
    assert!(sim.has(|e| *e == Event::IdleRejected));
    assert_eq!(sim.cycles_started(), 0);
}

#[test]
fn gap_kickstart_path() {
    // T38–T42, including a prompt that arrives before the 3 s monitoring window ends.
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        kickstart_prompt: Some("keep going".to_owned()),
        ..RespawnConfig::fast_test()
    });
    sim.advance(10);
    sim.completion();
    sim.advance(50 + 70);
    for _ in 0..2 {
        sim.advance(10);
        sim.working();
        sim.completion();
        sim.advance(50);
        if sim.state() == State::SendingInit {
            sim.advance(70);
        }
    }
    assert_eq!(sim.state(), State::MonitoringInit);
    sim.advance(100);
    sim.prompt();
    assert_eq!(sim.state(), State::SendingKickstart);
    sim.advance(70);
    assert_eq!(sim.state(), State::WaitingKickstart);
    assert!(sim.typed().contains(&Keys::Text("keep going".to_owned())));
    sim.advance(10);
    sim.working();
    sim.completion();
    sim.advance(50);
    assert!(sim.has(|e| *e
        == Event::StepCompleted {
            step: Step::Kickstart,
            via: "silence"
        }));
    assert_eq!(sim.state(), State::Watching);
}

#[test]
fn edge_start_with_no_output_at_all() {
    // "Session terminal buffer undefined on start": nothing to seed, no crash.
    let mut sim = Sim::started(RespawnConfig::fast_test());
    assert_eq!(sim.state(), State::Watching);
    sim.advance(10_000);
    // The no-output fallback confirms idle, but a session that never drew is not typed
    // into.
    assert!(sim.has(|e| matches!(
        e,
        Event::Blocked {
            reason: hyoka_respawn::BlockReason::NoOutputYet,
            ..
        }
    )));
    assert!(sim.typed().is_empty());
}

#[test]
fn edge_elicitation_many_times() {
    let mut sim = Sim::started(RespawnConfig::fast_test());
    sim.advance(10);
    sim.plan_menu();
    for _ in 0..5 {
        sim.hook(HookEvent::ElicitationDialog);
    }
    sim.advance(200);
    assert!(sim.typed().is_empty());
    assert!(sim.m.status(sim.now).elicitation);
    sim.working();
    assert!(
        !sim.m.status(sim.now).elicitation,
        "one working chunk clears it"
    );
    sim.plan_menu();
    sim.advance(100);
    assert_eq!(sim.typed(), [Keys::Enter]);
}

#[test]
fn edge_rapid_ai_checks() {
    let mut sim = Sim::started(ai_idle());
    sim.advance(10);
    sim.completion();
    sim.advance(50);
    // While the check runs, prompt redraws re-arm and fire the detection timers.
    for _ in 0..20 {
        sim.prompt();
        sim.advance(60);
    }
    assert_eq!(sim.idle.started.len(), 1);
}

#[test]
fn timing_no_auto_accept_during_a_cycle() {
    // A long step confirmation keeps the cycle in waiting_update while the menu's
    // auto-accept timer fires.
    let mut sim = Sim::started(RespawnConfig {
        step_confirm: Some(ms(1_000)),
        ..RespawnConfig::fast_test()
    });
    sim.advance(10);
    sim.completion();
    sim.advance(50 + 70);
    assert_eq!(sim.state(), State::WaitingUpdate);
    sim.plan_menu();
    sim.advance(150);
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::NotWatching
        }));
    assert_eq!(sim.enters(), 1, "only the update's Enter");
}

#[test]
fn timing_step_confirm_has_its_own_setting() {
    let mut sim = Sim::started(RespawnConfig {
        step_confirm: Some(ms(200)),
        ..RespawnConfig::fast_test()
    });
    sim.advance(10);
    sim.completion();
    sim.advance(50 + 70);
    sim.advance(10);
    sim.working();
    sim.completion();
    let done_at = sim.t() + 200;
    sim.advance(300);
    assert_eq!(
        sim.when(|e| matches!(
            e,
            Event::StepCompleted {
                step: Step::Update,
                ..
            }
        )),
        Some(done_at)
    );
    let _ = BlockedKind::Plan;
}
