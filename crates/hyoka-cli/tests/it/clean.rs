//! `hyoka clean` and `hyoka ps`: crash repair, live runs untouched, hostile ledgers, dry run.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::support::{
    ReapOnDrop, Scratch, escapee_pids, hyoka, hyoka_path, pid_alive, stderr, wait_until,
};

/// The pid of the escapee with `role` (the file lists them in the order they started).
fn escapee(file: &Path, role: &str) -> u32 {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(role)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {role} in {}", file.display()))
}

/// Starts a run of the simulated agent with escapees that lingers, and waits until the
/// escapees exist and the ledger lists them.
fn start_lingering(s: &Scratch, run_id: &str) -> (Child, PathBuf) {
    let pids = s.path().join(format!("{run_id}.pids"));
    let child = s
        .hyoka("run")
        .args(["--run-id", run_id, "--grace", "30s"])
        .args([
            "--",
            hyoka_path(),
            "sim-agent",
            "--escapees",
            "--linger",
            "60s",
            "--pid-file",
        ])
        .arg(&pids)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the escapees", || escapee_pids(&pids).len() == 3);
    let ledger = s.reports().join(run_id).join("pids.txt");
    let escapees = escapee_pids(&pids);
    crate::support::wait_for_ledger(&ledger, &escapees);
    (child, pids)
}

fn clean(s: &Scratch, extra: &[&str]) -> std::process::Output {
    s.hyoka("clean")
        .args(["--grace", "1s"])
        .args(extra)
        .output()
        .unwrap()
}

fn kill9(child: &mut Child) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
}

#[test]
fn sigkill_of_the_owner_then_clean_leaves_nothing() {
    let s = Scratch::new();
    let (mut child, pids) = start_lingering(&s, "crashed");
    let ledger = s.reports().join("crashed/pids.txt");
    kill9(&mut child);
    let out = clean(&s, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    for pid in escapee_pids(&pids) {
        assert!(!pid_alive(pid), "escapee {pid} survived clean");
    }
    // Every process the ledger ever named is gone too (the agent and the shim).
    let text = std::fs::read_to_string(&ledger).unwrap();
    assert!(text.lines().any(|l| l.starts_with("# cleaned ")), "{text}");
    s.assert_no_workspaces();
    // A second clean finds nothing left to do.
    let again = clean(&s, &[]);
    assert_eq!(again.status.code(), Some(0));
}

#[test]
fn clean_never_touches_a_live_run_and_ps_lists_it() {
    let s = Scratch::new();
    let (child, pids) = start_lingering(&s, "alive");
    let ledger = std::fs::read(s.reports().join("alive/pids.txt")).unwrap();
    let out = clean(&s, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for pid in escapee_pids(&pids) {
        assert!(pid_alive(pid), "clean touched {pid} of a live run");
    }
    assert_eq!(
        std::fs::read_dir(s.ws_root()).unwrap().count(),
        1,
        "the live workspace stays"
    );
    assert_eq!(
        std::fs::read(s.reports().join("alive/pids.txt")).unwrap(),
        ledger
    );

    let ps = hyoka()
        .args(["ps", "--json", "--reports"])
        .arg(s.reports())
        .output()
        .unwrap();
    assert_eq!(ps.status.code(), Some(0));
    let runs: serde_json::Value = serde_json::from_slice(&ps.stdout).unwrap();
    assert_eq!(runs[0]["run_id"], "alive");
    assert_eq!(runs[0]["evals"][0], "main");
    let listed: Vec<u64> = runs[0]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["entry"]["pid"].as_u64().unwrap())
        .collect();
    for pid in escapee_pids(&pids) {
        assert!(
            listed.contains(&u64::from(pid)),
            "ps does not list {pid}: {listed:?}"
        );
    }
    let human = hyoka()
        .args(["ps", "--reports"])
        .arg(s.reports())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("run alive"));

    // The run itself still stops everything when asked: the first SIGTERM starts the grace
    // period (the sleeper goes at once), a second one kills the stubborn escapee right away.
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let sleeper = escapee(&pids, "sleeper");
    wait_until("the sleeper to stop on SIGTERM", || !pid_alive(sleeper));
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    for pid in escapee_pids(&pids) {
        assert!(!pid_alive(pid), "{pid} survived the run's own teardown");
    }
    s.assert_no_workspaces();
}

