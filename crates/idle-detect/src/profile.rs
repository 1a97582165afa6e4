//! Detector profiles: per-agent screen rules as data.
//!
//! A profile is a TOML file: a `[layout]` table that says how to find the agent's input
//! prompt, its prompt box, the status line above it and the markers that start a new turn,
//! and a list of `[[rule]]`s. Each rule names a state, a priority, a screen region and
//! matchers (`contains`, `regex`, `line`, nested `any` / `all` / `not`, and `prompt`); the
//! highest-priority rule that matches decides, and a screen no rule matches is `unknown`.
//! The six built-in profiles are embedded in the binary; a user file may replace one or, with
//! `extends = "<name>"`, override single rules (same `id`), drop some (`disable`), and add
//! more.
//!
//! Matching is wrap-tolerant by construction: `contains` needles are compared with the region
//! lower-cased, box borders (`│`) removed and every run of whitespace, line breaks included,
//! collapsed to one space, so a footer that a narrow terminal split over two lines still
//! matches. `regex` patterns see the raw region text and use `\s+` where a wrap may fall.

use regex::Regex;
use serde::Deserialize;

use crate::error::DetectError;
use crate::screen::Screen;
use crate::signals::{BlockedKind, SessionState};

/// The built-in profiles, in the order `hyoka detect --help` lists them.
const BUILTIN: &[(&str, &str)] = &[
    ("claude-code", include_str!("../profiles/claude-code.toml")),
    ("codex", include_str!("../profiles/codex.toml")),
    ("gemini", include_str!("../profiles/gemini.toml")),
    ("copilot", include_str!("../profiles/copilot.toml")),
    ("aider", include_str!("../profiles/aider.toml")),
    ("generic", include_str!("../profiles/generic.toml")),
];

/// Other names accepted for the built-in profiles.
const ALIASES: &[(&str, &str)] = &[
    ("claude", "claude-code"),
    ("copilot-cli", "copilot"),
    ("gemini-cli", "gemini"),
];

/// How many non-empty lines a region without a prompt falls back to.
const FALLBACK_LINES: usize = 40;

/// A compiled detector profile.
#[derive(Debug, Clone)]
pub struct Profile {
    name: String,
    description: String,
    layout: Layout,
    rules: Vec<Rule>,
}

/// What a profile concludes from one screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenVerdict {
    /// The state of the rule that matched, or `Unknown`.
    pub state: SessionState,
    /// The blocked kind, for a `blocked` rule.
    pub blocked: Option<BlockedKind>,
    /// `<profile>/<rule id>` of the rule that matched, if any.
    pub rule: Option<String>,
    /// The screen line that matched (trimmed, at most 160 characters), or why nothing did.
    pub detail: String,
}

/// One rule of a profile, as compiled.
#[derive(Debug, Clone)]
pub struct Rule {
    id: String,
    state: SessionState,
    blocked: Option<BlockedKind>,
    priority: i32,
    region: Region,
    description: String,
    matcher: Matcher,
}

impl Rule {
    /// The rule's id, unique within its profile.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The state the rule concludes.
    pub fn state(&self) -> SessionState {
        self.state
    }

    /// The rule's priority (higher is tried first).
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// What the rule is for, as written in the profile.
    pub fn description(&self) -> &str {
        &self.description
    }
}

#[derive(Debug, Clone)]
struct Layout {
    prompt: Option<Regex>,
    not_prompt: Option<Regex>,
    rule: Option<Regex>,
    marker: Option<Regex>,
    stop: Option<Regex>,
    detail: Option<Regex>,
    boxed_input: bool,
    prompt_within: usize,
}

/// A screen region a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    Screen,
    Bottom(usize),
    Top(usize),
    Prompt,
    PromptBox,
    Status,
    AbovePrompt(usize),
    BelowPrompt,
    LineAbovePrompt,
    AfterPrompt,
    SinceMarker,
    Title,
}

#[derive(Debug, Clone, Default)]
struct Matcher {
    contains: Vec<String>,
    regex: Vec<Regex>,
    line: Vec<Regex>,
    any: Vec<Matcher>,
    all: Vec<Matcher>,
    not: Vec<Matcher>,
    prompt: Option<bool>,
}

