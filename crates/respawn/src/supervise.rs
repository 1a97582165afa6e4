//! A supervised session: the agent on a terminal, contained, sampled and swept.
//!
//! [`Session::start`] binds the hook socket (its path goes to the agent in
//! [`SOCKET_ENV`]) and starts the agent on a PTY or in a tmux session on a private server. A
//! PTY session is adopted into a `hyoka-proctrack` [`Tracker`] right after the spawn (a
//! cgroup leaf when there is one, the ledger, the owner lock, so `hyoka clean` repairs a
//! SIGKILLed controller): the agent carries the run instance's marker, and the socket's
//! directory is marked like a workspace of the run instance and recorded in the ledger
//! before it exists. [`Session::drive`] runs the [`Driver`] with every half second a
//! sample of the agent's process tree ([`ProcessActivity`]: the CPU it used, its busy
//! children), hooks from the socket, and the caller's keys and resizes; a force request
//! SIGKILLs the agent's group at once through the verified signaller. [`Driven::stop`] then
//! stops the session's whole tree through the tracker and sweeps every process still
//! carrying the session's `HYOKA_RUN_ID` marker (a tmux session, or an agent gone before it
//! could be adopted, is stopped by that sweep alone); a session torn down without survivors
//! leaves no ledger directory behind.

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use hyoka_idle_detect::{
    CommandChecker, CommandCheckerOptions, IdleChecker, PlanChecker, ProcessActivity,
};
use hyoka_proctrack::{
    Agent, CgroupMode, Marker, NativeProcTable, NativeSignaller, ProcRef, ProcTable, Scope, Seams,
    Signal, Signaller, SystemClock, TeardownOptions, TeardownReport, Tracker, TrackerOptions,
    TreeSample, teardown,
};
use hyoka_workspace::{EvalId, KeepPolicy, MarkerOwner, RunId, TempWorkspace, WorkspaceOptions};
use tokio::sync::{mpsc, oneshot};

use crate::alert::AlertOptions;
use crate::driver::{
    AiCheckers, Driver, DriverInputs, DriverOptions, Observer, Report, SessionEnd, now,
};
use crate::error::RespawnError;
use crate::hook::HookListener;
use crate::machine::Machine;
use crate::model::SessionModel;
use crate::registry::{ControlServer, Registration, Registry, SessionInfo, TmuxTarget};
use crate::terminal::{PtyTerminal, Size, SpawnOptions, Terminal, TmuxOptions, TmuxTerminal};

/// The environment variable that tells `hyoka hook` where the controller listens.
pub const SOCKET_ENV: &str = "HYOKA_RESPAWN_SOCKET";

/// The eval id under which a session is tracked (and its processes marked).
pub const SESSION_EVAL: &str = "session";

/// The eval id the AI checkers' processes carry: outside the session's tree (a checker on
/// the CPU is not the agent at work), inside the run's final sweep.
pub const CHECKER_EVAL: &str = "session.check";

/// The eval id alert commands carry (like the checkers: outside the session's tree, inside
/// the run's final sweep).
pub const ALERT_EVAL: &str = "session.alert";

/// How often the session's tree is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// How often a tmux session's clients are counted (people attached).
const PRESENCE_EVERY: Duration = Duration::from_millis(500);

/// Where a supervised session runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A pseudo-terminal owned by the controller.
    Pty,
    /// A session on a private tmux server, named `session` (the run id when `None`). A named
    /// session survives the controller and is re-attached when it exists; its hook socket
    /// sits at a fixed path, so the agent still finds the next controller.
    Tmux {
        /// The session's name, when the caller chose one.
        session: Option<String>,
    },
}

/// Everything [`Session::start`] needs.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The session's run id (`HYOKA_RUN_ID`, the ledger directory's name).
    pub run_id: String,
    /// The agent; the session adds `HYOKA_RUN_ID`, `HYOKA_EVAL_ID` (and, for a tracked PTY
    /// session, the run instance's `HYOKA_RUN_INSTANCE`) and [`SOCKET_ENV`] to its
    /// environment.
    pub spawn: SpawnOptions,
    /// Where it runs.
    pub backend: Backend,
    /// Where a PTY session's ledger and owner lock go (`<reports>/<run_id>/`).
    pub reports: PathBuf,
    /// Where the hook socket's private directory is created (the system temp directory).
    pub temp_dir: PathBuf,
    /// SIGTERM→SIGKILL grace when the session is stopped.
    pub grace: Duration,
    /// The session's name (in the registry, and for tmux the session's); the run id, or
    /// the tmux session's name, when `None`.
    pub name: Option<String>,
    /// Where the session registers, so `hyoka sessions`, `wait`, `send` and `--stop` find
    /// it; `None` registers nowhere.
    pub registry: Option<Registry>,
    /// The detector profile's name (reported by `hyoka sessions`).
    pub profile: String,
    /// The alerts; the session fills in its name, marker and private directory.
    pub alerts: AlertOptions,
    /// Now, on the wall clock (the controller's start, as `hyoka sessions` reports it).
    pub started_wall: SystemTime,
}

