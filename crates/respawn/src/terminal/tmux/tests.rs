//! Decoding tmux control-mode output.

use std::collections::VecDeque;

use super::{decode_output, valid_name};

#[track_caller]
fn check(input: &[u8], expected: &[u8]) {
    let mut out = VecDeque::new();
    decode_output(input, &mut out);
    assert_eq!(out.iter().copied().collect::<Vec<u8>>(), expected);
}

#[test]
fn octal_escapes_are_decoded() {
    check(b"hi\\015\\012", b"hi\r\n");
    check(b"\\033[1mX", b"\x1b[1mX");
    check(b"back\\134slash", b"back\\slash");
    check("❯ ok".as_bytes(), "❯ ok".as_bytes());
}

#[test]
fn a_truncated_escape_is_kept_literally() {
    check(b"x\\01", b"x\\01");
    check(b"\\9zz", b"\\9zz");
}

#[test]
fn session_names_are_restricted() {
    assert!(valid_name("hyoka-1_a"));
    assert!(!valid_name(""));
    assert!(!valid_name("a:b"));
    assert!(!valid_name("a.b"));
    assert!(!valid_name(&"x".repeat(65)));
}