// ----- The file format. -----

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    extends: Option<String>,
    #[serde(default)]
    disable: Vec<String>,
    #[serde(default)]
    layout: RawLayout,
    #[serde(default, rename = "rule")]
    rules: Vec<RawRule>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayout {
    prompt: Option<String>,
    not_prompt: Option<String>,
    rule: Option<String>,
    marker: Option<String>,
    stop: Option<String>,
    detail: Option<String>,
    boxed_input: Option<bool>,
    prompt_within: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    state: SessionState,
    #[serde(default)]
    blocked: Option<BlockedKind>,
    #[serde(default)]
    priority: i32,
    #[serde(default)]
    region: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    contains: OneOrMany,
    #[serde(default)]
    regex: OneOrMany,
    #[serde(default)]
    line: OneOrMany,
    #[serde(default)]
    any: Vec<RawMatcher>,
    #[serde(default)]
    all: Vec<RawMatcher>,
    #[serde(default)]
    not: Vec<RawMatcher>,
    #[serde(default)]
    prompt: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatcher {
    #[serde(default)]
    contains: OneOrMany,
    #[serde(default)]
    regex: OneOrMany,
    #[serde(default)]
    line: OneOrMany,
    #[serde(default)]
    any: Vec<RawMatcher>,
    #[serde(default)]
    all: Vec<RawMatcher>,
    #[serde(default)]
    not: Vec<RawMatcher>,
    #[serde(default)]
    prompt: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl Default for OneOrMany {
    fn default() -> Self {
        Self::Many(Vec::new())
    }
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(s) => vec![s],
            Self::Many(v) => v,
        }
    }
}

impl Profile {
    /// The built-in profile called `name` (`claude-code`, `codex`, `gemini`, `copilot`,
    /// `aider`, `generic`; `claude` is accepted for `claude-code`).
    pub fn builtin(name: &str) -> Result<Self, DetectError> {
        let raw = builtin_raw(name)?;
        let canonical = canonical_name(name).unwrap_or(name);
        compile(canonical, raw)
    }

    /// The names of the built-in profiles.
    pub fn builtin_names() -> impl Iterator<Item = &'static str> {
        BUILTIN.iter().map(|(n, _)| *n)
    }

    /// The TOML source of a built-in profile, for users who want to copy and edit it.
    pub fn builtin_source(name: &str) -> Option<&'static str> {
        let canonical = canonical_name(name)?;
        BUILTIN
            .iter()
            .find(|(n, _)| *n == canonical)
            .map(|(_, s)| *s)
    }

    /// A profile from TOML text, for example a user's `--profile-file`.
    ///
    /// With `extends = "<built-in>"` the file overrides that profile: its `[layout]` keys
    /// replace the built-in ones, a rule with an existing `id` replaces that rule, `disable`
    /// removes rules, and other rules are added. Without `extends` the file is a whole profile.
    pub fn from_toml(text: &str) -> Result<Self, DetectError> {
        let raw: RawProfile =
            toml::from_str(text).map_err(|source| DetectError::ProfileSyntax {
                profile: "<file>".to_owned(),
                source,
            })?;
        let (name, raw) = match raw.extends.clone() {
            Some(base_name) => {
                let mut base = builtin_raw(&base_name)?;
                merge(&mut base, raw.clone());
                (
                    raw.name.clone().unwrap_or_else(|| {
                        canonical_name(&base_name).unwrap_or(&base_name).to_owned()
                    }),
                    base,
                )
            }
            None => (raw.name.clone().unwrap_or_else(|| "custom".to_owned()), raw),
        };
        compile(&name, raw)
    }

    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The profile's one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The rules, highest priority first.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Classifies one screen: the first rule (by priority) whose region exists and whose
    /// matchers hold decides; no match is `Unknown`.
    pub fn classify(&self, screen: &Screen) -> ScreenVerdict {
        let analysis = Analysis::new(&self.layout, screen);
        for rule in &self.rules {
            let Some(region) = analysis.region(rule.region, screen) else {
                continue;
            };
            if let Some(witness) = rule.matcher.eval(&region, &analysis) {
                return ScreenVerdict {
                    state: rule.state,
                    blocked: rule.blocked,
                    rule: Some(format!("{}/{}", self.name, rule.id)),
                    detail: shorten(&witness),
                };
            }
        }
        ScreenVerdict {
            state: SessionState::Unknown,
            blocked: None,
            rule: None,
            detail: format!("no {} rule matched this screen", self.name),
        }
    }
}

fn canonical_name(name: &str) -> Option<&'static str> {
    BUILTIN
        .iter()
        .map(|(n, _)| *n)
        .find(|n| *n == name)
        .or_else(|| ALIASES.iter().find(|(a, _)| *a == name).map(|(_, n)| *n))
}