#[test]
fn dry_run_changes_nothing_at_all() {
    let s = Scratch::new();
    let (mut child, pids) = start_lingering(&s, "dry");
    kill9(&mut child);
    let stubborn = escapee(&pids, "stubborn");
    // The shim, orphaned by the SIGKILL, sends SIGTERM at once; the stubborn escapee ignores it.
    let ledger_path = s.reports().join("dry/pids.txt");
    let before = std::fs::read(&ledger_path).unwrap();
    let out = clean(&s, &["--dry-run", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "something remains: {}",
        stderr(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["dry_run"], true);
    assert!(!report["runs"][0]["found"].as_array().unwrap().is_empty());
    assert_eq!(report["workspaces"][0]["action"], "would_remove");
    assert_eq!(
        std::fs::read(&ledger_path).unwrap(),
        before,
        "the ledger was modified"
    );
    assert!(pid_alive(stubborn), "a dry run signalled a process");
    assert_eq!(
        std::fs::read_dir(s.ws_root()).unwrap().count(),
        1,
        "a dry run removed the workspace"
    );
    let out = clean(&s, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!pid_alive(stubborn));
    s.assert_no_workspaces();
}

/// Writes a run directory by hand: an owner lock nobody holds, and `ledger` as `pids.txt`.
fn forged_run(s: &Scratch, run_id: &str, ledger: &str) {
    let dir = s.reports().join(run_id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("owner.lock"), "").unwrap();
    std::fs::write(dir.join("pids.txt"), ledger).unwrap();
}

#[test]
fn strangers_hostile_lines_and_foreign_paths_are_left_alone() {
    let s = Scratch::new();
    let mut stranger = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = stranger.id();
    let victim = s.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "precious").unwrap();
    let unmarked = s.ws_root().join("hyoka-forged-unmarked");
    std::fs::create_dir(&unmarked).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    forged_run(
        &s,
        "forged",
        &format!(
            "# hyoka-pids v1\n# run forged\n# owner 999999 1 {boot}# workspace main {victim}\n# workspace other /etc\n{pid}\t{ticks}\t{pid}\tmain\tsleep\n0\t1\t0\tmain\tx\n1\t1\t1\tmain\tinit\n-1\t5\t5\tmain\tneg\ngarbage line\n{pid}\t",
            victim = victim.display(),
            ticks = crate::support::start_ticks(pid) + 1,
        ),
    );
    let out = clean(&s, &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &report["runs"][0];
    assert!(run["found"].as_array().unwrap().is_empty(), "{run}");
    assert_eq!(
        run["skipped"].as_array().unwrap().len(),
        1,
        "the stranger with the wrong start time"
    );
    assert!(run["problems"].as_array().unwrap().len() >= 4, "{run}");
    let actions: Vec<&str> = report["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["refused", "refused"], "{report}");
    assert!(pid_alive(pid), "the stranger was signalled");
    assert_eq!(
        std::fs::read_to_string(victim.join("keep.txt")).unwrap(),
        "precious"
    );
    assert!(
        unmarked.exists(),
        "an unmarked hyoka-* directory is not ours"
    );
    stranger.kill().unwrap();
    stranger.wait().unwrap();
}

#[test]
fn an_agent_that_empties_its_workspace_does_not_hide_it_from_clean() {
    let s = Scratch::new();
    let ready = s.path().join("emptied.ready");
    let mut child = s
        .hyoka("run")
        .args(["--run-id", "emptied"])
        .args([
            "--",
            "sh",
            "-c",
            &format!(
                "find . -mindepth 1 -delete; echo $$ > {}; exec sleep 60",
                ready.display()
            ),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the agent", || ready.exists());
    kill9(&mut child);
    // Without the ledger (the run's reports are elsewhere) the marker on the directory alone
    // proves nothing (issue 25: any process of the user may rewrite it): it is listed, kept.
    let elsewhere = s.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::rename(s.reports().join("emptied"), elsewhere.join("emptied")).unwrap();
    let out = clean(&s, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(text.contains("no abandoned run under"), "{text}");
    assert_eq!(std::fs::read_dir(s.ws_root()).unwrap().count(), 1);
    // The run's own reports let clean finish the job: the ledger and the marker agree.
    let out = hyoka()
        .args(["clean", "--grace", "1s", "--reports"])
        .arg(&elsewhere)
        .arg("--workspace-root")
        .arg(s.ws_root())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    s.assert_no_workspaces();
    wait_until("the agent to be stopped by its shim", || {
        !pid_alive(crate::support::read_pid(&ready))
    });
}

#[test]
fn sixteen_concurrent_runs_leave_nothing() {
    let s = Scratch::new();
    let children: Vec<(Child, PathBuf)> = (0..16)
        .map(|i| {
            let pids = s.path().join(format!("c{i}.pids"));
            let child = s
                .hyoka("run")
                .args(["--run-id", &format!("c{i}"), "--grace", "1s"])
                .args(["--", hyoka_path(), "sim-agent", "--escapees", "--pid-file"])
                .arg(&pids)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (child, pids)
        })
        .collect();
    for (child, pids) in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let found = escapee_pids(&pids);
        assert_eq!(found.len(), 3);
        for pid in found {
            assert!(!pid_alive(pid), "{pid} of {} survived", pids.display());
        }
    }
    s.assert_no_workspaces();
    let ps = hyoka()
        .args(["ps", "--json", "--reports"])
        .arg(s.reports())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ps.stdout).trim(), "[]");
}

/// `hyoka run --reports <reports> --run-id <run_id> -- sh -c <script>` in the background.
fn run_in(s: &Scratch, reports: &Path, run_id: &str, script: &str) -> Child {
    hyoka()
        .args(["run", "--grace", "1s", "--run-id", run_id, "--reports"])
        .arg(reports)
        .arg("--workspace-root")
        .arg(s.ws_root())
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Kills a process the test started itself when the test ends, however it ends.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(self.0).unwrap()) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Regression test for issue 11, finding 1: run ids are unique only within one reports
/// directory, so `clean` of a crashed run `dup` in `r1` must not touch a live run `dup` in
/// `r2`, and the leftover cgroup leaf of the crashed run must not take the cgroup layer away
/// from the live one.
#[test]
fn clean_of_a_crashed_run_leaves_a_live_run_with_the_same_id_alone() {
    let s = Scratch::new();
    let (r1, r2) = (s.path().join("r1"), s.path().join("r2"));
    let ready1 = s.path().join("ready1");
    let mut crashed = run_in(
        &s,
        &r1,
        "dup",
        &format!("echo $$ > {}; exec sleep 600", ready1.display()),
    );
    let agent1 = crate::support::read_pid(&ready1);
    kill9(&mut crashed);
    // The orphaned shim stops its tree on its own; wait for that, so what follows is about
    // the second run only.
    wait_until("the crashed run's agent to be stopped", || {
        !pid_alive(agent1)
    });

    let (ready2, go) = (s.path().join("ready2"), s.path().join("go"));
    let live = run_in(
        &s,
        &r2,
        "dup",
        &format!(
            "echo $$ > {}; while [ ! -e {} ]; do sleep 0.05; done",
            ready2.display(),
            go.display()
        ),
    );
    let agent2 = crate::support::read_pid(&ready2);
    let _guard = KillOnDrop(live.id());

    let out = hyoka()
        .args(["clean", "--grace", "1s", "--reports"])
        .arg(&r1)
        .arg("--workspace-root")
        .arg(s.ws_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(pid_alive(agent2), "clean of r1 stopped the live run in r2");
    std::fs::write(&go, "").unwrap();
    let out = live.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(r2.join("dup/main/report.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "passed", "{report}");
    let crashed_had_cgroup = std::fs::read_to_string(r1.join("dup/pids.txt"))
        .unwrap()
        .lines()
        .any(|l| l.starts_with("# cgroup "));
    if crashed_had_cgroup {
        let layers = &report["cleanup"]["layers"];
        assert!(
            layers.as_array().unwrap().iter().any(|l| l == "cgroup"),
            "the leftover leaf of the crashed run took the cgroup layer: {layers}"
        );
    }
    s.assert_no_workspaces();
}

/// Regression test for issue 11, finding 1: a user's shell that happens to carry
/// `HYOKA_RUN_ID=mk` is not the crashed run `mk`'s, and `clean` leaves it alone.
#[test]
fn a_users_shell_carrying_the_run_id_survives_clean() {
    let s = Scratch::new();
    let ready = s.path().join("ready");
    let mut crashed = run_in(
        &s,
        &s.reports(),
        "mk",
        &format!("echo $$ > {}; exec sleep 600", ready.display()),
    );
    crate::support::read_pid(&ready);
    kill9(&mut crashed);
    let shell_ready = s.path().join("shell");
    let shell = ReapOnDrop(
        std::process::Command::new("setsid")
            .args(["sh", "-c"])
            .arg(format!(
                "echo $$ > {}; exec sleep 600",
                shell_ready.display()
            ))
            .env("HYOKA_RUN_ID", "mk")
            .spawn()
            .unwrap(),
    );
    let shell_pid = crate::support::read_pid(&shell_ready);
    let _guard = (KillOnDrop(shell_pid), shell);
    let out = clean(&s, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        pid_alive(shell_pid),
        "clean of run mk killed a user's shell"
    );
    s.assert_no_workspaces();
}

/// Regression test for issue 12: the dry run said "0 to stop" and then listed processes that
/// "would be stopped", and every call re-reported every finished run (and each run twice:
/// once for its processes, once per workspace). Each run is reported once, in one voice,
/// and runs already marked cleaned only with `--verbose`.
#[test]
fn clean_reports_each_run_once_in_one_voice() {
    let s = Scratch::new();
    let finished = s.run(&["--run-id", "finished", "--", "true"]);
    assert_eq!(finished.status.code(), Some(0), "{}", stderr(&finished));
    let (mut child, pids) = start_lingering(&s, "crashed");
    kill9(&mut child);
    let stdout = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).into_owned();
    let runs = |text: &str, run: &str| {
        text.lines()
            .filter(|l| l.starts_with(&format!("run {run}")))
            .count()
    };

    let dry = clean(&s, &["--dry-run"]);
    let text = stdout(&dry);
    assert_eq!(dry.status.code(), Some(1), "{text}");
    assert_eq!(runs(&text, "crashed"), 1, "{text}");
    assert_eq!(runs(&text, "finished"), 0, "{text}");
    let headline = text.lines().find(|l| l.starts_with("run crashed")).unwrap();
    assert!(
        headline.contains("would stop") && headline.contains("would remove 1 workspace"),
        "{text}"
    );
    assert!(
        !text.contains("to stop") && !text.contains("would be stopped"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("workspace")), "{text}");

    let real = clean(&s, &[]);
    let text = stdout(&real);
    assert_eq!(real.status.code(), Some(0), "{text}{}", stderr(&real));
    assert_eq!(runs(&text, "crashed"), 1, "{text}");
    assert_eq!(runs(&text, "finished"), 0, "{text}");
    assert!(text.contains("run crashed: stopped "), "{text}");
    assert!(!text.contains("would"), "{text}");
    for pid in escapee_pids(&pids) {
        assert!(!pid_alive(pid), "{pid} survived");
    }

    let again = clean(&s, &[]);
    assert_eq!(stdout(&again).trim(), "nothing to clean");
    let verbose = clean(&s, &["--verbose"]);
    let text = stdout(&verbose);
    assert_eq!(runs(&text, "crashed"), 1, "{text}");
    assert_eq!(runs(&text, "finished"), 1, "{text}");
    assert!(
        text.contains("run finished: already cleaned, nothing to do"),
        "{text}"
    );
    s.assert_no_workspaces();
}