impl SessionOptions {
    /// Options for `spawn` on `backend`, with the defaults for the rest: a 5 s grace, no
    /// name, no registry, the `claude-code` profile, no alerts.
    pub fn new(
        run_id: impl Into<String>,
        spawn: SpawnOptions,
        backend: Backend,
        reports: PathBuf,
        temp_dir: PathBuf,
        started_wall: SystemTime,
    ) -> Self {
        Self {
            run_id: run_id.into(),
            spawn,
            backend,
            reports,
            temp_dir,
            grace: Duration::from_secs(5),
            name: None,
            registry: None,
            profile: "claude-code".to_owned(),
            alerts: AlertOptions::default(),
            started_wall,
        }
    }
}

/// The session's side of a driven run: the machine, the model, the observer, the checkers,
/// and the user's keys and resizes (mirror mode).
pub struct Supervised<M, O> {
    /// The respawn state machine.
    pub machine: Machine,
    /// The detector model of the session's screen.
    pub model: M,
    /// Receives the output and the events.
    pub observer: O,
    /// The AI checkers.
    pub checkers: AiCheckers,
    /// Bytes the user typed.
    pub keys: Option<mpsc::Receiver<Vec<u8>>>,
    /// Size changes of the user's terminal.
    pub resize: Option<mpsc::Receiver<Size>>,
    /// Completes when the user detaches (a tmux session is then left running).
    pub detach: Option<oneshot::Receiver<()>>,
}

/// A started session: the agent runs, nothing drives it yet.
pub struct Session {
    run_id: String,
    socket_dir: SocketDir,
    listener: HookListener,
    terminal: Box<dyn Terminal>,
    root: Option<ProcRef>,
    tmux: Option<TmuxWatch>,
    grace: Duration,
    tracked: Tracked,
    registration: Option<Registration>,
    info: Arc<SessionInfo>,
    alerts: AlertOptions,
    marker: Vec<(OsString, OsString)>,
}

/// What a tmux session's presence watch needs: where it runs, and the controller's own
/// client (which does not count as a person).
#[derive(Debug, Clone)]
struct TmuxWatch {
    socket: String,
    session: String,
    client: Option<u32>,
}

