//! The phases around the agent: services before it, build and review after it, and the
//! environment (optionally an isolated home) they all share.
//!
//! Every phase process runs under the run's containment, exactly like the agent: it is
//! spawned through the run's [`Processes`] (the tracker: its own cgroup leaf, the shim, a
//! session, the marker), listed in the ledger under `<eval>.s.<service>`, `<eval>.build` or
//! `<eval>.review`, and torn down with the usual grace; `hyoka clean` finds them after a
//! crash like any agent process.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, SystemTime};

use hyoka_proctrack::{
    AgentCommand, AgentExit, Escalation, Sandbox, StdioMode, TeardownOptions, TeardownReport,
};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::capped_log::{CappedLog, OUTPUT_CAP};
use crate::host::{Clock, EvalWorkspace, Pipe, Process, Processes};
use crate::records::{millis, rfc3339};
use crate::report::{PhaseRecord, PhaseStatus, ReviewVerdict};
use crate::settings::{PhaseCommand, Readiness, ServiceSpec};
use crate::stop::{Stop, StopLevel};

/// How long SIGKILL rounds may take after the grace period.
const KILL_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of a review's stdout kept for finding its verdict.
const VERDICT_BYTES: usize = 1024 * 1024;

/// The environment every phase process gets, beyond the marker the tracker adds.
#[derive(Debug, Clone, Default)]
pub(crate) struct PhaseEnv {
    /// Start from an empty environment (`--isolate-home`).
    pub(crate) clear: bool,
    /// The variables to set.
    pub(crate) vars: Vec<(OsString, OsString)>,
    /// The kernel sandbox of every phase process (the agent's may differ).
    pub(crate) sandbox: Sandbox,
}

impl PhaseEnv {
    /// The environment of an eval: the suite's variables and the workspace, and with an
    /// isolated home a cleared environment with HOME, the XDG directories, the basics and the
    /// variables listed to pass through, taken from `inherited` (the caller's environment).
    pub(crate) fn new(
        workspace: &Path,
        extra: &[(OsString, OsString)],
        home: Option<&Path>,
        pass_env: &[String],
        inherited: &[(OsString, OsString)],
    ) -> Self {
        let mut vars = Vec::new();
        if let Some(home) = home {
            const BASICS: [&str; 9] = [
                "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME",
            ];
            for name in BASICS
                .iter()
                .copied()
                .chain(pass_env.iter().map(String::as_str))
            {
                if let Some((_, value)) = inherited.iter().find(|(key, _)| key == name) {
                    vars.push((name.into(), value.clone()));
                }
            }
            vars.push(("HOME".into(), home.into()));
            for (name, dir) in [
                ("XDG_CONFIG_HOME", ".config"),
                ("XDG_DATA_HOME", ".local/share"),
                ("XDG_STATE_HOME", ".local/state"),
                ("XDG_CACHE_HOME", ".cache"),
            ] {
                vars.push((name.into(), home.join(dir).into()));
            }
        }
        vars.extend(extra.iter().cloned());
        vars.push(("HYOKA_WORKSPACE".into(), workspace.into()));
        Self {
            clear: home.is_some(),
            vars,
            sandbox: Sandbox::default(),
        }
    }

    /// `argv` as a command in `cwd` with this environment and `extra`; `None` for an empty
    /// argv.
    pub(crate) fn command(
        &self,
        argv: &[OsString],
        cwd: &Path,
        extra: &[(OsString, OsString)],
    ) -> Option<AgentCommand> {
        let (program, rest) = argv.split_first()?;
        let mut command = AgentCommand::new(program, rest.iter().cloned());
        command.env_clear = self.clear;
        command.env.clone_from(&self.vars);
        command.env.extend(extra.iter().cloned());
        command.cwd = Some(cwd.to_owned());
        command.stdin = StdioMode::Null;
        command.stdout = StdioMode::Piped;
        command.stderr = StdioMode::Piped;
        command.sandbox = self.sandbox.clone();
        Some(command)
    }
}

