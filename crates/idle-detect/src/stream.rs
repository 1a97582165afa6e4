//! The stream side of the terminal model: a one-line model over the tokenizer that turns raw
//! output into stripped lines and classifies each line once.
//!
//! The live scanner keeps no text beyond the current line (its first [`LINE_CAP`] bytes).
//! When an AI checker needs context, [`strip_for_context`] runs the same model with a window
//! over the detector's raw-output ring: a carriage return followed by new text replaces the
//! line in the window instead of piling up frames (`⠋ Thinking\r⠙ Thinking` leaves one
//! line), and cursor movements end a line, so Ink's multi-line redraws become separate lines.

use crate::patterns::{self, LineFacts};
use crate::ring::Ring;
use crate::scan;
use crate::signals::ChunkSignals;
use crate::terminal::{Sink, Tokenizer};

/// Bytes of the current line kept for classification.
pub(crate) const LINE_CAP: usize = 1024;
/// Bytes of the window title kept.
const TITLE_CAP: usize = 256;

/// The stream scanner: tokenizer plus line model.
#[derive(Debug, Clone)]
pub(crate) struct StreamScanner {
    tokenizer: Tokenizer,
    lines: LineModel,
    /// The last chunk drew a prompt (whether or not it also showed work).
    drew_prompt: bool,
}

/// Facts about one chunk, before they are turned into [`ChunkSignals`].
#[derive(Debug, Clone, Copy, Default)]
struct ChunkFacts {
    completion: bool,
    working: bool,
    prompt: bool,
    tokens: Option<u64>,
    visible: usize,
}

/// Stripped text held before a batch is classified (lines are classified together at the end
/// of each chunk, or when this much, or this many lines, pile up within one).
const BATCH_BYTES: usize = 6 * 1024;
const BATCH_LINES: usize = 256;

/// A byte buffer of fixed capacity with slack at its end, so that short runs can be copied in
/// with one fixed-size move instead of a call to `memcpy`.
#[derive(Debug, Clone)]
struct LineBuf {
    buf: Box<[u8]>,
    len: usize,
}

impl LineBuf {
    fn new(capacity: usize) -> Self {
        Self {
            buf: vec![0; capacity].into_boxed_slice(),
            len: 0,
        }
    }

    fn capacity(&self) -> usize {
        self.buf.len()
    }

    fn push(&mut self, byte: u8) {
        self.buf[self.len] = byte;
        self.len += 1;
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Appends `chunk[start..start + n]`. When 16 or 32 bytes from `start` are readable and
    /// writable, they are moved whole (the bytes past `n` are scratch, overwritten later).
    #[inline]
    fn extend_from_chunk(&mut self, chunk: &[u8], start: usize, n: usize) {
        let len = self.len;
        if n <= 16 {
            if let (Some(src), Some(dst)) = (
                chunk.get(start..start + 16),
                self.buf.get_mut(len..len + 16),
            ) {
                dst.copy_from_slice(src);
                self.len += n;
                return;
            }
        } else if n <= 32
            && let (Some(src), Some(dst)) = (
                chunk.get(start..start + 32),
                self.buf.get_mut(len..len + 32),
            )
        {
            dst.copy_from_slice(src);
            self.len += n;
            return;
        }
        self.extend_from_slice(&chunk[start..start + n]);
    }

    /// Drops the first `n` bytes.
    fn drain_front(&mut self, n: usize) {
        self.buf.copy_within(n..self.len, 0);
        self.len -= n;
    }
}

impl std::ops::Deref for LineBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

#[derive(Debug, Clone)]
struct LineModel {
    /// The batch's stripped text: the lines that ended since the last classification, each
    /// followed by `\n`, then the current line.
    text: LineBuf,
    /// `(start, end)` of each ended line in `text`.
    ended: Vec<(u32, u32)>,
    /// Where the current line starts in `text`.
    cur: usize,
    /// Facts already reported for the line that was current when the batch started (it is
    /// `ended[0]` once it ends), so no fact is reported twice for one line.
    carried: LineFacts,
    /// Whether the batch started inside a line (then `carried` applies to its first line).
    continued: bool,
    /// Positions of `tokens` / `interrupt` in `text`, found in bulk (reused buffers).
    token_hits: Vec<usize>,
    interrupt_hits: Vec<usize>,
    /// How much of `text` (the line carried over) the hint words were searched in.
    scanned: usize,
    /// The stripped-text window, kept only when building context.
    window: Option<Ring>,
    /// Logical window position where the current line starts.
    line_start: u64,
    /// A carriage return was seen: new text replaces the line in the window.
    replace_pending: bool,
    title: Vec<u8>,
    title_working: bool,
    chunk: ChunkFacts,
}

impl StreamScanner {
    /// A live scanner: line facts and the title, no stripped-text window.
    pub(crate) fn new() -> Self {
        Self::build(None)
    }

