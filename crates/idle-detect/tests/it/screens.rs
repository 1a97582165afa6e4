//! A generator of agent screens: each agent's states rendered from templates that follow what
//! the agent's own source draws (the same sources its profile cites), at any width, with
//! colour themes, wrapping, boxed and boxless dialogs, status lines above and below the
//! prompt, and scrollback that holds old dialogs, stale spinners and prose that quotes them.
//!
//! [`Spec`] describes one screen and [`Spec::render`] gives its bytes and the label it must
//! get. The property tests in `generated.rs` draw specs at random.

use std::fmt::Write as _;

use hyoka_idle_detect::{BlockedKind, SessionState};

/// The agents with templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Agent {
    Claude,
    Codex,
    Gemini,
    Copilot,
    Aider,
}

impl Agent {
    pub(crate) const ALL: [Agent; 5] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Copilot,
        Agent::Aider,
    ];

    /// The built-in profile that judges this agent.
    pub(crate) fn profile(self) -> &'static str {
        match self {
            Agent::Claude => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Copilot => "copilot",
            Agent::Aider => "aider",
        }
    }
}

/// What the live area shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Live {
    /// The turn is over; the empty input (or its placeholder) waits.
    Idle,
    /// Work in progress, in one of the agent's forms (`form` picks which).
    Working,
    /// A permission or approval dialog.
    Permission,
    /// A question or selection dialog.
    Question,
    /// A plan-approval menu (Claude Code).
    Plan,
    /// A workspace-trust dialog.
    Trust,
    /// A person typed into the input and has not sent it.
    Draft,
}

impl Live {
    pub(crate) const ALL: [Live; 7] = [
        Live::Idle,
        Live::Working,
        Live::Permission,
        Live::Question,
        Live::Plan,
        Live::Trust,
        Live::Draft,
    ];
}

/// How colours and attributes are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Theme {
    /// Plain text, as a capture without escapes (attributes unknown).
    Plain,
    /// 256-colour SGR, faint text dim.
    Ansi256,
    /// True colour, faint text in a grey foreground.
    TrueColor,
}

/// How long lines are wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wrap {
    /// The terminal wraps them (the screen model joins the rows back).
    Terminal,
    /// The agent wraps them at a word and indents the rest (Ink's word wrap).
    Word,
    /// A capture split them into rows without joining (`tmux capture-pane` without `-J`).
    Hard,
}

/// One generated screen.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub(crate) agent: Agent,
    pub(crate) live: Live,
    /// Which variant of the state to draw (any number; taken modulo the variants).
    pub(crate) form: usize,
    pub(crate) width: u16,
    pub(crate) theme: Theme,
    pub(crate) wrap: Wrap,
    /// Picks the scrollback: words, old dialogs, stale spinners, quoting prose.
    pub(crate) seed: u64,
}

/// The label a screen must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label {
    pub(crate) state: SessionState,
    pub(crate) blocked: Option<BlockedKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Normal,
    /// Placeholders, hints, footers.
    Faint,
    /// Glyphs, headings.
    Accent,
}

#[derive(Debug, Clone)]
struct Row {
    spans: Vec<(Style, String)>,
    /// Continuation rows of a word-wrapped line are indented by this much.
    indent: usize,
    /// Rules and bands are drawn to the full width and never wrap.
    full: Option<char>,
}

impl Row {
    fn text(s: impl Into<String>) -> Self {
        Self {
            spans: vec![(Style::Normal, s.into())],
            indent: 2,
            full: None,
        }
    }

    fn styled(spans: Vec<(Style, String)>) -> Self {
        Self {
            spans,
            indent: 2,
            full: None,
        }
    }

    fn faint(s: impl Into<String>) -> Self {
        Self::styled(vec![(Style::Faint, s.into())])
    }

    fn rule(c: char) -> Self {
        Self {
            spans: Vec::new(),
            indent: 0,
            full: Some(c),
        }
    }

    fn blank() -> Self {
        Self::text("")
    }

    fn plain(&self) -> String {
        self.spans.iter().map(|(_, s)| s.as_str()).collect()
    }
}

/// A small deterministic generator (SplitMix64) for the scrollback's choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n.max(1) as u64).unwrap_or(0)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const WORDS: &[&str] = &[
    "the", "parser", "returns", "an", "error", "when", "the", "config", "file", "is", "missing",
    "so", "I", "added", "a", "fallback", "and", "a", "test", "for", "it", "module", "buffer",
    "session", "handler", "stream", "cache", "timeout", "request", "response", "refactor",
];

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(rng.pick(WORDS));
    }
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect::<String>() + ".",
        None => s,
    }
}

