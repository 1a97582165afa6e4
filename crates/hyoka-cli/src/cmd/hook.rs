//! `hyoka hook EVENT`: forward a Claude Code hook payload (stdin) to the running respawn
//! controller, and `--install-claude-hooks`: write the hook entries that call it.
//!
//! A hook must never disturb the agent: with no controller (the session does not run under
//! `hyoka respawn`, or the controller is gone) the command says so on stderr and exits 0.
//! Claude Code reads exit code 2 of a `Stop` hook as "block stopping", so only bad input
//! (an unknown event) exits 2.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use hyoka_respawn::{HookMessage, send_hook};
use serde_json::{Map, Value, json};

use crate::args::HookArgs;
use crate::{ExitStatus, Fail};

/// The largest payload read from stdin.
const MAX_PAYLOAD: u64 = 1024 * 1024;

/// The hooks hyoka installs: (Claude Code event, matcher, `hyoka hook` argument).
const HOOKS: &[(&str, Option<&str>, &str)] = &[
    ("Stop", None, "stop"),
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

pub(crate) async fn exec(args: HookArgs) -> Result<ExitStatus, Fail> {
    // clap lets `requires` pass when the required flag conflicts with a given EVENT.
    if !args.install_claude_hooks && (args.json || args.dir.is_some()) {
        return Err(Fail::usage(
            "--json and --dir go with --install-claude-hooks, not with a hook EVENT",
        ));
    }
    if args.install_claude_hooks {
        let dir = match args.dir {
            Some(dir) => dir,
            None => std::env::current_dir()
                .map_err(|e| Fail::failure(format!("cannot find the current directory: {e}")))?,
        };
        let report = install(&dir)?;
        if args.json {
            crate::out::json(&report);
        } else {
            print_install(&report);
        }
        return Ok(ExitStatus::Success);
    }
    let event = args.event.unwrap_or_default();
    let payload = read_payload();
    let Some(socket) = args.socket else {
        tracing::info!("HYOKA_RESPAWN_SOCKET is not set: this session is not under hyoka respawn");
        return Ok(ExitStatus::Success);
    };
    let message = HookMessage { event, payload };
    if let Err(err) = send_hook(&socket, &message).await {
        tracing::warn!("no respawn controller to tell ({err})");
    }
    Ok(ExitStatus::Success)
}

/// The hook's JSON from stdin; `null` when stdin is a terminal or empty, the raw text when
/// it is not JSON.
fn read_payload() -> Value {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Value::Null;
    }
    let mut text = String::new();
    if stdin.take(MAX_PAYLOAD).read_to_string(&mut text).is_err() || text.trim().is_empty() {
        return Value::Null;
    }
    serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text }))
}

/// What `install` did.
#[derive(serde::Serialize)]
pub(crate) struct Installed {
    pub(crate) path: PathBuf,
    pub(crate) added: usize,
    pub(crate) present: usize,
}

/// A shell word: single quotes, with embedded quotes closed and escaped.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Merges hyoka's hook entries into `<dir>/.claude/settings.local.json`: existing settings
/// and hooks are kept, an entry whose command is already there is not added twice, and an
/// unreadable file is left untouched (exit 2).
pub(crate) fn install(dir: &Path) -> Result<Installed, Fail> {
    let exe = std::env::current_exe()
        .map_err(|e| Fail::failure(format!("cannot find the hyoka executable: {e}")))?;
    let exe = shell_quote(&exe.to_string_lossy());
    let claude_dir = dir.join(".claude");
    let path = claude_dir.join("settings.local.json");
    let mut settings = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|e| {
            Fail::usage(format!(
                "{} is not valid JSON ({e}); not touching it",
                path.display()
            ))
        })?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(err) => {
            return Err(Fail::usage(format!(
                "cannot read {}: {err}",
                path.display()
            )));
        }
    };
    let not_object = || {
        Fail::usage(format!(
            "{}: expected a JSON object with an object \"hooks\"; not touching it",
            path.display()
        ))
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
        std::fs::create_dir_all(&claude_dir)
            .map_err(|e| Fail::usage(format!("cannot create {}: {e}", claude_dir.display())))?;
        let mut bytes = serde_json::to_vec_pretty(&settings).unwrap_or_default();
        bytes.push(b'\n');
        hyoka_proctrack::write_atomic(&path, &bytes)
            .map_err(|e| Fail::failure(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(Installed {
        path,
        added,
        present,
    })
}

#[expect(clippy::print_stdout, reason = "the command reports what it did")]
pub(crate) fn print_install(report: &Installed) {
    println!(
        "installed {} Claude Code hook(s) in {} ({} already there)",
        report.added,
        report.path.display(),
        report.present
    );
}
