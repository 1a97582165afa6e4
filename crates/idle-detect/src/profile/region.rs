//! The region model: where the live part of a screen is, and the texts rules look at.
//!
//! An agent's screen is a transcript (history) with a live area at the bottom: the last input
//! prompt, the status lines drawn just above it and the footer below it. [`Analysis`] finds the
//! prompt (the last line the layout's `prompt` pattern matches near the bottom, not a menu
//! selector, not followed by transcript), the box around it (the layout's `rule` lines), and
//! then the live region:
//!
//! - `above`: walking up from the box over blank lines, stopping at a `boundary` line (the
//!   transcript: a response bullet, an earlier box), after a `turn_end` line (a completion
//!   line, which is kept), at a line that `live_line` does not accept, or after `above_lines`
//!   counted lines (indented detail lines are not counted); rows of the composer the layout
//!   names (`pass`: a divider, a mode row) and the status row (`status`) are crossed and
//!   kept, wherever they are;
//! - `adjacent`: the block of lines directly on top of the box, with no blank line between or
//!   inside, unless it reaches up to a boundary: where a dialog drawn above a prompt box still
//!   belongs to the present;
//! - `below_prompt`: everything under the box (footers, menus);
//! - `tail`, when no prompt is on screen: walking up from the last line to the first
//!   `tail_boundary` (or `boundary`) line, or through a `turn_end` line, at most `tail_lines`
//!   non-blank lines;
//! - `live`: `above`, the box and what is below it, or `tail` without a prompt;
//! - `turn`: the transcript of the turn in progress, from the last submitted message
//!   (`turn_start`, not included) down to the box, or from the last line that ends a turn
//!   (`turn_end`, included) when one comes first: an answer that streams below the last
//!   message with no turn end under it is work, whether or not a status row is drawn. It
//!   exists only when the turn's start is on screen or the transcript above the box reaches
//!   the top of the screen (the message scrolled off).
//!
//! Matchers see lines with box borders (`│`, `┃`, `║`) removed from both ends, so an option
//! drawn inside a box (`│ ❯ 1. Yes │`) reads like one drawn without.

use std::borrow::Cow;
use std::cell::OnceCell;

use regex::Regex;

use crate::screen::Screen;

/// How many non-blank lines a region without a prompt falls back to (legacy regions).
const FALLBACK_LINES: usize = 40;
/// How many rows of a multi-line input box are searched for its bottom rule.
const INPUT_ROWS: usize = 12;
/// The most lines (counted or not) the `above` walk looks at.
const ABOVE_SCAN: usize = 60;
/// Consecutive blank lines that end the `above` walk: the live area is drawn compactly.
const ABOVE_GAP: usize = 4;

/// A screen region a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Region {
    Screen,
    Bottom(usize),
    Top(usize),
    Prompt,
    PromptText,
    PromptBox,
    Status,
    Above,
    Adjacent,
    AbovePrompt(usize),
    BelowPrompt,
    LineAbovePrompt,
    AfterPrompt,
    SinceMarker,
    Turn,
    Tail,
    Live,
    Title,
}

impl Region {
    /// Parses a region name as written in a profile (`bottom 5`, `live`, `prompt_text`).
    pub(super) fn parse(s: &str) -> Option<Self> {
        let mut parts = s.split_whitespace();
        let name = parts.next()?;
        let n = parts.next().map(str::parse::<usize>);
        if parts.next().is_some() {
            return None;
        }
        let count = |default: usize| -> Option<usize> {
            match n {
                None => Some(default),
                Some(Ok(v)) if v > 0 => Some(v),
                Some(_) => None,
            }
        };
        let plain = |r: Region| n.is_none().then_some(r);
        match name {
            "screen" => plain(Self::Screen),
            "bottom" => count(12).map(Self::Bottom),
            "top" => count(12).map(Self::Top),
            "last_line" => plain(Self::Bottom(1)),
            "prompt" => plain(Self::Prompt),
            "prompt_text" => plain(Self::PromptText),
            "prompt_box" => plain(Self::PromptBox),
            "status" => plain(Self::Status),
            "above" => plain(Self::Above),
            "adjacent" => plain(Self::Adjacent),
            "above_prompt" => count(3).map(Self::AbovePrompt),
            "below_prompt" => plain(Self::BelowPrompt),
            "line_above_prompt" => plain(Self::LineAbovePrompt),
            "after_prompt" => plain(Self::AfterPrompt),
            "since_marker" => plain(Self::SinceMarker),
            "turn" => plain(Self::Turn),
            "tail" => plain(Self::Tail),
            "live" => plain(Self::Live),
            "title" => plain(Self::Title),
            _ => None,
        }
    }