impl Spec {
    /// The label this screen must get.
    pub(crate) fn label(&self) -> Label {
        let blocked = |k| Label {
            state: SessionState::Blocked,
            blocked: Some(k),
        };
        match self.live {
            Live::Idle => Label {
                state: SessionState::Idle,
                blocked: None,
            },
            Live::Working => Label {
                state: SessionState::Working,
                blocked: None,
            },
            Live::Permission => blocked(BlockedKind::Permission),
            Live::Question => blocked(BlockedKind::Question),
            Live::Plan => blocked(BlockedKind::Plan),
            Live::Trust => blocked(BlockedKind::Trust),
            // A draft is only visible where the rendering keeps attributes; on plain text the
            // input reads as idle (see the profiles' `draft` rules).
            Live::Draft if self.theme == Theme::Plain && self.agent != Agent::Gemini => Label {
                state: SessionState::Idle,
                blocked: None,
            },
            Live::Draft => blocked(BlockedKind::Draft),
        }
    }

    /// Whether the agent can draw this state at all (Aider has no trust dialog, …).
    pub(crate) fn drawable(&self) -> bool {
        !matches!(
            (self.agent, self.live),
            (
                Agent::Aider,
                Live::Question | Live::Plan | Live::Trust | Live::Draft
            ) | (Agent::Codex | Agent::Gemini | Agent::Copilot, Live::Plan)
        )
    }

    /// The screen's rows, scrollback first.
    fn rows(&self) -> Vec<Row> {
        let mut rng = Rng(self.seed ^ 0xA5A5_5A5A_0F0F_F0F0);
        let mut rows = Vec::new();
        match self.agent {
            Agent::Claude => claude(self, &mut rng, &mut rows),
            Agent::Codex => codex(self, &mut rng, &mut rows),
            Agent::Gemini => gemini(self, &mut rng, &mut rows),
            Agent::Copilot => copilot(self, &mut rng, &mut rows),
            Agent::Aider => aider(self, &mut rng, &mut rows),
        }
        rows
    }

    /// The screen as bytes a terminal capture would hold, and its terminal height.
    pub(crate) fn render(&self) -> (Vec<u8>, u16) {
        let width = usize::from(self.width);
        let mut out = String::new();
        let mut lines = 0usize;
        for row in self.rows() {
            for text in self.layout_row(&row, width) {
                if lines > 0 {
                    out.push_str(if self.theme == Theme::Plain {
                        "\n"
                    } else {
                        "\r\n"
                    });
                }
                out.push_str(&text);
                lines += 1;
            }
        }
        let rows = u16::try_from(lines + 2).unwrap_or(u16::MAX).clamp(24, 400);
        (out.into_bytes(), rows)
    }

    /// One row as the lines written to the terminal (wrapped as `self.wrap` says).
    fn layout_row(&self, row: &Row, width: usize) -> Vec<String> {
        if let Some(c) = row.full {
            let rule: String = std::iter::repeat_n(c, width).collect();
            return vec![self.paint(&[(Style::Faint, rule)])];
        }
        let plain = row.plain();
        if plain.chars().count() <= width || self.wrap == Wrap::Terminal {
            return vec![self.paint(&row.spans)];
        }
        // Split into rows of at most `width` characters, keeping each span's style.
        let chars: Vec<(Style, char)> = row
            .spans
            .iter()
            .flat_map(|(s, t)| t.chars().map(move |c| (*s, c)))
            .collect();
        let mut pieces: Vec<Vec<(Style, char)>> = Vec::new();
        let mut rest: &[(Style, char)] = &chars;
        let mut first = true;
        while !rest.is_empty() {
            let indent = if first || self.wrap == Wrap::Hard {
                0
            } else {
                row.indent
            };
            let room = width.saturating_sub(indent).max(1);
            let mut cut = rest.len().min(room);
            if self.wrap == Wrap::Word && cut < rest.len() {
                // Break at the last space that fits, as Ink's word wrap does.
                if let Some(space) = rest[..cut].iter().rposition(|(_, c)| *c == ' ')
                    && space > 0
                {
                    cut = space + 1;
                }
            }
            let mut piece: Vec<(Style, char)> =
                std::iter::repeat_n((Style::Normal, ' '), indent).collect();
            piece.extend_from_slice(&rest[..cut]);
            if self.wrap == Wrap::Word {
                while piece.last().is_some_and(|(_, c)| *c == ' ') && piece.len() > indent {
                    piece.pop();
                }
            }
            pieces.push(piece);
            rest = &rest[cut..];
            if self.wrap == Wrap::Word {
                while rest.first().is_some_and(|(_, c)| *c == ' ') {
                    rest = &rest[1..];
                }
            }
            first = false;
        }
        pieces
            .into_iter()
            .map(|p| {
                let mut spans: Vec<(Style, String)> = Vec::new();
                for (s, c) in p {
                    match spans.last_mut() {
                        Some((ls, t)) if *ls == s => t.push(c),
                        _ => spans.push((s, c.to_string())),
                    }
                }
                self.paint(&spans)
            })
            .collect()
    }

