//! Unit tests of reading a review's verdict: what passes, what fails, and what is the
//! scorer's error.

use super::{VERDICT_BYTES, parse_verdict};
use crate::phases::output::Capture;

/// `Some(Ok(pass))`, `Some(Err(start of the reason))` or `None`.
#[track_caller]
fn check(stdout: &str, expected: Option<Result<bool, &str>>) {
    match (parse_verdict(stdout.as_bytes()), expected) {
        (None, None) => {}
        (Some(Ok(v)), Some(Ok(pass))) => assert_eq!(v.pass, pass, "{stdout:?}"),
        (Some(Err(why)), Some(Err(start))) => assert!(why.contains(start), "{why}"),
        (got, want) => panic!("{stdout:?}: got {got:?}, wanted {want:?}"),
    }
}

#[test]
fn a_clean_verdict_decides() {
    check(r#"{"pass": true, "score": 0.5}"#, Some(Ok(true)));
    check("checking...\n{\"pass\": false}\n", Some(Ok(false)));
    check("{\n  \"pass\": true\n}\n", Some(Ok(true)));
    check("no verdict here\n", None);
}

/// Regression test for issue 25: a verdict with `NaN`, an infinite number or text after
/// the JSON is the scorer's error, never a pass.
#[test]
fn a_verdict_that_is_not_clean_json_is_an_error() {
    check(
        r#"{"pass": true, "score": NaN}"#,
        Some(Err("not valid JSON")),
    );
    check(r#"{"pass": true, "score": 1e309}"#, Some(Err("")));
    check(r#"{"pass": true} and more"#, Some(Err("not valid JSON")));
    check(
        "{\"pass\": true}\ntrailing text\n",
        Some(Err("output follows")),
    );
    check(r#"{"pass": "yes"}"#, Some(Err("")));
}

/// Regression test for issue 25: a review printing without end keeps a bounded capture
/// whose tail holds the verdict.
#[test]
fn the_capture_is_bounded_and_keeps_the_tail() {
    let capture = Capture::new(VERDICT_BYTES);
    let junk = vec![b'x'; 64 * 1024];
    for _ in 0..64 {
        capture.push(&junk);
        capture.push(b"\n");
    }
    capture.push(b"{\"pass\": false}\n");
    let kept = capture.take();
    assert!(kept.len() <= VERDICT_BYTES, "{}", kept.len());
    assert!(matches!(parse_verdict(&kept), Some(Ok(v)) if !v.pass));
}