    /// The region's name as written in a profile.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Screen => "screen",
            Self::Bottom(_) => "bottom",
            Self::Top(_) => "top",
            Self::Prompt => "prompt",
            Self::PromptText => "prompt_text",
            Self::PromptBox => "prompt_box",
            Self::Status => "status",
            Self::Above => "above",
            Self::Adjacent => "adjacent",
            Self::AbovePrompt(_) => "above_prompt",
            Self::BelowPrompt => "below_prompt",
            Self::LineAbovePrompt => "line_above_prompt",
            Self::AfterPrompt => "after_prompt",
            Self::SinceMarker => "since_marker",
            Self::Turn => "turn",
            Self::Tail => "tail",
            Self::Live => "live",
            Self::Title => "title",
        }
    }
}

/// How a profile's screen is laid out (the `[layout]` table, compiled).
#[derive(Debug, Clone, Default)]
pub(super) struct Layout {
    pub(super) prompt: Option<Regex>,
    pub(super) not_prompt: Option<Regex>,
    pub(super) rule: Option<Regex>,
    pub(super) marker: Option<Regex>,
    pub(super) stop: Option<Regex>,
    pub(super) detail: Option<Regex>,
    pub(super) boundary: Option<Regex>,
    pub(super) tail_boundary: Option<Regex>,
    pub(super) turn_end: Option<Regex>,
    pub(super) live_line: Option<Regex>,
    /// Rows of the composer between the status and the input (a divider, a mode row, a
    /// shortcuts hint) that the `above` walk crosses: they are live, and no end of it.
    pub(super) pass: Option<Regex>,
    /// A status row (the working indicator): live wherever the `above` walk meets it, even
    /// indented under a transcript line.
    pub(super) status: Option<Regex>,
    /// A submitted message in the transcript: where the turn in progress starts.
    pub(super) turn_start: Option<Regex>,
    pub(super) boxed_input: bool,
    pub(super) prompt_within: usize,
    pub(super) above_lines: usize,
    pub(super) tail_lines: usize,
}