    /// Styled spans as terminal text in this theme.
    fn paint(&self, spans: &[(Style, String)]) -> String {
        let mut out = String::new();
        for (style, text) in spans {
            let sgr = match (self.theme, style) {
                (Theme::Plain, _) | (_, Style::Normal) => "",
                (Theme::Ansi256, Style::Faint) => "\x1b[2m",
                (Theme::Ansi256, Style::Accent) => "\x1b[38;5;174m",
                (Theme::TrueColor, Style::Faint) => "\x1b[38;2;136;136;136m",
                (Theme::TrueColor, Style::Accent) => "\x1b[1;38;2;215;119;87m",
            };
            out.push_str(sgr);
            out.push_str(text);
            if !sgr.is_empty() {
                out.push_str("\x1b[0m");
            }
        }
        out
    }
}

// ----- Claude Code. -----

const CLAUDE_GLYPHS: &[&str] = &["✻", "✽", "✶", "✳", "✢", "·", "*"];
const CLAUDE_VERBS: &[&str] = &[
    "Cultivating",
    "Mulling",
    "Tempering",
    "Compacting conversation",
    "Simplifying recompute_tangents",
    "Vibing",
    "Doing the thing",
    "Brewing",
    "Reticulating",
];
const CLAUDE_DETAILS: &[&str] = &[
    "",
    " (12s · ↓ 1.2k tokens · esc to interrupt)",
    " (esc to interrupt)",
    " (3s · thinking with high effort)",
    " (Esc to interrupt · 2s · ↑ 0 tokens · thinking)",
    " (ctrl+c to interrupt · 17m 50s · 25.9k tokens)",
    " (2m 18s · ↓ 4.8k tokens)",
];

fn claude_history(spec: &Spec, rng: &mut Rng, rows: &mut Vec<Row>) {
    rows.push(Row::text(format!("❯ {}", sentence(rng, 6))));
    rows.push(Row::blank());
    if rng.chance(40) {
        // A stale spinner frame left in the scrollback, then the turn went on.
        rows.push(Row::text(format!(
            "{} {}…{}",
            rng.pick(CLAUDE_GLYPHS),
            rng.pick(CLAUDE_VERBS),
            rng.pick(CLAUDE_DETAILS)
        )));
        rows.push(Row::blank());
    }
    if rng.chance(50) {
        // An old permission dialog, answered long ago.
        rows.push(Row::rule('─'));
        rows.push(Row::text(" Bash command"));
        rows.push(Row::text("   cargo test --workspace"));
        rows.push(Row::text(" Do you want to proceed?"));
        rows.push(Row::text(" ❯ 1. Yes"));
        rows.push(Row::text(
            "   2. No, and tell Claude what to do differently (esc)",
        ));
        rows.push(Row::text(" Esc to cancel · Tab to amend"));
        rows.push(Row::blank());
    }
    rows.push(Row::styled(vec![
        (Style::Accent, "⏺".to_owned()),
        (Style::Normal, " Bash(cargo test)".to_owned()),
    ]));
    rows.push(Row::text("  ⎿  test result: ok. 12 passed; 0 failed"));
    rows.push(Row::blank());
    let prose = if rng.chance(50) {
        // The agent's own prose quoting a dialog's keys is not a dialog.
        "In that menu, press Enter to select an option, Esc to cancel, or esc to interrupt a running turn."
            .to_owned()
    } else {
        format!("{} {}", sentence(rng, 12), sentence(rng, 9))
    };
    rows.push(Row::styled(vec![
        (Style::Accent, "⏺".to_owned()),
        (Style::Normal, format!(" {prose}")),
    ]));
    if spec.width >= 100 && rng.chance(50) {
        rows.push(Row::text(format!("  {}", sentence(rng, 10))));
    }
    rows.push(Row::blank());
}

fn claude_box(rows: &mut Vec<Row>, input: Row, footer: Row) {
    rows.push(Row::rule('─'));
    rows.push(input);
    rows.push(Row::rule('─'));
    rows.push(footer);
}

fn claude_placeholder(rng: &mut Rng) -> Row {
    if rng.chance(50) {
        Row::styled(vec![
            (Style::Faint, "❯ ".to_owned()),
            (Style::Faint, "Try \"fix lint errors\"".to_owned()),
        ])
    } else {
        Row::styled(vec![(Style::Faint, "❯ ".to_owned())])
    }
}

fn claude_footer(rng: &mut Rng) -> Row {
    Row::faint(
        rng.pick(&[
            "  ? for shortcuts",
            "  ⏵⏵ accept edits on (shift+tab to cycle)",
            "  ⏸ plan mode on (shift+tab to cycle)",
            "  Model: Sonnet 4.5 | Ctx: 40.6% | Session: 2hr",
        ])
        .to_owned(),
    )
}

