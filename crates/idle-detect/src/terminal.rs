//! A streaming tokenizer for terminal output: text runs, C0 controls, CSI, OSC and string
//! sequences, with state carried across reads so a sequence split between two chunks is
//! still recognised.
//!
//! The tokenizer never allocates per byte and keeps bounded state: CSI parameters are capped,
//! OSC payloads are kept up to [`OSC_KEEP`] bytes, and a string sequence (OSC, DCS, APC, PM,
//! SOS) that never terminates is abandoned after [`STRING_LIMIT`] bytes so hostile or broken
//! output cannot swallow everything that follows. UTF-8 is not decoded here: text runs are
//! passed on as bytes, so a character split across reads is rejoined by whoever appends the
//! runs (see `stream.rs`).

use crate::scan::find_c0;

/// OSC payload bytes kept for the sink (window titles are short; the rest is dropped).
pub(crate) const OSC_KEEP: usize = 512;
/// A string sequence longer than this is abandoned and the parser returns to text.
pub(crate) const STRING_LIMIT: usize = 64 * 1024;
/// A CSI sequence longer than this is abandoned.
const CSI_LIMIT: usize = 256;
/// CSI parameters kept; further parameters are ignored.
const MAX_PARAMS: usize = 8;

/// Receives the tokens of a terminal byte stream.
pub(crate) trait Sink {
    /// `false` lets the tokenizer skip SGR and private-mode CSIs (`…m`, `ESC[?…`) without
    /// reporting them, the line model's case; tests that record everything say `true`.
    const WANTS_ALL_CSI: bool = false;

    /// A run of printable bytes (no C0 control); may contain UTF-8 multi-byte sequences, possibly
    /// cut at either end when a character straddles two reads.
    fn text(&mut self, run: &[u8]);
    /// The text run `chunk[start..end]`, for sinks that copy runs faster knowing the bytes
    /// around them; the same as [`Sink::text`] otherwise.
    #[inline]
    fn text_in(&mut self, chunk: &[u8], start: usize, end: usize) {
        self.text(&chunk[start..end]);
    }
    /// A C0 control byte other than ESC, CAN and SUB (`\r`, `\n`, `\b`, `\t`, BEL, NUL, …).
    fn control(&mut self, byte: u8);
    /// A complete CSI sequence. `private` is the leading `?`, `<`, `=` or `>` (or 0).
    fn csi(&mut self, params: &[u16], private: u8, final_byte: u8);
    /// A complete escape sequence `ESC <final>` (for example `ESC 7`, `ESC M`).
    fn esc(&mut self, final_byte: u8);
    /// A complete OSC sequence; `payload` holds at most [`OSC_KEEP`] bytes.
    fn osc(&mut self, payload: &[u8]);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    Escape,
    EscIntermediate,
    Csi,
    Osc,
    OscEscape,
    Str,
    StrEscape,
}

/// The tokenizer's state, carried from one chunk to the next.
#[derive(Debug, Clone)]
pub(crate) struct Tokenizer {
    state: State,
    params: [u16; MAX_PARAMS],
    nparams: usize,
    current: u32,
    has_current: bool,
    private: u8,
    seq_len: usize,
    osc: Vec<u8>,
}

impl Default for Tokenizer {
    fn default() -> Self {
        Self {
            state: State::Ground,
            params: [0; MAX_PARAMS],
            nparams: 0,
            current: 0,
            has_current: false,
            private: 0,
            seq_len: 0,
            osc: Vec::with_capacity(OSC_KEEP),
        }
    }
}