fn matches(re: Option<&Regex>, s: &str) -> bool {
    re.is_some_and(|r| r.is_match(s))
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Removes box borders (`│`, `┃`, `║`, `|` followed by a space) from both ends of a line,
/// repeatedly, so text inside nested boxes reads like unboxed text.
pub(super) fn strip_borders(s: &str) -> &str {
    const BORDERS: [char; 3] = ['│', '┃', '║'];
    let mut t = s;
    loop {
        if let Some(rest) = t.trim_start().strip_prefix(BORDERS) {
            t = rest.strip_prefix(' ').unwrap_or(rest);
        } else if let Some(rest) = t.trim_end().strip_suffix(BORDERS) {
            t = rest;
        } else {
            return t;
        }
    }
}

/// Lower-cases, removes box borders and collapses whitespace (line breaks included).
pub(super) fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() || matches!(c, '│' | '┃' | '║') {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Where the prompt, its box, the status line, the marker and the live region are on one
/// screen.
pub(super) struct Analysis<'s> {
    screen: &'s Screen,
    lines: &'s [String],
    title: &'s str,
    prompt: Option<usize>,
    /// Byte offset in the prompt row where the typed text starts.
    prompt_text_at: usize,
    box_top: Option<usize>,
    box_bottom: Option<usize>,
    status: Option<usize>,
    /// The row above the status line when the status line is the wrapped rest of it.
    status_head: Option<usize>,
    marker: Option<usize>,
    /// Rows of the `above` region, top to bottom.
    above: Vec<usize>,
    /// Rows of the `adjacent` region, top to bottom.
    adjacent: Vec<usize>,
    /// Rows of the `tail` region (only without a prompt), top to bottom.
    tail: Vec<usize>,
    /// Rows of the `turn` region, when it exists.
    turn: Option<std::ops::Range<usize>>,
}

impl<'s> Analysis<'s> {
    pub(super) fn new(layout: &Layout, screen: &'s Screen) -> Self {
        let lines = screen.lines();
        let title = screen.title();
        let (mut prompt, mut prompt_text_at) = find_prompt(layout, lines);
        let near_rule = |from: usize, up: bool| -> Option<usize> {
            let mut i = from;
            for _ in 0..3 {
                i = if up { i.checked_sub(1)? } else { i + 1 };
                let l = lines.get(i)?;
                if matches(layout.rule.as_ref(), l) {
                    return Some(i);
                }
                if !is_blank(l) {
                    return None;
                }
            }
            None
        };
        let mut box_top = prompt.and_then(|p| near_rule(p, true));
        // A multi-line input keeps its text between the prompt row and the bottom rule.
        let mut box_bottom = match (prompt, box_top) {
            (Some(p), Some(_)) => (p + 1..lines.len().min(p + 1 + INPUT_ROWS))
                .find(|&i| matches(layout.rule.as_ref(), &lines[i])),
            (Some(p), None) => near_rule(p, false),
            _ => None,
        };
        // A rule wider than the terminal, hard-wrapped by a capture, is several rule rows.
        let is_rule = |i: usize| matches(layout.rule.as_ref(), &lines[i]);
        while let Some(t) = box_top
            && t > 0
            && is_rule(t - 1)
        {
            box_top = Some(t - 1);
        }
        while let Some(b) = box_bottom
            && b + 1 < lines.len()
            && is_rule(b + 1)
        {
            box_bottom = Some(b + 1);
        }
        if prompt.is_none()
            && layout.boxed_input
            && let Some((x, top, bottom)) = find_boxed_input(layout, lines)
        {
            prompt = Some(x);
            prompt_text_at = 0;
            box_top = Some(top);
            box_bottom = Some(bottom);
        }
        let status = prompt.and_then(|p| {
            let start = box_top.unwrap_or(p);
            // Rules are never the status line: a wide rule hard-wrapped by a narrow terminal
            // leaves several rule rows above the box.
            (0..start).rev().take(40).find(|&i| {
                let l = &lines[i];
                !is_blank(l)
                    && !matches(layout.detail.as_ref(), l)
                    && !matches(layout.rule.as_ref(), l)
            })
        });
        let status_head = status.and_then(|s| status_head(lines, s));
        let marker = lines
            .iter()
            .rposition(|l| matches(layout.marker.as_ref(), l));
        let turn = prompt.and_then(|p| walk_turn(layout, lines, box_top.unwrap_or(p)));
        let (above, adjacent, tail) = match prompt {
            Some(p) => {
                let start = box_top.unwrap_or(p);
                (
                    walk_above(layout, lines, start),
                    walk_adjacent(layout, lines, start),
                    Vec::new(),
                )
            }
            None => (Vec::new(), Vec::new(), walk_tail(layout, lines)),
        };
        Self {
            screen,
            lines,
            title,
            prompt,
            prompt_text_at,
            box_top,
            box_bottom,
            status,
            status_head,
            marker,
            above,
            adjacent,
            tail,
            turn,
        }
    }

    /// `true` when an input prompt was found.
    pub(super) fn has_prompt(&self) -> bool {
        self.prompt.is_some()
    }

    /// `true` when the screen carries rendering attributes (faint text is known).
    pub(super) fn rendered(&self) -> bool {
        self.screen.has_attributes()
    }

    /// The lines of `region`, or `None` when the region does not exist on this screen.
    pub(super) fn region(&self, region: Region) -> Option<RegionText<'s>> {
        let lines = self.lines;
        let rows =
            |idx: &[usize]| -> Vec<&'s str> { idx.iter().map(|&i| lines[i].as_str()).collect() };
        let non_empty_from_bottom = |range: std::ops::Range<usize>, n: usize| -> Vec<&'s str> {
            let mut v: Vec<&str> = lines[range]
                .iter()
                .rev()
                .filter(|l| !is_blank(l))
                .take(n)
                .map(String::as_str)
                .collect();
            v.reverse();
            v
        };
        let slice = |range: std::ops::Range<usize>| -> Vec<&'s str> {
            lines[range].iter().map(String::as_str).collect()
        };
        let after_box = |p: usize| self.box_bottom.unwrap_or(p) + 1;
        let v = match region {
            Region::Screen => slice(0..lines.len()),
            Region::Bottom(n) => non_empty_from_bottom(0..lines.len(), n),
            Region::Top(n) => lines
                .iter()
                .filter(|l| !is_blank(l))
                .take(n)
                .map(String::as_str)
                .collect(),
            Region::Prompt => vec![lines[self.prompt?].as_str()],
            Region::PromptText => return Some(RegionText::owned(self.prompt_text()?)),
            Region::PromptBox => {
                let p = self.prompt?;
                slice(self.box_top.unwrap_or(p)..after_box(p))
            }
            Region::Status => {
                let s = self.status?;
                // Ink word-wraps a long status line and indents the rest under its text:
                // read the rows as one.
                if let Some(head) = self.status_head {
                    let rows: Vec<&str> = (head..=s).map(|i| lines[i].trim_start()).collect();
                    return Some(RegionText::owned(rows.join(" ")));
                }
                vec![lines[s].as_str()]
            }
            Region::Above => {
                self.prompt?;
                rows(&self.above)
            }
            Region::Adjacent => {
                self.prompt?;
                rows(&self.adjacent)
            }
            Region::AbovePrompt(n) => {
                let p = self.prompt?;
                non_empty_from_bottom(0..self.box_top.unwrap_or(p), n)
            }
            Region::BelowPrompt => {
                let p = self.prompt?;
                slice(after_box(p)..lines.len())
            }
            Region::LineAbovePrompt => vec![lines[self.prompt?.checked_sub(1)?].as_str()],
            Region::AfterPrompt => match self.prompt {
                Some(p) => slice(p + 1..lines.len()),
                None => non_empty_from_bottom(0..lines.len(), FALLBACK_LINES),
            },
            Region::SinceMarker => match self.marker {
                Some(m) => slice(m + 1..lines.len()),
                None => non_empty_from_bottom(0..lines.len(), FALLBACK_LINES),
            },
            Region::Turn => slice(self.turn.clone()?),
            Region::Tail => {
                if self.prompt.is_some() {
                    return None;
                }
                rows(&self.tail)
            }
            Region::Live => match self.prompt {
                Some(p) => {
                    let mut v = rows(&self.above);
                    v.extend(slice(self.box_top.unwrap_or(p)..lines.len()));
                    v
                }
                None => rows(&self.tail),
            },
            Region::Title => {
                if self.title.is_empty() {
                    return None;
                }
                vec![self.title]
            }
        };
        Some(RegionText::new(v))
    }

    /// What is typed into the input: the prompt row after its glyph, and the rows of a
    /// multi-line input box, without borders. `None` when there is no prompt.
    ///
    /// On a rendered screen, text drawn faint (placeholders, suggestions, the cursor) is left
    /// out: what remains is what a person typed.
    fn prompt_text(&self) -> Option<String> {
        let p = self.prompt?;
        let row = |i: usize| self.screen.typed_line(i).unwrap_or(&self.lines[i]);
        // The prompt glyph's end, as a character count (the typed row may differ in bytes).
        let glyph_chars = self.lines[p]
            .get(..self.prompt_text_at)
            .map_or(0, |s| s.chars().count());
        let first: String = row(p).chars().skip(glyph_chars).collect();
        let mut text = strip_borders(&first).trim().to_owned();
        if self.box_top.is_some()
            && let Some(bottom) = self.box_bottom
        {
            for i in p + 1..bottom {
                let r = strip_borders(row(i)).trim();
                if !r.is_empty() {
                    text.push('\n');
                    text.push_str(r);
                }
            }
        }
        Some(text)
    }
}