#[expect(
    clippy::too_many_lines,
    reason = "a screen template: one arm per state, each drawing its text"
)]
fn claude(spec: &Spec, rng: &mut Rng, rows: &mut Vec<Row>) {
    claude_history(spec, rng, rows);
    let dialog_top = |rows: &mut Vec<Row>| rows.push(Row::rule('─'));
    match spec.live {
        Live::Idle => {
            if rng.chance(60) {
                rows.push(Row::faint(format!(
                    "✻ {} for 1m 2s",
                    rng.pick(&["Worked", "Baked", "Cooked", "Sautéed"])
                )));
                rows.push(Row::blank());
            }
            let footer = claude_footer(rng);
            claude_box(rows, claude_placeholder(rng), footer);
        }
        Live::Draft => {
            let footer = claude_footer(rng);
            claude_box(
                rows,
                Row::styled(vec![
                    (Style::Faint, "❯ ".to_owned()),
                    (Style::Normal, "also update the changelog please".to_owned()),
                ]),
                footer,
            );
        }
        Live::Working => {
            let glyph = rng.pick(CLAUDE_GLYPHS);
            let verb = rng.pick(CLAUDE_VERBS);
            let mut footer = claude_footer(rng);
            match spec.form % 7 {
                0 => rows.push(Row::styled(vec![
                    (Style::Accent, glyph.to_owned()),
                    (
                        Style::Normal,
                        format!(" {verb}… (12s · ↓ 1.2k tokens · esc to interrupt)"),
                    ),
                ])),
                1 => {
                    // The interrupt hint is in the footer, the status line has no details.
                    rows.push(Row::text(format!("{glyph} {verb}…")));
                    footer = Row::faint(
                        rng.pick(&[
                            "  esc to interrupt",
                            "  ctrl+c to interrupt",
                            "  ⏵⏵ accept edits on (shift+tab to cycle) · esc to interrupt",
                        ])
                        .to_owned(),
                    );
                }
                2 => {
                    rows.push(Row::text(format!("{glyph} {verb}… (3s · ↑ 332 tokens)")));
                    rows.push(Row::faint(
                        "  ⎿  Tip: Use /btw to ask a quick side question",
                    ));
                }
                3 => {
                    rows.push(Row::text(format!(
                        "{glyph} {verb}… (2m 18s · ↓ 4.8k tokens)"
                    )));
                    rows.push(Row::text("  ⎿  ✔ Read the failing test"));
                    rows.push(Row::text("     ◼ Fix the parser"));
                    rows.push(Row::text("     ◻ Update the docs"));
                }
                4 => {
                    // A message queued while Claude works sits between the status and the box.
                    rows.push(Row::text(format!("{glyph} {verb}… (esc to interrupt)")));
                    rows.push(Row::blank());
                    rows.push(Row::faint("❯ also run the linter when you are done"));
                }
                5 => rows.push(Row::text(format!(
                    "✻ Waiting for {} background agents to finish",
                    1 + rng.below(3)
                ))),
                _ => {
                    // A status line longer than the terminal, cut short with an ellipsis.
                    let long = format!(
                        "{glyph} {verb}… (1h 2m 3s · ↓ 123.4k tokens · thinking with high effort · esc to interrupt)"
                    );
                    let cut: String = long
                        .chars()
                        .take(usize::from(spec.width).saturating_sub(2).min(40))
                        .collect();
                    rows.push(Row::text(format!("{cut}…")));
                }
            }
            rows.push(Row::blank());
            claude_box(rows, claude_placeholder(rng), footer);
        }
        Live::Permission => {
            rows.push(Row::styled(vec![
                (Style::Accent, "⏺".to_owned()),
                (Style::Normal, " Bash(rm -rf build)".to_owned()),
            ]));
            rows.push(Row::blank());
            dialog_top(rows);
            match spec.form % 3 {
                0 => {
                    rows.push(Row::text(" Bash command"));
                    rows.push(Row::blank());
                    rows.push(Row::text(
                        "   rm -rf build && cargo build --release --workspace --all-features",
                    ));
                    rows.push(Row::text("   Rebuild from scratch"));
                    rows.push(Row::blank());
                    rows.push(Row::text(" Do you want to proceed?"));
                }
                1 => {
                    rows.push(Row::text(" Edit file"));
                    rows.push(Row::text(" src/lib.rs"));
                    rows.push(Row::rule('╌'));
                    rows.push(Row::text(" 1 -fn old() {}"));
                    rows.push(Row::text(" 1 +fn new() {}"));
                    rows.push(Row::rule('╌'));
                    rows.push(Row::text(" Do you want to make this edit to lib.rs?"));
                }
                _ => {
                    rows.push(Row::text(" Tool use"));
                    rows.push(Row::text("   Web Search(\"rust vt100 crate\")"));
                    rows.push(Row::text(
                        "   Claude wants to search the web for: rust vt100 crate",
                    ));
                    rows.push(Row::text(" Do you want to proceed?"));
                }
            }
            rows.push(Row::styled(vec![(Style::Accent, " ❯ 1. Yes".to_owned())]));
            rows.push(Row::text(
                "   2. Yes, and don't ask again for this command in /home/user/project",
            ));
            rows.push(Row::text(
                "   3. No, and tell Claude what to do differently (esc)",
            ));
            rows.push(Row::blank());
            rows.push(Row::faint(
                " Esc to cancel · Tab to amend · ctrl+e to explain",
            ));
        }
        Live::Question => {
            dialog_top(rows);
            rows.push(Row::text("←  ☐ Scope  ☐ Tone  ✔ Submit  →"));
            rows.push(Row::blank());
            rows.push(Row::text("Which approach should I take?"));
            rows.push(Row::styled(vec![(
                Style::Accent,
                "❯ 1. Minimal change".to_owned(),
            )]));
            rows.push(Row::faint("     Touch only the parser."));
            rows.push(Row::text("  2. Bigger refactor"));
            rows.push(Row::text("  3. Type something."));
            dialog_top(rows);
            rows.push(Row::text("  4. Chat about this"));
            rows.push(Row::blank());
            rows.push(Row::faint(
                "Enter to select · ↑/↓ to navigate · Esc to cancel",
            ));
        }
        Live::Plan => {
            dialog_top(rows);
            rows.push(Row::text(" Ready to code?"));
            rows.push(Row::blank());
            rows.push(Row::text(" Here is Claude's plan:"));
            rows.push(Row::text(format!("   {}", sentence(rng, 14))));
            rows.push(Row::blank());
            rows.push(Row::text(" Would you like to proceed?"));
            rows.push(Row::blank());
            rows.push(Row::styled(vec![(
                Style::Accent,
                " ❯ 1. Yes, and auto-accept edits".to_owned(),
            )]));
            rows.push(Row::text("   2. Yes, and manually approve edits"));
            rows.push(Row::text("   3. No, keep planning"));
        }
        Live::Trust => {
            rows.clear();
            rows.push(Row::text(" ▐▛███▜▌   Claude Code v2.1.29"));
            rows.push(Row::blank());
            dialog_top(rows);
            rows.push(Row::text(" Do you trust the files in this folder?"));
            rows.push(Row::blank());
            rows.push(Row::text(" /home/user/project"));
            rows.push(Row::blank());
            rows.push(Row::text(" Claude Code may read, write, or execute files contained in this directory. This can pose security risks, so only use files from trusted sources."));
            rows.push(Row::blank());
            rows.push(Row::styled(vec![(
                Style::Accent,
                " ❯ 1. Yes, proceed".to_owned(),
            )]));
            rows.push(Row::text("   2. No, exit"));
            rows.push(Row::blank());
            rows.push(Row::faint(" Enter to confirm · Esc to cancel"));
        }
    }
}

