//! Respawn cycles on the real TUIs (issue 24, item 5): `hyoka respawn --backend tmux
//! --max-cycles 2` with cycling on, against the stub in the namespace of [`Live`]. The test
//! answers the start dialog as a person would and leaves the rest to the controller: two
//! cycles of the agent's own update prompt, clear command and init command, then the session
//! is stopped and the controller exits 0.
//!
//! The truth is the stub's request log (`GET /_stub/requests`, each request with the wall
//! time it arrived and the one its answer ended) beside the controller's event records (each
//! with its wall time):
//!
//! - every step was delivered once: one `step_sent` per step and cycle, no Enter retried,
//!   nothing withheld or unconfirmed, no cycle aborted; the stub saw one model request per
//!   update and init step, and none for the clear step;
//! - the clear step cleared: the init step's request, and the second cycle's update after
//!   it, carry only the history since the clear (the stub's reply index 0, then 1);
//! - nothing was typed while the model answered: no `step_typed`, `step_sent` or
//!   `step_retried` is dated inside a request's answer;
//! - each turn end was seen as one, short and long: no step is completed before the answer
//!   to its own request ended (the update of the first cycle and every init get the stub's
//!   reply 0, answered at once, Codex's `Worked for <1s`; the update of the second cycle gets
//!   reply 1, which thinks, waits, streams for a while and pauses in the middle).
//!
//! Claude Code runs with `--install-claude-hooks`: each of those turns is announced by its
//! `UserPromptSubmit` hook and ended by its `Stop` hook, which the detector fuses with the
//! screen.
//!
//! Skips as the other live tests do; every wait is bounded and polls the controller or the
//! registry, and the test proves that nothing it started is left.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Agent, Live, installed};

/// The longest the two cycles may take (they take about a minute when the machine is idle).
const CYCLES: Duration = Duration::from_mins(8);

/// Reply 0: at once (the first request of every conversation). Reply 1: a long turn.
const SCRIPT: &str = "turns:\n  - text: \"Noted.\"\n  - text: \"Here is a longer progress note that streams slowly, word after word, stops for a while in the middle, and then goes on until it ends.\"\n    thinking: \"Let me look at what was done so far.\"\n    delay: 2s\n    pace: 8s\n    stall: { after: 3, for: 5s }\nafter: { text: \"Noted.\" }\n";

/// One model request as the stub logged it.
#[derive(Debug)]
struct Request {
    conversation: String,
    turn: u64,
    time: String,
    done: Option<String>,
    tools: Vec<String>,
}

/// An RFC 3339 time of the stub's log or the event records, comparable as a duration.
fn at(time: &str) -> Duration {
    let t = humantime::parse_rfc3339(time).unwrap_or_else(|e| panic!("{time}: {e}"));
    t.duration_since(std::time::UNIX_EPOCH).unwrap()
}

fn requests(live: &Live) -> Vec<Request> {
    let body = live.get("/_stub/requests");
    let all: Vec<Value> =
        serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap_or("[]")).unwrap();
    all.iter()
        .filter(|r| r["side"] == false && r["outcome"] == "reply")
        .map(|r| Request {
            conversation: r["conversation"].as_str().unwrap_or_default().to_owned(),
            turn: r["turn"].as_u64().unwrap_or(u64::MAX),
            time: r["time"].as_str().unwrap_or_default().to_owned(),
            done: r["done"].as_str().map(str::to_owned),
            tools: r["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
        })
        .collect()
}

