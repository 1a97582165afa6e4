//! Line-level stream patterns of the default detector: completion messages, working status
//! lines, prompts and token counters, matched on ANSI-stripped text.
//!
//! These run on every line the terminal model finishes, so they are written as cheap byte
//! scans rather than regexes. The screen-level decisions (is that spinner still on screen?)
//! are the profiles' job; these only say what one line of output announces.

use memchr::memmem;

/// What one stripped line of output announces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LineFacts {
    /// A turn-completion message: `✻ Worked for 1m 2s`, `✻ Crunched for 3s`, `─ Worked for 5s ─`.
    pub(crate) completion: bool,
    /// A working indicator: a spinner status line or an "… to interrupt" hint.
    pub(crate) working: bool,
    /// An input prompt or the prompt box footer (`❯`, `›`, `⏵⏵`, `⏸`).
    pub(crate) prompt: bool,
    /// The value of the first token counter on the line (Codeman's `TOKEN_PATTERN`).
    pub(crate) tokens: Option<u64>,
}

/// Classifies one stripped line.
pub(crate) fn scan_line(line: &[u8]) -> LineFacts {
    let body = trim_start(line);
    if body.is_empty() {
        return LineFacts::default();
    }
    let mut facts = LineFacts::default();
    let (first, rest) = split_first_char(body);
    if let Some(c) = first {
        if is_prompt_glyph(c) {
            facts.prompt = !starts_with_menu_number(rest);
        } else if c == '│' {
            // A prompt drawn inside a box: `│ ❯ ` or `│ > `.
            if let (Some(inner), after) = split_first_char(trim_start(rest)) {
                facts.prompt =
                    (is_prompt_glyph(inner) || inner == '>') && !starts_with_menu_number(after);
            }
        }
        if is_status_glyph(c) || c == '─' {
            if is_completion_after_glyph(rest) {
                facts.completion = true;
            } else if is_status_glyph(c) && is_working_status(c, rest) {
                facts.working = true;
            }
        } else if c.is_ascii_uppercase() && is_completion_words(body) {
            // A completion line whose glyph was drawn elsewhere (cursor moves) or dropped.
            facts.completion = true;
        }
    }
    if !facts.working && contains_interrupt_hint(body) {
        facts.working = true;
    }
    if memmem::find(body, b"tokens").is_some() {
        facts.tokens = token_value(body);
    }
    facts
}

/// `true` for glyphs that start an input prompt or the prompt box footer.
fn is_prompt_glyph(c: char) -> bool {
    matches!(c, '❯' | '›' | '⏵' | '⏸')
}

/// `true` for glyphs that start a status line (spinner frames, Claude's `✻`, Codex's `•`).
pub(crate) fn is_status_glyph(c: char) -> bool {
    matches!(
        c,
        '✻' | '✽' | '✶' | '✳' | '✢' | '·' | '*' | '∙' | '•' | '◦' | '⏺' | '●'
    ) || ('\u{2801}'..='\u{28ff}').contains(&c)
        || ('\u{25d0}'..='\u{25d3}').contains(&c)
}

/// `true` for the braille and half-circle spinner frames that are never prose bullets.
pub(crate) fn is_spinner_frame(c: char) -> bool {
    ('\u{2801}'..='\u{28ff}').contains(&c) || ('\u{25d0}'..='\u{25d3}').contains(&c)
}

fn starts_with_menu_number(rest: &[u8]) -> bool {
    let rest = trim_start(rest);
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && rest.get(digits) == Some(&b'.')
}

/// After a status glyph: `<Gerund>…`, `<Text>… (12s · ↓ 1.2k tokens)`, `Waiting for 2 … to finish`.
fn is_working_status(glyph: char, rest: &[u8]) -> bool {
    let text = trim_start(rest);
    if text.is_empty() {
        return false;
    }
    if is_spinner_frame(glyph) && !text.is_empty() {
        return true;
    }
    if !text[0].is_ascii_uppercase() {
        return false;
    }
    let word_len = text
        .iter()
        .take_while(|b| b.is_ascii_alphabetic() || **b >= 0x80)
        .count();
    let word = &text[..word_len];
    let ellipsis =
        memmem::find(text, "…".as_bytes()).is_some() || memmem::find(text, b"...").is_some();
    if word.ends_with(b"ing") && ellipsis {
        return true;
    }
    if ellipsis && has_timer_parenthesis(text) {
        return true;
    }
    if word == b"Waiting" {
        // `Waiting for 2 background agents to finish`: work continues while N > 0.
        let after = trim_start(&text[word_len..]);
        if let Some(after) = after.strip_prefix(b"for") {
            let after = trim_start(after);
            let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
            return digits > 0
                && after[..digits].iter().any(|&b| b != b'0')
                && memmem::find(after, b"to finish").is_some();
        }
    }
    false
}