/// What every phase of one eval shares.
#[derive(Clone, Copy)]
pub(crate) struct PhaseContext<'a> {
    pub(crate) processes: &'a dyn Processes,
    pub(crate) clock: &'a dyn Clock,
    pub(crate) eval_id: &'a str,
    pub(crate) workspace: &'a Path,
    pub(crate) eval_dir: &'a Path,
    pub(crate) env: &'a PhaseEnv,
    /// SIGTERM→SIGKILL grace for the phase's processes.
    pub(crate) grace: Duration,
}

/// Creates the directories an isolated home needs.
pub(crate) fn prepare_home(
    home: &dyn EvalWorkspace,
) -> Result<(), hyoka_workspace::WorkspaceError> {
    for dir in [".config", ".local/share", ".local/state", ".cache"] {
        home.create_dir(Path::new(dir))?;
    }
    Ok(())
}

/// Times a phase and builds its record.
pub(crate) struct PhaseClock<'a> {
    clock: &'a dyn Clock,
    name: &'static str,
    started_at: SystemTime,
    started: Instant,
}

impl<'a> PhaseClock<'a> {
    pub(crate) fn start(clock: &'a dyn Clock, name: &'static str) -> Self {
        Self {
            clock,
            name,
            started_at: clock.wall(),
            started: clock.now(),
        }
    }

    pub(crate) fn finish(
        self,
        status: PhaseStatus,
        exit_code: Option<i32>,
        detail: Option<String>,
    ) -> PhaseRecord {
        PhaseRecord {
            name: self.name.to_owned(),
            started_at: rfc3339(self.started_at),
            duration_ms: millis(self.clock.now().saturating_duration_since(self.started)),
            status,
            exit_code,
            detail,
        }
    }
}

/// A record for a phase that did not run.
pub(crate) fn skipped(clock: &dyn Clock, name: &'static str, why: &str) -> PhaseRecord {
    PhaseClock::start(clock, name).finish(PhaseStatus::Skipped, None, Some(why.to_owned()))
}

/// A running service, supervised by a task that reports its exit and tears it down on
/// request.
pub(crate) struct Service {
    name: String,
    stop: Option<oneshot::Sender<Escalation>>,
    task: tokio::task::JoinHandle<TeardownReport>,
}

/// Starts every service in order and waits until each is ready. A service that exits, or is
/// not ready within its timeout, stops those already started and fails with the reason.
pub(crate) async fn start_services(
    pcx: PhaseContext<'_>,
    workspace: &dyn EvalWorkspace,
    specs: &[ServiceSpec],
    exits: &mpsc::UnboundedSender<(String, Option<AgentExit>)>,
) -> Result<Vec<Service>, (String, Vec<TeardownReport>)> {
    let mut started = Vec::new();
    for spec in specs {
        match start_service(pcx, workspace, spec, exits.clone()).await {
            Ok(service) => started.push(service),
            Err(reason) => {
                let reports = stop_services(started, &Escalation::new()).await;
                return Err((reason, reports));
            }
        }
    }
    Ok(started)
}