impl TmuxWatch {
    fn target(&self) -> TmuxTarget {
        TmuxTarget {
            socket: self.socket.clone(),
            session: self.session.clone(),
        }
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("run_id", &self.run_id)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// The tracker of a PTY session and the adopted agent, and the ledger directory to remove
/// when nothing survives.
struct Tracked {
    adopted: Option<(Tracker, Arc<Mutex<Agent>>)>,
    /// A tmux session's owner lock and empty ledger.
    liveness: Option<Tracker>,
    ledger_dir: Option<PathBuf>,
}

impl Session {
    /// Binds the hook socket and starts the agent; a PTY session is adopted into a tracker.
    ///
    /// # Errors
    /// [`RespawnError::Track`] when the session cannot be tracked (the reports directory is
    /// unusable), [`RespawnError::Socket`] for the hook socket, [`RespawnError::Spawn`] when
    /// the agent cannot be started on a PTY, [`RespawnError::Backend`] when tmux cannot be
    /// used, [`RespawnError::Start`] when the agent cannot be started in tmux. Nothing is
    /// left behind.
    pub async fn start(options: SessionOptions) -> Result<Self, RespawnError> {
        let SessionOptions {
            run_id,
            mut spawn,
            backend,
            reports,
            temp_dir,
            grace,
            name,
            registry,
            profile,
            alerts,
            started_wall,
        } = options;
        let named = match &backend {
            Backend::Tmux { session } => session.clone().or_else(|| name.clone()),
            Backend::Pty => None,
        };
        let name = name
            .or_else(|| named.clone())
            .unwrap_or_else(|| run_id.clone());
        // Registered first: a name in use refuses the start with nothing started.
        let registration = registry.as_ref().map(|r| r.register(&name)).transpose()?;
        let (tracker, liveness) = trackers(&backend, &run_id, &reports)?;
        let ledger_dir = tracker
            .as_ref()
            .or(liveness.as_ref())
            .map(|t| t.run_dir().to_owned());
        // Nothing started: the ledger has nothing to repair.
        let abandon = |tracker: Option<Tracker>| {
            if let Some(tracker) = tracker.or(liveness.clone())
                && tracker.close().is_ok()
                && let Some(dir) = &ledger_dir
            {
                remove_ledger_dir(dir);
            }
        };
        let bound = SocketDir::bind(&temp_dir, named.as_deref(), &run_id, tracker.as_ref()).await;
        let (socket_dir, listener) = match bound {
            Ok(bound) => bound,
            Err(err) => {
                abandon(tracker);
                return Err(err);
            }
        };
        let mut marker = match &tracker {
            // The run instance's marker, for `clean` to find the session's escapees.
            Some(tracker) => tracker.marker_env(SESSION_EVAL),
            None => run_marker(&run_id, SESSION_EVAL),
        };
        marker.push((SOCKET_ENV.into(), listener.path().as_os_str().to_owned()));
        spawn.env.splice(0..0, marker);
        let session = named.unwrap_or_else(|| run_id.clone());
        let (terminal, tmux) = match start_terminal(&backend, &spawn, &session).await {
            Ok(started) => started,
            Err(err) => {
                drop(socket_dir);
                abandon(tracker);
                return Err(err);
            }
        };
        let info = Arc::new(SessionInfo {
            name,
            agent: Path::new(&spawn.program)
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            profile,
            tmux: tmux.as_ref().map(TmuxWatch::target),
            started_wall,
            started: now(),
        });
        // The alert commands carry the session's run marker, like the checkers.
        let marker = run_marker(&run_id, ALERT_EVAL);
        let child_pid = terminal.child_pid().and_then(|pid| i32::try_from(pid).ok());
        announce(
            &reports,
            ledger_dir.as_deref(),
            &backend,
            &session,
            terminal.child_pid(),
        );
        let root = child_pid
            .and_then(|pid| NativeProcTable::new().process(pid))
            .map(|info| info.proc_ref());
        // Adopted right after the spawn: the session joins a cgroup leaf when there is one,
        // and its tree is kept in the ledger.
        let adopted = adopt(tracker, child_pid);
        Ok(Self {
            run_id,
            socket_dir,
            listener,
            terminal,
            root,
            tmux,
            grace,
            tracked: Tracked {
                adopted,
                liveness,
                ledger_dir,
            },
            registration,
            info,
            alerts,
            marker,
        })
    }

    /// The session's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// For a tmux session: how a person watches it, supervises it again, or stops it once
    /// it was detached (a few lines to print).
    pub fn reattach_hint(&self) -> Option<String> {
        let TmuxWatch {
            socket, session, ..
        } = self.tmux.as_ref()?;
        Some(format!(
            "session {session} keeps running, supervised by nobody.\n  watch it:           tmux -L {socket} attach -t {session}\n  supervise it again: hyoka respawn --tmux-session {session}\n  stop it:            hyoka respawn --stop --tmux-session {session}"
        ))
    }

    /// The session's run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The hook socket the agent's hooks report to.
    pub fn hook_socket(&self) -> &Path {
        self.listener.path()
    }

    /// The checkers of `--ai-check-command` (`idle`) and `--plan-check-command` (`plan`),
    /// as [`Session::command_checker`]s.
    pub fn ai_checkers(
        &self,
        idle: Option<&str>,
        plan: Option<&str>,
        timeout: Duration,
    ) -> AiCheckers {
        AiCheckers {
            idle: idle.map(|c| self.command_checker(c, timeout) as Arc<dyn IdleChecker>),
            plan: plan.map(|c| self.command_checker(c, timeout) as Arc<dyn PlanChecker>),
        }
    }

    /// An AI checker that runs `command` through `/bin/sh -c` (the prompt goes to its
    /// stdin), carrying the session's marker so the final sweep stops anything it left
    /// behind. The machine enforces `timeout`; the checker's own limit is a backstop one
    /// second behind it.
    pub fn command_checker(&self, command: &str, timeout: Duration) -> Arc<CommandChecker> {
        let mut options = CommandCheckerOptions::new("/bin/sh", ["-c", command]);
        options.env = vec![
            ("HYOKA_RUN_ID".to_owned(), self.run_id.clone()),
            ("HYOKA_EVAL_ID".to_owned(), CHECKER_EVAL.to_owned()),
        ];
        options.timeout = timeout + Duration::from_secs(1);
        Arc::new(CommandChecker::new(options))
    }

    /// Drives the session until `shutdown` completes, the cycle budget is spent, or the
    /// session ends; `force` completing meanwhile SIGKILLs the agent's process group at once
    /// (through the verified signaller). Returns what is left to stop.
    pub async fn drive<M, O>(
        self,
        parts: Supervised<M, O>,
        shutdown: impl Future<Output = ()>,
        force: impl Future<Output = ()> + Send + 'static,
    ) -> Driven
    where
        M: SessionModel,
        O: Observer,
    {
        let Self {
            run_id,
            socket_dir,
            listener,
            terminal,
            root,
            tmux,
            grace,
            tracked,
            mut registration,
            info,
            mut alerts,
            marker,
        } = self;
        let (activity_tx, activity_rx) = mpsc::channel(4);
        let refresher = sampler(tmux.is_some(), tracked.adopted.as_ref(), root).map(|sample| {
            let (stop, stopped) = oneshot::channel();
            (stop, spawn_refresher(sample, activity_tx, stopped))
        });
        let (hook_tx, hook_rx) = mpsc::channel(16);
        let (stop_hooks, hooks_stopped) = oneshot::channel::<()>();
        let hook_task = tokio::spawn(listener.serve(hook_tx, async {
            let _ = hooks_stopped.await;
        }));
        let force_task = tokio::spawn(async move {
            force.await;
            if let Some(root) = root {
                let _ = NativeSignaller::new().signal_group(root, root.pid, Signal::Kill);
            }
        });
        // The control socket: `hyoka sessions`, `wait`, `send`, `--stop`.
        let (control_tx, control_rx) = mpsc::channel(16);
        let (stop_control, control_stopped) = oneshot::channel::<()>();
        let control_task = registration
            .as_mut()
            .and_then(Registration::take_listener)
            .map(|listener| {
                let server = ControlServer {
                    listener,
                    info: Arc::clone(&info),
                    driver: control_tx,
                };
                tokio::spawn(server.serve(async {
                    let _ = control_stopped.await;
                }))
            });
        // People attached to a tmux session.
        let (presence_tx, presence_rx) = mpsc::channel(4);
        let presence_task = tmux
            .clone()
            .map(|watch| tokio::spawn(watch_presence(watch, presence_tx)));
        alerts.session.clone_from(&info.name);
        alerts.env = marker;
        alerts.dir = socket_dir.0.clone();
        if alerts.timeout.is_zero() {
            alerts.timeout = Duration::from_mins(1);
        }
        let driver = Driver::new(
            parts.machine,
            terminal,
            parts.model,
            parts.observer,
            parts.checkers,
            DriverOptions { grace, alerts },
        );
        let inputs = DriverInputs {
            hooks: Some(hook_rx),
            keys: parts.keys,
            resize: parts.resize,
            activity: refresher.is_some().then_some(activity_rx),
            presence: presence_task.is_some().then_some(presence_rx),
            control: control_task.is_some().then_some(control_rx),
            detach: parts.detach,
        };
        // Boxed: the driver's loop is a large future, and callers nest this one.
        let result = Box::pin(driver.run(inputs, shutdown)).await;
        let _ = stop_control.send(());
        if let Some(task) = control_task {
            let _ = task.await;
        }
        if let Some(task) = presence_task {
            task.abort();
            let _ = task.await;
        }
        let _ = stop_hooks.send(());
        let _ = hook_task.await;
        force_task.abort();
        let _ = force_task.await;
        if let Some((stop, refresher)) = refresher {
            let _ = stop.send(());
            let _ = refresher.await;
        }
        drop(socket_dir);
        Driven {
            result,
            run_id,
            root,
            grace,
            tracked,
            registration,
        }
    }

    /// [`Session::drive`], then [`Driven::stop`]: the supervised session in one call.
    pub async fn run<M, O>(
        self,
        parts: Supervised<M, O>,
        shutdown: impl Future<Output = ()>,
        force: impl Future<Output = ()> + Send + 'static,
    ) -> Finished
    where
        M: SessionModel,
        O: Observer,
    {
        self.drive(parts, shutdown, force).await.stop().await
    }
}

/// `HYOKA_RUN_ID` and `HYOKA_EVAL_ID`, which the session's final sweep looks for.
fn run_marker(run_id: &str, eval: &str) -> Vec<(OsString, OsString)> {
    vec![
        ("HYOKA_RUN_ID".into(), run_id.into()),
        ("HYOKA_EVAL_ID".into(), eval.into()),
    ]
}

/// Adopts the agent `pid` into `tracker`; without it (no pid, or adoption refused) the
/// tracker is closed and teardown falls back to the marker sweep.
fn adopt(tracker: Option<Tracker>, pid: Option<i32>) -> Option<(Tracker, Arc<Mutex<Agent>>)> {
    let tracker = tracker?;
    match pid.map(|pid| tracker.adopt(SESSION_EVAL, pid)) {
        Some(Ok(agent)) => Some((tracker, Arc::new(Mutex::new(agent)))),
        Some(Err(err)) => {
            tracing::warn!(error = %err, "cannot track the session; teardown falls back to the marker sweep");
            let _ = tracker.close();
            None
        }
        None => {
            let _ = tracker.close();
            None
        }
    }
}

/// A session whose driver returned; its processes are not stopped yet.
#[must_use = "the session's processes are stopped only by `Driven::stop`"]
pub struct Driven {
    result: Result<Report, RespawnError>,
    run_id: String,
    root: Option<ProcRef>,
    grace: Duration,
    tracked: Tracked,
    // Dropped (the entry removed) once the session is stopped.
    registration: Option<Registration>,
}

impl std::fmt::Debug for Driven {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driven")
            .field("run_id", &self.run_id)
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

/// How a supervised session ended and what stopping it found.
#[derive(Debug)]
pub struct Finished {
    /// The driver's report, or why the session could not be stopped.
    pub report: Result<Report, RespawnError>,
    /// What the final teardown and sweep saw, stopped and left behind.
    pub teardown: TeardownReport,
    /// The session's run id.
    pub run_id: String,
}

/// The summary of a session that ended (`hyoka respawn --json`): its run id, how it ended,
/// its cycles, the agent's exit and what the teardown found.
pub fn summary(run_id: &str, report: &Report, teardown: &TeardownReport) -> serde_json::Value {
    serde_json::json!({
        "run_id": run_id,
        "outcome": report.end.as_str(),
        "cycles": report.cycles,
        "exit_code": report.exit.code,
        "exit_signal": report.exit.signal,
        "teardown": {
            "processes_seen": teardown.processes_seen,
            "processes_killed": teardown.processes_killed,
            "survivors": teardown.survivors,
        },
    })
}

/// How [`stop_session`] stopped a session.
#[derive(Debug)]
#[non_exhaustive]
pub enum Stopped {
    /// Its controller was asked to stop it (it stops the session and exits).
    ByController,
    /// Nobody supervised it (a detached tmux session): stopped here, with what the
    /// teardown found.
    Detached(TeardownReport),
}

/// Stops the session `name`: through its controller when one runs (found in `registry`),
/// else a tmux session of that name that nobody supervises ([`stop_detached`]).
///
/// # Errors
/// [`RespawnError::UnknownSession`] when there is neither; a controller that does not
/// answer, or tmux failing, otherwise.
pub async fn stop_session(
    registry: &Registry,
    name: &str,
    grace: Duration,
) -> Result<Stopped, RespawnError> {
    match registry.stop(name).await {
        Ok(()) => return Ok(Stopped::ByController),
        Err(RespawnError::UnknownSession { .. }) => {}
        Err(err) => return Err(err),
    }
    let unknown = || RespawnError::UnknownSession {
        name: name.to_owned(),
    };
    match stop_detached(name, grace).await {
        Ok(Some(teardown)) => Ok(Stopped::Detached(teardown)),
        Ok(None) | Err(RespawnError::TmuxMissing) => Err(unknown()),
        Err(err) => Err(err),
    }
}

/// Stops a tmux session that nobody supervises (left running by a detach, or by a
/// controller that died): its pane's process group, then its private server, then every
/// process still carrying the session's run marker (read from the session's environment,
/// and used only when it is a valid run id). `Ok(None)` when there is no such session.
///
/// # Errors
/// [`RespawnError::TmuxMissing`] without tmux, a tmux failure, or a bad name.
pub async fn stop_detached(
    name: &str,
    grace: Duration,
) -> Result<Option<TeardownReport>, RespawnError> {
    let socket = TmuxOptions::default_socket(name);
    if !TmuxTerminal::exists(&socket, name).await? {
        return Ok(None);
    }
    let run_id = TmuxTerminal::session_env(&socket, name, "HYOKA_RUN_ID")
        .await
        .filter(|id| RunId::new(id.as_str()).is_ok());
    let mut terminal = TmuxTerminal::attach(&socket, name).await?;
    let root = terminal
        .child_pid()
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(|pid| NativeProcTable::new().process(pid))
        .map(|info| info.proc_ref());
    terminal.stop(grace).await?;
    Ok(Some(match run_id {
        Some(run_id) => sweep(&run_id, root, grace).await,
        None => TeardownReport::default(),
    }))
}

impl Driven {
    /// Stops the session's whole tree: through its tracker when it was adopted (then the
    /// marker sweep takes whatever else carries the session's marker, a checker's leftovers
    /// for example), else by the marker sweep alone. A session torn down without survivors
    /// removes its ledger directory.
    pub async fn stop(self) -> Finished {
        let Self {
            result,
            run_id,
            root,
            grace,
            tracked,
            registration,
        } = self;
        if result.as_ref().is_ok_and(|r| r.end == SessionEnd::Detached) {
            // The session runs on (tmux), supervised by nobody: nothing is stopped, and its
            // empty ledger goes, so `hyoka clean` never takes it for a crashed run.
            drop(registration);
            if let Some(tracker) = tracked.liveness
                && tracker.close().is_ok()
                && let Some(dir) = &tracked.ledger_dir
            {
                remove_ledger_dir(dir);
            }
            return Finished {
                report: result,
                teardown: TeardownReport::default(),
                run_id,
            };
        }
        let mut closed = true;
        let report = match tracked.adopted {
            Some((tracker, agent)) => {
                let mut report = stop_tracked(agent, &run_id, root, grace).await;
                let rest = sweep(&run_id, None, grace).await;
                report.processes_seen += rest.processes_seen;
                report.processes_killed += rest.processes_killed;
                report.survivors += rest.survivors;
                if let Err(err) = tracker.close() {
                    tracing::error!(error = %err, "cannot close the session's ledger");
                    closed = false;
                }
                report
            }
            None => sweep(&run_id, root, grace).await,
        };
        drop(registration);
        if let Some(tracker) = tracked.liveness
            && let Err(err) = tracker.close()
        {
            tracing::error!(error = %err, "cannot close the session's ledger");
            closed = false;
        }
        // The ledger exists only so `hyoka clean` can repair a crash.
        if closed
            && nothing_left(&report)
            && let Some(dir) = &tracked.ledger_dir
        {
            remove_ledger_dir(dir);
        }
        Finished {
            report: result,
            teardown: report,
            run_id,
        }
    }
}

async fn start_terminal(
    backend: &Backend,
    spawn: &SpawnOptions,
    session: &str,
) -> Result<(Box<dyn Terminal>, Option<TmuxWatch>), RespawnError> {
    match backend {
        Backend::Pty => PtyTerminal::spawn(spawn).map(|t| (Box::new(t) as Box<dyn Terminal>, None)),
        Backend::Tmux { .. } => {
            let socket = TmuxOptions::default_socket(session);
            let exists = TmuxTerminal::exists(&socket, session)
                .await
                .map_err(|source| RespawnError::Backend {
                    backend: "tmux",
                    source: Box::new(source),
                })?;
            let terminal = if exists {
                TmuxTerminal::attach(&socket, session).await
            } else {
                TmuxTerminal::start(&TmuxOptions {
                    socket: socket.clone(),
                    session: session.to_owned(),
                    spawn: spawn.clone(),
                })
                .await
            };
            match terminal {
                Ok(terminal) => {
                    let watch = TmuxWatch {
                        socket,
                        session: session.to_owned(),
                        client: terminal.client_pid(),
                    };
                    Ok((Box::new(terminal) as Box<dyn Terminal>, Some(watch)))
                }
                // The same error as on a PTY: `cannot start "x": No such file or directory`.
                Err(err @ RespawnError::Spawn { .. }) => Err(err),
                Err(source) => Err(RespawnError::Start {
                    program: spawn.program.to_string_lossy().into_owned(),
                    backend: "tmux",
                    source: Box::new(source),
                }),
            }
        }
    }
}

/// The private directory of the hook socket, removed at the end. For a named tmux session
/// its path is fixed, so that a re-attached agent's `HYOKA_RESPAWN_SOCKET` still points
/// at the controller.
struct SocketDir(PathBuf);

impl SocketDir {
    /// Creates the directory and binds the hook socket in it.
    async fn bind(
        temp_dir: &Path,
        session: Option<&str>,
        run_id: &str,
        tracker: Option<&Tracker>,
    ) -> Result<(Self, HookListener), RespawnError> {
        let dir = Self::create(temp_dir, session, run_id, tracker)?;
        let listener = HookListener::bind(&dir.0.join("hook.sock")).await?;
        Ok((dir, listener))
    }

    /// Removes the socket directories of controllers that died without cleaning up (a
    /// SIGKILL): nobody listens on their socket and they are older than a minute.
    fn sweep_stale(temp_dir: &Path) {
        let Ok(entries) = std::fs::read_dir(temp_dir) else {
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

    /// The directory of a session: for a tracked (PTY) session, marked like a workspace of
    /// the run instance and recorded in the ledger before it exists, so `clean` removes it
    /// if the controller is SIGKILLed; else a private directory named as below.
    fn create(
        temp_dir: &Path,
        session: Option<&str>,
        run_id: &str,
        tracker: Option<&Tracker>,
    ) -> Result<Self, RespawnError> {
        Self::sweep_stale(temp_dir);
        if let (None, Some(tracker)) = (session, tracker) {
            return Self::create_recorded(temp_dir, run_id, tracker).map(Self);
        }
        let fail = |path: &Path| {
            let path = path.to_owned();
            move |source| RespawnError::Socket { path, source }
        };
        let dir = match session {
            Some(session) => {
                let dir = temp_dir.join(format!("hyoka-respawn-{session}"));
                match std::fs::create_dir(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(fail(&dir)(e)),
                }
                let private =
                    <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700);
                std::fs::set_permissions(&dir, private).map_err(fail(&dir))?;
                dir
            }
            // `hyoka-<run_id>-…`: the name `hyoka clean` accepts for a run's directories.
            None => tempfile::Builder::new()
                .prefix(&format!("hyoka-{run_id}-sock-"))
                .tempdir_in(temp_dir)
                .map_err(fail(temp_dir))?
                .keep(),
        };
        Ok(Self(dir))
    }
}

impl SocketDir {
    fn create_recorded(
        temp_dir: &Path,
        run_id: &str,
        tracker: &Tracker,
    ) -> Result<PathBuf, RespawnError> {
        let fail = |source| RespawnError::SocketDir { source };
        let options = WorkspaceOptions {
            root: temp_dir.to_owned(),
            run_id: RunId::new(run_id).map_err(fail)?,
            eval_id: Some(EvalId::new(SOCKET_EVAL).map_err(fail)?),
            keep: KeepPolicy::Never,
            starter: None,
            inject: Vec::new(),
            instance: Some(tracker.instance().to_string()),
            owner: Some(MarkerOwner::pid(tracker.owner().pid())),
        };
        // Detached, not kept: the session removes it, and `hyoka clean` after a crash.
        TempWorkspace::create_recorded(&options, |path| tracker.record_workspace(SOCKET_EVAL, path))
            .map(TempWorkspace::detach)
            .map_err(fail)
    }
}

/// The ledger id of the hook socket directory (a workspace of the session's run).
const SOCKET_EVAL: &str = "session.sock";

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether a session's teardown proved that nothing of it is left, so its ledger is no
/// longer needed: no survivor, and a count that is proof (a count `hyoka-proctrack` could
/// not prove keeps the ledger for `hyoka clean`, as it withholds the ledger's cleaned mark).
fn nothing_left(report: &TeardownReport) -> bool {
    report.survivors == 0 && report.survivors_unknown.is_none()
}

/// The tracker of a PTY session; or, for a tmux session, which is meant to outlive its
/// controller so nothing of it is ever adopted (and `hyoka clean` never stops it), one whose
/// owner lock and empty ledger only say, for `hyoka ps`, that a controller drives it.
fn trackers(
    backend: &Backend,
    run_id: &str,
    reports: &Path,
) -> Result<(Option<Tracker>, Option<Tracker>), RespawnError> {
    let track = |options| Tracker::start(options).map_err(|source| RespawnError::Track { source });
    let options = TrackerOptions::new(run_id, reports);
    Ok(match backend {
        Backend::Pty => (Some(track(options)?), None),
        Backend::Tmux { .. } => {
            let options = TrackerOptions {
                cgroup: CgroupMode::Off,
                subreaper: false,
                ..options
            };
            (None, Some(track(options)?))
        }
    })
}

/// Writes `<run_dir>/session/status.json`, which `hyoka ps` shows: a respawn session, its
/// backend (and tmux session), its agent's pid (a tmux pane's process) and since when. A
/// named tmux session's earlier controllers that died leave records this one takes over
/// (see [`forget_dead_controllers`]).
fn announce(
    reports: &Path,
    run_dir: Option<&Path>,
    backend: &Backend,
    session: &str,
    pid: Option<u32>,
) {
    if let Backend::Tmux {
        session: Some(name),
    } = backend
    {
        forget_dead_controllers(reports, name);
    }
    let Some(run_dir) = run_dir else { return };
    #[expect(
        clippy::disallowed_methods,
        reason = "the session's start, recorded for people; nothing decides on it"
    )]
    let now = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let (backend, tmux_session) = match backend {
        Backend::Pty => ("pty", None),
        Backend::Tmux { .. } => ("tmux", Some(session)),
    };
    let status = serde_json::json!({
        "phase": "session", "since": now, "started": now, "backend": backend,
        "tmux_session": tmux_session, "pid": pid,
    });
    let dir = run_dir.join(SESSION_EVAL);
    let written = std::fs::create_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            hyoka_proctrack::write_atomic(&dir.join(STATUS_FILE), status.to_string().as_bytes())
                .map_err(|e| e.to_string())
        });
    if let Err(err) = written {
        tracing::debug!(error = %err, "cannot record the session's status");
    }
}

