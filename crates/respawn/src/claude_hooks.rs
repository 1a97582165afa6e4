//! Claude Code hooks that report to `hyoka hook`: merging them into a project's
//! `.claude/settings.local.json` without disturbing what is there.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::error::RespawnError;

/// The hooks installed: (Claude Code event, matcher, `hyoka hook` argument).
const HOOKS: &[(&str, Option<&str>, &str)] = &[
    ("Stop", None, "stop"),
    ("UserPromptSubmit", None, "user_prompt_submit"),
    ("Notification", Some("idle_prompt"), "idle_prompt"),
    (
        "Notification",
        Some("permission_prompt"),
        "permission_prompt",
    ),
    (
        "Notification",
        Some("elicitation_dialog"),
        "elicitation_dialog",
    ),
];

/// What [`install_claude_hooks`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HooksInstalled {
    /// The settings file.
    pub path: PathBuf,
    /// Hook entries added.
    pub added: usize,
    /// Hook entries that were already there.
    pub present: usize,
}

/// A shell word: single quotes, with embedded quotes closed and escaped.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Merges the hook entries that call `<hyoka> hook <event>` into
/// `<dir>/.claude/settings.local.json`: existing settings and hooks are kept, an entry whose
/// command is already there is not added twice, and a file that is not a JSON object is left
/// untouched. The file is written atomically.
///
/// # Errors
/// [`RespawnError::ClaudeSettings`] when the file cannot be read or is not what Claude Code
/// writes (nothing is changed), or cannot be written.
pub fn install_claude_hooks(dir: &Path, hyoka: &Path) -> Result<HooksInstalled, RespawnError> {
    let exe = shell_quote(&hyoka.to_string_lossy());
    let claude_dir = dir.join(".claude");
    let path = claude_dir.join("settings.local.json");
    let mut settings = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|e| {
            settings_error(
                &path,
                format!(
                    "{} is not valid JSON ({e}); not touching it",
                    path.display()
                ),
                true,
            )
        })?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(err) => {
            return Err(settings_error(
                &path,
                format!("cannot read {}: {err}", path.display()),
                true,
            ));
        }
    };
    let not_object = || {
        settings_error(
            &path,
            format!(
                "{}: expected a JSON object with an object \"hooks\"; not touching it",
                path.display()
            ),
            true,
        )
    };
    let hooks = settings
        .as_object_mut()
        .ok_or_else(not_object)?
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(not_object)?;
    let (mut added, mut present) = (0, 0);
    for (event, matcher, arg) in HOOKS {
        let command = format!("{exe} hook {arg}");
        let entries = hooks
            .entry(*event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(not_object)?;
        let already = entries.iter().any(|entry| {
            entry["hooks"]
                .as_array()
                .is_some_and(|list| list.iter().any(|h| h["command"] == command.as_str()))
        });
        if already {
            present += 1;
            continue;
        }
        let mut entry = json!({ "hooks": [{ "type": "command", "command": command }] });
        if let Some(matcher) = matcher {
            entry["matcher"] = json!(matcher);
        }
        entries.push(entry);
        added += 1;
    }
    if added > 0 {
        std::fs::create_dir_all(&claude_dir).map_err(|e| {
            settings_error(
                &path,
                format!("cannot create {}: {e}", claude_dir.display()),
                true,
            )
        })?;
        let mut bytes = serde_json::to_vec_pretty(&settings).unwrap_or_default();
        bytes.push(b'\n');
        hyoka_proctrack::write_atomic(&path, &bytes).map_err(|e| {
            settings_error(
                &path,
                format!("cannot write {}: {e}", path.display()),
                false,
            )
        })?;
    }
    Ok(HooksInstalled {
        path,
        added,
        present,
    })
}

fn settings_error(path: &Path, message: String, bad_input: bool) -> RespawnError {
    RespawnError::ClaudeSettings {
        path: path.to_owned(),
        message,
        bad_input,
    }
}
