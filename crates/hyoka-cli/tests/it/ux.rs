//! What a new user meets first (issue 12, "output people read"): hints for a misplaced
//! command, hooks that never block the agent, logs without colour codes in files and pipes,
//! messages in the right words, suite commands as strings; and the simulated agent leaving
//! nothing in the temporary directory.

use std::process::Stdio;

use crate::support::{Scratch, escapee_pids, hyoka, pid_alive, read_pid, send, stderr};

#[track_caller]
fn refused(s: &Scratch, args: &[&str], mentions: &str) {
    let out = s.run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].contains(mentions), "{args:?}: {err}");
    assert!(
        !s.reports().exists(),
        "{args:?} created the reports directory"
    );
    s.assert_no_workspaces();
}

/// Regression test for issue 12: `hyoka run echo hi` said only "unexpected argument 'echo'",
/// and `--shard` without `--suite` was accepted and ignored.
#[test]
fn a_command_without_dashes_gets_a_hint_and_a_shard_needs_a_suite() {
    let s = Scratch::new();
    refused(
        &s,
        &["--timeout", "5s", "echo", "hi"],
        "put the agent command after `--`: hyoka run [OPTIONS] -- echo hi",
    );
    refused(
        &s,
        &["--shard", "1/2", "--", "true"],
        "--shard needs --suite",
    );
    refused(&s, &[], "no agent command");
}

/// Regression test for issue 12: `hyoka hook` with an unknown event exited 2, which Claude
/// Code takes as "block" for a Stop hook. A hook never blocks the agent because of hyoka: it
/// warns on stderr and exits 0, printing nothing on stdout (Claude Code reads it).
#[test]
fn an_unknown_hook_event_never_blocks_the_agent() {
    for socket in [None, Some("/nonexistent/hook.sock")] {
        let mut command = hyoka();
        command.args(["hook", "subagent_stop"]);
        match socket {
            Some(path) => command.env("HYOKA_RESPAWN_SOCKET", path),
            None => command.env_remove("HYOKA_RESPAWN_SOCKET"),
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            br#"{"hook_event_name":"SubagentStop"}"#,
        )
        .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{socket:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
        assert!(
            stderr(&out).contains("unknown hook event \"subagent_stop\""),
            "{}",
            stderr(&out)
        );
    }
}

/// Regression test for issue 12: log lines written to a file or a pipe carried ANSI colour
/// codes (`^[[33m WARN`), and `hyoka respawn` said it was "stopping every eval". Colour only
/// on a terminal; a session is a session.
#[test]
fn logs_to_a_pipe_carry_no_colour_and_respawn_speaks_of_sessions() {
    let s = Scratch::new();
    let ready = s.path().join("ready");
    let respawn = hyoka()
        .args(["respawn", "--headless", "--grace", "1s", "--reports"])
        .arg(s.reports())
        .args(["--", "sh", "-c"])
        .arg(format!("echo $$ > {}; exec sleep 60", ready.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let agent = read_pid(&ready);
    send(&respawn, rustix::process::Signal::INT);
    let out = respawn.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!pid_alive(agent));
    assert!(err.contains("SIGINT: stopping the session"), "{err}");
    assert!(!err.contains("eval"), "{err}");
    let warned = hyoka()
        .args(["hook", "no_such_event"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    for text in [err, stderr(&warned)] {
        assert!(text.lines().count() > 0);
        assert!(!text.contains('\u{1b}'), "colour codes in a pipe: {text:?}");
    }
}

/// Regression test for issue 12: a SIGKILLed simulated agent left a `sim-agent-*` directory
/// in the temporary directory (it readied its escapees through one). It makes none: with
/// `TMPDIR` unusable it still starts them.
#[test]
fn the_simulated_agent_needs_no_temporary_directory() {
    let s = Scratch::new();
    let pids = s.path().join("escapees");
    let out = hyoka()
        .args(["sim-agent", "--escapees", "--files", "0", "--pid-file"])
        .arg(&pids)
        .current_dir(s.path())
        .env("TMPDIR", s.path().join("no-such-dir"))
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let started = escapee_pids(&pids);
    for pid in &started {
        if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(*pid).unwrap()) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(started.len(), 3, "{started:?}");
    let left: Vec<_> = std::fs::read_dir(s.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("sim-agent"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Regression test for issue 12: a suite's `command: echo hi` and `build: "make"` were
/// refused with "expected sequence start" / "expected mapping start". A string is a shell
/// command (`sh -c`, as `--build CMD`); any other shape is refused naming the shapes
/// expected.
#[test]
fn suite_commands_may_be_shell_strings() {
    let s = Scratch::new();
    let suite = s.path().join("suite.yaml");
    std::fs::write(
        &suite,
        "evals:\n  - id: shell\n    command: echo hi > out.txt && test -n \"$HYOKA_RUN_ID\"\n    build: \"grep -q hi out.txt\"\n    review: { command: \"echo '{\\\"pass\\\": true}'\", timeout: 1m }\n",
    )
    .unwrap();
    let out = s
        .hyoka("run")
        .args(["--run-id", "strings", "--suite"])
        .arg(&suite)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("strings", "shell");
    assert_eq!(
        (&report["command"][0], &report["command"][1]),
        (&"sh".into(), &"-c".into())
    );
    let phases: Vec<(&str, &str)> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["status"].as_str().unwrap()))
        .collect();
    assert!(phases.contains(&("build", "passed")), "{phases:?}");
    assert_eq!(report["review"]["pass"], true);
    s.assert_no_workspaces();
    for (yaml, expected) in [
        (
            "evals:\n  - { id: a, command: { run: x } }\n",
            "an argv list like [cargo, build] or a shell command string",
        ),
        (
            "evals:\n  - { id: a, command: [\"true\"], build: 5 }\n",
            "{command: [...], timeout: ...} or a shell command string",
        ),
        (
            "evals:\n  - { id: a, command: \"  \" }\n",
            "the command is empty",
        ),
    ] {
        std::fs::write(&suite, yaml).unwrap();
        let out = s.hyoka("run").arg("--suite").arg(&suite).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{yaml}: {}", stderr(&out));
        assert!(stderr(&out).contains(expected), "{yaml}: {}", stderr(&out));
    }
}
