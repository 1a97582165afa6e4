//! Decoding tmux control-mode output.

use std::collections::VecDeque;

use super::{Exit, Report, decode_output, take_exit_report, take_started, valid_tmux_name};

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
    assert!(valid_tmux_name("hyoka-1_a"));
    assert!(!valid_tmux_name(""));
    assert!(!valid_tmux_name("a:b"));
    assert!(!valid_tmux_name("a.b"));
    assert!(!valid_tmux_name(&"x".repeat(65)));
}

/// Decodes `line` after `before` is already pending, then takes the exit report out.
fn report(before: &[u8], line: &[u8]) -> (Option<Exit>, Vec<u8>) {
    let mut out: VecDeque<u8> = before.iter().copied().collect();
    let from = out.len();
    decode_output(line, &mut out);
    let exit = match take_exit_report(&mut out, from) {
        Some(Report::Exited(exit)) => Some(exit),
        _ => None,
    };
    (exit, out.into_iter().collect())
}

#[test]
fn the_wrappers_start_words_are_taken_out_of_the_output() {
    let mut out = VecDeque::new();
    decode_output(b"\\033]hyoka-started\\007hello", &mut out);
    assert!(take_started(&mut out, 0));
    assert_eq!(out.iter().copied().collect::<Vec<u8>>(), b"hello");
    let mut out = VecDeque::new();
    decode_output(b"x\\033]hyoka-exit;cannot-start-2\\007", &mut out);
    assert_eq!(take_exit_report(&mut out, 0), Some(Report::CannotStart(2)));
    assert_eq!(out.iter().copied().collect::<Vec<u8>>(), b"x");
}

#[test]
fn the_wrappers_exit_report_is_taken_out_of_the_output() {
    let code = |code| Exit {
        code: Some(code),
        signal: None,
    };
    assert_eq!(
        report(b"screen", b"bye\\015\\012\\033]hyoka-exit;3\\007"),
        (Some(code(3)), b"screenbye\r\n".to_vec())
    );
    assert_eq!(
        report(b"", b"\\033]hyoka-exit;0\\007\\033[?25h"),
        (Some(code(0)), b"\x1b[?25h".to_vec())
    );
    // 128 + N is signal N, as the shell reports it.
    assert_eq!(
        report(b"", b"\\033]hyoka-exit;137\\007").0,
        Some(Exit {
            code: None,
            signal: Some(9),
        })
    );
}

#[test]
fn a_partial_or_garbled_report_is_left_as_output() {
    // Split across two lines (no BEL yet): nothing is taken, nothing is lost.
    let (exit, out) = report(b"", b"\\033]hyoka-exit;1");
    assert_eq!(exit, None);
    assert_eq!(out, b"\x1b]hyoka-exit;1");
    // A mark before `from` (output already handled) is not looked at.
    let (exit, out) = report(b"\x1b]hyoka-exit;5\x07", b"x");
    assert_eq!(exit, None);
    assert_eq!(out, b"\x1b]hyoka-exit;5\x07x");
    // A status that is not a number: the report is removed, the exit stays unknown.
    let (exit, out) = report(b"", b"a\\033]hyoka-exit;oops\\007b");
    assert_eq!(exit, None);
    assert_eq!(out, b"ab");
}
