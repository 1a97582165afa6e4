//! `docs/respawn.md` §5a, state-transition scenarios STS-001 … STS-010, on exact
//! virtual time (Codeman's `FAST_TEST_CONFIG`: 20 ms steps, 50 ms confirmation, 300 ms
//! no-output fallback, 100 ms auto-accept, AI off).

use hyoka_idle_detect::IdleAnswer;
use hyoka_respawn::{Event, Input, Keys, RespawnConfig, State, Step, TimerName};

use crate::support::{Sim, ms};

fn fast() -> RespawnConfig {
    RespawnConfig::fast_test()
}

/// Drives one step that the session answers with work and a completion, then waits out
/// step-confirm. Returns when the next state is entered.
fn answer_with_work(sim: &mut Sim) {
    sim.advance(10);
    sim.working();
    sim.advance(40);
    sim.completion();
    sim.advance(50);
}

/// Starts a cycle the plain way: a completion, then `completion_confirm` of silence.
fn confirm_idle(sim: &mut Sim) {
    sim.advance(10);
    sim.completion();
    sim.advance(50);
}

#[test]
fn sts_001_full_cycle() {
    // t=10 completion → confirming_idle; t=60 AI check; t=70 IDLE → sending_update;
    // t=90 text, t=140 Enter → waiting_update; work, completion, 50 ms silence → clear …
    let mut config = fast();
    config.kickstart_prompt = Some("continue".to_owned());
    config.idle_check.enabled = true;
    config.idle_check.timing.timeout = ms(500);
    let mut sim = Sim::started(config);
    sim.idle.answer(10, IdleAnswer::Idle, "done");
    confirm_idle(&mut sim);
    sim.advance(10);
    assert_eq!(sim.state(), State::SendingUpdate);
    sim.advance(70);
    assert_eq!(sim.state(), State::WaitingUpdate);
    answer_with_work(&mut sim);
    assert_eq!(sim.state(), State::SendingClear);
    sim.advance(70);
    assert_eq!(sim.state(), State::WaitingClear);
    sim.advance(10);
    sim.prompt();
    assert_eq!(sim.state(), State::SendingInit);
    sim.advance(70);
    assert_eq!(sim.state(), State::WaitingInit);
    answer_with_work(&mut sim);
    assert_eq!(sim.state(), State::MonitoringInit);
    // No work within the 3 s monitoring window: kickstart.
    sim.advance(3000);
    assert_eq!(sim.state(), State::SendingKickstart);
    sim.advance(70);
    assert_eq!(sim.state(), State::WaitingKickstart);
    answer_with_work(&mut sim);
    assert_eq!(sim.state(), State::Watching);

    assert_eq!(
        sim.states(),
        [
            State::Stopped,
            State::Watching,
            State::ConfirmingIdle,
            State::AiChecking,
            State::SendingUpdate,
            State::WaitingUpdate,
            State::SendingClear,
            State::WaitingClear,
            State::SendingInit,
            State::WaitingInit,
            State::MonitoringInit,
            State::SendingKickstart,
            State::WaitingKickstart,
            State::Watching,
        ]
    );
    let all = [Step::Update, Step::Clear, Step::Init, Step::Kickstart];
    assert_eq!(sim.steps_sent(), all);
    assert_eq!(sim.steps_completed(), all);
    assert_eq!(sim.m.cycles(), 1);
    assert!(sim.has(|e| matches!(e, Event::CycleCompleted { cycle: 1 })));
    assert_eq!(
        sim.typed(),
        [
            Keys::Text(hyoka_respawn::DEFAULT_UPDATE_PROMPT.to_owned()),
            Keys::Enter,
            Keys::Text("/clear".to_owned()),
            Keys::Enter,
            Keys::Text("/init".to_owned()),
            Keys::Enter,
            Keys::Text("continue".to_owned()),
            Keys::Enter,
        ]
    );
    // Text and Enter are separate writes, `enter_delay` (50 ms) apart.
    let typed_at: Vec<u64> = sim
        .log
        .iter()
        .filter(|(_, a)| matches!(a, hyoka_respawn::Action::Type(_)))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(typed_at[0], 90);
    assert_eq!(typed_at[1], 140);
}

#[test]
fn sts_002_no_clear() {
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        ..fast()
    });
    confirm_idle(&mut sim);
    sim.advance(70);
    answer_with_work(&mut sim);
    assert_eq!(sim.state(), State::SendingInit);
    assert!(!sim.steps_sent().contains(&Step::Clear));
    assert!(!sim.states().contains(&State::SendingClear));
}

#[test]
fn sts_003_no_init() {
    let mut sim = Sim::started(RespawnConfig {
        send_init: false,
        ..fast()
    });
    confirm_idle(&mut sim);
    sim.advance(70);
    answer_with_work(&mut sim);
    sim.advance(70);
    sim.advance(10);
    sim.prompt();
    assert_eq!(sim.state(), State::Watching);
    assert!(sim.has(|e| matches!(e, Event::CycleCompleted { cycle: 1 })));
    assert!(!sim.steps_sent().contains(&Step::Init));
    assert!(!sim.states().contains(&State::MonitoringInit));
}

