//! The checkers' protocol: the verdict types, the [`IdleChecker`] and [`PlanChecker`]
//! traits, Codeman's prompts, and the parsing of a checker's reply.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::error::CheckError;

/// Characters of stripped output the idle checker sees (Codeman's `maxContextChars`).
pub const IDLE_CONTEXT_CHARS: usize = 16_000;
/// Characters of stripped output the plan checker sees.
pub const PLAN_CONTEXT_CHARS: usize = 8_000;

/// The idle checker's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IdleAnswer {
    /// The agent finished and waits for input.
    Idle,
    /// The agent is still working (the conservative answer); starts the cooldown.
    Working,
}

/// The plan checker's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PlanAnswer {
    /// A plan-approval menu is waiting at the bottom of the screen.
    PlanMode,
    /// No plan-approval menu; starts the cooldown.
    NotPlanMode,
}

/// A verdict whose negative answer starts the checker's cooldown.
pub trait CheckVerdict: Copy + std::fmt::Debug + Send + Sync + 'static {
    /// `true` for the answer after which Codeman waits before asking again (WORKING,
    /// NOT_PLAN_MODE).
    fn starts_cooldown(self) -> bool;
}

impl CheckVerdict for IdleAnswer {
    fn starts_cooldown(self) -> bool {
        self == Self::Working
    }
}

impl CheckVerdict for PlanAnswer {
    fn starts_cooldown(self) -> bool {
        self == Self::NotPlanMode
    }
}

/// A checker's answer: the verdict and the reasoning that followed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReply<V> {
    /// The verdict from the first line.
    pub verdict: V,
    /// The remaining lines, trimmed, or `AI determined: <VERDICT>`.
    pub reasoning: String,
}

/// Decides IDLE or WORKING from the recent output of a session.
///
/// Implementations must be cancel-safe: dropping the future abandons the check and tears down
/// whatever it started (the command-backed checker kills its process group).
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait IdleChecker: Send + Sync {
    /// Asks whether the session whose stripped output ends with `context` is idle.
    async fn check_idle(&self, context: &str) -> Result<CheckReply<IdleAnswer>, CheckError>;
}

/// Decides PLAN_MODE or NOT_PLAN_MODE from the recent output of a session.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait PlanChecker: Send + Sync {
    /// Asks whether a plan-approval menu waits at the bottom of `context`.
    async fn check_plan(&self, context: &str) -> Result<CheckReply<PlanAnswer>, CheckError>;
}

const IDLE_PROMPT: &str = "You are analyzing the terminal output of a Claude Code CLI session. Decide whether \
Claude has FINISHED its work and is waiting for the user (IDLE) or is STILL WORKING (WORKING).

CRITICAL RULE: When in doubt, ALWAYS answer WORKING. A wrong IDLE interrupts real work; a wrong \
WORKING only delays.

Answer IDLE only when at least 2 of these 3 indicator groups are present:
1. A completion summary: a line such as \"✻ Worked for 2m 46s\" (any verb: Crunched, Baked, Cogitated, \
...), or a cost or token summary.
2. The input prompt (❯) is the very last thing on the screen.
3. Completion language, such as \"All done\", \"Finished\", \"Let me know if you need anything else\".

