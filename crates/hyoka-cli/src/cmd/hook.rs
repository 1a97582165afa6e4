//! `hyoka hook EVENT`: forward a Claude Code hook payload (stdin) to the running respawn
//! controller, and `--install-claude-hooks`: write the hook entries that call it.
//!
//! A hook must never disturb the agent: with no controller (the session does not run under
//! `hyoka respawn`, or the controller is gone) the command says so on stderr and exits 0.
//! Claude Code reads exit code 2 of a `Stop` hook as "block stopping", so an unknown event
//! is only a warning on stderr (exit 0); only misuse of the flags exits 2.

use std::io::{IsTerminal, Read};

use hyoka_respawn::{HookMessage, send_hook};
use serde_json::{Value, json};

use crate::args::HookArgs;
use crate::exit::{ExitStatus, Fail};
use crate::hooks::{install, print_install};

/// The largest payload read from stdin.
const MAX_PAYLOAD: u64 = 1024 * 1024;

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
    if !hyoka_respawn::is_hook_event_name(&event) {
        tracing::warn!(
            "unknown hook event {event:?} ignored (one of: {})",
            hyoka_respawn::HOOK_EVENT_NAMES.join(", ")
        );
        return Ok(ExitStatus::Success);
    }
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
