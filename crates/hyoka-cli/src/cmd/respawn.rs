//! `hyoka respawn -- COMMAND`: run an interactive agent under the respawn controller.
//!
//! The agent runs on a PTY (or in a tmux session on a private server); its screen is
//! mirrored to this terminal in raw mode (keys go to the agent, each keystroke pauses
//! automation, Ctrl-] detaches) unless `--headless`. Hooks arrive on a private socket
//! whose path the agent finds in `HYOKA_RESPAWN_SOCKET`. At the end (the cycle budget, the
//! agent exiting, SIGINT/SIGTERM) the agent's process group is stopped and then every
//! process still carrying the session's `HYOKA_RUN_ID` is swept by `hyoka-proctrack`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use hyoka_idle_detect::{
    CommandChecker, CommandCheckerOptions, Detector, DetectorConfig, IdleChecker, PlanChecker,
    ProcessActivity, Profile,
};
use hyoka_proctrack::{Agent, ProcTrackError, Tracker, TrackerOptions};
use hyoka_proctrack::{
    Marker, NativeProcTable, NativeSignaller, ProcTable, Scope, Seams, SystemClock,
    TeardownOptions, TeardownReport, teardown,
};
use hyoka_respawn::{
    AiCheckers, DetectorModel, Driver, DriverInputs, DriverOptions, Event, HookListener, Machine,
    Observer, Outcome, PtyTerminal, RespawnConfig, Size, SpawnOptions, Terminal, TmuxOptions,
    TmuxTerminal,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::args::{Backend, RespawnArgs};
use crate::cmd::run::default_run_id;
use crate::interrupt::{self, Sig};
use crate::records::rfc3339;
use crate::tty::{self, KeyReader, RawMode};
use crate::{ExitStatus, Fail};

/// The environment variable that tells `hyoka hook` where the controller listens.
pub(crate) const SOCKET_ENV: &str = "HYOKA_RESPAWN_SOCKET";

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

/// `--events FILE`: one JSON object per line, flushed per line.
struct EventLog {
    file: std::io::BufWriter<std::fs::File>,
    started: Instant,
    wall: SystemTime,
}

impl EventLog {
    fn create(path: &Path) -> Result<Self, Fail> {
        let file = std::fs::File::create(path)
            .map_err(|e| Fail::usage(format!("cannot create --events {}: {e}", path.display())))?;
        Ok(Self {
            file: std::io::BufWriter::new(file),
            started: Instant::now(),
            wall: SystemTime::now(),
        })
    }

    fn write(&mut self, at: Instant, mut line: Value) {
        let since = at.saturating_duration_since(self.started);
        if let Value::Object(map) = &mut line {
            map.insert(
                "t_ms".to_owned(),
                json!(u64::try_from(since.as_millis()).unwrap_or(u64::MAX)),
            );
            map.insert("time".to_owned(), json!(rfc3339(self.wall + since)));
        }
        let _ = writeln!(self.file, "{line}");
        let _ = self.file.flush();
    }
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
                .write(at, line);
        }
    }
}

/// The private directory of the hook socket, removed at the end. For a named tmux session
/// its path is fixed, so that a re-attached agent's `HYOKA_RESPAWN_SOCKET` still points
/// at the controller.
struct SocketDir(PathBuf);

