//! Line-level stream patterns of the default detector: completion messages, working status
//! lines, prompts and token counters, matched on ANSI-stripped text.
//!
//! These run on every line the terminal model finishes, so they are written as cheap byte
//! scans rather than regexes. The screen-level decisions (is that spinner still on screen?)
//! are the profiles' job; these only say what one line of output announces.

use std::sync::LazyLock;

use memchr::memmem;

/// Prebuilt searchers: building a `memmem` finder per call costs more than a short search.
pub(crate) static TOKENS: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"tokens"));
/// `interrupt` without its first letter, so `Interrupt` and `interrupt` share one search.
pub(crate) static INTERRUPT: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"nterrupt"));
pub(crate) static INTERRUPT_UPPER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"NTERRUPT"));

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

/// Which of the rarer substrings a line holds, found in bulk for a batch of lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    /// Where the line's first `tokens` starts, if it has one.
    pub(crate) tokens: Option<usize>,
    /// The line contains `nterrupt` or `NTERRUPT`.
    pub(crate) interrupt: bool,
}

/// Classifies one stripped line.
#[cfg(test)]
pub(crate) fn scan_line(line: &[u8]) -> LineFacts {
    let hints = Hints {
        tokens: TOKENS.find(line),
        interrupt: INTERRUPT.find(line).is_some() || INTERRUPT_UPPER.find(line).is_some(),
    };
    scan_line_hinted(line, hints)
}

/// Classifies one stripped line whose substring `hints` are already known.
#[expect(
    clippy::inline_always,
    reason = "once per line, and most lines stop at the prefilter; measured on the reference stream"
)]
#[inline(always)]
pub(crate) fn scan_line_hinted(line: &[u8], hints: Hints) -> LineFacts {
    let body = trim_start(line);
    // The blanks trimmed cannot hold `tokens`: the first one is as far into `body`.
    let hints = Hints {
        tokens: hints.tokens.map(|at| at - (line.len() - body.len())),
        ..hints
    };
    // Most lines start with a plain lower-case word, a digit, punctuation or a box-drawing
    // character: with no hint they cannot announce anything, and skipping them (inline, without
    // a call) is most of the batch's saving.
    if hints.tokens.is_some() || hints.interrupt || may_lead_a_signal(body) {
        scan_body(body, hints)
    } else {
        LineFacts::default()
    }
}

/// `false` when `line` can announce something only through a hint word (`tokens`,
/// `interrupt`): then it needs classifying only if it holds one.
#[inline]
pub(crate) fn may_matter_without_hints(line: &[u8]) -> bool {
    may_lead_a_signal(trim_start(line))
}

/// Classifies a line that starts with `body` (leading blanks trimmed).
fn scan_body(body: &[u8], hints: Hints) -> LineFacts {
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
    if hints.interrupt && !facts.working {
        facts.working = contains_interrupt_hint(body);
    }
    if let Some(at) = hints.tokens {
        facts.tokens = token_value_from(body, at);
    }
    facts
}

/// `false` when `body` cannot start with a character that line facts look at (an upper-case
/// letter, a prompt or status glyph, `│` or `─`), from its first two bytes and without decoding
/// it: every such glyph is `C2 B7` (`·`) or `E2 xx …` with `xx` one of a few values.
#[inline]
fn may_lead_a_signal(body: &[u8]) -> bool {
    match body {
        [lead, ..] if *lead < 0x80 => lead.is_ascii_uppercase() || *lead == b'*',
        [0xc2, 0xb7, ..] => true,
        // U+2000..U+203F (`•`, `›`), U+2200..U+223F (`∙`), U+23C0..U+23FF (`⏵`, `⏸`, `⏺`),
        // U+2500..U+253F (`─`, `│`), U+25C0..U+25FF (`◐`…`◓`, `●`, `◦`), U+2700..U+277F
        // (`✢`…`✽`, `❯`) and U+2800..U+28FF (braille spinner frames).
        [0xe2, second, ..] => matches!(
            second,
            0x80 | 0x88 | 0x8f | 0x94 | 0x97 | 0x9c | 0x9d | 0xa0..=0xa3
        ),
        _ => false,
    }
}

