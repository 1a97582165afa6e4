//! Tests of judging a check: the oracle must pass, the nop agent must fail.

use super::*;
use crate::report::{Report, ReviewVerdict, Termination};

fn report(task: &str, agent: &str, status: Status, score: Option<f64>) -> Report {
    let mut report: Report = serde_json::from_value(serde_json::json!({
        "run_id": "r", "eval_id": task, "command": [], "workspace": "", "started_at": "",
        "ended_at": "", "duration_ms": 0, "status": status.as_str(), "termination": "exited",
        "exit_code": 0, "signal": null,
        "limits": {"max_turns": 0, "max_files": 0, "max_output_size": 0,
                   "max_session_actions": 0, "timeout_ms": 0, "grace_ms": 0},
        "counts": {"turns": 0, "actions": 0, "files": 0, "output_bytes": 0},
        "cleanup": {"processes_seen": 0, "processes_killed": 0, "survivors": 0,
                    "workspace_removed": true, "workspace_kept_at": null}
    }))
    .unwrap();
    report.agent = Some(agent.to_owned());
    report.review = score.map(|s| ReviewVerdict {
        pass: s >= 1.0,
        score: Some(s),
        notes: None,
    });
    report
}

#[track_caller]
fn check(reports: &[Report]) -> TaskCheck {
    check_tasks(reports)
}

#[test]
fn a_task_behaves_when_the_oracle_passes_and_nop_fails() {
    let result = check(&[
        report("a", "oracle", Status::Passed, Some(1.0)),
        report("a", "nop", Status::Failed, Some(0.0)),
    ]);
    assert_eq!((result.behave, result.misbehave), (1, 0));
    assert_eq!(result.tasks[0].oracle_reward, Some(1.0));
    assert_eq!(
        render_check(&result),
        "1 task(s): 1 behave (the oracle passes, the nop agent fails), 0 do not\n"
    );
}

#[test]
fn every_way_of_misbehaving_is_named() {
    let mut scorer = report("c", "oracle", Status::Error, None);
    scorer.error_kind = Some(ErrorKind::Scorer);
    scorer.phases.push(crate::report::PhaseRecord {
        name: "review".into(),
        started_at: String::new(),
        duration_ms: 0,
        status: crate::report::PhaseStatus::Error,
        exit_code: Some(0),
        detail: Some("the verifier wrote no reward".into()),
    });
    let mut unavailable = report("d", "oracle", Status::NotRun, None);
    unavailable.termination = Termination::Unavailable;
    unavailable.error = Some("needs 1 GPU(s)".into());
    let mut unavailable_nop = unavailable.clone();
    unavailable_nop.agent = Some("nop".into());
    let result = check(&[
        report("a", "oracle", Status::Failed, Some(0.5)),
        report("a", "nop", Status::Failed, Some(0.0)),
        report("b", "oracle", Status::Passed, Some(1.0)),
        report("b", "nop", Status::Passed, Some(1.0)),
        scorer,
        report("c", "nop", Status::Failed, Some(0.0)),
        unavailable,
        unavailable_nop,
    ]);
    assert_eq!((result.behave, result.misbehave), (0, 4));
    let problems: Vec<&str> = result
        .tasks
        .iter()
        .flat_map(|t| t.problems.iter().map(String::as_str))
        .collect();
    assert_eq!(
        problems,
        vec![
            "the oracle fails with reward 0.5",
            "the nop agent passes (reward 1): the tests accept an untouched environment",
            "the oracle has a scorer error: the verifier wrote no reward",
            "the oracle did not run: needs 1 GPU(s)",
            "the nop agent did not run: needs 1 GPU(s)",
        ]
    );
    let text = render_check(&result);
    assert!(
        text.starts_with("task  oracle        nop           problem\n"),
        "{text}"
    );
    assert!(
        text.contains("a     failed (0.5)  failed (0)    the oracle fails with reward 0.5\n"),
        "{text}"
    );
    assert!(
        text.ends_with("4 task(s): 0 behave (the oracle passes, the nop agent fails), 4 do not\n"),
        "{text}"
    );
}