async fn start_service(
    pcx: PhaseContext<'_>,
    ws: &dyn EvalWorkspace,
    spec: &ServiceSpec,
    exits: mpsc::UnboundedSender<(String, Option<AgentExit>)>,
) -> Result<Service, String> {
    let PhaseContext {
        processes,
        clock,
        eval_id,
        workspace,
        eval_dir,
        env,
        grace,
    } = pcx;
    let dir = eval_dir.join("services");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let log = CappedLog::create(&dir.join(format!("{}.log", spec.name)), OUTPUT_CAP)
        .await
        .map_err(|e| format!("cannot create the log of service {}: {e}", spec.name))?;
    let Some(command) = env.command(&spec.command, workspace, &spec.env) else {
        let _ = log.finish().await;
        return Err(format!("service {}: the command is empty", spec.name));
    };
    let mut agent = match processes
        .spawn(&format!("{eval_id}.s.{}", spec.name), command)
        .await
    {
        Ok(agent) => agent,
        Err(e) => {
            let _ = log.finish().await;
            return Err(format!("service {} could not start: {e}", spec.name));
        }
    };
    let pumps = pump_both(agent.as_mut(), &log, None);
    let ready = wait_ready(agent.as_mut(), processes, clock, spec, ws, &env.sandbox).await;
    if let Err(reason) = ready {
        let _ = agent.teardown(TeardownOptions::with_grace(grace)).await;
        crate::capped_log::drain(pumps).await;
        let _ = log.finish().await;
        return Err(reason);
    }
    let (stop_tx, stop_rx) = oneshot::channel::<Escalation>();
    let name = spec.name.clone();
    let task = tokio::spawn(async move {
        let mut stop_rx = stop_rx;
        let escalation = tokio::select! {
            exit = agent.wait() => {
                let _ = exits.send((name, exit));
                stop_rx.await.unwrap_or_default()
            }
            escalation = &mut stop_rx => escalation.unwrap_or_default(),
        };
        stop_and_drain(agent.as_mut(), grace, escalation, pumps, &log).await
    });
    Ok(Service {
        name: spec.name.clone(),
        stop: Some(stop_tx),
        task,
    })
}

