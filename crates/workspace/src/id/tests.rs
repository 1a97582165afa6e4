//! Tests of id validation.

use super::*;

#[track_caller]
fn check(id: &str, ok: bool) {
    assert_eq!(RunId::new(id).is_ok(), ok, "run id {id:?}");
    assert_eq!(EvalId::new(id).is_ok(), ok, "eval id {id:?}");
}

#[test]
fn accepts_the_documented_alphabet() {
    check("a", true);
    check("20261129-185418-x1y2z3", true);
    check("Eval_1.v2-final", true);
    check(&"x".repeat(64), true);
}

#[test]
fn rejects_unsafe_ids() {
    for id in [
        "", ".", "..", ".hidden", "-dash", "_under", "a/b", "a\\b", "a b", "a\0b", "é", "a\n",
    ] {
        check(id, false);
    }
    check(&"x".repeat(65), false);
}

#[test]
fn error_names_the_value() {
    let err = RunId::new("../x").unwrap_err().to_string();
    assert!(err.contains("\"../x\""), "{err}");
    assert!(err.starts_with("invalid run id"), "{err}");
}
