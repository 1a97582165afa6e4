//! `docs/respawn.md` §5a: timeouts and cooldowns (TC), error recovery (ER),
//! concurrency (CO), configuration changes (CC), buffers (BM) and events (EE), against the
//! machine on exact virtual time. The buffer scenarios that concern the output context
//! kept for AI checks (BM-001, BM-002, BM-003, CO-005) and chunk-handler robustness
//! (ER-001) are tested where that code lives, in `driver`.

use std::time::Duration;

use hyoka_idle_detect::{IdleAnswer, PlanAnswer, SessionState};
use hyoka_respawn::{
    AutoAcceptSkip, BlockReason, CheckSkip, Checker, Event, Input, Keys, Machine, RespawnConfig,
    State, Step, TimerName,
};

use crate::support::{Sim, ms};

fn fast() -> RespawnConfig {
    RespawnConfig::fast_test()
}

fn confirm_idle(sim: &mut Sim) {
    sim.advance(10);
    sim.completion();
    sim.advance(50);
}

/// Into waiting_update: idle confirmed at t=60, text at 80, Enter at 130.
fn into_waiting_update(sim: &mut Sim) {
    confirm_idle(sim);
    sim.advance(70);
    assert_eq!(sim.state(), State::WaitingUpdate);
}

#[test]
fn tc_001_working_in_waiting_update_after_a_completion() {
    let mut sim = Sim::started(fast());
    into_waiting_update(&mut sim);
    sim.advance(10);
    sim.completion();
    assert!(sim.timer_armed(TimerName::StepConfirm));
    sim.advance(10);
    sim.working();
    assert!(sim.has(|e| *e
        == Event::TimerCancelled {
            timer: TimerName::StepConfirm,
            reason: "working detected"
        }));
    assert_eq!(sim.state(), State::WaitingUpdate);
}

#[test]
fn tc_002_completion_confirm_fires_with_recent_output() {
    let mut sim = Sim::started(fast());
    sim.advance(10);
    sim.completion();
    sim.advance(30);
    sim.prompt(); // Not substantial: confirmation goes on.
    sim.clear_log();
    sim.advance(20);
    assert!(sim.has(|e| *e == Event::ConfirmationReset));
    assert_eq!(sim.state(), State::ConfirmingIdle);
    assert_eq!(
        sim.when(|e| *e
            == Event::TimerStarted {
                timer: TimerName::CompletionConfirm,
                duration_ms: 50
            }),
        Some(60)
    );
}

#[test]
fn tc_003_both_checkers_on_cooldown() {
    let mut config = RespawnConfig::fast_test_with_ai();
    config.working_absence = ms(0);
    config.plan_check.timing.cooldown = ms(500);
    let mut sim = Sim::started(config);
    sim.idle.answer(5, IdleAnswer::Working, "busy"); // cooldown 200
    sim.plan.answer(5, PlanAnswer::NotPlanMode, "no"); // cooldown 500
    sim.advance(10);
    sim.plan_menu(); // t=10: pre-filter at 60, auto-accept at 110.
    sim.advance(60); // Idle check at 60 → WORKING at 65.
    sim.plan_menu(); // t=70: pre-filter at 120, auto-accept at 170.
    sim.advance(110); // Plan check at 170 → NOT_PLAN_MODE at 175.
    sim.plan_menu(); // t=180: pre-filter at 230 (idle cooldown until 265), auto-accept at 280 (plan until 675).
    sim.advance(110);
    assert!(sim.has(|e| matches!(
        e,
        Event::IdleCheckSkipped {
            skip: CheckSkip::Cooldown { .. }
        }
    )));
    assert!(sim.has(|e| matches!(
        e,
        Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::PlanCheckCooldown { .. }
        }
    )));
    assert_eq!((sim.idle.started.len(), sim.plan.started.len()), (1, 1));
    sim.advance(1_000);
    let ended = |checker| {
        sim.when(|e| {
            *e == Event::CheckerCooldown {
                checker,
                active: false,
                duration_ms: None,
            }
        })
    };
    assert_eq!(ended(Checker::Idle), Some(265));
    assert_eq!(ended(Checker::Plan), Some(675));
}