Answer WORKING when ANY ONE of these is present:
- A spinner (⠋ ⠙ ⠹ ⠸ ⠼ ⠴ ⠦ ⠧ ⠇ ⠏ ◐ ◓ ◑ ◒ ⣾ ⣽ ⣻ ⢿ ⡿ ⣟ ⣯ ⣷ ✻ ✽ ✶ ✳ ✢) next to an activity word.
- Activity words: Thinking, Writing, Reading, Running, Searching, Editing, Creating, Deleting, \
Analyzing, Executing, Synthesizing, Brewing, Compiling, Building, Installing, Fetching, Downloading, \
Processing, Generating, Loading, Checking, Validating, Testing, Formatting, Linting.
- A tool still executing, or progress or test output that has not finished.
- Output that is truncated or unclosed, ends in \"...\", or stops mid-sentence.
- Planning phrases (\"Let me...\", \"I'll...\", \"Now I need to...\") or a todo list without completion.
- A plan-mode approval prompt with numbered options (it waits for a human, it is not idle).

Terminal output (the most recent part):
---
{TERMINAL_BUFFER}
---

Respond in exactly this format: the first line is exactly IDLE or WORKING, then your reasoning.
Remember: When uncertain, answer WORKING.";

const PLAN_PROMPT: &str = "You are analyzing the terminal output of a Claude Code CLI session. Decide whether \
the bottom of the screen shows a PLAN APPROVAL MENU that waits for the user (PLAN_MODE) or not \
(NOT_PLAN_MODE).

A plan approval menu has numbered options such as \"1. Yes\", \"2. No\", \"3. Type your own\" (or \"Yes, \
and auto-accept edits\", \"No, keep planning\"), a selector (❯ or >) on one of them, and a question such \
as \"Would you like to proceed?\" or \"Ready to implement?\", at the very bottom.

It is NOT plan mode when: a spinner or \"Thinking\" shows work in progress; a response finished with no \
menu; an AskUserQuestion dialog asks for free text; a tool permission prompt (\"Do you want to proceed?\" \
for a command or an edit) is shown; the output merely paused (network lag, mid-output).

Terminal output (the most recent part):
---
{TERMINAL_BUFFER}
---

Respond in exactly this format: the first line is exactly PLAN_MODE or NOT_PLAN_MODE, then your reasoning.";

/// The last `max_chars` characters of `text`.
pub fn tail_chars(text: &str, max_chars: usize) -> &str {
    let count = text.chars().count();
    if count <= max_chars {
        return text;
    }
    let skip = count - max_chars;
    let start = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    &text[start..]
}

/// The idle checker's prompt for `context` (stripped output): the last
/// [`IDLE_CONTEXT_CHARS`] characters inserted literally (no `$&` expansion, unlike
/// Codeman's `String.replace`).
pub fn idle_prompt(context: &str) -> String {
    IDLE_PROMPT.replacen(
        "{TERMINAL_BUFFER}",
        tail_chars(context, IDLE_CONTEXT_CHARS),
        1,
    )
}

/// The plan checker's prompt for `context`: the last [`PLAN_CONTEXT_CHARS`] characters,
/// inserted literally.
pub fn plan_prompt(context: &str) -> String {
    PLAN_PROMPT.replacen(
        "{TERMINAL_BUFFER}",
        tail_chars(context, PLAN_CONTEXT_CHARS),
        1,
    )
}

static IDLE_VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(IDLE|WORKING)\b").unwrap_or_else(|_| unreachable!("a constant pattern"))
});
static PLAN_VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(PLAN_MODE|NOT_PLAN_MODE)\b")
        .unwrap_or_else(|_| unreachable!("a constant pattern"))
});

fn parse_reply<V>(
    output: &str,
    re: &Regex,
    map: impl Fn(&str) -> V,
) -> Result<CheckReply<V>, CheckError> {
    let text = output.trim();
    if text.is_empty() {
        return Err(CheckError::EmptyOutput);
    }
    let Some(m) = re.captures(text).and_then(|c| c.get(1)) else {
        return Err(CheckError::Unparsable {
            first: text.chars().take(100).collect(),
        });
    };
    let word = m.as_str().to_ascii_uppercase();
    let reasoning = text
        .lines()
        .skip(1)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned();
    let reasoning = if reasoning.is_empty() {
        format!("AI determined: {word}")
    } else {
        reasoning
    };
    Ok(CheckReply {
        verdict: map(&word),
        reasoning,
    })
}

/// Parses an idle checker's output: the verdict from the first line, the reasoning from the
/// rest (`idle`, `Idle` are accepted; stderr noise before the verdict is an error).
pub fn parse_idle_reply(output: &str) -> Result<CheckReply<IdleAnswer>, CheckError> {
    parse_reply(output, &IDLE_VERDICT, |w| {
        if w == "IDLE" {
            IdleAnswer::Idle
        } else {
            IdleAnswer::Working
        }
    })
}

/// Parses a plan checker's output.
pub fn parse_plan_reply(output: &str) -> Result<CheckReply<PlanAnswer>, CheckError> {
    parse_reply(output, &PLAN_VERDICT, |w| {
        if w == "PLAN_MODE" {
            PlanAnswer::PlanMode
        } else {
            PlanAnswer::NotPlanMode
        }
    })
}
