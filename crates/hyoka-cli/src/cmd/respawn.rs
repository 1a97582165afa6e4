//! `hyoka respawn -- COMMAND`: run an interactive agent under the respawn controller.
//!
//! The flags become a `hyoka-respawn` [`Session`] (the agent on a PTY or in tmux, contained,
//! sampled, swept and registered under its name) and a [`Machine`] configuration. This
//! command adds what belongs to a terminal program: the session mirrored to this terminal in
//! raw mode (keys go to the agent, each keystroke pauses automation, Ctrl-] detaches: a tmux
//! session keeps running) unless `--headless`, one line per state change and decision on
//! stderr when headless without `--events`, SIGINT/SIGTERM as the stop (a second one kills
//! at once), `--stop`, the `--events` file, the `--json` summary and the exit code.

use std::ffi::OsString;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use hyoka_eval::Stop;
use hyoka_idle_detect::{Detector, DetectorConfig, Profile};
use hyoka_proctrack::ProcTrackError;
use hyoka_respawn::{
    AlertOptions, Backend as SessionBackend, DetectorModel, Event, EventLog, Machine, Observer,
    Registry, RespawnConfig, RespawnError, Session, SessionEnd, SessionOptions, Size, SpawnOptions,
    Stopped, Supervised, narrate,
};
use serde_json::Value;

use crate::args::{Backend, RespawnArgs};
use crate::exit::{ExitStatus, Fail};
use crate::input::default_run_id;
use crate::out::outln;
use crate::tty::{self, user_terminal};

/// The machine's configuration from the flags, over the profile's cycle steps.
fn config(args: &RespawnArgs) -> RespawnConfig {
    let mut config = RespawnConfig {
        kickstart_prompt: args.kickstart.clone(),
        completion_confirm: args.completion_confirm,
        no_output_timeout: args.no_output_timeout,
        inter_step_delay: args.inter_step_delay,
        cycle: !args.no_cycle,
        auto_accept: !args.no_auto_accept && !args.no_cycle,
        auto_accept_delay: args.auto_accept_delay,
        human_lock: args.human_lock,
        max_cycles: args.max_cycles,
        max_cycles_per_hour: args.max_cycles_per_hour,
        dry_run: args.dry_run,
        ..RespawnConfig::for_agent(&args.profile)
    };
    if let Some(prompt) = &args.update_prompt {
        config.update_prompt.clone_from(prompt);
    }
    for (given, send, command) in [
        (
            &args.clear_command,
            &mut config.send_clear,
            &mut config.clear_command,
        ),
        (
            &args.init_command,
            &mut config.send_init,
            &mut config.init_command,
        ),
    ] {
        if let Some(given) = given {
            command.clone_from(given);
            *send = true;
        }
    }
    config.send_clear &= !args.no_clear;
    config.send_init &= !args.no_init;
    config.idle_check.enabled = args.ai_check_command.is_some();
    config.plan_check.enabled = args.plan_check_command.is_some();
    config.idle_check.timing.timeout = args.check_timeout;
    config.plan_check.timing.timeout = args.check_timeout;
    config
}

/// Writes the mirror, the `--events` file and, when narrating, one line per event worth
/// reading on stderr.
struct CliObserver {
    mirror: Option<std::io::Stdout>,
    events: Option<Arc<Mutex<EventLog>>>,
    narrate: Option<String>,
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
        if let (Some(name), Some(line)) = (&self.narrate, narrate(event)) {
            let _ = writeln!(std::io::stderr().lock(), "{name}: {line}");
        }
    }
}