/// Polls the readiness check until it passes, the service exits, or the timeout.
async fn wait_ready(
    agent: &mut dyn Process,
    processes: &dyn Processes,
    clock: &dyn Clock,
    spec: &ServiceSpec,
    workspace: &dyn EvalWorkspace,
    sandbox: &Sandbox,
) -> Result<(), String> {
    // A timeout too long for the clock never ends.
    let deadline = clock.now().checked_add(spec.timeout);
    loop {
        if check_ready(&spec.ready, processes, workspace, sandbox).await {
            return Ok(());
        }
        tokio::select! {
            exit = agent.wait() => {
                let how = exit_text(exit);
                return Err(format!("service {} exited with {how} before it was ready", spec.name));
            }
            () = sleep_until(deadline) => {
                return Err(format!(
                    "service {} was not ready within {}",
                    spec.name,
                    humantime::format_duration(spec.timeout)
                ));
            }
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

/// How long a readiness command may run.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a service is ready. Checks run where the service runs: in the eval's network
/// namespace and sandbox, when it has them.
async fn check_ready(
    ready: &Readiness,
    processes: &dyn Processes,
    workspace: &dyn EvalWorkspace,
    sandbox: &Sandbox,
) -> bool {
    match ready {
        Readiness::Started => true,
        Readiness::File(path) => workspace.exists(path),
        Readiness::Tcp(address) if sandbox.namespace.is_some() => {
            let (Some(namespace), Ok(addresses)) = (
                sandbox.namespace.clone(),
                tokio::net::lookup_host(address.as_str()).await,
            ) else {
                return false;
            };
            let addresses: Vec<_> = addresses.collect();
            tokio::task::spawn_blocking(move || {
                addresses
                    .iter()
                    .any(|a| namespace.connects(*a, Duration::from_secs(1)))
            })
            .await
            .unwrap_or(false)
        }
        Readiness::Tcp(address) => matches!(
            tokio::time::timeout(
                Duration::from_secs(1),
                tokio::net::TcpStream::connect(address.as_str())
            )
            .await,
            Ok(Ok(_))
        ),
        Readiness::Command(argv) => {
            let Some((program, rest)) = argv.split_first() else {
                return false;
            };
            let mut command = AgentCommand::new(program, rest.iter().cloned());
            command.cwd = Some(workspace.path().to_owned());
            command.sandbox = sandbox.clone();
            processes.probe(command, PROBE_TIMEOUT).await
        }
    }
}

/// How a process ended, for a reason in a record.
pub(crate) fn exit_text(exit: Option<AgentExit>) -> String {
    match exit {
        Some(AgentExit::Code(code)) => format!("exit code {code}"),
        Some(AgentExit::Signal(sig)) => format!("signal {sig}"),
        _ => "an unknown status".to_owned(),
    }
}

/// Stops every service (TERM, grace, KILL) and returns their teardown reports.
pub(crate) async fn stop_services(
    services: Vec<Service>,
    escalation: &Escalation,
) -> Vec<TeardownReport> {
    let mut reports = Vec::new();
    for mut service in services {
        if let Some(stop) = service.stop.take() {
            let _ = stop.send(escalation.clone());
        }
        match service.task.await {
            Ok(report) => reports.push(report),
            Err(err) => {
                tracing::error!(service = %service.name, error = %err, "service supervisor failed");
            }
        }
    }
    reports
}

/// What a build or review phase did.
pub(crate) struct PhaseRun {
    pub(crate) record: PhaseRecord,
    pub(crate) teardown: TeardownReport,
    /// The review's verdict, when it printed a valid one.
    pub(crate) verdict: Option<ReviewVerdict>,
    /// Whether a stop request cut it short.
    pub(crate) interrupted: bool,
}

/// Runs `command` as the phase `name` (`build` or `review`) in the workspace, with its own
/// timeout and containment; output goes to `<name>.log`.
///
/// The phase's verdict: a build passes when it exits 0 and fails on another exit code (the
/// agent's work does not build). A review's printed JSON verdict decides when it exits 0 or
/// 1; without one, exit 0 passes and exit 1 fails. Anything else is the scorer's error
/// ([`PhaseStatus::Error`]): a signal, another exit code, a timeout, a command that cannot
/// start, or a printed verdict that is not valid (`{"pass": …}` of the wrong shape).
pub(crate) async fn run_phase(
    pcx: PhaseContext<'_>,
    name: &'static str,
    phase: &PhaseCommand,
    mut stop: Stop,
) -> PhaseRun {
    let PhaseContext {
        processes,
        clock: time,
        eval_id,
        workspace,
        eval_dir,
        env,
        grace,
    } = pcx;
    let clock = PhaseClock::start(time, name);
    let error = |clock: PhaseClock<'_>, detail: String| PhaseRun {
        record: clock.finish(PhaseStatus::Error, None, Some(detail)),
        teardown: TeardownReport::default(),
        verdict: None,
        interrupted: false,
    };
    let log = match CappedLog::create(&eval_dir.join(format!("{name}.log")), OUTPUT_CAP).await {
        Ok(log) => log,
        Err(err) => return error(clock, format!("cannot create {name}.log: {err}")),
    };
    let Some(command) = env.command(&phase.command, workspace, &[]) else {
        let _ = log.finish().await;
        return error(clock, format!("the {name} command is empty"));
    };
    let mut agent = match processes.spawn(&format!("{eval_id}.{name}"), command).await {
        Ok(agent) => agent,
        Err(err) => {
            let _ = log.finish().await;
            return error(clock, format!("cannot start the {name} command: {err}"));
        }
    };
    let (capture_tx, mut capture_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let pumps = pump_both(agent.as_mut(), &log, Some(capture_tx));
    let (exit, stopped, interrupted) = tokio::select! {
        exit = agent.wait() => (exit, None, false),
        () = tokio::time::sleep(phase.timeout) => (None, Some(format!("timed out after {}", humantime::format_duration(phase.timeout))), false),
        reason = stop.requested() => (None, Some(format!("stopped by {}", reason.name())), true),
    };
    let escalation = Escalation::new();
    if matches!(stop.level(), StopLevel::Force(_)) {
        escalation.escalate();
    }
    let teardown = stop_and_drain(agent.as_mut(), grace, escalation, pumps, &log).await;
    let mut stdout = Vec::new();
    while let Ok(chunk) = capture_rx.try_recv() {
        let room = VERDICT_BYTES.saturating_sub(stdout.len());
        stdout.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    let exit_code = exit.and_then(AgentExit::code);
    let printed = (name == "review").then(|| parse_verdict(&stdout)).flatten();
    let (status, detail) = match (stopped, exit) {
        (Some(why), _) => (PhaseStatus::Error, Some(why)),
        (None, Some(AgentExit::Signal(sig))) => (
            PhaseStatus::Error,
            Some(format!("crashed: killed by signal {sig}")),
        ),
        (None, Some(AgentExit::Code(code))) if name != "review" => match code {
            0 => (PhaseStatus::Passed, None),
            code => (PhaseStatus::Failed, Some(format!("exit code {code}"))),
        },
        (None, Some(AgentExit::Code(code))) => match &printed {
            Some(Err(why)) => (
                PhaseStatus::Error,
                Some(format!("printed an invalid verdict: {why}")),
            ),
            Some(Ok(v)) if code <= 1 && v.pass => (PhaseStatus::Passed, None),
            Some(Ok(_)) if code <= 1 => (
                PhaseStatus::Failed,
                Some("the review's verdict is a fail".to_owned()),
            ),
            None if code == 0 => (PhaseStatus::Passed, None),
            None if code == 1 => (PhaseStatus::Failed, Some("exit code 1".to_owned())),
            _ => (
                PhaseStatus::Error,
                Some(format!("crashed: exit code {code} (a review exits 0 or 1)")),
            ),
        },
        (None, _) => (PhaseStatus::Error, Some("unknown exit".to_owned())),
    };
    PhaseRun {
        record: clock.finish(status, exit_code, detail),
        teardown,
        verdict: printed.and_then(Result::ok),
        interrupted,
    }
}

/// Tears a phase process's tree down, then waits for its output to drain into `log`.
async fn stop_and_drain(
    agent: &mut dyn Process,
    grace: Duration,
    escalation: Escalation,
    pumps: Vec<tokio::task::JoinHandle<()>>,
    log: &CappedLog,
) -> TeardownReport {
    let report = agent
        .teardown(TeardownOptions {
            grace,
            kill_timeout: KILL_TIMEOUT,
            escalation,
        })
        .await;
    if crate::capped_log::drain(pumps).await.1 {
        tracing::warn!(
            "a process outside the phase's tree holds its output open; stopped reading it"
        );
    }
    let _ = log.finish().await;
    report
}

/// Finds a verdict in a review's stdout: the whole output as JSON, or else its last line
/// that is a JSON object with a `pass` key. `None` when there is none; an error when that
/// object is not a valid verdict.
pub(crate) fn parse_verdict(stdout: &[u8]) -> Option<Result<ReviewVerdict, String>> {
    let text = String::from_utf8_lossy(stdout);
    std::iter::once(text.trim())
        .chain(text.lines().rev().map(str::trim))
        .find_map(|candidate| {
            let value: serde_json::Value = serde_json::from_str(candidate).ok()?;
            value
                .as_object()?
                .contains_key("pass")
                .then(|| serde_json::from_value::<ReviewVerdict>(value).map_err(|e| e.to_string()))
        })
}

/// Pumps a phase process's stdout and stderr into `log`; stdout also into `capture`.
fn pump_both(
    agent: &mut dyn Process,
    log: &CappedLog,
    capture: Option<mpsc::UnboundedSender<Vec<u8>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut pumps = Vec::new();
    if let Some(out) = agent.take_stdout() {
        let log = log.clone();
        pumps.push(tokio::spawn(async move { pump(out, &log, capture).await }));
    }
    if let Some(err) = agent.take_stderr() {
        let log = log.clone();
        pumps.push(tokio::spawn(async move { pump(err, &log, None).await }));
    }
    pumps
}

async fn pump(mut reader: Pipe, log: &CappedLog, capture: Option<mpsc::UnboundedSender<Vec<u8>>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let _ = log.write(&buf[..n]).await;
                if let Some(tx) = &capture {
                    let _ = tx.send(buf[..n].to_vec());
                }
            }
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