// ----- Codex. -----

const CODEX_PLACEHOLDERS: &[&str] = &[
    "Ask Codex to do anything",
    "Explain this codebase",
    "Find and fix a bug in @filename",
    "Run /review on my current changes",
    "Use /skills to list available skills",
];

fn codex_history(rng: &mut Rng, rows: &mut Vec<Row>) {
    rows.push(Row::text(format!("› {}", sentence(rng, 5))));
    rows.push(Row::blank());
    if rng.chance(40) {
        // A stale status frame, then the turn was interrupted.
        rows.push(Row::text("• Working (1m 16s • esc to interrupt)"));
        rows.push(Row::text("■ Conversation interrupted - tell the model what to do differently. Something went wrong? Hit `/feedback` to report the issue."));
        rows.push(Row::blank());
    }
    if rng.chance(40) {
        // The agent quotes an approval prompt in its reply.
        rows.push(Row::text("• It renders like this:"));
        rows.push(Row::blank());
        rows.push(Row::text(
            "    Would you like to run the following command?",
        ));
        rows.push(Row::text("  › 1. Yes, proceed (y)"));
        rows.push(Row::text(
            "    2. No, and tell Codex what to do differently (esc)",
        ));
        rows.push(Row::text("    Press enter to confirm or esc to cancel"));
        rows.push(Row::blank());
    }
    rows.push(Row::text("• Ran cargo test"));
    rows.push(Row::faint("  └ test result: ok. 12 passed"));
    rows.push(Row::blank());
    rows.push(Row::text(format!("• {}", sentence(rng, 14))));
    rows.push(Row::blank());
}

fn codex_footer(rng: &mut Rng) -> Row {
    Row::faint(
        rng.pick(&[
            "  ? for shortcuts                     92% context left",
            "  gpt-5.5 high · ~/repo",
            "  gpt-5.3-codex high · 95% left · ~/project",
        ])
        .to_owned(),
    )
}

