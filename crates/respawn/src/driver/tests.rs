//! The driver against the in-memory fake terminal on tokio's paused clock (no real I/O, so
//! auto-advance cannot race anything): a scripted agent that reacts to what is typed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    CheckError, CheckReply, Detector, DetectorConfig, HookEvent, IdleAnswer, IdleChecker,
    ProcessActivity, Profile,
};
use tokio::sync::mpsc;

use super::{AiCheckers, Driver, DriverInputs, DriverOptions, Observer, Report, SessionEnd};
use crate::event::{Event, Step};
use crate::terminal::{FakeHandle, FakeTerminal, Written};
use crate::{DetectorModel, Exit, Machine, RespawnConfig};

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn screen(top: &str) -> Vec<u8> {
    screen_with(top, "")
}

/// A screen with `input` typed into the prompt box.
fn screen_with(top: &str, input: &str) -> Vec<u8> {
    format!("\x1b[2J\x1b[H{top}\r\n────────\r\n❯ {input}\r\n────────\r\n").into_bytes()
}

fn done() -> Vec<u8> {
    screen("✻ Worked for 0m 1s")
}

fn busy() -> Vec<u8> {
    screen("✢ Thinking… (1s · esc to interrupt)")
}

/// An agent that shows typed text in its input box and answers each Enter with a second
/// of work and a completion; `/clear` empties the screen but for the command it ran.
async fn agent(handle: FakeHandle) {
    handle.output(done());
    let mut seen = 0;
    let mut last_text = String::new();
    loop {
        tokio::time::sleep(ms(10)).await;
        let written = handle.written();
        for w in &written[seen..] {
            match w {
                Written::Text(text) => {
                    last_text.clone_from(text);
                    handle.output(screen_with("✻ Worked for 0m 1s", text));
                }
                Written::Enter if last_text == "/clear" => handle.output(screen("> /clear")),
                Written::Enter => {
                    handle.output(busy());
                    tokio::time::sleep(ms(1_000)).await;
                    handle.output(done());
                }
                _ => {}
            }
        }
        seen = written.len();
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(Instant, Event)>>>);

impl Observer for Recorder {
    fn event(&mut self, at: Instant, event: &Event) {
        self.0.lock().unwrap().push((at, event.clone()));
    }
}

impl Recorder {
    fn events(&self) -> Vec<Event> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, e)| e.clone())
            .collect()
    }
}

fn model() -> DetectorModel {
    let profile = Profile::builtin("claude-code").expect("built-in profile");
    DetectorModel::new(Detector::new(profile, DetectorConfig::default()))
}

fn config() -> RespawnConfig {
    let mut config = RespawnConfig {
        completion_confirm: ms(500),
        no_output_timeout: ms(5_000),
        inter_step_delay: ms(200),
        verify_timeout: ms(2_000),
        max_cycles: Some(1),
        ..RespawnConfig::default()
    };
    config.idle_check.enabled = false;
    config.plan_check.enabled = false;
    config
}

struct Run {
    report: Report,
    written: Vec<Written>,
    events: Vec<Event>,
    stops: u32,
}

