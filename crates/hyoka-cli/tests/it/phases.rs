//! Eval phases: services before the agent, injected files, build and review after it, an
//! isolated home; all contained and recorded.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Scratch, hyoka, pid_alive, read_pid, stderr};

fn phase<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name} in {report}"))
}

fn names(report: &serde_json::Value) -> Vec<String> {
    report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

fn suite(s: &Scratch, yaml: &str) -> String {
    let path = s.path().join("suite.yaml");
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

fn run_suite(s: &Scratch, id: &str, suite: &str) -> std::process::Output {
    s.hyoka("run")
        .args(["--run-id", id, "--suite", suite])
        .output()
        .unwrap()
}

#[test]
fn a_ready_service_is_up_for_the_agent_and_torn_down_with_the_run() {
    let s = Scratch::new();
    let pid = s.path().join("svc.pid");
    let yaml = format!(
        r#"
evals:
  - id: svc
    command: [sh, -c, 'test -f ready.txt && test "$(cat ready.txt)" = up && echo agent-ran > agent.txt']
    services:
      - name: api
        command: [sh, -c, 'echo $$ > {pid}; echo starting; echo up > ready.tmp; mv ready.tmp ready.txt; exec sleep 300']
        ready: {{ file: ready.txt }}
        timeout: 20s
"#,
        pid = pid.display()
    );
    // The ready file appears whole (a file's existence is the readiness: written in place,
    // the service could still be writing it when the agent starts, and its write would count
    // as the agent's).
    let out = run_suite(&s, "svc", &suite(&s, &yaml));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("svc", "svc");
    assert_eq!(names(&report), ["setup", "services", "agent", "cleanup"]);
    assert_eq!(phase(&report, "services")["status"], "passed");
    assert_eq!(
        report["counts"]["files"], 1,
        "the service's ready.txt is not the agent's output"
    );
    let service = read_pid(&pid);
    assert!(
        !pid_alive(service),
        "the service {service} outlived the run"
    );
    let log = std::fs::read_to_string(s.reports().join("svc/svc/services/api.log")).unwrap();
    assert!(log.contains("starting"), "{log}");
    // The service was still running at teardown, so the cleanup stopped it (how many exited
    // processes it still saw on the way varies with timing).
    assert!(
        report["cleanup"]["processes_killed"].as_u64().unwrap() >= 1,
        "{:#}",
        report["cleanup"]
    );
    s.assert_no_workspaces();
}

#[test]
fn a_service_that_never_becomes_ready_fails_the_eval_before_the_agent() {
    let s = Scratch::new();
    let pid = s.path().join("never.pid");
    let marker = s.path().join("agent-ran");
    let yaml = format!(
        r#"
evals:
  - id: never
    command: [sh, -c, 'touch {marker}']
    services:
      - name: slow
        command: [sh, -c, 'echo $$ > {pid}; exec sleep 300']
        ready: {{ tcp: "127.0.0.1:9" }}
        timeout: 1s
"#,
        pid = pid.display(),
        marker = marker.display()
    );
    let out = run_suite(&s, "never", &suite(&s, &yaml));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("never", "never");
    assert_eq!(report["status"], "error");
    assert_eq!(report["error_kind"], "infra");
    assert_eq!(report["termination"], "service_failed");
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("not ready within 1s"),
        "{report}"
    );
    assert_eq!(phase(&report, "services")["status"], "error");
    assert_eq!(phase(&report, "agent")["status"], "skipped");
    assert!(
        !marker.exists(),
        "the agent must not start without its services"
    );
    assert!(!pid_alive(read_pid(&pid)));
    s.assert_no_workspaces();
}

#[test]
fn a_service_that_crashes_mid_run_stops_the_agent_as_an_infrastructure_error() {
    let s = Scratch::new();
    let yaml = r#"
evals:
  - id: crash
    command: [sh, -c, 'touch crash-now; exec sleep 300']
    timeout: 60s
    services:
      - name: flaky
        command: [sh, -c, 'touch up; while [ ! -e crash-now ]; do sleep 0.05; done; exit 3']
        ready: { file: up }
"#;
    let started = Instant::now();
    let out = run_suite(&s, "crash", &suite(&s, yaml));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the agent was not stopped early"
    );
    let report = s.report("crash", "crash");
    assert_eq!(report["termination"], "service_failed");
    assert_eq!(report["status"], "error");
    assert_eq!(report["error_kind"], "infra");
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("flaky died with exit code 3"),
        "{report}"
    );
    s.assert_no_workspaces();
}

