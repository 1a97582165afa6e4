//! One truth per figure: on two recorded runs, the HTML page, `run.json` and `report compare`
//! (its text and its JSON) show the same tokens, pass rates, pass@k and flips, the boundary
//! of a flip (exactly half passed) included.

use std::time::SystemTime;

use hyoka_eval::{FakeProgram, RunOutcome, RunSummary, TaskSummary, TokenUsage};
use hyoka_report::{
    Flip, HtmlOptions, compare_runs, read_summary, render_comparison, render_summary,
    write_html_report,
};
use serde_json::{Value, json};

use crate::support::{Case, block, eval};

/// An agent that reports 100 input, 50 output, 30 cache-read and 20 cache-written tokens and
/// $0.25, then exits with `code`.
fn agent(code: i32) -> FakeProgram {
    FakeProgram::new()
        .prints(
            r#"{"type":"result","total_cost_usd":0.25,"usage":{"input_tokens":100,"output_tokens":50,"cache_read_input_tokens":30,"cache_creation_input_tokens":20}}"#,
        )
        .exits(code)
}

/// A run of two epochs of each task, whose agents exit with the codes given per epoch.
async fn record(case: &Case, tasks: &[(&str, [i32; 2])]) -> RunOutcome {
    let mut evals = Vec::new();
    for (id, codes) in tasks {
        case.host
            .programs(id, codes.iter().map(|code| agent(*code)).collect());
        let mut spec = eval(id, id);
        spec.epochs = 2;
        evals.push(spec);
    }
    case.run(evals).await
}

fn task<'a>(summary: &'a RunSummary, id: &str) -> &'a TaskSummary {
    summary.tasks.iter().find(|t| t.eval_id == id).unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_page_run_json_and_compare_show_the_same_figures() {
    let (a, b) = (Case::new(), Case::new());
    // 0/2 → 1/2: half is not solved, no flip. 1/2 → 2/2: fixed. 2/2 → 1/2: broken.
    let run_a = record(&a, &[("up", [1, 1]), ("half", [1, 0]), ("down", [0, 0])]).await;
    let run_b = record(&b, &[("up", [1, 0]), ("half", [0, 0]), ("down", [1, 0])]).await;
    let (dir_a, dir_b) = (a.reports.path().join("case"), b.reports.path().join("case"));

    // run.json: every token counted (cache reads and writes too), and the task figures.
    let (_, summary_a) = read_summary(&dir_a).unwrap();
    assert_eq!(summary_a.tasks, run_a.summary.tasks);
    let usage = summary_a.usage.unwrap();
    assert_eq!(usage.reported_tokens(), Some(6 * 200));
    assert_eq!(usage.cost_usd, Some(1.5));
    assert_eq!(
        (
            task(&summary_a, "half").pass_rate(),
            task(&summary_a, "half").scored()
        ),
        (Some(0.5), 2)
    );

    // report compare, as text and as JSON.
    let (_, summary_b) = read_summary(&dir_b).unwrap();
    assert_eq!(summary_b.tasks, run_b.summary.tasks);
    let comparison = compare_runs(("A", &summary_a), ("B", &summary_b)).unwrap();
    let flips: Vec<(&str, Option<Flip>)> = (comparison.tasks.iter())
        .map(|t| (t.task.as_str(), t.flip))
        .collect();
    assert_eq!(
        flips,
        [
            ("up", None),
            ("half", Some(Flip::Fixed)),
            ("down", Some(Flip::Broken))
        ]
    );
    let as_json = serde_json::to_value(&comparison).unwrap();
    assert_eq!(as_json["flipped"], json!(["half", "down"]));
    assert_eq!(as_json["tasks"][2]["flip"], "broken");
    assert_eq!(as_json["a"]["tokens"], 1200);
    let text = render_comparison(&comparison);
    assert!(text.contains("flipped: half, down"), "{text}");
    assert!(text.contains("pass rate 50.0% of 6 trials"), "{text}");

    // The page of the comparison.
    let page = write_html_report(
        &[dir_a.clone(), dir_b.clone()],
        None,
        &HtmlOptions::default(),
        SystemTime::UNIX_EPOCH,
    )
    .unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    let index = block(&html, "hyoka-index");
    let rows = index["compare"].as_array().unwrap();
    let page_flips: Vec<(&str, &Value)> = rows
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), &r["flip"]))
        .collect();
    assert_eq!(
        page_flips,
        [
            ("up", &Value::Null),
            ("half", &json!("fixed")),
            ("down", &json!("broken"))
        ]
    );
    for (row, delta) in rows.iter().zip(&comparison.tasks) {
        assert_eq!(row["rate_a"].as_f64(), delta.a, "{row}");
        assert_eq!(row["rate_b"].as_f64(), delta.b, "{row}");
    }
    for (side, summary) in [(0, &summary_a), (1, &summary_b)] {
        for row in index["runs"][side]["tasks"].as_array().unwrap() {
            let task = task(summary, row["id"].as_str().unwrap());
            assert_eq!(row["pass_at_k"], json!(task.pass_at_k), "{row}");
            assert_eq!(row["pass_hat_k"], json!(task.pass_hat_k), "{row}");
            assert_eq!(
                (row["passed"].as_u64(), row["counted"].as_u64()),
                (Some(task.passed), Some(task.scored()))
            );
            let trials = summary.evals.iter().filter(|e| e.eval_id == task.eval_id);
            let tokens = TokenUsage::total(trials.filter_map(|e| e.usage.as_deref()))
                .and_then(|u| u.reported_tokens());
            assert_eq!(row["tokens"].as_u64(), tokens, "{row}");
        }
    }
    assert!(
        html.contains("<dt>Tokens</dt><dd>1200</dd>"),
        "the header's tokens are run.json's"
    );
    a.assert_nothing_left();
    b.assert_nothing_left();
}

#[tokio::test(start_paused = true)]
async fn the_summary_names_the_pass_rates_denominator_and_a_reader_that_saw_nothing() {
    let case = Case::new();
    // `codex exec` without `--json` prints text, not events.
    case.program(
        "codex",
        FakeProgram::new()
            .prints("Reading files...")
            .prints("{\"not\":\"an event\"}"),
    );
    let mut spec = eval("e", "codex");
    spec.events = hyoka_eval::EventSource::Auto;
    let outcome = case.run(vec![spec]).await;
    let summary = render_summary(&outcome.summary, case.reports.path());
    assert!(
        summary.contains("events: none seen (codex-json reader: 1 unknown, 1 malformed line(s))"),
        "{summary}"
    );
    assert!(
        summary.contains("(pass rate 100.0% of 1 trial)"),
        "{summary}"
    );
    case.assert_nothing_left();
}