#[expect(
    clippy::too_many_lines,
    reason = "a screen template: one arm per state, each drawing its text"
)]
fn codex(spec: &Spec, rng: &mut Rng, rows: &mut Vec<Row>) {
    codex_history(rng, rows);
    let placeholder = |rng: &mut Rng| {
        Row::styled(vec![
            (Style::Accent, "› ".to_owned()),
            (Style::Faint, rng.pick(CODEX_PLACEHOLDERS).to_owned()),
        ])
    };
    match spec.live {
        Live::Idle => {
            if rng.chance(50) {
                rows.push(Row::faint(
                    "─ Worked for 1m 22s ─────────────────────────────",
                ));
                rows.push(Row::blank());
            }
            rows.push(Row::text(format!("• {}", sentence(rng, 8))));
            rows.push(Row::blank());
            rows.push(placeholder(rng));
            rows.push(Row::blank());
            rows.push(codex_footer(rng));
        }
        Live::Draft => {
            rows.push(Row::styled(vec![
                (Style::Accent, "› ".to_owned()),
                (Style::Normal, "dasdasd fix the flaky test".to_owned()),
            ]));
            rows.push(Row::blank());
            rows.push(codex_footer(rng));
        }
        Live::Working => {
            let header = rng.pick(&[
                "Working",
                "Thinking",
                "Reviewing approval request",
                "Investigating the flaky shutdown test",
                "Waiting for background terminal · cargo test",
            ]);
            let spinner = rng.pick(&["•", "◦"]);
            match spec.form % 5 {
                0 => rows.push(Row::text(format!(
                    "{spinner} {header} (12s • esc to interrupt)"
                ))),
                1 => {
                    rows.push(Row::text(format!("{spinner} {header} (1m 05s • esc to interrupt) · 1 background terminal running · /ps to view")));
                    rows.push(Row::faint("  └ cargo test --workspace"));
                }
                2 => {
                    // Queued follow-up messages under the running status.
                    rows.push(Row::text(format!(
                        "{spinner} {header} (3s • ctrl+c to interrupt)"
                    )));
                    rows.push(Row::blank());
                    rows.push(Row::text("• Queued follow-up messages"));
                    rows.push(Row::faint("  ↳ also fix the docs"));
                    rows.push(Row::faint("    alt + ↑ edit last queued message"));
                }
                3 => {
                    rows.push(Row::text(format!(
                        "{spinner} {header} (28s • esc to interrupt)"
                    )));
                    rows.push(Row::blank());
                    rows.push(Row::text("• Messages to be submitted after next tool call (press esc to interrupt and send immediately)"));
                    rows.push(Row::faint("  ↳ run the shell command: sleep 120"));
                }
                _ => {
                    // A status line wider than the terminal, cut short.
                    let long = format!(
                        "{spinner} {header} and rewriting the whole module with more care (1h 02m 03s • esc to interrupt)"
                    );
                    let cut: String = long
                        .chars()
                        .take(usize::from(spec.width).saturating_sub(1).min(58))
                        .collect();
                    rows.push(Row::text(format!("{cut}…")));
                }
            }
            rows.push(Row::blank());
            rows.push(placeholder(rng));
            rows.push(Row::blank());
            rows.push(codex_footer(rng));
        }
        Live::Permission => {
            rows.push(Row::text("  Would you like to run the following command?"));
            rows.push(Row::blank());
            rows.push(Row::text(
                "  Reason: Need to write to .git to stage the changes you asked for",
            ));
            rows.push(Row::blank());
            rows.push(Row::text(
                "  $ git add src/lib.rs && git commit -m 'fix the parser fallback'",
            ));
            rows.push(Row::blank());
            rows.push(Row::styled(vec![(
                Style::Accent,
                "› 1. Yes, proceed (y)".to_owned(),
            )]));
            rows.push(Row::text(
                "  2. Yes, and don't ask again for this command (a)",
            ));
            rows.push(Row::text(
                "  3. No, and tell Codex what to do differently (esc)",
            ));
            rows.push(Row::blank());
            rows.push(Row::faint("  Press enter to confirm or esc to cancel"));
        }
        Live::Question => {
            rows.push(Row::text("  Question 1/2 (1 unanswered)"));
            rows.push(Row::text("  Which fruit do you want?"));
            rows.push(Row::blank());
            rows.push(Row::styled(vec![(
                Style::Accent,
                "  › 1. Banana (Recommended)  Choose banana.".to_owned(),
            )]));
            rows.push(Row::text("    2. Orange                Choose orange."));
            rows.push(Row::blank());
            rows.push(Row::faint(
                "  tab to add notes | enter to submit answer | esc to interrupt",
            ));
        }
        Live::Trust => {
            rows.clear();
            rows.push(Row::text(
                "  Welcome to Codex, OpenAI's command-line coding agent",
            ));
            rows.push(Row::blank());
            rows.push(Row::text("> You are in /home/user/project"));
            rows.push(Row::blank());
            rows.push(Row::text("  Do you trust the contents of this directory? Working with untrusted contents comes with higher risk of prompt injection."));
            rows.push(Row::blank());
            rows.push(Row::styled(vec![(
                Style::Accent,
                "› 1. Yes, continue".to_owned(),
            )]));
            rows.push(Row::text("  2. No, quit"));
            rows.push(Row::blank());
            rows.push(Row::faint("  Press enter to continue"));
        }
        Live::Plan => {}
    }
}

