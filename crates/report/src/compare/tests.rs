//! Tests of the comparison: per-task deltas, flips, and the sign test's p-values.

#![allow(
    clippy::float_cmp,
    clippy::many_single_char_names,
    reason = "exact figures; n, c and k are the estimators' names"
)]

use super::*;
use hyoka_eval::{Counts, EvalSummary, RunInfo, Status, Termination};

#[track_caller]
fn check_p(x: u64, y: u64, expected: f64) {
    let p = sign_test(x, y);
    assert!(
        (p - expected).abs() < 1e-12,
        "sign test {x}:{y} = {p}, want {expected}"
    );
}

#[test]
fn the_sign_test_matches_the_binomial_tails() {
    check_p(0, 0, 1.0);
    check_p(1, 1, 1.0);
    // Five to none: 2 · (1/32).
    check_p(5, 0, 0.0625);
    check_p(0, 5, 0.0625);
    // 8 to 2: 2 · (1 + 10 + 45) / 1024.
    check_p(8, 2, 112.0 / 1024.0);
    // Large n neither underflows to nonsense nor exceeds 1.
    let p = sign_test(600, 400);
    assert!(p > 0.0 && p < 1e-9, "{p}");
    check_p(500, 500, 1.0);
}

fn run(id: &str, trials: &[(&str, Status)]) -> RunSummary {
    let evals = trials
        .iter()
        .enumerate()
        .map(|(i, (eval, status))| EvalSummary {
            eval_id: (*eval).to_owned(),
            trial: format!("{eval}.{i}"),
            epoch: 1,
            agent: None,
            status: *status,
            error_kind: None,
            termination: Termination::Exited,
            exit_code: Some(0),
            duration_ms: 1000,
            counts: Counts::default(),
            usage: None,
            events: None,
            score: None,
            attempts: 1,
            reason: None,
            report: String::new(),
        })
        .collect();
    RunSummary::from_evals(
        RunInfo {
            run_id: id.to_owned(),
            ..RunInfo::default()
        },
        evals,
    )
}

#[test]
fn tasks_are_paired_and_flips_named() {
    use Status::{Error, Failed, Passed};
    let a = run(
        "a",
        &[
            ("x", Passed),
            ("x", Passed),
            ("y", Failed),
            ("z", Passed),
            ("gone", Passed),
        ],
    );
    let b = run(
        "b",
        &[
            ("x", Failed),
            ("x", Failed),
            ("y", Passed),
            ("z", Error),
            ("new", Passed),
        ],
    );
    let c = compare_runs(("A", &a), ("B", &b)).unwrap();
    let names: Vec<&str> = c.tasks.iter().map(|t| t.task.as_str()).collect();
    assert_eq!(names, ["x", "y", "z", "gone", "new"]);
    assert_eq!(c.tasks[0].delta, Some(-1.0));
    assert_eq!(c.tasks[0].flip, Some(Flip::Broken));
    assert_eq!(c.tasks[1].flip, Some(Flip::Fixed));
    // z errored in B: no rate, no pair.
    assert_eq!((c.tasks[2].b, c.tasks[2].delta), (None, None));
    assert_eq!(c.flipped, ["x", "y"]);
    assert_eq!((c.test.tasks, c.test.a_better, c.test.b_better), (2, 1, 1));
    assert_eq!(c.test.p_value, 1.0);
    assert_eq!((c.a.trials, c.a.trial_time_ms), (5, 5000));
    assert_eq!(c.b.pass_rate, Some(0.5));
}

#[test]
fn a_task_is_solved_above_half_and_flips_only_across_it() {
    use Flip::{Broken, Fixed};
    // 0/2 → 1/2 is no flip (half is a coin toss), 1/2 → 2/2 is fixed, and back.
    assert_eq!(Flip::between(Some(0.0), Some(0.5)), None);
    assert_eq!(Flip::between(Some(0.5), Some(1.0)), Some(Fixed));
    assert_eq!(Flip::between(Some(1.0), Some(0.5)), Some(Broken));
    assert_eq!(Flip::between(Some(0.5), Some(0.0)), None);
    assert_eq!(Flip::between(Some(0.0), Some(1.0)), Some(Fixed));
    assert_eq!(
        Flip::between(Some(2.0 / 3.0), Some(1.0 / 3.0)),
        Some(Broken)
    );
    // Not scored in one run: no flip.
    assert_eq!(Flip::between(None, Some(1.0)), None);
    assert_eq!(Flip::between(Some(1.0), None), None);
    assert_eq!(serde_json::to_value(Broken).unwrap(), "broken");
}
