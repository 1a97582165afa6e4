//! Tests of pass@k, pass^k and the task figures.

#![allow(
    clippy::float_cmp,
    clippy::many_single_char_names,
    reason = "exact figures; n, c and k are the estimators' names"
)]

use super::*;
use crate::report::{Counts, Termination};

#[track_caller]
fn check(n: u64, c: u64, k: u64, at: Option<f64>, hat: Option<f64>) {
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() < 1e-12,
        (a, b) => a == b,
    };
    let (at_least_one, all) = (pass_at_k(n, c, k), pass_hat_k(n, c, k));
    assert!(
        close(at_least_one, at),
        "pass@{k} of {c}/{n}: {at_least_one:?}, want {at:?}"
    );
    assert!(
        close(all, hat),
        "pass^{k} of {c}/{n}: {all:?}, want {hat:?}"
    );
}

#[test]
fn the_estimators_match_their_closed_forms() {
    // One pass in three trials: the Done-when figures of issue 15.
    check(3, 1, 1, Some(1.0 / 3.0), Some(1.0 / 3.0));
    check(3, 1, 3, Some(1.0), Some(0.0));
    check(3, 1, 2, Some(2.0 / 3.0), Some(0.0));
    // 1 − C(8,3)/C(10,3) = 1 − 56/120; C(2,2)/C(10,2)... pass^2 of 2/10 = 1/45.
    check(10, 2, 3, Some(1.0 - 56.0 / 120.0), Some(0.0));
    check(10, 2, 2, Some(1.0 - 28.0 / 45.0), Some(1.0 / 45.0));
    check(4, 4, 4, Some(1.0), Some(1.0));
    check(4, 0, 1, Some(0.0), Some(0.0));
    check(3, 1, 0, None, None);
    check(3, 1, 4, None, None);
    check(3, 4, 1, None, None);
    // Large n stays finite and exact enough.
    let p = pass_at_k(100_000, 1, 1).unwrap();
    assert!((p - 1e-5).abs() < 1e-12, "{p}");
}

#[test]
fn reported_ks_are_one_n_and_round_numbers_between() {
    assert_eq!(ks(1), [1]);
    assert_eq!(ks(3), [1, 2, 3]);
    assert_eq!(ks(4), [1, 2, 3, 4]);
    assert_eq!(ks(12), [1, 2, 3, 5, 10, 12]);
    assert_eq!(ks(100), [1, 2, 3, 5, 10, 20, 50, 100]);
}

fn trial(eval: &str, status: Status, score: Option<f64>) -> EvalSummary {
    EvalSummary {
        eval_id: eval.to_owned(),
        trial: eval.to_owned(),
        epoch: 1,
        agent: None,
        status,
        error_kind: None,
        termination: Termination::Exited,
        exit_code: Some(0),
        duration_ms: 0,
        counts: Counts::default(),
        usage: None,
        events: None,
        score,
        attempts: 1,
        reason: None,
        report: String::new(),
    }
}

#[test]
fn tasks_leave_errors_and_trials_not_run_out_of_their_figures() {
    let trials = [
        trial("a", Status::Passed, Some(1.0)),
        trial("a", Status::Failed, Some(0.5)),
        trial("a", Status::Error, Some(0.0)),
        trial("b", Status::NotRun, None),
        trial("b", Status::Passed, None),
    ];
    let tasks = TaskSummary::of_trials(&trials);
    assert_eq!(tasks.len(), 2);
    let a = &tasks[0];
    assert_eq!((a.trials, a.passed, a.failed, a.errors), (3, 1, 1, 1));
    assert_eq!(a.pass_at_k.get("1"), Some(0.5));
    assert_eq!(a.pass_at_k.get("2"), Some(1.0));
    // Two scored trials: no figure for k = 3.
    assert!(!a.pass_at_k.contains_key("3"));
    assert_eq!(a.mean_score, Some(0.75));
    assert_eq!(a.pass_rate(), Some(0.5));
    let b = &tasks[1];
    assert_eq!((b.trials, b.passed, b.not_run), (2, 1, 1));
    assert_eq!(b.pass_at_k.iter().map(|(k, _)| k).collect::<Vec<_>>(), [1]);
    let metrics = Metrics::of_tasks(&tasks);
    assert_eq!(metrics.tasks, 2);
    assert_eq!(metrics.pass_at_k.get("1"), Some(0.75));
    assert_eq!(metrics.pass_at_k.get("2"), Some(1.0));
    assert_eq!(metrics.mean_score, Some(0.75));
}

#[test]
fn figures_by_k_read_and_write_the_objects_of_run_json() {
    let by_k: ByK = serde_json::from_str(r#"{"10": 0.9, "2": 0.5, "1": 0.25}"#).unwrap();
    assert_eq!(
        by_k.iter().collect::<Vec<_>>(),
        [(1, 0.25), (2, 0.5), (10, 0.9)]
    );
    assert_eq!(by_k.get("10"), Some(0.9));
    assert_eq!(by_k.get("x"), None);
    assert_eq!(
        serde_json::to_string(&by_k).unwrap(),
        r#"{"1":0.25,"2":0.5,"10":0.9}"#
    );
    for bad in [r#"{"x": 1.0}"#, r#"{"0": 1.0}"#, r#"{"-1": 1.0}"#] {
        let err = serde_json::from_str::<ByK>(bad).unwrap_err().to_string();
        assert!(err.contains("whole number above 0"), "{bad}: {err}");
    }
    let last_stands: ByK = [(2, 0.1), (1, 0.5), (2, 0.7)].into_iter().collect();
    assert_eq!(last_stands.iter().collect::<Vec<_>>(), [(1, 0.5), (2, 0.7)]);
}
