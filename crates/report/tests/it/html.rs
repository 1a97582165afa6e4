//! The HTML page of a run the harness really recorded (on the fake host's exact virtual
//! timeline): what the page carries is what the records say, to the millisecond.

use std::time::{Duration, SystemTime};

use hyoka_eval::{FakeProgram, LimitSet, PhaseCommand};
use hyoka_report::{HtmlOptions, write_html_report};
use serde_json::json;

use crate::support::{Case, block, eval, ms, tool_call, turn};

#[tokio::test(start_paused = true)]
async fn the_page_of_a_recorded_run_draws_its_phases_marks_and_limit_to_the_millisecond() {
    let case = Case::new();
    let chatty = (1..=10).fold(FakeProgram::new(), |p, n| p.sleeps(ms(100)).prints(turn(n)));
    case.program("runaway", chatty.hangs())
        .program(
            "agent",
            FakeProgram::new()
                .sleeps(ms(100))
                .prints(turn(1))
                .prints(tool_call(1, "Write"))
                .writes("src/main.rs", "fn main() {}")
                .exits(0),
        )
        .program(
            "review",
            FakeProgram::new()
                .sleeps(ms(50))
                .prints(r#"{"pass": true, "score": 0.75, "notes": "tidy <work>"}"#)
                .exits(0),
        );
    let mut limited = eval("limited", "runaway");
    limited.limits = LimitSet {
        max_turns: 3,
        ..limited.limits
    };
    let mut reviewed = eval("reviewed", "agent");
    reviewed.phases.review = Some(PhaseCommand {
        command: vec!["review".into()],
        timeout: Duration::from_mins(1),
    });
    case.run(vec![limited, reviewed]).await;
    let run_dir = case.reports.path().join("case");
    let page = write_html_report(
        std::slice::from_ref(&run_dir),
        None,
        &HtmlOptions::default(),
        SystemTime::UNIX_EPOCH,
    )
    .unwrap();
    assert_eq!(page, run_dir.join("report.html"));
    let html = std::fs::read_to_string(&page).unwrap();
    let index = block(&html, "hyoka-index");
    let tasks = &index["runs"][0]["tasks"];
    assert_eq!(tasks[0]["id"], "limited");
    assert_eq!(tasks[0]["status"], "failed");
    assert_eq!(tasks[0]["terminations"], json!(["max_turns"]));
    assert_eq!(tasks[1]["status"], "passed");
    assert_eq!(tasks[1]["mean_score"], 0.75);
    let trials = block(&html, "hyoka-c0");
    let limited = &trials[0];
    let agent = &limited["phases"][1];
    assert_eq!(
        (&agent["name"], &agent["start_ms"]),
        (&json!("agent"), &json!(0))
    );
    assert_eq!(agent["duration_ms"], 400, "stopped at the fourth turn");
    // Events carry the time since the one before: turns 100 ms apart, the fourth crosses
    // the limit at 400 ms.
    let events: Vec<(u64, String)> = (limited["events"].as_array().unwrap().iter())
        .scan(0, |t, e| {
            *t += e[0].as_u64().unwrap();
            Some((*t, e[1].as_str().unwrap().to_owned()))
        })
        .filter(|(_, kind)| kind == "t" || kind == "L")
        .collect();
    let at = |t: u64, kind: &str| (t, kind.to_owned());
    assert_eq!(
        events,
        [
            at(100, "t"),
            at(200, "t"),
            at(300, "t"),
            at(400, "t"),
            at(400, "L")
        ]
    );
    let limit = (limited["events"].as_array().unwrap().iter())
        .find(|e| e[1] == "L")
        .unwrap();
    assert_eq!(
        limit[5],
        "max_turns crossed: turns 4, actions 0, files 0, bytes 0"
    );
    let reviewed = &trials[1];
    let phases: Vec<String> = (reviewed["phases"].as_array().unwrap().iter())
        .map(|p| format!("{} +{} {}", p["name"], p["start_ms"], p["duration_ms"]))
        .collect();
    assert_eq!(
        phases,
        [
            "\"setup\" +0 0",
            "\"agent\" +0 100",
            "\"review\" +100 50",
            "\"cleanup\" +150 0"
        ]
    );
    assert_eq!(
        reviewed["review"],
        json!({"pass": true, "score": 0.75, "notes": "tidy <work>"})
    );
    assert_eq!(reviewed["tools"], json!([["Write", 1]]));
    assert_eq!(reviewed["cleanup"]["survivors"], 0);
    assert!(!html.contains("tidy <work>"), "record text only as data");
    case.assert_nothing_left();
}

/// Lines Codex 0.169.0 (`codex exec --json`) really printed against `hyoka model-stub serve`:
/// a command, then a command that failed (`crates/events/tests/fixtures/events/
/// codex-0.169-tool-results.jsonl`).
const CODEX: &[&str] = &[
    r#"{"type":"thread.started","thread_id":"01a2355a-e3e9-7373-9995-22a4573f31d6"}"#,
    r#"{"type":"turn.started"}"#,
    r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Looking first."}}"#,
    r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc \"printf 'one\\\\ntwo\\\\n'; ls\"","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc \"printf 'one\\\\ntwo\\\\n'; ls\"","aggregated_output":"one\ntwo\n","exit_code":0,"status":"completed"}}"#,
    r#"{"type":"item.started","item":{"id":"item_3","type":"command_execution","command":"/bin/bash -lc 'cat missing.txt'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"/bin/bash -lc 'cat missing.txt'","aggregated_output":"cat: missing.txt: No such file or directory\n","exit_code":1,"status":"failed"}}"#,
];

