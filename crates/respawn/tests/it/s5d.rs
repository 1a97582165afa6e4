//! `docs/respawn.md` §5d, the code-derived quirks (106–116): each decision (fixed or
//! reproduced, see the crate docs) as a test against the machine. 106 (the working-window
//! blind spot) is a property of the detector and is tested in `model`; 116 (literal
//! insertion into the checker prompt) in `checks`.

use std::time::Duration;

use hyoka_idle_detect::{ChunkSignals, HookEvent, IdleAnswer, SessionState};
use hyoka_respawn::{
    BlockReason, CheckSkip, Event, FnGate, Input, Keys, RespawnConfig, State, Step, TimerName,
};

use crate::support::{Sim, ms};

fn fast() -> RespawnConfig {
    RespawnConfig::fast_test()
}

#[test]
fn d107_completion_flag_cleared_when_a_cycle_completes() {
    // Fixed: a completion seen in waiting_update no longer blocks the next auto-accept.
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        send_init: false,
        ..fast()
    });
    sim.completion();
    sim.advance(50 + 70);
    sim.advance(10);
    sim.working();
    sim.completion();
    sim.advance(50);
    assert!(sim.has(|e| matches!(e, Event::CycleCompleted { cycle: 1 })));
    sim.plan_menu();
    sim.advance(100);
    assert!(sim.has(|e| *e == Event::AutoAcceptSent { dry_run: false }));
}

#[test]
fn d108_no_detection_interval_to_lose() {
    // Fixed by design: there is no 2 s interval that dies at the first cycle; status is
    // computed on demand, before and after cycles alike.
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        send_init: false,
        ..fast()
    });
    sim.completion();
    sim.advance(50 + 70 + 10);
    sim.completion();
    sim.advance(50);
    let status = sim.m.status(sim.now);
    assert_eq!((status.state, status.cycles), (State::Watching, 1));
    assert_eq!(status.silence, Some(ms(50)));
}

#[test]
fn d109_pause_is_real() {
    // Fixed: output during a pause re-arms nothing, nothing is typed, and resume re-arms.
    let mut sim = Sim::started(fast());
    sim.send(Input::Pause);
    for _ in 0..10 {
        sim.completion();
        sim.plan_menu();
        sim.advance(1_000);
    }
    assert!(sim.typed().is_empty());
    assert!(sim.m.active_timers(sim.now).is_empty());
    assert_eq!(sim.state(), State::Watching);
    sim.verdict(SessionState::Idle, None);
    sim.send(Input::Resume);
    assert!(sim.timer_armed(TimerName::NoOutputFallback));
    sim.advance(300);
    assert_eq!(sim.cycles_started(), 1);
}

#[test]
fn d110_no_dead_end_in_confirming_idle() {
    // Fixed: in confirming_idle an AI cooldown or a working verdict sends the machine back
    // to watching with its timers armed, so idle is found again without new output.
    let mut config = RespawnConfig::fast_test_with_ai();
    config.plan_check.enabled = false;
    config.working_absence = ms(0);
    let mut sim = Sim::started(config);
    sim.idle.answer(5, IdleAnswer::Working, "busy"); // cooldown 200
    sim.idle.answer(5, IdleAnswer::Idle, "done");
    sim.completion();
    sim.advance(55); // WORKING at 55; cooldown until 255.
    sim.completion(); // confirming_idle again at 55; its timer fires at 105 (cooldown).
    sim.advance(50);
    assert!(sim.has(|e| matches!(
        e,
        Event::IdleCheckSkipped {
            skip: CheckSkip::Cooldown { .. }
        }
    )));
    assert_eq!(sim.state(), State::Watching);
    // The cooldown ends at 255, the pre-filter restarts and starts check 2 at 305.
    sim.advance(300);
    assert_eq!(sim.idle.started.len(), 2);
    assert_eq!(sim.cycles_started(), 1);

    // The working verdict (Codeman's isWorking) in confirming_idle.
    let mut sim = Sim::started(fast());
    sim.verdict(SessionState::Working, None);
    sim.completion();
    sim.advance(50);
    assert!(sim.has(|e| *e
        == Event::IdleCheckSkipped {
            skip: CheckSkip::SessionWorking
        }));
    assert_eq!(sim.state(), State::Watching);
    assert!(sim.timer_armed(TimerName::NoOutputFallback));
    sim.verdict(SessionState::Idle, None);
    sim.advance(300);
    assert_eq!(sim.cycles_started(), 1, "found again with no new output");
}

#[test]
fn d111_stop_hook_survives_a_prompt_redraw() {
    // Fixed: a prompt-box redraw after the Stop hook does not abort it; real output does.
    let config = RespawnConfig {
        no_output_timeout: ms(60_000),
        ..fast()
    };
    let mut sim = Sim::started(config.clone());
    sim.text("done");
    sim.hook(HookEvent::Stop);
    sim.advance(500);
    sim.prompt();
    sim.out(ChunkSignals {
        prompt: true,
        substantial: true,
        ..ChunkSignals::default()
    });
    sim.advance(3_000);
    assert_eq!(sim.cycles_started(), 1);

    let mut sim = Sim::started(config);
    sim.text("done");
    sim.hook(HookEvent::Stop);
    sim.advance(500);
    sim.text("Here is more of the answer");
    sim.advance(3_000);
    assert_eq!(sim.cycles_started(), 0);
}

