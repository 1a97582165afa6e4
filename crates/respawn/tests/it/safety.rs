//! hyoka's safety rules beyond Codeman: the human-presence lock, the cycle budget, the
//! dry run, input verification, and never typing into a busy or blocked session.

use hyoka_idle_detect::{BlockedKind, SessionState};
use hyoka_respawn::{
    Action, AutoAcceptSkip, BlockReason, Event, Input, Keys, RespawnConfig, State, Step,
};

use crate::support::{Sim, ms};

fn fast() -> RespawnConfig {
    RespawnConfig {
        human_lock: ms(1_000),
        ..RespawnConfig::fast_test()
    }
}

#[test]
fn a_keystroke_aborts_the_cycle_and_holds_automation() {
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.advance(50);
    assert_eq!(sim.state(), State::SendingUpdate);
    sim.user_types();
    assert!(sim.has(|e| *e
        == Event::CycleAborted {
            cycle: 1,
            reason: "user input"
        }));
    assert!(sim.has(|e| *e
        == Event::HumanPresent {
            lock_ms: 1_000,
            via: "typed"
        }));
    assert_eq!(sim.state(), State::Watching);
    // The session goes idle again while the user is still around: blocked, not typed.
    sim.advance(10);
    sim.completion();
    sim.advance(300);
    assert!(sim.typed().is_empty());
    assert!(sim.has(|e| matches!(
        e,
        Event::Blocked {
            reason: BlockReason::HumanPresent,
            ..
        }
    )));
    // The lock runs out at 1 050; detection restarts and the cycle runs.
    sim.advance(1_100);
    assert!(sim.has(|e| *e == Event::HumanLockReleased));
    assert_eq!(sim.cycles_started(), 2);
    assert!(!sim.typed().is_empty());
}

#[test]
fn a_keystroke_blocks_auto_accept() {
    let mut sim = Sim::started(fast());
    sim.plan_menu();
    sim.user_types();
    sim.advance(200);
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::HumanPresent
        }));
    assert!(sim.typed().is_empty());
}

#[test]
fn max_cycles_stops_the_session() {
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        send_init: false,
        max_cycles: Some(2),
        ..fast()
    });
    for _ in 0..2 {
        sim.completion();
        sim.advance(50 + 70 + 10);
        sim.working();
        sim.completion();
        sim.advance(50);
    }
    assert!(sim.has(|e| *e == Event::BudgetExhausted { cycles: 2 }));
    assert!(sim.log.iter().any(|(_, a)| *a == Action::StopSession));
    assert_eq!(sim.state(), State::Stopped);
    assert_eq!(sim.m.next_deadline(), None);
}

#[test]
fn cycles_per_hour_are_capped() {
    let mut sim = Sim::started(RespawnConfig {
        send_clear: false,
        send_init: false,
        max_cycles_per_hour: Some(1),
        ..fast()
    });
    let cycle = |sim: &mut Sim| {
        sim.completion();
        sim.advance(50 + 70 + 10);
        sim.working();
        sim.completion();
        sim.advance(50);
    };
    cycle(&mut sim);
    sim.completion();
    sim.advance(50);
    assert!(sim.has(|e| matches!(
        e,
        Event::Blocked {
            reason: BlockReason::CycleRate,
            ..
        }
    )));
    assert_eq!(sim.cycles_started(), 1);
    assert_eq!(
        sim.count(|e| matches!(e, Event::Blocked { .. })),
        1,
        "no polling while rate-limited"
    );
    // An hour after the first cycle started the slot frees and detection restarts.
    sim.advance(3_600_500);
    assert_eq!(sim.cycles_started(), 2);
}

#[test]
fn a_dry_run_decides_but_never_types() {
    let mut sim = Sim::started(RespawnConfig {
        dry_run: true,
        kickstart_prompt: Some("go".to_owned()),
        max_cycles: Some(1),
        ..fast()
    });
    sim.completion();
    sim.advance(4_000);
    assert!(sim.typed().is_empty());
    // It waits as a real run would: each step in its waiting state until 50 ms of silence,
    // the kickstart after /init's 3 s watch for work. Completion at 0, idle confirmed at
    // 50, update at 70 (done 120), /clear at 140 (done 190), /init at 210 (done 260, then
    // watched until 3 260), kickstart at 3 280, done at 3 330.
    let sent_at = |step| {
        sim.when(|e| matches!(e, Event::StepSent { step: s, dry_run: true, .. } if *s == step))
    };
    assert_eq!(sent_at(Step::Update), Some(70));
    assert_eq!(sent_at(Step::Clear), Some(140));
    assert_eq!(sent_at(Step::Init), Some(210));
    assert_eq!(sent_at(Step::Kickstart), Some(3_280));
    assert_eq!(
        sim.when(|e| matches!(e, Event::BudgetExhausted { .. })),
        Some(3_330)
    );
    let sent: Vec<_> = sim
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::StepSent {
                step,
                dry_run: true,
                ..
            } => Some(step),
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        [Step::Update, Step::Clear, Step::Init, Step::Kickstart]
    );
    assert!(sim.has(|e| *e == Event::BudgetExhausted { cycles: 1 }));

    let mut sim = Sim::started(RespawnConfig {
        dry_run: true,
        ..fast()
    });
    sim.plan_menu();
    sim.advance(200);
    assert!(sim.has(|e| *e == Event::AutoAcceptSent { dry_run: true }));
    assert!(sim.typed().is_empty());
}

