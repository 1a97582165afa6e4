//! Unit tests for `terminal`: tokens, sequences split across chunks, hostile input.

use super::{OSC_KEEP, STRING_LIMIT, Sink, Tokenizer, find_c0};

/// Records every token, merging adjacent text runs so chunking does not show.
#[derive(Default, Debug, PartialEq)]
struct Record(Vec<String>, Vec<u8>);

impl Record {
    fn flush(&mut self) {
        if !self.1.is_empty() {
            let text = String::from_utf8_lossy(&self.1).into_owned();
            self.0.push(format!("T:{text}"));
            self.1.clear();
        }
    }
}

impl Sink for Record {
    const WANTS_ALL_CSI: bool = true;

    fn text(&mut self, run: &[u8]) {
        self.1.extend_from_slice(run);
    }
    fn control(&mut self, byte: u8) {
        self.flush();
        self.0.push(format!("C:{byte:02x}"));
    }
    fn csi(&mut self, params: &[u16], private: u8, final_byte: u8) {
        self.flush();
        let p = if private == 0 {
            String::new()
        } else {
            char::from(private).to_string()
        };
        self.0
            .push(format!("CSI:{p}{params:?}{}", char::from(final_byte)));
    }
    fn esc(&mut self, final_byte: u8) {
        self.flush();
        self.0.push(format!("ESC:{}", char::from(final_byte)));
    }
    fn osc(&mut self, payload: &[u8]) {
        self.flush();
        self.0
            .push(format!("OSC:{}", String::from_utf8_lossy(payload)));
    }
}

fn tokens(chunks: &[&[u8]]) -> Vec<String> {
    let mut t = Tokenizer::default();
    let mut r = Record::default();
    for c in chunks {
        t.feed(c, &mut r);
    }
    r.flush();
    r.0
}

#[track_caller]
fn check(input: &[u8], expected: &[&str]) {
    let whole = tokens(&[input]);
    assert_eq!(whole, expected, "whole input");
    // Every two-way split gives the same tokens.
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(tokens(&[a, b]), expected, "split at {cut}");
    }
    // So does feeding one byte at a time.
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(tokens(&bytes), expected, "byte by byte");
}

#[test]
fn text_and_controls() {
    check(b"hello\r\nworld", &["T:hello", "C:0d", "C:0a", "T:world"]);
    check("❯ done\t".as_bytes(), &["T:❯ done", "C:09"]);
}

#[test]
fn csi_sequences_with_parameters() {
    check(
        b"a\x1b[38;5;174mb\x1b[39m",
        &["T:a", "CSI:[38, 5, 174]m", "T:b", "CSI:[39]m"],
    );
    check(
        b"\x1b[2K\x1b[1A\x1b[G",
        &["CSI:[2]K", "CSI:[1]A", "CSI:[]G"],
    );
    check(b"\x1b[?2026h\x1b[?25l", &["CSI:?[2026]h", "CSI:?[25]l"]);
    check(b"\x1b[;5H", &["CSI:[0, 5]H"]);
}

#[test]
fn osc_titles_end_with_bel_or_st() {
    check(
        "\x1b]0;⠋ Claude Code\x07x".as_bytes(),
        &["OSC:0;⠋ Claude Code", "T:x"],
    );
    check(b"\x1b]2;title\x1b\\y", &["OSC:2;title", "T:y"]);
}

#[test]
fn escape_sequences_and_strings() {
    check(b"\x1b7a\x1b8", &["ESC:7", "T:a", "ESC:8"]);
    check(b"\x1bP1$r\x1b\\z", &["T:z"]);
    check(b"\x1b(Bq", &["T:q"]);
}

#[test]
fn cancel_and_stray_bytes_return_to_text() {
    check(b"\x1b[12\x18abc", &["T:abc"]);
    check(b"\x1b[1\x7fz", &["T:\x7fz"]);
    check(b"\x1b\x1b[1m", &["CSI:[1]m"]);
}

#[test]
fn controls_inside_a_csi_are_executed() {
    check(b"\x1b[1\n2m", &["C:0a", "CSI:[12]m"]);
}

#[test]
fn an_unterminated_osc_is_abandoned_after_the_limit() {
    let mut input = b"\x1b]0;".to_vec();
    input.extend(std::iter::repeat_n(b'x', STRING_LIMIT + 10));
    input.extend_from_slice(b"\r\nafter");
    let got = tokens(&[&input]);
    assert!(
        got.ends_with(&["C:0d".to_owned(), "C:0a".to_owned(), "T:after".to_owned()]),
        "{:?}",
        &got[got.len().saturating_sub(3)..]
    );
}

#[test]
fn osc_payloads_are_bounded() {
    let mut input = b"\x1b]0;".to_vec();
    input.extend(std::iter::repeat_n(b'y', OSC_KEEP * 3));
    input.push(0x07);
    let got = tokens(&[&input]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].len(), "OSC:".len() + OSC_KEEP);
}

#[test]
fn an_unterminated_csi_at_the_end_is_carried_over() {
    let mut t = Tokenizer::default();
    let mut r = Record::default();
    t.feed(b"ab\x1b[3", &mut r);
    assert!(!t.is_ground());
    r.flush();
    t.feed(b"1mc", &mut r);
    assert!(t.is_ground());
    r.flush();
    assert_eq!(r.0, ["T:ab", "CSI:[31]m", "T:c"]);
}

#[test]
fn nul_and_invalid_utf8_are_passed_through() {
    check(b"a\x00b\xff\xfe", &["T:a", "C:00", "T:b\u{fffd}\u{fffd}"]);
}

#[test]
fn find_c0_agrees_with_a_plain_scan() {
    let mut data: Vec<u8> = (0u32..4000)
        .map(|i| u8::try_from((i * 7919 + 13) % 251).unwrap_or(0).max(0x20))
        .collect();
    for pos in [0, 1, 7, 8, 15, 16, 17, 31, 100, 3999] {
        let mut d = data.clone();
        d[pos] = 0x1b;
        assert_eq!(find_c0(&d), Some(pos));
        assert_eq!(
            find_c0(&d[pos + 1..]),
            d[pos + 1..].iter().position(|&b| b < 0x20)
        );
    }
    data.truncate(33);
    assert_eq!(find_c0(&data), None);
    assert_eq!(find_c0(&[0x80, 0x9f, 0xff, 0x1f]), Some(3));
}
