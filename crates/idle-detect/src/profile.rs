//! Detector profiles: per-agent screen rules as data, and how their evidence is fused.
//!
//! A profile is a TOML file: a `[layout]` table that says how the agent draws its live area
//! (the input prompt, the box around it, what ends the transcript above it), and a list of
//! `[[rule]]`s. Each rule names the state its match is evidence for (with `blocked = "<kind>"`
//! for a blocked rule), the screen region(s) it looks at, matchers (`contains`, `regex`,
//! `line`, nested `any` / `all` / `not`, `prompt = true|false` for whether an input prompt is
//! drawn, `rendered = true|false` for whether the screen kept its rendering attributes,
//! `footer` for a line below the input prompt that must match whatever region the rule
//! reads: the footer says which version of the program drew the screen), and
//! where the rule comes from (`source`: the agent's file or document and version that shows
//! the screen element). The six built-in profiles are embedded in the
//! binary; a user file may replace one or, with `extends = "<name>"`, override single rules
//! (same `id`), drop some (`disable`), and add more.
//!
//! # Regions
//!
//! Rules look at regions of the screen found by the region model (see the `region` module
//! docs): `live` (the last prompt with what is drawn just above and below it, or the tail of
//! the screen when no prompt is drawn), `above`, `adjacent`, `below_prompt`, `tail`,
//! `prompt`, `prompt_text` (what is typed into the input), `prompt_box`, `status`, and the
//! positional `bottom N`, `top N`, `screen`, `title`. A rule may name several regions
//! (`region = ["adjacent", "tail"]`); it fires on the first that exists and matches.
//!
//! # Fusion
//!
//! Every rule is evaluated; each one that matches is a piece of evidence ([`RuleHit`]). The
//! verdict is safety-first: a dialog (`blocked`, any kind but `draft`) wins; then work
//! (`working`); then a rule that says the screen cannot be judged (`unknown`); then a
//! person's draft in the input (`blocked`, kind `draft`); and only when none of those fired,
//! positive idle evidence (`idle`) makes the screen idle. No evidence at all is `unknown`. A
//! rule with `overrides = true` (a mode such as history search, where the rest of the screen
//! means nothing) decides alone when it matches. Within a class, the highest `priority`
//! names the verdict.
//!
//! Matching is wrap-tolerant by construction: `contains` needles are compared with the region
//! lower-cased, box borders (`│`) removed and every run of whitespace, line breaks included,
//! collapsed to one space, so a footer that a narrow terminal split over two lines still
//! matches. `regex` patterns see the region's lines joined with `\n` and use `\s+` where a
//! wrap may fall; `line` patterns see one line at a time with box borders removed from both
//! ends.

mod lazy;
mod matcher;
mod region;

use regex::Regex;
use serde::Deserialize;

use self::lazy::LazyRegex;
use self::matcher::Matcher;
use self::region::{Analysis, Layout, Region};
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

/// A compiled detector profile.
#[derive(Debug, Clone)]
pub struct Profile {
    name: String,
    description: String,
    layout: Layout,
    rules: Vec<Rule>,
}

/// One rule that fired on a screen: a piece of evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleHit {
    /// `<profile>/<rule id>`.
    pub rule: String,
    /// The state the rule is evidence for.
    pub state: SessionState,
    /// The blocked kind, for a `blocked` rule.
    pub blocked: Option<BlockedKind>,
    /// The screen line that matched (trimmed, at most 160 characters).
    pub line: String,
    /// The region it matched in (`live`, `prompt_text`, …).
    pub region: &'static str,
    /// Where the rule comes from, as the profile says (`source = …`).
    pub source: String,
}

/// What a profile concludes from one screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenVerdict {
    /// The fused state, or `Unknown`.
    pub state: SessionState,
    /// The blocked kind, when blocked.
    pub blocked: Option<BlockedKind>,
    /// `<profile>/<rule id>` of the rule that decided, if any.
    pub rule: Option<String>,
    /// The screen line that decided (trimmed, at most 160 characters), or why nothing did.
    pub detail: String,
    /// The deciding rule's source, or `""`.
    pub source: String,
    /// Every rule that fired, the deciding one first, then in the order of the fusion.
    pub hits: Vec<RuleHit>,
}

