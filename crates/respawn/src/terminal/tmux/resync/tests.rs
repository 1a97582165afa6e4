//! The layout and resync-reply parsers.

use super::{Size, pane_size_in_layout, parse_cursor, redraw};

#[track_caller]
fn check(layout: &str, pane: &str, expected: Option<(u16, u16)>) {
    let expected = expected.map(|(cols, rows)| Size { rows, cols });
    assert_eq!(
        pane_size_in_layout(layout, pane),
        expected,
        "{layout} {pane}"
    );
}

#[test]
fn a_single_panes_size_is_the_windows() {
    check("b25d,80x24,0,0,0", "%0", Some((80, 24)));
    check("aafd,120x40,0,0,0", "%0", Some((120, 40)));
    check("aafd,120x40,0,0,7", "%7", Some((120, 40)));
}

#[test]
fn a_split_windows_pane_is_found_by_its_id() {
    let layout = "bb62,159x48,0,0{79x48,0,0,79,79x48,80,0[79x24,80,0,80,79x23,80,25,81]}";
    check(layout, "%79", Some((79, 48)));
    check(layout, "%80", Some((79, 24)));
    check(layout, "%81", Some((79, 23)));
    check(layout, "%82", None);
}

#[test]
fn garbage_is_no_size() {
    check("", "%0", None);
    check("b25d", "%0", None);
    check("b25d,80y24,0,0,0", "%0", None);
    check("b25d,80x24,0,0,0", "0", None);
    check("b25d,99999999x24,0,0,0", "%0", None);
    check("b25d,80x24,0,0{", "%0", None);
}

#[test]
fn the_cursor_line_is_read() {
    assert_eq!(
        parse_cursor(b"hyoka-cursor 3 21 80 24"),
        Some((3, 21, Size { rows: 24, cols: 80 }))
    );
    assert_eq!(parse_cursor(b"hyoka-cursor 3 21 80"), None);
    assert_eq!(parse_cursor(b"cursor 3 21 80 24"), None);
}

#[test]
fn a_redraw_draws_each_row_in_place_and_puts_the_cursor_back() {
    let rows = vec![b"\x1b[1mone".to_vec(), Vec::new(), b"three".to_vec()];
    let out = redraw(&rows, 4, 2, Size { rows: 3, cols: 10 });
    let screen = hyoka_idle_detect::Screen::render(&out, 3, 10);
    assert_eq!(screen.lines(), ["one", "", "three"]);
    // What is drawn next lands at the cursor.
    let mut then = out.clone();
    then.extend_from_slice(b"X");
    let screen = hyoka_idle_detect::Screen::render(&then, 3, 10);
    assert_eq!(screen.lines(), ["one", "", "threX"]);
    // Rows past the screen's height are not drawn (nothing scrolls).
    let out = redraw(&rows, 0, 0, Size { rows: 2, cols: 10 });
    assert!(!String::from_utf8_lossy(&out).contains("three"));
}