impl Tokenizer {
    /// Bytes of heap state held (the OSC buffer).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.osc.capacity()
    }

    /// `true` when the tokenizer is between sequences (nothing carried over).
    #[cfg(test)]
    pub(crate) fn is_ground(&self) -> bool {
        self.state == State::Ground
    }

    /// Tokenizes `bytes`, continuing any sequence left open by the previous call.
    pub(crate) fn feed<S: Sink>(&mut self, bytes: &[u8], sink: &mut S) {
        let len = bytes.len();
        let mut i = 0;
        loop {
            // A sequence left open (by the last chunk, or one the fast path below does not
            // finish) goes byte by byte until the parser is back in the ground state.
            while self.state != State::Ground {
                let Some(&b) = bytes.get(i) else {
                    return;
                };
                i += 1;
                self.step(b, sink);
            }
            // The ground state: text runs, controls and complete CSIs, found in bulk.
            loop {
                if i >= len {
                    return;
                }
                // Sequences often follow each other (`ESC[2K ESC[1A`, `\r\n`): check the next
                // byte before starting a scan.
                let next = if bytes[i] < 0x20 {
                    Some(0)
                } else {
                    find_c0(&bytes[i..])
                };
                let Some(n) = next else {
                    sink.text_in(bytes, i, len);
                    return;
                };
                if n > 0 {
                    sink.text_in(bytes, i, i + n);
                }
                i += n;
                let b = bytes[i];
                i += 1;
                if b == 0x1b {
                    // Most sequences are short CSIs that end in this chunk: parse those in one
                    // tight loop instead of byte by byte.
                    if let Some(n) = fast_csi(&bytes[i..], sink) {
                        i += n;
                    } else {
                        self.enter_escape();
                        break;
                    }
                } else if b != 0x18 && b != 0x1a {
                    sink.control(b);
                }
            }
        }
    }

    fn enter_escape(&mut self) {
        self.state = State::Escape;
        self.seq_len = 0;
    }

    fn step<S: Sink>(&mut self, b: u8, sink: &mut S) {
        match self.state {
            State::Ground => unreachable!("ground bytes are handled in bulk"),
            State::Escape => match b {
                b'[' => {
                    self.state = State::Csi;
                    self.nparams = 0;
                    self.current = 0;
                    self.has_current = false;
                    self.private = 0;
                    self.seq_len = 0;
                }
                b']' => {
                    self.state = State::Osc;
                    self.osc.clear();
                    self.seq_len = 0;
                }
                b'P' | b'X' | b'^' | b'_' => {
                    self.state = State::Str;
                    self.seq_len = 0;
                }
                0x1b => {}
                0x18 | 0x1a => self.state = State::Ground,
                0x20..=0x2f => self.state = State::EscIntermediate,
                0x30..=0x7e => {
                    self.state = State::Ground;
                    sink.esc(b);
                }
                0x00..=0x1f => sink.control(b),
                _ => {
                    // Not a sequence after all: the byte is text (DEL or part of a character).
                    self.state = State::Ground;
                    sink.text(&[b]);
                }
            },
            State::EscIntermediate => match b {
                0x20..=0x2f => self.bump_or_abort(),
                0x1b => self.enter_escape(),
                0x00..=0x1f => {
                    if b == 0x18 || b == 0x1a {
                        self.state = State::Ground;
                    } else {
                        sink.control(b);
                    }
                }
                // Charset designations and the like: nothing a detector needs.
                _ => self.state = State::Ground,
            },
            State::Csi => self.csi_byte(b, sink),
            State::Osc => match b {
                0x07 => self.finish_osc(sink),
                0x1b => self.state = State::OscEscape,
                0x18 | 0x1a => self.state = State::Ground,
                _ => {
                    if self.osc.len() < OSC_KEEP {
                        self.osc.push(b);
                    }
                    self.bump_or_abort();
                }
            },
            State::OscEscape => {
                if b == b'\\' {
                    self.finish_osc(sink);
                } else {
                    // An ESC that is not ST ends the OSC and starts a new sequence.
                    self.finish_osc(sink);
                    self.enter_escape();
                    self.step(b, sink);
                }
            }
            State::Str => match b {
                0x1b => self.state = State::StrEscape,
                0x07 | 0x18 | 0x1a => self.state = State::Ground,
                _ => self.bump_or_abort(),
            },
            State::StrEscape => {
                if b == b'\\' {
                    self.state = State::Ground;
                } else {
                    self.enter_escape();
                    self.step(b, sink);
                }
            }
        }
    }

    fn csi_byte<S: Sink>(&mut self, b: u8, sink: &mut S) {
        match b {
            b'0'..=b'9' => {
                self.current = (self.current * 10 + u32::from(b - b'0')).min(u32::from(u16::MAX));
                self.has_current = true;
                self.bump_or_abort();
            }
            b';' | b':' => {
                self.push_param();
                self.bump_or_abort();
            }
            b'<'..=b'?' => {
                if self.nparams == 0 && !self.has_current && self.private == 0 {
                    self.private = b;
                }
                self.bump_or_abort();
            }
            0x20..=0x2f => self.bump_or_abort(),
            0x40..=0x7e => {
                if self.has_current || self.nparams > 0 {
                    self.push_param();
                }
                self.state = State::Ground;
                let n = self.nparams;
                sink.csi(&self.params[..n], self.private, b);
            }
            0x1b => self.enter_escape(),
            0x18 | 0x1a => self.state = State::Ground,
            0x00..=0x1f => sink.control(b),
            _ => {
                self.state = State::Ground;
                sink.text(&[b]);
            }
        }
    }

    fn push_param(&mut self) {
        if self.nparams < MAX_PARAMS {
            // The value was clamped to `u16::MAX` as it was accumulated.
            self.params[self.nparams] = u16::try_from(self.current).unwrap_or(u16::MAX);
            self.nparams += 1;
        }
        self.current = 0;
        self.has_current = false;
    }

    fn bump_or_abort(&mut self) {
        self.seq_len += 1;
        let limit = match self.state {
            State::Csi | State::EscIntermediate => CSI_LIMIT,
            _ => STRING_LIMIT,
        };
        if self.seq_len > limit {
            self.state = State::Ground;
        }
    }

    fn finish_osc<S: Sink>(&mut self, sink: &mut S) {
        self.state = State::Ground;
        sink.osc(&self.osc);
        self.osc.clear();
    }
}