    /// A scanner that also keeps the newest `window_bytes` of stripped text.
    fn with_window(window_bytes: usize) -> Self {
        Self::build(Some(Ring::new(window_bytes)))
    }

    fn build(window: Option<Ring>) -> Self {
        Self {
            tokenizer: Tokenizer::default(),
            drew_prompt: false,
            lines: LineModel {
                text: LineBuf::new(BATCH_BYTES + LINE_CAP + 64),
                ended: Vec::with_capacity(BATCH_LINES),
                cur: 0,
                carried: LineFacts::default(),
                continued: false,
                token_hits: Vec::with_capacity(16),
                interrupt_hits: Vec::with_capacity(16),
                scanned: 0,
                window,
                line_start: 0,
                replace_pending: false,
                title: Vec::with_capacity(TITLE_CAP),
                title_working: false,
                chunk: ChunkFacts::default(),
            },
        }
    }

    /// Processes one chunk of output and returns what it says.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> ChunkSignals {
        self.lines.chunk = ChunkFacts::default();
        self.tokenizer.feed(bytes, &mut self.lines);
        // The lines that ended in this chunk are classified together; the line still open is
        // classified as it stands for the facts that only grow with the line (working,
        // tokens), remembered so the rest of the line only adds new ones. Completion and
        // prompt wait for the line's end, since more text can undo them (`✻ Worked for 5s
        // before…`, `❯ 1. Yes`). So each fact is reported in the chunk holding the byte that
        // decided it, however the stream is cut.
        self.lines.classify_batch();
        let c = self.lines.chunk;
        self.drew_prompt = c.prompt;
        ChunkSignals {
            completion: c.completion,
            working: c.working,
            prompt: c.prompt && !c.working,
            substantial: c.visible > 2,
            tokens: c.tokens,
        }
    }

    /// `true` when the last chunk drew a prompt, even alongside a working indicator.
    pub(crate) fn drew_prompt(&self) -> bool {
        self.drew_prompt
    }

    /// The window title most recently set (OSC 0 or 2), lossily decoded.
    pub(crate) fn title(&self) -> String {
        String::from_utf8_lossy(&self.lines.title).into_owned()
    }

    /// `true` when the window title shows a spinner frame.
    pub(crate) fn title_working(&self) -> bool {
        self.lines.title_working
    }

    /// Heap bytes held by the scanner (the batch buffers, the title, the tokenizer).
    pub(crate) fn heap_bytes(&self) -> usize {
        let l = &self.lines;
        l.window.as_ref().map_or(0, Ring::capacity)
            + l.text.capacity()
            + l.ended.capacity() * size_of::<(u32, u32)>()
            + (l.token_hits.capacity() + l.interrupt_hits.capacity()) * size_of::<usize>()
            + l.title.capacity()
            + self.tokenizer.heap_bytes()
    }
}

/// The window title a byte stream leaves set (used for saved snapshots).
pub(crate) fn title_of(bytes: &[u8]) -> String {
    let mut scanner = StreamScanner::new();
    scanner.feed(bytes);
    scanner.title()
}