/// The last line the layout's `prompt` pattern accepts within `prompt_within` non-blank lines
/// of the bottom (not past a `stop` line), and where its typed text starts.
fn find_prompt(layout: &Layout, lines: &[String]) -> (Option<usize>, usize) {
    let mut seen = 0;
    for (i, l) in lines.iter().enumerate().rev() {
        if is_blank(l) {
            continue;
        }
        if let Some(re) = &layout.prompt
            && let Some(m) = re.find(l)
            && !matches(layout.not_prompt.as_ref(), l)
        {
            return (Some(i), m.end());
        }
        if matches(layout.stop.as_ref(), l) {
            break;
        }
        seen += 1;
        if seen >= layout.prompt_within {
            break;
        }
    }
    (None, 0)
}

/// A single line enclosed by two rules near the bottom, taken for the input box when no
/// prompt line is found: its row, the top rule's and the bottom rule's. Not a box with a
/// `stop` line (a dialog's selected option or footer) below it: that is the dialog's own box,
/// such as Claude Code's command preview between `╌` rules, seen alone when a shrinking
/// window cuts the dialog's options off.
fn find_boxed_input(layout: &Layout, lines: &[String]) -> Option<(usize, usize, usize)> {
    let is_rule = |i: usize| matches(layout.rule.as_ref(), &lines[i]);
    let mut bottom: Vec<usize> = (0..lines.len())
        .rev()
        .filter(|&i| !is_blank(&lines[i]))
        .take(5)
        .collect();
    if let Some(stop) = bottom
        .iter()
        .position(|&i| matches(layout.stop.as_ref(), &lines[i]))
    {
        bottom.truncate(stop);
    }
    bottom.windows(3).find_map(|w| {
        let (r2, x, r1) = (w[0], w[1], w[2]);
        (is_rule(r2) && is_rule(r1) && !is_rule(x)).then_some((x, r1, r2))
    })
}

