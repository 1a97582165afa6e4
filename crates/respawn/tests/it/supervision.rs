//! Supervision a person can leave running (issue 16), on exact virtual timelines: verified
//! delivery, sends through the controller, a person's draft, people attached, cycles per
//! agent, supervision without cycles.

use hyoka_idle_detect::{BlockedKind, SessionState};
use hyoka_respawn::{
    Action, BlockReason, Event, Input, Keys, Refusal, RespawnConfig, SendOutcome, State, Step,
};

use crate::support::Sim;

fn fast() -> RespawnConfig {
    RespawnConfig::fast_test()
}

/// An idle session that drew its prompt at t=0, with cycles off so only sends type.
fn idle_no_cycle() -> Sim {
    let mut sim = Sim::started(RespawnConfig {
        cycle: false,
        ..fast()
    });
    sim.prompt();
    sim
}

fn send(sim: &mut Sim, id: u64, text: &str, queue: bool) {
    sim.send(Input::Send {
        id,
        text: text.to_owned(),
        queue,
    });
}

/// How send `id` ended, if it did.
fn outcome(sim: &Sim, id: u64) -> Option<SendOutcome> {
    sim.log.iter().find_map(|(_, a)| match a {
        Action::SendDone { id: i, outcome } if *i == id => Some(*outcome),
        _ => None,
    })
}

#[test]
fn a_send_into_an_idle_session_is_typed_then_confirmed() {
    let mut sim = idle_no_cycle();
    send(&mut sim, 1, "fix the lint\nwarnings", false);
    // Newlines become spaces; the text goes first, Enter as a separate write.
    assert_eq!(
        sim.typed(),
        [Keys::Text("fix the lint warnings".to_owned())]
    );
    assert_eq!(outcome(&sim, 1), None);
    sim.advance(50);
    assert_eq!(sim.enters(), 1);
    // The simulated agent echoed the text: delivered.
    assert_eq!(outcome(&sim, 1), Some(SendOutcome::Delivered));
    assert!(sim.has(|e| *e
        == Event::DeliveryConfirmed {
            step: Step::Send,
            via: "echo"
        }));
}

#[test]
fn a_send_is_confirmed_by_work_too() {
    let mut sim = idle_no_cycle();
    sim.auto_echo = false;
    send(&mut sim, 1, "go", false);
    sim.advance(1_000);
    assert_eq!(sim.enters(), 1, "Enter after text_wait");
    assert_eq!(outcome(&sim, 1), None);
    sim.working();
    assert_eq!(outcome(&sim, 1), Some(SendOutcome::Delivered));
}

#[test]
fn a_send_is_refused_with_nothing_typed() {
    for (state, blocked, reason) in [
        (SessionState::Working, None, Refusal::Working),
        (
            SessionState::Blocked,
            Some(BlockedKind::Permission),
            Refusal::Blocked,
        ),
        (
            SessionState::Blocked,
            Some(BlockedKind::Draft),
            Refusal::Draft,
        ),
        (SessionState::Unknown, None, Refusal::Unknown),
    ] {
        let mut sim = idle_no_cycle();
        sim.verdict(state, blocked);
        send(&mut sim, 7, "hello", false);
        assert_eq!(outcome(&sim, 7), Some(SendOutcome::Refused(reason)));
        assert!(sim.typed().is_empty(), "{state:?} {blocked:?}");
    }
    // A person typed a moment ago.
    let mut sim = idle_no_cycle();
    sim.user_types();
    send(&mut sim, 1, "hello", false);
    assert_eq!(
        outcome(&sim, 1),
        Some(SendOutcome::Refused(Refusal::HumanPresent))
    );
    // A cycle runs.
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.advance(60);
    assert_eq!(sim.state(), State::SendingUpdate);
    send(&mut sim, 1, "hello", false);
    assert_eq!(
        outcome(&sim, 1),
        Some(SendOutcome::Refused(Refusal::CycleRunning))
    );
    // A dry run types nothing, and says so.
    let mut sim = Sim::started(RespawnConfig {
        dry_run: true,
        ..fast()
    });
    send(&mut sim, 1, "hello", false);
    assert_eq!(
        outcome(&sim, 1),
        Some(SendOutcome::Refused(Refusal::DryRun))
    );
    assert!(sim.typed().is_empty());
}

#[test]
fn a_queued_send_waits_until_the_session_is_idle() {
    let mut sim = idle_no_cycle();
    sim.verdict(SessionState::Working, None);
    send(&mut sim, 3, "next task", true);
    assert!(sim.has(|e| *e
        == Event::SendQueued {
            id: 3,
            reason: Refusal::Working
        }));
    sim.advance(5_000);
    assert!(sim.typed().is_empty());
    // Idle from t=5000: the next look (every 250 ms) delivers it.
    sim.verdict(SessionState::Idle, None);
    sim.advance(250);
    assert_eq!(sim.typed(), [Keys::Text("next task".to_owned())]);
    sim.advance(50);
    assert_eq!(outcome(&sim, 3), Some(SendOutcome::Delivered));
}

#[test]
fn a_queued_send_goes_before_a_cycle_and_is_refused_when_stopped() {
    let mut sim = Sim::started(fast());
    sim.verdict(SessionState::Working, None);
    send(&mut sim, 1, "mine first", true);
    sim.verdict(SessionState::Idle, None);
    sim.completion();
    sim.advance(300);
    assert_eq!(
        sim.typed().first(),
        Some(&Keys::Text("mine first".to_owned()))
    );
    assert_eq!(outcome(&sim, 1), Some(SendOutcome::Delivered));
    // Stopping refuses what still waits.
    let mut sim = idle_no_cycle();
    sim.verdict(SessionState::Working, None);
    send(&mut sim, 2, "later", true);
    sim.send(Input::Stop);
    assert_eq!(
        outcome(&sim, 2),
        Some(SendOutcome::Refused(Refusal::Stopped))
    );
}

