//! A deterministic simulated coding agent, for testing what supervises agents: hyoka's demo
//! and tests run it as `hyoka sim-agent …`, and another tool can embed it the same way.
//!
//! - **Batch** (the default) behaves like `claude -p --output-format stream-json`: one JSON
//!   line per event (a `system` init line, `assistant` lines sharing one `message.id` per
//!   turn, one per content block, `user` tool results, and a final `result`), and it really
//!   writes the files its `Write` tool calls name, in its current directory.
//! - **Escapees** (`--escapees`) leave processes behind on purpose, as careless agents do: a
//!   background sleeper, a child in a new session that ignores SIGTERM and SIGHUP, and a
//!   double-forked daemon. Each lives at most a minute. `--role service|review` are the
//!   demo's service and reviewer.
//! - **Interactive** (`--interactive`) draws Claude-Code-shaped screens on its terminal and
//!   reacts to what is typed (see [`InteractiveArgs`]).
//!
//! The escapees are started as `<current exe> sim-agent --role …`: a binary that embeds this
//! crate dispatches a first argument `sim-agent` to [`run`], as `hyoka` does.
//!
//! # Example
//!
//! ```no_run
//! use clap::Parser as _;
//!
//! // In the embedding binary's main, when the first argument is `sim-agent`:
//! let args = hyoka_sim_agent::SimAgentArgs::parse_from(std::env::args_os().skip(1));
//! let code = match hyoka_sim_agent::run(&args) {
//!     Ok(code) => code,
//!     Err(err) => {
//!         eprintln!("error: {err}");
//!         err.exit_code()
//!     }
//! };
//! std::process::exit(i32::from(code));
//! ```

mod args;
mod interactive;

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

pub use crate::args::{InteractiveArgs, SimAgentArgs};

/// Why the simulated agent could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// Bad input: an unknown role, a record file that cannot be opened.
    #[error("{0}")]
    Usage(String),
    /// Something failed while it ran (a write, a spawn).
    #[error("{0}")]
    Failure(String),
}

impl SimError {
    fn usage(message: impl Into<String>) -> Self {
        Self::Usage(message.into())
    }

    fn failure(message: impl Into<String>) -> Self {
        Self::Failure(message.into())
    }

    /// The exit code the agent ends with: 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            Self::Failure(_) => 1,
        }
    }
}

/// Runs the simulated agent as `args` say and returns its exit code (`--exit-code` for a
/// batch run).
///
/// # Errors
/// [`SimError::Usage`] for bad input, [`SimError::Failure`] when a write or a spawn fails.
pub fn run(args: &SimAgentArgs) -> Result<u8, SimError> {
    if args.interactive.interactive {
        return interactive::exec(&args.interactive);
    }
    if let Some(role) = &args.role {
        return escapee(role, args.pid_file.as_deref());
    }
    if args.escapees {
        spawn_escapees(args.pid_file.as_deref())?;
    }
    let mut out = std::io::stdout().lock();
    let mut emit = |value: serde_json::Value| -> Result<(), SimError> {
        writeln!(out, "{value}")
            .and_then(|()| out.flush())
            .map_err(|e| SimError::failure(format!("sim-agent: cannot write: {e}")))
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
                    .map_err(|e| SimError::failure(format!("sim-agent: {e}")))?;
            }
            std::fs::write(&path, &body)
                .map_err(|e| SimError::failure(format!("sim-agent: {e}")))?;
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
        0 => 0,
        _ => args.exit_code,
    })
}

fn content(index: u64, size: u64) -> String {
    let line = format!("generated file {index}\n");
    line.repeat(usize::try_from(size).unwrap_or(0) / line.len() + 1)
        [..usize::try_from(size).unwrap_or(0)]
        .to_owned()
}

/// How long an escapee lives at most, so a containment bug never leaks one for long.
const ESCAPEE_LIFETIME: std::time::Duration = std::time::Duration::from_mins(1);

