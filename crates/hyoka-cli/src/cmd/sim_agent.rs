//! `hyoka sim-agent`: a deterministic simulated coding agent.
//!
//! Batch mode behaves like `claude -p --output-format stream-json`: it prints one JSON line
//! per event (a `system` init line, `assistant` lines sharing one `message.id` per turn, one
//! per content block, `user` tool results, and a final `result`), and really writes the files
//! its `Write` tool calls name, in its current directory.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use crate::args::SimAgentArgs;
use crate::{ExitStatus, Fail};

pub(crate) fn exec(args: &SimAgentArgs) -> Result<ExitStatus, Fail> {
    if args.interactive.interactive {
        return super::sim_tui::exec(&args.interactive);
    }
    let mut out = std::io::stdout().lock();
    let mut emit = |value: serde_json::Value| -> Result<(), Fail> {
        writeln!(out, "{value}")
            .and_then(|()| out.flush())
            .map_err(|e| Fail::failure(format!("sim-agent: cannot write: {e}")))
    };
    let session = format!("sim-{:08x}", fastrand::u32(..));
    emit(json!({
        "type": "system", "subtype": "init", "session_id": session,
        "cwd": std::env::current_dir().unwrap_or_default(), "tools": ["Write", "Bash"],
        "model": "hyoka-sim-agent"
    }))?;
    let turns = args.turns.max(1);
    let mut written = 0u64;
    for turn in 0..turns {
        let message_id = format!("msg_sim_{turn:04}");
        emit(json!({
            "type": "assistant", "session_id": session,
            "message": {"id": message_id, "role": "assistant", "content": [
                {"type": "text", "text": format!("Turn {}: writing the next files.", turn + 1)}
            ]}
        }))?;
        // Spread the files over the turns; the last turn takes the remainder.
        let share = if turn + 1 == turns {
            args.files - written
        } else {
            args.files / turns
        };
        for _ in 0..share {
            let path = PathBuf::from(format!("src/file_{written:03}.txt"));
            let body = content(written, args.file_size);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| Fail::failure(format!("sim-agent: {e}")))?;
            }
            std::fs::write(&path, &body).map_err(|e| Fail::failure(format!("sim-agent: {e}")))?;
            let tool_id = format!("toolu_sim_{written:04}");
            emit(json!({
                "type": "assistant", "session_id": session,
                "message": {"id": message_id, "role": "assistant", "content": [
                    {"type": "tool_use", "id": tool_id, "name": "Write",
                     "input": {"file_path": path, "content": body}}
                ]}
            }))?;
            emit(json!({
                "type": "user", "session_id": session,
                "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}
                ]}
            }))?;
            written += 1;
        }
        if !args.turn_delay.is_zero() {
            std::thread::sleep(args.turn_delay);
        }
    }
    if !args.linger.is_zero() {
        std::thread::sleep(args.linger);
    }
    emit(json!({
        "type": "result", "subtype": if args.exit_code == 0 { "success" } else { "error" },
        "session_id": session, "num_turns": turns, "is_error": args.exit_code != 0,
        "result": format!("Wrote {written} files.")
    }))?;
    Ok(match args.exit_code {
        0 => ExitStatus::Success,
        _ => ExitStatus::Code(args.exit_code),
    })
}

fn content(index: u64, size: u64) -> String {
    let line = format!("generated file {index}\n");
    line.repeat(usize::try_from(size).unwrap_or(0) / line.len() + 1)
        [..usize::try_from(size).unwrap_or(0)]
        .to_owned()
}