/// Removes the records of earlier controllers of the named tmux session `name` that died
/// without cleaning up (SIGKILLed: their owner lock is free): the session outlived them and
/// this controller drives it now. Only a record that provably is such a controller's is
/// touched: an abandoned run under `reports` whose ledger tracks nothing and whose status
/// names this tmux session.
fn forget_dead_controllers(reports: &Path, name: &str) {
    let Ok(runs) = hyoka_proctrack::list_runs(reports) else {
        return;
    };
    for run in runs {
        let status = run.run_dir.join(SESSION_EVAL).join(STATUS_FILE);
        let ours = run.state == hyoka_proctrack::LockState::Abandoned
            && run.refused.is_none()
            && run.processes.is_empty()
            && hyoka_proctrack::read_reports_file(&status, 64 * 1024)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
                .is_some_and(|v| v["backend"] == "tmux" && v["tmux_session"] == name);
        if ours {
            remove_ledger_dir(&run.run_dir);
        }
    }
}

/// The file a session's status is in (`hyoka-eval`'s `STATUS_FILE`).
const STATUS_FILE: &str = "status.json";

/// Removes a cleanly closed session's ledger directory (the ledger, the owner lock and the
/// session's status; a directory holding anything else is left alone).
fn remove_ledger_dir(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(SESSION_EVAL).join(STATUS_FILE));
    let _ = std::fs::remove_dir(dir.join(SESSION_EVAL));
    for name in [hyoka_proctrack::LEDGER_FILE, hyoka_proctrack::LOCK_FILE] {
        if let Err(err) = std::fs::remove_file(dir.join(name))
            && err.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(error = %err, "cannot remove the session's ledger");
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Samples the agent's tree (and, for a tracked session, refreshes its ledger first).
type Sample = Arc<dyn Fn() -> Option<TreeSample> + Send + Sync>;

/// How the session's tree is sampled: through the tracker (PTY), or from the pane's root
/// (tmux, whose wrapper `sh` is the root and the agent its child).
fn sampler(
    tmux: bool,
    adopted: Option<&(Tracker, Arc<Mutex<Agent>>)>,
    root: Option<ProcRef>,
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
        (None, Some(root)) if tmux => {
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
        let mut every = tokio::time::interval(SAMPLE_EVERY);
        let mut last: Option<(u64, Instant)> = None;
        loop {
            tokio::select! {
                _ = &mut stop => return,
                _ = every.tick() => {}
            }
            let sample = Arc::clone(&sample);
            let Ok(Some(sampled)) = tokio::task::spawn_blocking(move || sample()).await else {
                continue;
            };
            let at = now();
            if let Some((ticks, then)) = last {
                // Never blocks: a sample the driver has not taken yet is simply superseded.
                let _ = activity.try_send(ProcessActivity {
                    cpu_ticks: sampled.cpu_ticks.saturating_sub(ticks),
                    interval: at.saturating_duration_since(then),
                    busy_children: sampled.busy_children,
                });
            }
            last = Some((sampled.cpu_ticks, at));
        }
    })
}

/// Counts the people attached to a tmux session every half second and tells the driver:
/// every count while someone is attached (each refreshes the human-presence lock), and the
/// first zero after they left.
async fn watch_presence(watch: TmuxWatch, presence: mpsc::Sender<u32>) {
    let mut every = tokio::time::interval(PRESENCE_EVERY);
    let mut last = 0;
    loop {
        every.tick().await;
        let Ok(others) =
            TmuxTerminal::others_attached(&watch.socket, &watch.session, watch.client).await
        else {
            continue;
        };
        if (others > 0 || last > 0) && presence.send(others).await.is_err() {
            return;
        }
        last = others;
    }
}

/// Stops the adopted session's whole tree (cgroup, descendants, marker) through its tracker.
///
/// Should the agent still be shared (a bug), the session's marker sweep stands in, so the
/// tree is stopped all the same.
async fn stop_tracked(
    agent: Arc<Mutex<Agent>>,
    run_id: &str,
    root: Option<ProcRef>,
    grace: Duration,
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
async fn sweep(run_id: &str, root: Option<ProcRef>, grace: Duration) -> TeardownReport {
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

#[cfg(test)]
mod tests;