fn builtin_raw(name: &str) -> Result<RawProfile, DetectError> {
    let canonical = canonical_name(name).ok_or_else(|| DetectError::UnknownProfile {
        name: name.to_owned(),
        known: BUILTIN
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    let source = Profile::builtin_source(canonical).unwrap_or_default();
    toml::from_str(source).map_err(|source| DetectError::ProfileSyntax {
        profile: canonical.to_owned(),
        source,
    })
}

fn merge(base: &mut RawProfile, over: RawProfile) {
    if over.description.is_some() {
        base.description = over.description;
    }
    let l = over.layout;
    macro_rules! take {
        ($($f:ident),*) => { $( if l.$f.is_some() { base.layout.$f = l.$f; } )* };
    }
    take!(
        prompt,
        not_prompt,
        rule,
        marker,
        stop,
        detail,
        boxed_input,
        prompt_within
    );
    base.rules.retain(|r| !over.disable.contains(&r.id));
    for rule in over.rules {
        match base.rules.iter_mut().find(|r| r.id == rule.id) {
            Some(existing) => *existing = rule,
            None => base.rules.push(rule),
        }
    }
}

fn compile(name: &str, raw: RawProfile) -> Result<Profile, DetectError> {
    let layout_regex = |key: &str, pattern: Option<String>| -> Result<Option<Regex>, DetectError> {
        pattern
            .map(|p| compile_regex(name, &format!("layout.{key}"), &p))
            .transpose()
    };
    let l = raw.layout;
    let layout = Layout {
        prompt: layout_regex("prompt", l.prompt)?,
        not_prompt: layout_regex("not_prompt", l.not_prompt)?,
        rule: layout_regex("rule", l.rule)?,
        marker: layout_regex("marker", l.marker)?,
        stop: layout_regex("stop", l.stop)?,
        detail: layout_regex("detail", l.detail)?,
        boxed_input: l.boxed_input.unwrap_or(false),
        prompt_within: l.prompt_within.unwrap_or(8),
    };
    let mut rules = Vec::with_capacity(raw.rules.len());
    for r in raw.rules {
        if rules.iter().any(|x: &Rule| x.id == r.id) {
            return Err(rule_error(name, &r.id, "duplicate rule id"));
        }
        match (r.state, r.blocked) {
            (SessionState::Blocked, None) => {
                return Err(rule_error(
                    name,
                    &r.id,
                    "a blocked rule needs `blocked = \"<kind>\"`",
                ));
            }
            (s, Some(_)) if s != SessionState::Blocked => {
                return Err(rule_error(
                    name,
                    &r.id,
                    "only a blocked rule may name a blocked kind",
                ));
            }
            _ => {}
        }
        let region = parse_region(r.region.as_deref().unwrap_or("screen")).ok_or_else(|| {
            rule_error(
                name,
                &r.id,
                &format!("unknown region `{}`", r.region.clone().unwrap_or_default()),
            )
        })?;
        let matcher = compile_matcher(
            name,
            &r.id,
            RawMatcher {
                contains: r.contains,
                regex: r.regex,
                line: r.line,
                any: r.any,
                all: r.all,
                not: r.not,
                prompt: r.prompt,
            },
        )?;
        rules.push(Rule {
            id: r.id,
            state: r.state,
            blocked: r.blocked,
            priority: r.priority,
            region,
            description: r.description,
            matcher,
        });
    }
    // Highest priority first; equal priorities keep file order.
    rules.sort_by_key(|r| std::cmp::Reverse(r.priority));
    Ok(Profile {
        name: name.to_owned(),
        description: raw.description.unwrap_or_default(),
        layout,
        rules,
    })
}

fn rule_error(profile: &str, rule: &str, reason: &str) -> DetectError {
    DetectError::ProfileRule {
        profile: profile.to_owned(),
        rule: rule.to_owned(),
        reason: reason.to_owned(),
    }
}

fn compile_regex(profile: &str, rule: &str, pattern: &str) -> Result<Regex, DetectError> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 22)
        .build()
        .map_err(|source| DetectError::ProfileRegex {
            profile: profile.to_owned(),
            rule: rule.to_owned(),
            pattern: pattern.to_owned(),
            source: Box::new(source),
        })
}

