//! The screen model: what is visible now, as plain lines.
//!
//! A [`Screen`] is a snapshot that profiles classify. Inside the detector, a `vt100` parser is
//! fed lazily: output bytes wait in a bounded ring and are parsed only when a decision needs
//! the screen. A session that prints slowly is therefore emulated exactly, while a flood of
//! output costs only its last [`PENDING_BYTES`]: when the ring overflows between two
//! decisions, the parser restarts from the bytes the ring still holds, which is enough to
//! redraw the bottom of an agent's screen.

use std::num::NonZeroU16;

use crate::ring::Ring;

/// Raw output bytes kept for the screen between two decisions.
pub(crate) const PENDING_BYTES: usize = 32 * 1024;
/// Largest snapshot the one-shot constructors render (rows, columns).
const MAX_SNAPSHOT_ROWS: usize = 400;
const MAX_SNAPSHOT_COLS: usize = 512;

/// What a terminal shows at one moment: its visible lines (trailing spaces and trailing blank
/// lines removed) and its window title.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Screen {
    lines: Vec<String>,
    title: String,
}

impl Screen {
    /// A screen from plain lines (each already what the terminal shows).
    pub fn from_lines<I, S>(lines: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut lines: Vec<String> = lines
            .into_iter()
            .map(|l| {
                let l: String = l.into();
                l.trim_end().to_owned()
            })
            .collect();
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        Self {
            lines,
            title: String::new(),
        }
    }

    /// A screen from a saved snapshot: plain text, or terminal output with escape sequences,
    /// which is rendered through a terminal emulator sized to fit it. Bare line feeds are
    /// taken as new lines (files saved from a terminal rarely keep the carriage returns).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let needs_terminal = memchr::memchr(0x1b, bytes).is_some() || has_lone_cr(bytes);
        if !needs_terminal {
            let text = String::from_utf8_lossy(bytes);
            return Self::from_lines(text.split('\n'));
        }
        let text = String::from_utf8_lossy(bytes);
        let line_count = text.split('\n').count();
        let widest = text
            .split('\n')
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0);
        let rows = (line_count + 2).clamp(24, MAX_SNAPSHOT_ROWS);
        let cols = widest.clamp(80, MAX_SNAPSHOT_COLS);
        let mut parser = new_parser(to_u16(rows), to_u16(cols));
        let mut previous = 0u8;
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' && previous != b'\r' {
                parser.process(&bytes[start..i]);
                parser.process(b"\r\n");
                start = i + 1;
            }
            previous = b;
        }
        parser.process(&bytes[start..]);
        let mut screen = Self::from_parser(&parser, to_u16(cols));
        screen.title = crate::stream::title_of(bytes);
        screen
    }

    fn from_parser(parser: &vt100::Parser, cols: u16) -> Self {
        Self::from_lines(parser.screen().rows(0, cols))
    }

    /// The visible lines, top to bottom.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The window title last set by the program (OSC 0 or 2), or `""`.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The lines joined with `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }
}

fn has_lone_cr(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'\r', bytes).any(|p| bytes.get(p + 1) != Some(&b'\n'))
}

fn to_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn new_parser(rows: u16, cols: u16) -> vt100::Parser {
    let rows = NonZeroU16::new(rows).unwrap_or(NonZeroU16::MIN);
    let cols = NonZeroU16::new(cols).unwrap_or(NonZeroU16::MIN);
    vt100::Parser::new(rows, cols, 0)
}

/// The detector's screen: a `vt100` parser fed lazily from a bounded ring of raw output.
pub(crate) struct ScreenModel {
    parser: vt100::Parser,
    rows: u16,
    cols: u16,
    pending: Ring,
    /// Bytes were dropped from `pending` since the last sync: the parser must restart.
    lost: bool,
    snapshot: Screen,
    stale: bool,
}

impl std::fmt::Debug for ScreenModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScreenModel")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("pending", &self.pending.len())
            .field("lost", &self.lost)
            .field("stale", &self.stale)
            .finish_non_exhaustive()
    }
}

impl ScreenModel {
    /// A screen of `rows` × `cols`.
    pub(crate) fn new(rows: u16, cols: u16) -> Self {
        let rows = rows.max(1);
        let cols = cols.max(1);
        Self {
            parser: new_parser(rows, cols),
            rows,
            cols,
            pending: Ring::new(PENDING_BYTES),
            lost: false,
            snapshot: Screen::default(),
            stale: false,
        }
    }

    /// Queues output for the screen; nothing is parsed until [`ScreenModel::sync`].
    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.pending.len() + bytes.len() > self.pending.capacity() {
            self.lost = true;
        }
        self.pending.push(bytes);
        self.stale = true;
    }

    /// Changes the terminal size (the next sync re-renders).
    pub(crate) fn resize(&mut self, rows: u16, cols: u16) {
        self.rows = rows.max(1);
        self.cols = cols.max(1);
        let r = NonZeroU16::new(self.rows).unwrap_or(NonZeroU16::MIN);
        let c = NonZeroU16::new(self.cols).unwrap_or(NonZeroU16::MIN);
        self.parser.screen_mut().set_size(r, c);
        self.stale = true;
    }

    /// `true` when output arrived since the last sync.
    pub(crate) fn is_stale(&self) -> bool {
        self.stale
    }

    /// Parses the queued output and returns the current screen.
    pub(crate) fn sync(&mut self, title: &str) -> &Screen {
        if self.stale {
            if self.lost {
                self.parser = new_parser(self.rows, self.cols);
                self.lost = false;
            }
            let (a, b) = self.pending.as_slices();
            self.parser.process(a);
            self.parser.process(b);
            self.pending.clear();
            self.snapshot = Screen::from_parser(&self.parser, self.cols);
            self.stale = false;
        }
        if self.snapshot.title != title {
            title.clone_into(&mut self.snapshot.title);
        }
        &self.snapshot
    }

    /// Heap bytes held outside the terminal grid (the pending ring).
    pub(crate) fn pending_bytes(&self) -> usize {
        self.pending.capacity()
    }

    /// An estimate of the terminal grid's size in bytes.
    pub(crate) fn grid_bytes(&self) -> usize {
        usize::from(self.rows) * usize::from(self.cols) * size_of::<vt100::Cell>()
    }
}

#[cfg(test)]
mod tests;
