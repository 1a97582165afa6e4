//! `hyoka ps` shows what is live now: each tracked process's current command, elapsed time
//! and counts per eval, respawn sessions on both backends, and runs whose owner is gone
//! while their processes are still being torn down.

use std::process::{Child, Output, Stdio};

use serde_json::Value;

use crate::support::{
    Scratch, hyoka, hyoka_path, pid_alive, read_pid, send, stderr, tmux_installed, wait_for_ledger,
    wait_until,
};

fn ps(s: &Scratch, json: bool) -> Output {
    let mut command = hyoka();
    command.arg("ps").arg("--reports").arg(s.reports());
    if json {
        command.arg("--json");
    }
    let out = command.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A respawn session of `sh -c 'echo $$ > <ready>; exec sleep 60'` on `backend`, and its
/// agent's pid.
fn session(s: &Scratch, backend: &str) -> (Child, u32) {
    let ready = s.path().join(format!("{backend}.ready"));
    let child = hyoka()
        .args([
            "respawn",
            "--headless",
            "--grace",
            "1s",
            "--backend",
            backend,
        ])
        .arg("--reports")
        .arg(s.reports())
        .args(["--", "sh", "-c"])
        .arg(format!("echo $$ > {}; exec sleep 60", ready.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (child, read_pid(&ready))
}

/// Regression test for issue 12: `hyoka ps` showed a stale command name (`sh` for an
/// exec'd `sleep`), listed a respawn session's socket directory as a workspace, omitted
/// tmux-backed sessions, and showed neither elapsed time nor counts.
#[test]
fn ps_shows_what_is_live_now() {
    let s = Scratch::new();
    let ready = s.path().join("agent.ready");
    let ledger = s.reports().join("live/pids.txt");
    // The agent writes two turns, then waits until the ledger has recorded it as `sh`
    // before it becomes `sleep`.
    let script = format!(
        "{hyoka} sim-agent --turns 2 --files 1; echo $$ > {ready}; \
         until grep -q \"^$$\t.*\tsh$\" {ledger}; do sleep 0.05; done; exec sleep 60",
        hyoka = hyoka_path(),
        ready = ready.display(),
        ledger = ledger.display(),
    );
    let run = s.spawn_run(
        &[
            "--run-id",
            "live",
            "--events",
            "stream-json",
            "--grace",
            "1s",
        ],
        &script,
    );
    let agent = read_pid(&ready);
    wait_for_ledger(&ledger, &[agent]);
    let mut sessions = vec![session(&s, "pty")];
    if tmux_installed() {
        sessions.push(session(&s, "tmux"));
    } else {
        eprintln!("ps_shows_what_is_live_now: tmux is not installed; its session is not checked");
    }
    wait_until(
        "ps to show the exec'd command, the counts and the sessions",
        || {
            let out = text(&ps(&s, false));
            // A tmux session shows its pane's process (the wrapper that runs the agent).
            out.contains(&format!("process {agent} sleep"))
                // The status file is rewritten as the events arrive: wait for all of them.
                && out.contains("turns 2, actions 1, files 1")
                && out.contains(&format!("process {} sleep", sessions[0].1))
                && (sessions.len() == 1 || out.contains("respawn session on tmux"))
        },
    );
    let human = text(&ps(&s, false));
    assert!(
        human.contains("main: eval, phase agent, running"),
        "{human}"
    );
    assert!(human.contains("turns 2, actions 1, files 1"), "{human}");
    assert!(human.contains("respawn session on pty"), "{human}");
    if sessions.len() == 2 {
        let tmux = &human[human.find("respawn session on tmux").unwrap()..];
        assert!(
            tmux.lines().nth(1).is_some_and(|l| l.contains("process ")),
            "{human}"
        );
    }
    let json: Value = serde_json::from_slice(&ps(&s, true).stdout).unwrap();
    let runs = json.as_array().unwrap();
    assert_eq!(runs.len(), 1 + sessions.len(), "{json:#}");
    let eval = runs.iter().find(|r| r["run_id"] == "live").unwrap();
    let process = eval["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["entry"]["pid"] == agent)
        .unwrap();
    assert_eq!(
        (&process["entry"]["comm"], &process["comm_now"]),
        (&"sh".into(), &"sleep".into())
    );
    assert_eq!(eval["phases"]["main"]["counts"]["turns"], 2);
    // The ledger records the session's socket directory; ps does not call it a workspace.
    let mut sockets = 0;
    for run in runs {
        for dir in run["ledger"]["workspaces"].as_array().unwrap() {
            if dir["eval_id"] == "session.sock" {
                sockets += 1;
                let path = dir["path"].as_str().unwrap();
                assert!(!human.contains(path), "{path} listed: {human}");
            }
        }
    }
    assert_eq!(sockets, 1, "{json:#}");

    send(&run, rustix::process::Signal::TERM);
    assert_eq!(run.wait_with_output().unwrap().status.code(), Some(143));
    for (child, pid) in sessions {
        send(&child, rustix::process::Signal::INT);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        assert!(!pid_alive(pid));
    }
    assert!(!pid_alive(agent));
    assert_eq!(text(&ps(&s, false)).trim(), "no live runs");
    s.assert_no_workspaces();
}

/// Regression test for issue 12: `hyoka ps` said "no live runs" while a SIGKILLed owner's
/// shim was still tearing its tree down. A run whose owner is gone and whose tracked
/// processes still run is listed as being torn down until they are gone.
#[test]
fn ps_shows_a_run_being_torn_down_after_its_owner_is_killed() {
    let s = Scratch::new();
    let ready = s.path().join("ready");
    // The agent ignores SIGTERM, so the shim's teardown waits out the 60 s grace period.
    let script = format!(
        "trap '' TERM; echo $$ > {}; while :; do sleep 0.1; done",
        ready.display()
    );
    let mut run = s.spawn_run(&["--run-id", "orphaned", "--grace", "60s"], &script);
    let agent = read_pid(&ready);
    wait_for_ledger(&s.reports().join("orphaned/pids.txt"), &[agent]);
    send(&run, rustix::process::Signal::KILL);
    run.wait().unwrap();
    assert!(pid_alive(agent));
    let human = text(&ps(&s, false));
    assert!(
        human.contains("run orphaned (owner pid") && human.contains("being torn down"),
        "{human}"
    );
    assert!(human.contains(&format!("process {agent} sh")), "{human}");
    let json: Value = serde_json::from_slice(&ps(&s, true).stdout).unwrap();
    assert_eq!(json[0]["activity"], "tearing_down", "{json:#}");
    let out = s.hyoka("clean").args(["--grace", "1s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out), stderr(&out));
    assert!(!pid_alive(agent));
    assert_eq!(text(&ps(&s, false)).trim(), "no live runs");
    s.assert_no_workspaces();
}