fn compile_matcher(profile: &str, rule: &str, raw: RawMatcher) -> Result<Matcher, DetectError> {
    let regexes = |v: OneOrMany| -> Result<Vec<Regex>, DetectError> {
        v.into_vec()
            .iter()
            .map(|p| compile_regex(profile, rule, p))
            .collect()
    };
    let nested = |v: Vec<RawMatcher>| -> Result<Vec<Matcher>, DetectError> {
        v.into_iter()
            .map(|m| compile_matcher(profile, rule, m))
            .collect()
    };
    Ok(Matcher {
        contains: raw
            .contains
            .into_vec()
            .iter()
            .map(|s| normalize(s))
            .collect(),
        regex: regexes(raw.regex)?,
        line: regexes(raw.line)?,
        any: nested(raw.any)?,
        all: nested(raw.all)?,
        not: nested(raw.not)?,
        prompt: raw.prompt,
    })
}

fn parse_region(s: &str) -> Option<Region> {
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
    let no_count = || n.is_none();
    Some(match name {
        "screen" if no_count() => Region::Screen,
        "bottom" => Region::Bottom(count(12)?),
        "top" => Region::Top(count(12)?),
        "last_line" if no_count() => Region::Bottom(1),
        "prompt" if no_count() => Region::Prompt,
        "prompt_box" if no_count() => Region::PromptBox,
        "status" if no_count() => Region::Status,
        "above_prompt" => Region::AbovePrompt(count(3)?),
        "below_prompt" if no_count() => Region::BelowPrompt,
        "line_above_prompt" if no_count() => Region::LineAbovePrompt,
        "after_prompt" if no_count() => Region::AfterPrompt,
        "since_marker" if no_count() => Region::SinceMarker,
        "title" if no_count() => Region::Title,
        _ => return None,
    })
}