fn cycle(agent: Agent) {
    let Some(bin) = installed(agent) else {
        return;
    };
    let mut flags = vec!["--max-cycles", "2", "--no-output-timeout", "5s"];
    if agent == Agent::Claude {
        // Claude Code's own word on its turns (Stop, UserPromptSubmit, Notification hooks)
        // is fused with the screen.
        flags.push("--install-claude-hooks");
    }
    let mut live = Live::start_with(agent, &bin, SCRIPT, &flags);
    // The start dialog is a person's to answer, once it is drawn and still: judged blocked,
    // and the pane the same twice in a row (the agent reads keys by then).
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let pane = live.pane(false, false);
        if live.status().is_some_and(|s| s["state"] == "blocked") && pane == last {
            break;
        }
        last = pane;
        assert!(
            started.elapsed() < super::PHASE,
            "{agent:?}: no start dialog:\n{last}"
        );
        live.controller_alive();
        std::thread::sleep(Duration::from_millis(500));
    }
    live.keys(agent.answer_start());
    // Two cycles, then the controller stops the session and exits.
    // The turn-end lines the agent drew, for the report (Codex: `Worked for <1s`).
    let mut ends = std::collections::BTreeSet::new();
    let started = Instant::now();
    let status = loop {
        for line in live.pane(false, false).lines() {
            if line.contains("Worked for") || line.contains("Cooked for") {
                ends.insert(
                    line.trim_matches(|c: char| c.is_whitespace() || c == '─')
                        .to_owned(),
                );
            }
        }
        let child = live.controller.child.as_mut().unwrap();
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CYCLES {
            let events = std::fs::read_to_string(live.case.events_path()).unwrap_or_default();
            panic!(
                "{agent:?}: the cycles did not finish within {CYCLES:?}:\n{}\n{events}",
                live.pane(false, false)
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let took = started.elapsed();
    let events = crate::respawn::read_lines(&live.case.events_path());
    let requests = requests(&live);
    let report = || {
        format!(
            "{}\n{requests:#?}",
            events
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    assert_eq!(status.code(), Some(0), "{agent:?}: {}", report());
    let named =
        |name: &str| -> Vec<&Value> { events.iter().filter(|e| e["event"] == name).collect() };
    for bad in [
        "step_retried",
        "keys_withheld",
        "delivery_unconfirmed",
        "cycle_aborted",
    ] {
        assert!(named(bad).is_empty(), "{agent:?}: {bad}:\n{}", report());
    }
    assert_eq!(named("cycle_completed").len(), 2, "{agent:?}: {}", report());
    let sent: Vec<&str> = named("step_sent")
        .iter()
        .map(|e| e["step"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        sent,
        ["update", "clear", "init", "update", "clear", "init"],
        "{agent:?}: {}",
        report()
    );
    // The request of each update and init step: the first of the agent's conversation to
    // arrive after its Enter. (Codex 0.169 also asks in a conversation of its own beside
    // each turn, offering a single tool; the stub answers it at once.)
    let own: Vec<&Request> = requests.iter().filter(|r| r.tools.len() > 1).collect();
    let steps: Vec<&Value> = named("step_sent")
        .into_iter()
        .filter(|e| e["step"] != "clear")
        .collect();
    // Gemini CLI's second `/init` asks nothing: the first made GEMINI.md, and
    // packages/core/src/commands/init.ts (`performInit`) answers "A GEMINI.md file already
    // exists in this directory. No changes were made." Its step is found by no request.
    let pairs: Vec<(&Value, Option<&Request>)> = steps
        .iter()
        .map(|step| {
            let t = at(step["time"].as_str().unwrap());
            (*step, own.iter().find(|r| at(&r.time) >= t).copied())
        })
        .collect();
    let asked: Vec<&Request> = pairs.iter().filter_map(|(_, r)| *r).collect();
    // Each after a clear holding no history, but the update that follows an init.
    let turns: Vec<u64> = asked.iter().map(|r| r.turn).collect();
    let expected: &[u64] = if agent == Agent::Gemini {
        &[0, 0, 1]
    } else {
        &[0, 0, 1, 0]
    };
    assert_eq!(turns, expected, "{agent:?}: {}", report());
    assert_eq!(asked[1].conversation, asked[2].conversation);
    // Delivered once: no other request in those conversations (a second Enter after the
    // text, or the text typed twice, would ask again).
    for (i, r) in asked.iter().enumerate() {
        let expected = if i == 1 || i == 2 { 2 } else { 1 };
        let seen = requests
            .iter()
            .filter(|o| o.conversation == r.conversation)
            .count();
        assert_eq!(seen, expected, "{agent:?}: {r:?}:\n{}", report());
    }
    // Nothing typed while the model answered.
    for key in named("step_typed")
        .into_iter()
        .chain(named("step_sent"))
        .chain(named("step_retried"))
    {
        let t = at(key["time"].as_str().unwrap());
        for r in &requests {
            let done = r.done.as_deref().map_or(Duration::MAX, at);
            assert!(
                !(at(&r.time) < t && t < done),
                "{agent:?}: {key} typed while the stub answered {r:?}:\n{}",
                report()
            );
        }
    }
    // Each step that asked the model completed only after its answer ended: the cycle saw
    // the turn end (short or long) as one.
    let completed: Vec<&Value> = named("step_completed")
        .into_iter()
        .filter(|e| e["step"] != "clear")
        .collect();
    assert_eq!(completed.len(), pairs.len(), "{agent:?}: {}", report());
    for (step, (_, request)) in completed.iter().zip(&pairs) {
        let Some(request) = request else {
            continue;
        };
        let done = request
            .done
            .as_deref()
            .unwrap_or_else(|| panic!("{agent:?}: {request:?} never ended"));
        assert!(
            at(step["time"].as_str().unwrap()) >= at(done),
            "{agent:?}: {step} before the answer ended ({request:?}):\n{}",
            report()
        );
    }
    if agent == Agent::Claude {
        // Every turn the model answered was announced and ended by Claude Code's hooks (a
        // Stop during a cycle is noted, not acted on: the cycle waits for its own step).
        let hooks = |name: &str| {
            named("hook_received")
                .iter()
                .filter(|e| e["hook"] == name)
                .count()
        };
        assert!(
            hooks("prompt_submitted") >= asked.len() && hooks("stop") >= asked.len(),
            "{agent:?}: hooks: {}",
            report()
        );
        eprintln!(
            "{agent:?} hooks: {} prompt_submitted, {} stop",
            hooks("prompt_submitted"),
            hooks("stop")
        );
    }
    let long = asked[2];
    let beside: std::collections::BTreeSet<&str> = requests
        .iter()
        .filter(|r| r.tools.len() <= 1)
        .flat_map(|r| r.tools.iter().map(String::as_str))
        .collect();
    eprintln!(
        "{agent:?} requests beside the conversation offered {beside:?}; turn ends drawn {ends:?}"
    );
    eprintln!(
        "{agent:?} cycles: 2 completed in {:.0} s; steps sent {sent:?}; Enters {} and {} retried; Enters held {}; step requests at turns {turns:?} of {} requests; long turn {} .. {}",
        took.as_secs_f64(),
        sent.len(),
        named("step_retried").len(),
        named("enter_held").len(),
        requests.len(),
        long.time,
        long.done.as_deref().unwrap_or("-"),
    );
    for e in named("delivery_confirmed")
        .into_iter()
        .chain(named("step_completed"))
        .chain(named("enter_held"))
        .chain(named("step_retried"))
    {
        eprintln!("{agent:?}   {e}");
    }
    live.finish_stub();
}

#[test]
fn claude_code_cycles_in_tmux() {
    cycle(Agent::Claude);
}

#[test]
fn codex_cycles_in_tmux() {
    cycle(Agent::Codex);
}

#[test]
fn gemini_cli_cycles_in_tmux() {
    cycle(Agent::Gemini);
}
