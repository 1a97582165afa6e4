//! A Codeman-compatible per-chunk classifier: Codeman's `RespawnController.handleTerminalData`
//! detection, reproduced rule for rule, with its counters.
//!
//! It exists to check equivalence on the reference stream (`codeman-expected-4096.json`) and
//! as a compatibility mode; the default [`Detector`](crate::Detector) differs where Codeman is
//! wrong (see the crate docs). The semantics are those of Codeman's TypeScript
//! (`handleTerminalData`, its `BufferAccumulator` and patterns), followed exactly; the cases
//! the tests pin down are listed in `docs/detection.md` (section 5):
//!
//! 1. The chunk is decoded as Node's `StringDecoder` does (an incomplete UTF-8 sequence at the
//!    end is carried to the next chunk); an empty string is ignored.
//! 2. It is appended to a 1,048,576 / 524,288 UTF-16-unit `BufferAccumulator` (on trim: keep
//!    the last 524,288 units, then drop through the first `\n` if it is at index 1..4095).
//! 3. Tokens: the first `/(\d+(?:\.\d+)?)\s*([kKmM])?\s*tokens/` match on the raw chunk; a
//!    value that differs from the last one is a change.
//! 4. Completion: `/\bWorked\s+for\s+\d+[hms](\s*\d+[hms])*/i` (ASCII `\b`, `\d`, case folding)
//!    on the raw chunk; watching → confirming; the window is cleared; stop.
//! 5. Working: append to the rolling window, keep its last 300 UTF-16 units, look for any of
//!    the 49 case-sensitive substrings; confirming → watching; stop.
//! 6. In confirming only: `chunk.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').trim().length > 2`
//!    (UTF-16 units, JavaScript whitespace) cancels back to watching; stop.
//! 7. Prompt: the chunk contains `❯` or `⏵`.
//!
//! There is no time here, so the confirmation timer never fires: this is Codeman's `patterns`
//! benchmark mode, whose counters `shared/bench/codeman-expected-*.json` record.

use std::sync::LazyLock;

use memchr::memmem;
use regex::bytes::Regex;
use serde::Serialize;

use crate::patterns::{js_space_len, js_space_len_back, token_value};
use crate::signals::ChunkSignals;

/// Codeman's 49 `WORKING_PATTERNS`: 27 words, 10 braille spinners, 4 circles, 8 braille blocks.
pub const WORKING_PATTERNS: [&str; 49] = [
    "Thinking",
    "Writing",
    "Reading",
    "Running",
    "Searching",
    "Editing",
    "Creating",
    "Deleting",
    "Analyzing",
    "Executing",
    "Synthesizing",
    "Brewing",
    "Compiling",
    "Building",
    "Installing",
    "Fetching",
    "Downloading",
    "Processing",
    "Generating",
    "Loading",
    "Starting",
    "Updating",
    "Checking",
    "Validating",
    "Testing",
    "Formatting",
    "Linting",
    "⠋",
    "⠙",
    "⠹",
    "⠸",
    "⠼",
    "⠴",
    "⠦",
    "⠧",
    "⠇",
    "⠏",
    "◐",
    "◓",
    "◑",
    "◒",
    "⣾",
    "⣽",
    "⣻",
    "⢿",
    "⡿",
    "⣟",
    "⣯",
    "⣷",
];

/// `❯` and `⏵`, Codeman's `PROMPT_PATTERNS`.
static PROMPT_FINDERS: LazyLock<[memmem::Finder<'static>; 2]> = LazyLock::new(|| {
    [
        memmem::Finder::new("❯".as_bytes()),
        memmem::Finder::new("⏵".as_bytes()),
    ]
});

const BUFFER_MAX: usize = 1_048_576;
const BUFFER_TRIM_TO: usize = 524_288;
const WINDOW_UNITS: usize = 300;

/// The state of Codeman's controller as far as detection goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodemanState {
    /// `watching`.
    #[default]
    Watching,
    /// `confirming_idle`: a completion message was seen.
    ConfirmingIdle,
}