#[test]
fn tc_004_zero_durations() {
    let m = Machine::new(RespawnConfig {
        completion_confirm: Duration::ZERO,
        inter_step_delay: Duration::ZERO,
        auto_accept_delay: Duration::ZERO,
        ..RespawnConfig::default()
    });
    assert_eq!(m.config().completion_confirm, ms(10_000));
    assert_eq!(m.config().inter_step_delay, ms(1_000));
    assert_eq!(m.config().auto_accept_delay, Duration::ZERO);
    // A zero auto-accept delay accepts at the instant of the menu's silence.
    let mut config = fast();
    config.auto_accept_delay = Duration::ZERO;
    let mut sim = Sim::started(config);
    sim.advance(10);
    sim.plan_menu();
    sim.advance(0);
    assert_eq!(sim.typed(), [Keys::Enter]);
}

#[test]
fn tc_005_long_no_output_timeout_then_stop() {
    let mut sim = Sim::started(RespawnConfig {
        no_output_timeout: ms(3_600_000),
        ..fast()
    });
    sim.send(Input::Stop);
    assert_eq!(sim.m.next_deadline(), None);
    sim.clear_log();
    sim.advance(7_200_000);
    assert!(sim.events().is_empty());
}

#[test]
fn tc_006_active_timers() {
    let mut sim = Sim::started(fast());
    sim.advance(10);
    sim.completion();
    for step in 0..60 {
        for timer in sim.m.active_timers(sim.now) {
            assert!(timer.remaining <= timer.total, "{timer:?} at step {step}");
        }
        sim.advance(1);
    }
    let names: Vec<_> = sim
        .m
        .active_timers(sim.now)
        .iter()
        .map(|t| t.name)
        .collect();
    assert!(!names.contains(&TimerName::CompletionConfirm), "{names:?}");
}

#[test]
fn er_002_a_write_that_goes_nowhere() {
    // The write "succeeds" but no new turn ever starts: the step counts as sent, the state
    // advances, Enter is retried once, then `delivery_unconfirmed` ends the cycle and the
    // cycles pause.
    let mut sim = Sim::started(fast());
    sim.auto_echo = false;
    confirm_idle(&mut sim);
    // Enter waits up to `text_wait` (1 s) for the text to show in the box.
    sim.advance(1_100);
    assert_eq!(sim.state(), State::WaitingUpdate);
    assert_eq!(sim.steps_sent(), [Step::Update]);
    sim.advance(10_000);
    assert_eq!(sim.count(|e| matches!(e, Event::StepRetried { .. })), 1);
    assert!(sim.has(|e| matches!(
        e,
        Event::DeliveryUnconfirmed {
            step: Step::Update,
            ..
        }
    )));
    assert!(sim.has(|e| matches!(
        e,
        Event::Blocked {
            reason: BlockReason::DeliveryUnconfirmed,
            ..
        }
    )));
    assert!(sim.has(|e| matches!(
        e,
        Event::CycleAborted {
            reason: "delivery unconfirmed",
            ..
        }
    )));
    assert_eq!(sim.state(), State::Watching);
    // Nothing more is typed while the session only draws, not even after a completion.
    let typed = sim.typed().len();
    sim.text("some redraw");
    sim.completion();
    sim.advance(60_000);
    assert_eq!(sim.typed().len(), typed);
    // Once it visibly works again, cycles resume.
    sim.working();
    sim.completion();
    sim.advance(1_000);
    assert!(sim.typed().len() > typed);
}

#[test]
fn er_003_a_clean_cycle_after_a_failed_one() {
    let mut sim = Sim::started(fast());
    sim.auto_echo = false;
    confirm_idle(&mut sim);
    sim.advance(11_100); // No new turn: the cycle is abandoned, cycles pause.
    assert!(sim.has(|e| matches!(e, Event::DeliveryUnconfirmed { .. })));
    sim.clear_log();
    sim.auto_echo = true;
    sim.working(); // The session works again (a person submitted the text, say).
    sim.completion();
    sim.advance(50);
    assert!(sim.has(|e| matches!(e, Event::CycleStarted { cycle: 2 })));
    assert!(
        sim.log
            .iter()
            .any(|(_, a)| *a == hyoka_respawn::Action::ResetContext)
    );
    sim.advance(70);
    sim.advance(10);
    sim.working();
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.state(), State::SendingClear);
    assert!(!sim.has(|e| matches!(e, Event::StepRetried { .. })));
}