// ----- Gemini CLI. -----

#[expect(
    clippy::too_many_lines,
    reason = "a screen template: one arm per state, each drawing its text"
)]
fn gemini(spec: &Spec, rng: &mut Rng, rows: &mut Vec<Row>) {
    rows.push(Row::rule('▀'));
    rows.push(Row::text(format!(" > {}", sentence(rng, 5))));
    rows.push(Row::rule('▄'));
    rows.push(Row::text(format!("✦ {}", sentence(rng, 15))));
    rows.push(Row::blank());
    if rng.chance(50) {
        // A tool call confirmed earlier, now a finished tool box.
        rows.push(Row::text("╭──────────────────────────────────────╮"));
        rows.push(Row::text("│ ✓  Shell ls -la                      │"));
        rows.push(Row::text("╰──────────────────────────────────────╯"));
        rows.push(Row::blank());
    }
    let input = |rows: &mut Vec<Row>, text: Row| {
        rows.push(Row::rule('─'));
        rows.push(text);
        rows.push(Row::rule('─'));
        rows.push(Row::faint(
            " ~/project (main*)   no sandbox   gemini-2.5-pro",
        ));
    };
    let placeholder = || {
        Row::styled(vec![
            (Style::Accent, " > ".to_owned()),
            (
                Style::Faint,
                "  Type your message or @path/to/file".to_owned(),
            ),
        ])
    };
    match spec.live {
        Live::Idle => input(rows, placeholder()),
        Live::Draft => input(
            rows,
            Row::styled(vec![
                (Style::Accent, " > ".to_owned()),
                (Style::Normal, "summarize the open pull requests".to_owned()),
            ]),
        ),
        Live::Working => {
            match spec.form % 4 {
                0 => rows.push(Row::text("⠼ Thinking... (esc to cancel, 3s)")),
                1 => rows.push(Row::text(
                    "⠧ Trying to reach gemini-2.5-pro (Attempt 2/10) (esc to cancel, 45s)",
                )),
                2 => {
                    // The narrow layout puts the timer on its own row.
                    rows.push(Row::text("⠋ Counting the electrons"));
                    rows.push(Row::faint("(esc to cancel, 1m 5s)"));
                }
                _ => rows.push(Row::text(
                    "⠙ This is taking a bit longer, we're still on it. (esc to cancel, 2m 3s)",
                )),
            }
            rows.push(Row::blank());
            input(rows, placeholder());
        }
        Live::Permission | Live::Question => {
            let boxed = spec.form.is_multiple_of(2);
            let line = |rows: &mut Vec<Row>, s: &str| {
                rows.push(Row::text(if boxed {
                    format!("│ {s:<60} │")
                } else {
                    s.to_owned()
                }));
            };
            if boxed {
                rows.push(Row::text(format!("╭{}╮", "─".repeat(62))));
                line(rows, "Action Required");
                line(rows, "");
                line(rows, "?  Shell rm -rf build");
                line(rows, "╭──────────────────────────╮");
                line(rows, "│ rm -rf build             │");
                line(rows, "╰──────────────────────────╯");
            }
            if spec.live == Live::Permission {
                line(rows, "Allow execution of [Shell]?");
                line(rows, "● 1. Allow once");
                line(rows, "  2. Allow for this session");
                line(rows, "  3. No, suggest changes (esc)");
            } else {
                line(rows, "Which database should the service use?");
                line(rows, "● 1. PostgreSQL");
                line(rows, "  2. SQLite");
                line(rows, "Enter to select · Esc to cancel");
            }
            if boxed {
                rows.push(Row::text(format!("╰{}╯", "─".repeat(62))));
            }
            rows.push(Row::blank());
            rows.push(Row::text("⠏ Waiting for you"));
            input(rows, placeholder());
        }
        Live::Trust => {
            rows.clear();
            rows.push(Row::text(format!("╭{}╮", "─".repeat(62))));
            rows.push(Row::text(format!(
                "│ {:<60} │",
                "Do you trust the files in this folder?"
            )));
            rows.push(Row::text(format!(
                "│ {:<60} │",
                "● 1. Trust folder (project)"
            )));
            rows.push(Row::text(format!(
                "│ {:<60} │",
                "  2. Trust parent folder (home)"
            )));
            rows.push(Row::text(format!("│ {:<60} │", "  3. Don't trust")));
            rows.push(Row::text(format!("╰{}╯", "─".repeat(62))));
        }
        Live::Plan => {}
    }
}