/// Starts the escapees and waits until each has reported its pid (its readiness): to
/// `pid_file`, or to a file in the current directory (the workspace, which the run removes
/// even if this agent is killed meanwhile) that is removed again.
fn spawn_escapees(pid_file: Option<&std::path::Path>) -> Result<(), SimError> {
    let fail = |e: std::io::Error| SimError::failure(format!("sim-agent: {e}"));
    let exe = std::env::current_exe().map_err(fail)?;
    let scratch = std::path::absolute(format!(".sim-agent-{}.pids", std::process::id()));
    let ready = match pid_file {
        Some(path) => path.to_owned(),
        None => scratch.map_err(fail)?,
    };
    let lines = || {
        std::fs::read_to_string(&ready)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let before = lines();
    let mut started = Vec::new();
    for role in ["sleeper", "stubborn", "daemon-parent"] {
        let mut command = std::process::Command::new(&exe);
        command
            .args(["sim-agent", "--role", role, "--pid-file"])
            .arg(&ready)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        started.push(command.spawn().map_err(fail)?);
    }
    // The daemon's intermediate parent exits at once; the others are left running.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while lines() < before + 3 {
        if std::time::Instant::now() > deadline {
            return Err(SimError::failure("sim-agent: escapees did not start"));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Reap the daemon's intermediate parent; leave the others behind on purpose.
    for mut child in started {
        let _ = child.try_wait();
    }
    if pid_file.is_none() {
        std::fs::remove_file(&ready).map_err(fail)?;
    }
    Ok(())
}

/// The body of one escapee process.
fn escapee(role: &str, pid_file: Option<&std::path::Path>) -> Result<u8, SimError> {
    let fail = |e: std::io::Error| SimError::failure(format!("sim-agent {role}: {e}"));
    match role {
        "daemon-parent" => {
            // The first fork of a double fork: start the daemon and exit, so it is orphaned.
            let exe = std::env::current_exe().map_err(fail)?;
            let mut command = std::process::Command::new(exe);
            command
                .args(["sim-agent", "--role", "daemon"])
                .args(
                    pid_file
                        .map(|p| ["--pid-file".as_ref(), p.as_os_str()])
                        .into_iter()
                        .flatten(),
                )
                .env_clear()
                .current_dir("/")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            command.spawn().map_err(fail)?;
            return Ok(0);
        }
        "daemon" | "stubborn" => {
            // Leave the agent's session and process group, as detaching tools do.
            let _ = rustix::process::setsid();
            if role == "stubborn" {
                ignore_term_and_hup();
            }
        }
        "sleeper" => {}
        "service" => {
            // A tiny helper service: says it is ready, then serves until stopped.
            std::fs::write(".service-ready", b"ready\n").map_err(fail)?;
            Write::write_all(&mut std::io::stdout(), b"sim service: ready\n").map_err(fail)?;
        }
        "review" => return review(),
        other => {
            return Err(SimError::usage(format!(
                "sim-agent: unknown role {other:?}"
            )));
        }
    }
    if let Some(path) = pid_file {
        append(path, &format!("{role} {}\n", std::process::id())).map_err(fail)?;
    }
    let deadline = std::time::Instant::now() + ESCAPEE_LIFETIME;
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    Ok(0)
}

/// Appends `text` to the file at `path`, creating it.
fn append(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())
}

fn ignore_term_and_hup() {
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code; this
        // process is single-threaded at this point.
        unsafe {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
}

/// The review role: scores the files the agent wrote under `src/` and prints a verdict.
fn review() -> Result<u8, SimError> {
    let files = std::fs::read_dir("src").map_or(0, |entries| entries.flatten().count());
    let verdict = json!({
        "pass": files > 0,
        "score": if files > 0 { 1.0 } else { 0.0 },
        "notes": format!("{files} file(s) under src/"),
    });
    Write::write_all(&mut std::io::stdout(), format!("{verdict}\n").as_bytes())
        .map_err(|e| SimError::failure(format!("sim-agent review: {e}")))?;
    Ok(0)
}