/// `(12s · …`, `(2m 18s · …`, `(1s · thinking …`: the live timer Claude prints while working.
fn has_timer_parenthesis(text: &[u8]) -> bool {
    let mut from = 0;
    while let Some(p) = memchr::memchr(b'(', &text[from..]) {
        let inner = trim_start(&text[from + p + 1..]);
        let digits = inner.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && matches!(inner.get(digits), Some(b's' | b'm' | b'h')) {
            return true;
        }
        from += p + 1;
    }
    false
}

/// `true` when `rest` (after a glyph) reads `<Verb>ed for <duration>`.
fn is_completion_after_glyph(rest: &[u8]) -> bool {
    let mut text = trim_start(rest);
    // Codex frames its completion as `─ Worked for 1m 22s ───`.
    while let Some(t) = text.strip_prefix("─".as_bytes()) {
        text = trim_start(t);
    }
    !text.is_empty() && text[0].is_ascii_uppercase() && is_completion_words(text)
}

/// `<Verb>ed for <n>[hms]…` at the start of `text`, with nothing but separators after it.
fn is_completion_words(text: &[u8]) -> bool {
    let word_len = text
        .iter()
        .take_while(|b| b.is_ascii_alphabetic() || **b >= 0x80)
        .count();
    let word = &text[..word_len];
    if word_len < 4 || !word.ends_with(b"ed") {
        return false;
    }
    let rest = &text[word_len..];
    let spaces = rest.iter().take_while(|b| **b == b' ').count();
    if spaces == 0 {
        return false;
    }
    let Some(rest) = rest[spaces..].strip_prefix(b"for") else {
        return false;
    };
    let spaces = rest.iter().take_while(|b| **b == b' ').count();
    if spaces == 0 {
        return false;
    }
    let rest = &rest[spaces..];
    let Some(after) = duration_len(rest) else {
        return false;
    };
    // What follows the duration must not continue a sentence ("for 5s before retrying").
    let tail = trim_start(&rest[after..]);
    tail.is_empty() || !tail[0].is_ascii_alphanumeric()
}