/// The newest `max_chars` characters of `raw` output with escape sequences stripped and
/// carriage-return redraws collapsed (the AI checkers' context).
pub(crate) fn strip_for_context(raw: &[u8], max_chars: usize) -> String {
    let mut scanner = StreamScanner::with_window(raw.len().max(1));
    scanner.feed(raw);
    let Some(window) = scanner.lines.window.as_ref() else {
        return String::new();
    };
    let bytes = window.tail(window.len());
    let text = String::from_utf8_lossy(&bytes);
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max_chars)).collect()
}

/// The line of the batch `text` around position `at` (it ends with a `\n`), without its `\n`.
fn line_around(text: &[u8], at: usize) -> (usize, usize) {
    let start = memchr::memrchr(b'\n', &text[..at]).map_or(0, |p| p + 1);
    let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |p| at + p);
    (start, end)
}

/// Keeps the hits (sorted) that start before `end`.
fn keep_before(hits: &mut Vec<usize>, end: usize) {
    let n = hits.partition_point(|&h| h < end);
    hits.truncate(n);
}

/// Drops the hits (sorted) before `start` and makes the others relative to it.
fn shift_back(hits: &mut Vec<usize>, start: usize) {
    let n = hits.partition_point(|&h| h < start);
    hits.drain(..n);
    for h in hits {
        *h -= start;
    }
}

/// Moves `next` past the hits in `hits` (sorted) that start before `end`.
fn skip_hits(hits: &[usize], next: &mut usize, end: usize) {
    while *next < hits.len() && hits[*next] < end {
        *next += 1;
    }
}

/// `true` when a hit in `hits` (sorted) starts in `[start, end)`; `next` walks forward.
fn has_hit(hits: &[usize], next: &mut usize, start: usize, end: usize) -> bool {
    first_hit(hits, next, start, end).is_some()
}

/// The first hit in `hits` (sorted) in `[start, end)`, relative to `start`; `next` walks forward.
fn first_hit(hits: &[usize], next: &mut usize, start: usize, end: usize) -> Option<usize> {
    while *next < hits.len() && hits[*next] < start {
        *next += 1;
    }
    let hit = *hits.get(*next)?;
    (hit < end).then(|| hit - start)
}

impl LineModel {
    /// Classifies the lines that ended in this batch and the current line as it stands, then
    /// keeps only the current line.
    fn classify_batch(&mut self) {
        if self.text.is_empty() {
            return;
        }
        // The line carried over from the last batch was searched then, up to `scanned`: keep
        // the words found well inside it and search only from a little before its end (a word
        // may straddle it).
        let from = self.scanned.saturating_sub(8);
        keep_before(&mut self.token_hits, from.saturating_sub(2));
        keep_before(&mut self.interrupt_hits, from.saturating_sub(4));
        scan::find_hints(
            &self.text,
            from,
            &mut self.token_hits,
            &mut self.interrupt_hits,
        );
        let (mut nt, mut ni) = (0, 0);
        let carried = if self.continued {
            self.carried
        } else {
            LineFacts::default()
        };
        // The ended lines, in order: those recorded by `end_line` (their first bytes may
        // announce something) and those holding a hint word (found around each hit).
        let mut k = 0;
        loop {
            let recorded = self.ended.get(k).map(|&(s, e)| (s as usize, e as usize));
            let hit = [self.token_hits.get(nt), self.interrupt_hits.get(ni)]
                .into_iter()
                .flatten()
                .copied()
                .filter(|&h| h < self.cur)
                .min();
            let (start, end) = match (recorded, hit) {
                (Some(line), None) => line,
                (Some(line), Some(h)) if h >= line.0 => line,
                (_, Some(h)) => line_around(&self.text, h),
                (None, None) => break,
            };
            if recorded.is_some_and(|line| line.0 == start) {
                k += 1;
            }
            let hints = patterns::Hints {
                tokens: first_hit(&self.token_hits, &mut nt, start, end),
                interrupt: has_hit(&self.interrupt_hits, &mut ni, start, end),
            };
            let facts = patterns::scan_line_hinted(&self.text[start..end], hints);
            // The facts carried over apply to the line the batch continued, which starts it.
            let already = if start == 0 {
                carried
            } else {
                LineFacts::default()
            };
            self.report(facts, already);
            skip_hits(&self.token_hits, &mut nt, end);
            skip_hits(&self.interrupt_hits, &mut ni, end);
        }
        let carried = if self.cur == 0 {
            carried
        } else {
            LineFacts::default()
        };
        let (start, end) = (self.cur, self.text.len());
        if end > start {
            let hints = patterns::Hints {
                tokens: first_hit(&self.token_hits, &mut nt, start, end),
                interrupt: has_hit(&self.interrupt_hits, &mut ni, start, end),
            };
            let mut facts = patterns::scan_line_hinted(&self.text[start..end], hints);
            facts.completion = false;
            facts.prompt = false;
            self.report(facts, carried);
            self.carried = LineFacts {
                completion: false,
                prompt: false,
                working: carried.working || facts.working,
                tokens: carried.tokens.or(facts.tokens),
            };
            self.continued = true;
        } else {
            self.carried = LineFacts::default();
            self.continued = false;
        }
        self.text.drain_front(start);
        shift_back(&mut self.token_hits, start);
        shift_back(&mut self.interrupt_hits, start);
        self.scanned = self.text.len();
        self.ended.clear();
        self.cur = 0;
    }