pub(crate) async fn exec(args: RespawnArgs) -> Result<ExitStatus, Fail> {
    let backend = validate(&args)?;
    let registry = crate::input::registry()?;
    let name = args.name.clone().or_else(|| args.tmux_session.clone());
    if args.stop {
        return stop(&registry, name.as_deref().unwrap_or_default(), &args).await;
    }
    let events = event_log(&args)?;
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
    let mut options = options(&args, size, backend);
    options.name = name;
    options.registry = Some(registry);
    // Before the agent starts: a signal from then on stops the session, not hyoka alone.
    let (stop, signal_task) = crate::interrupt::install("the session")
        .map_err(|e| Fail::failure(format!("cannot install signal handlers: {e}")))?;
    let session = match Session::start(options).await {
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
    let checkers = session.ai_checkers(
        args.ai_check_command.as_deref(),
        args.plan_check_command.as_deref(),
        args.check_timeout,
    );
    let name = session.name().to_owned();
    let hint = session.reattach_hint();
    let parts = Supervised {
        machine: Machine::new(config(&args)),
        model,
        observer: CliObserver {
            mirror: mirror.then(std::io::stdout),
            events: events.clone(),
            narrate: (args.headless && args.events.is_none()).then(|| name.clone()),
        },
        checkers,
        keys,
        resize,
        detach,
    };
    let shutdown = {
        let mut stop = stop.clone();
        async move {
            stop.requested().await;
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
    report_end(&args, events.as_deref(), &name, hint, finished, &stop)
}

/// The `--events` file, created (truncated) now.
type Events = Option<Arc<Mutex<EventLog>>>;

fn event_log(args: &RespawnArgs) -> Result<Events, Fail> {
    let Some(path) = args.events.as_deref() else {
        return Ok(None);
    };
    let log = EventLog::create(path, Instant::now(), SystemTime::now()).map_err(|e| {
        let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string);
        Fail::usage(format!("cannot create --events {}: {why}", path.display()))
    })?;
    Ok(Some(Arc::new(Mutex::new(log))))
}

/// Writes how the session ended (the `--events` file's last lines, the `--json` summary,
/// how to re-attach a detached tmux session) and gives the exit status.
fn report_end(
    args: &RespawnArgs,
    events: Option<&Mutex<EventLog>>,
    name: &str,
    hint: Option<String>,
    finished: hyoka_respawn::Finished,
    stop: &Stop,
) -> Result<ExitStatus, Fail> {
    let report = finished
        .report
        .map_err(|e| Fail::failure(format!("cannot stop the session: {e}")))?;
    if let Some(events) = events {
        events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finished(Instant::now(), &report, &finished.teardown);
    }
    tracing::info!(
        outcome = report.end.as_str(),
        cycles = report.cycles,
        "respawn finished"
    );
    if args.json {
        let mut summary = hyoka_respawn::summary(&finished.run_id, &report, &finished.teardown);
        summary["name"] = Value::from(name);
        summary["events"] = serde_json::json!(&args.events);
        crate::out::json(&summary);
    }
    if let (SessionEnd::Detached, Some(hint)) = (&report.end, hint) {
        let _ = writeln!(std::io::stderr(), "detached: {hint}");
    }
    if finished.teardown.survivors > 0 {
        return Err(Fail::failure(format!(
            "{} process(es) of the session survived teardown",
            finished.teardown.survivors
        )));
    }
    exit_status(&report, stop)
}

/// `--stop`: through the session's controller, or a tmux session nobody supervises.
async fn stop(registry: &Registry, name: &str, args: &RespawnArgs) -> Result<ExitStatus, Fail> {
    match hyoka_respawn::stop_session(registry, name, args.grace).await {
        Ok(Stopped::ByController) => outln!("stopping session {name} through its controller"),
        Ok(Stopped::Detached(t)) if t.survivors > 0 => {
            return Err(Fail::failure(format!(
                "{} process(es) of session {name} survived",
                t.survivors
            )));
        }
        Ok(_) => {
            // Its controller is gone: what it left in the reports directory goes too.
            hyoka_respawn::forget_orphaned_session(&args.reports, name);
            outln!("stopped tmux session {name}");
        }
        Err(err) if err.is_bad_input() => return Err(Fail::usage(err.to_string())),
        Err(err) => return Err(Fail::failure(err.to_string())),
    }
    Ok(ExitStatus::Success)
}

/// The session from the flags.
fn options(args: &RespawnArgs, size: Size, backend: Backend) -> SessionOptions {
    let (program, rest) = args
        .command
        .split_first()
        .map_or((OsString::new(), &[][..]), |(p, r)| (p.clone(), r));
    let mut env = Vec::new();
    if std::env::var_os("TERM").is_none_or(|t| t.is_empty() || t == "dumb") {
        env.push(("TERM".into(), "xterm-256color".into()));
    }
    let spawn = SpawnOptions {
        program,
        args: rest.to_vec(),
        cwd: None,
        env,
        size,
    };
    let backend = match backend {
        Backend::Pty => SessionBackend::Pty,
        Backend::Tmux => SessionBackend::Tmux {
            session: args.name.clone().or_else(|| args.tmux_session.clone()),
        },
    };
    let run_id = format!("respawn-{}", default_run_id());
    let mut options = SessionOptions::new(
        run_id,
        spawn,
        backend,
        args.reports.clone(),
        std::env::temp_dir(),
        SystemTime::now(),
    );
    options.grace = args.grace;
    options.profile.clone_from(&args.profile);
    options.alerts = AlertOptions {
        on_blocked: args.on_blocked.clone(),
        blocked_after: args.blocked_after,
        on_idle: args.on_idle.clone(),
        idle_after: args.idle_after,
        ..AlertOptions::default()
    };
    options
}

/// The exit status of a session that ended as `report` says.
fn exit_status(report: &hyoka_respawn::Report, stop: &Stop) -> Result<ExitStatus, Fail> {
    if let Some(why) = report.failure() {
        return Err(Fail::failure(why));
    }
    Ok(match report.end {
        SessionEnd::Interrupted => stop
            .reason()
            .map_or(ExitStatus::Success, crate::interrupt::exit_status),
        _ => ExitStatus::Success,
    })
}

/// The effective backend: `--tmux-session` means tmux.
fn validate(args: &RespawnArgs) -> Result<Backend, Fail> {
    let backend = match (args.backend, &args.tmux_session) {
        (Some(Backend::Pty), Some(_)) => {
            return Err(Fail::usage("--tmux-session needs --backend tmux"));
        }
        (Some(backend), _) => backend,
        (None, Some(_)) => Backend::Tmux,
        (None, None) => Backend::Pty,
    };
    let named = args.name.is_some() || args.tmux_session.is_some();
    if args.stop && !named {
        return Err(Fail::usage(
            "--stop needs the session's --name or --tmux-session",
        ));
    }
    match args.command.first() {
        Some(program) if program.is_empty() => Err(Fail::usage("the agent command is empty")),
        // Re-attaching to a named tmux session needs no command.
        None if !(args.stop || backend == Backend::Tmux && named) => {
            Err(Fail::usage("no agent command after `--`"))
        }
        _ => Ok(backend),
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

/// What a session that could not start exits with: bad input (a missing agent, a reports
/// directory that cannot be used, a backend that is missing, a name in use) exits 2.
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
        err if err.is_bad_input() => Fail::usage(err.to_string()),
        err => Fail::failure(err.to_string()),
    }
}