/// Lower-cases, removes box borders and collapses whitespace (line breaks included).
fn normalize(s: &str) -> String {
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

fn shorten(s: &str) -> String {
    let t = s.trim();
    if t.chars().count() <= 160 {
        t.to_owned()
    } else {
        let mut out: String = t.chars().take(159).collect();
        out.push('…');
        out
    }
}

// ----- Evaluation. -----

/// Where the prompt, its box, the status line and the last marker are on one screen.
struct Analysis<'s> {
    lines: &'s [String],
    prompt: Option<usize>,
    box_top: Option<usize>,
    box_bottom: Option<usize>,
    status: Option<usize>,
    /// The row above the status line when the status line is the wrapped rest of it.
    status_head: Option<usize>,
    marker: Option<usize>,
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

impl<'s> Analysis<'s> {
    fn new(layout: &Layout, screen: &'s Screen) -> Self {
        let lines = screen.lines();
        let matches = |re: &Option<Regex>, s: &str| re.as_ref().is_some_and(|r| r.is_match(s));
        let mut prompt = None;
        let mut seen = 0;
        for (i, l) in lines.iter().enumerate().rev() {
            if is_blank(l) {
                continue;
            }
            if matches(&layout.prompt, l) && !matches(&layout.not_prompt, l) {
                prompt = Some(i);
                break;
            }
            if matches(&layout.stop, l) {
                break;
            }
            seen += 1;
            if seen >= layout.prompt_within {
                break;
            }
        }
        let near_rule = |from: usize, up: bool| -> Option<usize> {
            let mut i = from;
            for _ in 0..3 {
                i = if up { i.checked_sub(1)? } else { i + 1 };
                let l = lines.get(i)?;
                if matches(&layout.rule, l) {
                    return Some(i);
                }
                if !is_blank(l) {
                    return None;
                }
            }
            None
        };
        let mut box_top = prompt.and_then(|p| near_rule(p, true));
        let mut box_bottom = prompt.and_then(|p| near_rule(p, false));
        if prompt.is_none() && layout.boxed_input {
            // A single line enclosed by two rules near the bottom is the input box.
            let bottom: Vec<usize> = (0..lines.len())
                .rev()
                .filter(|&i| !is_blank(&lines[i]))
                .take(8)
                .collect();
            for w in bottom.windows(3) {
                let (r2, x, r1) = (w[0], w[1], w[2]);
                if matches(&layout.rule, &lines[r2])
                    && matches(&layout.rule, &lines[r1])
                    && !matches(&layout.rule, &lines[x])
                {
                    prompt = Some(x);
                    box_top = Some(r1);
                    box_bottom = Some(r2);
                    break;
                }
            }
        }
        let status = prompt.and_then(|p| {
            let start = box_top.unwrap_or(p);
            // Rules are never the status line: a wide rule hard-wrapped by a narrow terminal
            // leaves several rule rows above the box.
            (0..start).rev().take(40).find(|&i| {
                let l = &lines[i];
                !is_blank(l) && !matches(&layout.detail, l) && !matches(&layout.rule, l)
            })
        });
        // Ink word-wraps a long status line and indents the rest under its text: walk up
        // over such continuation rows to the glyph that starts the line.
        let status_head = status.and_then(|s| {
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
        });
        let marker = lines.iter().rposition(|l| matches(&layout.marker, l));
        Self {
            lines,
            prompt,
            box_top,
            box_bottom,
            status,
            status_head,
            marker,
        }
    }

    fn region(&self, region: Region, screen: &'s Screen) -> Option<RegionText<'s>> {
        let lines = self.lines;
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
            Region::PromptBox => {
                let p = self.prompt?;
                slice(self.box_top.unwrap_or(p)..self.box_bottom.unwrap_or(p) + 1)
            }
            Region::Status => {
                let s = self.status?;
                // Ink word-wraps a long status line and indents the rest under its text:
                // read the two rows as one.
                if let Some(head) = self.status_head {
                    let rows: Vec<&str> = (head..=s).map(|i| lines[i].trim_start()).collect();
                    return Some(RegionText::joined(&rows));
                }
                vec![lines[s].as_str()]
            }
            Region::AbovePrompt(n) => {
                let p = self.prompt?;
                non_empty_from_bottom(0..self.box_top.unwrap_or(p), n)
            }
            Region::BelowPrompt => {
                let p = self.prompt?;
                slice(self.box_bottom.unwrap_or(p) + 1..lines.len())
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
            Region::Title => {
                let t = screen.title();
                if t.is_empty() {
                    return None;
                }
                vec![t]
            }
        };
        Some(RegionText::new(v))
    }
}

/// A region's lines, with the joined and normalised texts the matchers need.
struct RegionText<'s> {
    lines: Vec<std::borrow::Cow<'s, str>>,
    joined: String,
    normalized: std::cell::OnceCell<String>,
}

impl<'s> RegionText<'s> {
    fn new(lines: Vec<&'s str>) -> Self {
        let joined = lines.join("\n");
        Self {
            lines: lines.into_iter().map(std::borrow::Cow::Borrowed).collect(),
            joined,
            normalized: std::cell::OnceCell::new(),
        }
    }

    /// One logical line made of several rows (a wrapped line read whole).
    fn joined(rows: &[&str]) -> Self {
        let joined = rows.join(" ");
        Self {
            lines: vec![std::borrow::Cow::Owned(joined.clone())],
            joined,
            normalized: std::cell::OnceCell::new(),
        }
    }

    fn normalized(&self) -> &str {
        self.normalized.get_or_init(|| normalize(&self.joined))
    }

    /// The line holding byte `offset` of the joined text.
    fn line_at(&self, offset: usize) -> &str {
        let mut pos = 0;
        for l in &self.lines {
            if offset <= pos + l.len() {
                return l;
            }
            pos += l.len() + 1;
        }
        self.lines.last().map_or("", |l| l.as_ref())
    }

    /// The first line that contains `needle` (normalised), or the region's first line.
    fn line_with(&self, needle: &str) -> &str {
        self.lines
            .iter()
            .find(|l| normalize(l).contains(needle))
            .or_else(|| self.lines.iter().find(|l| !is_blank(l)))
            .map_or("", |l| l.as_ref())
    }
}

impl Matcher {
    /// Evaluates the matcher; `Some(witness line)` when it holds.
    fn eval(&self, region: &RegionText<'_>, analysis: &Analysis<'_>) -> Option<String> {
        let mut witness: Option<String> = None;
        let mut note = |w: &str| {
            if witness.is_none() {
                witness = Some(w.to_owned());
            }
        };
        if let Some(want) = self.prompt
            && analysis.prompt.is_some() != want
        {
            return None;
        }
        for needle in &self.contains {
            if !region.normalized().contains(needle.as_str()) {
                return None;
            }
            note(region.line_with(needle));
        }
        for re in &self.regex {
            let m = re.find(&region.joined)?;
            note(region.line_at(m.start()));
        }
        for re in &self.line {
            let l = region.lines.iter().find(|l| re.is_match(l))?;
            note(l);
        }
        if !self.any.is_empty() {
            let w = self.any.iter().find_map(|m| m.eval(region, analysis))?;
            note(&w);
        }
        for m in &self.all {
            let w = m.eval(region, analysis)?;
            note(&w);
        }
        if self.not.iter().any(|m| m.eval(region, analysis).is_some()) {
            return None;
        }
        Some(witness.unwrap_or_else(|| {
            region
                .lines
                .iter()
                .rev()
                .find(|l| !is_blank(l))
                .map_or_else(String::new, ToString::to_string)
        }))
    }
}

#[cfg(test)]
mod tests;
