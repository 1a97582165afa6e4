//! Bracketed-paste mode as the agent switches it, whatever the read boundaries.

use super::PasteMode;

#[track_caller]
fn check(reads: &[&[u8]], expected: bool) {
    let mut mode = PasteMode::default();
    for read in reads {
        mode.scan(read);
    }
    assert_eq!(mode.on(), expected, "{reads:?}");
}

#[test]
fn the_last_switch_wins() {
    check(&[b"hello"], false);
    check(&[b"\x1b[?2004h\x1b[?25l"], true);
    check(&[b"\x1b[?2004h", b"text", b"\x1b[?2004l"], false);
    check(&[b"\x1b[?2004l..\x1b[?2004h"], true);
    check(&[b"\x1b[?2004h..\x1b[?2004l"], false);
}

#[test]
fn a_switch_split_between_reads_counts() {
    let on = b"\x1b[?2004h";
    for at in 1..on.len() {
        check(&[b"draw", &on[..at], &on[at..], b"more"], true);
    }
    // Split with tiny reads around it too.
    check(&[b"\x1b", b"[?", b"2004", b"h"], true);
}