    /// Adds `facts` to the chunk's, leaving out those already reported for the line.
    fn report(&mut self, facts: LineFacts, already: LineFacts) {
        self.chunk.completion |= facts.completion && !already.completion;
        self.chunk.working |= facts.working && !already.working;
        self.chunk.prompt |= facts.prompt && !already.prompt;
        if facts.tokens.is_some() && already.tokens.is_none() {
            self.chunk.tokens = facts.tokens;
        }
    }

    /// Ends the current line (newline, carriage return or cursor movement).
    ///
    /// Kept small and out of line: most calls end an empty line (`\r\n`, `ESC[2K ESC[1A`)
    /// and return at once, without saving registers for the work of a line with text.
    #[inline(never)]
    fn end_line(&mut self) {
        if self.text.len() > self.cur {
            self.end_text_line();
        } else if self.cur == 0 {
            // An empty line ends the line the batch continued: its facts are spent.
            self.continued = false;
            self.carried = LineFacts::default();
        }
    }

    /// Ends a current line that holds text.
    #[inline(never)]
    fn end_text_line(&mut self) {
        // Both offsets are below `BATCH_BYTES + LINE_CAP`.
        let span = (
            u32::try_from(self.cur).unwrap_or(u32::MAX),
            u32::try_from(self.text.len()).unwrap_or(u32::MAX),
        );
        // A line whose first bytes cannot announce anything is classified only if it holds a
        // hint word, which the batch finds by itself.
        if patterns::may_matter_without_hints(&self.text[self.cur..]) {
            self.ended.push(span);
        }
        self.text.push(b'\n');
        self.cur = self.text.len();
        if self.text.len() >= BATCH_BYTES || self.ended.len() >= BATCH_LINES {
            self.classify_batch();
        }
    }

    /// A carriage return (or an equivalent): the line ends, and new text will overwrite it.
    #[inline]
    fn carriage_return(&mut self) {
        self.end_line();
        self.replace_pending = true;
    }

    /// A line feed: the line is committed to the window.
    #[inline]
    fn line_feed(&mut self) {
        self.end_line();
        self.replace_pending = false;
        if let Some(w) = &mut self.window {
            w.push_byte(b'\n');
            self.line_start = w.end();
        }
    }

    /// A cursor movement to another row: like a line feed, without blank lines in the window.
    #[inline]
    fn row_change(&mut self) {
        self.end_line();
        self.replace_pending = false;
        if let Some(w) = &mut self.window
            && w.end() > self.line_start
        {
            w.push_byte(b'\n');
            self.line_start = w.end();
        }
    }

