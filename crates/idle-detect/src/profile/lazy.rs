//! Rule patterns compiled on first use.
//!
//! A profile holds about a hundred patterns, and compiling them all (Unicode classes, case
//! folding, the regex engines' automata) costs several milliseconds, while one screen usually
//! needs only some: a rule stops at its first failing clause, and rules whose region is not on
//! screen look at nothing. A pattern is parsed when the profile is loaded, so a bad one is
//! refused there, and compiled the first time a screen needs it; clones of a profile share the
//! compiled pattern.

use std::sync::{Arc, OnceLock};

use regex::{Match, Regex};

/// The size limit of a compiled pattern (bytes of automaton).
const SIZE_LIMIT: usize = 1 << 22;

/// A pattern, parsed at load and compiled on first use.
#[derive(Debug, Clone)]
pub(super) struct LazyRegex {
    pattern: Arc<str>,
    compiled: Arc<OnceLock<Result<Regex, regex::Error>>>,
}

impl LazyRegex {
    /// Parses `pattern`; the error is the parser's, as the regex crate would report it.
    pub(super) fn new(pattern: &str) -> Result<Self, regex::Error> {
        if let Err(e) = regex_syntax::Parser::new().parse(pattern) {
            return Err(regex::Error::Syntax(e.to_string()));
        }
        Ok(Self {
            pattern: Arc::from(pattern),
            compiled: Arc::new(OnceLock::new()),
        })
    }

    /// The compiled pattern (compiled now if it was not), or the compiler's error.
    pub(super) fn compiled(&self) -> Result<&Regex, &regex::Error> {
        self.compiled
            .get_or_init(|| {
                regex::RegexBuilder::new(&self.pattern)
                    .size_limit(SIZE_LIMIT)
                    .build()
            })
            .as_ref()
    }

    /// `true` when the pattern matches somewhere in `text`; a pattern that does not compile
    /// (one over the size limit) matches nothing.
    pub(super) fn is_match(&self, text: &str) -> bool {
        self.compiled().is_ok_and(|re| re.is_match(text))
    }

    /// The first match in `text`.
    pub(super) fn find<'t>(&self, text: &'t str) -> Option<Match<'t>> {
        self.compiled().ok()?.find(text)
    }

    /// The pattern as written.
    pub(super) fn as_str(&self) -> &str {
        &self.pattern
    }
}
