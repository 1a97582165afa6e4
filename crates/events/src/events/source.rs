//! Which reader reads an agent's events, and how `auto` picks one from the program name.

use std::ffi::OsString;
use std::path::Path;

use super::{CodexJsonParser, GeminiStreamJsonParser, JsonlReader, LineReader, StreamJsonParser};
use crate::error::UnknownEventSource;

/// How the harness learns what the agent does (`--events`, a suite's `events:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum EventSource {
    /// No events: only files, bytes and time are limited.
    #[default]
    None,
    /// Claude Code `--output-format stream-json` on the agent's stdout.
    StreamJson,
    /// JSON lines the agent appends to `$HYOKA_EVENTS`.
    Jsonl,
    /// `codex exec --json` on the agent's stdout.
    CodexJson,
    /// Gemini CLI `--output-format stream-json` on the agent's stdout.
    GeminiStreamJson,
    /// Chosen from the agent command's program name ([`EventSource::for_command`]).
    Auto,
}

impl EventSource {
    /// The name `--events` takes and the records use (`codex-json`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::StreamJson => "stream-json",
            Self::Jsonl => "jsonl",
            Self::CodexJson => "codex-json",
            Self::GeminiStreamJson => "gemini-stream-json",
            Self::Auto => "auto",
        }
    }

    /// The source an eval of `command` reads: [`EventSource::Auto`] becomes
    /// [`EventSource::for_command`], every other source stays itself.
    #[must_use]
    pub fn resolve(self, command: &[OsString]) -> Self {
        match self {
            Self::Auto => Self::for_command(command),
            other => other,
        }
    }

    /// The reader the agent program of `command` calls for, by the base name of its
    /// program: `claude` → [`StreamJson`](Self::StreamJson), `codex` →
    /// [`CodexJson`](Self::CodexJson), `gemini` → [`GeminiStreamJson`](Self::GeminiStreamJson),
    /// anything else (Copilot CLI, Aider, a script) → [`Jsonl`](Self::Jsonl), the
    /// `$HYOKA_EVENTS` recipe any agent can follow.
    ///
    /// The program is looked for through `env [NAME=VALUE…] PROGRAM` and `sh -c 'SCRIPT'`
    /// (`bash`, `dash`, `zsh` too, with `-c` alone or in a flag group such as `-lc`), where it
    /// is the script's first word after `exec` and `NAME=VALUE` assignments, without quotes. This only reads
    /// the strings; nothing is run or resolved on the `PATH`.
    pub fn for_command(command: &[OsString]) -> Self {
        match program_name(command).as_deref() {
            Some("claude") => Self::StreamJson,
            Some("codex") => Self::CodexJson,
            Some("gemini") => Self::GeminiStreamJson,
            _ => Self::Jsonl,
        }
    }

    /// Whether the events are read from the agent's stdout.
    pub fn reads_stdout(self) -> bool {
        matches!(
            self,
            Self::StreamJson | Self::CodexJson | Self::GeminiStreamJson
        )
    }

    /// A fresh reader of this format; `None` for [`None`](Self::None) and for
    /// [`Auto`](Self::Auto), which must be [resolved](Self::resolve) first.
    pub fn reader(self) -> Option<Box<dyn LineReader>> {
        match self {
            Self::None | Self::Auto => None,
            Self::StreamJson => Some(Box::new(StreamJsonParser::default())),
            Self::Jsonl => Some(Box::new(JsonlReader::default())),
            Self::CodexJson => Some(Box::new(CodexJsonParser::default())),
            Self::GeminiStreamJson => Some(Box::new(GeminiStreamJsonParser::default())),
        }
    }
}

impl std::fmt::Display for EventSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for EventSource {
    type Err = UnknownEventSource;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Self::None,
            Self::StreamJson,
            Self::Jsonl,
            Self::CodexJson,
            Self::GeminiStreamJson,
            Self::Auto,
        ]
        .into_iter()
        .find(|source| source.as_str() == s)
        .ok_or_else(|| UnknownEventSource { text: s.to_owned() })
    }
}

/// The base name of the agent's program, looked for through `env` and `sh -c`.
fn program_name(command: &[OsString]) -> Option<String> {
    let mut args = command.iter().map(|a| a.to_str());
    let mut program = base_name(args.next()??);
    if program == "env" {
        program =
            base_name(args.find(|a| a.is_none_or(|a| !a.starts_with('-') && !a.contains('=')))??);
    }
    if matches!(program, "sh" | "bash" | "dash" | "zsh") {
        let flags = args.next()??;
        if !is_command_flag(flags) {
            return Some(program.to_owned());
        }
        let script = args.next()??;
        let word = script
            .split_whitespace()
            .find(|w| *w != "exec" && !w.contains('='))?;
        return Some(base_name(word.trim_matches(['"', '\''])).to_owned());
    }
    Some(program.to_owned())
}

/// Whether a shell's first argument is `-c` or a flag group holding it (`-lc`, `-ec`).
fn is_command_flag(arg: &str) -> bool {
    arg.strip_prefix('-')
        .is_some_and(|flags| !flags.starts_with('-') && flags.contains('c'))
}

fn base_name(path: &str) -> &str {
    Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(path)
}