/// `… to interrupt` (Claude: `esc to interrupt`; Codex: `• esc to interrupt)`; others:
/// `ctrl+c to interrupt`), in lower, capitalised or upper case.
fn contains_interrupt_hint(text: &[u8]) -> bool {
    INTERRUPT
        .find_iter(text)
        .chain(INTERRUPT_UPPER.find_iter(text))
        .any(|at| at >= 1 && is_interrupt_hint_at(text, at - 1))
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
    let word_len = word_len(text);
    let word = &text[..word_len];
    // `<Gerund>…` or `… (12s · …`: an ellipsis with either (the cheap tests first).
    if (word.ends_with(b"ing") || has_timer_parenthesis(text)) && has_ellipsis(text) {
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

/// Length in bytes of the word (letters, accented ones included) at the start of `text`.
fn word_len(text: &[u8]) -> usize {
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b.is_ascii_alphabetic() {
            i += 1;
        } else if b == 0xc3 && text.get(i + 1).is_some_and(|c| (0x80..=0xbf).contains(c)) {
            // Latin-1 letters (`Sautéed`), without a Unicode table lookup on the hot path.
            i += 2;
        } else if (0xc4..0xe0).contains(&b) {
            match split_first_char(&text[i..]) {
                (Some(c), rest) if c.is_alphabetic() => i = text.len() - rest.len(),
                _ => break,
            }
        } else {
            break;
        }
    }
    i
}

/// `true` when `text` holds `…` or `...`.
fn has_ellipsis(text: &[u8]) -> bool {
    // `…` is E2 80 A6: look for its last byte (rarer than its first) and for dots.
    memchr::memchr2_iter(b'.', 0xa6, text).any(|p| {
        if text[p] == b'.' {
            text[p..].starts_with(b"...")
        } else {
            p >= 2 && text[p - 2..=p] == *"…".as_bytes()
        }
    })
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
    // The word ends at the first space at the latest, and must end there with `ed`: test that
    // before reading the word letter by letter (most status lines are not completions).
    let first_space = memchr::memchr(b' ', text).unwrap_or(text.len());
    if first_space < 4 || !text[..first_space].ends_with(b"ed") {
        return false;
    }
    let word_len = word_len(text);
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

/// Length of a duration such as `5s`, `1m 2s`, `1h 2m 3s` at the start of `text`, or `<1s`
/// (Codex 0.169 writes a turn shorter than a second so: `─ Worked for <1s ─`).
fn duration_len(text: &[u8]) -> Option<usize> {
    let lead = usize::from(text.first() == Some(&b'<'));
    let mut end = lead;
    loop {
        let mut j = end;
        if end > lead {
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
    (end > lead).then_some(end)
}

/// `true` when `text[start..]` begins with `interrupt` (any case) preceded by `to ` or `to`.
fn is_interrupt_hint_at(text: &[u8], start: usize) -> bool {
    if text.len() < start + 9 || !text[start..start + 9].eq_ignore_ascii_case(b"interrupt") {
        return false;
    }
    let before = &text[..start];
    let before = before.strip_suffix(b" ").unwrap_or(before);
    before.len() >= 2 && before[before.len() - 2..].eq_ignore_ascii_case(b"to")
}

/// The value of the first `TOKEN_PATTERN` match (`/(\d+(?:\.\d+)?)\s*([kKmM])?\s*tokens/`) in
/// `text`, computed as Codeman does (`parseFloat`, × 1e3 or 1e6, rounded).
pub(crate) fn token_value(text: &[u8]) -> Option<u64> {
    token_value_from(text, TOKENS.find(text)?)
}

/// [`token_value`] when the first `tokens` in `text` is known to start at `first`.
fn token_value_from(text: &[u8], first: usize) -> Option<u64> {
    let mut at = first;
    loop {
        if let Some(v) = token_number_before(&text[..at]) {
            return Some(v);
        }
        at += 1 + TOKENS.find(&text[at + 1..])?;
    }
}

/// Parses `\d+(?:\.\d+)?\s*[kKmM]?\s*` backwards from the end of `before` (JavaScript `\s`),
/// returning the leftmost-match value as Codeman computes it.
fn token_number_before(before: &[u8]) -> Option<u64> {
    let mut end = trim_end_js_spaces(before);
    let mut scale = 1.0;
    if end > 0 && matches!(before[end - 1], b'k' | b'K' | b'm' | b'M') {
        scale = if matches!(before[end - 1], b'k' | b'K') {
            1e3
        } else {
            1e6
        };
        end = trim_end_js_spaces(&before[..end - 1]);
    }
    let number = parse_number_before(&before[..end])?;
    Some(js_round(number * scale))
}

/// The `\d+(?:\.\d+)?` number that ends `b`, read as `parseFloat` reads it.
fn parse_number_before(b: &[u8]) -> Option<f64> {
    let end = b.len();
    let mut start = end;
    while start > 0 && b[start - 1].is_ascii_digit() {
        start -= 1;
    }
    if start == end {
        return None;
    }
    if start >= 2 && b[start - 1] == b'.' && b[start - 2].is_ascii_digit() {
        start -= 1;
        while start > 0 && b[start - 1].is_ascii_digit() {
            start -= 1;
        }
    }
    let digits = &b[start..end];
    fast_decimal(digits).or_else(|| std::str::from_utf8(digits).ok()?.parse().ok())
}

/// `digits` (`\d+(?:\.\d+)?`) as the nearest `f64`, when that is one exact division: a
/// mantissa below 2^53 and at most 22 decimals (Clinger's fast path, which rounds exactly as
/// `str::parse` does); `None` otherwise.
fn fast_decimal(digits: &[u8]) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    if digits.len() > 16 {
        return None;
    }
    let mut mantissa: u64 = 0;
    let mut decimals = None;
    for (k, &d) in digits.iter().enumerate() {
        if d == b'.' {
            decimals = Some(digits.len() - k - 1);
        } else {
            mantissa = mantissa * 10 + u64::from(d - b'0');
        }
    }
    // At most 16 digits: the mantissa is below 10^16, and exactly representable below 2^53.
    if mantissa >= 1 << 53 {
        return None;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "the mantissa is below 2^53, so exact"
    )]
    let m = mantissa as f64;
    Some(m / POW10[decimals.unwrap_or(0)])
}

/// The length of `b` without its trailing JavaScript whitespace.
fn trim_end_js_spaces(b: &[u8]) -> usize {
    let mut end = b.len();
    loop {
        let n = js_space_len_back(&b[..end]);
        if n == 0 {
            return end;
        }
        end -= n;
    }
}

/// Length in bytes of a JavaScript `\s` character at the start of `b` (0 if none).
pub(crate) fn js_space_len(b: &[u8]) -> usize {
    match b {
        [0x09..=0x0d | b' ', ..] => 1,
        [0xc2, 0xa0, ..] => 2,
        [0xe1, 0x9a, 0x80, ..]
        | [0xe2, 0x80, 0x80..=0x8a | 0xa8 | 0xa9 | 0xaf, ..]
        | [0xe2, 0x81, 0x9f, ..]
        | [0xe3, 0x80, 0x80, ..]
        | [0xef, 0xbb, 0xbf, ..] => 3,
        _ => 0,
    }
}

/// Length in bytes of a JavaScript `\s` character that ends `b` (0 if none).
pub(crate) fn js_space_len_back(b: &[u8]) -> usize {
    for n in 1..=3.min(b.len()) {
        let start = b.len() - n;
        if b[start] & 0xc0 != 0x80 {
            return if js_space_len(&b[start..]) == n { n } else { 0 };
        }
    }
    0
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
#[inline]
pub(crate) fn trim_start(s: &[u8]) -> &[u8] {
    // Eight spaces at a time first: the inside of a prompt box is a long run of them.
    let mut n = 0;
    while s.get(n..).and_then(<[u8]>::first_chunk) == Some(&[b' '; 8]) {
        n += 8;
    }
    n += s[n..]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count();
    &s[n..]
}

/// Splits off the first UTF-8 character (`None` when the bytes do not start with a valid one).
pub(crate) fn split_first_char(s: &[u8]) -> (Option<char>, &[u8]) {
    let Some(&b0) = s.first() else {
        return (None, s);
    };
    let (n, init) = match b0 {
        0x00..=0x7f => return (Some(char::from(b0)), &s[1..]),
        0xc2..=0xdf => (2, u32::from(b0 & 0x1f)),
        0xe0..=0xef => (3, u32::from(b0 & 0x0f)),
        0xf0..=0xf4 => (4, u32::from(b0 & 0x07)),
        _ => return (None, &s[1..]),
    };
    if s.len() < n {
        return (None, &s[s.len()..]);
    }
    let mut cp = init;
    for &b in &s[1..n] {
        if b & 0xc0 != 0x80 {
            return (None, &s[1..]);
        }
        cp = (cp << 6) | u32::from(b & 0x3f);
    }
    match char::from_u32(cp) {
        Some(c) if c.len_utf8() == n => (Some(c), &s[n..]),
        _ => (None, &s[1..]),
    }
}

/// Counts visible characters in `run`, stopping at `limit`: bytes that start a character and
/// are neither whitespace nor box-drawing (a redrawn prompt box is not new content).
///
/// Called only until a chunk has shown three: kept out of line, so that the tokenizer's loop
/// stays small.
#[inline(never)]
pub(crate) fn count_visible(run: &[u8], limit: usize) -> usize {
    let (n, done) = crate::scan::count_visible_blocks(run, limit);
    if n >= limit {
        return limit;
    }
    n + count_visible_bytes(&run[done..], limit - n)
}

/// [`count_visible`] one byte at a time: the definition the block kernel is checked against,
/// and the way the tail of a run is counted.
pub(crate) fn count_visible_bytes(run: &[u8], limit: usize) -> usize {
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
