//! A small built-in [`SessionModel`]: Codeman's per-chunk patterns on ANSI-stripped text
//! (without its 300-character blind spot), and a VT screen for the verdict.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use hyoka_idle_detect::{BlockedKind, ChunkSignals, HookEvent, SessionState, Verdict};
use regex::Regex;

use super::SessionModel;

/// Codeman's working words (case-sensitive) and spinner glyphs (`respawn-reference.md`
/// §3.3), plus Claude Code's interrupt hint.
const WORKING: &[&str] = &[
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
    "esc to interrupt",
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

/// Characters of the previous chunk kept to catch a pattern split across chunks.
const CARRY: usize = 48;
/// Bounds of the AI-check context (characters): trimmed to half when exceeded.
const CONTEXT_MAX: usize = 256 * 1024;
/// Raw output kept for the screen, which is rendered only when a verdict is asked for: at
/// most this much; beyond it the oldest half goes and the screen is rebuilt from the rest.
const SCREEN_TAIL: usize = 128 * 1024;
/// A working chunk keeps the verdict `working` this long even if the screen is quiet.
const WORKING_HOLD: Duration = Duration::from_millis(1500);

static COMPLETION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b[a-zé]+(?:ed|t)\s+for\s+\d+[hms](?:\s*\d+[hms])*\b").expect("valid regex")
});
static WORKING_RE: LazyLock<Regex> = LazyLock::new(|| {
    let alternatives: Vec<String> = WORKING.iter().map(|p| regex::escape(p)).collect();
    Regex::new(&alternatives.join("|")).expect("valid regex")
});
static TOKENS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d+(?:\.\d+)?)\s*([kKmM])?\s*tokens").expect("valid regex"));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    Ground,
    Esc,
    Csi,
    Osc,
    OscEsc,
}

/// See the module docs.
pub struct BasicModel {
    screen: vt100::Parser,
    size: (u16, u16),
    unrendered: Vec<u8>,
    rebuild: bool,
    escape: Escape,
    utf8: Vec<u8>,
    carry: String,
    context: String,
    last_working: Option<Instant>,
    elicitation: bool,
}

impl std::fmt::Debug for BasicModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicModel").finish_non_exhaustive()
    }
}

impl BasicModel {
    /// A model of a `rows` × `cols` terminal.
    pub fn new(rows: u16, cols: u16) -> Self {
        Self {
            screen: vt100::Parser::new(nonzero(rows, 2), nonzero(cols, 10), 0),
            size: (rows, cols),
            unrendered: Vec::new(),
            rebuild: false,
            escape: Escape::Ground,
            utf8: Vec::new(),
            carry: String::new(),
            context: String::new(),
            last_working: None,
            elicitation: false,
        }
    }

    /// Strips escape sequences (stateful across chunks) and decodes UTF-8 (carrying an
    /// incomplete character over).
    fn strip(&mut self, bytes: &[u8]) -> String {
        let mut plain = Vec::with_capacity(bytes.len());
        for &b in bytes {
            self.escape = match self.escape {
                Escape::Ground if b == 0x1b => Escape::Esc,
                Escape::Ground => {
                    if b >= 0x20 || b == b'\n' || b == b'\t' {
                        plain.push(b);
                    }
                    Escape::Ground
                }
                Escape::Esc => match b {
                    b'[' => Escape::Csi,
                    b']' => Escape::Osc,
                    _ => Escape::Ground,
                },
                Escape::Csi => {
                    if (0x40..=0x7e).contains(&b) || b == 0x18 || b == 0x1a {
                        Escape::Ground
                    } else {
                        Escape::Csi
                    }
                }
                Escape::Osc => match b {
                    0x07 | 0x18 | 0x1a => Escape::Ground,
                    0x1b => Escape::OscEsc,
                    _ => Escape::Osc,
                },
                Escape::OscEsc => {
                    if b == b'\\' {
                        Escape::Ground
                    } else {
                        Escape::Osc
                    }
                }
            };
        }
        let mut joined = std::mem::take(&mut self.utf8);
        joined.extend_from_slice(&plain);
        match std::str::from_utf8(&joined) {
            Ok(text) => text.to_owned(),
            Err(err) if err.error_len().is_none() => {
                let valid = err.valid_up_to();
                self.utf8 = joined[valid..].to_vec();
                String::from_utf8_lossy(&joined[..valid]).into_owned()
            }
            Err(_) => String::from_utf8_lossy(&joined).into_owned(),
        }
    }

    /// Brings the screen up to date with the output seen so far.
    fn render(&mut self) {
        if self.rebuild {
            let (rows, cols) = self.size;
            self.screen = vt100::Parser::new(nonzero(rows, 2), nonzero(cols, 10), 0);
            self.rebuild = false;
        }
        self.screen.process(&self.unrendered);
        self.unrendered.clear();
    }

    fn screen_lines(&mut self) -> Vec<String> {
        self.render();
        let contents = self.screen.screen().contents();
        let lines: Vec<String> = contents.lines().map(|l| l.trim_end().to_owned()).collect();
        let last = lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |i| i + 1);
        let first = last.saturating_sub(20);
        lines[first..last].to_vec()
    }
}

fn nonzero(value: u16, min: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(value.max(min)).unwrap_or(std::num::NonZeroU16::MIN)
}