#[test]
fn an_unconfirmed_send_is_reported_after_one_retry() {
    let mut sim = idle_no_cycle();
    sim.auto_echo = false;
    send(&mut sim, 1, "hello", false);
    sim.advance(1_000 + 3_000 + 3_000);
    assert_eq!(sim.enters(), 2);
    assert_eq!(outcome(&sim, 1), Some(SendOutcome::Unconfirmed));
    assert!(sim.has(|e| matches!(
        e,
        Event::DeliveryUnconfirmed {
            step: Step::Send,
            ..
        }
    )));
}

#[test]
fn a_draft_is_never_typed_over_and_the_cycle_resumes_when_it_is_cleared() {
    // Issue 12: `❯ please also fix the lint warnings` sits unsent in the box.
    let mut sim = Sim::started(fast());
    sim.verdict(SessionState::Blocked, Some(BlockedKind::Draft));
    sim.completion();
    sim.advance(600_000);
    assert!(sim.typed().is_empty(), "{:?}", sim.typed());
    assert!(sim.has(|e| matches!(
        e,
        Event::Blocked { reason: BlockReason::SessionBlocked, details }
            if details.contains("draft")
    )));
    // The person clears the box (their keystrokes are output); idle again: the cycle runs.
    sim.verdict(SessionState::Idle, None);
    sim.text("❯ ");
    sim.completion();
    sim.advance(100);
    assert!(matches!(sim.typed().first(), Some(Keys::Text(t)) if t.contains("progress summary")));
}

#[test]
fn a_draft_that_appears_between_steps_ends_the_cycle() {
    let mut sim = Sim::started(fast());
    sim.completion();
    sim.advance(200);
    assert_eq!(sim.state(), State::WaitingUpdate);
    let typed = sim.typed().len();
    // The update step is done; before /clear is typed a person starts a draft.
    sim.completion();
    sim.verdict(SessionState::Blocked, Some(BlockedKind::Draft));
    sim.advance(1_000);
    assert_eq!(sim.typed().len(), typed, "nothing typed into the draft");
    assert!(sim.has(|e| matches!(
        e,
        Event::CycleAborted {
            reason: "session blocked",
            ..
        }
    )));
}

#[test]
fn a_person_attached_holds_automation_until_they_leave_plus_the_lock() {
    // Another tmux client attached from t=0 to t=5000 (seen every 500 ms); the lock is 1 s.
    let mut sim = Sim::started(RespawnConfig {
        human_lock: std::time::Duration::from_secs(1),
        ..fast()
    });
    for _ in 0..=10 {
        sim.send(Input::PersonAttached);
        sim.completion();
        sim.advance(500);
    }
    assert!(sim.typed().is_empty());
    assert!(sim.has(|e| matches!(
        e,
        Event::HumanPresent {
            via: "attached",
            ..
        }
    )));
    assert_eq!(
        sim.count(|e| matches!(e, Event::HumanPresent { .. })),
        1,
        "one episode"
    );
    // Last seen at 5000; the lock ends at 6000, then the cycle may run.
    sim.advance_to(5_900);
    assert!(sim.typed().is_empty());
    sim.advance_to(6_000);
    sim.completion();
    sim.advance(100);
    assert!(!sim.typed().is_empty());
    assert!(sim.when(|e| matches!(e, Event::StepTyped { .. })).unwrap() >= 6_000);
}

#[test]
fn cycles_come_from_the_agents_cli() {
    let typed_texts = |profile: &str| {
        // The fast timings, with the agent's steps.
        let mut config = fast();
        hyoka_respawn::AgentCycle::for_profile(profile).apply(&mut config);
        config.max_cycles = Some(1);
        assert_eq!(
            RespawnConfig::for_agent(profile).update_prompt,
            config.update_prompt
        );
        let mut sim = Sim::started(config);
        sim.completion();
        for _ in 0..20 {
            sim.advance(100);
            sim.completion();
        }
        sim.typed()
            .into_iter()
            .filter_map(|k| match k {
                Keys::Text(t) => Some(t),
                Keys::Enter => None,
            })
            .collect::<Vec<_>>()
    };
    let claude = typed_texts("claude-code");
    assert_eq!(claude[1..], ["/clear", "/init"]);
    assert!(claude[0].contains("CLAUDE.md"));
    let codex = typed_texts("codex");
    assert_eq!(codex[1..], ["/clear", "/init"]);
    assert!(codex[0].contains("AGENTS.md"));
    // Aider has no memory to read back after a clear: the update prompt alone, no /init,
    // no CLAUDE.md.
    for profile in ["aider", "generic"] {
        let texts = typed_texts(profile);
        assert_eq!(texts.len(), 1, "{profile}: {texts:?}");
        assert!(
            texts
                .iter()
                .all(|t| !t.contains("CLAUDE.md") && !t.contains("/init"))
        );
    }
}

#[test]
fn without_cycles_idle_is_reported_once_and_nothing_is_typed() {
    let mut sim = Sim::started(RespawnConfig {
        cycle: false,
        ..fast()
    });
    sim.completion();
    sim.advance(10_000);
    assert!(sim.typed().is_empty());
    assert_eq!(
        sim.count(|e| matches!(e, Event::IdleConfirmed { .. })),
        1,
        "{:#?}",
        sim.events()
    );
    assert!(!sim.has(|e| matches!(e, Event::CycleStarted { .. })));
}