/// Ink word-wraps a long status line and indents the rest under its text: walks up over such
/// continuation rows to the glyph that starts the line.
fn status_head(lines: &[String], s: usize) -> Option<usize> {
    let is_continuation = |l: &str| {
        let indent = l.len() - l.trim_start().len();
        (1..=3).contains(&indent)
            && !l
                .trim_start()
                .chars()
                .next()
                .is_some_and(crate::patterns::is_status_glyph)
    };
    let mut k = s;
    for _ in 0..4 {
        if !is_continuation(&lines[k]) {
            return None;
        }
        let above = k.checked_sub(1)?;
        let head = lines[above].as_str();
        if head
            .chars()
            .next()
            .is_some_and(crate::patterns::is_status_glyph)
        {
            return Some(above);
        }
        k = above;
    }
    None
}

/// The screen's width as far as the lines tell: the longest line (rules are drawn across the
/// whole width). Below 40 columns no row is taken as hard-wrapped.
fn text_width(lines: &[String]) -> usize {
    lines.iter().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Row `i` is the rest of the row above it, split by a capture that did not join wrapped rows:
/// the row above fills the whole width.
fn hard_wrapped(lines: &[String], width: usize, i: usize) -> bool {
    width >= 40
        && i > 0
        && !is_blank(&lines[i])
        // The row above was cut at the width; trimming may have dropped a space or two.
        && lines[i - 1].chars().count() + 2 >= width
        && !lines[i - 1].trim_start().starts_with(['─', '━', '═', '▀', '▄', '╌'])
}

/// An indented row hangs off the row it is indented under (a wrapped status line and its
/// details, a response's paragraphs, a tool's output): whether it is live depends on that row.
fn hangs(l: &str) -> bool {
    l.starts_with(char::is_whitespace)
}

/// The `above` region: rows above `start`, top to bottom.
///
/// Indented rows are held until the row they hang off is known: under a transcript line
/// (`boundary`) or a row that is not live they are the transcript too, and the walk ends there.
fn walk_above(layout: &Layout, lines: &[String], start: usize) -> Vec<usize> {
    let width = text_width(lines);
    let mut rows = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    let mut counted = 0;
    let mut gap = 0;
    for i in (0..start).rev().take(ABOVE_SCAN) {
        let l = &lines[i];
        if is_blank(l) {
            gap += 1;
            if gap >= ABOVE_GAP {
                break;
            }
            continue;
        }
        gap = 0;
        if matches(layout.pass.as_ref(), l) || matches(layout.status.as_ref(), l) {
            // The composer's own rows, and the status row, whatever hangs above them: the rows
            // held below one are live too.
            rows.append(&mut pending);
            rows.push(i);
            continue;
        }
        if matches(layout.boundary.as_ref(), l) || matches(layout.rule.as_ref(), l) {
            pending.clear();
            break;
        }
        if (hangs(l) || hard_wrapped(lines, width, i)) && !matches(layout.turn_end.as_ref(), l) {
            pending.push(i);
            if pending.len() > ABOVE_SCAN / 2 {
                break;
            }
            continue;
        }
        if layout.live_line.as_ref().is_some_and(|re| !re.is_match(l))
            && !matches(layout.turn_end.as_ref(), l)
        {
            pending.clear();
            break;
        }
        rows.append(&mut pending);
        rows.push(i);
        if matches(layout.turn_end.as_ref(), l) {
            break;
        }
        if !matches(layout.detail.as_ref(), l) {
            counted += 1;
            if counted >= layout.above_lines {
                break;
            }
        }
    }
    // Indented rows whose head is off the region (a gap, the scan's end) are kept: they may be
    // a status line's details.
    rows.append(&mut pending);
    rows.sort_unstable();
    rows
}

/// The `adjacent` region: the rows directly on top of the box, with no blank row between: a
/// dialog drawn further up is the scrollback's (a live one replaces the box). A block that
/// reaches up to a transcript line (`boundary`) is that entry's text, not a dialog.
fn walk_adjacent(layout: &Layout, lines: &[String], start: usize) -> Vec<usize> {
    let width = text_width(lines);
    let mut rows = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    for i in (0..start).rev().take(layout.above_lines.max(1) * 2) {
        let l = &lines[i];
        if is_blank(l) {
            break;
        }
        if matches(layout.boundary.as_ref(), l) {
            return Vec::new();
        }
        if matches(layout.rule.as_ref(), l) {
            pending.clear();
            break;
        }
        if hangs(l) || hard_wrapped(lines, width, i) {
            pending.push(i);
            continue;
        }
        rows.append(&mut pending);
        rows.push(i);
        if matches(layout.turn_end.as_ref(), l) {
            break;
        }
    }
    rows.append(&mut pending);
    rows.sort_unstable();
    rows
}

/// The `turn` region: the rows between the last submitted message and the box (`start`), or
/// from the last turn end when it comes first. `None` without a `turn_start` pattern, or when
/// neither is on screen and the rows above the box do not reach the top of the screen.
fn walk_turn(layout: &Layout, lines: &[String], start: usize) -> Option<std::ops::Range<usize>> {
    let turn_start = layout.turn_start.as_ref()?;
    for i in (0..start).rev() {
        let l = &lines[i];
        if matches(layout.turn_end.as_ref(), l) {
            return Some(i..start);
        }
        if turn_start.is_match(l) {
            return Some(i + 1..start);
        }
    }
    // The turn's start scrolled off the top: the rows above the box are all this turn's.
    (!lines.first().is_none_or(|l| is_blank(l))).then_some(0..start)
}

/// The `tail` region: the bottom of a screen with no prompt, up to a boundary.
fn walk_tail(layout: &Layout, lines: &[String]) -> Vec<usize> {
    let mut rows = Vec::new();
    let mut counted = 0;
    for (i, l) in lines.iter().enumerate().rev() {
        if is_blank(l) {
            continue;
        }
        // The transcript starts at a boundary line (the bottom line is always taken).
        let boundary = layout.tail_boundary.as_ref().or(layout.boundary.as_ref());
        if !rows.is_empty() && matches(boundary, l) {
            break;
        }
        rows.push(i);
        if matches(layout.turn_end.as_ref(), l) {
            break;
        }
        counted += 1;
        if counted >= layout.tail_lines {
            break;
        }
    }
    rows.reverse();
    rows
}

/// A region's lines (box borders removed), with the joined and normalised texts the matchers
/// need.
pub(super) struct RegionText<'s> {
    lines: Vec<Cow<'s, str>>,
    joined: String,
    normalized: OnceCell<String>,
}

