//! The services phase: services started in order before the agent, each ready (a file, a
//! port, a command) before the next starts, supervised while the agent runs, and stopped after
//! the scorers.

use std::time::Duration;

use hyoka_proctrack::{
    AgentCommand, AgentExit, Clock, Escalation, Sandbox, TeardownOptions, TeardownReport,
};
use tokio::sync::{mpsc, oneshot};

use super::output::pump_both;
use super::{PhaseClock, PhaseContext, exit_text, sleep_until, stop_and_drain};
use crate::capped_log::{CappedLog, OUTPUT_CAP};
use crate::host::{EvalWorkspace, Process, Processes};
use crate::ps::LiveStatus;
use crate::report::{PhaseRecord, PhaseStatus};
use crate::settings::{Readiness, ServiceSpec};

/// What the services phase left: the services running, the phase's record, and the teardown
/// reports of those stopped because one failed.
pub(crate) struct Started {
    /// The services, running.
    pub(crate) services: Vec<Service>,
    /// Why one failed, stopping the agent from starting.
    pub(crate) failure: Option<String>,
    /// The phase's record, when the eval has services.
    pub(crate) record: Option<PhaseRecord>,
    /// The teardowns of the services stopped after a failure.
    pub(crate) teardowns: Vec<TeardownReport>,
}

impl Started {
    /// The services phase of an eval without services: it does not run.
    pub(crate) fn none() -> Self {
        Self {
            services: Vec::new(),
            failure: None,
            record: None,
            teardowns: Vec::new(),
        }
    }

    /// The services phase of an eval whose services could not be prepared (`why`): none
    /// starts, and neither does the agent.
    pub(crate) fn refused(clock: &dyn Clock, why: String) -> Self {
        let record = PhaseClock::start(clock, "services").finish(
            PhaseStatus::Error,
            None,
            Some(why.clone()),
        );
        Self {
            services: Vec::new(),
            failure: Some(why),
            record: Some(record),
            teardowns: Vec::new(),
        }
    }
}

/// The services phase of the services setup prepared (`Err`: they could not be, and none
/// starts): it does not run for an eval without services, and says so in `live` when it
/// does.
pub(crate) async fn services(
    pcx: PhaseContext<'_>,
    workspace: &mut dyn EvalWorkspace,
    specs: Result<Vec<ServiceSpec>, String>,
    live: &LiveStatus,
    exits: &mpsc::UnboundedSender<(String, Option<AgentExit>)>,
) -> Started {
    match specs {
        Err(why) => Started::refused(pcx.clock, why),
        Ok(specs) if specs.is_empty() => Started::none(),
        Ok(specs) => {
            live.phase("services", pcx.clock.wall());
            start_all(pcx, workspace, &specs, exits).await
        }
    }
}

/// Runs the services phase: starts every service in order and waits until each is ready;
/// what they wrote before the agent starts is not the agent's output. Each service's exit
/// goes to `exits` while it runs.
async fn start_all(
    pcx: PhaseContext<'_>,
    workspace: &mut dyn EvalWorkspace,
    specs: &[ServiceSpec],
    exits: &mpsc::UnboundedSender<(String, Option<AgentExit>)>,
) -> Started {
    let phase = PhaseClock::start(pcx.clock, "services");
    match start_services(pcx, &*workspace, specs, exits).await {
        Ok(services) => {
            if let Err(err) = workspace.rebaseline() {
                tracing::warn!(error = %err, "cannot re-snapshot the workspace");
            }
            Started {
                services,
                failure: None,
                record: Some(phase.finish(PhaseStatus::Passed, None, None)),
                teardowns: Vec::new(),
            }
        }
        Err((reason, teardowns)) => Started {
            services: Vec::new(),
            record: Some(phase.finish(PhaseStatus::Error, None, Some(reason.clone()))),
            failure: Some(reason),
            teardowns,
        },
    }
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
async fn start_services(
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