#[test]
fn er_004_checker_spawn_failure() {
    let mut config = RespawnConfig::fast_test_with_ai();
    config.plan_check.enabled = false;
    let mut sim = Sim::started(config);
    sim.idle
        .fail(5, "Failed to spawn AI idle check: permission denied");
    sim.advance(10);
    sim.completion();
    sim.advance(55);
    assert!(sim.has(|e| matches!(e, Event::IdleCheckFailed { .. })));
    assert_eq!(sim.m.status(sim.now).idle_check_errors, 1);
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
fn co_001_stop_then_start_at_once() {
    let mut sim = Sim::started(fast());
    sim.advance(10);
    sim.completion();
    sim.send(Input::Stop);
    sim.send(Input::Start);
    assert_eq!(sim.state(), State::Watching);
    let timers = sim.m.active_timers(sim.now);
    assert!(
        !timers
            .iter()
            .any(|t| t.name == TimerName::CompletionConfirm)
    );
    for timer in &timers {
        assert_eq!(timer.remaining, timer.total, "fresh: {timer:?}");
    }
    sim.advance(100);
    assert_eq!(sim.state(), State::Watching, "no stale completion-confirm");
}

#[test]
fn co_002_many_chunks_in_one_tick() {
    let mut sim = Sim::started(fast());
    sim.advance(10);
    sim.completion();
    sim.working();
    sim.completion();
    sim.text("xyz");
    sim.completion();
    assert_eq!(sim.state(), State::ConfirmingIdle);
    assert_eq!(
        sim.states(),
        [
            State::Stopped,
            State::Watching,
            State::ConfirmingIdle,
            State::Watching,
            State::ConfirmingIdle,
            State::Watching,
            State::ConfirmingIdle,
        ]
    );
}

#[test]
fn co_003_disabling_the_ai_check_during_a_check() {
    // Codeman lets the pending check finish and acts on its verdict. hyoka: turning the
    // check off cancels it (its late result is ignored) and idle is then confirmed without
    // it, here by the no-output fallback.
    let mut config = RespawnConfig::fast_test_with_ai();
    config.plan_check.enabled = false;
    let mut sim = Sim::started(config.clone());
    sim.idle.answer(50, IdleAnswer::Idle, "done");
    sim.advance(10);
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.state(), State::AiChecking);
    config.idle_check.enabled = false;
    sim.send(Input::UpdateConfig(Box::new(config)));
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckCancelled {
            reason: "disabled by config",
            ..
        }
    )));
    assert!(sim.has(|e| matches!(e, Event::CheckerDisabled { .. })));
    assert_eq!(sim.state(), State::Watching);
    sim.advance(50);
    assert!(sim.has(|e| matches!(e, Event::CheckResultIgnored { .. })));
    assert_eq!(sim.cycles_started(), 0);
    sim.advance(300);
    assert!(sim.has(|e| matches!(
        e,
        Event::IdleConfirmed {
            via: "no-output fallback (AI check disabled)"
        }
    )));
    assert!(sim.has(|e| matches!(e, Event::CycleStarted { cycle: 1 })));
}

#[test]
fn co_004_pause_during_a_check() {
    // Codeman: pause leaves the check running and an IDLE result still starts a cycle.
    // hyoka: pause is real; the check is cancelled and its result ignored.
    let mut config = RespawnConfig::fast_test_with_ai();
    config.plan_check.enabled = false;
    let mut sim = Sim::started(config);
    sim.idle.answer(50, IdleAnswer::Idle, "done");
    sim.advance(10);
    sim.completion();
    sim.advance(50);
    sim.send(Input::Pause);
    sim.advance(100);
    assert_eq!(sim.cycles_started(), 0);
    assert!(sim.has(|e| matches!(
        e,
        Event::CheckCancelled {
            reason: "paused",
            ..
        }
    )));
    assert!(sim.has(|e| matches!(e, Event::CheckResultIgnored { .. })));
    assert!(sim.typed().is_empty());
}