impl<'s> RegionText<'s> {
    fn new(lines: Vec<&'s str>) -> Self {
        let lines: Vec<Cow<'s, str>> = lines
            .into_iter()
            .map(|l| Cow::Borrowed(strip_borders(l)))
            .collect();
        let joined = lines.join("\n");
        Self {
            lines,
            joined,
            normalized: OnceCell::new(),
        }
    }

    /// One logical line (a wrapped line read whole, or computed text).
    fn owned(text: String) -> Self {
        Self {
            lines: text.split('\n').map(|l| Cow::Owned(l.to_owned())).collect(),
            joined: text,
            normalized: OnceCell::new(),
        }
    }

    /// The lines, top to bottom.
    pub(super) fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(AsRef::as_ref)
    }

    /// The lines joined with `\n`.
    pub(super) fn joined(&self) -> &str {
        &self.joined
    }

    /// Lower-cased, borders removed, whitespace collapsed.
    pub(super) fn normalized(&self) -> &str {
        self.normalized.get_or_init(|| normalize(&self.joined))
    }

    /// The line holding byte `offset` of the joined text.
    pub(super) fn line_at(&self, offset: usize) -> &str {
        let mut pos = 0;
        for l in &self.lines {
            if offset <= pos + l.len() {
                return l;
            }
            pos += l.len() + 1;
        }
        self.lines.last().map_or("", AsRef::as_ref)
    }

    /// The first line that contains `needle` (normalised), or the region's first line.
    pub(super) fn line_with(&self, needle: &str) -> &str {
        self.lines
            .iter()
            .find(|l| normalize(l).contains(needle))
            .or_else(|| self.lines.iter().find(|l| !is_blank(l)))
            .map_or("", AsRef::as_ref)
    }

    /// The last non-blank line, or `""`.
    pub(super) fn last_non_blank(&self) -> &str {
        self.lines
            .iter()
            .rev()
            .find(|l| !is_blank(l))
            .map_or("", AsRef::as_ref)
    }
}