/// One rule of a profile, as compiled.
#[derive(Debug, Clone)]
pub struct Rule {
    id: String,
    state: SessionState,
    blocked: Option<BlockedKind>,
    priority: i32,
    regions: Vec<Region>,
    overrides: bool,
    description: String,
    source: String,
    matcher: Matcher,
}

impl Rule {
    /// The rule's id, unique within its profile.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The state the rule is evidence for.
    pub fn state(&self) -> SessionState {
        self.state
    }

    /// The blocked kind, for a `blocked` rule.
    pub fn blocked(&self) -> Option<BlockedKind> {
        self.blocked
    }

    /// The rule's priority (higher is reported first within its class).
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// What the rule is for, as written in the profile.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Where the rule comes from: the agent's source file or document, and the version.
    pub fn source(&self) -> &str {
        &self.source
    }
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
    boundary: Option<String>,
    tail_boundary: Option<String>,
    turn_end: Option<String>,
    live_line: Option<String>,
    pass: Option<String>,
    status: Option<String>,
    turn_start: Option<String>,
    boxed_input: Option<bool>,
    prompt_within: Option<usize>,
    above_lines: Option<usize>,
    tail_lines: Option<usize>,
    /// Where the layout comes from, for readers of the profile.
    source: Option<String>,
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
    region: OneOrMany,
    #[serde(default)]
    overrides: bool,
    #[serde(default)]
    description: String,
    #[serde(default)]
    source: String,
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
    #[serde(default)]
    rendered: Option<bool>,
    #[serde(default)]
    footer: OneOrMany,
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
    #[serde(default)]
    rendered: Option<bool>,
    #[serde(default)]
    footer: OneOrMany,
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

    /// A profile with no rules (every screen is `unknown`), for detectors whose real profile
    /// is set later.
    pub(crate) fn none() -> Self {
        Self {
            name: "none".to_owned(),
            description: String::new(),
            layout: Layout::default(),
            rules: Vec::new(),
        }
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
        let profile = compile(&name, raw)?;
        // A user's file is compiled whole now, so a pattern the compiler refuses (one over
        // the size limit) is an error here, not a rule that silently never matches.
        profile.check_patterns()?;
        Ok(profile)
    }

    /// Compiles every rule pattern now. Patterns otherwise compile the first time a screen
    /// needs them; a caller can do this on another thread, and clones share the result.
    pub fn precompile(&self) {
        for rule in &self.rules {
            for re in rule.matcher.patterns() {
                let _ = re.compiled();
            }
        }
    }

