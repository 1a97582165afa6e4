//! `hyoka respawn -- COMMAND`: run an interactive agent under the respawn controller.
//!
//! The flags become a `hyoka-respawn` [`Session`] (the agent on a PTY or in tmux, contained,
//! sampled and swept by the library) and a [`Machine`] configuration. This command adds what
//! belongs to a terminal program: the session mirrored to this terminal in raw mode (keys go
//! to the agent, each keystroke pauses automation, Ctrl-] detaches) unless `--headless`,
//! SIGINT/SIGTERM as the stop (a second one kills at once), the `--events` file, the
//! `--json` summary and the exit code.

use std::ffi::OsString;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use hyoka_eval::Stop;
use hyoka_idle_detect::{Detector, DetectorConfig, IdleChecker, PlanChecker, Profile};
use hyoka_proctrack::{ProcTrackError, TeardownReport};
use hyoka_respawn::{
    AiCheckers, Backend as SessionBackend, DetectorModel, Event, EventLog, Machine, Observer,
    RespawnConfig, RespawnError, Session, SessionEnd, SessionOptions, Size, SpawnOptions,
    Supervised, valid_tmux_name,
};
use serde_json::{Value, json};

use crate::args::{Backend, RespawnArgs};
use crate::exit::{ExitStatus, Fail};
use crate::input::default_run_id;
use crate::tty::{self, user_terminal};

/// The machine's configuration from the flags.
fn config(args: &RespawnArgs) -> RespawnConfig {
    let mut config = RespawnConfig {
        send_clear: !args.no_clear,
        send_init: !args.no_init,
        kickstart_prompt: args.kickstart.clone(),
        completion_confirm: args.completion_confirm,
        no_output_timeout: args.no_output_timeout,
        inter_step_delay: args.inter_step_delay,
        auto_accept: !args.no_auto_accept,
        auto_accept_delay: args.auto_accept_delay,
        human_lock: args.human_lock,
        max_cycles: args.max_cycles,
        max_cycles_per_hour: args.max_cycles_per_hour,
        dry_run: args.dry_run,
        ..RespawnConfig::default()
    };
    if let Some(prompt) = &args.update_prompt {
        config.update_prompt.clone_from(prompt);
    }
    config.idle_check.enabled = args.ai_check_command.is_some();
    config.plan_check.enabled = args.plan_check_command.is_some();
    config.idle_check.timing.timeout = args.check_timeout;
    config.plan_check.timing.timeout = args.check_timeout;
    config
}

/// Writes the mirror and the `--events` file.
struct CliObserver {
    mirror: Option<std::io::Stdout>,
    events: Option<Arc<Mutex<EventLog>>>,
}

