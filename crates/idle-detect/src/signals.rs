//! The detector's outputs, shared with the respawn controller: verdicts and per-chunk signals.
//!
//! These types are the contract between `hyoka-idle-detect` and `hyoka-respawn`. Fields may
//! be added; construct them with `..Default::default()` so additions do not break callers.

use serde::{Deserialize, Serialize};

/// What an interactive agent session is doing right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    /// The agent is busy (thinking, running tools, streaming output).
    Working,
    /// The agent finished and waits at its prompt for the next instruction.
    Idle,
    /// The agent waits for a human decision; see [`BlockedKind`]. Never type into it.
    Blocked,
    /// The screen is not recognised; nothing may be concluded.
    #[default]
    Unknown,
}

/// What a blocked session waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum BlockedKind {
    /// A tool-permission prompt ("Do you want to proceed?").
    Permission,
    /// A question to the user (`AskUserQuestion`, an elicitation dialog).
    Question,
    /// A plan-approval menu ("Would you like to proceed?" after plan mode).
    Plan,
    /// A workspace-trust dialog ("Do you trust the files in this folder?").
    Trust,
    /// The input holds text nobody has sent: a person's draft. Typing into it would mangle
    /// the draft, so it is never idle; it ranks below work (a draft typed while the agent
    /// works is still work) and above idle evidence.
    Draft,
}

/// A Claude Code hook event, forwarded by `hyoka hook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// `Stop`: the agent finished its turn.
    Stop,
    /// `UserPromptSubmit` ("When the user submits a prompt", Claude Code 2.1.328's hook
    /// list): a turn started, and it lasts until the `Stop` hook. Claude Code runs no `Stop`
    /// for a turn a person interrupts, so it holds for
    /// [`DetectorConfig::prompt_hook_ttl`](crate::DetectorConfig::prompt_hook_ttl) at most,
    /// and until the person types.
    PromptSubmitted,
    /// `Notification` with `idle_prompt`: the prompt has been idle for a while.
    IdlePrompt,
    /// `Notification` with `permission_prompt`: a tool needs permission.
    PermissionPrompt,
    /// `Notification` with `elicitation_dialog`: a question to the user is open.
    ElicitationDialog,
}

/// What one chunk of terminal output says, as classified by the detector.
///
/// The respawn controller reacts to these per chunk (completion starts idle confirmation,
/// working output cancels it, a prompt confirms a step) exactly where Codeman's controller
/// reacts to its own pattern checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChunkSignals {
    /// The chunk completes a completion message (`✻ Worked for 1m 2s`, `✻ Crunched for 3s`).
    pub completion: bool,
    /// Working indicators are present (spinner, working verb, "esc to interrupt").
    pub working: bool,
    /// The input prompt (`❯`, `⏵`) was drawn and nothing says the agent is working.
    pub prompt: bool,
    /// The chunk carries more than trivial visible text (Codeman's "> 2 characters after
    /// stripping" rule); used to cancel an idle confirmation.
    pub substantial: bool,
    /// A token counter printed in this chunk (`12.3k tokens` → 12300), if any.
    pub tokens: Option<u64>,
}

/// One piece of evidence behind a [`Verdict`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Evidence {
    /// The signal (layer) that produced it: `hook`, `completion`, `working_pattern`,
    /// `spinner`, `prompt`, `silence`, `tokens`, `process_activity`, `ai_verdict`,
    /// `screen_rule`, `user_input`.
    pub signal: &'static str,
    /// The state this evidence points to.
    pub points_to: SessionState,
    /// The rule, pattern or hook that matched (for example `claude-code/permission-prompt`).
    pub rule: String,
    /// What was seen, truncated for display (for example the matched screen line).
    pub detail: String,
    /// How long ago the evidence was first seen, in milliseconds, at the time of the verdict.
    pub age_ms: u64,
    /// Where a screen rule comes from (the agent's source file or document, and version), or
    /// `""` for evidence that is not a profile rule.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source: String,
}

/// The detector's judgement of a session at one moment, with the evidence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Verdict {
    /// The state.
    pub state: SessionState,
    /// What the session waits for, when `state` is [`SessionState::Blocked`].
    pub blocked: Option<BlockedKind>,
    /// The signals that fired, strongest first.
    pub evidence: Vec<Evidence>,
}

impl Verdict {
    /// The evidence to show as the reason for the verdict: the first that points to its
    /// state, else the first of all (a verdict reached by settling, say, may have none).
    ///
    /// ```
    /// use hyoka_idle_detect::{Evidence, SessionState, Verdict};
    ///
    /// let seen = |points_to, rule: &str| Evidence {
    ///     signal: "screen_rule",
    ///     points_to,
    ///     rule: rule.to_owned(),
    ///     detail: String::new(),
    ///     age_ms: 0,
    ///     source: String::new(),
    /// };
    /// // The prompt box is on screen, but the agent's tree is busy: working, because of the CPU.
    /// let verdict = Verdict {
    ///     state: SessionState::Working,
    ///     evidence: vec![
    ///         seen(SessionState::Idle, "claude-code/prompt-box"),
    ///         seen(SessionState::Working, "process/cpu"),
    ///     ],
    ///     ..Verdict::default()
    /// };
    /// assert_eq!(verdict.deciding().map(|e| e.rule.as_str()), Some("process/cpu"));
    /// ```
    pub fn deciding(&self) -> Option<&Evidence> {
        (self.evidence.iter())
            .find(|e| e.points_to == self.state)
            .or_else(|| self.evidence.first())
    }

    /// `true` when automation may type into the session: it is idle and not blocked.
    pub fn allows_input(&self) -> bool {
        self.state == SessionState::Idle
    }

    /// `true` when `other` has the same state and blocked kind (evidence aside).
    pub fn same_state(&self, other: &Verdict) -> bool {
        self.state == other.state && self.blocked == other.blocked
    }
}

impl SessionState {
    /// The state's name as it appears in JSON (`working`, `idle`, `blocked`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::Idle => "idle",
            Self::Blocked => "blocked",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl BlockedKind {
    /// The kind's name as it appears in JSON (`permission`, `question`, `plan`, `trust`,
    /// `draft`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Permission => "permission",
            Self::Question => "question",
            Self::Plan => "plan",
            Self::Trust => "trust",
            Self::Draft => "draft",
        }
    }
}

impl std::fmt::Display for BlockedKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl HookEvent {
    /// Parses a Claude Code hook name as `hyoka hook` receives it: `Stop`, `idle_prompt`,
    /// `permission_prompt`, `elicitation_dialog` (case-insensitive; `Notification:` prefix
    /// and dashes accepted).
    pub fn parse(name: &str) -> Option<Self> {
        let n = name.trim().to_ascii_lowercase().replace('-', "_");
        let n = n.strip_prefix("notification:").unwrap_or(&n);
        match n {
            "stop" => Some(Self::Stop),
            "idle_prompt" | "idleprompt" => Some(Self::IdlePrompt),
            "permission_prompt" | "permissionprompt" => Some(Self::PermissionPrompt),
            "elicitation_dialog" | "elicitationdialog" => Some(Self::ElicitationDialog),
            _ => None,
        }
    }
}
