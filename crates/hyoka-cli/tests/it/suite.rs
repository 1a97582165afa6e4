//! Suites: YAML evals run concurrently with their own limits; sharding; merging; bad suites.

use std::path::Path;

use crate::support::{Scratch, hyoka, hyoka_path, stderr};

fn write_suite(s: &Scratch, name: &str, yaml: &str) -> String {
    let path = s.path().join(name);
    std::fs::write(&path, yaml.replace("{hyoka}", hyoka_path())).unwrap();
    path.display().to_string()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}")))
        .unwrap()
}

#[test]
fn concurrent_evals_keep_their_own_limits_and_workspaces() {
    let s = Scratch::new();
    std::fs::create_dir_all(s.path().join("starters/base")).unwrap();
    std::fs::write(s.path().join("starters/base/README.md"), "starter").unwrap();
    let suite = write_suite(
        &s,
        "suite.yaml",
        r#"
defaults:
  timeout: 30s
  events: stream-json
  limits: { max_turns: 100, max_files: 100 }
evals:
  - id: tight
    command: [{hyoka}, sim-agent, --turns, "50", --files, "0", --turn-delay, 10ms]
    limits: { max_turns: 3 }
  - id: loose
    command: [{hyoka}, sim-agent, --turns, "10", --files, "4"]
  - id: with-starter
    command: [sh, -c, 'test "$(cat README.md)" = starter && test "$MODE" = eval && echo new > new.txt']
    starter: starters/base
    env: { MODE: eval }
  - id: failing
    command: [sh, -c, "exit 7"]
"#,
    );
    let out = s
        .hyoka("run")
        .args(["--run-id", "suite-1", "--workers", "4", "--suite", &suite])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = |id: &str| s.report("suite-1", id);
    assert_eq!(report("tight")["termination"], "max_turns");
    assert_eq!(report("tight")["counts"]["turns"], 4);
    assert_eq!(report("tight")["limits"]["max_turns"], 3);
    assert_eq!(report("loose")["status"], "passed");
    assert_eq!(report("loose")["counts"]["turns"], 10);
    assert_eq!(report("loose")["counts"]["files"], 4);
    assert_eq!(report("loose")["limits"]["max_turns"], 100);
    assert_eq!(
        report("with-starter")["status"],
        "passed",
        "{}",
        report("with-starter")
    );
    assert_eq!(report("with-starter")["counts"]["files"], 1);
    assert_eq!(report("failing")["exit_code"], 7);
    let workspaces: Vec<String> = ["tight", "loose", "with-starter", "failing"]
        .iter()
        .map(|id| report(id)["workspace"].as_str().unwrap().to_owned())
        .collect();
    for (id, ws) in ["tight", "loose", "with-starter", "failing"]
        .iter()
        .zip(&workspaces)
    {
        assert!(ws.contains(&format!("hyoka-suite-1-{id}-")), "{ws}");
    }
    let run = read_json(&s.reports().join("suite-1/run.json"));
    assert_eq!(run["totals"]["evals"], 4);
    assert_eq!(run["totals"]["passed"], 2);
    assert_eq!(run["totals"]["failed"], 2);
    assert_eq!(run["status"], "failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("2 passed, 2 failed"), "{stdout}");
    s.assert_no_workspaces();
}

#[test]
fn cli_flags_override_the_eval_which_overrides_defaults() {
    let s = Scratch::new();
    let suite = write_suite(
        &s,
        "suite.yaml",
        r#"
defaults: { limits: { max_turns: 7, max_files: 8 } }
evals:
  - { id: a, command: [test, 5, -eq, 5], limits: { max_files: 9 } }
"#,
    );
    let out = s
        .hyoka("run")
        .args(["--run-id", "prec", "--max-turns", "2", "--suite", &suite])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let limits = &s.report("prec", "a")["limits"];
    assert_eq!(
        (limits["max_turns"].as_u64(), limits["max_files"].as_u64()),
        (Some(2), Some(9))
    );
    assert_eq!(limits["max_session_actions"], 50);
}

#[test]
fn shards_partition_the_suite_and_merge_back() {
    let s = Scratch::new();
    let evals: String = (1..=7)
        .map(|i| format!("  - {{ id: e{i}, command: [\"true\"] }}\n"))
        .collect();
    let suite = write_suite(&s, "suite.yaml", &format!("evals:\n{evals}"));
    let mut seen = Vec::new();
    let mut dirs = Vec::new();
    for index in 1..=3 {
        let reports = s.path().join(format!("machine-{index}"));
        let out = hyoka()
            .args([
                "run",
                "--run-id",
                "sharded",
                "--suite",
                &suite,
                "--shard",
                &format!("{index}/3"),
                "--reports",
            ])
            .arg(&reports)
            .arg("--workspace-root")
            .arg(s.ws_root())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let run = read_json(&reports.join("sharded/run.json"));
        for eval in run["evals"].as_array().unwrap() {
            seen.push(eval["eval_id"].as_str().unwrap().to_owned());
        }
        dirs.push(reports.join("sharded"));
    }
    seen.sort();
    assert_eq!(seen, ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]);
    let merged_path = s.path().join("merged.json");
    let out = hyoka()
        .args(["report", "merge", "--output"])
        .arg(&merged_path)
        .args(&dirs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let merged = read_json(&merged_path);
    assert_eq!(merged["run_id"], "sharded");
    assert_eq!(merged["totals"]["evals"], 7);
    assert_eq!(merged["totals"]["passed"], 7);
    // Merging a shard twice is refused.
    let out = hyoka()
        .args(["report", "merge"])
        .arg(&dirs[0])
        .arg(&dirs[0])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("shard 1/3 appears twice"),
        "{}",
        stderr(&out)
    );
    s.assert_no_workspaces();
}