#[test]
fn sts_004_no_clear_no_init() {
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        send_init: false,
        ..fast()
    });
    confirm_idle(&mut sim);
    sim.advance(70);
    answer_with_work(&mut sim);
    assert_eq!(sim.state(), State::Watching);
    assert_eq!(sim.steps_sent(), [Step::Update]);
    assert_eq!(sim.steps_completed(), [Step::Update]);
}

#[test]
fn sts_005_work_during_monitoring_init() {
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        kickstart_prompt: Some("continue".to_owned()),
        ..fast()
    });
    confirm_idle(&mut sim);
    sim.advance(70);
    answer_with_work(&mut sim);
    sim.advance(70);
    answer_with_work(&mut sim);
    assert_eq!(sim.state(), State::MonitoringInit);
    sim.advance(500);
    sim.working();
    assert_eq!(sim.state(), State::Watching);
    assert!(sim.has(|e| matches!(
        e,
        Event::StepCompleted {
            step: Step::Init,
            via: "work started"
        }
    )));
    assert!(!sim.states().contains(&State::SendingKickstart));
}

#[test]
fn sts_006_stop_during_the_update_delay() {
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    assert_eq!(sim.state(), State::SendingUpdate);
    sim.advance(10);
    sim.send(Input::Stop);
    sim.advance(10_000);
    assert!(sim.steps_sent().is_empty());
    assert!(sim.typed().is_empty());
    assert_eq!(sim.state(), State::Stopped);
    assert_eq!(sim.m.next_deadline(), None, "no timers remain");
}

#[test]
fn sts_007_clear_fallback() {
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    sim.advance(70);
    answer_with_work(&mut sim);
    sim.advance(70);
    assert_eq!(sim.state(), State::WaitingClear);
    let entered = sim.t();
    // The session reacts (so the Enter counts) but shows neither prompt nor completion.
    sim.advance(5);
    sim.text("…");
    sim.advance(10_000);
    assert!(sim.has(|e| matches!(
        e,
        Event::StepCompleted {
            step: Step::Clear,
            via: "clear fallback"
        }
    )));
    assert_eq!(
        sim.when(|e| matches!(
            e,
            Event::StepCompleted {
                step: Step::Clear,
                ..
            }
        )),
        Some(entered + 10_000)
    );
    assert_eq!(sim.state(), State::SendingInit);

    // Without /init the same fallback completes the cycle.
    let mut sim = Sim::started(RespawnConfig {
        send_init: false,
        ..fast()
    });
    confirm_idle(&mut sim);
    sim.advance(70);
    answer_with_work(&mut sim);
    sim.advance(70);
    sim.advance(5);
    sim.text("…");
    sim.advance(10_000);
    assert!(sim.has(|e| matches!(
        e,
        Event::StepCompleted {
            via: "clear fallback",
            ..
        }
    )));
    assert!(sim.has(|e| matches!(e, Event::CycleCompleted { cycle: 1 })));
}

#[test]
fn sts_008_clear_fallback_cancelled() {
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    sim.advance(70);
    answer_with_work(&mut sim);
    sim.advance(70);
    sim.advance(10);
    sim.completion();
    assert!(sim.has(|e| matches!(
        e,
        Event::TimerCancelled {
            timer: TimerName::ClearFallback,
            reason: "prompt detected"
        }
    )));
    assert!(sim.has(|e| matches!(
        e,
        Event::StepCompleted {
            step: Step::Clear,
            via: "prompt detected"
        }
    )));
    assert_eq!(sim.state(), State::SendingInit);
}

#[test]
fn sts_009_rapid_completion_working_alternation() {
    let mut sim = Sim::started(fast());
    for _ in 0..10 {
        sim.advance(5);
        sim.completion();
        assert_eq!(sim.state(), State::ConfirmingIdle);
        assert!(sim.timer_armed(TimerName::CompletionConfirm));
        sim.advance(5);
        sim.working();
        assert_eq!(sim.state(), State::Watching);
        assert!(!sim.timer_armed(TimerName::CompletionConfirm));
    }
    let states = sim.states();
    assert!(states.windows(2).all(|w| w[0] != w[1]), "{states:?}");
    assert_eq!(sim.cycles_started(), 0);
}

#[test]
fn sts_010_resume_from_a_non_watching_state() {
    // Codeman: resume outside watching changes nothing and restarts no timer, so a step
    // paused in sending_* is never sent. hyoka: the state is kept, no idle check runs, and
    // the step's own timer starts again, so the step is sent after the delay.
    let mut sim = Sim::started(fast());
    confirm_idle(&mut sim);
    assert_eq!(sim.state(), State::SendingUpdate);
    sim.send(Input::Pause);
    assert_eq!(sim.m.next_deadline(), None);
    sim.advance(1_000);
    assert!(sim.typed().is_empty(), "nothing typed while paused");
    sim.send(Input::Resume);
    assert_eq!(sim.state(), State::SendingUpdate);
    assert!(!sim.has(|e| matches!(e, Event::IdleCheckStarted { .. })));
    sim.advance(70);
    assert_eq!(sim.steps_sent(), [Step::Update]);
    assert_eq!(sim.state(), State::WaitingUpdate);
}