impl SocketDir {
    /// Removes the socket directories of controllers that died without cleaning up (a
    /// SIGKILL): nobody listens on their socket and they are older than a minute.
    fn sweep_stale() {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            let name = entry.file_name();
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 60));
            if !name.to_string_lossy().starts_with("hyoka-respawn-")
                || !entry.file_type().is_ok_and(|t| t.is_dir())
                || !old
            {
                continue;
            }
            let socket = dir.join("hook.sock");
            let listened = std::os::unix::net::UnixStream::connect(&socket).is_ok();
            let only_socket = std::fs::read_dir(&dir)
                .is_ok_and(|mut d| d.all(|e| e.is_ok_and(|e| e.file_name() == "hook.sock")));
            if !listened && only_socket {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }

    fn create(
        session: Option<&str>,
        run_id: &str,
        tracker: Option<&Tracker>,
    ) -> Result<Self, Fail> {
        Self::sweep_stale();
        let fail = |e: std::io::Error| {
            Fail::failure(format!("cannot create the hook socket directory: {e}"))
        };
        let dir = match (session, tracker) {
            // Marked like a workspace of the run instance and recorded in the ledger before it
            // exists, so `clean` removes it if the controller is SIGKILLed.
            (None, Some(tracker)) => {
                let options = hyoka_workspace::WorkspaceOptions {
                    root: std::env::temp_dir(),
                    run_id: hyoka_workspace::RunId::new(run_id)
                        .map_err(|e| Fail::failure(e.to_string()))?,
                    eval_id: Some(
                        hyoka_workspace::EvalId::new(SOCKET_EVAL)
                            .map_err(|e| Fail::failure(e.to_string()))?,
                    ),
                    keep: hyoka_workspace::KeepPolicy::Always,
                    starter: None,
                    inject: Vec::new(),
                    instance: Some(tracker.instance().to_string()),
                    owner: Some(hyoka_workspace::MarkerOwner::pid(tracker.owner().pid())),
                };
                let made = hyoka_workspace::TempWorkspace::create_recorded(&options, |path| {
                    tracker.record_workspace(SOCKET_EVAL, path)
                })
                .and_then(|ws| ws.close(hyoka_workspace::RunVerdict::Success))
                .map_err(|e| {
                    Fail::failure(format!("cannot create the hook socket directory: {e}"))
                })?;
                match made {
                    hyoka_workspace::Closed::Kept(path) => path,
                    _ => return Err(Fail::failure("the hook socket directory was not kept")),
                }
            }
            (_, _) => Self::create_plain(session, run_id).map_err(fail)?,
        };
        Ok(Self(dir))
    }

    fn create_plain(session: Option<&str>, run_id: &str) -> Result<PathBuf, std::io::Error> {
        let fail = |e: std::io::Error| e;
        let dir = match session {
            Some(session) => {
                let dir = std::env::temp_dir().join(format!("hyoka-respawn-{session}"));
                match std::fs::create_dir(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(fail(e)),
                }
                let private =
                    <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700);
                std::fs::set_permissions(&dir, private).map_err(fail)?;
                dir
            }
            None => tempfile::Builder::new()
                .prefix(&format!("hyoka-{run_id}-sock-"))
                .tempdir()
                .map_err(fail)?
                .keep(),
        };
        Ok(dir)
    }
}