#[test]
fn enter_is_retried_once_then_the_delivery_is_unconfirmed() {
    // The agent never shows the text nor starts a turn; its redraws are not a new turn.
    let mut sim = Sim::started(fast());
    sim.auto_echo = false;
    sim.completion();
    sim.advance(50 + 20);
    // The text is typed; Enter waits up to `text_wait` for it to show in the box.
    assert_eq!(sim.typed().len(), 1);
    sim.advance(1_000);
    assert_eq!(sim.enters(), 1);
    sim.text("...");
    sim.advance(3_000);
    assert_eq!(sim.enters(), 2, "one retry");
    sim.text("...");
    assert_eq!(sim.state(), State::WaitingUpdate);
    assert!(!sim.has(|e| matches!(e, Event::DeliveryUnconfirmed { .. })));
    sim.advance(3_000);
    assert_eq!(sim.enters(), 2, "no second retry");
    assert!(sim.has(|e| matches!(e, Event::DeliveryUnconfirmed { .. })));
    assert_eq!(sim.state(), State::Watching);
}

#[test]
fn a_verdict_that_turns_working_counts_as_a_reaction() {
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.advance(50 + 70);
    sim.verdict(SessionState::Working, None);
    sim.advance(10_000);
    assert_eq!(sim.enters(), 1);
    assert!(!sim.has(|e| matches!(e, Event::StepRetried { .. })));
}

#[test]
fn a_plan_menu_is_accepted_but_a_permission_prompt_is_left_alone() {
    let mut sim = Sim::started(fast());
    sim.plan_menu();
    sim.advance(200);
    assert_eq!(sim.typed(), [Keys::Enter]);

    let mut sim = Sim::started(fast());
    sim.permission_prompt();
    sim.advance(60_000);
    assert!(sim.typed().is_empty());
    assert!(sim.has(|e| *e
        == Event::AutoAcceptSkipped {
            skip: AutoAcceptSkip::HumanDecision {
                kind: BlockedKind::Permission
            }
        }));
    // Idle confirmation meets the blocked verdict: no cycle either.
    assert!(sim.has(|e| matches!(
        e,
        Event::Blocked {
            reason: BlockReason::SessionBlocked,
            ..
        }
    )));
    assert_eq!(sim.cycles_started(), 0);
}

#[test]
fn the_session_exiting_stops_the_machine() {
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.send(Input::SessionExited { code: Some(0) });
    assert_eq!(sim.state(), State::Stopped);
    assert!(sim.has(|e| *e == Event::SessionExited { code: Some(0) }));
    assert_eq!(sim.m.next_deadline(), None);
}

/// A verdict of `state` decided by `signal`'s `rule`, as the detector gives it.
fn decided(
    state: SessionState,
    blocked: Option<BlockedKind>,
    signal: &'static str,
    rule: &str,
) -> Input {
    Input::Verdict(hyoka_idle_detect::Verdict {
        state,
        blocked,
        evidence: vec![hyoka_idle_detect::Evidence {
            signal,
            points_to: state,
            rule: rule.to_owned(),
            detail: String::new(),
            age_ms: 0,
            source: String::new(),
        }],
    })
}

/// The update prompt is typed at 70 and shows in the box at 80 (Enter due at 130); at 100
/// the verdict turns `working` on `rule`, as Gemini CLI 0.61's screen does just after a step
/// is typed (a child process it starts, or the echo not settled yet).
fn typed_then_unsettled(signal: &'static str, rule: &str) -> Sim {
    let mut sim = Sim::started(fast());
    sim.auto_echo = false;
    sim.completion();
    sim.advance_to(70);
    assert_eq!(sim.typed().len(), 1, "{:?}", sim.events());
    sim.advance_to(80);
    sim.verdict(SessionState::Blocked, Some(BlockedKind::Draft));
    sim.send(Input::TextShown);
    sim.advance_to(100);
    sim.send(decided(SessionState::Working, None, signal, rule));
    sim
}