#[test]
fn a_failing_build_fails_the_eval_and_skips_the_review() {
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "build",
        "--build",
        "echo compiling; exit 4",
        "--review",
        "echo reviewed",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("build", "main");
    assert_eq!(report["status"], "failed");
    assert_eq!(report["termination"], "exited", "the agent itself was fine");
    assert_eq!(phase(&report, "build")["status"], "failed");
    assert_eq!(phase(&report, "build")["exit_code"], 4);
    assert_eq!(phase(&report, "review")["status"], "skipped");
    let log = std::fs::read_to_string(s.reports().join("build/main/build.log")).unwrap();
    assert!(log.contains("compiling"));
    s.assert_no_workspaces();
}

#[test]
fn review_verdicts_decide_the_eval() {
    let s = Scratch::new();
    let pass = r#"echo noise; echo '{"pass": true, "score": 0.9, "notes": "tidy"}'"#;
    let out = s.run(&[
        "--run-id",
        "rv-pass",
        "--build",
        "test -f out.txt",
        "--review",
        pass,
        "--",
        "sh",
        "-c",
        "echo x > out.txt",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("rv-pass", "main");
    assert_eq!(report["status"], "passed");
    assert_eq!(report["review"]["pass"], true);
    assert_eq!(report["review"]["score"], 0.9);
    assert_eq!(report["review"]["notes"], "tidy");
    assert_eq!(
        names(&report),
        ["setup", "agent", "build", "review", "cleanup"]
    );

    let fail = r#"echo '{"pass": false, "score": 0.2, "notes": "no tests"}'"#;
    let out = s.run(&["--run-id", "rv-fail", "--review", fail, "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    let report = s.report("rv-fail", "main");
    assert_eq!(report["status"], "failed");
    assert_eq!(report["review"]["pass"], false);
    assert_eq!(phase(&report, "review")["status"], "failed");
    s.assert_no_workspaces();
}

/// Issue 25, item 6, from the user's side: a review verdict with `NaN`, an infinite number
/// (`1e309`) or text after the JSON is the scorer's error (the eval's status `error`, exit
/// 1), never a pass, even when the review exits 0 and says `"pass": true`.
#[test]
fn an_unclean_review_verdict_is_a_scorer_error() {
    let s = Scratch::new();
    for (id, review) in [
        ("nan", r#"echo '{"pass": true, "score": NaN}'"#),
        ("inf", r#"echo '{"pass": true, "score": 1e309}'"#),
        ("trail", r#"echo '{"pass": true} and more'"#),
        ("after", r#"echo '{"pass": true}'; echo trailing text"#),
    ] {
        let out = s.run(&["--run-id", id, "--review", review, "--", "true"]);
        assert_eq!(out.status.code(), Some(1), "{id}: {}", stderr(&out));
        let report = s.report(id, "main");
        assert_eq!(report["status"], "error", "{id}: {report}");
        let review = phase(&report, "review");
        assert_eq!(review["status"], "error", "{id}: {report}");
        assert!(
            review["detail"]
                .as_str()
                .is_some_and(|d| d.contains("invalid verdict")),
            "{id}: {report}"
        );
        assert_ne!(report["review"]["pass"], true, "{id}: {report}");
    }
    s.assert_no_workspaces();
}

#[test]
fn a_limit_stopped_agent_stays_failed_whatever_the_review_says() {
    // Regression test for hyoka (Go) W18: a passing review turned a guardrail hit into a pass.
    let s = Scratch::new();
    let review = r#"echo '{"pass": true, "score": 1.0}'"#;
    let out = s.run(&[
        "--run-id",
        "w18",
        "--max-files",
        "2",
        "--review",
        review,
        "--",
        "sh",
        "-c",
        "i=0; while :; do i=$((i+1)); echo $i > f$i; done",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("w18", "main");
    assert_eq!(report["termination"], "max_files");
    assert_eq!(
        phase(&report, "review")["status"],
        "passed",
        "the review ran and liked it"
    );
    assert_eq!(report["status"], "failed", "yet the eval fails");
    s.assert_no_workspaces();
}

#[test]
fn injected_files_arrive_with_link_safety() {
    let s = Scratch::new();
    let skills = s.path().join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(skills.join("SKILL.md"), "# skill").unwrap();
    symlink("SKILL.md", skills.join("alias.md")).unwrap();
    symlink("/etc/passwd", skills.join("leak")).unwrap();
    let notes = s.path().join("NOTES.md");
    std::fs::write(&notes, "notes").unwrap();
    let check = "test \"$(cat .claude/skills/SKILL.md)\" = '# skill' && test -f .claude/skills/alias.md && ! test -e .claude/skills/leak && test -f NOTES.md";
    let out = s.run(&[
        "--run-id",
        "files",
        "--file",
        &format!("{}:.claude/skills", skills.display()),
        "--file",
        notes.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        check,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("files", "main");
    assert_eq!(
        report["counts"]["files"], 0,
        "injected files are not the agent's output"
    );
    assert!(
        phase(&report, "setup")["detail"]
            .as_str()
            .unwrap()
            .contains("1 link"),
        "{report}"
    );
    s.assert_no_workspaces();
}

#[test]
fn an_isolated_home_is_seen_by_the_agent_and_gone_afterwards() {
    let s = Scratch::new();
    let seen = s.path().join("seen");
    let script = format!(
        "echo \"$HOME\" > {seen}; test \"$XDG_CONFIG_HOME\" = \"$HOME/.config\" && test -d \"$XDG_CONFIG_HOME\" && test -z \"$HYOKA_TEST_SECRET\" && test \"$HYOKA_TEST_PASSED\" = yes && test -n \"$PATH\" && echo cfg > \"$XDG_CONFIG_HOME/agent.json\"",
        seen = seen.display()
    );
    let out = s
        .hyoka("run")
        .args([
            "--run-id",
            "home",
            "--isolate-home",
            "--pass-env",
            "HYOKA_TEST_PASSED",
        ])
        .args(["--", "sh", "-c", &script])
        .env("HYOKA_TEST_SECRET", "must not leak")
        .env("HYOKA_TEST_PASSED", "yes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let home = std::fs::read_to_string(&seen).unwrap().trim().to_owned();
    assert!(home.contains("hyoka-home-main.home-"), "{home}");
    assert!(
        !Path::new(&home).exists(),
        "the isolated home outlived the run"
    );
    assert_ne!(home, std::env::var("HOME").unwrap_or_default());
    s.assert_no_workspaces();
}

#[test]
fn sigkill_of_the_owner_during_the_build_then_clean() {
    let s = Scratch::new();
    let pid = s.path().join("build.pid");
    let mut child = hyoka()
        .args(["run", "--run-id", "killed", "--grace", "30s", "--build"])
        .arg(format!("echo $$ > {}; exec sleep 300", pid.display()))
        .arg("--reports")
        .arg(s.reports())
        .arg("--workspace-root")
        .arg(s.ws_root())
        .args(["--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let build = read_pid(&pid);
    let deadline = Instant::now() + Duration::from_secs(20);
    let ledger = s.reports().join("killed/pids.txt");
    while !std::fs::read_to_string(&ledger)
        .unwrap_or_default()
        .contains(&format!("{build}\t"))
    {
        assert!(
            Instant::now() < deadline,
            "the ledger never listed the build"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let owner = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(owner, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
    let out = s.hyoka("clean").args(["--grace", "1s"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!pid_alive(build), "the build process survived clean");
    s.assert_no_workspaces();
}

#[track_caller]
fn check_bad(s: &Scratch, yaml: &str, mentions: &[&str]) {
    let out = run_suite(s, "bad", &suite(s, yaml));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{yaml}\n{err}");
    for m in mentions {
        assert!(err.contains(m), "wanted {m:?} in {err}");
    }
    assert!(!s.reports().exists());
}

#[test]
fn bad_phase_settings_are_refused_before_anything_runs() {
    let s = Scratch::new();
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    services: [{ name: 'bad name', command: [x] }]\n",
        &["services", "bad name"],
    );
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    services: [{ name: s, command: [x] }, { name: s, command: [y] }]\n",
        &["duplicate service"],
    );
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    services: [{ name: s, command: [x], ready: { file: a, tcp: 'h:1' } }]\n",
        &["exactly one"],
    );
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    services: [{ name: s, command: [x], ready: { tcp: nowhere } }]\n",
        &["host:port"],
    );
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    build: { command: [] }\n",
        &["build", "empty"],
    );
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    review: { command: [x], timeout: never }\n",
        &["review", "never"],
    );
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    files: [{ source: missing }]\n",
        &["files", "does not exist"],
    );
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    files: [{ source: suite.yaml, target: ../out }]\n",
        &["files", "inside the workspace"],
    );
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    isolate_home: maybe\n",
        &["isolate_home"],
    );
}
