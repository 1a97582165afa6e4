//! The screen model: what is visible now, as plain lines.
//!
//! A [`Screen`] is a snapshot that profiles classify. Inside the detector, a `vt100` parser is
//! fed lazily from the detector's ring of raw output: bytes are parsed only when a decision
//! needs the screen. A session that prints slowly is therefore emulated exactly, while a flood
//! of output costs only the ring's size: when more than the ring holds arrived between two
//! decisions, the parser restarts from the bytes the ring still holds, which is enough to
//! redraw the bottom of an agent's screen.

use std::num::NonZeroU16;

use crate::ring::Ring;

/// Largest snapshot the one-shot constructors render (rows, columns).
const MAX_SNAPSHOT_ROWS: usize = 400;
const MAX_SNAPSHOT_COLS: usize = 512;

/// What a terminal shows at one moment: its visible lines (trailing spaces and trailing blank
/// lines removed) and its window title.
///
/// A screen rendered through the terminal emulator also knows which text was drawn faint
/// (dim, a grey colour, or the inverse-video cursor): agents draw input placeholders and
/// suggestions that way, and a person's typing in normal intensity, which is how a draft is
/// told from a placeholder. A screen made from plain text does not know.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Screen {
    lines: Vec<String>,
    title: String,
    /// Per line, the line with faint text blanked, when it differs from the line; empty when
    /// the screen was not rendered (attributes unknown).
    typed: Vec<Option<String>>,
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
            typed: Vec::new(),
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
        Self::render(bytes, to_u16(rows), to_u16(cols))
    }

    /// A screen from terminal output rendered at `rows` × `cols` (bare line feeds taken as new
    /// lines). Rows the terminal wrapped are joined back into one line, as `tmux
    /// capture-pane -J` does, so a status line wrapped by a narrow terminal still reads whole.
    pub fn render(bytes: &[u8], rows: u16, cols: u16) -> Self {
        let cols = cols.max(1);
        let mut parser = new_parser(rows, cols);
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
        let mut screen = Self::from_parser(&parser, cols);
        screen.title = crate::stream::title_of(bytes);
        screen
    }

    fn from_parser(parser: &vt100::Parser, cols: u16) -> Self {
        let screen = parser.screen();
        let mut lines: Vec<String> = Vec::new();
        let mut typed: Vec<String> = Vec::new();
        let mut joining = false;
        for (i, row) in screen.rows(0, cols).enumerate() {
            let r = u16::try_from(i).unwrap_or(u16::MAX);
            let typed_row = typed_row(screen, r, cols);
            match (lines.last_mut(), typed.last_mut()) {
                (Some(last), Some(last_typed)) if joining => {
                    last.push_str(&row);
                    last_typed.push_str(&typed_row);
                }
                _ => {
                    lines.push(row);
                    typed.push(typed_row);
                }
            }
            joining = screen.row_wrapped(r);
        }
        let mut out = Self::from_lines(lines);
        out.typed = typed
            .into_iter()
            .zip(&out.lines)
            .map(|(t, l)| {
                let t = t.trim_end();
                (t != l).then(|| t.to_owned())
            })
            .collect();
        out
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

    /// `true` when the screen was rendered through the terminal emulator, so which text was
    /// drawn faint is known (see [`Screen::typed_line`]).
    pub fn has_attributes(&self) -> bool {
        !self.typed.is_empty()
    }

    /// Line `i` with text drawn faint (dim, grey, or the inverse-video cursor) replaced by
    /// spaces, or `None` when the screen was not rendered and attributes are unknown.
    pub fn typed_line(&self, i: usize) -> Option<&str> {
        if self.typed.is_empty() {
            return None;
        }
        match self.typed.get(i) {
            Some(Some(t)) => Some(t),
            Some(None) => self.lines.get(i).map(String::as_str),
            None => None,
        }
    }
}

/// Row `r` as text, with cells drawn faint replaced by spaces.
fn typed_row(screen: &vt100::Screen, r: u16, cols: u16) -> String {
    let mut out = String::new();
    for c in 0..cols {
        let Some(cell) = screen.cell(r, c) else {
            break;
        };
        if cell.is_wide_continuation() {
            continue;
        }
        if !cell.has_contents() {
            out.push(' ');
        } else if is_faint(cell) {
            out.extend(cell.contents().chars().map(|_| ' '));
        } else {
            out.push_str(cell.contents());
        }
    }
    out
}

/// Whether a cell is drawn the way agents draw placeholders, suggestions and the cursor: dim,
/// inverse video, or a grey foreground.
fn is_faint(cell: &vt100::Cell) -> bool {
    cell.dim()
        || cell.inverse()
        || match cell.fgcolor() {
            vt100::Color::Default => false,
            vt100::Color::Idx(i) => matches!(i, 8 | 59 | 102 | 145 | 240..=250),
            vt100::Color::Rgb(r, g, b) => {
                let (hi, lo) = (r.max(g).max(b), r.min(g).min(b));
                let avg = (u16::from(r) + u16::from(g) + u16::from(b)) / 3;
                hi - lo <= 32 && (70..=190).contains(&avg)
            }
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

/// The detector's screen: a `vt100` parser fed lazily from the detector's raw-output ring.
pub(crate) struct ScreenModel {
    parser: vt100::Parser,
    rows: u16,
    cols: u16,
    /// Logical ring position up to which the parser has been fed.
    fed_to: u64,
    snapshot: Screen,
    stale: bool,
}

impl std::fmt::Debug for ScreenModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScreenModel")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("fed_to", &self.fed_to)
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
            fed_to: 0,
            snapshot: Screen::default(),
            stale: false,
        }
    }

    /// Notes that output arrived; nothing is parsed until [`ScreenModel::sync`].
    #[inline]
    pub(crate) fn mark_stale(&mut self) {
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

    /// The size (rows, columns).
    pub(crate) fn size(&self) -> (u16, u16) {
        (self.rows, self.cols)
    }

    /// `true` when output arrived since the last sync.
    #[cfg(test)]
    pub(crate) fn is_stale(&self) -> bool {
        self.stale
    }

    /// Parses the output the ring received since the last sync and returns the current screen.
    pub(crate) fn sync(&mut self, raw: &Ring, title: &str) -> &Screen {
        if self.stale {
            if self.fed_to < raw.start() {
                // More arrived than the ring holds: start over from what it still has.
                self.parser = new_parser(self.rows, self.cols);
                self.fed_to = raw.start();
            }
            let (a, b) = raw.slices_from(self.fed_to);
            self.parser.process(a);
            self.parser.process(b);
            self.fed_to = raw.end();
            self.snapshot = Screen::from_parser(&self.parser, self.cols);
            self.stale = false;
        }
        if self.snapshot.title != title {
            title.clone_into(&mut self.snapshot.title);
        }
        &self.snapshot
    }

    /// An estimate of the terminal grid's size in bytes.
    pub(crate) fn grid_bytes(&self) -> usize {
        usize::from(self.rows) * usize::from(self.cols) * size_of::<vt100::Cell>()
    }
}

#[cfg(test)]
mod tests;