#[test]
fn cc_001_disable_while_running() {
    let mut sim = Sim::started(fast());
    let config = RespawnConfig {
        enabled: false,
        ..fast()
    };
    sim.send(Input::UpdateConfig(Box::new(config)));
    confirm_idle(&mut sim);
    assert_eq!(
        sim.state(),
        State::SendingUpdate,
        "the current operation goes on"
    );
    sim.send(Input::Stop);
    sim.send(Input::Start);
    assert_eq!(sim.state(), State::Stopped);
    assert!(sim.has(|e| *e == Event::StartIgnored { why: "disabled" }));
}

#[test]
fn cc_002_update_prompt_changed_in_waiting_update() {
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        send_init: false,
        ..fast()
    });
    into_waiting_update(&mut sim);
    let config = RespawnConfig {
        update_prompt: "new prompt".to_owned(),
        send_clear: false,
        send_init: false,
        ..fast()
    };
    sim.send(Input::UpdateConfig(Box::new(config)));
    sim.advance(10);
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.state(), State::Watching);
    sim.completion();
    sim.advance(50 + 70);
    let texts: Vec<_> = sim
        .typed()
        .into_iter()
        .filter_map(|k| match k {
            Keys::Text(t) => Some(t),
            Keys::Enter => None,
        })
        .collect();
    assert_eq!(texts, [hyoka_respawn::DEFAULT_UPDATE_PROMPT, "new prompt"]);
}

#[test]
fn cc_003_clear_turned_off_during_waiting_update() {
    let mut sim = Sim::started(fast());
    into_waiting_update(&mut sim);
    sim.send(Input::UpdateConfig(Box::new(RespawnConfig {
        send_clear: false,
        ..fast()
    })));
    sim.advance(10);
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.state(), State::SendingInit);
}

#[test]
fn cc_004_completion_confirm_changed_while_its_timer_runs() {
    let mut sim = Sim::started(fast());
    sim.advance(10);
    sim.completion(); // Timer of 50 ms until t=60.
    sim.send(Input::UpdateConfig(Box::new(RespawnConfig {
        completion_confirm: ms(200),
        ..fast()
    })));
    sim.advance(50);
    assert_eq!(
        sim.when(|e| *e
            == Event::TimerFired {
                timer: TimerName::CompletionConfirm
            }),
        Some(60),
        "the running timer kept its duration"
    );
    sim.advance(200);
    sim.completion();
    assert!(sim.has(|e| *e
        == Event::TimerStarted {
            timer: TimerName::CompletionConfirm,
            duration_ms: 200
        }));
}

#[test]
fn cc_005_kickstart_removed() {
    // Rust has no `undefined`: a configuration update replaces the whole configuration, and
    // an empty kickstart is no kickstart. Codeman then types a bare Enter if already in
    // monitoring_init; hyoka completes the cycle instead.
    let kick = RespawnConfig {
        send_clear: false,
        kickstart_prompt: Some("continue".to_owned()),
        ..fast()
    };
    let mut sim = Sim::started(kick);
    confirm_idle(&mut sim);
    sim.advance(70);
    sim.advance(10);
    sim.working();
    sim.completion();
    sim.advance(50);
    sim.advance(70);
    sim.advance(10);
    sim.working();
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.state(), State::MonitoringInit);
    sim.send(Input::UpdateConfig(Box::new(RespawnConfig {
        send_clear: false,
        kickstart_prompt: Some(String::new()),
        ..fast()
    })));
    assert_eq!(sim.m.config().kickstart_prompt, None);
    let typed = sim.typed().len();
    sim.advance(3_000);
    assert_eq!(sim.typed().len(), typed, "no bare Enter");
    assert_eq!(sim.state(), State::Watching);
    assert!(sim.has(|e| matches!(e, Event::CycleCompleted { cycle: 1 })));
}

