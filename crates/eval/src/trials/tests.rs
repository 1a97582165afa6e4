//! Tests of trial ids: the eval's id alone for one trial, then agent and epoch; collisions
//! and ids too long for the phases' suffixes are refused.

use hyoka_workspace::EvalId;

use super::*;

fn spec(id: &str, agent: Option<&str>, epochs: u32) -> Arc<EvalSpec> {
    let mut spec = EvalSpec::new(EvalId::new(id).unwrap(), vec!["x".into()]);
    spec.agent = agent.map(str::to_owned);
    spec.epochs = epochs;
    Arc::new(spec)
}

#[track_caller]
fn check(evals: &[Arc<EvalSpec>], expected: &[&str]) {
    let planned = plan_trials(evals, std::path::Path::new("/nonexistent"), None).unwrap();
    let ids: Vec<&str> = planned.iter().map(|p| p.trial.id.as_str()).collect();
    assert_eq!(ids, expected);
}

#[track_caller]
fn check_refused(evals: &[Arc<EvalSpec>], expected: &str) {
    let err = plan_trials(evals, std::path::Path::new("/nonexistent"), None).unwrap_err();
    assert!(err.is_bad_input(), "{err}");
    assert!(err.to_string().contains(expected), "{err}");
}

#[test]
fn ids_name_the_agent_and_the_epoch_only_when_they_vary() {
    check(&[spec("fix", None, 1)], &["fix"]);
    check(&[spec("fix", None, 2)], &["fix.1", "fix.2"]);
    check(&[spec("fix", Some("claude"), 1)], &["fix.claude"]);
    check(
        &[spec("fix", Some("a"), 2), spec("fix", Some("b"), 2)],
        &["fix.a.1", "fix.a.2", "fix.b.1", "fix.b.2"],
    );
    let planned = plan_trials(&[spec("e", None, 3)], std::path::Path::new("/x"), None).unwrap();
    let identities: std::collections::BTreeSet<&str> =
        planned.iter().map(|p| p.identity.as_str()).collect();
    assert_eq!(identities.len(), 3, "each epoch is its own trial");
}

#[test]
fn colliding_or_overlong_ids_are_refused() {
    check_refused(
        &[spec("a", None, 2), spec("a.1", None, 1)],
        "evals a and a.1 would both record it",
    );
    let long = "x".repeat(55);
    check_refused(
        &[spec(&long, None, 100)],
        "would be longer than 64 characters",
    );
}