// ----- Copilot CLI. -----

fn copilot(spec: &Spec, rng: &mut Rng, rows: &mut Vec<Row>) {
    rows.push(Row::text(format!("❯ {}", sentence(rng, 5))));
    rows.push(Row::blank());
    rows.push(Row::text("● Edit src/main.py (+3 -1)"));
    rows.push(Row::text(format!("● {}", sentence(rng, 12))));
    rows.push(Row::blank());
    let input = |rows: &mut Vec<Row>, text: Row| {
        rows.push(Row::faint(" ~/repo [⎇ main*%]"));
        rows.push(Row::rule('─'));
        rows.push(text);
        rows.push(Row::rule('─'));
        rows.push(Row::faint(
            " autopilot · / commands                        Claude Sonnet 4.6 · (0%)",
        ));
    };
    let placeholder = || {
        Row::styled(vec![
            (Style::Accent, "❯ ".to_owned()),
            (
                Style::Faint,
                "Type @ to mention files, # for issues/PRs, / for commands, or ? for shortcuts"
                    .to_owned(),
            ),
        ])
    };
    match spec.live {
        Live::Idle => input(rows, placeholder()),
        Live::Draft => input(
            rows,
            Row::styled(vec![
                (Style::Accent, "❯ ".to_owned()),
                (Style::Normal, "now open a pull request".to_owned()),
            ]),
        ),
        Live::Working => {
            rows.push(Row::text(rng.pick(&[
                "∙ Thinking (Esc to cancel)",
                "◐ Running tests (Esc to cancel)",
                "∙ Compacting the conversation history (Esc to cancel)",
            ])));
            input(rows, placeholder());
        }
        Live::Permission | Live::Question | Live::Trust => {
            let (title, body, options): (&str, &str, &[&str]) = match spec.live {
                Live::Permission => (
                    "Allow directory access",
                    "Copilot wants to read files in /etc for this task. Allow?",
                    &[
                        "❯ 1. Yes",
                        "  2. Yes, and add these directories to the allowed list",
                        "  3. No (Esc)",
                    ],
                ),
                Live::Question => (
                    "Question",
                    "Enter the name for the new branch:",
                    &["❯ 1. feature/parser", "  2. fix/parser"],
                ),
                _ => (
                    "Confirm folder trust",
                    "Do you trust the files in this folder?",
                    &[
                        "❯ 1. Yes",
                        "  2. Yes, and remember this folder",
                        "  3. No (Esc)",
                    ],
                ),
            };
            rows.push(Row::text(format!("○ Asking user {body}")));
            rows.push(Row::blank());
            rows.push(Row::text(format!("╭{}╮", "─".repeat(66))));
            rows.push(Row::text(format!("│ {title:<64} │")));
            rows.push(Row::text(format!("│ {body:<64} │")));
            for o in options {
                rows.push(Row::text(format!("│ {o:<64} │")));
            }
            rows.push(Row::text(format!(
                "│ {:<64} │",
                "↑/↓ to select · enter to confirm · esc to cancel"
            )));
            rows.push(Row::text(format!("╰{}╯", "─".repeat(66))));
        }
        Live::Plan => {}
    }
}

// ----- Aider. -----

fn aider(spec: &Spec, rng: &mut Rng, rows: &mut Vec<Row>) {
    rows.push(Row::text(format!("> {}", sentence(rng, 6))));
    rows.push(Row::blank());
    rows.push(Row::text(sentence(rng, 14)));
    rows.push(Row::text("Applied edit to src/main.py"));
    rows.push(Row::text(
        "Commit 1a2b3c4 fix: handle the missing config file",
    ));
    rows.push(Row::faint("─".repeat(usize::from(spec.width).min(80))));
    match spec.live {
        Live::Idle => {
            rows.push(Row::text("src/main.py"));
            rows.push(Row::text(rng.pick(&[
                "> ",
                "architect> ",
                "ask> ",
                "multi> ",
            ])));
        }
        Live::Working => rows.push(Row::text(rng.pick(&[
            "░█        Waiting for gpt-4o",
            "   ░█     Waiting for anthropic/claude-sonnet-4",
        ]))),
        Live::Permission => rows.push(Row::text(
            "Add src/utils.py to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: ",
        )),
        _ => {}
    }
}

/// A short human-readable description of a spec, for failure messages.
pub(crate) fn describe(spec: &Spec) -> String {
    let (bytes, rows) = spec.render();
    let mut s = format!("{spec:?} ({rows} rows)\n");
    let _ = write!(s, "{}", String::from_utf8_lossy(&bytes));
    s
}
