//! Unit tests for `ring`.

use super::Ring;

#[track_caller]
fn check(ring: &Ring, expected: &[u8]) {
    let (a, b) = ring.as_slices();
    assert_eq!([a, b].concat(), expected);
    assert_eq!(ring.len(), expected.len());
    assert_eq!(ring.tail(usize::MAX), expected);
}

#[test]
fn keeps_the_newest_bytes() {
    let mut r = Ring::new(5);
    r.push(b"abc");
    check(&r, b"abc");
    r.push(b"def");
    check(&r, b"bcdef");
    r.push(b"0123456789");
    check(&r, b"56789");
    assert_eq!(r.end(), 16);
    assert_eq!(r.start(), 11);
    assert_eq!(r.tail(2), b"89");
}

#[test]
fn truncates_back_to_a_logical_position() {
    let mut r = Ring::new(8);
    r.push(b"hello ");
    let mark = r.end();
    r.push(b"world");
    r.truncate_to(mark);
    check(&r, b"lo ");
    r.push_byte(b'!');
    check(&r, b"lo !");
    r.truncate_to(0);
    check(&r, b"");
}

#[test]
fn slices_from_a_position() {
    let mut r = Ring::new(6);
    r.push(b"abcdefgh");
    let (a, b) = r.slices_from(4);
    assert_eq!([a, b].concat(), b"efgh");
    let (a, b) = r.slices_from(0);
    assert_eq!([a, b].concat(), b"cdefgh");
    let (a, b) = r.slices_from(99);
    assert_eq!([a, b].concat(), b"");
}
