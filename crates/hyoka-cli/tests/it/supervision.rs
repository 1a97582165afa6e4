//! Supervision a person can leave running (issue 16) and the respawn items of issue 12, end
//! to end: several tmux sessions with one controller each, `hyoka sessions`, `wait` and
//! `send` and their exit codes, `--on-blocked` alerts, a person's draft (pty and tmux), a
//! second tmux client, detaching and `--stop`, the tmux exit status and a missing agent on
//! both backends, and the headless narration. Real processes throughout; every test proves
//! through `/proc` that nothing it started is left.

use std::io::Write as _;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::respawn::{Case, Mirror, Running, event, read_lines, submits};
use crate::support::tmux_installed;
use crate::support::wait_until;

const UPDATE_PROMPT: &str = "write a brief progress summary to CLAUDE.md noting what you accomplished, then continue working.";

/// `hyoka sessions --json` of the case's registry.
fn sessions(case: &Case) -> Vec<Value> {
    let out = case.hyoka().args(["sessions", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn session(case: &Case, name: &str) -> Option<Value> {
    sessions(case).into_iter().find(|s| s["name"] == name)
}

/// `hyoka <args>` of the case: exit code and stderr.
fn hyoka(case: &Case, args: &[&str]) -> (Option<i32>, String) {
    let out = case.hyoka().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn skip_without_tmux() -> bool {
    if tmux_installed() {
        return false;
    }
    eprintln!("skipped: tmux is not installed");
    true
}

/// Another tmux client attached to `name` (a control-mode client, as iTerm2's integration
/// is one): it may type into the session with `send-keys`; dropping it detaches it.
struct Attached(Option<Child>);

impl Attached {
    fn new(case: &Case, name: &str) -> Self {
        let child = Command::new("tmux")
            .args(["-L", &format!("hyoka-{name}"), "-C", "attach", "-t", name])
            .env("HYOKA_TEST_MARK", &case.mark)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Self(Some(child))
    }

    fn command(&mut self, line: &str) {
        let stdin = self.0.as_mut().unwrap().stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
    }

    fn detach(&mut self) {
        if let Some(mut child) = self.0.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.detach();
    }
}

/// The index of the first event matching `pred`.
fn first(events: &[Value], pred: impl Fn(&Value) -> bool) -> Option<usize> {
    events.iter().position(pred)
}

#[test]
fn three_tmux_sessions_one_controller_each() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let tag = fastrand::u32(..);
    let names: Vec<String> = (0..3).map(|i| format!("s{i}-{tag}")).collect();
    let record = |i: usize| case.dir.path().join(format!("inputs-{i}.jsonl"));
    let mut runs: Vec<Running> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let events = case.dir.path().join(format!("events-{i}.jsonl"));
            let agent = Case::sim_recording(&record(i), &["--start-working", "4s", "--work", "1s"]);
            case.start_logging(
                &events,
                &["--backend", "tmux", "--name", name, "--no-cycle"],
                &agent,
            )
        })
        .collect();
    wait_until("the three sessions to be listed, the first working", || {
        let listed = sessions(&case);
        names.iter().all(|n| listed.iter().any(|s| s["name"] == *n))
            && session(&case, &names[0]).is_some_and(|s| s["state"] == "working")
    });
    for name in &names {
        let status = session(&case, name).unwrap();
        assert_eq!(status["backend"], "tmux", "{status:#}");
        assert_eq!(status["tmux"]["session"], name.as_str(), "{status:#}");
        assert!(status["evidence"].as_array().is_some(), "{status:#}");
    }
    // Sending to a working session is refused, and nothing is typed.
    let (code, stderr) = hyoka(&case, &["send", &names[0], "hello there"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("refused, nothing typed"), "{stderr}");
    assert!(
        read_lines(&record(0)).is_empty(),
        "typed into a busy session"
    );
    // Wait until it is idle; then the send is delivered and confirmed.
    let (code, stderr) = hyoka(
        &case,
        &["wait", &names[0], "--until", "idle", "--timeout", "30s"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = hyoka(&case, &["send", &names[0], "hello there"]);
    assert_eq!(code, Some(0), "{stderr}");
    let inputs = read_lines(&record(0));
    let submitted: Vec<_> = inputs.iter().filter(|i| i["kind"] == "submit").collect();
    assert_eq!(submitted.len(), 1, "{inputs:#?}");
    assert_eq!(submitted[0]["input"], "hello there");
    assert_eq!(submitted[0]["state"], "idle");
    // A state that does not come: 124; an unknown name: 2.
    let (code, _) = hyoka(
        &case,
        &["wait", &names[1], "--until", "blocked", "--timeout", "1s"],
    );
    assert_eq!(code, Some(124));
    assert_eq!(hyoka(&case, &["send", "nobody-here", "x"]).0, Some(2));
    assert_eq!(
        hyoka(&case, &["wait", "nobody-here", "--until", "idle"]).0,
        Some(2)
    );
    for run in &mut runs {
        let done = case.interrupt(run);
        assert_eq!(done.code, Some(130), "{}", done.stderr);
        // Issue 12: respawn speaks of sessions, not evals.
        assert!(
            done.stderr.contains("stopping the session") && !done.stderr.contains("eval"),
            "{}",
            done.stderr
        );
    }
    assert!(sessions(&case).is_empty());
    case.assert_nothing_left();
}

fn on_blocked_once(backend: &str) {
    let case = Case::new();
    let name = format!("b{}", fastrand::u32(..));
    let alerts = case.dir.path().join("alerts.txt");
    let command = format!(
        r#"printf '%s %s %s\n' "$HYOKA_SESSION" "$HYOKA_BLOCKED_KIND" "$(grep -c 'Do you want to proceed' "$HYOKA_SCREEN_FILE")" >> '{}'"#,
        alerts.display()
    );
    let mut running = case.start(
        &[
            "--backend",
            backend,
            "--name",
            &name,
            "--on-blocked",
            &command,
            "--blocked-after",
            "2s",
        ],
        &case.sim(&["--start-working", "300ms", "--permission-on", "0"]),
    );
    case.wait_for(&mut running, "the alert to finish", event("alert_finished"));
    // Once within --blocked-after + 5 s of the prompt showing.
    let events = case.events();
    let t = |pred: &dyn Fn(&Value) -> bool| {
        events.iter().find(|e| pred(e)).unwrap()["t_ms"]
            .as_u64()
            .unwrap()
    };
    let blocked_at = t(&|e| e["event"] == "verdict_changed" && e["state"] == "blocked");
    let alert_at = t(&|e| e["event"] == "alert_started");
    assert!(
        alert_at >= blocked_at + 1_500 && alert_at <= blocked_at + 7_000,
        "blocked at {blocked_at} ms, alert at {alert_at} ms"
    );
    let finished = events
        .iter()
        .find(|e| e["event"] == "alert_finished")
        .unwrap();
    assert_eq!(finished["code"], 0, "{finished}");
    // Still blocked 5 s later (`wait` gives up), and the alert never ran again.
    let (code, _) = hyoka(
        &case,
        &["wait", &name, "--until", "idle", "--timeout", "5s"],
    );
    assert_eq!(code, Some(124));
    let lines = std::fs::read_to_string(&alerts).unwrap();
    assert_eq!(lines, format!("{name} permission 1\n"));
    assert_eq!(
        case.events()
            .iter()
            .filter(|e| e["event"] == "alert_started")
            .count(),
        1
    );
    let done = case.interrupt(&mut running);
    assert_eq!(done.code, Some(130), "{}", done.stderr);
    assert!(case.inputs().is_empty(), "{:#?}", case.inputs());
    case.assert_nothing_left();
}

#[test]
fn pty_on_blocked_runs_once_per_episode() {
    on_blocked_once("pty");
}

#[test]
fn tmux_on_blocked_runs_once_per_episode() {
    if skip_without_tmux() {
        return;
    }
    on_blocked_once("tmux");
}

#[test]
fn on_idle_runs_once_per_idle_episode() {
    let case = Case::new();
    let name = format!("i{}", fastrand::u32(..));
    let alerts = case.dir.path().join("alerts.txt");
    let command = format!(
        r#"printf '%s %s[%s]\n' "$HYOKA_SESSION" "$HYOKA_ALERT" "$HYOKA_BLOCKED_KIND" >> '{}'"#,
        alerts.display()
    );
    let mut running = case.start(
        &[
            "--name",
            &name,
            "--no-cycle",
            "--on-idle",
            &command,
            "--idle-after",
            "1s",
        ],
        &case.sim(&["--start-working", "300ms"]),
    );
    case.wait_for(&mut running, "the alert to finish", event("alert_finished"));
    let (code, _) = hyoka(
        &case,
        &["wait", &name, "--until", "working", "--timeout", "3s"],
    );
    assert_eq!(code, Some(124), "still idle");
    assert_eq!(
        std::fs::read_to_string(&alerts).unwrap(),
        format!("{name} idle[]\n")
    );
    let done = case.interrupt(&mut running);
    assert_eq!(done.code, Some(130), "{}", done.stderr);
    assert!(
        case.inputs().is_empty(),
        "--no-cycle typed: {:#?}",
        case.inputs()
    );
    case.assert_nothing_left();
}

const DRAFT: &str = "please also fix the lint warnings";

/// Flags that leave a few seconds between the agent turning idle and a cycle.
const SLOW_IDLE: &[&str] = &[
    "--completion-confirm",
    "3s",
    "--no-output-timeout",
    "3s",
    "--max-cycles",
    "1",
];

/// A tmux session with a few seconds between idle and a cycle, and `human_lock`.
fn slow_tmux(case: &Case, human_lock: &str) -> (String, Running) {
    let name = format!("t{}", fastrand::u32(..));
    let mut flags = vec![
        "--backend",
        "tmux",
        "--name",
        &name,
        "--human-lock",
        human_lock,
    ];
    flags.extend(SLOW_IDLE);
    let running = case.start(&flags, &case.sim(&["--start-working", "300ms"]));
    (name, running)
}

/// After the draft was seen and nothing typed over it, the person empties the box with
/// `erase`; then the cycle runs with the update prompt typed into an empty box.
fn check_draft_respected(case: &Case, until_gate: impl Fn() -> bool) {
    wait_until("the gate to refuse because of the draft", until_gate);
    assert!(
        !case.has(event("step_typed")),
        "typed over the draft: {:#?}",
        case.events()
    );
    assert!(submits(case).is_empty(), "{:#?}", case.inputs());
}

fn draft_gate(case: &Case) -> bool {
    let events = case.events();
    let released = first(&events, |e| e["event"] == "human_lock_released");
    released.is_some_and(|r| {
        events[r..].iter().any(|e| {
            e["event"] == "blocked" && e["details"].as_str().is_some_and(|d| d.contains("(draft)"))
        })
    })
}

#[test]
fn pty_a_draft_is_never_typed_over() {
    // Issue 12: a person types into the mirrored session and leaves it unsent.
    let case = Case::new();
    let mut flags = SLOW_IDLE.to_vec();
    flags.extend([
        "--human-lock",
        "1s",
        "--inter-step-delay",
        "150ms",
        "--grace",
        "2s",
    ]);
    let mirror = Mirror::start(&case, &flags, &case.sim(&["--start-working", "300ms"]));
    wait_until("the agent to be idle", || {
        case.has(|e| e["event"] == "verdict_changed" && e["state"] == "idle")
    });
    mirror.type_keys(DRAFT.as_bytes());
    check_draft_respected(&case, || draft_gate(&case));
    // The person deletes the draft; the cycle runs into the empty box.
    mirror.type_keys(&vec![0x7f; DRAFT.len()]);
    let (code, log) = mirror.finish();
    assert_eq!(code, Some(0), "{log}\n{:#?}", case.events());
    assert_eq!(submits(&case), [UPDATE_PROMPT, "/clear", "/init"]);
    case.assert_nothing_left();
}

#[test]
fn tmux_a_draft_is_never_typed_over() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let (name, mut running) = slow_tmux(&case, "1s");
    case.wait_for(&mut running, "the agent to be idle", |e| {
        e["event"] == "verdict_changed" && e["state"] == "idle"
    });
    // A person attaches another client, types into the box, and detaches.
    let mut person = Attached::new(&case, &name);
    person.command(&format!("send-keys -t {name} -l '{DRAFT}'"));
    case.wait_for(&mut running, "the person to be seen", |e| {
        e["event"] == "human_present" && e["via"] == "attached"
    });
    person.detach();
    check_draft_respected(&case, || draft_gate(&case));
    let erased = Command::new("tmux")
        .args(["-L", &format!("hyoka-{name}"), "send-keys", "-t", &name])
        .args(["-N", &DRAFT.len().to_string(), "BSpace"])
        .status()
        .unwrap();
    assert!(erased.success());
    let done = case.finish(&mut running);
    assert_eq!(done.code, Some(0), "{}\n{:#?}", done.stderr, case.events());
    assert_eq!(submits(&case), [UPDATE_PROMPT, "/clear", "/init"]);
    case.assert_nothing_left();
}

#[test]
fn a_second_tmux_client_pauses_automation_until_it_leaves_plus_the_lock() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let (name, mut running) = slow_tmux(&case, "2s");
    case.wait_for(&mut running, "start", event("started"));
    let mut person = Attached::new(&case, &name);
    case.wait_for(&mut running, "the person to be seen", |e| {
        e["event"] == "human_present" && e["via"] == "attached"
    });
    // While they are attached, idle is confirmed and refused: automation waits for them.
    case.wait_for(&mut running, "a refusal for the person", |e| {
        e["event"] == "blocked" && e["reason"] == "human_present"
    });
    let status = session(&case, &name).unwrap();
    assert_eq!(status["human_present"], true, "{status:#}");
    assert_eq!(status["attached"], 1, "{status:#}");
    assert!(!case.has(event("step_typed")));
    person.detach();
    let done = case.finish(&mut running);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    // Nothing typed before the lock ran out after they left.
    let events = case.events();
    let released = first(&events, event("human_lock_released")).unwrap();
    let typed = first(&events, event("step_typed")).unwrap();
    assert!(released < typed, "{events:#?}");
    assert_eq!(submits(&case).len(), 3);
    case.assert_nothing_left();
}

#[test]
fn detaching_leaves_a_tmux_session_running_until_stop() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let name = format!("x{}", fastrand::u32(..));
    let socket = format!("hyoka-{name}");
    let tmux_has = || {
        Command::new("tmux")
            .args(["-L", &socket, "has-session", "-t", &name])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let mirror = Mirror::start(
        &case,
        &["--backend", "tmux", "--name", &name, "--no-cycle"],
        &case.sim(&[]),
    );
    wait_until("the agent's screen mirrored", || {
        mirror.shown("Welcome to the hyoka simulated agent")
    });
    mirror.type_keys(&[0x1d]);
    let (code, log) = mirror.finish();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains(&format!("tmux -L {socket} attach -t {name}"))
            && log.contains(&format!("hyoka respawn --tmux-session {name}")),
        "{log}"
    );
    assert!(tmux_has(), "the session keeps running after the detach");
    assert!(session(&case, &name).is_none(), "nobody supervises it");
    // Supervised again (no command needed), then stopped through its controller.
    let mut again = case.start(&["--tmux-session", &name, "--no-cycle"], &[]);
    wait_until("the session to be supervised again", || {
        session(&case, &name).is_some()
    });
    let (code, stderr) = hyoka(&case, &["respawn", "--stop", "--name", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    let done = case.finish(&mut again);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(!tmux_has());
    // A detached session nobody supervises is stopped by `--stop` itself.
    let mirror = Mirror::start(
        &case,
        &["--backend", "tmux", "--name", &name],
        &case.sim(&[]),
    );
    wait_until("the agent's screen mirrored", || {
        mirror.shown("Welcome to the hyoka simulated agent")
    });
    mirror.type_keys(&[0x1d]);
    assert_eq!(mirror.finish().0, Some(0));
    assert!(tmux_has());
    let (code, stderr) = hyoka(&case, &["respawn", "--stop", "--tmux-session", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!tmux_has());
    assert_eq!(
        hyoka(&case, &["respawn", "--stop", "--name", &name]).0,
        Some(2)
    );
    case.assert_nothing_left();
}

#[test]
fn the_tmux_exit_status_is_never_lost() {
    if skip_without_tmux() {
        return;
    }
    // Issue 12: `sh -c 'exit 3'` used to report `exit_code: null` when it ended at once.
    let case = Case::new();
    for _ in 0..5 {
        let done = case.run(
            &["--backend", "tmux", "--json"],
            &["sh".to_owned(), "-c".to_owned(), "exit 3".to_owned()],
        );
        let summary = done.summary();
        assert_eq!(summary["exit_code"], 3, "{summary:#}\n{}", done.stderr);
        assert_eq!(done.code, Some(1));
    }
    case.assert_nothing_left();
}

#[test]
fn a_missing_agent_is_the_same_clear_error_on_both_backends() {
    let case = Case::new();
    let not_executable = case.dir.path().join("not-executable");
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    let backends: &[&str] = if tmux_installed() {
        &["pty", "tmux"]
    } else {
        &["pty"]
    };
    for (program, why) in [
        (
            "/nonexistent/agent",
            "No such file or directory (os error 2)",
        ),
        (
            "no-such-agent-hyoka",
            "No such file or directory (os error 2)",
        ),
        (
            not_executable.to_str().unwrap(),
            "Permission denied (os error 13)",
        ),
    ] {
        for backend in backends {
            let out = case
                .hyoka()
                .args(["respawn", "--headless", "--backend", backend, "--reports"])
                .arg(case.dir.path().join("reports"))
                .args(["--", program])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{backend} {program}: {stderr}");
            let errors: Vec<_> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
            assert_eq!(
                errors,
                [format!("error: cannot start {program:?}: {why}")],
                "{backend}"
            );
        }
    }
    case.assert_nothing_left();
}

#[test]
fn a_headless_controller_says_what_it_does() {
    // Without --events: one plain line per state change and decision on stderr.
    let case = Case::new();
    let name = format!("n{}", fastrand::u32(..));
    let out = case
        .hyoka()
        .args(["respawn", "--headless", "--name", &name, "--reports"])
        .arg(case.dir.path().join("reports"))
        .args(
            crate::respawn::FAST
                .iter()
                .filter(|a| !a.is_empty() && **a != "--headless"),
        )
        .args(["--max-cycles", "1", "--"])
        .args(case.sim(&["--start-working", "300ms", "--work", "300ms"]))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for line in [
        "session idle",
        "cycle 1 starts",
        "typed the update step",
        "update delivered: a new turn started",
        "clear delivered",
        "cycle 1 done",
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("{name}: {line}"))),
            "no {line:?} in:\n{stderr}"
        );
    }
    assert!(!stderr.contains('\x1b'), "colour on a pipe: {stderr}");
    case.assert_nothing_left();
}

#[test]
fn a_registry_open_to_others_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let case = Case::new();
    let open = case.runtime_dir();
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, stderr) = hyoka(&case, &["sessions"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("lets others in"), "{stderr}");
    assert_eq!(
        std::fs::metadata(&open).unwrap().permissions().mode() & 0o777,
        0o777,
        "left as it was"
    );
}

