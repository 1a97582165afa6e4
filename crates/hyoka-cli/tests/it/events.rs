//! Agent event formats through `hyoka run`: fake `codex exec --json` and Gemini stream-json
//! emitters (shell scripts printing the written transcripts of `hyoka-eval`) give the same
//! counts, timeline, spending and limits as Claude Code's stream-json; `--events auto` picks
//! the reader by program name; a reader that saw nothing says so.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::{Scratch, stderr};

fn transcript(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../events/tests/fixtures/events")
        .join(name)
}

/// Writes `bin/<program>`: an emitter that writes `hello.txt`, prints `transcript` with its
/// working directory in place of the transcript's, then exits or, with `hang`, waits to be
/// stopped.
fn emitter(s: &Scratch, program: &str, transcript_name: &str, hang: bool) -> String {
    let bin = s.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = bin.join(program);
    let script = format!(
        "#!/bin/sh\nprintf 'hello\\n' > hello.txt\nsed \"s|/home/dev/project|$PWD|g\" '{}'\n{}",
        transcript(transcript_name).display(),
        if hang { "exec sleep 600\n" } else { "" }
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn timeline(s: &Scratch, run_id: &str) -> serde_json::Value {
    let path = s.reports().join(run_id).join("main/action_timeline.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A fake agent: its program name, transcript, reader, arguments and the tokens it reports.
struct Agent {
    program: &'static str,
    transcript: &'static str,
    format: &'static str,
    args: &'static [&'static str],
    input_tokens: u64,
    output_tokens: u64,
}

const AGENTS: [Agent; 2] = [
    Agent {
        program: "codex",
        transcript: "codex-exec-write-file.jsonl",
        format: "codex-json",
        args: &["exec", "--json", "create hello.txt"],
        input_tokens: 571,
        output_tokens: 1043,
    },
    Agent {
        program: "gemini",
        transcript: "gemini-stream-write-file.jsonl",
        format: "gemini-stream-json",
        args: &["--output-format", "stream-json", "-p", "create hello.txt"],
        input_tokens: 3850,
        output_tokens: 663,
    },
];

#[test]
fn codex_and_gemini_emitters_count_turns_actions_files_and_tokens() {
    for Agent {
        program,
        transcript: file,
        format,
        args,
        input_tokens: input,
        output_tokens: output,
    } in AGENTS
    {
        for flag in ["auto", format] {
            let s = Scratch::new();
            let agent = emitter(&s, program, file, false);
            let mut argv = vec!["--run-id", "ev", "--events", flag, "--"];
            argv.push(&agent);
            argv.extend_from_slice(args);
            let out = s.run(&argv);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{program} {flag}: {}",
                stderr(&out)
            );
            let report = s.report("ev", "main");
            let what = format!("{program} --events {flag}: {report}");
            // Each transcript's second reply is a tool call alone: a turn too.
            assert_eq!(report["counts"]["turns"], 3, "{what}");
            assert_eq!(report["counts"]["actions"], 2, "{what}");
            assert_eq!(report["counts"]["files"], 1, "{what}");
            assert_eq!(report["usage"]["input_tokens"], input, "{what}");
            assert_eq!(report["usage"]["output_tokens"], output, "{what}");
            assert!(report["usage"].get("cost_usd").is_none(), "{what}");
            assert_eq!(report["events"]["format"], format, "{what}");
            assert_eq!(report["events"]["requested"], flag, "{what}");
            assert!(report["events"].get("none_seen").is_none(), "{what}");
            let hello = format!("{}/hello.txt", report["workspace"].as_str().unwrap());
            let events = timeline(&s, "ev")["events"].as_array().unwrap().clone();
            let has = |kind: &str, path: &str| {
                events
                    .iter()
                    .any(|e| e["type"] == kind && e["path"].as_str() == Some(path))
            };
            assert!(has("tool_call", &hello), "{what}: {events:?}");
            assert!(has("file_created", "hello.txt"), "{what}: {events:?}");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(!stdout.contains("none seen"), "{stdout}");
            s.assert_no_workspaces();
        }
    }
}

#[test]
fn max_session_actions_1_stops_each_emitter_at_its_second_action() {
    for Agent {
        program,
        transcript: file,
        args,
        ..
    } in AGENTS
    {
        let s = Scratch::new();
        let agent = emitter(&s, program, file, true);
        let mut argv = vec![
            "--run-id",
            "stop",
            "--events",
            "auto",
            "--max-session-actions",
            "1",
            "--",
        ];
        argv.push(&agent);
        argv.extend_from_slice(args);
        let out = s.run(&argv);
        assert_eq!(out.status.code(), Some(1), "{program}: {}", stderr(&out));
        let report = s.report("stop", "main");
        assert_eq!(report["termination"], "max_session_actions", "{report}");
        assert_eq!(report["counts"]["actions"], 2, "{report}");
        assert_eq!(report["cleanup"]["survivors"], 0, "{report}");
        s.assert_no_workspaces();
    }
}

fn write_suite(s: &Scratch, yaml: &str) -> String {
    let path = s.path().join("suite.yaml");
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

#[test]
fn a_suite_with_events_auto_picks_per_agent_and_flags_silent_readers() {
    let s = Scratch::new();
    let codex = emitter(&s, "codex", "codex-exec-write-file.jsonl", false);
    let gemini = emitter(&s, "gemini", "gemini-stream-write-file.jsonl", false);
    let suite = write_suite(
        &s,
        &format!(
            r#"
defaults: {{ events: auto, timeout: 30s }}
evals:
  - {{ id: codex, command: ["{codex}", exec, --json, hi] }}
  - {{ id: gemini, command: [sh, -c, 'exec "{gemini}" -p hi'] }}
  - {{ id: silent, command: [sh, -c, "echo plain text"] }}
"#
        ),
    );
    let out = s
        .hyoka("run")
        .args(["--run-id", "auto", "--suite", &suite])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (id, format) in [
        ("codex", "codex-json"),
        ("gemini", "gemini-stream-json"),
        ("silent", "jsonl"),
    ] {
        let report = s.report("auto", id);
        assert_eq!(report["events"]["format"], format, "{report}");
        assert_eq!(
            report["counts"]["turns"],
            if id == "silent" { 0 } else { 3 },
            "{report}"
        );
        assert_eq!(
            report["events"].get("none_seen").is_some(),
            id == "silent",
            "{report}"
        );
    }
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.reports().join("auto/run.json")).unwrap()).unwrap();
    let silent = run["evals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["eval_id"] == "silent")
        .unwrap();
    assert_eq!(silent["events"]["none_seen"], true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("events: none seen").count(), 1, "{stdout}");
    assert!(
        stdout.contains("events: none seen (jsonl reader: 0 unknown, 0 malformed line(s))"),
        "{stdout}"
    );
    assert!(Path::new(&s.reports().join("auto/silent/report.json")).exists());
    s.assert_no_workspaces();
}