/// Parses a complete, well-formed CSI at the start of `rest` (the bytes after ESC) and
/// dispatches it; `None` (nothing consumed) when it is incomplete or unusual, so the state
/// machine takes over. SGR (`…m`) and private-mode sequences (`ESC[?25l`, DEC 2026) are most of
/// what an agent prints and never matter to the line model: they are skipped unparsed.
#[expect(
    clippy::inline_always,
    reason = "once per escape sequence; measured on the reference stream"
)]
#[inline(always)]
fn fast_csi<S: Sink>(rest: &[u8], sink: &mut S) -> Option<usize> {
    if rest.first() != Some(&b'[') {
        return None;
    }
    let (j, final_byte) = if let Some(n) = crate::scan::param_len(&rest[1..]) {
        // `param_len` checked that a final byte follows the parameters.
        (n + 1, rest[n + 1])
    } else {
        let limit = rest.len().min(CSI_LIMIT);
        let mut j = 1;
        while j < limit && (0x20..=0x3f).contains(&rest[j]) {
            j += 1;
        }
        if j >= limit || !(0x40..=0x7e).contains(&rest[j]) {
            return None;
        }
        (j, rest[j])
    };
    if final_byte == b'm' && !S::WANTS_ALL_CSI {
        return Some(j + 1);
    }
    let body = &rest[1..j];
    let private = match body.first() {
        Some(&b @ b'<'..=b'?') => b,
        _ => 0,
    };
    if final_byte == b'm' || private != 0 {
        if S::WANTS_ALL_CSI {
            let mut params = [0u16; MAX_PARAMS];
            let n = parse_params(if private != 0 { &body[1..] } else { body }, &mut params);
            sink.csi(&params[..n], private, final_byte);
        }
        return Some(j + 1);
    }
    let mut params = [0u16; MAX_PARAMS];
    let n = parse_params(body, &mut params);
    sink.csi(&params[..n], 0, final_byte);
    Some(j + 1)
}

/// Parses `1;2:3` parameter bytes (intermediates ignored) into `params`; returns the count.
fn parse_params(body: &[u8], params: &mut [u16; MAX_PARAMS]) -> usize {
    let mut n = 0;
    let mut current: u32 = 0;
    let mut has_current = false;
    for &b in body {
        match b {
            b'0'..=b'9' => {
                current = (current * 10 + u32::from(b - b'0')).min(u32::from(u16::MAX));
                has_current = true;
            }
            b';' | b':' => {
                if n < MAX_PARAMS {
                    params[n] = u16::try_from(current).unwrap_or(u16::MAX);
                    n += 1;
                }
                current = 0;
                has_current = false;
            }
            _ => {}
        }
    }
    if (has_current || n > 0) && n < MAX_PARAMS {
        params[n] = u16::try_from(current).unwrap_or(u16::MAX);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests;