/// Classifies the bottom of a screen.
fn classify(lines: &[String]) -> (SessionState, Option<BlockedKind>, &'static str) {
    let text = lines.join("\n");
    let lower = text.to_lowercase();
    let numbered = lines.iter().any(|l| {
        let t = l.trim_start().trim_start_matches(['❯', '>']).trim_start();
        t.starts_with("1.")
    });
    if lower.contains("do you trust the files") {
        return (
            SessionState::Blocked,
            Some(BlockedKind::Trust),
            "trust dialog",
        );
    }
    if numbered && lower.contains("would you like to proceed") && lower.contains("plan") {
        return (SessionState::Blocked, Some(BlockedKind::Plan), "plan menu");
    }
    if numbered && lower.contains("do you want to") {
        return (
            SessionState::Blocked,
            Some(BlockedKind::Permission),
            "permission prompt",
        );
    }
    if lower.contains("esc to interrupt") {
        return (SessionState::Working, None, "esc to interrupt");
    }
    if numbered && lower.contains("enter to select") {
        return (
            SessionState::Blocked,
            Some(BlockedKind::Question),
            "question",
        );
    }
    if lines.iter().rev().take(6).any(|l| l.contains('❯')) {
        return (SessionState::Idle, None, "prompt");
    }
    (SessionState::Unknown, None, "unrecognised screen")
}

impl SessionModel for BasicModel {
    fn output(&mut self, now: Instant, bytes: &[u8]) -> ChunkSignals {
        if bytes.is_empty() {
            return ChunkSignals::default();
        }
        self.unrendered.extend_from_slice(bytes);
        if self.unrendered.len() > SCREEN_TAIL {
            self.unrendered
                .drain(..self.unrendered.len() - SCREEN_TAIL / 2);
            self.rebuild = true;
        }
        let text = self.strip(bytes);
        let carried = self.carry.len();
        let window = format!("{}{}", self.carry, text);
        // Cheap literal checks first: the regexes run only when they can match.
        let completion = window
            .as_bytes()
            .windows(3)
            .any(|w| w.eq_ignore_ascii_case(b"for"))
            && COMPLETION.find_iter(&window).any(|m| m.end() > carried);
        let working = !completion && WORKING_RE.find_iter(&window).any(|m| m.end() > carried);
        let prompt = !working && (text.contains('❯') || text.contains('⏵'));
        let substantial = text.trim().chars().count() > 2;
        let tokens = (text.contains("tokens"))
            .then(|| TOKENS.captures(&text))
            .flatten()
            .and_then(|c| {
                let value: f64 = c[1].parse().ok()?;
                let scale = match c.get(2).map(|m| m.as_str()) {
                    Some("k" | "K") => 1e3,
                    Some("m" | "M") => 1e6,
                    _ => 1.0,
                };
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "a token count fits easily"
                )]
                Some((value * scale).round() as u64)
            });
        if working {
            self.last_working = Some(now);
            self.elicitation = false;
        } else if completion {
            // The turn ended: the hold of the last spinner frame no longer applies.
            self.last_working = None;
        }
        let keep_from = window
            .char_indices()
            .rev()
            .nth(CARRY - 1)
            .map_or(0, |(i, _)| i);
        self.carry.clear();
        self.carry.push_str(&window[keep_from..]);
        self.context.push_str(&text);
        if self.context.len() > CONTEXT_MAX {
            let mut cut = self.context.len() - CONTEXT_MAX / 2;
            while !self.context.is_char_boundary(cut) {
                cut += 1;
            }
            self.context.drain(..cut);
        }
        ChunkSignals {
            completion,
            working,
            prompt,
            substantial,
            tokens,
        }
    }

    fn hook(&mut self, _now: Instant, event: HookEvent) {
        if event == HookEvent::ElicitationDialog {
            self.elicitation = true;
        }
    }

    fn user_input(&mut self, _now: Instant) {}

    fn resize(&mut self, rows: u16, cols: u16) {
        self.render();
        self.size = (rows, cols);
        self.screen
            .screen_mut()
            .set_size(nonzero(rows, 2), nonzero(cols, 10));
    }

    fn verdict(&mut self, now: Instant) -> Verdict {
        let (mut state, mut blocked, mut rule) = classify(&self.screen_lines());
        if state != SessionState::Blocked
            && self
                .last_working
                .is_some_and(|t| now.saturating_duration_since(t) < WORKING_HOLD)
        {
            (state, blocked, rule) = (SessionState::Working, None, "recent working output");
        }
        if self.elicitation && state != SessionState::Working {
            (state, blocked, rule) = (
                SessionState::Blocked,
                Some(BlockedKind::Question),
                "elicitation hook",
            );
        }
        Verdict {
            state,
            blocked,
            evidence: vec![hyoka_idle_detect::Evidence {
                signal: "screen_rule",
                points_to: state,
                rule: format!("basic/{rule}"),
                detail: String::new(),
                age_ms: 0,
            }],
        }
    }

    fn context(&self, max_chars: usize) -> String {
        let count = self.context.chars().count();
        self.context
            .chars()
            .skip(count.saturating_sub(max_chars))
            .collect()
    }

    fn reset_context(&mut self) {
        self.context.clear();
    }
}

#[cfg(test)]
mod tests;