// See: issue 24 (a dialog approved by hyoka: after a second tmux client of another size
// attached and left, the model no longer matched the pane, `wait --until idle` returned 0
// and the Enter of `hyoka send` approved the tool call).
#[test]
fn a_client_of_another_size_over_a_dialog_leaves_it_unanswered() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let name = format!("z{}", fastrand::u32(..));
    let mut running = case.start(
        &[
            "--backend",
            "tmux",
            "--name",
            &name,
            "--human-lock",
            "500ms",
        ],
        &case.sim(&["--start-working", "300ms", "--permission-on", "0"]),
    );
    case.wait_for(&mut running, "the permission dialog", |e| {
        e["event"] == "verdict_changed" && e["blocked"] == "permission"
    });
    // A person attaches from an 80x24 terminal, looks, and leaves.
    let mut person = Attached::new(&case, &name);
    person.command("refresh-client -C 80x24");
    wait_until("the agent to be resized to 80x24", || {
        case.resizes().iter().any(|r| r == "24x80")
    });
    person.detach();
    let window = || {
        let out = Command::new("tmux")
            .args([
                "-L",
                &format!("hyoka-{name}"),
                "display-message",
                "-p",
                "-t",
                &name,
            ])
            .arg("#{window_width}x#{window_height}")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let started = std::time::Instant::now();
    while window() != "120x40" {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the window stayed {} after the person left; the agent saw {:?}",
            window(),
            case.resizes()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    wait_until("the agent to be resized back", || {
        case.resizes().last().is_some_and(|r| r == "40x120")
    });
    // Whatever the screen went through, the dialog is still the verdict, `wait` does not
    // return idle, and `send` types nothing.
    let (code, _) = hyoka(
        &case,
        &["wait", &name, "--until", "idle", "--timeout", "3s"],
    );
    assert_eq!(code, Some(124), "{:#?}", case.events());
    let status = session(&case, &name).unwrap();
    assert_eq!(status["blocked"], "permission", "{status:#}");
    let (code, stderr) = hyoka(&case, &["send", &name, "yes"]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        !case.has(|e| e["event"] == "verdict_changed" && e["state"] == "idle"),
        "{:#?}",
        case.events()
    );
    let done = case.interrupt(&mut running);
    assert_eq!(done.code, Some(130), "{}", done.stderr);
    assert!(case.inputs().is_empty(), "typed: {:#?}", case.inputs());
    case.assert_nothing_left();
}

// See: issue 24 (a respawn run inside a tmux pane refused `hyoka send` for "person
// present": the pane's tmux answered the queries the agent's mirrored output asked, and the
// answers were read as a person typing and typed into the agent).
#[test]
fn the_answers_of_the_terminal_hyoka_runs_in_are_not_a_person() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let name = format!("q{}", fastrand::u32(..));
    let outer = format!("hyoka-outer-{name}");
    // The agent asks for the terminal's attributes and version, as Claude Code does, and
    // reads the answers of its own terminal (the session's tmux) for a second.
    let sim = Case::sim_recording(&case.record_path(), &[]).join(" ");
    let script = case.dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec env HYOKA_RUNTIME_DIR='{}' {} respawn --backend tmux --no-cycle --name {name} --reports '{}' --events '{}' -- sh -c 'stty raw -echo; printf \"\\033[c\\033[>0q\"; timeout --foreground 1 cat >/dev/null; stty sane; exec {sim}'\n",
            case.runtime_dir().display(),
            crate::support::hyoka_path(),
            case.dir.path().join("reports").display(),
            case.events_path().display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let started = Command::new("tmux")
        .args(["-L", &outer, "new-session", "-d", "-x", "120", "-y", "40"])
        .arg(&script)
        .env("HYOKA_TEST_MARK", &case.mark)
        .env_remove("TMUX")
        .status()
        .unwrap();
    assert!(started.success());
    wait_until("the mirrored session to be idle", || {
        session(&case, &name).is_some_and(|s| s["state"] == "idle")
    });
    // The pane's tmux has answered by now (its answers come back within milliseconds of the
    // query; idle takes longer): nobody is present, and a send is delivered.
    let status = session(&case, &name).unwrap();
    assert_eq!(status["human_present"], false, "{status:#}");
    assert!(!case.has(event("human_present")), "{:#?}", case.events());
    let (code, stderr) = hyoka(&case, &["send", &name, "hello there"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(submits(&case), ["hello there"]);
    // Nothing of the answers reached the agent: a tmux session answers its agent itself.
    let inputs = case.inputs();
    assert!(
        inputs
            .iter()
            .all(|i| !i["input"].as_str().unwrap_or_default().contains("?1;2c")),
        "{inputs:#?}"
    );
    assert_eq!(
        hyoka(&case, &["respawn", "--stop", "--name", &name]).0,
        Some(0)
    );
    let _ = Command::new("tmux")
        .args(["-L", &outer, "kill-server"])
        .status();
    wait_until("the controller to end", || case.marked_count() == 0);
    case.assert_nothing_left();
}

/// See: issue 27, "A tmux session whose controller was killed is listed by neither
/// `sessions` nor `ps`; `--stop` ends it but leaves its directory". The controller is
/// SIGKILLed; `--stop` ends the session and removes the session's run directory under
/// `--reports` with it.
#[test]
fn stop_of_an_orphaned_tmux_session_removes_its_directory() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let name = format!("o{}", fastrand::u32(..));
    let mut running = case.start(&["--tmux-session", &name, "--no-cycle"], &case.sim(&[]));
    case.wait_for(&mut running, "start", event("started"));
    let mut child = running.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let reports = case.dir.path().join("reports");
    let runs = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&reports)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    assert_eq!(runs().len(), 1, "the session's run directory: {:?}", runs());
    let reports_arg = reports.display().to_string();
    let (code, stderr) = hyoka(
        &case,
        &[
            "respawn",
            "--stop",
            "--tmux-session",
            &name,
            "--reports",
            &reports_arg,
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(runs().is_empty(), "left behind: {:?}", runs());
    let socket_dir = std::env::temp_dir().join(format!("hyoka-respawn-{name}"));
    assert!(
        !socket_dir.exists(),
        "left behind: {}",
        socket_dir.display()
    );
    case.assert_nothing_left();
}

/// `hyoka <args>` of the case: exit code, stdout and stderr.
fn hyoka_out(case: &Case, args: &[&str]) -> (Option<i32>, String, String) {
    let out = case.hyoka().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// See: issue 27, "A tmux session whose controller was killed is listed by neither
/// `sessions` nor `ps`". A tmux session started by `hyoka respawn --backend tmux` (no name:
/// the run id names it) whose controller is SIGKILLed is listed by both, marked orphaned,
/// in text and `--json`, with the command that stops it; that command ends it and removes
/// its run directory and socket directory, and nothing of it survives in /proc.
#[test]
fn an_orphaned_tmux_session_is_listed_by_sessions_and_ps_and_removable() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let reports = case.dir.path().join("reports");
    let reports_arg = reports.display().to_string();
    let mut running = case.start(&["--backend", "tmux", "--no-cycle"], &case.sim(&[]));
    case.wait_for(&mut running, "start", event("started"));
    let mut child = running.child.take().unwrap();
    let controller = child.id();
    // Supervised: listed as a live session, not as an orphan.
    let (code, listed, stderr) = hyoka_out(&case, &["sessions", "--reports", &reports_arg]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!listed.contains("orphaned"), "{listed}");
    child.kill().unwrap();
    child.wait().unwrap();

    // `hyoka sessions --json`: one orphaned row, with the proof and the commands.
    let (code, json, stderr) = hyoka_out(&case, &["sessions", "--json", "--reports", &reports_arg]);
    assert_eq!(code, Some(0), "{stderr}");
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let row = &rows[0];
    assert_eq!(row["orphaned"], true, "{row:#}");
    assert_eq!(row["backend"], "tmux", "{row:#}");
    assert_eq!(
        row["controller_pid"].as_u64(),
        Some(u64::from(controller)),
        "{row:#}"
    );
    let name = row["name"].as_str().unwrap().to_owned();
    let run_id = row["run_id"].as_str().unwrap().to_owned();
    assert_eq!(name, run_id, "an unnamed session is named after its run");
    assert_eq!(row["tmux"]["socket"], format!("hyoka-{name}"), "{row:#}");
    let pane = row["pid"].as_u64().and_then(|p| u32::try_from(p).ok());
    assert!(pane.is_some_and(crate::support::pid_alive), "{row:#}");
    let stop = format!("hyoka respawn --stop --tmux-session {name} --reports {reports_arg}");
    assert_eq!(row["stop"], stop.as_str(), "{row:#}");
    assert_eq!(
        row["run_dir"],
        reports.join(&run_id).display().to_string(),
        "{row:#}"
    );
    // In text: the name, that it is orphaned, and the command that stops it.
    let (code, text, stderr) = hyoka_out(&case, &["sessions", "--reports", &reports_arg]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        text.starts_with(&format!(
            "{name}  orphaned: its controller (pid {controller}) is gone"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("stop it:            {stop}")),
        "{text}"
    );
    // `wait` and `send` to it: exit 2, nothing typed, and they say why and what to do.
    for args in [
        vec!["wait", &name, "--until", "idle", "--timeout", "1s"],
        vec!["send", &name, "hello"],
    ] {
        let mut args = args;
        args.extend(["--reports", &reports_arg]);
        let (code, out, stderr) = hyoka_out(&case, &args);
        assert_eq!(code, Some(2), "{args:?}: {out}{stderr}");
        assert!(
            stderr.contains(&format!(
                "session {name:?} is orphaned: its controller (pid {controller}) died"
            )) && stderr.contains(&format!("stop it with `{stop}`")),
            "{args:?}: {stderr}"
        );
    }
    // Without the records (another --reports), nothing is claimed.
    let elsewhere = case.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, _, stderr) = hyoka_out(
        &case,
        &[
            "send",
            &name,
            "hello",
            "--reports",
            elsewhere.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no session named"), "{stderr}");
    let (_, text, _) = hyoka_out(
        &case,
        &["sessions", "--reports", elsewhere.to_str().unwrap()],
    );
    assert_eq!(text.trim(), "no supervised sessions");

    // `hyoka ps`: the run, orphaned, with its session and the command.
    let (code, text, stderr) = hyoka_out(&case, &["ps", "--reports", &reports_arg]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        text.contains(&format!(
            "run {run_id} (owner pid {controller} is gone; orphaned: its tmux session runs on"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("session: respawn session on tmux ({name})")),
        "{text}"
    );
    assert!(text.contains(&format!("  stop it: {stop}")), "{text}");
    let (code, json, stderr) = hyoka_out(&case, &["ps", "--json", "--reports", &reports_arg]);
    assert_eq!(code, Some(0), "{stderr}");
    let runs: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["run_id"], run_id.as_str());
    assert_eq!(runs[0]["activity"], "orphaned", "{:#}", runs[0]);
    assert_eq!(runs[0]["stop"], stop.as_str(), "{:#}", runs[0]);
    assert_eq!(
        runs[0]["phases"]["session"]["tmux_session"],
        name.as_str(),
        "{:#}",
        runs[0]
    );

    // The command it gives removes it all.
    let (code, out, stderr) = hyoka_out(
        &case,
        &[
            "respawn",
            "--stop",
            "--tmux-session",
            &name,
            "--reports",
            &reports_arg,
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        out.contains(&format!("stopped tmux session {name}")),
        "{out}"
    );
    let (_, text, _) = hyoka_out(&case, &["sessions", "--reports", &reports_arg]);
    assert_eq!(text.trim(), "no supervised sessions");
    let (_, text, _) = hyoka_out(&case, &["ps", "--reports", &reports_arg]);
    assert_eq!(text.trim(), "no live runs");
    let socket_dirs: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("hyoka-{run_id}-"))
        })
        .map(|e| e.path())
        .collect();
    assert!(socket_dirs.is_empty(), "left behind: {socket_dirs:?}");
    case.assert_nothing_left();
}

/// The `supervise it again` command an orphaned session is listed with works as printed: a
/// new controller takes the session over, what the dead one left (its run directory, its
/// hook socket directory) goes, and the session is listed as supervised, not orphaned.
#[test]
fn an_orphaned_tmux_session_is_supervised_again_by_the_command_it_is_listed_with() {
    if skip_without_tmux() {
        return;
    }
    let case = Case::new();
    let reports = case.dir.path().join("reports");
    let reports_arg = reports.display().to_string();
    let mut running = case.start(&["--backend", "tmux", "--no-cycle"], &case.sim(&[]));
    case.wait_for(&mut running, "start", event("started"));
    let mut child = running.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let (_, json, _) = hyoka_out(&case, &["sessions", "--json", "--reports", &reports_arg]);
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let name = rows[0]["name"].as_str().unwrap().to_owned();
    assert_eq!(
        rows[0]["supervise"],
        format!("hyoka respawn --tmux-session {name} --reports {reports_arg}").as_str()
    );
    let dead_dirs = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("hyoka-{name}-"))
            })
            .map(|e| e.path())
            .chain(
                std::fs::read_dir(&reports)
                    .unwrap()
                    .flatten()
                    .map(|e| e.path()),
            )
            .collect()
    };
    assert_eq!(dead_dirs().len(), 2, "{:?}", dead_dirs());
    let events = case.dir.path().join("again.jsonl");
    let mut again = case.start_logging(&events, &["--tmux-session", &name, "--no-cycle"], &[]);
    wait_until("the session to be supervised again", || {
        session(&case, &name).is_some_and(|s| s["orphaned"].is_null())
    });
    let (_, text, _) = hyoka_out(&case, &["sessions", "--reports", &reports_arg]);
    assert!(!text.contains("orphaned"), "{text}");
    let left: Vec<_> = dead_dirs()
        .into_iter()
        .filter(|d| !d.starts_with(&reports) || d.ends_with(&name))
        .collect();
    assert!(left.is_empty(), "the dead controller's records: {left:?}");
    let (code, stderr) = hyoka(&case, &["respawn", "--stop", "--name", &name]);
    assert_eq!(code, Some(0), "{stderr}");
    let done = case.finish(&mut again);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    case.assert_nothing_left();
}
