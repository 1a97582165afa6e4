//! Rule matchers: `contains`, `regex`, `line`, nested `any` / `all` / `not`, `prompt`,
//! `rendered` and `footer`.
//!
//! A matcher holds when every one of its clauses holds on a region; it returns the screen line
//! that witnesses the match, which `--explain` prints next to the rule.

use super::lazy::LazyRegex;
use super::region::{Analysis, Region, RegionText, normalize};

/// One compiled matcher (a rule's top level, or a nested `any` / `all` / `not` item).
#[derive(Debug, Clone, Default)]
pub(super) struct Matcher {
    /// Needles, normalised, that the normalised region must contain.
    pub(super) contains: Vec<String>,
    /// Patterns matched against the region's lines joined with `\n`.
    pub(super) regex: Vec<LazyRegex>,
    /// Patterns that some line of the region must match.
    pub(super) line: Vec<LazyRegex>,
    /// At least one of these must hold.
    pub(super) any: Vec<Matcher>,
    /// All of these must hold.
    pub(super) all: Vec<Matcher>,
    /// None of these may hold.
    pub(super) not: Vec<Matcher>,
    /// Whether an input prompt must (`true`) or must not (`false`) be on screen.
    pub(super) prompt: Option<bool>,
    /// Whether the screen must (`true`) or must not (`false`) carry rendering attributes.
    pub(super) rendered: Option<bool>,
    /// Patterns that some line below the input prompt (its footer) must match, whatever
    /// region the rule reads: the version of the program that draws the rest.
    pub(super) footer: Vec<LazyRegex>,
}

impl Matcher {
    /// Evaluates the matcher; `Some(witness line)` when it holds.
    pub(super) fn eval(&self, region: &RegionText<'_>, analysis: &Analysis<'_>) -> Option<String> {
        let mut witness: Option<String> = None;
        let mut note = |w: &str| {
            if witness.is_none() {
                witness = Some(w.to_owned());
            }
        };
        if let Some(want) = self.prompt
            && analysis.has_prompt() != want
        {
            return None;
        }
        if let Some(want) = self.rendered
            && analysis.rendered() != want
        {
            return None;
        }
        if !self.footer.is_empty() {
            let below = analysis.region(Region::BelowPrompt)?;
            for re in &self.footer {
                below.lines().find(|l| re.is_match(l))?;
            }
        }
        for needle in &self.contains {
            if !region.normalized().contains(needle.as_str()) {
                return None;
            }
            note(region.line_with(needle));
        }
        for re in &self.regex {
            let m = re.find(region.joined())?;
            note(region.line_at(m.start()));
        }
        for re in &self.line {
            let l = region.lines().find(|l| re.is_match(l))?;
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
        Some(witness.unwrap_or_else(|| region.last_non_blank().to_owned()))
    }

    /// Normalises a `contains` needle the way regions are normalised.
    pub(super) fn needle(s: &str) -> String {
        normalize(s)
    }

    /// Every pattern of this matcher and its nested ones.
    pub(super) fn patterns(&self) -> Vec<&LazyRegex> {
        let mut out: Vec<&LazyRegex> = self
            .regex
            .iter()
            .chain(&self.line)
            .chain(&self.footer)
            .collect();
        for m in self.any.iter().chain(&self.all).chain(&self.not) {
            out.extend(m.patterns());
        }
        out
    }
}
