//! Tests of the instance token.

use super::*;

#[track_caller]
fn check(text: &str, valid: bool) {
    assert_eq!(Instance::new(text).is_ok(), valid, "{text:?}");
}

#[test]
fn tokens_are_16_lowercase_hex_digits() {
    check("0123456789abcdef", true);
    check("0123456789ABCDEF", false);
    check("0123456789abcde", false);
    check("0123456789abcdef0", false);
    check("0123456789abcdeg", false);
    check("", false);
}

#[test]
fn generated_tokens_are_valid_and_differ() {
    let a = Instance::generate().unwrap();
    let b = Instance::generate().unwrap();
    check(a.as_str(), true);
    assert_ne!(a, b);
    assert_eq!(a.env_entry(), format!("HYOKA_RUN_INSTANCE={a}"));
}