    /// A horizontal gap (tab, cursor forward, column jump): one space stands for it.
    fn gap(&mut self) {
        if self.text.len() > self.cur && self.text.last() != Some(&b' ') {
            self.append(b" ");
        }
    }

    #[expect(
        clippy::inline_always,
        reason = "the per-run hot path; measured on the reference stream"
    )]
    #[inline(always)]
    fn append(&mut self, run: &[u8]) {
        let room = LINE_CAP.saturating_sub(self.text.len() - self.cur);
        self.text.extend_from_slice(&run[..run.len().min(room)]);
        self.append_to_window(run);
    }

    #[inline]
    fn append_to_window(&mut self, run: &[u8]) {
        if let Some(w) = &mut self.window {
            if self.replace_pending {
                self.replace_pending = false;
                w.truncate_to(self.line_start);
            }
            w.push(run);
        }
    }
}

impl Sink for LineModel {
    #[expect(
        clippy::inline_always,
        reason = "the per-run hot path; measured on the reference stream"
    )]
    #[inline(always)]
    fn text(&mut self, run: &[u8]) {
        if self.chunk.visible < 3 {
            self.chunk.visible += patterns::count_visible(run, 3 - self.chunk.visible);
        }
        self.append(run);
    }

    #[expect(
        clippy::inline_always,
        reason = "the per-run hot path; measured on the reference stream"
    )]
    #[inline(always)]
    fn text_in(&mut self, chunk: &[u8], start: usize, end: usize) {
        let run = &chunk[start..end];
        if self.chunk.visible < 3 {
            self.chunk.visible += patterns::count_visible(run, 3 - self.chunk.visible);
        }
        let room = LINE_CAP.saturating_sub(self.text.len() - self.cur);
        self.text
            .extend_from_chunk(chunk, start, run.len().min(room));
        self.append_to_window(run);
    }

    #[inline]
    fn control(&mut self, byte: u8) {
        match byte {
            b'\n' | 0x0b | 0x0c => self.line_feed(),
            b'\r' => self.carriage_return(),
            b'\t' => self.gap(),
            _ => {}
        }
    }

    #[expect(
        clippy::inline_always,
        reason = "once per cursor or erase sequence; measured on the reference stream"
    )]
    #[inline(always)]
    fn csi(&mut self, params: &[u16], private: u8, final_byte: u8) {
        if private != 0 {
            return;
        }
        let first = params.first().copied().unwrap_or(0);
        match final_byte {
            // Cursor up/down/next/previous line, absolute position, line position, scrolls.
            b'A' | b'B' | b'E' | b'F' | b'H' | b'f' | b'd' | b'S' | b'T' => self.row_change(),
            // Column 1 is a carriage return; any other column or a forward move is a gap.
            b'G' | b'`' => {
                if first <= 1 {
                    self.carriage_return();
                } else {
                    self.gap();
                }
            }
            b'C' | b'I' => self.gap(),
            // Erase the whole line (or its start): what follows redraws it.
            b'K' if first == 1 || first == 2 => self.carriage_return(),
            // Erase the screen.
            b'J' if first >= 2 => self.row_change(),
            _ => {}
        }
    }

    fn esc(&mut self, final_byte: u8) {
        match final_byte {
            // Index, next line, reverse index, full reset.
            b'D' | b'E' | b'M' | b'c' => self.row_change(),
            _ => {}
        }
    }

    fn osc(&mut self, payload: &[u8]) {
        let (code, rest) = match memchr::memchr(b';', payload) {
            Some(p) => (&payload[..p], &payload[p + 1..]),
            None => (payload, &payload[payload.len()..]),
        };
        if code == b"0" || code == b"2" {
            self.title.clear();
            self.title
                .extend_from_slice(&rest[..rest.len().min(TITLE_CAP)]);
            let (first, after) = patterns::split_first_char(&self.title);
            self.title_working =
                first.is_some_and(patterns::is_spinner_frame) && after.first() == Some(&b' ');
            self.chunk.working |= self.title_working;
        }
    }
}

#[cfg(test)]
mod tests;
