//! Trials from the user's side (issue 15 and issue 12): epochs and pass@k, retries of
//! infrastructure errors, resume after the owner is SIGKILLed, tokens and cost, comparison,
//! agents, `--fail-on`, trials a SIGTERM leaves not run, merge checks, and why a failed eval
//! failed.

use std::path::Path;
use std::process::{Child, Stdio};

use serde_json::Value;

use crate::support::{Scratch, hyoka, pid_alive, read_pid, send, stderr};

fn write_suite(s: &Scratch, name: &str, yaml: &str) -> String {
    let path = s.path().join(name);
    std::fs::write(
        &path,
        yaml.replace("{dir}", &s.path().display().to_string()),
    )
    .unwrap();
    path.display().to_string()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines of a log the agents append to when they start.
fn starts(s: &Scratch) -> Vec<String> {
    std::fs::read_to_string(s.path().join("starts"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Issue 15, Done-when: `epochs: 3` over an agent that passes one trial in three.
#[test]
fn epochs_over_an_agent_that_passes_one_trial_in_three() {
    let s = Scratch::new();
    let suite = write_suite(
        &s,
        "suite.yaml",
        r#"
defaults: { epochs: 3 }
evals:
  - id: coin
    command: [sh, -c, 'n=$(cat {dir}/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > {dir}/count; test $n -eq 2']
"#,
    );
    let out = s.run(&["--run-id", "ep", "--suite", &suite]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let run = read_json(&s.reports().join("ep/run.json"));
    let task = &run["tasks"][0];
    assert_eq!(
        (
            task["eval_id"].as_str(),
            task["trials"].as_u64(),
            task["passed"].as_u64()
        ),
        (Some("coin"), Some(3), Some(1))
    );
    let at_1 = task["pass_at_k"]["1"].as_f64().unwrap();
    assert!((at_1 - 1.0 / 3.0).abs() < 1e-9, "{at_1}");
    assert_eq!(task["pass_at_k"]["3"], 1.0);
    assert_eq!(task["pass_hat_k"]["3"], 0.0);
    assert_eq!(run["metrics"]["pass_at_k"]["3"], 1.0);
    // One directory per trial; run.json lists each with its epoch and report.
    let evals = run["evals"].as_array().unwrap();
    for (i, eval) in evals.iter().enumerate() {
        let report = format!("coin.{}/report.json", i + 1);
        assert_eq!(
            (eval["epoch"].as_u64(), eval["report"].as_str()),
            (Some(i as u64 + 1), Some(report.as_str()))
        );
        let trial = read_json(&s.reports().join("ep").join(&report));
        assert_eq!(
            (trial["eval_id"].as_str(), trial["epoch"].as_u64()),
            (Some("coin"), Some(i as u64 + 1))
        );
    }
    let text = stdout(&out);
    assert!(text.contains("pass@1") && text.contains("coin.2"), "{text}");
    s.assert_no_workspaces();
}

/// Issue 15, Done-when: `--retries 1`, a service that is not ready once and then is: a passed
/// trial of two attempts. An agent that exits 1 runs once whatever `--retries` says.
#[test]
fn retries_rerun_an_infrastructure_error_but_never_an_agents_failure() {
    let s = Scratch::new();
    let suite = write_suite(
        &s,
        "suite.yaml",
        r#"
evals:
  - id: flaky
    command: [sh, -c, 'echo flaky >> {dir}/starts']
    services:
      - name: api
        command: [sh, -c, 'if [ -e {dir}/api-once ]; then touch up; exec sleep 300; fi; touch {dir}/api-once; exit 1']
        ready: { file: up }
        timeout: 10s
  - id: failing
    command: [sh, -c, 'echo failing >> {dir}/starts; exit 1']
"#,
    );
    let out = s.run(&["--run-id", "re", "--retries", "1", "--suite", &suite]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let flaky = s.report("re", "flaky");
    assert_eq!(
        (flaky["status"].as_str(), flaky["attempts"].as_u64()),
        (Some("passed"), Some(2))
    );
    let earlier = &flaky["earlier_attempts"][0];
    assert_eq!(
        (
            earlier["error_kind"].as_str(),
            earlier["termination"].as_str()
        ),
        (Some("infra"), Some("service_failed"))
    );
    assert!(
        earlier["reason"]
            .as_str()
            .unwrap()
            .contains("before it was ready"),
        "{flaky}"
    );
    let failing = s.report("re", "failing");
    assert_eq!(
        (failing["status"].as_str(), failing["attempts"].as_u64()),
        (Some("failed"), Some(1))
    );
    assert_eq!(starts(&s), ["flaky", "failing"]);
    let run = read_json(&s.reports().join("re/run.json"));
    assert_eq!(run["totals"]["retried"], 1);
    s.assert_no_workspaces();
}

/// Starts `hyoka run --suite` of three evals, one worker: `a` and `b` finish, `c` marks that
/// it runs and lingers until killed (it passes when run again).
fn start_three(s: &Scratch, run_id: &str) -> (Child, String) {
    let suite = write_suite(
        s,
        "three.yaml",
        r#"
evals:
  - { id: a, command: [sh, -c, 'echo a >> {dir}/starts'] }
  - { id: b, command: [sh, -c, 'echo b >> {dir}/starts'] }
  - id: c
    command: [sh, -c, 'echo c >> {dir}/starts; test -e {dir}/c-once && exit 0; touch {dir}/c-once; sleep 300 & echo $! > {dir}/c.pid; wait']
"#,
    );
    let child = s
        .hyoka("run")
        .args(["--run-id", run_id, "--grace", "30s", "--suite", &suite])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = read_pid(&s.path().join("c.pid"));
    crate::support::wait_for_ledger(&s.reports().join(run_id).join("pids.txt"), &[pid]);
    (child, suite)
}

fn kill9(child: &mut Child) {
    send(child, rustix::process::Signal::KILL);
    child.wait().unwrap();
}

/// Issue 15, Done-when: SIGKILL of the owner mid-suite, then `--resume`: finished trials are
/// not rerun (their agents do not start again), and the final `run.json` has every trial.
/// The resume repairs the abandoned run itself, or follows `hyoka clean`.
#[test]
fn sigkill_of_the_owner_then_resume_keeps_finished_trials() {
    for clean_first in [false, true] {
        let s = Scratch::new();
        let (mut owner, suite) = start_three(&s, "crashy");
        let lingering = read_pid(&s.path().join("c.pid"));
        kill9(&mut owner);
        if clean_first {
            let out = s.hyoka("clean").args(["--grace", "1s"]).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        }
        let out = s.run(&["--run-id", "crashy", "--resume", "--suite", &suite]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            stderr(&out),
            stdout(&out)
        );
        assert!(
            stdout(&out).contains("resumed: 2 finished trial(s) kept"),
            "{}",
            stdout(&out)
        );
        assert_eq!(
            starts(&s),
            ["a", "b", "c", "c"],
            "a and b were not started again"
        );
        let run = read_json(&s.reports().join("crashy/run.json"));
        let ids: Vec<&str> = run["evals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["eval_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(run["totals"]["passed"], 3);
        assert!(
            !pid_alive(lingering),
            "the abandoned agent's child was stopped"
        );
        s.assert_no_workspaces();
    }
}

/// A resume refuses an eval whose settings changed since the run began (exit 2, naming it),
/// unless told to rerun its trials.
#[test]
fn a_resume_refuses_a_changed_eval_unless_told_to_rerun_it() {
    let s = Scratch::new();
    let (mut owner, suite) = start_three(&s, "changed");
    kill9(&mut owner);
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, text.replace("echo a >>", "echo A >>")).unwrap();
    let out = s.run(&["--run-id", "changed", "--resume", "--suite", &suite]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: cannot resume: eval a changed since the run began"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = s.run(&[
        "--run-id",
        "changed",
        "--resume",
        "--rerun-changed",
        "--suite",
        &suite,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(starts(&s), ["a", "b", "c", "A", "c"]);
    s.assert_no_workspaces();
}

/// Issue 15, Done-when: a stream-json agent whose `result` line reports `total_cost_usd`
/// 0.42 gives `usage.cost_usd` 0.42 in its report and in the run's totals; `--max-cost 0.1`
/// stops a costlier agent with `termination: max_cost`; `--max-tokens` counts what a jsonl
/// agent reports.
#[test]
fn reported_cost_and_tokens_are_recorded_and_limited() {
    let s = Scratch::new();
    let result = r#"{"type":"result","subtype":"success","total_cost_usd":0.42,"usage":{"input_tokens":1200,"output_tokens":300}}"#;
    let cheap = format!("echo '{result}'");
    let out = s.run(&[
        "--run-id",
        "cost",
        "--events",
        "stream-json",
        "--",
        "sh",
        "-c",
        &cheap,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("cost", "main");
    assert_eq!(report["usage"]["cost_usd"], 0.42);
    assert_eq!(report["usage"]["input_tokens"], 1200);
    assert!(
        report["usage"].get("cache_read_tokens").is_none(),
        "not reported, not guessed"
    );
    let run = read_json(&s.reports().join("cost/run.json"));
    assert_eq!(run["usage"]["cost_usd"], 0.42);
    assert!(stdout(&out).contains("$0.4200"), "{}", stdout(&out));

    let pid = s.path().join("costly.pid");
    let costly = format!(
        "sleep 300 & echo $! > {}; echo '{result}'; wait",
        pid.display()
    );
    let out = s.run(&[
        "--run-id",
        "costly",
        "--events",
        "stream-json",
        "--max-cost",
        "0.1",
        "--",
        "sh",
        "-c",
        &costly,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("costly", "main");
    assert_eq!(
        (report["status"].as_str(), report["termination"].as_str()),
        (Some("failed"), Some("max_cost"))
    );
    assert_eq!(report["limits"]["max_cost"], 0.1);
    assert!(!pid_alive(read_pid(&pid)));

    let wordy = r#"echo '{"type":"usage","output_tokens":30}' >> "$HYOKA_EVENTS"; echo '{"type":"usage","output_tokens":30,"cost_usd":0.01}' >> "$HYOKA_EVENTS"; exec sleep 300"#;
    let out = s.run(&[
        "--run-id",
        "tokens",
        "--events",
        "jsonl",
        "--max-tokens",
        "50",
        "--timeout",
        "60s",
        "--",
        "sh",
        "-c",
        wordy,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("tokens", "main");
    assert_eq!(report["termination"], "max_tokens");
    assert_eq!(report["usage"]["output_tokens"], 60);
    s.assert_no_workspaces();
}

/// Issue 15, Done-when: `hyoka report compare` on two runs of one suite prints the per-task
/// table and, with `--json`, the deltas; `--fail-on never` exits 0 on failed evals.
#[test]
fn two_runs_compare_and_fail_on_decides_the_exit_status() {
    let s = Scratch::new();
    let suite = write_suite(
        &s,
        "suite.yaml",
        r#"
evals:
  - { id: steady, command: ["true"] }
  - { id: flips, command: [sh, -c, 'test -e {dir}/fixed'] }
  - { id: broken, command: [sh, -c, 'exit 1'] }
"#,
    );
    let out = s.run(&[
        "--run-id",
        "before",
        "--fail-on",
        "never",
        "--suite",
        &suite,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::write(s.path().join("fixed"), "").unwrap();
    let out = s.run(&["--run-id", "after", "--fail-on", "error", "--suite", &suite]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "failures are not errors: {}",
        stderr(&out)
    );
    let out = s.run(&["--run-id", "strict", "--suite", &suite]);
    assert_eq!(out.status.code(), Some(1), "the default fails on failures");

    let (a, b) = (
        s.reports().join("before"),
        s.reports().join("after/run.json"),
    );
    let out = hyoka()
        .args(["report", "compare"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("flips") && text.contains("+100.0%") && text.contains("fixed"),
        "{text}"
    );
    assert!(text.contains("flipped: flips"), "{text}");
    assert!(text.contains("exact two-sided sign test"), "{text}");
    let out = hyoka()
        .args(["report", "compare", "--json"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let flips = json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "flips")
        .unwrap();
    assert_eq!(
        (
            flips["a"].as_f64(),
            flips["b"].as_f64(),
            flips["delta"].as_f64()
        ),
        (Some(0.0), Some(1.0), Some(1.0))
    );
    assert_eq!(flips["flip"], "fixed");
    assert_eq!(json["test"]["b_better"], 1);
    assert_eq!(json["test"]["p_value"], 1.0);
    let out = hyoka()
        .args(["report", "compare"])
        .arg(&a)
        .arg(s.path().join("nope"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    s.assert_no_workspaces();
}

/// A suite's `agents:` run every eval without a command, with its prompt; each trial records
/// its agent, and the tasks are per agent.
#[test]
fn agents_run_each_eval_with_its_prompt() {
    let s = Scratch::new();
    let suite = write_suite(
        &s,
        "suite.yaml",
        r#"
agents:
  yes-man: [sh, -c, 'echo "yes-man {prompt}" >> {dir}/starts']
  grumpy: [sh, -c, 'echo "grumpy {prompt}" >> {dir}/starts; exit 1']
evals:
  - { id: greet, prompt: "say hi" }
"#,
    );
    let out = s.run(&["--run-id", "ag", "--suite", &suite]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(starts(&s), ["grumpy say hi", "yes-man say hi"]);
    assert_eq!(s.report("ag", "greet.yes-man")["agent"], "yes-man");
    assert_eq!(s.report("ag", "greet.grumpy")["status"], "failed");
    let run = read_json(&s.reports().join("ag/run.json"));
    let tasks: Vec<(&str, &str, u64)> = run["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["eval_id"].as_str().unwrap(),
                t["agent"].as_str().unwrap(),
                t["passed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(tasks, [("greet", "grumpy", 0), ("greet", "yes-man", 1)]);
    s.assert_no_workspaces();
}

/// Issue 12: SIGTERM during a `--workers 1` suite records the evals that never began as
/// `not_run`, counted apart and left out of the pass rate.
#[test]
fn sigterm_leaves_evals_that_never_began_not_run() {
    let s = Scratch::new();
    let suite = write_suite(
        &s,
        "suite.yaml",
        r#"
evals:
  - { id: first, command: [sh, -c, 'echo $$ > {dir}/first.pid; exec sleep 300'] }
  - { id: second, command: ["true"] }
  - { id: third, command: ["true"] }
"#,
    );
    let child = s
        .hyoka("run")
        .args(["--run-id", "term", "--workers", "1", "--suite", &suite])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = read_pid(&s.path().join("first.pid"));
    send(&child, rustix::process::Signal::TERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert!(!pid_alive(pid));
    for id in ["second", "third"] {
        let report = s.report("term", id);
        assert_eq!(report["status"], "not_run", "{report}");
        assert_eq!(report["attempts"], 0);
    }
    let run = read_json(&s.reports().join("term/run.json"));
    assert_eq!(run["totals"]["not_run"], 2);
    assert_eq!(run["totals"]["failed"], 0);
    assert!(
        run["totals"].get("pass_rate").is_none(),
        "nothing was scored: {run}"
    );
    let text = stdout(&out);
    assert!(
        text.contains("2 not run") && text.contains("not_run"),
        "{text}"
    );
    assert!(!text.contains("failed  second"), "{text}");
    s.assert_no_workspaces();
}

/// Issue 12: `report merge` checks what it merges; `--output` still prints the summary.
#[test]
fn merge_refuses_what_is_not_one_run_and_names_the_inputs() {
    let s = Scratch::new();
    let evals: String = (1..=4)
        .map(|i| format!("  - {{ id: e{i}, command: [\"true\"] }}\n"))
        .collect();
    let suite = write_suite(&s, "suite.yaml", &format!("evals:\n{evals}"));
    let other = write_suite(
        &s,
        "other.yaml",
        "evals:\n  - { id: x, command: [\"false\"] }\n  - { id: y, command: [\"false\"] }\n",
    );
    let shard = |reports: &str, suite: &str, shard: &str, run_id: &str| {
        let out = hyoka()
            .args([
                "run",
                "--run-id",
                run_id,
                "--suite",
                suite,
                "--shard",
                shard,
                "--reports",
            ])
            .arg(s.path().join(reports))
            .arg("--workspace-root")
            .arg(s.ws_root())
            .output()
            .unwrap();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr(&out)
        );
        s.path().join(reports).join(run_id)
    };
    let one = shard("m1", &suite, "1/2", "nightly");
    let two = shard("m2", &suite, "2/2", "nightly");
    let alien = shard("m3", &other, "2/2", "nightly");
    let renamed = shard("m4", &suite, "2/2", "other-run");
    let merge = |inputs: &[&Path], extra: &[&str]| {
        hyoka()
            .args(["report", "merge"])
            .args(extra)
            .args(inputs)
            .output()
            .unwrap()
    };
    let refused = |out: &std::process::Output, wanted: &str| {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
        let err = stderr(out);
        assert!(
            err.starts_with("error: ") && err.contains(wanted),
            "wanted {wanted:?} in {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    };
    refused(&merge(&[&one, &alien], &[]), "are runs of different suites");
    assert!(stderr(&merge(&[&one, &alien], &[])).contains(&alien.display().to_string()));
    refused(
        &merge(&[&one, &renamed], &[]),
        "are runs of different ids (nightly and other-run)",
    );
    refused(
        &merge(&[&one], &[]),
        "shard 2 of 2 missing (give --allow-partial",
    );
    let out = merge(&[&one], &["--allow-partial"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let partial: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(partial["missing_shards"], serde_json::json!([2]));

    // Hostile or broken inputs: ids that break the grammar, times backwards, no evals.
    let forged = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut run = read_json(&two.join("run.json"));
        edit(&mut run);
        let dir = s.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), serde_json::to_vec(&run).unwrap()).unwrap();
        dir
    };
    let bad_id = forged("bad-id", &|r| r["evals"][0]["eval_id"] = "../../etc".into());
    refused(
        &merge(&[&one, &bad_id], &[]),
        "eval id \"../../etc\" breaks the id grammar",
    );
    let backwards = forged("backwards", &|r| {
        r["ended_at"] = "2001-01-01T00:00:00.000Z".into();
    });
    refused(&merge(&[&one, &backwards], &[]), "its times run backwards");
    let empty = forged("empty", &|r| r["evals"] = serde_json::json!([]));
    refused(&merge(&[&one, &empty], &[]), "the run holds no evals");

    let merged = s.path().join("merged.json");
    let out = merge(&[&one, &two], &["--output", merged.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("run nightly: passed — 4 passed"),
        "{}",
        stdout(&out)
    );
    assert_eq!(read_json(&merged)["totals"]["evals"], 4);
}

/// Issue 12: the human summary of a failed eval says why: the failing phase, the review's
/// verdict and score, a spawn failure's reason.
#[test]
fn the_summary_says_why_an_eval_failed() {
    let s = Scratch::new();
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "why-build",
            &["--build", "exit 2", "--", "true"],
            "why: build failed: exit code 2",
        ),
        (
            "why-review",
            &[
                "--review",
                r#"echo '{"pass": false, "score": 0.3, "notes": "tests fail"}'"#,
                "--",
                "true",
            ],
            "why: review failed: the review's verdict is a fail (verdict fail, score 0.3: tests fail)",
        ),
        (
            "why-spawn",
            &["--", "/no/such/agent"],
            "why: cannot start \"/no/such/agent\"",
        ),
    ];
    for (run_id, args, why) in cases {
        let out = s.run(&[&["--run-id", run_id][..], args].concat());
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stdout(&out).contains(why),
            "{run_id}: wanted {why:?} in\n{}",
            stdout(&out)
        );
    }
    s.assert_no_workspaces();
}

/// Issue 12: `--shard` without `--suite` is bad input, and nothing is created.
#[test]
fn a_shard_without_a_suite_is_refused() {
    let s = Scratch::new();
    let out = s.run(&["--run-id", "lone", "--shard", "1/2", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: ") && err.contains("--suite"),
        "{err}"
    );
    assert!(!s.reports().exists());
}