impl Observer for CliObserver {
    fn output(&mut self, bytes: &[u8]) {
        if let Some(out) = &mut self.mirror {
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
    }

    fn event(&mut self, at: Instant, event: &Event) {
        let line = serde_json::to_value(event).unwrap_or(Value::Null);
        tracing::info!(target: "respawn", "{line}");
        if let Some(events) = &self.events {
            events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .event(at, event);
        }
    }
}

pub(crate) async fn exec(args: RespawnArgs) -> Result<ExitStatus, Fail> {
    validate(&args)?;
    let events = args
        .events
        .as_deref()
        .map(|path| {
            EventLog::create(path, Instant::now(), SystemTime::now()).map_err(|e| {
                let why = std::error::Error::source(&e)
                    .map_or_else(|| e.to_string(), ToString::to_string);
                Fail::usage(format!("cannot create --events {}: {why}", path.display()))
            })
        })
        .transpose()?
        .map(|log| Arc::new(Mutex::new(log)));
    if args.install_claude_hooks {
        let cwd = std::env::current_dir()
            .map_err(|e| Fail::failure(format!("cannot find the current directory: {e}")))?;
        let installed = crate::hooks::install(&cwd)?;
        if args.json {
            tracing::info!(path = %installed.path.display(), added = installed.added, "installed Claude Code hooks");
        } else {
            crate::hooks::print_install(&installed);
        }
    }
    let mirror = !args.headless;
    let interactive = mirror && tty::interactive();
    let size = if mirror { tty::size() } else { None }.unwrap_or_default();
    let model = detector_model(&args, size)?;
    // Before the agent starts: a signal from then on stops the session, not hyoka alone.
    let (stop, signal_task) = crate::interrupt::install("the session")
        .map_err(|e| Fail::failure(format!("cannot install signal handlers: {e}")))?;
    let session = match Session::start(options(&args, size)).await {
        Ok(session) => session,
        Err(err) => {
            // Bad input leaves nothing behind, not even an empty events file.
            if let Some(path) = &args.events {
                let _ = std::fs::remove_file(path);
            }
            signal_task.abort();
            return Err(start_failure(&args, err));
        }
    };
    let (user, keys, detach, resize) = user_terminal(interactive);
    let checkers = ai_checkers(&args, &session);
    let parts = Supervised {
        machine: Machine::new(config(&args)),
        model,
        observer: CliObserver {
            mirror: mirror.then(std::io::stdout),
            events: events.clone(),
        },
        checkers,
        keys,
        resize,
    };
    let shutdown = {
        let mut stop = stop.clone();
        async move {
            let detach = async {
                match detach {
                    Some(rx) => {
                        let _ = rx.await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = stop.requested() => {}
                () = detach => {}
            }
        }
    };
    let force = {
        let mut stop = stop.clone();
        async move { stop.forced().await }
    };
    let driven = session.drive(parts, shutdown, force).await;
    user.stop();
    signal_task.abort();
    let _ = signal_task.await;
    let finished = driven.stop().await;
    let report = finished
        .report
        .map_err(|e| Fail::failure(format!("cannot stop the session: {e}")))?;
    record_end(
        &args,
        events.as_deref(),
        &finished.run_id,
        &report,
        &finished.teardown,
    );
    if finished.teardown.survivors > 0 {
        return Err(Fail::failure(format!(
            "{} process(es) of the session survived teardown",
            finished.teardown.survivors
        )));
    }
    exit_status(&report, &stop)
}

/// The session from the flags.
fn options(args: &RespawnArgs, size: Size) -> SessionOptions {
    let (program, rest) = args
        .command
        .split_first()
        .map_or((OsString::new(), &[][..]), |(p, r)| (p.clone(), r));
    let mut env = Vec::new();
    if std::env::var_os("TERM").is_none_or(|t| t.is_empty() || t == "dumb") {
        env.push(("TERM".into(), "xterm-256color".into()));
    }
    SessionOptions {
        run_id: format!("respawn-{}", default_run_id()),
        spawn: SpawnOptions {
            program,
            args: rest.to_vec(),
            cwd: None,
            env,
            size,
        },
        backend: match args.backend {
            Backend::Pty => SessionBackend::Pty,
            Backend::Tmux => SessionBackend::Tmux {
                session: args.tmux_session.clone(),
            },
        },
        reports: args.reports.clone(),
        temp_dir: std::env::temp_dir(),
        grace: args.grace,
    }
}

/// A session that could not start: bad input (a missing program, no tmux, an unusable
/// reports directory) exits 2.
fn start_failure(args: &RespawnArgs, err: RespawnError) -> Fail {
    match err {
        RespawnError::Track {
            source: source @ ProcTrackError::Io { .. },
        } => Fail::usage(format!(
            "cannot use reports directory {}: {source}",
            args.reports.display()
        )),
        RespawnError::Backend { backend, source } => {
            Fail::usage(format!("--backend {backend}: {source}"))
        }
        err @ RespawnError::Spawn { .. } => Fail::usage(err.to_string()),
        err => Fail::failure(err.to_string()),
    }
}

/// The exit status of a session that ended as `report` says.
fn exit_status(report: &hyoka_respawn::Report, stop: &Stop) -> Result<ExitStatus, Fail> {
    match &report.end {
        SessionEnd::Interrupted => Ok(stop
            .reason()
            .map_or(ExitStatus::Success, crate::interrupt::exit_status)),
        SessionEnd::BudgetExhausted { .. } => Ok(ExitStatus::Success),
        SessionEnd::SessionEnded if report.exit.code == Some(0) => Ok(ExitStatus::Success),
        SessionEnd::SessionEnded => Err(Fail::failure(
            match (report.exit.code, report.exit.signal) {
                (Some(code), _) => format!("the agent exited with code {code}"),
                (None, Some(signal)) => format!("the agent was killed by signal {signal}"),
                (None, None) => "the agent's session ended".to_owned(),
            },
        )),
        SessionEnd::SessionLost { error } => {
            Err(Fail::failure(format!("lost the session: {error}")))
        }
        _ => Ok(ExitStatus::Failure),
    }
}

/// Writes how the session ended: the last two `--events` lines, a log line, and the
/// `--json` summary.
fn record_end(
    args: &RespawnArgs,
    events: Option<&Mutex<EventLog>>,
    run_id: &str,
    report: &hyoka_respawn::Report,
    sweep: &TeardownReport,
) {
    if let Some(events) = events {
        events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finished(Instant::now(), report, sweep);
    }
    tracing::info!(
        outcome = report.end.as_str(),
        cycles = report.cycles,
        survivors = sweep.survivors,
        "respawn finished"
    );
    if args.json {
        crate::out::json(&json!({
            "run_id": run_id,
            "outcome": report.end.as_str(),
            "cycles": report.cycles,
            "exit_code": report.exit.code,
            "exit_signal": report.exit.signal,
            "teardown": {
                "processes_seen": sweep.processes_seen,
                "processes_killed": sweep.processes_killed,
                "survivors": sweep.survivors,
            },
            "events": &args.events,
        }));
    }
}

fn validate(args: &RespawnArgs) -> Result<(), Fail> {
    match args.command.first() {
        None => return Err(Fail::usage("no agent command after `--`")),
        Some(program) if program.is_empty() => {
            return Err(Fail::usage("the agent command is empty"));
        }
        Some(_) => {}
    }
    if let Some(session) = &args.tmux_session {
        if args.backend != Backend::Tmux {
            return Err(Fail::usage("--tmux-session needs --backend tmux"));
        }
        if !valid_tmux_name(session) {
            return Err(Fail::usage(format!(
                "invalid --tmux-session {session:?}: use 1 to 64 of [A-Za-z0-9_-]"
            )));
        }
    }
    Ok(())
}

/// The `--ai-check-command` and `--plan-check-command` checkers.
fn ai_checkers(args: &RespawnArgs, session: &Session) -> AiCheckers {
    let checker = |command: &str| session.command_checker(command, args.check_timeout);
    AiCheckers {
        idle: args
            .ai_check_command
            .as_deref()
            .map(|command| checker(command) as Arc<dyn IdleChecker>),
        plan: args
            .plan_check_command
            .as_deref()
            .map(|command| checker(command) as Arc<dyn PlanChecker>),
    }
}

/// The detector for `--profile`, sized like the session, confirming completions as the
/// machine does.
fn detector_model(args: &RespawnArgs, size: Size) -> Result<DetectorModel, Fail> {
    let profile = Profile::builtin(&args.profile).map_err(|e| Fail::usage(e.to_string()))?;
    let config = DetectorConfig {
        rows: size.rows,
        cols: size.cols,
        completion_confirm: args.completion_confirm,
        ..DetectorConfig::default()
    };
    Ok(DetectorModel::new(Detector::new(profile, config)))
}
