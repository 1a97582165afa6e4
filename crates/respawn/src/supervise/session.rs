//! A supervised session's lifecycle: [`Session::start`] registers its name, makes its
//! records and its hook socket and starts the agent; [`Session::drive`] runs the driver with
//! everything that feeds it; [`Session::run`] also stops it.

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hyoka_idle_detect::{IdleChecker, PlanChecker};

use crate::checker::{CommandChecker, CommandCheckerOptions};
use hyoka_proctrack::{
    EnvVars, NativeProcTable, NativeSignaller, ProcRef, ProcTable, Signal, Signaller, Tracker,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::backend::{Backend, TmuxWatch, start_terminal};
use super::records::{
    ALERT_EVAL, Adopted, CHECKER_EVAL, SESSION_EVAL, Tracked, announce, remove_ledger_dir,
    run_marker, trackers,
};
use super::sampling::{sampler, spawn_refresher, watch_presence};
use super::socket_dir::SocketDir;
use super::stopping::{Driven, Finished};
use crate::alert::AlertOptions;
use crate::driver::{AiCheckers, Driver, DriverInputs, DriverOptions, Observer, now};
use crate::error::RespawnError;
use crate::hook::HookListener;
use crate::machine::Machine;
use crate::model::SessionModel;
use crate::registry::{ControlServer, Registration, Registry, SessionInfo};
use crate::terminal::{Size, SpawnOptions, Terminal};

/// Everything [`Session::start`] needs.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The session's run id (`HYOKA_RUN_ID`, the ledger directory's name).
    pub run_id: String,
    /// The agent; the session adds `HYOKA_RUN_ID`, `HYOKA_EVAL_ID` (and, for a tracked PTY
    /// session, the run instance's `HYOKA_RUN_INSTANCE`) and
    /// [`EnvVars::HYOKA_RESPAWN_SOCKET`] to its environment.
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

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("run_id", &self.run_id)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
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
        let marker = agent_env(tracker.as_ref(), &run_id, listener.path());
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
        let root = child_pid
            .and_then(|pid| NativeProcTable::new().process(pid))
            .map(|info| info.proc_ref());
        announce(&reports, ledger_dir.as_deref(), &backend, &session, root);
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
            (EnvVars::HYOKA_RUN_ID.to_owned(), self.run_id.clone()),
            (EnvVars::HYOKA_EVAL_ID.to_owned(), CHECKER_EVAL.to_owned()),
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
        let (background, inputs) = Background::start(
            (listener, registration.as_mut(), &info),
            (tmux, tracked.adopted.as_ref(), root),
            force,
        );
        alerts.session.clone_from(&info.name);
        alerts.env = marker;
        alerts.dir = socket_dir.path().to_owned();
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
            keys: parts.keys,
            resize: parts.resize,
            detach: parts.detach,
            ..inputs
        };
        // Boxed: the driver's loop is a large future, and callers nest this one.
        let result = Box::pin(driver.run(inputs, shutdown)).await;
        background.stop().await;
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

/// Adopts the agent `pid` into `tracker`; without it (no pid, or adoption refused) the
/// tracker is closed and teardown falls back to the marker sweep.
fn adopt(tracker: Option<Tracker>, pid: Option<i32>) -> Option<Adopted> {
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

/// What runs beside the driver while it drives a session, each feeding it: the hook
/// listener, the control socket, the tree's sampler, the tmux presence watch, and the force
/// request's SIGKILL.
struct Background {
    hooks: (oneshot::Sender<()>, JoinHandle<()>),
    control: (oneshot::Sender<()>, Option<JoinHandle<()>>),
    presence: Option<JoinHandle<()>>,
    force: JoinHandle<()>,
    refresher: Option<(oneshot::Sender<()>, JoinHandle<()>)>,
}

impl Background {
    /// Starts them, with the driver's inputs they feed (keys, resizes and detach are the
    /// caller's to add).
    fn start(
        (listener, registration, info): (
            HookListener,
            Option<&mut Registration>,
            &Arc<SessionInfo>,
        ),
        (tmux, adopted, root): (Option<TmuxWatch>, Option<&Adopted>, Option<ProcRef>),
        force: impl Future<Output = ()> + Send + 'static,
    ) -> (Self, DriverInputs) {
        let (activity_tx, activity_rx) = mpsc::channel(4);
        let refresher = sampler(tmux.is_some(), adopted, root).map(|sample| {
            let (stop, stopped) = oneshot::channel();
            (stop, spawn_refresher(sample, activity_tx, stopped))
        });
        let (hook_tx, hook_rx) = mpsc::channel(16);
        let (stop_hooks, hooks_stopped) = oneshot::channel::<()>();
        let hook_task = tokio::spawn(listener.serve(hook_tx, async {
            let _ = hooks_stopped.await;
        }));
        let force = tokio::spawn(async move {
            force.await;
            if let Some(root) = root {
                let _ = NativeSignaller::new().signal_group(root, root.pid, Signal::Kill);
            }
        });
        // The control socket: `hyoka sessions`, `wait`, `send`, `--stop`.
        let (control_tx, control_rx) = mpsc::channel(16);
        let (stop_control, control_stopped) = oneshot::channel::<()>();
        let control_task = (registration.and_then(Registration::take_listener)).map(|listener| {
            let server = ControlServer {
                listener,
                info: Arc::clone(info),
                driver: control_tx,
            };
            tokio::spawn(server.serve(async {
                let _ = control_stopped.await;
            }))
        });
        // People attached to a tmux session.
        let (presence_tx, presence_rx) = mpsc::channel(4);
        let presence = tmux.map(|watch| tokio::spawn(watch_presence(watch, presence_tx)));
        let inputs = DriverInputs {
            hooks: Some(hook_rx),
            keys: None,
            resize: None,
            activity: refresher.is_some().then_some(activity_rx),
            presence: presence.is_some().then_some(presence_rx),
            control: control_task.is_some().then_some(control_rx),
            detach: None,
        };
        let background = Self {
            hooks: (stop_hooks, hook_task),
            control: (stop_control, control_task),
            presence,
            force,
            refresher,
        };
        (background, inputs)
    }

    /// Stops them all and waits for each.
    async fn stop(self) {
        let _ = self.control.0.send(());
        if let Some(task) = self.control.1 {
            let _ = task.await;
        }
        if let Some(task) = self.presence {
            task.abort();
            let _ = task.await;
        }
        let _ = self.hooks.0.send(());
        let _ = self.hooks.1.await;
        self.force.abort();
        let _ = self.force.await;
        if let Some((stop, refresher)) = self.refresher {
            let _ = stop.send(());
            let _ = refresher.await;
        }
    }
}

/// What the session adds to the agent's environment: the marker (the run instance's when the
/// session is tracked, for `clean` to find its escapees) and the hook socket's path.
fn agent_env(tracker: Option<&Tracker>, run_id: &str, socket: &Path) -> Vec<(OsString, OsString)> {
    let mut env = match tracker {
        Some(tracker) => tracker.marker_env(SESSION_EVAL),
        None => run_marker(run_id, SESSION_EVAL),
    };
    env.push((
        EnvVars::HYOKA_RESPAWN_SOCKET.into(),
        socket.as_os_str().to_owned(),
    ));
    env
}