#[test]
fn bm_004_no_action_log_is_kept() {
    // Codeman keeps the last 20 actions for its UI. The machine keeps none: every event
    // is handed out once and forgotten.
    let mut sim = Sim::started(fast());
    for _ in 0..10_000 {
        sim.completion();
        sim.working();
    }
    assert!(sim.m.handle(Input::Tick, sim.now).is_empty());
}

#[test]
fn ee_001_nobody_listens() {
    // Events are returned values: dropping them changes nothing.
    let mut m = Machine::new(fast());
    let t0 = std::time::Instant::now();
    drop(m.handle(Input::Start, t0));
    drop(m.handle(
        Input::Output(hyoka_idle_detect::ChunkSignals {
            completion: true,
            ..Default::default()
        }),
        t0,
    ));
    drop(m.handle(Input::Tick, t0 + ms(60)));
    assert_eq!(m.state(), State::SendingUpdate);
}

#[test]
fn ee_002_ee_003_no_callbacks() {
    // Codeman's EventEmitter lets a throwing listener break the emitting call (EE-002) and
    // supports `once` listeners (EE-003). The machine has no listeners: a consumer that
    // fails cannot interrupt a transition, and "once" is the consumer's business.
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    assert_eq!(sim.count(|e| matches!(e, Event::CycleStarted { .. })), 1);
}

#[test]
fn ee_004_no_detection_update_interval() {
    // Codeman's 2 s `detectionUpdate` interval dies at the first cycle (§5d 108). The
    // machine has no interval: `status` answers at any time, and after stop nothing fires.
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    let status = sim.m.status(sim.now);
    assert_eq!(status.state, State::SendingUpdate);
    assert_eq!(status.cycles, 1);
    sim.send(Input::Stop);
    sim.clear_log();
    sim.advance(10_000);
    assert!(sim.events().is_empty());
}

#[test]
fn ee_005_no_timer_fires_after_stop() {
    let mut sim = Sim::started(fast());
    sim.advance(10);
    sim.completion();
    sim.send(Input::Stop);
    sim.clear_log();
    sim.advance(100_000);
    assert!(!sim.has(|e| matches!(
        e,
        Event::TimerFired { .. } | Event::CycleStarted { .. } | Event::IdleCheckStarted { .. }
    )));
}

#[test]
fn nothing_is_typed_while_the_verdict_says_working_or_blocked() {
    // The idle confirmation went through, but by the time the step is due the session
    // works again: the step waits, and is typed once the session is idle.
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    sim.verdict(SessionState::Working, None);
    sim.advance(5_000);
    assert!(sim.typed().is_empty());
    assert!(sim.has(|e| *e
        == Event::StepDeferred {
            step: Step::Update,
            reason: "session working"
        }));
    sim.verdict(SessionState::Idle, None);
    sim.advance(70);
    assert_eq!(sim.steps_sent(), [Step::Update]);
}

#[test]
fn a_session_that_starts_waiting_for_a_human_ends_the_cycle() {
    // The update prompt made the agent ask for permission: the cycle stops there, nothing
    // is typed into the prompt, and it is left to the human.
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    sim.advance(70);
    sim.advance(10);
    sim.working();
    sim.permission_prompt();
    sim.advance(50);
    assert_eq!(sim.state(), State::SendingClear);
    sim.advance(20);
    assert!(sim.has(|e| matches!(
        e,
        Event::CycleAborted {
            reason: "session blocked",
            ..
        }
    )));
    assert_eq!(sim.state(), State::Watching);
    sim.advance(60_000);
    assert_eq!(sim.enters(), 1, "only the update's Enter");
}

#[test]
fn a_plan_menu_opened_by_a_step_is_accepted_in_watching() {
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    sim.advance(70);
    sim.advance(10);
    sim.working();
    sim.plan_menu();
    sim.advance(50 + 20);
    assert!(sim.has(|e| matches!(
        e,
        Event::CycleAborted {
            reason: "session blocked",
            ..
        }
    )));
    sim.advance(100);
    assert!(sim.has(|e| *e == Event::AutoAcceptSent { dry_run: false }));
    assert_eq!(sim.enters(), 2);
}