/// Lines Gemini CLI 0.61.0 (`--output-format stream-json`) really printed against the stub:
/// a command, then a read of a missing file (`gemini-0.61-tool-results.jsonl`).
const GEMINI: &[&str] = &[
    r#"{"type":"init","timestamp":"2026-12-02T06:04:49.178Z","session_id":"0f8b23be-ab81-46d4-ac10-a3069ba641a4","model":"auto"}"#,
    r#"{"type":"message","timestamp":"2026-12-02T06:04:49.336Z","role":"assistant","content":"Looking first.","delta":true}"#,
    r#"{"type":"tool_use","timestamp":"2026-12-02T06:04:49.491Z","tool_name":"run_shell_command","tool_id":"run_shell_command__run_shell_command_1796191489337_0","parameters":{"command":"printf 'one\\ntwo\\n'; ls"}}"#,
    r#"{"type":"tool_result","timestamp":"2026-12-02T06:04:49.878Z","tool_id":"run_shell_command__run_shell_command_1796191489337_0","status":"success","output":"one\ntwo"}"#,
    r#"{"type":"tool_use","timestamp":"2026-12-02T06:04:50.017Z","tool_name":"read_file","tool_id":"read_file__read_file_1796191490014_0","parameters":{"file_path":"missing.txt"}}"#,
    r#"{"type":"tool_result","timestamp":"2026-12-02T06:04:50.037Z","tool_id":"read_file__read_file_1796191490014_0","status":"error","output":"File not found.","error":{"type":"file_not_found","message":"File not found: /home/dev/project/missing.txt"}}"#,
];

/// The tool calls and results of a trial on the page: `(code, tool, error mark, text)`.
fn calls_and_results(trial: &serde_json::Value) -> Vec<(String, String, String, String)> {
    let text = |e: &serde_json::Value, i: usize| e[i].as_str().unwrap_or_default().to_owned();
    trial["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e[1] == "c" || e[1] == "r")
        .map(|e| (text(e, 1), text(e, 2), text(e, 4), text(e, 5)))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_page_shows_the_tool_results_of_codex_and_gemini() {
    let case = Case::new();
    for (name, lines) in [("codex", CODEX), ("gemini", GEMINI)] {
        let program = lines
            .iter()
            .fold(FakeProgram::new(), |p, line| p.sleeps(ms(10)).prints(*line));
        case.program(name, program.exits(0));
    }
    let mut codex = eval("codex", "codex");
    codex.events = hyoka_eval::EventSource::CodexJson;
    let mut gemini = eval("gemini", "gemini");
    gemini.events = hyoka_eval::EventSource::GeminiStreamJson;
    case.run(vec![codex, gemini]).await;
    let run_dir = case.reports.path().join("case");
    let page = write_html_report(
        std::slice::from_ref(&run_dir),
        None,
        &HtmlOptions::default(),
        SystemTime::UNIX_EPOCH,
    )
    .unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    // One trial per eval, in the plan's order, in the first chunk.
    let trials = block(&html, "hyoka-c0");
    let trials_of = |at: usize| trials[at].clone();
    let row = |code: &str, tool: &str, mark: &str, text: &str| {
        (code.into(), tool.into(), mark.into(), text.into())
    };
    let codex = &trials_of(0);
    let codex_calls = calls_and_results(codex);
    assert_eq!(codex_calls.len(), 4, "{codex_calls:#?}");
    assert_eq!(
        (&codex_calls[1], &codex_calls[3]),
        (
            &row("r", "", "", "one\ntwo\n"),
            &row(
                "r",
                "",
                "error",
                "cat: missing.txt: No such file or directory\n"
            )
        )
    );
    assert_eq!(codex_calls[0].1, "command_execution");
    let gemini = &trials_of(1);
    assert_eq!(
        calls_and_results(gemini),
        [
            row(
                "c",
                "run_shell_command",
                r#"{"command":"printf 'one\\ntwo\\n'; ls"}"#,
                ""
            ),
            row("r", "", "", "one\ntwo"),
            row("c", "read_file", r#"{"file_path":"missing.txt"}"#, ""),
            row(
                "r",
                "",
                "error",
                "File not found: /home/dev/project/missing.txt"
            ),
        ]
    );
    case.assert_nothing_left();
}