// See: issue 24 (Gemini CLI's `/init` Enter was withheld on a verdict taken just after the
// echo, and the cycle was abandoned with a draft left).
#[test]
fn an_enter_held_on_an_unsettled_verdict_goes_once_the_draft_shows_again() {
    let mut sim = typed_then_unsettled("process_activity", "process/busy-children");
    // Due at 130: held, reported once, tried again every `enter_delay` on a fresh verdict.
    sim.advance_to(290);
    assert_eq!(sim.enters(), 0);
    assert_eq!(
        sim.when(|e| matches!(e, Event::EnterHeld { .. })),
        Some(130)
    );
    assert!(sim.has(|e| *e
        == Event::EnterHeld {
            step: Step::Update,
            state: SessionState::Working,
            rule: "process/busy-children".to_owned(),
        }));
    assert_eq!(sim.count(|e| matches!(e, Event::EnterHeld { .. })), 1);
    assert_eq!(sim.state(), State::SendingUpdate);
    // The screen settles at 300 with the text in the box: Enter at the next try, 330, once.
    sim.verdict(SessionState::Blocked, Some(BlockedKind::Draft));
    sim.advance_to(329);
    assert_eq!(sim.enters(), 0);
    sim.advance_to(330);
    assert_eq!(sim.enters(), 1);
    assert_eq!(sim.when(|e| matches!(e, Event::StepSent { .. })), Some(330));
    assert_eq!(sim.state(), State::WaitingUpdate);
    sim.advance_to(400);
    sim.working();
    assert!(sim.has(|e| *e
        == Event::DeliveryConfirmed {
            step: Step::Update,
            via: "working"
        }));
    sim.advance_to(5_000);
    assert_eq!(sim.enters(), 1, "{:?}", sim.events());
    assert!(!sim.has(|e| matches!(
        e,
        Event::KeysWithheld { .. } | Event::DeliveryUnconfirmed { .. } | Event::CycleAborted { .. }
    )));
}

#[test]
fn an_enter_held_on_an_unjudged_screen_goes_on_an_idle_verdict() {
    // A profile that cannot see the input box: Enter is due `text_wait` after the text.
    let mut sim = Sim::started(fast());
    sim.auto_echo = false;
    sim.completion();
    sim.advance_to(70);
    assert_eq!(sim.typed().len(), 1);
    sim.advance_to(100);
    sim.send(decided(
        SessionState::Unknown,
        None,
        "screen_rule",
        "resized",
    ));
    sim.advance_to(1_090);
    assert_eq!(sim.enters(), 0);
    assert_eq!(
        sim.when(|e| matches!(e, Event::EnterHeld { .. })),
        Some(1_070)
    );
    // Idle at 1 100: Enter at the try of 1 120.
    sim.advance_to(1_100);
    sim.verdict(SessionState::Idle, None);
    sim.advance_to(1_120);
    assert_eq!(sim.enters(), 1);
    assert_eq!(
        sim.when(|e| matches!(e, Event::StepSent { .. })),
        Some(1_120)
    );
}

#[test]
fn an_enter_held_for_verify_timeout_is_given_up_with_the_text_left() {
    let mut sim = typed_then_unsettled("silence", "stream/silence");
    // Held from 130; `verify_timeout` (3 s) later the delivery is unconfirmed.
    sim.advance_to(3_129);
    assert!(!sim.has(|e| matches!(e, Event::DeliveryUnconfirmed { .. })));
    sim.advance_to(3_130);
    assert_eq!(
        sim.when(|e| matches!(e, Event::DeliveryUnconfirmed { .. })),
        Some(3_130)
    );
    assert!(sim.has(|e| matches!(
        e,
        Event::Blocked {
            reason: BlockReason::DeliveryUnconfirmed,
            ..
        }
    )));
    assert!(sim.has(|e| matches!(e, Event::CycleAborted { .. })));
    assert_eq!(sim.state(), State::Watching);
    // Nothing more is typed on the machine's own initiative, however idle it looks.
    sim.verdict(SessionState::Idle, None);
    sim.completion();
    sim.advance_to(20_000);
    assert_eq!(sim.typed().len(), 1, "{:?}", sim.events());
}

#[test]
fn a_held_enter_never_goes_onto_a_dialog() {
    let mut sim = typed_then_unsettled("silence", "stream/silence");
    sim.advance_to(200);
    sim.send(decided(
        SessionState::Blocked,
        Some(BlockedKind::Permission),
        "screen_rule",
        "gemini/tool-approval",
    ));
    sim.advance_to(230);
    assert!(sim.has(|e| *e
        == Event::KeysWithheld {
            step: Step::Update,
            keys: "enter",
            state: SessionState::Blocked,
            blocked: Some(BlockedKind::Permission),
            rule: "gemini/tool-approval".to_owned(),
        }));
    assert!(sim.has(|e| matches!(e, Event::DeliveryUnconfirmed { .. })));
    // The dialog goes: still nothing.
    sim.verdict(SessionState::Idle, None);
    sim.advance_to(10_000);
    assert_eq!(sim.enters(), 0, "{:?}", sim.events());
}

#[test]
fn a_held_enter_is_not_pressed_once_the_text_left_the_box() {
    // Gemini CLI restarts itself after its trust dialog: the text typed into the old
    // instance is gone, and the new one shows an empty prompt.
    let mut sim = typed_then_unsettled("process_activity", "process/busy-children");
    sim.advance_to(200);
    sim.verdict(SessionState::Idle, None);
    sim.advance_to(230);
    assert_eq!(sim.enters(), 0, "{:?}", sim.events());
    assert_eq!(
        sim.when(|e| matches!(e, Event::DeliveryUnconfirmed { .. })),
        Some(230)
    );
    sim.advance_to(10_000);
    assert_eq!(sim.typed().len(), 1, "{:?}", sim.events());
}