    /// Compiles every rule pattern and returns the first compiler error.
    fn check_patterns(&self) -> Result<(), DetectError> {
        for rule in &self.rules {
            for re in rule.matcher.patterns() {
                if let Err(e) = re.compiled() {
                    return Err(DetectError::ProfileRegex {
                        profile: self.name.clone(),
                        rule: rule.id.clone(),
                        pattern: re.as_str().to_owned(),
                        source: Box::new(e.clone()),
                    });
                }
            }
        }
        Ok(())
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

    /// Classifies one screen: evaluates every rule and fuses the evidence (see the module
    /// docs).
    pub fn classify(&self, screen: &Screen) -> ScreenVerdict {
        let analysis = Analysis::new(&self.layout, screen);
        let mut hits: Vec<(usize, RuleHit)> = Vec::new();
        for (index, rule) in self.rules.iter().enumerate() {
            let hit = rule.regions.iter().find_map(|&r| {
                let text = analysis.region(r)?;
                let witness = rule.matcher.eval(&text, &analysis)?;
                Some((r, witness))
            });
            let Some((region, witness)) = hit else {
                continue;
            };
            let hit = RuleHit {
                rule: format!("{}/{}", self.name, rule.id),
                state: rule.state,
                blocked: rule.blocked,
                line: shorten(&witness),
                region: region.name(),
                source: rule.source.clone(),
            };
            if rule.overrides {
                return verdict_from(hit.clone(), vec![hit]);
            }
            hits.push((index, hit));
        }
        // Rules are sorted by priority, so a stable sort by class keeps priority order within
        // each class.
        hits.sort_by_key(|(_, h)| fusion_class(h));
        let hits: Vec<RuleHit> = hits.into_iter().map(|(_, h)| h).collect();
        match hits.first() {
            Some(first) => verdict_from(first.clone(), hits),
            None => ScreenVerdict {
                state: SessionState::Unknown,
                blocked: None,
                rule: None,
                detail: format!("no {} rule matched this screen", self.name),
                source: String::new(),
                hits,
            },
        }
    }
}

/// The fusion order: lower classes decide first.
fn fusion_class(hit: &RuleHit) -> u8 {
    match (hit.state, hit.blocked) {
        (SessionState::Blocked, Some(BlockedKind::Draft)) => 3,
        (SessionState::Blocked, _) => 0,
        (SessionState::Working, _) => 1,
        (SessionState::Unknown, _) => 2,
        (SessionState::Idle, _) => 4,
    }
}

fn verdict_from(decisive: RuleHit, hits: Vec<RuleHit>) -> ScreenVerdict {
    ScreenVerdict {
        state: decisive.state,
        blocked: decisive.blocked,
        rule: Some(decisive.rule),
        detail: decisive.line,
        source: decisive.source,
        hits,
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
        boundary,
        tail_boundary,
        turn_end,
        live_line,
        pass,
        status,
        turn_start,
        boxed_input,
        prompt_within,
        above_lines,
        tail_lines,
        source
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
        boundary: layout_regex("boundary", l.boundary)?,
        tail_boundary: layout_regex("tail_boundary", l.tail_boundary)?,
        turn_end: layout_regex("turn_end", l.turn_end)?,
        live_line: layout_regex("live_line", l.live_line)?,
        pass: layout_regex("pass", l.pass)?,
        status: layout_regex("status", l.status)?,
        turn_start: layout_regex("turn_start", l.turn_start)?,
        boxed_input: l.boxed_input.unwrap_or(false),
        prompt_within: l.prompt_within.unwrap_or(8),
        above_lines: l.above_lines.unwrap_or(10).max(1),
        tail_lines: l.tail_lines.unwrap_or(15).max(1),
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
        let mut names = r.region.into_vec();
        if names.is_empty() {
            names.push("screen".to_owned());
        }
        let regions = names
            .iter()
            .map(|n| {
                Region::parse(n)
                    .ok_or_else(|| rule_error(name, &r.id, &format!("unknown region `{n}`")))
            })
            .collect::<Result<Vec<_>, _>>()?;
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
                rendered: r.rendered,
                footer: r.footer,
            },
        )?;
        rules.push(Rule {
            id: r.id,
            state: r.state,
            blocked: r.blocked,
            priority: r.priority,
            regions,
            overrides: r.overrides,
            description: r.description,
            source: r.source,
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
    let regexes = |v: OneOrMany| -> Result<Vec<LazyRegex>, DetectError> {
        v.into_vec()
            .iter()
            .map(|p| {
                LazyRegex::new(p).map_err(|source| DetectError::ProfileRegex {
                    profile: profile.to_owned(),
                    rule: rule.to_owned(),
                    pattern: p.clone(),
                    source: Box::new(source),
                })
            })
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
            .map(|s| Matcher::needle(s))
            .collect(),
        regex: regexes(raw.regex)?,
        line: regexes(raw.line)?,
        any: nested(raw.any)?,
        all: nested(raw.all)?,
        not: nested(raw.not)?,
        prompt: raw.prompt,
        rendered: raw.rendered,
        footer: regexes(raw.footer)?,
    })
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

#[cfg(test)]
mod tests;