/// Codeman's counters, named as in `codeman-expected-*.json` (`patterns` object).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodemanCounters {
    /// Chunks processed (non-empty after decoding).
    pub chunks: u64,
    /// Chunks matching the completion regex.
    pub completions: u64,
    /// Transitions watching → confirming_idle.
    pub to_confirming: u64,
    /// Chunks whose window held a working pattern.
    pub working_chunks: u64,
    /// Confirmations cancelled by a working chunk.
    pub cancelled_by_working: u64,
    /// Confirmations cancelled by more than two characters of output.
    pub cancelled_by_substantial: u64,
    /// Chunks that reached the prompt check and contained `❯` or `⏵`.
    pub prompt_chunks: u64,
    /// Chunks whose token value differed from the previous one.
    pub token_changes: u64,
    /// The state after the last chunk.
    pub final_state: CodemanState,
    /// The last token value (`lastTokenCount`).
    pub last_token_count: u64,
    /// The accumulator's length in UTF-16 units.
    pub buffer_length: u64,
    /// How many times the accumulator trimmed.
    pub buffer_trims: u64,
    /// The rolling window's length in UTF-16 units.
    pub window_length: u64,
}

/// Codeman's detection, chunk by chunk. Holds Codeman's 1 MiB-unit buffer, so unlike the
/// [`Detector`](crate::Detector) its state is as large as Codeman's.
#[derive(Debug, Clone)]
pub struct CodemanClassifier {
    carry: Vec<u8>,
    buffer: Utf16Text,
    window: Utf16Text,
    working: Regex,
    state: CodemanState,
    counters: CodemanCounters,
}

/// UTF-8 text with its JavaScript (UTF-16) length. A surrogate pair cut in half by a slice is
/// kept as one `0xFF` byte (one unit that matches nothing), as a lone surrogate would.
#[derive(Debug, Clone, Default)]
struct Utf16Text {
    bytes: Vec<u8>,
    units: usize,
}

impl Default for CodemanClassifier {
    fn default() -> Self {
        Self::new()
    }
}

