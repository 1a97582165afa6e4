//! Limits stop a real agent early, with the right termination and the counts at the stop.

use crate::support::{Scratch, hyoka_path, stderr};

fn sim(args: &str) -> Vec<String> {
    let mut v = vec![hyoka_path().to_owned(), "sim-agent".to_owned()];
    v.extend(args.split_whitespace().map(str::to_owned));
    v
}

fn run(s: &Scratch, id: &str, flags: &[&str], command: &[String]) -> serde_json::Value {
    let mut args: Vec<&str> = vec!["--run-id", id];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend(command.iter().map(String::as_str));
    let out = s.run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    s.report(id, "main")
}

#[test]
fn max_turns_stops_a_stream_json_agent() {
    let s = Scratch::new();
    let report = run(
        &s,
        "turns",
        &["--events", "stream-json", "--max-turns", "5"],
        &sim("--turns 1000 --files 0 --turn-delay 20ms"),
    );
    assert_eq!(report["termination"], "max_turns");
    assert_eq!(report["status"], "failed");
    assert_eq!(report["counts"]["turns"], 6);
    assert_eq!(report["limits"]["max_turns"], 5);
    let log = std::fs::read_to_string(s.reports().join("turns/main/output.log")).unwrap();
    assert!(
        !log.contains("\"type\":\"result\""),
        "the agent ran to completion"
    );
    assert!(report["duration_ms"].as_u64().unwrap() < 15_000);
    let timeline: serde_json::Value = serde_json::from_slice(
        &std::fs::read(s.reports().join("turns/main/action_timeline.json")).unwrap(),
    )
    .unwrap();
    let kinds: Vec<&str> = timeline["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"limit_reached"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"exit"));
    s.assert_no_workspaces();
}

#[test]
fn max_session_actions_stops_a_fast_emitter() {
    let s = Scratch::new();
    let report = run(
        &s,
        "actions",
        &[
            "--events",
            "stream-json",
            "--max-session-actions",
            "3",
            "--max-files",
            "0",
        ],
        &sim("--turns 1 --files 200 --linger 30s"),
    );
    assert_eq!(report["termination"], "max_session_actions");
    assert_eq!(report["counts"]["actions"], 4);
    assert_eq!(report["counts"]["turns"], 1);
    s.assert_no_workspaces();
}

#[test]
fn max_files_stops_a_writer_of_many_files() {
    let s = Scratch::new();
    let writer = [
        "sh".to_owned(),
        "-c".to_owned(),
        "i=0; while :; do i=$((i+1)); echo $i > .hidden-$i; done".to_owned(),
    ];
    let report = run(&s, "files", &["--max-files", "5"], &writer);
    assert_eq!(report["termination"], "max_files");
    assert_eq!(report["counts"]["files"], 6, "{report}");
    assert!(report["duration_ms"].as_u64().unwrap() < 15_000);
    s.assert_no_workspaces();
}

#[test]
fn max_output_size_stops_a_writer_of_large_files() {
    let s = Scratch::new();
    let writer = [
        "sh".to_owned(),
        "-c".to_owned(),
        "mkdir -p target/debug; while :; do head -c 65536 /dev/zero >> target/debug/big.bin; done"
            .to_owned(),
    ];
    let report = run(&s, "bytes", &["--max-output-size", "1MiB"], &writer);
    assert_eq!(report["termination"], "max_output_size");
    let bytes = report["counts"]["output_bytes"].as_u64().unwrap();
    assert!(bytes > 1 << 20 && bytes < 64 << 20, "{bytes}");
    assert_eq!(report["limits"]["max_output_size"], 1 << 20);
    s.assert_no_workspaces();
}

#[test]
fn zero_disables_a_limit_and_defaults_apply_otherwise() {
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "zero",
        "--events",
        "stream-json",
        "--max-turns",
        "0",
        "--max-files",
        "0",
        "--",
        hyoka_path(),
        "sim-agent",
        "--turns",
        "40",
        "--files",
        "60",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("zero", "main");
    // Turns and files are unlimited, but the built-in 50-action limit still applies.
    assert_eq!(report["termination"], "max_session_actions");
    assert_eq!(report["limits"]["max_turns"], 0);
    assert_eq!(report["limits"]["max_session_actions"], 50);
    assert_eq!(report["limits"]["max_output_size"], 1 << 20);
}

#[test]
fn jsonl_events_are_counted() {
    let s = Scratch::new();
    let script = r#"for i in 1 2 3; do echo '{"type":"turn"}' >> "$HYOKA_EVENTS"; echo '{"type":"tool_call","name":"bash","path":"x.sh"}' >> "$HYOKA_EVENTS"; done; echo 'garbage' >> "$HYOKA_EVENTS""#;
    let out = s.run(&[
        "--run-id", "jsonl", "--events", "jsonl", "--", "sh", "-c", script,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("jsonl", "main");
    assert_eq!(report["counts"]["turns"], 3);
    assert_eq!(report["counts"]["actions"], 3);
    let timeline: serde_json::Value = serde_json::from_slice(
        &std::fs::read(s.reports().join("jsonl/main/action_timeline.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(timeline["summary"]["malformed_lines"], 1);
    assert_eq!(timeline["summary"]["tools"]["bash"], 3);
}

#[test]
fn the_real_captures_are_counted_end_to_end() {
    let Some(shared) = crate::support::shared_dir() else {
        // Straight to stderr, past the test harness's capture, so the skip shows in the output.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: ../shared is absent (a fresh clone); CI has it\n",
        );
        return;
    };
    let s = Scratch::new();
    for (file, turns, actions) in [
        ("sheenapps-write-file.jsonl", 2, 1),
        ("gleam-basic-query.jsonl", 1, 0),
        ("gleam-ls-composed.jsonl", 1, 1),
        ("claudeless-v2.1.12-normalized.jsonl", 1, 0),
    ] {
        let path = shared.join("fixtures/stream-json").join(file);
        let id = file.trim_end_matches(".jsonl");
        let out = s.run(&[
            "--run-id",
            id,
            "--events",
            "stream-json",
            "--",
            "cat",
            path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let report = s.report(id, "main");
        assert_eq!(
            (
                report["counts"]["turns"].as_u64(),
                report["counts"]["actions"].as_u64()
            ),
            (Some(turns), Some(actions)),
            "{file}"
        );
    }
}

/// Issue 27, item 1: with the default `--reports` (relative, `reports`) and a relative
/// `--workspace-root`, run from another directory than the agent's, every path hyoka hands the
/// agent is absolute, so the agent's `echo … >> "$HYOKA_EVENTS"` in its workspace counts: its
/// turns, its tokens and cost, and `--max-turns` firing on them.
#[test]
fn the_default_relative_reports_hand_the_agent_absolute_paths() {
    let s = Scratch::new();
    let script = r#"for v in "$HYOKA_EVENTS" "$HYOKA_WORKSPACE" "$PWD"; do case "$v" in /*) ;; *) echo "relative: $v" >&2; exit 3;; esac; done
echo '{"type":"turn"}' >> "$HYOKA_EVENTS"
echo '{"type":"tool_call","name":"bash","path":"x.sh"}' >> "$HYOKA_EVENTS"
echo '{"type":"usage","input_tokens":120,"output_tokens":40,"cost_usd":0.002}' >> "$HYOKA_EVENTS"
echo '{"type":"turn"}' >> "$HYOKA_EVENTS""#;
    let out = crate::support::hyoka()
        .current_dir(s.path())
        .args(["run", "--workspace-root", "ws", "--run-id", "rel"])
        .args(["--events", "jsonl", "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("rel", "main");
    assert_eq!(report["status"], "passed", "{report}");
    assert_eq!(report["counts"]["turns"], 2);
    assert_eq!(report["counts"]["actions"], 1);
    assert_eq!(report["usage"]["input_tokens"], 120);
    assert_eq!(report["usage"]["output_tokens"], 40);
    assert_eq!(report["usage"]["cost_usd"], 0.002);

    let chatty =
        r#"for i in 1 2 3 4 5; do echo '{"type":"turn"}' >> "$HYOKA_EVENTS"; done; exec sleep 300"#;
    let out = crate::support::hyoka()
        .current_dir(s.path())
        .args(["run", "--workspace-root", "ws", "--run-id", "turns"])
        .args(["--events", "jsonl", "--max-turns", "2", "--timeout", "60s"])
        .args(["--", "sh", "-c", chatty])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(s.report("turns", "main")["termination"], "max_turns");
    s.assert_no_workspaces();
}
