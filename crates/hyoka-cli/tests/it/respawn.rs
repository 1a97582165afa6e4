//! `hyoka respawn` end to end, over a real PTY and over tmux (skipped with a message when
//! tmux is not installed), with `hyoka sim-agent --interactive` as the agent. Real clock,
//! short timeouts, readiness taken from the `--events` file; every test proves through
//! `/proc` that nothing it started is left running.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{hyoka, hyoka_path, tmux_installed};

/// Timings short enough for tests, long enough for a loaded 2-core machine.
pub(crate) const FAST: &[&str] = &[
    "--headless",
    "",
    "--completion-confirm",
    "300ms",
    "--inter-step-delay",
    "150ms",
    "--no-output-timeout",
    "3s",
    "--auto-accept-delay",
    "600ms",
    "--grace",
    "2s",
];

/// How long any single run may take before the test gives up (and kills it).
pub(crate) const DEADLINE: Duration = Duration::from_mins(1);

/// One respawn run: a scratch directory with the events and record files and the session
/// registry, and a marker in the environment that every process of the run inherits.
pub(crate) struct Case {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) mark: String,
}

/// A running `hyoka respawn`, killed (with its group) if the test fails.
pub(crate) struct Running {
    pub(crate) child: Option<Child>,
}

impl Drop for Running {
    /// A failing test still stops its run the clean way (SIGINT), and kills it only if that
    /// does not work within a few seconds.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = i32::try_from(child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(10) {
                if child.try_wait().is_ok_and(|s| s.is_some()) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub(crate) struct Finished {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Finished {
    /// The `--json` summary on stdout.
    #[track_caller]
    pub(crate) fn summary(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON summary ({e}): {:?}", self.stdout))
    }
}

impl Case {
    pub(crate) fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("respawn-test-")
            .tempdir()
            .unwrap();
        let mark = format!("{}-{}", std::process::id(), fastrand::u64(..));
        Self { dir, mark }
    }

    pub(crate) fn events_path(&self) -> PathBuf {
        self.dir.path().join("events.jsonl")
    }

    pub(crate) fn record_path(&self) -> PathBuf {
        self.dir.path().join("inputs.jsonl")
    }

    /// The session registry of this case's controllers.
    pub(crate) fn runtime_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// `hyoka <args>` with this case's registry and marker.
    pub(crate) fn hyoka(&self) -> Command {
        let mut cmd = hyoka();
        cmd.env("HYOKA_RUNTIME_DIR", self.runtime_dir())
            .env("HYOKA_TEST_MARK", &self.mark);
        cmd
    }

    /// `hyoka sim-agent --interactive --record … <extra>`.
    pub(crate) fn sim(&self, extra: &[&str]) -> Vec<String> {
        Self::sim_recording(&self.record_path(), extra)
    }

    /// `hyoka sim-agent --interactive --record RECORD <extra>`.
    pub(crate) fn sim_recording(record: &std::path::Path, extra: &[&str]) -> Vec<String> {
        let mut argv = vec![
            hyoka_path().to_owned(),
            "sim-agent".to_owned(),
            "--interactive".to_owned(),
            "--record".to_owned(),
            record.display().to_string(),
        ];
        argv.extend(extra.iter().map(|s| (*s).to_owned()));
        argv
    }

    pub(crate) fn start(&self, flags: &[&str], agent: &[String]) -> Running {
        self.start_logging(&self.events_path(), flags, agent)
    }

    /// [`Case::start`] with its own `--events` file (for several controllers at once).
    pub(crate) fn start_logging(
        &self,
        events: &std::path::Path,
        flags: &[&str],
        agent: &[String],
    ) -> Running {
        // The test's own flags replace the fast defaults of the same name.
        let mut defaults: Vec<&str> = Vec::new();
        for pair in FAST.chunks(2) {
            if !flags.contains(&pair[0]) {
                defaults.extend(pair.iter().copied().filter(|a| !a.is_empty()));
            }
        }
        let mut cmd = self.hyoka();
        cmd.arg("respawn")
            .arg("--reports")
            .arg(self.dir.path().join("reports"))
            .arg("--events")
            .arg(events)
            .args(&defaults)
            .args(flags)
            .arg("--")
            .args(agent)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Running {
            child: Some(cmd.spawn().unwrap()),
        }
    }

    pub(crate) fn run(&self, flags: &[&str], agent: &[String]) -> Finished {
        let mut running = self.start(flags, agent);
        self.finish(&mut running)
    }

    pub(crate) fn finish(&self, running: &mut Running) -> Finished {
        let mut child = running.child.take().unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let (mut stdout, mut stderr) = (String::new(), String::new());
                if let Some(mut pipe) = child.stdout.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stdout);
                }
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                return Finished {
                    code: status.code(),
                    stdout,
                    stderr,
                };
            }
            if started.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "hyoka respawn did not finish in {DEADLINE:?}: {:#?}",
                    self.events()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn interrupt(&self, running: &mut Running) -> Finished {
        let pid = running.child.as_ref().unwrap().id();
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap(),
            rustix::process::Signal::INT,
        )
        .unwrap();
        self.finish(running)
    }

    pub(crate) fn events(&self) -> Vec<Value> {
        read_lines(&self.events_path())
    }

    /// What reached the simulated agent as input (its size changes left out).
    pub(crate) fn inputs(&self) -> Vec<Value> {
        read_lines(&self.record_path())
            .into_iter()
            .filter(|i| i["kind"] != "resize")
            .collect()
    }

    /// The simulated agent's terminal sizes after the first, as `ROWSxCOLS`.
    pub(crate) fn resizes(&self) -> Vec<String> {
        read_lines(&self.record_path())
            .iter()
            .filter(|i| i["kind"] == "resize")
            .map(|i| i["input"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Waits (real time, bounded) until an event matching `pred` is written; fails at once
    /// if the run ends first.
    #[track_caller]
    pub(crate) fn wait_for(
        &self,
        running: &mut Running,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) {
        let started = Instant::now();
        while started.elapsed() < DEADLINE {
            if self.events().iter().any(&pred) {
                return;
            }
            let child = running.child.as_mut().unwrap();
            if let Some(status) = child.try_wait().unwrap() {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                panic!(
                    "the run ended ({status}) before any {what} event: {stderr}\n{:#?}",
                    self.events()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no {what} event within {DEADLINE:?}: {:#?}", self.events());
    }

    pub(crate) fn has(&self, pred: impl Fn(&Value) -> bool) -> bool {
        self.events().iter().any(pred)
    }

    /// How many live processes carry this case's marker.
    pub(crate) fn marked_count(&self) -> usize {
        self.marked().len()
    }

    /// The live processes carrying this case's marker (a tmux server included).
    fn marked(&self) -> Vec<u32> {
        let needle = format!("HYOKA_TEST_MARK={}", self.mark);
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
                    && crate::support::pid_alive(*pid)
            })
            .collect()
    }

    /// No process of this case is alive (zombies count as gone), no tmux socket is left.
    #[track_caller]
    pub(crate) fn assert_nothing_left(&self) {
        let left: Vec<String> = self
            .marked()
            .into_iter()
            .map(|pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                format!("{pid} {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
            })
            .collect();
        assert!(left.is_empty(), "left running: {left:#?}");
        // A session torn down without survivors removes its ledger directory.
        let dirs: Vec<_> = std::fs::read_dir(self.dir.path().join("reports"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(dirs.is_empty(), "left in reports/: {dirs:#?}");
    }
}

impl Drop for Case {
    /// A failing test leaks nothing: whatever still carries the case's marker (a tmux server
    /// whose socket is gone included) is killed.
    fn drop(&mut self) {
        for pid in self.marked() {
            if let Some(pid) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

pub(crate) fn read_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub(crate) fn event(name: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["event"] == name
}

pub(crate) fn submits(case: &Case) -> Vec<String> {
    case.inputs()
        .iter()
        .filter(|i| i["kind"] == "submit")
        .map(|i| i["input"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn full_cycle(backend: &str) {
    let case = Case::new();
    let done = case.run(
        &["--backend", backend, "--max-cycles", "1", "--json"],
        &case.sim(&["--start-working", "600ms", "--work", "600ms"]),
    );
    assert_eq!(done.code, Some(0), "{}\n{:#?}", done.stderr, case.events());
    let summary = done.summary();
    assert_eq!(summary["outcome"], "budget_exhausted", "{summary:#}");
    assert_eq!(summary["cycles"], 1, "{summary:#}");
    assert_eq!(summary["teardown"]["survivors"], 0, "{summary:#}");
    assert!(summary["run_id"].as_str().unwrap().starts_with("respawn-"));
    assert_eq!(
        submits(&case),
        [
            "write a brief progress summary to CLAUDE.md noting what you accomplished, then continue working.",
            "/clear",
            "/init"
        ]
    );
    for input in case.inputs() {
        assert_eq!(input["state"], "idle", "typed into a busy session: {input}");
    }
    let steps: Vec<_> = case
        .events()
        .iter()
        .filter(|e| e["event"] == "step_completed")
        .map(|e| e["step"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(steps, ["update", "clear", "init"]);
    assert!(case.has(event("budget_exhausted")));
    assert!(case.has(|e| e["event"] == "teardown" && e["survivors"] == 0));
    case.assert_nothing_left();
}

#[test]
fn pty_a_full_cycle_in_order() {
    full_cycle("pty");
}

#[test]
fn tmux_a_full_cycle_in_order() {
    if !tmux_installed() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    full_cycle("tmux");
}

#[test]
fn pty_a_busy_tree_behind_an_idle_prompt_is_left_alone() {
    busy_tree_left_alone("pty");
}

#[test]
fn tmux_a_busy_tree_behind_an_idle_prompt_is_left_alone() {
    if !tmux_installed() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    busy_tree_left_alone("tmux");
}

fn busy_tree_left_alone(backend: &str) {
    // The agent finishes its task and shows its prompt, but a child it started keeps a
    // core busy (a build in the background): the tree's CPU keeps the verdict `working`,
    // so the idle screen is rejected and nothing is typed.
    let case = Case::new();
    let sim: Vec<String> = case
        .sim(&["--start-working", "300ms"])
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let script = format!("while :; do :; done & exec {}", sim.join(" "));
    let mut running = case.start(
        &[
            "--backend",
            backend,
            "--completion-confirm",
            "3s",
            "--no-output-timeout",
            "3s",
        ],
        &["sh".to_owned(), "-c".to_owned(), script],
    );
    case.wait_for(&mut running, "idle_rejected or step_sent", |e| {
        e["event"] == "idle_rejected" || e["event"] == "step_sent"
    });
    let done = case.interrupt(&mut running);
    assert_eq!(done.code, Some(130), "{}", done.stderr);
    assert!(
        submits(&case).is_empty(),
        "typed while the tree was busy: {:#?}",
        case.inputs()
    );
    assert!(!case.has(event("step_sent")), "{:#?}", case.events());
    case.assert_nothing_left();
}

#[test]
fn nothing_is_typed_while_the_agent_is_busy() {
    // Three seconds of work at the start, then two seconds per step: every input must
    // arrive while the agent is idle, and none before the first task ended.
    let case = Case::new();
    let done = case.run(
        &["--max-cycles", "1", "--no-output-timeout", "1s"],
        &case.sim(&["--start-working", "3s", "--work", "2s"]),
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let inputs = case.inputs();
    assert_eq!(inputs.len(), 3, "{inputs:#?}");
    for input in &inputs {
        assert_eq!(input["state"], "idle", "{input}");
    }
    assert!(inputs[0]["t_ms"].as_u64().unwrap() >= 3_000);
    case.assert_nothing_left();
}

fn permission_left_alone(backend: &str) {
    let case = Case::new();
    let mut running = case.start(
        &["--backend", backend, "--no-output-timeout", "1s"],
        &case.sim(&["--start-working", "300ms", "--permission-on", "0"]),
    );
    case.wait_for(&mut running, "blocked(permission)", |e| {
        e["event"] == "blocked" && e["reason"] == "session_blocked"
    });
    case.wait_for(&mut running, "auto-accept refusal", |e| {
        e["event"] == "auto_accept_skipped" && e["skip"]["why"] == "human_decision"
    });
    let done = case.interrupt(&mut running);
    assert_eq!(done.code, Some(130), "{}", done.stderr);
    assert!(case.inputs().is_empty(), "{:#?}", case.inputs());
    case.assert_nothing_left();
}

#[test]
fn pty_a_permission_prompt_is_left_alone() {
    permission_left_alone("pty");
}

#[test]
fn tmux_a_permission_prompt_is_left_alone() {
    if !tmux_installed() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    permission_left_alone("tmux");
}

#[test]
fn a_plan_menu_is_accepted() {
    let case = Case::new();
    let done = case.run(
        &["--max-cycles", "1"],
        &case.sim(&[
            "--start-working",
            "300ms",
            "--plan-on",
            "0",
            "--work",
            "600ms",
        ]),
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let inputs = case.inputs();
    assert_eq!(inputs[0]["state"], "plan", "{inputs:#?}");
    assert_eq!(inputs[0]["input"], "\r");
    assert!(case.has(event("auto_accept_sent")));
    assert_eq!(submits(&case).len(), 3, "then one full cycle");
    case.assert_nothing_left();
}

#[test]
fn a_dry_run_types_nothing() {
    let case = Case::new();
    let done = case.run(
        &["--dry-run", "--max-cycles", "1"],
        &case.sim(&["--start-working", "300ms"]),
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(case.inputs().is_empty(), "{:#?}", case.inputs());
    let dry: Vec<_> = case
        .events()
        .into_iter()
        .filter(|e| e["event"] == "step_sent" && e["dry_run"] == true)
        .collect();
    assert_eq!(dry.len(), 3, "{dry:#?}");
    case.assert_nothing_left();
}

#[test]
fn an_agent_that_exits_at_once() {
    let case = Case::new();
    let done = case.run(&[], &["true".to_owned()]);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(case.has(event("session_exited")));
    assert!(
        done.stdout.is_empty(),
        "no summary without --json: {}",
        done.stdout
    );
    let done = case.run(&["--json"], &["false".to_owned()]);
    assert_eq!(done.code, Some(1), "{}", done.stderr);
    let summary = done.summary();
    assert_eq!(summary["outcome"], "session_ended", "{summary:#}");
    assert_eq!(summary["exit_code"], 1, "{summary:#}");
    assert_eq!(summary["events"], case.events_path().display().to_string());
    let errors: Vec<_> = done
        .stderr
        .lines()
        .filter(|l| l.starts_with("error:"))
        .collect();
    assert_eq!(
        errors,
        ["error: the agent exited with code 1"],
        "{}",
        done.stderr
    );
    case.assert_nothing_left();
}

#[test]
fn an_agent_that_never_draws() {
    let case = Case::new();
    let mut running = case.start(
        &["--no-output-timeout", "500ms"],
        &["sleep".to_owned(), "60".to_owned()],
    );
    case.wait_for(&mut running, "blocked(no output)", |e| {
        e["event"] == "blocked" && e["reason"] == "no_output_yet"
    });
    let done = case.interrupt(&mut running);
    assert_eq!(done.code, Some(130), "{}", done.stderr);
    assert!(!case.has(event("step_sent")));
    case.assert_nothing_left();
}

#[test]
fn an_agent_that_floods_output() {
    let case = Case::new();
    let mut running = case.start(
        &[],
        &[
            "sh".to_owned(),
            "-c".to_owned(),
            "while :; do echo 'flood flood flood flood flood flood'; done".to_owned(),
        ],
    );
    case.wait_for(&mut running, "start", event("started"));
    let done = case.interrupt(&mut running);
    assert_eq!(done.code, Some(130), "{}", done.stderr);
    assert!(case.has(|e| e["event"] == "finished" && e["outcome"] == "interrupted"));
    case.assert_nothing_left();
}

#[test]
fn an_agent_that_closes_its_terminal() {
    // Its terminal closes while the process lives on: the session is over, and the process
    // is stopped with it.
    let case = Case::new();
    let done = case.run(
        &[],
        &[
            "sh".to_owned(),
            "-c".to_owned(),
            "echo bye; exec </dev/null >/dev/null 2>&1; sleep 60".to_owned(),
        ],
    );
    assert_eq!(done.code, Some(1), "{}", done.stderr);
    assert!(done.stderr.contains("error: "), "{}", done.stderr);
    assert!(case.has(event("session_exited")));
    case.assert_nothing_left();
}

#[test]
fn a_tmux_server_that_disappears() {
    if !tmux_installed() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let case = Case::new();
    let session = format!("t{}", fastrand::u32(..));
    let mut running = case.start(
        &["--backend", "tmux", "--tmux-session", &session],
        &case.sim(&["--start-working", "60s"]),
    );
    case.wait_for(&mut running, "start", event("started"));
    let killed = Command::new("tmux")
        .args(["-L", &format!("hyoka-{session}"), "kill-server"])
        .status()
        .unwrap();
    assert!(killed.success());
    let done = case.finish(&mut running);
    assert_eq!(done.code, Some(1), "{}", done.stderr);
    assert!(case.has(|e| e["event"] == "finished" && e["outcome"] == "session_ended"));
    case.assert_nothing_left();
}

/// See: issue 27, "Re-attaching a missing tmux session says `cannot start \"\"`". Without
/// a command there is nothing to start: the error names the session and what to do.
#[test]
fn re_attaching_a_missing_tmux_session_says_so() {
    if !tmux_installed() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let case = Case::new();
    let session = format!("gone{}", fastrand::u32(..));
    let done = case.run(&["--backend", "tmux", "--tmux-session", &session], &[]);
    assert_eq!(done.code, Some(1), "{}", done.stderr);
    assert!(
        done.stderr.contains(&format!(
            "no tmux session \"{session}\" to re-attach: it ended or was never started"
        )) && !done.stderr.contains("cannot start \"\""),
        "{}",
        done.stderr
    );
    case.assert_nothing_left();
}

#[test]
fn checkers_that_hang_crash_or_print_garbage() {
    for (checker, expect) in [
        ("sleep 100", "timed out"),
        ("echo boom >&2; exit 3", "boom"),
        ("echo 'hello there'", "could not parse"),
        // A checker that leaves a daemon in a session of its own (answering only once the
        // daemon is set up): out of the checker's group, but it carries the run's marker,
        // so the final sweep stops it.
        (
            "setsid sh -c 'touch \"$0\"; exec sleep 300' \"$DIR/daemon\" </dev/null >/dev/null 2>&1 & \
             while [ ! -e \"$DIR/daemon\" ]; do sleep 0.01; done; echo 'not a verdict'",
            "could not parse",
        ),
    ] {
        let case = Case::new();
        let checker = checker.replace("$DIR", &case.dir.path().display().to_string());
        let mut running = case.start(
            &["--ai-check-command", &checker, "--check-timeout", "1s"],
            &case.sim(&["--start-working", "300ms"]),
        );
        case.wait_for(&mut running, "check failure", |e| {
            e["event"] == "idle_check_failed"
                && e["message"].as_str().is_some_and(|m| m.contains(expect))
        });
        let done = case.interrupt(&mut running);
        assert_eq!(done.code, Some(130), "{checker}: {}", done.stderr);
        assert!(case.inputs().is_empty(), "{checker}: {:#?}", case.inputs());
        case.assert_nothing_left();
    }
}

#[test]
fn hooks_reach_the_controller() {
    // The agent calls `hyoka hook` the way a Claude Code hook would, with the socket from
    // its environment.
    let case = Case::new();
    let script = format!(
        "printf 'ready\\n'; echo '{{\"hook_event_name\":\"Stop\"}}' | '{}' hook stop; exec sleep 60",
        hyoka_path()
    );
    let mut running = case.start(
        &["--no-output-timeout", "60s", "--completion-confirm", "30s"],
        &["sh".to_owned(), "-c".to_owned(), script],
    );
    case.wait_for(&mut running, "hook", |e| {
        e["event"] == "hook_received" && e["hook"] == "stop" && e["accepted"] == true
    });
    let done = case.interrupt(&mut running);
    assert_eq!(done.code, Some(130), "{}", done.stderr);
    case.assert_nothing_left();
}

#[test]
fn a_hook_without_a_controller_is_harmless() {
    let out = hyoka()
        .args(["hook", "stop"])
        .env_remove("HYOKA_RESPAWN_SOCKET")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = hyoka()
        .args(["hook", "stop"])
        .env("HYOKA_RESPAWN_SOCKET", "/nonexistent/hook.sock")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "never disturb the agent");
}

#[test]
fn installing_hooks_merges_and_never_clobbers() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join(".claude/settings.local.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"permissions":{"allow":["Bash(ls)"]},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"mine"}]}]}}"#,
    )
    .unwrap();
    let install = || {
        hyoka()
            .args(["hook", "--install-claude-hooks", "--dir"])
            .arg(dir.path())
            .output()
            .unwrap()
    };
    let out = install();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = std::fs::read_to_string(&settings).unwrap();
    let value: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(value["permissions"]["allow"][0], "Bash(ls)");
    let stop = value["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "the user's Stop hook stays: {stop:#?}");
    assert_eq!(stop[0]["hooks"][0]["command"], "mine");
    assert!(
        stop[1]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook stop")
    );
    assert!(
        value["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook user_prompt_submit")
    );
    let matchers: Vec<_> = value["hooks"]["Notification"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["matcher"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        matchers,
        ["idle_prompt", "permission_prompt", "elicitation_dialog"]
    );
    // Twice is the same as once; --json says so.
    let out = hyoka()
        .args(["hook", "--install-claude-hooks", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"], 0, "{report:#}");
    assert_eq!(report["present"], 5, "{report:#}");
    assert_eq!(report["path"], settings.display().to_string());
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), first);
    // --json belongs to the install; a forwarded hook prints nothing.
    for extra in [&["--json"][..], &["--dir", "/tmp"]] {
        let out = hyoka()
            .args(["hook", "stop"])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(out.stdout.is_empty());
    }
    // A file that is not JSON is left alone, with exit 2.
    std::fs::write(&settings, "{ not json").unwrap();
    let out = install();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{ not json");
}

#[test]
fn tmux_the_session_survives_a_restart_of_hyoka_and_is_re_attached() {
    if !tmux_installed() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let case = Case::new();
    let session = format!("r{}", fastrand::u32(..));
    let tmux_has = || {
        Command::new("tmux")
            .args([
                "-L",
                &format!("hyoka-{session}"),
                "has-session",
                "-t",
                &session,
            ])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let flags = ["--backend", "tmux", "--tmux-session", session.as_str()];
    let mut first = case.start(
        &flags,
        &case.sim(&["--start-working", "1s", "--work", "600ms"]),
    );
    case.wait_for(&mut first, "start", event("started"));
    // hyoka dies without any chance to clean up.
    let mut child = first.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(tmux_has(), "the agent's tmux session survives hyoka");
    // A new hyoka re-attaches to the same session and runs the cycle.
    let done = case.run(
        &[&flags[..], &["--max-cycles", "1"]].concat(),
        &case.sim(&["--start-working", "1s"]),
    );
    assert_eq!(done.code, Some(0), "{}\n{:#?}", done.stderr, case.events());
    assert_eq!(submits(&case).len(), 3, "{:#?}", case.inputs());
    assert!(!tmux_has(), "stopped at the end of the second run");
    case.assert_nothing_left();
}

/// The controller itself is SIGKILLed: the PTY hangup ends the session's own process group,
/// and what detached from it (a `setsid` child) is in the ledger, so `hyoka clean` stops it.
#[test]
fn clean_repairs_a_sigkilled_controller() {
    let dir = tempfile::Builder::new()
        .prefix("respawn-crash-")
        .tempdir()
        .unwrap();
    let reports = dir.path().join("reports");
    let pidfile = dir.path().join("escapee.pid");
    let script = format!(
        "setsid sleep 300 & echo $! > {p}.tmp && mv {p}.tmp {p}; exec sleep 300",
        p = pidfile.display()
    );
    let mut child = hyoka()
        .env("HYOKA_RUNTIME_DIR", dir.path().join("run"))
        .args(["respawn", "--headless", "--reports"])
        .arg(&reports)
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let escapee = crate::support::read_pid(&pidfile);
    crate::support::wait_until("the ledger to list the escapee", || {
        std::fs::read_dir(&reports)
            .into_iter()
            .flatten()
            .flatten()
            .any(|run| {
                std::fs::read_to_string(run.path().join("pids.txt")).is_ok_and(|l| {
                    l.lines()
                        .any(|line| line.starts_with(&format!("{escapee}\t")))
                })
            })
    });
    crate::support::send(&child, rustix::process::Signal::KILL);
    child.wait().unwrap();
    assert!(
        crate::support::pid_alive(escapee),
        "the escapee outlives the hangup on its own"
    );
    let out = hyoka()
        .args(["clean", "--grace", "1s", "--reports"])
        .arg(&reports)
        .arg("--workspace-root")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        !crate::support::pid_alive(escapee),
        "clean did not stop the escapee"
    );
}

/// `hyoka respawn` mirrored (no `--headless`) on a real terminal the test holds the other
/// end of, as a person's terminal: their keys, the screen they see, resizes.
pub(crate) struct Mirror {
    master: std::os::fd::OwnedFd,
    child: Child,
    screen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    done: std::sync::mpsc::Receiver<()>,
    log: PathBuf,
}

const COOKED: rustix::termios::LocalModes =
    rustix::termios::LocalModes::ICANON.union(rustix::termios::LocalModes::ECHO);

fn winsize(rows: u16, cols: u16) -> rustix::termios::Winsize {
    rustix::termios::Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

impl Mirror {
    /// Starts `hyoka respawn <flags> -- <agent>` on a new terminal, and waits until it is
    /// in raw mode.
    pub(crate) fn start(case: &Case, flags: &[&str], agent: &[String]) -> Self {
        use std::os::fd::BorrowedFd;
        use std::os::unix::process::CommandExt as _;

        use rustix::fs::{Mode, OFlags};
        use rustix::pty::OpenptFlags;
        use rustix::termios::{tcgetattr, tcsetwinsize};

        let master =
            rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)
                .unwrap();
        rustix::pty::grantpt(&master).unwrap();
        rustix::pty::unlockpt(&master).unwrap();
        let name = rustix::pty::ptsname(&master, Vec::new()).unwrap();
        let slave = rustix::fs::open(
            name.as_c_str(),
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        tcsetwinsize(&master, winsize(30, 100)).unwrap();
        assert!(tcgetattr(&master).unwrap().local_modes.contains(COOKED));
        let log = case.dir.path().join("stderr.log");
        let mut cmd = case.hyoka();
        cmd.arg("respawn")
            .arg("--reports")
            .arg(case.dir.path().join("reports"))
            .arg("--events")
            .arg(case.events_path())
            .args(flags)
            .arg("--")
            .args(agent)
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()));
        // SAFETY: `setsid` and the TIOCSCTTY ioctl are async-signal-safe; they make the
        // terminal hyoka's controlling terminal, so resizes reach it as SIGWINCH.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::setsid()?;
                rustix::process::ioctl_tiocsctty(BorrowedFd::borrow_raw(0))?;
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        // The command holds copies of the terminal too: only hyoka may keep it open.
        drop(cmd);
        drop(slave);
        // The terminal's output, read until hyoka and everything on the terminal are gone.
        let screen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (done_tx, done) = std::sync::mpsc::channel();
        let reader = {
            let (master, screen) = (master.try_clone().unwrap(), screen.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = rustix::io::read(&master, &mut buf) {
                    screen.lock().unwrap().extend_from_slice(&buf[..n]);
                }
                let _ = done_tx.send(());
            })
        };
        let mirror = Self {
            master,
            child,
            screen,
            reader: Some(reader),
            done,
            log,
        };
        crate::support::wait_until("raw mode", || !mirror.cooked());
        mirror
    }

    fn cooked(&self) -> bool {
        rustix::termios::tcgetattr(&self.master)
            .unwrap()
            .local_modes
            .intersects(COOKED)
    }

    /// Whether the terminal has shown `text`.
    pub(crate) fn shown(&self, text: &str) -> bool {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).contains(text)
    }

    /// Types `keys` on the terminal.
    pub(crate) fn type_keys(&self, keys: &[u8]) {
        rustix::io::write(&self.master, keys).unwrap();
    }

    fn resize(&self, rows: u16, cols: u16) {
        rustix::termios::tcsetwinsize(&self.master, winsize(rows, cols)).unwrap();
    }

    /// Waits (bounded) for hyoka to exit and the terminal to close; returns the exit code
    /// and hyoka's stderr. The terminal must be back in cooked mode.
    pub(crate) fn finish(mut self) -> (Option<i32>, String) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(started.elapsed() < DEADLINE, "hyoka did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        assert!(self.cooked(), "the terminal was left in raw mode");
        self.done
            .recv_timeout(DEADLINE)
            .expect("the terminal closed after hyoka exited");
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (status.code(), log)
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The mirrored session (no `--headless`) on a real terminal: raw mode while it runs, the
/// agent's screen shown, your keys reaching the agent and pausing automation, resizes
/// forwarded, Ctrl-] detaching, and the terminal restored afterwards.
#[test]
fn a_mirrored_session_on_a_real_terminal() {
    let case = Case::new();
    let mirror = Mirror::start(
        &case,
        &[
            "--completion-confirm",
            "60s",
            "--no-output-timeout",
            "60s",
            "--grace",
            "2s",
        ],
        &case.sim(&[]),
    );
    crate::support::wait_until("the agent's screen mirrored", || {
        mirror.shown("Welcome to the hyoka simulated agent")
    });
    mirror.type_keys(b"hi\r");
    crate::support::wait_until("the typed line to reach the agent", || {
        submits(&case) == ["hi"]
    });
    crate::support::wait_until("automation to pause for the human", || {
        case.has(event("human_present"))
    });
    mirror.resize(33, 101);
    crate::support::wait_until("the resize to reach the agent", || {
        case.resizes().contains(&"33x101".to_owned())
    });
    mirror.type_keys(&[0x1d]);
    let (code, log) = mirror.finish();
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(submits(&case), ["hi"], "only the human's line was typed");
    case.assert_nothing_left();
}

#[test]
fn tmux_reports_how_the_agent_exited() {
    if !tmux_installed() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    // Each agent draws an idle prompt box and waits for the controller's first line (so it is
    // attached), then ends. (A screen no rule reads is never typed into, issue 24: the
    // controller types only on a verdict that says idle.)
    for (end, code, signal, error) in [
        ("exit 0", Some(0), None, None),
        (
            "exit 3",
            Some(3),
            None,
            Some("the agent exited with code 3"),
        ),
        (
            "kill -TERM $$",
            None,
            Some(15),
            Some("the agent was killed by signal 15"),
        ),
    ] {
        let case = Case::new();
        let script = format!("printf '───────\\n❯ \\n───────\\n'; read line; {end}");
        let done = case.run(
            &["--backend", "tmux", "--json"],
            &["sh".to_owned(), "-c".to_owned(), script],
        );
        let summary = done.summary();
        assert_eq!(summary["outcome"], "session_ended", "{end}: {summary:#}");
        assert_eq!(summary["exit_code"].as_i64(), code, "{end}: {summary:#}");
        assert_eq!(
            summary["exit_signal"].as_i64(),
            signal,
            "{end}: {summary:#}"
        );
        let errors: Vec<_> = done
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix("error: "))
            .collect();
        assert_eq!(errors, error.into_iter().collect::<Vec<_>>(), "{end}");
        assert_eq!(
            done.code,
            Some(i32::from(error.is_some())),
            "{end}: {}",
            done.stderr
        );
        case.assert_nothing_left();
    }
}
