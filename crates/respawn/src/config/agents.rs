//! The steps of a cycle for each agent, from what its CLI actually offers.
//!
//! A cycle is Codeman's: an update prompt that asks the agent to write down its progress,
//! then a command that clears the conversation, then one that has the agent read its
//! project memory again. Only Claude Code has all three as `/clear` and `/init` around
//! `CLAUDE.md`; the others get their own commands and memory file, or the update prompt
//! alone when clearing would lose the task with nothing to read it back from.

use super::{DEFAULT_UPDATE_PROMPT, RespawnConfig};

/// The cycle steps of one agent's CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentCycle {
    /// The update prompt (step 1).
    pub update_prompt: &'static str,
    /// The command that starts a fresh conversation, if the CLI has one worth sending.
    pub clear: Option<&'static str>,
    /// The command that rebuilds the agent's project memory, if the CLI has one.
    pub init: Option<&'static str>,
    /// The least time between the typed text showing in the input and Enter.
    pub enter_delay: std::time::Duration,
}

/// Enter 50 ms after the text (Codeman's Ink workaround).
const DEFAULT_ENTER_DELAY: std::time::Duration = std::time::Duration::from_millis(50);

/// A prompt that names no memory file, for agents that have none they read back.
const NEUTRAL_UPDATE_PROMPT: &str =
    "briefly summarize what you accomplished so far, then continue working.";

impl AgentCycle {
    /// The cycle of the agent a detector profile describes; unknown names get the
    /// `generic` cycle (the update prompt alone).
    pub fn for_profile(profile: &str) -> Self {
        match profile {
            // Claude Code: `/clear`, and `/init` writes CLAUDE.md (Codeman's cycle).
            "claude-code" => Self {
                update_prompt: DEFAULT_UPDATE_PROMPT,
                clear: Some("/clear"),
                init: Some("/init"),
                enter_delay: DEFAULT_ENTER_DELAY,
            },
            // openai/codex codex-rs/tui/src/slash_command.rs: `/clear` "clear the terminal
            // and start a new chat", `/init` "create an AGENTS.md file with instructions for
            // Codex". Not `/new`: in a Git repository 0.169 answers it with a menu ("Where
            // should the new conversation run?"), which nothing may answer for a person.
            "codex" => Self {
                update_prompt: "write a brief progress summary to AGENTS.md noting what you accomplished, then continue working.",
                clear: Some("/clear"),
                init: Some("/init"),
                enter_delay: DEFAULT_ENTER_DELAY,
            },
            // google-gemini/gemini-cli packages/cli/src/ui/commands: clearCommand.ts
            // "Clear the screen and conversation history", initCommand.ts "Analyze the
            // project and create a tailored GEMINI.md file".
            "gemini" => Self {
                update_prompt: "write a brief progress summary to GEMINI.md noting what you accomplished, then continue working.",
                clear: Some("/clear"),
                init: Some("/init"),
                // packages/cli/src/ui/components/InputPrompt.tsx (0.61): an Enter within
                // 40 ms of a paste the terminal does not vouch for inserts a newline.
                enter_delay: std::time::Duration::from_millis(200),
            },
            // github/copilot-cli changelog.md: 0.0.381 "Add `/new` as an alias for `/clear`",
            // 0.0.396 "Add `/init` command to generate Copilot instructions".
            "copilot" => Self {
                update_prompt: "write a brief progress summary to .github/copilot-instructions.md noting what you accomplished, then continue working.",
                clear: Some("/clear"),
                init: Some("/init"),
                enter_delay: DEFAULT_ENTER_DELAY,
            },
            // Aider (aider/commands.py) has `/clear` but no project memory it reads back, so
            // clearing would lose the task: the update prompt alone.
            _ => Self {
                update_prompt: NEUTRAL_UPDATE_PROMPT,
                clear: None,
                init: None,
                enter_delay: DEFAULT_ENTER_DELAY,
            },
        }
    }

    /// Sets the update prompt and the clear and init steps of `config`.
    pub fn apply(self, config: &mut RespawnConfig) {
        self.update_prompt.clone_into(&mut config.update_prompt);
        config.send_clear = self.clear.is_some();
        config.send_init = self.init.is_some();
        config.enter_delay = config.enter_delay.max(self.enter_delay);
        if let Some(clear) = self.clear {
            clear.clone_into(&mut config.clear_command);
        }
        if let Some(init) = self.init {
            init.clone_into(&mut config.init_command);
        }
    }
}