#[test]
fn d112_blocks_leave_detection_armed() {
    // Fixed: after any refusal the no-output fallback is armed, so once the gate opens the
    // cycle starts without waiting for new output.
    let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gate_open = std::sync::Arc::clone(&open);
    let mut sim = Sim::started(fast());
    sim.m.add_gate(Box::new(FnGate::new("breaker", move |_| {
        (!gate_open.load(std::sync::atomic::Ordering::SeqCst))
            .then(|| "circuit breaker open".to_owned())
    })));
    sim.completion();
    sim.advance(50);
    assert!(sim.has(|e| matches!(
        e,
        Event::Blocked {
            reason: BlockReason::Gate,
            ..
        }
    )));
    assert!(sim.timer_armed(TimerName::NoOutputFallback));
    open.store(true, std::sync::atomic::Ordering::SeqCst);
    sim.advance(300);
    assert_eq!(sim.cycles_started(), 1);
}

#[test]
fn d113_no_forced_idle_after_ten_minutes_of_work() {
    // Fixed: twelve minutes of continuous working output never force a cycle, and
    // watching is never "stuck".
    let mut sim = Sim::started(RespawnConfig::default());
    sim.verdict(SessionState::Working, None);
    for _ in 0..(12 * 60) {
        sim.working();
        sim.advance(1_000);
    }
    assert_eq!(sim.cycles_started(), 0);
    assert!(!sim.has(|e| matches!(e, Event::StuckRecovery { .. } | Event::StuckWarning { .. })));

    // Stuck in confirming_idle/ai_checking: recovery returns to watching, no forced idle.
    let mut config = RespawnConfig::default();
    config.idle_check.timing.timeout = Duration::from_hours(1);
    config.plan_check.enabled = false;
    let mut sim = Sim::started(config);
    sim.text("hello");
    sim.completion();
    sim.advance(10_000); // AI check starts and never answers.
    assert_eq!(sim.state(), State::AiChecking);
    sim.advance(600_000);
    assert!(sim.has(|e| matches!(
        e,
        Event::StuckRecovery {
            state: State::AiChecking,
            attempt: 1,
            ..
        }
    )));
    assert_eq!(sim.cycles_started(), 0);
    assert_eq!(sim.state(), State::Watching);
}

#[test]
fn d113_stuck_cycle_states_recover() {
    // Reproduced: warning at 5 min, recovery at 10 min; a stuck waiting_* completes the
    // cycle.
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.advance(50 + 70);
    sim.advance(10);
    sim.working(); // The update runs, and runs.
    sim.verdict(SessionState::Working, None);
    let entered = sim.when(|e| {
        *e == Event::StateChanged {
            from: State::SendingUpdate,
            to: State::WaitingUpdate,
        }
    });
    sim.advance(600_000);
    assert_eq!(
        sim.when(|e| matches!(e, Event::StuckWarning { .. })),
        entered.map(|t| t + 300_000)
    );
    assert_eq!(
        sim.when(|e| matches!(e, Event::StuckRecovery { .. })),
        entered.map(|t| t + 600_000)
    );
    assert!(sim.has(|e| matches!(e, Event::CycleCompleted { cycle: 1 })));
    assert_eq!(sim.state(), State::Watching);
}

#[test]
fn d114_clear_is_not_skipped_by_default() {
    // Fixed default: /clear is sent whatever the token count; the skip is opt-in.
    let run = |skip: Option<u64>| {
        let mut sim = Sim::started(RespawnConfig {
            skip_clear_below_tokens: skip,
            ..fast()
        });
        sim.tokens(30_000);
        sim.completion();
        sim.advance(50 + 70 + 10);
        sim.working();
        sim.completion();
        sim.advance(50);
        sim
    };
    assert_eq!(run(None).state(), State::SendingClear);
    let sim = run(Some(60_000));
    assert_eq!(sim.state(), State::SendingInit);
    assert!(sim.has(|e| *e
        == Event::StepSkipped {
            step: Step::Clear,
            reason: "low context"
        }));
}

#[test]
fn d115_multi_line_prompts_keep_word_boundaries() {
    // Fixed: newlines become spaces (Codeman's tmux path glued the lines together).
    let mut sim = Sim::started(RespawnConfig {
        update_prompt: "summarise your work\nthen continue".to_owned(),
        ..fast()
    });
    sim.completion();
    sim.advance(50 + 70);
    assert_eq!(
        sim.typed()[0],
        Keys::Text("summarise your work then continue".to_owned())
    );
}

#[test]
fn s4_race_plan_check_and_idle_check_are_serialized() {
    // Codeman: auto-accept (8 s) starts a plan check, the pre-filter (10 s) then starts an
    // idle check, the state becomes ai_checking and the PLAN_MODE result is dropped.
    // hyoka: the idle check waits for the plan check; PLAN_MODE is accepted.
    let mut config = RespawnConfig::fast_test_with_ai();
    config.working_absence = ms(0);
    config.completion_confirm = ms(150);
    let run = |plan: hyoka_idle_detect::PlanAnswer| {
        let mut sim = Sim::started(config.clone());
        sim.plan.answer(200, plan, "slow opus");
        sim.idle
            .answer(10, IdleAnswer::Working, "a menu counts as working");
        sim.plan_menu(); // Auto-accept at 100, pre-filter at 150.
        sim.advance(400);
        sim
    };
    let sim = run(hyoka_idle_detect::PlanAnswer::PlanMode);
    assert!(sim.has(|e| *e
        == Event::IdleCheckSkipped {
            skip: CheckSkip::PlanCheckRunning
        }));
    assert!(sim.has(|e| *e == Event::AutoAcceptSent { dry_run: false }));
    assert!(
        sim.idle.started.is_empty(),
        "no idle check raced the plan check"
    );
    // With NOT_PLAN_MODE the deferred idle check runs right after.
    let sim = run(hyoka_idle_detect::PlanAnswer::NotPlanMode);
    assert_eq!(sim.idle.started.len(), 1);
    assert_eq!(
        sim.when(|e| matches!(e, Event::IdleCheckStarted { .. })),
        Some(300)
    );
    assert!(sim.typed().is_empty());
}