impl CodemanClassifier {
    /// A classifier in `watching` with empty buffers.
    pub fn new() -> Self {
        let alternation = WORKING_PATTERNS
            .iter()
            .map(|p| regex::escape(p))
            .collect::<Vec<_>>()
            .join("|");
        Self {
            carry: Vec::with_capacity(4),
            buffer: Utf16Text::default(),
            window: Utf16Text::default(),
            // Literal alternations compile to a multi-substring searcher.
            working: Regex::new(&alternation)
                .unwrap_or_else(|_| unreachable!("escaped literals always compile")),
            state: CodemanState::Watching,
            counters: CodemanCounters::default(),
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> CodemanCounters {
        let mut c = self.counters;
        c.final_state = self.state;
        c.buffer_length = self.buffer.units as u64;
        c.window_length = self.window.units as u64;
        c
    }

    /// The current state.
    pub fn state(&self) -> CodemanState {
        self.state
    }

    /// Feeds one chunk of raw output (any byte boundaries) and returns Codeman's view of it:
    /// `completion`, `working` (the rolling window), `prompt` (the chunk reached the prompt
    /// check and holds `❯`/`⏵`), `substantial` (only evaluated while confirming, as Codeman
    /// does) and `tokens` (the first match on the chunk).
    pub fn feed(&mut self, bytes: &[u8]) -> ChunkSignals {
        let mut joined;
        let input: &[u8] = if self.carry.is_empty() {
            bytes
        } else {
            joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(bytes);
            &joined
        };
        let keep = incomplete_tail(input);
        let (complete, tail) = input.split_at(input.len() - keep);
        self.carry.clear();
        self.carry.extend_from_slice(tail);
        if let Ok(text) = std::str::from_utf8(complete) {
            self.classify(text.as_bytes())
        } else {
            let text = String::from_utf8_lossy(complete).into_owned();
            self.classify(text.as_bytes())
        }
    }

    /// Classifies one decoded chunk (valid UTF-8).
    fn classify(&mut self, chunk: &[u8]) -> ChunkSignals {
        let mut signals = ChunkSignals::default();
        if chunk.is_empty() {
            return signals;
        }
        let c = &mut self.counters;
        c.chunks += 1;
        // 2. The controller's buffer.
        self.buffer.push(chunk);
        if self.buffer.units > BUFFER_MAX {
            trim_buffer(&mut self.buffer);
            c.buffer_trims += 1;
        }
        // 5. Tokens: the first match on the raw chunk.
        if let Some(v) = token_value(chunk) {
            signals.tokens = Some(v);
            if v != c.last_token_count {
                c.last_token_count = v;
                c.token_changes += 1;
            }
        }
        // 6. Completion.
        if completion_match(chunk) {
            signals.completion = true;
            c.completions += 1;
            if self.state == CodemanState::Watching {
                self.state = CodemanState::ConfirmingIdle;
                c.to_confirming += 1;
            }
            self.window.clear();
            return signals;
        }
        // 7. Working: append, keep the last 300 units, then search.
        self.window.push_keep_last(chunk, WINDOW_UNITS);
        if self.working.is_match(&self.window.bytes) {
            signals.working = true;
            c.working_chunks += 1;
            if self.state == CodemanState::ConfirmingIdle {
                self.state = CodemanState::Watching;
                c.cancelled_by_working += 1;
            }
            return signals;
        }
        // 8. Substantial output, only while confirming.
        if self.state == CodemanState::ConfirmingIdle && simple_stripped_trimmed_units(chunk) > 2 {
            signals.substantial = true;
            self.state = CodemanState::Watching;
            c.cancelled_by_substantial += 1;
            return signals;
        }
        // 9. Prompt.
        if PROMPT_FINDERS.iter().any(|f| f.find(chunk).is_some()) {
            signals.prompt = true;
            c.prompt_chunks += 1;
        }
        signals
    }

    /// Heap bytes held (dominated by Codeman's 1 MiB-unit buffer).
    pub fn heap_bytes(&self) -> usize {
        self.buffer.bytes.capacity() + self.window.bytes.capacity() + self.carry.capacity()
    }
}

/// Bytes at the end of `b` that start an incomplete UTF-8 sequence (0–3).
fn incomplete_tail(b: &[u8]) -> usize {
    for back in 1..=3.min(b.len()) {
        let byte = b[b.len() - back];
        if byte & 0xc0 == 0x80 {
            continue;
        }
        let need = match byte {
            0xc2..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf4 => 4,
            _ => return 0,
        };
        return if need > back { back } else { 0 };
    }
    0
}

/// UTF-16 units of the character starting with `lead`.
fn units_of(lead: u8) -> usize {
    if lead & 0xf8 == 0xf0 { 2 } else { 1 }
}

fn is_char_start(b: u8) -> bool {
    b & 0xc0 != 0x80
}

/// UTF-16 units of `text`: character starts, plus one per four-byte lead. Counted in 16-bit
/// lanes per block so the loop vectorises.
fn count_units(text: &[u8]) -> usize {
    text.chunks(8192)
        .map(|block| {
            let mut n: u16 = 0;
            for &b in block {
                n += u16::from(is_char_start(b)) + u16::from(b & 0xf8 == 0xf0);
            }
            usize::from(n)
        })
        .sum()
}

/// The byte offset in `text` where its last `n` UTF-16 units start, walking back from the
/// end; `None` when `text` holds fewer units. `Some((offset, true))` when the cut falls inside
/// a surrogate pair (the character at `offset` keeps only its low half).
fn last_units_start(text: &[u8], n: usize) -> Option<(usize, bool)> {
    let mut need = n;
    let mut i = text.len();
    // Whole 64-byte blocks first, then byte by byte.
    while i >= 64 {
        let u = count_units(&text[i - 64..i]);
        if u >= need {
            break;
        }
        need -= u;
        i -= 64;
    }
    while need > 0 {
        if i == 0 {
            return None;
        }
        i -= 1;
        let b = text[i];
        if is_char_start(b) {
            let u = units_of(b);
            if u > need {
                return Some((i, true));
            }
            need -= u;
        }
    }
    Some((i, false))
}

impl Utf16Text {
    fn clear(&mut self) {
        self.bytes.clear();
        self.units = 0;
    }

    fn push(&mut self, text: &[u8]) {
        self.bytes.extend_from_slice(text);
        self.units += count_units(text);
    }

    /// `s = (s + text).slice(-n)`, without copying what the slice drops.
    fn push_keep_last(&mut self, text: &[u8], n: usize) {
        let units = count_units(text);
        if units < n {
            self.bytes.extend_from_slice(text);
            self.units += units;
            self.keep_last(n);
            return;
        }
        if let Some((start, split)) = last_units_start(text, n) {
            self.bytes.clear();
            self.copy_tail(text, start, split);
            self.units = n;
        } else {
            self.push(text);
            self.keep_last(n);
        }
    }

    /// `s = s.slice(-n)`, in UTF-16 units.
    fn keep_last(&mut self, n: usize) {
        if self.units <= n {
            return;
        }
        let Some((start, split)) = last_units_start(&self.bytes, n) else {
            return;
        };
        let tail = self.bytes.split_off(start);
        self.bytes.clear();
        self.copy_tail(&tail, 0, split);
        self.units = n;
    }

    fn copy_tail(&mut self, text: &[u8], start: usize, split: bool) {
        if split {
            // Half of a surrogate pair stays: one unit that matches nothing.
            self.bytes.push(0xff);
            self.bytes
                .extend_from_slice(&text[(start + 4).min(text.len())..]);
        } else {
            self.bytes.extend_from_slice(&text[start..]);
        }
    }
}

/// `BufferAccumulator.trim()`: keep the last 524,288 units, then drop through the first `\n`
/// when it is at index 1..4095.
fn trim_buffer(buffer: &mut Utf16Text) {
    buffer.keep_last(BUFFER_TRIM_TO);
    let mut units = 0;
    let mut newline = None;
    for (i, &b) in buffer.bytes.iter().enumerate() {
        if units >= 4096 {
            break;
        }
        if b == b'\n' {
            newline = Some((i, units));
            break;
        }
        if is_char_start(b) {
            units += units_of(b);
        }
    }
    if let Some((i, at)) = newline
        && at > 0
    {
        buffer.bytes.drain(..=i);
        buffer.units -= at + 1;
    }
}

fn skip_js_spaces(b: &[u8], mut i: usize) -> usize {
    loop {
        let n = js_space_len(&b[i..]);
        if n == 0 {
            return i;
        }
        i += n;
    }
}

/// `/\bWorked\s+for\s+\d+[hms]/i` (the optional repetition does not change whether it
/// matches).
fn completion_match(text: &[u8]) -> bool {
    let mut from = 0;
    while let Some(p) = memchr::memchr2(b'w', b'W', &text[from..]) {
        let at = from + p;
        from = at + 1;
        if at > 0 && (text[at - 1].is_ascii_alphanumeric() || text[at - 1] == b'_') {
            continue;
        }
        if text.len() < at + 6 || !text[at..at + 6].eq_ignore_ascii_case(b"worked") {
            continue;
        }
        let mut i = at + 6;
        let j = skip_js_spaces(text, i);
        if j == i {
            continue;
        }
        i = j;
        if text.len() < i + 3 || !text[i..i + 3].eq_ignore_ascii_case(b"for") {
            continue;
        }
        i += 3;
        let j = skip_js_spaces(text, i);
        if j == i {
            continue;
        }
        i = j;
        let digits = text[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0
            && matches!(
                text.get(i + digits),
                Some(b'h' | b'm' | b's' | b'H' | b'M' | b'S')
            )
        {
            return true;
        }
    }
    false
}

/// `chunk.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').trim().length`, in UTF-16 units.
fn simple_stripped_trimmed_units(chunk: &[u8]) -> usize {
    let mut stripped = Vec::with_capacity(chunk.len());
    let mut i = 0;
    while i < chunk.len() {
        if chunk[i] == 0x1b && chunk.get(i + 1) == Some(&b'[') {
            let mut j = i + 2;
            while j < chunk.len() && (chunk[j].is_ascii_digit() || chunk[j] == b';') {
                j += 1;
            }
            if j < chunk.len() && chunk[j].is_ascii_alphabetic() {
                i = j + 1;
                continue;
            }
        }
        stripped.push(chunk[i]);
        i += 1;
    }
    let start = skip_js_spaces(&stripped, 0);
    let mut end = stripped.len();
    while end > start {
        let n = js_space_len_back(&stripped[..end]);
        if n == 0 {
            break;
        }
        end -= n;
    }
    stripped[start..end]
        .iter()
        .filter(|&&b| is_char_start(b))
        .map(|&b| units_of(b))
        .sum()
}

#[cfg(test)]
mod tests;
