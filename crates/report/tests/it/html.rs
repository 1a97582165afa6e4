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