/// Length of a duration such as `5s`, `1m 2s`, `1h 2m 3s` at the start of `text`.
fn duration_len(text: &[u8]) -> Option<usize> {
    let mut end = 0;
    loop {
        let mut j = end;
        if end > 0 {
            while text.get(j) == Some(&b' ') {
                j += 1;
            }
        }
        let digits = text[j..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || !matches!(text.get(j + digits), Some(b'h' | b'm' | b's')) {
            break;
        }
        let after = j + digits + 1;
        // `30ms` is not a unit of a turn's duration.
        if text.get(after).is_some_and(u8::is_ascii_alphabetic) {
            break;
        }
        end = after;
    }
    (end > 0).then_some(end)
}

/// `… to interrupt` (Claude: `esc to interrupt`; Codex: `• esc to interrupt)`; others: `ctrl+c`).
fn contains_interrupt_hint(text: &[u8]) -> bool {
    let mut from = 0;
    while let Some(p) = memchr::memchr2(b'i', b'I', &text[from..]) {
        let at = from + p;
        if text.len() - at >= 9 && text[at..at + 9].eq_ignore_ascii_case(b"interrupt") {
            let before = &text[..at];
            let before = before.strip_suffix(b" ").unwrap_or(before);
            if before.len() >= 2 && before[before.len() - 2..].eq_ignore_ascii_case(b"to") {
                return true;
            }
        }
        from = at + 1;
    }
    false
}

/// The value of the first `TOKEN_PATTERN` match (`/(\d+(?:\.\d+)?)\s*([kKmM])?\s*tokens/`) in
/// `text`, computed as Codeman does (`parseFloat`, × 1e3 or 1e6, rounded).
pub(crate) fn token_value(text: &[u8]) -> Option<u64> {
    let mut from = 0;
    while let Some(p) = memmem::find(&text[from..], b"tokens") {
        let at = from + p;
        if let Some(v) = token_number_before(&text[..at]) {
            return Some(v);
        }
        from = at + 1;
    }
    None
}

/// Parses `\d+(?:\.\d+)?\s*[kKmM]?\s*` backwards from the end of `before`.
fn token_number_before(before: &[u8]) -> Option<u64> {
    let mut end = trim_end_spaces(before).len();
    let mut scale = 1.0;
    if end > 0 {
        match before[end - 1] {
            b'k' | b'K' => {
                scale = 1e3;
                end -= 1;
            }
            b'm' | b'M' => {
                scale = 1e6;
                end -= 1;
            }
            _ => {}
        }
    }
    if scale > 1.0 {
        end = trim_end_spaces(&before[..end]).len();
    }
    let digits_end = end;
    let mut start = digits_end;
    while start > 0 && before[start - 1].is_ascii_digit() {
        start -= 1;
    }
    if start == digits_end {
        return None;
    }
    if start >= 2 && before[start - 1] == b'.' && before[start - 2].is_ascii_digit() {
        start -= 1;
        while start > 0 && before[start - 1].is_ascii_digit() {
            start -= 1;
        }
    }
    let number: f64 = std::str::from_utf8(&before[start..digits_end])
        .ok()?
        .parse()
        .ok()?;
    Some(js_round(number * scale))
}

/// JavaScript's `Math.round` for non-negative finite values, saturated to `u64`.
pub(crate) fn js_round(x: f64) -> u64 {
    let r = (x + 0.5).floor();
    if r.is_nan() || r <= 0.0 {
        0
    } else if r >= 1.8e19 {
        u64::MAX
    } else {
        // In range and integral by the checks above.
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "checked range"
        )]
        let v = r as u64;
        v
    }
}

/// Strips leading ASCII spaces and tabs (and JavaScript whitespace NBSP) from `s`.
pub(crate) fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
    &s[n..]
}

/// Strips trailing whitespace, as `\s*` before a token suffix allows.
fn trim_end_spaces(s: &[u8]) -> &[u8] {
    let mut end = s.len();
    while end > 0 {
        match s[end - 1] {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => end -= 1,
            // U+00A0 NO-BREAK SPACE, which Ink uses for padding.
            0xa0 if end >= 2 && s[end - 2] == 0xc2 => end -= 2,
            _ => break,
        }
    }
    &s[..end]
}

/// Splits off the first UTF-8 character (`None` when the bytes do not start with one).
pub(crate) fn split_first_char(s: &[u8]) -> (Option<char>, &[u8]) {
    let Some(&b) = s.first() else {
        return (None, s);
    };
    let n = match b {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return (None, &s[1..]),
    };
    if s.len() < n {
        return (None, &s[s.len()..]);
    }
    match std::str::from_utf8(&s[..n]) {
        Ok(t) => (t.chars().next(), &s[n..]),
        Err(_) => (None, &s[1..]),
    }
}

/// Counts visible characters in `run`, stopping at `limit`: bytes that start a character and
/// are neither whitespace nor box-drawing (a redrawn prompt box is not new content).
#[inline]
pub(crate) fn count_visible(run: &[u8], limit: usize) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < run.len() && n < limit {
        let b = run[i];
        if b > b' ' && b < 0x80 {
            n += 1;
        } else if b >= 0xc0 {
            // U+2500..U+259F (box drawing and block elements) are E2 94..96 xx.
            let boxy = b == 0xe2 && matches!(run.get(i + 1), Some(0x94..=0x96));
            let nbsp = b == 0xc2 && run.get(i + 1) == Some(&0xa0);
            if !boxy && !nbsp {
                n += 1;
            }
        }
        i += 1;
    }
    n
}

#[cfg(test)]
mod tests;
