//! Telling a person's keystrokes from the answers of their terminal.
//!
//! A mirrored session copies the agent's output to the person's terminal, queries included:
//! Claude Code asks for the terminal's version (XTVERSION, `ESC [ > 0 q`) and attributes (DA1,
//! `ESC [ c`) as it starts, others ask for colours (OSC 11) or the keyboard protocol. The
//! person's terminal answers on its input, which hyoka reads as keys: `ESC P >|tmux 3.3a ESC \`
//! and `ESC [ ? 1 ; 2 c` when hyoka itself runs in a tmux pane. Those bytes are not a person
//! typing: counted as typing they held the human-presence lock for 30 s and `hyoka send`
//! refused with "person present" (issue 24); sent on to a tmux session (whose server has
//! already answered the agent itself) they arrive as an Escape and stray text in the agent's
//! prompt. [`split`] takes them apart.

/// What a chunk read from the person's terminal holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// The keystrokes: everything that is not a complete terminal reply, in order.
    pub keys: Vec<u8>,
    /// The terminal's replies to queries, in order.
    pub replies: Vec<u8>,
}

const ESC: u8 = 0x1b;

/// Splits `bytes` into keystrokes and complete terminal replies: device attributes
/// (`CSI ? … c`, `CSI > … c`, `CSI = … c`), mode reports (`CSI ? … $ y`), the keyboard
/// protocol's flags (`CSI ? … u`), cursor position reports (`CSI row ; col R`), window
/// reports (`CSI 4|8 ; … t`), focus events (`CSI I`, `CSI O`), device control strings
/// (`ESC P … ESC \`: XTVERSION, DECRQSS, XTGETTCAP) and operating system commands (`ESC ] …`
/// ended by BEL or `ESC \`: colour reports). Anything else, an incomplete sequence included,
/// stays a keystroke: when in doubt, a person typed. (xterm's Shift+F3, `CSI 1 ; 2 R`, reads
/// like a cursor position report and is taken for one.)
#[must_use]
pub fn split(bytes: &[u8]) -> Split {
    let mut out = Split::default();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == ESC
            && let Some(len) = reply_len(&bytes[i..])
        {
            out.replies.extend_from_slice(&bytes[i..i + len]);
            i += len;
            continue;
        }
        out.keys.push(bytes[i]);
        i += 1;
    }
    out
}

/// The length of the complete reply at the start of `s` (which starts with ESC), if it is one.
fn reply_len(s: &[u8]) -> Option<usize> {
    match s.get(1)? {
        b'[' => csi_reply_len(s),
        b'P' | b']' => string_len(s),
        _ => None,
    }
}

/// `ESC P … ESC \` or `ESC ] … (BEL | ESC \)`: the length through its terminator.
fn string_len(s: &[u8]) -> Option<usize> {
    let osc = s[1] == b']';
    let mut i = 2;
    while i < s.len() {
        match s[i] {
            0x07 if osc => return Some(i + 1),
            ESC => return (s.get(i + 1) == Some(&b'\\')).then_some(i + 2),
            // A control byte inside: not a string a terminal sent.
            b if b < 0x20 => return None,
            _ => i += 1,
        }
    }
    None
}

/// A CSI sequence that only a terminal sends.
fn csi_reply_len(s: &[u8]) -> Option<usize> {
    let mut i = 2;
    let private = s
        .get(i)
        .copied()
        .filter(|b| matches!(b, b'?' | b'>' | b'='));
    if private.is_some() {
        i += 1;
    }
    let params_start = i;
    while s.get(i).is_some_and(|b| b.is_ascii_digit() || *b == b';') {
        i += 1;
    }
    let params = &s[params_start..i];
    let intermediate = s.get(i).copied().filter(|b| *b == b'$');
    if intermediate.is_some() {
        i += 1;
    }
    let last = *s.get(i)?;
    let fields = params.split(|b| *b == b';').count();
    let reply = match (private, intermediate, last) {
        // Device attributes (primary, secondary, tertiary); the kitty keyboard protocol's
        // flags.
        (Some(_), None, b'c') | (Some(b'?'), None, b'u') => true,
        // DECRPM, the answer to DECRQM.
        (Some(b'?') | None, Some(_), b'y') => !params.is_empty(),
        // A cursor position report: two numbers.
        (None, None, b'R') => fields == 2 && !params.starts_with(b";"),
        // XTWINOPS size reports.
        (None, None, b't') => params.starts_with(b"4;") || params.starts_with(b"8;"),
        // Focus in and out.
        (None, None, b'I' | b'O') => params.is_empty(),
        _ => false,
    };
    reply.then_some(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_of_an_outer_tmux_are_not_keys() {
        // Read from hyoka's stdin in a tmux 3.3a pane while Claude Code 2.1.328 started
        // (strace of `hyoka respawn --backend tmux`, issue 24).
        let s = split(b"\x1bP>|tmux 3.3a\x1b\\\x1b[?1;2c");
        assert!(s.keys.is_empty(), "{s:?}");
        assert_eq!(s.replies, b"\x1bP>|tmux 3.3a\x1b\\\x1b[?1;2c");
        assert_eq!(split(b"\x1b[?1;2c").keys, b"");
    }

    #[test]
    fn each_kind_of_reply_is_taken_apart_from_the_keys_around_it() {
        for reply in [
            &b"\x1b[>0;95;0c"[..],
            b"\x1b[?2026;2$y",
            b"\x1b[?0u",
            b"\x1b[12;40R",
            b"\x1b[8;40;120t",
            b"\x1b[I",
            b"\x1b[O",
            b"\x1b]11;rgb:0000/0000/0000\x07",
            b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\",
            b"\x1bP1$r0m\x1b\\",
        ] {
            let mut bytes = b"ab".to_vec();
            bytes.extend_from_slice(reply);
            bytes.extend_from_slice(b"c\r");
            let s = split(&bytes);
            assert_eq!(s.keys, b"abc\r", "{:?}", String::from_utf8_lossy(reply));
            assert_eq!(s.replies, reply);
        }
    }

    #[test]
    fn keys_a_person_types_stay_keys() {
        for keys in [
            &b"hello\r"[..],
            b"\x1b",
            b"\x1b[A",
            b"\x1b[1;5C",
            b"\x1b[3~",
            b"\x1bOP",
            b"\x1b[200~pasted\x1b[201~",
            b"\x1b[Z",
            b"\x1bb",
            // Incomplete: when in doubt, a person typed.
            b"\x1b[?1;2",
            b"\x1bP>|tmux",
            b"\x1b]11;rgb:0000",
        ] {
            let s = split(keys);
            assert_eq!(s.keys, keys, "{:?}", String::from_utf8_lossy(keys));
            assert!(s.replies.is_empty());
        }
    }
}