/// The ledger id of the hook socket directory (a workspace of the session's run).
const SOCKET_EVAL: &str = "session.sock";

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn valid_session(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The eval id under which a respawn session is tracked (and its processes marked).
const SESSION_EVAL: &str = "session";

/// The eval id the AI checkers' processes carry: outside the session's tree (a checker on
/// the CPU is not the agent at work), inside the run's final sweep.
const CHECKER_EVAL: &str = "session.check";

/// Everything started before the driver runs.
struct Session {
    run_id: String,
    socket_dir: SocketDir,
    listener: HookListener,
    terminal: Box<dyn Terminal>,
    root: Option<hyoka_proctrack::ProcRef>,
    /// The run's tracker and the adopted session (pty backend): ledger, owner lock,
    /// containment and teardown.
    adopted: Option<(Tracker, Arc<Mutex<Agent>>)>,
    /// The run's ledger directory (pty backend), removed when nothing survives teardown,
    /// whether or not the session could be adopted.
    ledger_dir: Option<PathBuf>,
    size: Size,
    interactive: bool,
}

/// The user's terminal while the session runs.
struct UserTerminal {
    raw: Option<RawMode>,
    keys: Option<KeyReader>,
    resize_task: Option<tokio::task::JoinHandle<()>>,
}

pub(crate) async fn exec(args: RespawnArgs) -> Result<ExitStatus, Fail> {
    validate(&args)?;
    let events = args
        .events
        .as_deref()
        .map(EventLog::create)
        .transpose()?
        .map(|log| Arc::new(Mutex::new(log)));
    if args.install_claude_hooks {
        let cwd = std::env::current_dir()
            .map_err(|e| Fail::failure(format!("cannot find the current directory: {e}")))?;
        let installed = crate::cmd::hook::install(&cwd)?;
        if args.json {
            tracing::info!(path = %installed.path.display(), added = installed.added, "installed Claude Code hooks");
        } else {
            crate::cmd::hook::print_install(&installed);
        }
    }
    let session = match start(&args).await {
        Ok(session) => session,
        Err(fail) => {
            // Bad input leaves nothing behind, not even an empty events file.
            if let Some(path) = &args.events {
                let _ = std::fs::remove_file(path);
            }
            return Err(fail);
        }
    };
    let Driven {
        result,
        signalled,
        run_id,
        root,
        adopted,
        ledger_dir,
    } = drive(&args, session, events.clone()).await?;
    let mut closed = true;
    let sweep = match adopted {
        Some((tracker, agent)) => {
            let mut report = stop_tracked(agent, &run_id, root, args.grace).await;
            // Whatever else carries the run's marker (a checker's leftovers) goes too.
            let rest = sweep(&run_id, None, args.grace).await;
            report.processes_seen += rest.processes_seen;
            report.processes_killed += rest.processes_killed;
            report.survivors += rest.survivors;
            if let Err(err) = tracker.close() {
                tracing::error!(error = %err, "cannot close the session's ledger");
                closed = false;
            }
            report
        }
        // Not adopted (tmux, or an agent gone before it could be): the marker sweep.
        None => sweep(&run_id, root, args.grace).await,
    };
    // The ledger exists only so `hyoka clean` can repair a crash; a session torn down
    // without survivors leaves no directory behind, only its `--events` file.
    if closed
        && sweep.survivors == 0
        && let Some(dir) = &ledger_dir
    {
        remove_ledger_dir(dir);
    }
    let report = result.map_err(|e| Fail::failure(format!("cannot stop the session: {e}")))?;
    record_end(&args, events.as_deref(), &run_id, &report, &sweep);
    if sweep.survivors > 0 {
        return Err(Fail::failure(format!(
            "{} process(es) of the session survived teardown",
            sweep.survivors
        )));
    }
    match report.outcome {
        Outcome::Interrupted => Ok(signalled.map_or(ExitStatus::Success, Sig::exit_status)),
        Outcome::BudgetExhausted { .. } => Ok(ExitStatus::Success),
        Outcome::SessionEnded if report.exit.code == Some(0) => Ok(ExitStatus::Success),
        Outcome::SessionEnded => Err(Fail::failure(
            match (report.exit.code, report.exit.signal) {
                (Some(code), _) => format!("the agent exited with code {code}"),
                (None, Some(signal)) => format!("the agent was killed by signal {signal}"),
                (None, None) => "the agent's session ended".to_owned(),
            },
        )),
        Outcome::SessionLost { error } => Err(Fail::failure(format!("lost the session: {error}"))),
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
        let mut log = events.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        log.write(
            now,
            json!({
                "event": "finished",
                "outcome": outcome_name(&report.outcome),
                "cycles": report.cycles,
                "exit_code": report.exit.code,
                "exit_signal": report.exit.signal,
            }),
        );
        log.write(
            now,
            json!({
                "event": "teardown",
                "processes_seen": sweep.processes_seen,
                "processes_killed": sweep.processes_killed,
                "survivors": sweep.survivors,
            }),
        );
    }
    tracing::info!(
        outcome = outcome_name(&report.outcome),
        cycles = report.cycles,
        survivors = sweep.survivors,
        "respawn finished"
    );
    if args.json {
        crate::out::json(&json!({
            "run_id": run_id,
            "outcome": outcome_name(&report.outcome),
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

/// Removes a cleanly closed session's ledger directory (the ledger and the owner lock; a
/// directory holding anything else is left alone).
fn remove_ledger_dir(dir: &Path) {
    for name in [hyoka_proctrack::LEDGER_FILE, hyoka_proctrack::LOCK_FILE] {
        if let Err(err) = std::fs::remove_file(dir.join(name))
            && err.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(error = %err, dir = %dir.display(), "cannot remove the session's ledger");
        }
    }
    let _ = std::fs::remove_dir(dir);
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
        if !valid_session(session) {
            return Err(Fail::usage(format!(
                "invalid --tmux-session {session:?}: use 1 to 64 of [A-Za-z0-9_-]"
            )));
        }
    }
    Ok(())
}

/// Binds the hook socket and starts the agent.
async fn start(args: &RespawnArgs) -> Result<Session, Fail> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| Fail::usage("no agent command after `--`"))?;
    let run_id = format!("respawn-{}", default_run_id());
    let session = args.tmux_session.clone().unwrap_or_else(|| run_id.clone());
    let tracker = if args.backend == Backend::Pty {
        let tracker = Tracker::start(TrackerOptions::new(run_id.as_str(), &args.reports)).map_err(
            |e| match e {
                ProcTrackError::Io { .. } => Fail::usage(format!(
                    "cannot use reports directory {}: {e}",
                    args.reports.display()
                )),
                other => Fail::failure(format!("cannot start tracking the session: {other}")),
            },
        )?;
        Some(tracker)
    } else {
        None
    };
    let socket_dir = SocketDir::create(args.tmux_session.as_deref(), &run_id, tracker.as_ref())?;
    let listener = HookListener::bind(&socket_dir.0.join("hook.sock"))
        .await
        .map_err(|e| Fail::failure(e.to_string()))?;
    let mirror = !args.headless;
    let interactive = mirror && tty::interactive();
    let size = if mirror { tty::size() } else { None }.unwrap_or_default();
    let ledger_dir = tracker.as_ref().map(|t| t.run_dir().to_owned());
    let mut env: Vec<(OsString, OsString)> = match &tracker {
        // The run instance's marker, for `clean` to find the session's escapees.
        Some(tracker) => tracker.marker_env(SESSION_EVAL),
        None => vec![
            ("HYOKA_RUN_ID".into(), run_id.clone().into()),
            ("HYOKA_EVAL_ID".into(), SESSION_EVAL.into()),
        ],
    };
    env.push((SOCKET_ENV.into(), listener.path().as_os_str().to_owned()));
    if std::env::var_os("TERM").is_none_or(|t| t.is_empty() || t == "dumb") {
        env.push(("TERM".into(), "xterm-256color".into()));
    }
    let spawn = SpawnOptions {
        program: program.clone(),
        args: rest.to_vec(),
        cwd: None,
        env,
        size,
    };
    let terminal = match start_terminal(args, &spawn, &session).await {
        Ok(terminal) => terminal,
        Err(fail) => {
            // Nothing started: the ledger has nothing to repair.
            if let Some(tracker) = tracker
                && tracker.close().is_ok()
                && let Some(dir) = &ledger_dir
            {
                remove_ledger_dir(dir);
            }
            return Err(fail);
        }
    };
    let child_pid = terminal.child_pid().and_then(|pid| i32::try_from(pid).ok());
    let root = child_pid
        .and_then(|pid| NativeProcTable::new().process(pid))
        .map(|info| info.proc_ref());
    // Adopted right after the spawn: the session joins a cgroup leaf when there is one, and
    // its tree is kept in the ledger.
    let adopted = match (tracker, child_pid) {
        (Some(tracker), Some(pid)) => match tracker.adopt(SESSION_EVAL, pid) {
            Ok(agent) => Some((tracker, Arc::new(Mutex::new(agent)))),
            Err(err) => {
                tracing::warn!(error = %err, "cannot track the session; teardown falls back to the marker sweep");
                let _ = tracker.close();
                None
            }
        },
        (Some(tracker), None) => {
            let _ = tracker.close();
            None
        }
        (None, _) => None,
    };
    Ok(Session {
        run_id,
        socket_dir,
        listener,
        terminal,
        root,
        adopted,
        ledger_dir,
        size,
        interactive,
    })
}

/// What is left to stop and record once the driver returns.
struct Driven {
    result: Result<hyoka_respawn::Report, hyoka_respawn::RespawnError>,
    signalled: Option<Sig>,
    run_id: String,
    root: Option<hyoka_proctrack::ProcRef>,
    adopted: Option<(Tracker, Arc<Mutex<Agent>>)>,
    ledger_dir: Option<PathBuf>,
}

/// Runs the driver until the end, then stops everything but the marker sweep.
async fn drive(
    args: &RespawnArgs,
    session: Session,
    events: Option<Arc<Mutex<EventLog>>>,
) -> Result<Driven, Fail> {
    let Session {
        run_id,
        socket_dir,
        listener,
        terminal,
        root,
        adopted,
        ledger_dir,
        size,
        interactive,
    } = session;
    let (activity_tx, activity_rx) = mpsc::channel(4);
    let refresher = sampler(args.backend, adopted.as_ref(), root).map(|sample| {
        let (stop, stopped) = oneshot::channel();
        (stop, spawn_refresher(sample, activity_tx, stopped))
    });
    let (hook_tx, hook_rx) = mpsc::channel(16);
    let (stop_hooks, hooks_stopped) = oneshot::channel::<()>();
    let hook_task = tokio::spawn(listener.serve(hook_tx, async {
        let _ = hooks_stopped.await;
    }));
    let (user, keys_rx, detach_rx, resize_rx) = user_terminal(interactive);
    let checkers = ai_checkers(args, &run_id);
    let model = detector_model(args, size)?;
    let observer = CliObserver {
        mirror: (!args.headless).then(std::io::stdout),
        events,
    };
    let driver = Driver::new(
        Machine::new(config(args)),
        terminal,
        model,
        observer,
        checkers,
        DriverOptions { grace: args.grace },
    );
    let inputs = DriverInputs {
        hooks: Some(hook_rx),
        keys: keys_rx,
        resize: resize_rx,
        activity: refresher.is_some().then_some(activity_rx),
    };
    let (interrupt, signal_task) = interrupt::install()
        .map_err(|e| Fail::failure(format!("cannot install signal handlers: {e}")))?;
    let signalled: Arc<Mutex<Option<Sig>>> = Arc::new(Mutex::new(None));
    let shutdown = {
        let signalled = Arc::clone(&signalled);
        let mut interrupt = interrupt.clone();
        async move {
            let detach = async {
                match detach_rx {
                    Some(rx) => {
                        let _ = rx.await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                sig = interrupt.requested() => {
                    *signalled.lock().unwrap_or_else(PoisonError::into_inner) = Some(sig);
                }
                () = detach => {}
            }
        }
    };
    let force_task = tokio::spawn(kill_on_second_signal(interrupt, root.map(|r| r.pid)));

    let result = driver.run(inputs, shutdown).await;

    if let Some(keys) = user.keys {
        keys.stop();
    }
    drop(user.raw);
    let _ = stop_hooks.send(());
    let _ = hook_task.await;
    if let Some(task) = user.resize_task {
        task.abort();
        let _ = task.await;
    }
    force_task.abort();
    let _ = force_task.await;
    if let Some((stop, refresher)) = refresher {
        let _ = stop.send(());
        let _ = refresher.await;
    }
    signal_task.abort();
    let _ = signal_task.await;
    drop(socket_dir);
    let signalled = *signalled.lock().unwrap_or_else(PoisonError::into_inner);
    Ok(Driven {
        result,
        signalled,
        run_id,
        root,
        adopted,
        ledger_dir,
    })
}

/// The `--ai-check-command` and `--plan-check-command` checkers.
fn ai_checkers(args: &RespawnArgs, run_id: &str) -> AiCheckers {
    let checker = |command: &str| shell_checker(command, args.check_timeout, run_id);
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

/// A checker that runs `command` through `/bin/sh -c` (the prompt goes to its stdin).
///
/// It carries the session's marker, so the final sweep stops anything it left behind.
fn shell_checker(command: &str, timeout: std::time::Duration, run_id: &str) -> Arc<CommandChecker> {
    let mut options = CommandCheckerOptions::new("/bin/sh", ["-c", command]);
    options.env = vec![
        ("HYOKA_RUN_ID".to_owned(), run_id.to_owned()),
        ("HYOKA_EVAL_ID".to_owned(), CHECKER_EVAL.to_owned()),
    ];
    // The machine enforces the limit; the checker's own is a backstop just behind it.
    options.timeout = timeout + std::time::Duration::from_secs(1);
    Arc::new(CommandChecker::new(options))
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

type UserInputs = (
    UserTerminal,
    Option<mpsc::Receiver<Vec<u8>>>,
    Option<oneshot::Receiver<()>>,
    Option<mpsc::Receiver<Size>>,
);

/// Raw mode, the key reader and resize forwarding, when mirroring to a terminal.
fn user_terminal(interactive: bool) -> UserInputs {
    if !interactive {
        let user = UserTerminal {
            raw: None,
            keys: None,
            resize_task: None,
        };
        return (user, None, None, None);
    }
    let raw = RawMode::enter();
    let (reader, keys, detach) = KeyReader::start();
    let (resize_tx, resize_rx) = mpsc::channel(4);
    let user = UserTerminal {
        raw: Some(raw),
        keys: Some(reader),
        resize_task: Some(tokio::spawn(forward_resizes(resize_tx))),
    };
    (user, Some(keys), Some(detach), Some(resize_rx))
}

/// A second SIGINT/SIGTERM kills the agent's group at once, whatever the grace period.
async fn kill_on_second_signal(mut interrupt: interrupt::Interrupt, pid: Option<i32>) {
    interrupt.forced().await;
    if let Some(pid) = pid.and_then(rustix::process::Pid::from_raw)
        && pid.as_raw_nonzero().get() > 1
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Interrupted => "interrupted",
        Outcome::BudgetExhausted { .. } => "budget_exhausted",
        Outcome::SessionEnded => "session_ended",
        Outcome::SessionLost { .. } => "session_lost",
        _ => "other",
    }
}

async fn start_terminal(
    args: &RespawnArgs,
    spawn: &SpawnOptions,
    session: &str,
) -> Result<Box<dyn Terminal>, Fail> {
    let program = spawn.program.to_string_lossy().into_owned();
    match args.backend {
        Backend::Pty => PtyTerminal::spawn(spawn)
            .map(|t| Box::new(t) as Box<dyn Terminal>)
            .map_err(|e| match e {
                hyoka_respawn::RespawnError::Spawn { .. } => Fail::usage(e.to_string()),
                e => Fail::failure(e.to_string()),
            }),
        Backend::Tmux => {
            let socket = TmuxOptions::default_socket(session);
            let exists = TmuxTerminal::exists(&socket, session)
                .await
                .map_err(|e| Fail::usage(format!("--backend tmux: {e}")))?;
            let terminal = if exists {
                tracing::info!("re-attaching to tmux session {session}");
                TmuxTerminal::attach(&socket, session).await
            } else {
                TmuxTerminal::start(&TmuxOptions {
                    socket,
                    session: session.to_owned(),
                    spawn: spawn.clone(),
                })
                .await
            };
            terminal
                .map(|t| Box::new(t) as Box<dyn Terminal>)
                .map_err(|e| Fail::failure(format!("cannot start {program:?} in tmux: {e}")))
        }
    }
}

async fn forward_resizes(tx: mpsc::Sender<Size>) {
    let Ok(mut winch) =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
    else {
        return;
    };
    let mut last = tty::size();
    while winch.recv().await.is_some() {
        let size = tty::size();
        // Ink redraws everything on SIGWINCH: forward only real changes.
        if size != last
            && let Some(size) = size
            && tx.send(size).await.is_err()
        {
            return;
        }
        last = size;
    }
}

/// Samples the agent's tree (and, for a tracked session, refreshes its ledger first).
type Sample = Arc<dyn Fn() -> Option<hyoka_proctrack::TreeSample> + Send + Sync>;

/// How the session's tree is sampled: through the tracker (PTY), or from the pane's root
/// (tmux, whose wrapper `sh` is the root and the agent its child).
fn sampler(
    backend: Backend,
    adopted: Option<&(Tracker, Arc<Mutex<Agent>>)>,
    root: Option<hyoka_proctrack::ProcRef>,
) -> Option<Sample> {
    match (adopted, root) {
        (Some((_, agent)), _) => {
            let agent = Arc::clone(agent);
            Some(Arc::new(move || {
                let mut agent = agent.lock().unwrap_or_else(PoisonError::into_inner);
                let _ = agent.refresh();
                Some(agent.sample())
            }))
        }
        (None, Some(root)) if backend == Backend::Tmux => {
            Some(Arc::new(move || hyoka_proctrack::sample_tree(root, 1).ok()))
        }
        (None, _) => None,
    }
}

/// Every half second, samples the session's tree (keeping a tracked session's ledger
/// current on the way) and sends the detector what the tree did since the previous sample:
/// the CPU it used and its busy children, so an agent running a build behind an idle prompt
/// counts as working.
///
/// Stopped through `stop`, never aborted: an aborted task would leave its `/proc` scan
/// running on the blocking pool, still holding the agent, and the teardown that follows
/// needs the agent to itself.
fn spawn_refresher(
    sample: Sample,
    activity: mpsc::Sender<ProcessActivity>,
    mut stop: oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_millis(500));
        let mut last: Option<(u64, Instant)> = None;
        loop {
            tokio::select! {
                _ = &mut stop => return,
                _ = every.tick() => {}
            }
            let sample = Arc::clone(&sample);
            let Ok(Some(now)) = tokio::task::spawn_blocking(move || sample()).await else {
                continue;
            };
            let at = Instant::now();
            if let Some((ticks, then)) = last {
                // Never blocks: a sample the driver has not taken yet is simply superseded.
                let _ = activity.try_send(ProcessActivity {
                    cpu_ticks: now.cpu_ticks.saturating_sub(ticks),
                    interval: at.saturating_duration_since(then),
                    busy_children: now.busy_children,
                });
            }
            last = Some((now.cpu_ticks, at));
        }
    })
}

/// Stops the adopted session's whole tree (cgroup, descendants, marker) through its tracker.
///
/// Should the agent still be shared (a bug), the session's marker sweep stands in, so the
/// tree is stopped all the same.
async fn stop_tracked(
    agent: Arc<Mutex<Agent>>,
    run_id: &str,
    root: Option<hyoka_proctrack::ProcRef>,
    grace: std::time::Duration,
) -> TeardownReport {
    let Ok(agent) =
        Arc::try_unwrap(agent).map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
    else {
        tracing::error!("the session's tracker is still shared; sweeping by marker instead");
        return sweep(run_id, root, grace).await;
    };
    let mut agent = agent;
    agent
        .teardown(TeardownOptions::with_grace(grace))
        .await
        .unwrap_or_default()
}

/// Every process still carrying the session's marker (escapees of the agent's group
/// included) goes, through `hyoka-proctrack`'s verified teardown.
async fn sweep(
    run_id: &str,
    root: Option<hyoka_proctrack::ProcRef>,
    grace: std::time::Duration,
) -> TeardownReport {
    let scope = Scope {
        roots: root.into_iter().collect(),
        marker: Some(Marker::run(run_id)),
        ..Scope::default()
    };
    let options = TeardownOptions::with_grace(grace);
    tokio::task::spawn_blocking(move || {
        let table = NativeProcTable::new();
        let signaller = NativeSignaller::new();
        let seams = Seams {
            table: &table,
            signaller: &signaller,
            clock: &SystemClock,
        };
        teardown(seams, &scope, &[], &options)
    })
    .await
    .unwrap_or_default()
}

/// What `hyoka demo`'s respawn step saw.
pub(crate) struct DemoCycle {
    /// The `--events` file, kept under the reports directory.
    pub(crate) events: PathBuf,
    /// The steps completed, in order.
    pub(crate) steps: Vec<String>,
    /// Cycles completed.
    pub(crate) cycles: usize,
    /// Keys that reached the agent while it was busy or waiting for a human (must be 0).
    pub(crate) typed_while_busy: usize,
    /// `hyoka respawn`'s exit code.
    pub(crate) exit: Option<i32>,
}

/// `hyoka demo`'s respawn step: one full cycle of the simulated agent, headless, with
/// short timers; the events file lands next to the demo's runs.
pub(crate) async fn demo_cycle(exe: &std::ffi::OsStr, reports: &Path) -> Result<DemoCycle, Fail> {
    std::fs::create_dir_all(reports)
        .map_err(|e| Fail::failure(format!("cannot create {}: {e}", reports.display())))?;
    let events = reports.join(format!("respawn-{}.events.jsonl", default_run_id()));
    let scratch = tempfile::Builder::new()
        .prefix("respawn-demo-")
        .tempdir()
        .map_err(|e| Fail::failure(format!("cannot create a scratch directory: {e}")))?;
    let record = scratch.path().join("inputs.jsonl");
    let mut child = tokio::process::Command::new(exe)
        .arg("respawn")
        .arg("--headless")
        .arg("--reports")
        .arg(reports)
        .arg("--events")
        .arg(&events)
        .args(["--max-cycles", "1", "--completion-confirm", "500ms"])
        .args(["--inter-step-delay", "200ms", "--no-output-timeout", "3s"])
        .args(["--grace", "2s", "--"])
        .arg(exe)
        .args([
            "sim-agent",
            "--interactive",
            "--start-working",
            "1s",
            "--work",
            "800ms",
        ])
        .arg("--record")
        .arg(&record)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Fail::failure(format!("cannot start hyoka respawn: {e}")))?;
    let waited = tokio::time::timeout(std::time::Duration::from_secs(25), child.wait()).await;
    let exit = if let Ok(status) = waited {
        status.ok().and_then(|s| s.code())
    } else {
        let _ = child.start_kill();
        let _ = child.wait().await;
        None
    };
    let lines = |path: &Path| -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let logged = lines(&events);
    let steps = logged
        .iter()
        .filter(|e| e["event"] == "step_completed")
        .filter_map(|e| e["step"].as_str().map(str::to_owned))
        .collect();
    let cycles = logged
        .iter()
        .filter(|e| e["event"] == "cycle_completed")
        .count();
    let typed_while_busy = lines(&record)
        .iter()
        .filter(|i| i["state"] != "idle")
        .count();
    Ok(DemoCycle {
        events,
        steps,
        cycles,
        typed_while_busy,
        exit,
    })
}