/// Issue 25, item 6: shard counts are bounded. An absurd count on the command line is bad
/// input (exit 2, nothing started); a shard's `run.json` claiming one is refused by the merge
/// instead of listing a trillion missing shards.
#[test]
fn absurd_shard_counts_are_refused() {
    let s = Scratch::new();
    let suite = write_suite(
        &s,
        "suite.yaml",
        "evals:\n  - { id: e1, command: [\"true\"] }\n",
    );
    for shard in ["1/1000000000000", "1/10001", "1/99999999999999999999999"] {
        let out = s
            .hyoka("run")
            .args(["--suite", &suite, "--shard", shard])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{shard}: {err}");
        assert!(err.starts_with("error:") && err.contains("10000"), "{err}");
        assert!(!s.reports().exists(), "nothing is started for {shard}");
    }
    let out = s
        .hyoka("run")
        .args(["--run-id", "big", "--suite", &suite, "--shard", "1/2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_json = s.reports().join("big/run.json");
    let mut run = read_json(&run_json);
    run["shard"] = "1/1000000000000".into();
    std::fs::write(&run_json, serde_json::to_vec(&run).unwrap()).unwrap();
    let out = hyoka()
        .args(["report", "merge", "--allow-partial", "--output"])
        .arg(s.path().join("merged.json"))
        .arg(s.reports().join("big"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not I/N"), "{err}");
    assert!(!s.path().join("merged.json").exists());
    s.assert_no_workspaces();
}

#[track_caller]
fn check_bad(s: &Scratch, yaml: &str, mentions: &[&str]) {
    let suite = write_suite(s, "bad.yaml", yaml);
    let out = s.hyoka("run").args(["--suite", &suite]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{yaml}\n{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "one line only: {err}");
    for m in mentions {
        assert!(
            lines[0].contains(m),
            "{yaml}\nwanted {m:?} in: {}",
            lines[0]
        );
    }
    assert!(lines[0].contains("bad.yaml"), "{}", lines[0]);
    assert!(
        !s.reports().exists(),
        "nothing is started for an invalid suite"
    );
    s.assert_no_workspaces();
}

#[test]
fn bad_suites_exit_2_naming_file_eval_and_field() {
    let s = Scratch::new();
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x\n",
        &["bad.yaml:3:14", "unclosed"],
    );
    check_bad(&s, "evals: [\n", &["bad.yaml:"]);
    check_bad(
        &s,
        "evals:\n  - id: a\n    command: [x]\n    bogus: 1\n",
        &["eval \"a\"", "bogus"],
    );
    check_bad(&s, "default:\n  timeout: 1s\nevals: []\n", &["default"]);
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [x] }\n  - { id: a, command: [y] }\n",
        &["eval \"a\"", "duplicate"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: ../up, command: [x] }\n",
        &["../up", "field id"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [] }\n",
        &["eval \"a\"", "command", "empty"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [\"\"] }\n",
        &["eval \"a\"", "command"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [x], limits: { max_turns: -3 } }\n",
        &["eval \"a\"", "limits.max_turns"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [x], limits: { max_turns: lots } }\n",
        &["eval \"a\"", "limits.max_turns"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [x], limits: { max_output_size: 1XB } }\n",
        &["eval \"a\"", "max_output_size", "1XB"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [x], timeout: soon }\n",
        &["eval \"a\"", "timeout", "soon"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [x], timeout: -5s }\n",
        &["eval \"a\"", "timeout"],
    );
    check_bad(
        &s,
        "defaults: { grace: forever }\nevals:\n  - { id: a, command: [x] }\n",
        &["defaults", "grace"],
    );
    check_bad(
        &s,
        "defaults: { events: smoke-signals }\nevals:\n  - { id: a, command: [x] }\n",
        &["defaults", "events", "smoke-signals"],
    );
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [x], starter: nowhere }\n",
        &["eval \"a\"", "starter", "nowhere"],
    );
    check_bad(&s, "evals:\n  - { command: [x] }\n", &["evals[0]", "id"]);
    check_bad(&s, "evals: []\n", &["no evals"]);
    check_bad(
        &s,
        "evals:\n  - { id: a, command: [x], env: { HYOKA_RUN_ID: x } }\n",
        &["eval \"a\"", "env", "HYOKA_RUN_ID"],
    );
    check_bad(&s, "just a string\n", &["bad.yaml"]);
}

#[test]
fn a_missing_suite_file_is_bad_input() {
    let s = Scratch::new();
    let out = hyoka()
        .args(["run", "--suite"])
        .arg(s.path().join("missing.yaml"))
        .arg("--reports")
        .arg(s.reports())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.yaml"), "{}", stderr(&out));
}