async fn run(
    config: RespawnConfig,
    inputs: DriverInputs,
    checkers: AiCheckers,
    script: impl FnOnce(FakeHandle) -> tokio::task::JoinHandle<()>,
    shutdown_after: Duration,
) -> Run {
    let (terminal, handle) = FakeTerminal::new(Some(4242));
    let recorder = Recorder::default();
    let driver = Driver::new(
        Machine::new(config),
        terminal,
        model(),
        recorder.clone(),
        checkers,
        DriverOptions::default(),
    );
    let agent = script(handle.clone());
    let report = driver
        .run(inputs, tokio::time::sleep(shutdown_after))
        .await
        .unwrap();
    agent.abort();
    let _ = agent.await;
    Run {
        report,
        written: handle.written(),
        events: recorder.events(),
        stops: handle.stops(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_cycle_through_the_driver() {
    // t=0 the agent shows a completion; 500 ms of silence confirm it; the update is typed
    // at 700 (text) and 750 (Enter); the agent works 1 s; /clear, /init follow the same way.
    let run = run(
        config(),
        DriverInputs::default(),
        AiCheckers::default(),
        |h| tokio::spawn(agent(h)),
        Duration::from_mins(1),
    )
    .await;
    assert_eq!(run.report.end, SessionEnd::BudgetExhausted { cycles: 1 });
    assert_eq!(
        run.written,
        [
            Written::Text(crate::DEFAULT_UPDATE_PROMPT.to_owned()),
            Written::Enter,
            Written::Text("/clear".to_owned()),
            Written::Enter,
            Written::Text("/init".to_owned()),
            Written::Enter,
        ]
    );
    let steps: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::StepCompleted { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [Step::Update, Step::Clear, Step::Init]);
    assert_eq!(run.stops, 1, "the session is stopped exactly once");
}

#[tokio::test(start_paused = true)]
async fn nothing_is_typed_into_a_busy_session() {
    // The agent is stuck on a spinner: completion lines never come, the verdict is working.
    let run = run(
        config(),
        DriverInputs::default(),
        AiCheckers::default(),
        |h| {
            tokio::spawn(async move {
                loop {
                    h.output(busy());
                    tokio::time::sleep(ms(2_000)).await;
                }
            })
        },
        Duration::from_mins(2),
    )
    .await;
    assert!(run.written.is_empty(), "{:?}", run.written);
    assert_eq!(run.report.end, SessionEnd::Interrupted);
}

#[tokio::test(start_paused = true)]
async fn a_dry_run_types_nothing() {
    let run = run(
        RespawnConfig {
            dry_run: true,
            ..config()
        },
        DriverInputs::default(),
        AiCheckers::default(),
        |h| tokio::spawn(agent(h)),
        Duration::from_mins(1),
    )
    .await;
    assert!(run.written.is_empty());
    assert_eq!(run.report.end, SessionEnd::BudgetExhausted { cycles: 1 });
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::StepSent { dry_run: true, .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn the_users_keys_are_forwarded_and_hold_automation() {
    let (tx, rx) = mpsc::channel(8);
    let inputs = DriverInputs {
        keys: Some(rx),
        ..DriverInputs::default()
    };
    let run = run(
        RespawnConfig {
            human_lock: Duration::from_mins(10),
            ..config()
        },
        inputs,
        AiCheckers::default(),
        move |h| {
            tokio::spawn(async move {
                h.output(done());
                tx.send(b"hi".to_vec()).await.unwrap();
                std::future::pending::<()>().await;
            })
        },
        Duration::from_mins(1),
    )
    .await;
    assert_eq!(run.written, [Written::Raw(b"hi".to_vec())]);
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::HumanPresent { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn an_idle_prompt_hook_starts_a_cycle_at_once() {
    let (tx, rx) = mpsc::channel(8);
    let inputs = DriverInputs {
        hooks: Some(rx),
        ..DriverInputs::default()
    };
    let run = run(
        RespawnConfig {
            completion_confirm: Duration::from_secs(30),
            no_output_timeout: Duration::from_secs(30),
            ..config()
        },
        inputs,
        AiCheckers::default(),
        move |h| {
            tokio::spawn(async move {
                h.output(screen("ready"));
                tokio::time::sleep(ms(100)).await;
                tx.send(HookEvent::IdlePrompt).await.unwrap();
                std::future::pending::<()>().await;
            })
        },
        Duration::from_secs(1),
    )
    .await;
    assert!(run.events.iter().any(|e| matches!(
        e,
        Event::HookReceived {
            hook: HookEvent::IdlePrompt,
            accepted: true
        }
    )));
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::CycleStarted { cycle: 1 }))
    );
}

#[tokio::test(start_paused = true)]
async fn the_session_ending_ends_the_loop() {
    let run = run(
        config(),
        DriverInputs::default(),
        AiCheckers::default(),
        |h| {
            tokio::spawn(async move {
                h.output(screen("bye"));
                h.close(Exit {
                    code: Some(3),
                    signal: None,
                });
                std::future::pending::<()>().await;
            })
        },
        Duration::from_hours(1),
    )
    .await;
    assert_eq!(run.report.end, SessionEnd::SessionEnded);
    assert_eq!(run.report.exit.code, Some(3));
    assert!(run.events.contains(&Event::SessionExited { code: Some(3) }));
}

struct SlowChecker;

#[async_trait::async_trait]
impl IdleChecker for SlowChecker {
    async fn check_idle(&self, _context: &str) -> Result<CheckReply<IdleAnswer>, CheckError> {
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_hanging_checker_times_out_and_is_cancelled() {
    let mut config = config();
    config.idle_check.enabled = true;
    config.idle_check.timing.timeout = Duration::from_secs(10);
    let run = run(
        config,
        DriverInputs::default(),
        AiCheckers {
            idle: Some(Arc::new(SlowChecker)),
            plan: None,
        },
        |h| {
            tokio::spawn(async move {
                h.output(screen("hello"));
                std::future::pending::<()>().await;
            })
        },
        Duration::from_secs(30),
    )
    .await;
    assert!(run.events.iter().any(|e| matches!(
        e,
        Event::IdleCheckFailed { message, .. } if message.contains("timed out")
    )));
    assert!(run.written.is_empty());
}

#[cfg(feature = "mock")]
#[tokio::test(start_paused = true)]
async fn checks_get_the_stripped_context() {
    let mut mock = hyoka_idle_detect::MockIdleChecker::new();
    mock.expect_check_idle()
        .withf(|context| context.contains("Worked for 0m 1s") && !context.contains('\x1b'))
        .returning(|_| {
            Ok(CheckReply {
                verdict: IdleAnswer::Working,
                reasoning: "busy".to_owned(),
            })
        });
    let mut config = config();
    config.idle_check.enabled = true;
    let run = run(
        config,
        DriverInputs::default(),
        AiCheckers {
            idle: Some(Arc::new(mock)),
            plan: None,
        },
        |h| {
            tokio::spawn(async move {
                h.output(done());
                std::future::pending::<()>().await;
            })
        },
        Duration::from_secs(10),
    )
    .await;
    assert!(run.events.iter().any(|e| matches!(
        e,
        Event::IdleCheckCompleted {
            verdict: IdleAnswer::Working,
            ..
        }
    )));
    assert!(run.written.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_busy_process_tree_holds_an_idle_screen() {
    // The screen shows a finished turn at once, but for 20 s the agent's tree burns a core
    // (a build behind the prompt): nothing may be typed until the samples go quiet.
    let (tx, rx) = mpsc::channel(8);
    let inputs = DriverInputs {
        activity: Some(rx),
        ..DriverInputs::default()
    };
    let typed_while_busy = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&typed_while_busy);
    let run = run(
        config(),
        inputs,
        AiCheckers::default(),
        move |h| {
            tokio::spawn(async move {
                let feed = async {
                    let sample = |cpu_ticks, busy_children| ProcessActivity {
                        cpu_ticks,
                        interval: ms(500),
                        busy_children,
                    };
                    for _ in 0..40 {
                        tx.send(sample(50, 1)).await.unwrap();
                        if !h.written().is_empty() {
                            flag.store(true, Ordering::SeqCst);
                        }
                        tokio::time::sleep(ms(500)).await;
                    }
                    loop {
                        tx.send(sample(0, 0)).await.unwrap();
                        tokio::time::sleep(ms(500)).await;
                    }
                };
                tokio::join!(agent(h.clone()), feed);
            })
        },
        Duration::from_mins(2),
    )
    .await;
    assert!(
        !typed_while_busy.load(Ordering::SeqCst),
        "typed while the tree was busy"
    );
    assert!(
        run.events.iter().any(|e| matches!(e, Event::IdleRejected)),
        "the busy tree vetoes the idle screen: {:?}",
        run.events
    );
    assert_eq!(run.report.end, SessionEnd::BudgetExhausted { cycles: 1 });
    assert_eq!(run.written.len(), 6, "{:?}", run.written);
}

#[tokio::test(start_paused = true)]
async fn a_send_through_the_control_channel_is_delivered_and_confirmed() {
    // Cycles off: only the send types. The agent settles at t=0; the send at t=5 s.
    let (tx, rx) = mpsc::channel(4);
    let inputs = DriverInputs {
        control: Some(rx),
        ..DriverInputs::default()
    };
    let outcome = Arc::new(Mutex::new(None));
    let got = Arc::clone(&outcome);
    let run = run(
        RespawnConfig {
            cycle: false,
            ..config()
        },
        inputs,
        AiCheckers::default(),
        move |h| {
            tokio::spawn(async move {
                let agent = tokio::spawn(agent(h));
                tokio::time::sleep(ms(5_000)).await;
                let (reply, answer) = tokio::sync::oneshot::channel();
                tx.send(super::Control::Send {
                    text: "fix the lint".to_owned(),
                    queue: false,
                    reply,
                })
                .await
                .unwrap();
                *got.lock().unwrap() = Some(answer.await.unwrap());
                let (reply, status) = tokio::sync::oneshot::channel();
                tx.send(super::Control::Status(reply)).await.unwrap();
                let status = status.await.unwrap();
                assert_eq!(status.machine.state, crate::State::Watching);
                assert!(status.last_event.is_some());
                let _ = agent.await;
            })
        },
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(
        *outcome.lock().unwrap(),
        Some(crate::SendOutcome::Delivered)
    );
    assert_eq!(
        run.written,
        [Written::Text("fix the lint".to_owned()), Written::Enter]
    );
    assert!(run.events.iter().any(|e| matches!(
        e,
        Event::DeliveryConfirmed {
            step: Step::Send,
            ..
        }
    )));
}

#[tokio::test(start_paused = true)]
async fn a_persons_draft_is_never_typed_into_and_the_cycle_waits_for_it() {
    // The screen shows a finished turn with a person's unsent text in the box; at t=40 s
    // they delete it. Nothing is typed before; the cycle runs after.
    let run = run(
        config(),
        DriverInputs::default(),
        AiCheckers::default(),
        |h| {
            tokio::spawn(async move {
                h.output(screen_with(
                    "✻ Worked for 0m 1s",
                    "please also fix the lint warnings",
                ));
                tokio::time::sleep(ms(40_000)).await;
                assert!(h.written().is_empty(), "typed into the draft");
                agent(h).await;
            })
        },
        Duration::from_mins(2),
    )
    .await;
    assert!(run.events.iter().any(|e| matches!(
        e,
        Event::VerdictChanged {
            blocked: Some(hyoka_idle_detect::BlockedKind::Draft),
            ..
        }
    )));
    assert_eq!(run.report.end, SessionEnd::BudgetExhausted { cycles: 1 });
    assert_eq!(run.written.len(), 6, "{:?}", run.written);
}

/// Claude Code's permission dialog, as it replaces the prompt box.
fn permission_dialog() -> Vec<u8> {
    b"\x1b[2J\x1b[H\xe2\x8f\xba Write(notes.txt)\r\n\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\r\n Do you want to create notes.txt?\r\n \xe2\x9d\xaf 1. Yes\r\n   2. No\r\n\r\n Esc to cancel\r\n"
        .to_vec()
}

/// The keys the machine decided on but the driver did not send.
fn withheld(events: &[Event]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::KeysWithheld { keys, .. } => Some(*keys),
            _ => None,
        })
        .collect()
}

// See: issue 24 (a dialog approved by hyoka: the Enter of a delivery answered a dialog that
// opened after the text was typed).
#[tokio::test(start_paused = true)]
async fn no_enter_goes_into_a_dialog_that_opened_after_the_text() {
    // The agent takes the typed text and opens a permission dialog instead of showing it:
    // the Enter due 50 ms later is withheld, the cycle pauses, and nothing else is typed.
    let run = run(
        config(),
        DriverInputs::default(),
        AiCheckers::default(),
        |h| {
            tokio::spawn(async move {
                h.output(done());
                loop {
                    tokio::time::sleep(ms(10)).await;
                    if h.written().iter().any(|w| matches!(w, Written::Text(_))) {
                        h.output(permission_dialog());
                        break;
                    }
                }
                std::future::pending::<()>().await;
            })
        },
        Duration::from_mins(1),
    )
    .await;
    assert_eq!(
        run.written,
        [Written::Text(crate::DEFAULT_UPDATE_PROMPT.to_owned())]
    );
    assert_eq!(withheld(&run.events), ["enter"]);
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::DeliveryUnconfirmed { .. }))
    );
}

// See: issue 24 (a delivery retry pressed Enter into the `/new` worktree menu that had just
// been judged blocked).
#[tokio::test(start_paused = true)]
async fn an_enter_retry_is_withheld_once_a_menu_replaced_the_text() {
    let run = run(
        config(),
        DriverInputs::default(),
        AiCheckers::default(),
        |h| {
            tokio::spawn(async move {
                h.output(done());
                let mut seen = 0;
                loop {
                    tokio::time::sleep(ms(10)).await;
                    let written = h.written();
                    for w in &written[seen..] {
                        match w {
                            Written::Text(text) => {
                                h.output(screen_with("✻ Worked for 0m 1s", text));
                            }
                            Written::Enter => h.output(
                                "\x1b[2J\x1b[HStart the new session in\r\n\r\n \u{276f} 1. This directory\r\n   2. A new worktree\r\n\r\n Enter to select \u{b7} Esc to cancel\r\n",
                            ),
                            _ => {}
                        }
                    }
                    seen = written.len();
                }
            })
        },
        Duration::from_mins(1),
    )
    .await;
    assert_eq!(
        run.written,
        [
            Written::Text(crate::DEFAULT_UPDATE_PROMPT.to_owned()),
            Written::Enter
        ]
    );
    assert_eq!(withheld(&run.events), ["enter"]);
}

// See: issue 24 (Gemini CLI ignores the first Enter after a typed step; the retry delivers
// it). The retry goes because the text still waits in the input box.
#[tokio::test(start_paused = true)]
async fn an_enter_retry_goes_while_the_text_still_waits_in_the_box() {
    let run = run(
        config(),
        DriverInputs::default(),
        AiCheckers::default(),
        |h| {
            tokio::spawn(async move {
                h.output(done());
                let (mut seen, mut enters, mut text) = (0, 0, String::new());
                loop {
                    tokio::time::sleep(ms(10)).await;
                    let written = h.written();
                    for w in &written[seen..] {
                        match w {
                            Written::Text(t) => {
                                text.clone_from(t);
                                enters = 0;
                                h.output(screen_with("✻ Worked for 0m 1s", t));
                            }
                            // The first Enter after a text is lost.
                            Written::Enter if enters == 0 => {
                                enters += 1;
                                h.output(screen_with("✻ Worked for 0m 1s", &text));
                            }
                            Written::Enter => {
                                h.output(busy());
                                tokio::time::sleep(ms(1_000)).await;
                                h.output(done());
                            }
                            _ => {}
                        }
                    }
                    seen = written.len();
                }
            })
        },
        Duration::from_mins(1),
    )
    .await;
    assert!(
        run.written.len() >= 3,
        "{:?}\n{:?}",
        run.written,
        run.events
    );
    assert_eq!(
        &run.written[..3],
        [
            Written::Text(crate::DEFAULT_UPDATE_PROMPT.to_owned()),
            Written::Enter,
            Written::Enter
        ]
    );
    assert!(withheld(&run.events).is_empty(), "{:?}", run.events);
    assert!(run.events.iter().any(|e| matches!(
        e,
        Event::DeliveryConfirmed {
            step: Step::Update,
            ..
        }
    )));
}

// See: issue 24 (a second tmux client of another size attached and left; the model of the
// screen no longer matched the pane).
#[tokio::test(start_paused = true)]
async fn a_resize_from_outside_holds_everything_until_the_agent_redraws() {
    // t=0 an idle screen; t=100 the terminal is resized from outside and the agent does not
    // draw for 10 s: no verdict in that time is idle, so nothing is typed; at 10.1 s it
    // redraws and the cycle goes on from there.
    let (terminal, handle) = FakeTerminal::new(Some(4242));
    let recorder = Recorder::default();
    let driver = Driver::new(
        Machine::new(config()),
        terminal,
        model(),
        recorder.clone(),
        AiCheckers::default(),
        DriverOptions::default(),
    );
    #[expect(
        clippy::disallowed_methods,
        reason = "the paused test clock: virtual time, the timeline the assertion reads"
    )]
    let start = tokio::time::Instant::now();
    let typed_at = Arc::new(Mutex::new(None));
    let agent = {
        let (h, typed_at) = (handle.clone(), Arc::clone(&typed_at));
        tokio::spawn(async move {
            h.output(done());
            tokio::time::sleep(ms(100)).await;
            h.resized(crate::Size { rows: 24, cols: 80 });
            tokio::time::sleep(ms(10_000)).await;
            h.output(done());
            loop {
                tokio::time::sleep(ms(10)).await;
                if !h.written().is_empty() {
                    typed_at.lock().unwrap().get_or_insert(start.elapsed());
                }
            }
        })
    };
    let _ = driver
        .run(DriverInputs::default(), tokio::time::sleep(ms(20_000)))
        .await
        .unwrap();
    agent.abort();
    let typed = typed_at.lock().unwrap().expect("typed after the redraw");
    assert!(typed > ms(10_100), "typed at {typed:?}, before the redraw");
    let deferred = recorder.events().into_iter().any(|e| {
        matches!(
            e,
            Event::StepDeferred {
                reason: "screen not judged",
                ..
            }
        )
    });
    assert!(deferred, "{:?}", recorder.events());
}
