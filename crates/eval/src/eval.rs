//! Running one eval: workspace, agent, events, limits, timeline, teardown, records.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyoka_proctrack::{
    AgentExit, Escalation, Layers, ProcTrackError, TeardownOptions, TeardownReport,
};
use hyoka_workspace::{EvalId, KeepPolicy, RunId, WorkspaceOptions};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::time::Instant;

use crate::capped_log::{CappedLog, OUTPUT_CAP, drain};
use crate::error::EvalError;
use crate::events::{AgentEvent, EventSource, LineCounts, LineReader, LineSplitter};
use crate::host::{EvalWorkspace, Harness, Pipe, WorkspaceEnd};
use crate::limits::Monitor;
use crate::phases::{
    PhaseClock, PhaseContext, PhaseEnv, exit_text, prepare_home, run_phase, skipped, sleep_until,
    start_services, stop_services,
};
use crate::ps::LiveStatus;
use crate::records::{STATUS_FILE, millis, rfc3339, write_json};
use crate::report::{
    Cleanup, Counts, ErrorKind, EventsRecord, Limits, PhaseRecord, PhaseStatus, Report, Status,
    Termination,
};
use crate::sandbox::{SandboxDecision, SandboxMode, SandboxRecord, Writable, decide};
use crate::settings::EvalSpec;
use crate::stop::Stop;
use crate::timeline::TimelineBuilder;
use crate::trials::{Trial, attempt_id};
use crate::usage::TokenUsage;
use crate::watch::WatchUpdate;
use hyoka_proctrack::{NetNamespace, Network, Sandbox};

/// Everything that is the same for every eval of a run.
#[derive(Debug, Clone)]
pub(crate) struct RunContext {
    /// The run id.
    pub(crate) run_id: RunId,
    /// `reports/<run_id>`.
    pub(crate) run_dir: PathBuf,
    /// Where workspaces are created.
    pub(crate) workspace_root: PathBuf,
    /// When workspaces are kept.
    pub(crate) keep: KeepPolicy,
    /// Whether the workspace name carries the eval id (suites).
    pub(crate) name_with_eval: bool,
    /// The caller's environment, from which an isolated home passes variables through.
    pub(crate) inherited_env: Arc<[(OsString, OsString)]>,
    /// The seams: processes (the run's tracker), workspaces, the clock.
    pub(crate) harness: Harness,
}

/// A report of `trial` with nothing done yet: no workspace, no counts, no phases.
fn blank_report(ctx: &RunContext, trial: &Trial, identity: &str, status: Status) -> Report {
    let spec = &trial.spec;
    let now = rfc3339(ctx.harness.clock.wall());
    Report {
        run_id: ctx.run_id.to_string(),
        eval_id: spec.eval_id.to_string(),
        trial: trial.id.to_string(),
        epoch: trial.epoch,
        agent: spec.agent.clone(),
        command: spec
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        workspace: String::new(),
        started_at: now.clone(),
        ended_at: now,
        duration_ms: 0,
        status,
        error_kind: None,
        termination: Termination::Interrupted,
        exit_code: None,
        signal: None,
        limits: limits_of(spec),
        counts: Counts::default(),
        usage: None,
        events: None,
        cleanup: Cleanup {
            workspace_removed: true,
            ..Cleanup::default()
        },
        error: None,
        phases: Vec::new(),
        review: None,
        sandbox: None,
        attempts: 1,
        earlier_attempts: Vec::new(),
        identity: identity.to_owned(),
    }
}

/// The report of a trial that never started: a stop was requested first, or an earlier
/// trial could not record.
pub(crate) fn not_started(
    ctx: &RunContext,
    trial: &Trial,
    identity: &str,
    termination: Termination,
    why: String,
) -> Report {
    Report {
        termination,
        error: Some(why),
        attempts: 0,
        ..blank_report(ctx, trial, identity, Status::NotRun)
    }
}

fn limits_of(spec: &EvalSpec) -> Limits {
    Limits {
        max_turns: spec.limits.max_turns,
        max_files: spec.limits.max_files,
        max_output_size: spec.limits.max_output_size,
        max_session_actions: spec.limits.max_session_actions,
        max_tokens: spec.limits.max_tokens,
        max_cost: spec.limits.max_cost,
        timeout_ms: millis(spec.timeout),
        grace_ms: millis(spec.grace),
    }
}

/// Whose result a trial is, from how its agent and phases ended (see [`Status`] and
/// [`ErrorKind`]): the infrastructure's faults first (including an interruption), then the
/// agent's result, then the scorer's faults, then the phases' verdicts.
fn classify(
    outcome: &AgentOutcome,
    phases: &[PhaseRecord],
    interrupted: bool,
) -> (Status, Option<ErrorKind>) {
    let phase = |name: &str, status: PhaseStatus| {
        phases.iter().any(|p| p.name == name && p.status == status)
    };
    let agent_passed = outcome.termination == Termination::Exited && outcome.exit_code == Some(0);
    let scorer = |status| phase("build", status) || phase("review", status);
    if outcome.infra
        || interrupted
        || outcome.termination == Termination::Interrupted
        || phase("cleanup", PhaseStatus::Failed)
    {
        (Status::Error, Some(ErrorKind::Infra))
    } else if !agent_passed {
        (Status::Failed, None)
    } else if scorer(PhaseStatus::Error) {
        (Status::Error, Some(ErrorKind::Scorer))
    } else if scorer(PhaseStatus::Failed) {
        (Status::Failed, None)
    } else {
        (Status::Passed, None)
    }
}

/// Runs one attempt of a trial through its phases (setup, services, agent, build, review,
/// cleanup) and writes its logs and timeline; the caller writes `report.json` once it
/// decides whether the attempt is the last. Every outcome of the agent and of every phase,
/// and a workspace that cannot be made, becomes a report; only records that cannot be
/// written are an error.
#[expect(
    clippy::too_many_lines,
    reason = "the phases, in order, read best as one sequence"
)]
pub(crate) async fn run_eval(
    ctx: &RunContext,
    trial: &Trial,
    identity: &str,
    attempt: u32,
    stop: Stop,
) -> Result<Report, EvalError> {
    let spec = &*trial.spec;
    let clock = &*ctx.harness.clock;
    let process_id = attempt_id(trial, attempt)?;
    let eval_id = process_id.as_str();
    let eval_dir = ctx.run_dir.join(trial.id.as_str());
    std::fs::create_dir_all(&eval_dir).map_err(|e| EvalError::io("create", &eval_dir, e))?;
    let started_at = clock.wall();
    let started = clock.now();
    let mut phases = Vec::new();

    let live = LiveStatus::new(&eval_dir, started_at);
    live.phase("setup", clock.wall());
    let setup = PhaseClock::start(clock, "setup");
    let created = create_recorded(
        ctx,
        eval_id,
        &WorkspaceOptions {
            root: ctx.workspace_root.clone(),
            run_id: ctx.run_id.clone(),
            eval_id: ctx.name_with_eval.then(|| process_id.clone()),
            keep: ctx.keep,
            starter: spec.starter.clone(),
            inject: spec.phases.files.clone(),
            instance: ctx.harness.processes.instance(),
            owner: ctx.harness.processes.marker_owner(),
        },
    )
    .and_then(|workspace| {
        if !spec.phases.isolate_home {
            return Ok((workspace, None));
        }
        match isolated_home(ctx, &process_id) {
            Ok(home) => Ok((workspace, Some(home))),
            Err(err) => {
                let _ = close_workspace(workspace, Status::Error);
                Err(err)
            }
        }
    });
    let (mut workspace, home) = match created {
        Ok(created) => created,
        Err(err) => {
            // The workspace or the home could not be made: the machine's fault, retried.
            let why = format!("cannot prepare the workspace: {err}");
            let _ = std::fs::remove_file(eval_dir.join(STATUS_FILE));
            return Ok(Report {
                termination: Termination::SetupFailed,
                error_kind: Some(ErrorKind::Infra),
                started_at: rfc3339(started_at),
                duration_ms: millis(clock.now().saturating_duration_since(started)),
                phases: vec![setup.finish(PhaseStatus::Error, None, Some(why.clone()))],
                error: Some(why),
                ..blank_report(ctx, trial, identity, Status::Error)
            });
        }
    };
    let mut sandbox = eval_sandbox(ctx, spec, workspace.path(), home.as_ref().map(|h| h.path()))?;
    let skipped_links = workspace.skipped_links();
    phases.push(
        setup.finish(
            PhaseStatus::Passed,
            None,
            (skipped_links > 0)
                .then(|| format!("{skipped_links} link(s) leading outside were not copied")),
        ),
    );
    let mut env = PhaseEnv::new(
        workspace.path(),
        &spec.env,
        home.as_ref().map(|home| home.path()),
        &spec.phases.pass_env,
        &ctx.inherited_env,
    );
    // The agent's sandbox differs from its phases': its events file, and a read-only
    // workspace with `sandbox_read_only`.
    let mut agent_env = env.clone();
    if let Some(sandbox) = &sandbox {
        if let Some(tmp) = &sandbox.tmp {
            env.vars.push(("TMPDIR".into(), tmp.path().into()));
        }
        env.sandbox = sandbox.process(true, false);
        agent_env = PhaseEnv {
            sandbox: sandbox.process(!spec.sandbox.read_only, true),
            ..env.clone()
        };
    }
    let workspace_path = workspace.path().to_owned();
    let pcx = PhaseContext {
        processes: &*ctx.harness.processes,
        clock,
        eval_id,
        workspace: &workspace_path,
        eval_dir: &eval_dir,
        env: &env,
        grace: spec.grace,
    };

    let mut teardowns = Vec::new();
    let (service_tx, service_rx) = unbounded_channel();
    let mut services = Vec::new();
    let mut service_failure = None;
    if !spec.phases.services.is_empty() {
        live.phase("services", clock.wall());
        let phase = PhaseClock::start(clock, "services");
        let started_services =
            start_services(pcx, &*workspace, &spec.phases.services, &service_tx).await;
        match started_services {
            Ok(started) => {
                services = started;
                phases.push(phase.finish(PhaseStatus::Passed, None, None));
                // What the services wrote before the agent starts is not the agent's output.
                if let Err(err) = workspace.rebaseline() {
                    tracing::warn!(error = %err, "cannot re-snapshot the workspace");
                }
            }
            Err((reason, reports)) => {
                teardowns.extend(reports);
                phases.push(phase.finish(PhaseStatus::Error, None, Some(reason.clone())));
                service_failure = Some(reason);
            }
        }
    }
    drop(service_tx);

    let agent_clock = PhaseClock::start(clock, "agent");
    let mut outcome = if let Some(reason) = service_failure {
        phases.push(skipped(clock, "agent", "a service failed"));
        AgentOutcome::not_run(
            Termination::ServiceFailed,
            reason,
            true,
            TimelineBuilder::new(started),
        )
    } else {
        live.phase("agent", clock.wall());
        let outcome = run_agent(
            ctx,
            spec,
            &*workspace,
            PhaseContext {
                env: &agent_env,
                ..pcx
            },
            (started, &live),
            stop.clone(),
            service_rx,
        )
        .await;
        let agent_status = match outcome.termination {
            Termination::Exited if outcome.exit_code == Some(0) => PhaseStatus::Passed,
            _ if outcome.infra => PhaseStatus::Error,
            _ => PhaseStatus::Failed,
        };
        let detail = (agent_status != PhaseStatus::Passed).then(|| {
            outcome
                .error
                .clone()
                .unwrap_or_else(|| outcome.termination.as_str().to_owned())
        });
        phases.push(agent_clock.finish(agent_status, outcome.exit_code, detail));
        outcome
    };
    if let Some(teardown) = outcome.teardown.take() {
        teardowns.push(teardown);
    }

    // Build and review run after the agent's tree is gone, also after a limit or a timeout
    // (graders score partial work), but not after an interruption or when the agent never
    // ran.
    let proceed = !matches!(
        outcome.termination,
        Termination::Interrupted | Termination::SpawnFailed | Termination::ServiceFailed
    );
    let mut verdict = None;
    let mut interrupted = false;
    for (name, command) in [
        ("build", &spec.phases.build),
        ("review", &spec.phases.review),
    ] {
        let Some(command) = command else { continue };
        let build_failed = phases
            .iter()
            .any(|p| p.name == "build" && p.status != PhaseStatus::Passed);
        if !proceed || (name == "review" && build_failed) {
            let why = if proceed {
                "the build failed"
            } else {
                "the agent did not finish"
            };
            phases.push(skipped(clock, name, why));
            continue;
        }
        live.phase(name, clock.wall());
        outcome
            .timeline
            .phase(clock.now(), format!("{name} started"));
        let run = run_phase(pcx, name, command, stop.clone()).await;
        outcome.timeline.phase(
            clock.now(),
            format!("{name} {}", run.record.status.as_str()),
        );
        teardowns.push(run.teardown);
        interrupted |= run.interrupted;
        if name == "review" {
            verdict = run.verdict;
        }
        phases.push(run.record);
    }
    teardowns.extend(stop_services(services, &Escalation::new()).await);

    // The eval passes only if the agent and every phase that ran passed: a later phase can
    // never turn a limit, a timeout or a failed agent into a pass. Cleanup may still turn a
    // pass into an infrastructure error (survivors, leftovers), so the workspace is closed
    // with the status decided so far.
    let (status, _) = classify(&outcome, &phases, interrupted);
    live.phase("cleanup", clock.wall());
    let cleanup_clock = PhaseClock::start(clock, "cleanup");
    let workspace_path = workspace_path.display().to_string();
    let mut cleanup = close_workspace(workspace, status);
    let tmp = sandbox.as_mut().and_then(|s| s.tmp.take());
    for (what, dir) in [("isolated home", home), ("temp directory", tmp)] {
        let Some(dir) = dir else { continue };
        match dir.close(Status::Passed) {
            WorkspaceEnd::Removed | WorkspaceEnd::Kept(_) => {}
            WorkspaceEnd::Incomplete(leftovers) => {
                tracing::error!("cannot remove the {what} completely");
                cleanup.workspace_leftovers.extend(leftovers);
            }
            WorkspaceEnd::Failed(err) => {
                tracing::error!(error = %err, "cannot remove the {what}");
                cleanup.workspace_leftovers.push(err);
            }
        }
    }
    for teardown in &teardowns {
        cleanup.processes_seen += teardown.processes_seen as u64;
        cleanup.processes_killed += teardown.processes_killed as u64;
        cleanup.survivors = cleanup
            .survivors
            .map(|n| n + teardown.survivors as u64)
            .filter(|_| teardown.survivors_unknown.is_none());
        if let Some(why) = &teardown.survivors_unknown {
            cleanup.survivors_unknown.get_or_insert_with(|| why.clone());
        }
        for layer in &teardown.layers_lost {
            let name = layer.as_str().to_owned();
            if !cleanup.layers_lost.contains(&name) {
                cleanup.layers_lost.push(name);
            }
        }
    }
    cleanup.layers = layer_names(outcome.layers);
    let cleaned = cleanup.survivors == Some(0) && cleanup.workspace_leftovers.is_empty();
    phases.push(cleanup_clock.finish(
        if cleaned {
            PhaseStatus::Passed
        } else {
            PhaseStatus::Failed
        },
        None,
        (!cleaned).then(|| {
            format!(
                "{} survivor(s), {} leftover(s)",
                cleanup
                    .survivors
                    .map_or_else(|| "unknown".to_owned(), |n| n.to_string()),
                cleanup.workspace_leftovers.len()
            )
        }),
    ));
    let (status, error_kind) = classify(&outcome, &phases, interrupted);
    let duration = clock.now().saturating_duration_since(started);
    let timeline = outcome.timeline.finish(
        ctx.run_id.as_str(),
        spec.eval_id.as_str(),
        outcome.counts,
        duration,
        outcome.lines.unknown,
        outcome.lines.malformed,
    );
    let report = Report {
        workspace: workspace_path,
        started_at: rfc3339(started_at),
        ended_at: rfc3339(clock.wall()),
        duration_ms: millis(duration),
        error_kind,
        termination: outcome.termination,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        counts: outcome.counts,
        usage: outcome.usage,
        events: outcome.events,
        cleanup,
        error: outcome.error,
        phases,
        review: verdict,
        sandbox: sandbox.map(|s| s.record),
        ..blank_report(ctx, trial, identity, status)
    };
    write_json(&eval_dir.join("action_timeline.json"), &timeline)?;
    let _ = std::fs::remove_file(eval_dir.join(STATUS_FILE));
    Ok(report)
}

/// The sandbox of one eval: what is in force, the paths its processes may write, and its
/// record.
pub(crate) struct EvalSandbox {
    decision: SandboxDecision,
    writable: Writable,
    /// The events file the agent appends to (`jsonl`), which it may write too.
    agent_files: Vec<PathBuf>,
    record: SandboxRecord,
    /// The private temp directory (`TMPDIR`), removed with the eval.
    tmp: Option<Box<dyn EvalWorkspace>>,
    /// With `network: none`, the namespace every process of the eval shares.
    namespace: Option<NetNamespace>,
}

impl EvalSandbox {
    /// One process's sandbox: with or without the workspace, with or without the agent's
    /// files, in the eval's network namespace.
    fn process(&self, workspace: bool, agent: bool) -> Sandbox {
        let files: Vec<&Path> = if agent {
            self.agent_files.iter().map(PathBuf::as_path).collect()
        } else {
            Vec::new()
        };
        Sandbox {
            namespace: self.namespace.clone(),
            ..self.decision.sandbox(&self.writable, workspace, &files)
        }
    }
}

/// Decides the eval's sandbox and, with one, creates its private temp directory (marked and
/// recorded in the ledger before it exists, like the isolated home). `None` when the eval
/// asks for nothing.
fn eval_sandbox(
    ctx: &RunContext,
    spec: &EvalSpec,
    workspace: &Path,
    home: Option<&Path>,
) -> Result<Option<EvalSandbox>, EvalError> {
    if !spec.sandbox.is_requested() {
        return Ok(None);
    }
    let refuse = |reason| EvalError::Sandbox {
        eval_id: spec.eval_id.to_string(),
        reason,
    };
    let decision =
        decide(&spec.sandbox, &ctx.harness.processes.sandbox_support()).map_err(refuse)?;
    // One namespace for the whole eval: its services, agent, build and review share a
    // loopback.
    let namespace = if decision.network == Network::None {
        ctx.harness
            .processes
            .network_namespace()
            .map_err(|e| refuse(e.to_string()))?
    } else {
        None
    };
    let tmp = if spec.sandbox.mode == SandboxMode::Off {
        None
    } else {
        Some(marked_dir(ctx, &spec.eval_id, "tmp")?)
    };
    let writable = Writable {
        workspace: workspace.to_owned(),
        shared: home
            .into_iter()
            .chain(tmp.as_ref().map(|t| t.path()))
            .map(Path::to_path_buf)
            .chain(spec.sandbox.write.iter().cloned())
            .collect(),
    };
    let agent_files: Vec<PathBuf> = (spec.events.resolve(&spec.command) == EventSource::Jsonl)
        .then(|| ctx.run_dir.join(spec.eval_id.as_str()).join("events.jsonl"))
        .into_iter()
        .collect();
    let files: Vec<&Path> = agent_files.iter().map(PathBuf::as_path).collect();
    let record = decision.record(&writable, !spec.sandbox.read_only, &files);
    Ok(Some(EvalSandbox {
        decision,
        writable,
        agent_files,
        record,
        tmp,
        namespace,
    }))
}

/// Creates a marked directory of the run for `<eval>.<suffix>` (an isolated home, a temp
/// directory), listed in the ledger so `clean` removes it after a crash.
fn marked_dir(
    ctx: &RunContext,
    eval_id: &EvalId,
    suffix: &str,
) -> Result<Box<dyn EvalWorkspace>, EvalError> {
    let id = EvalId::new(format!("{eval_id}.{suffix}"))?;
    create_recorded(
        ctx,
        id.as_str(),
        &WorkspaceOptions {
            root: ctx.workspace_root.clone(),
            run_id: ctx.run_id.clone(),
            eval_id: Some(id.clone()),
            keep: KeepPolicy::Never,
            starter: None,
            inject: Vec::new(),
            instance: ctx.harness.processes.instance(),
            owner: ctx.harness.processes.marker_owner(),
        },
    )
}

/// Creates the eval's isolated home (a marked directory like a workspace, listed in the ledger
/// so `clean` removes it after a crash) with its XDG directories.
fn isolated_home(ctx: &RunContext, eval_id: &EvalId) -> Result<Box<dyn EvalWorkspace>, EvalError> {
    let home = marked_dir(ctx, eval_id, "home")?;
    prepare_home(&*home)?;
    Ok(home)
}

fn layer_names(layers: Layers) -> Vec<String> {
    [
        (layers.cgroup, "cgroup"),
        (layers.shim, "shim"),
        (layers.session, "session"),
        (layers.marker, "marker"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name.to_owned())
    .collect()
}

fn close_workspace(workspace: Box<dyn EvalWorkspace>, status: Status) -> Cleanup {
    let mut cleanup = Cleanup::default();
    match workspace.close(status) {
        WorkspaceEnd::Removed => cleanup.workspace_removed = true,
        WorkspaceEnd::Kept(path) => cleanup.workspace_kept_at = Some(path.display().to_string()),
        WorkspaceEnd::Incomplete(leftovers) => cleanup.workspace_leftovers = leftovers,
        WorkspaceEnd::Failed(err) => tracing::error!(error = %err, "cannot remove the workspace"),
    }
    cleanup
}

struct AgentOutcome {
    termination: Termination,
    exit_code: Option<i32>,
    signal: Option<i32>,
    error: Option<String>,
    /// Whether the agent's end is the infrastructure's fault (see [`ErrorKind::Infra`]).
    infra: bool,
    usage: Option<TokenUsage>,
    counts: Counts,
    timeline: TimelineBuilder,
    /// What the events reader made of the agent's lines.
    lines: LineCounts,
    /// `report.json` `events`, for an agent that ran with events on.
    events: Option<EventsRecord>,
    teardown: Option<TeardownReport>,
    layers: Layers,
}

impl AgentOutcome {
    /// The outcome of an agent that was never started (`infra`: through no fault of its
    /// command).
    fn not_run(
        termination: Termination,
        error: String,
        infra: bool,
        timeline: TimelineBuilder,
    ) -> Self {
        Self {
            termination,
            exit_code: None,
            signal: None,
            error: Some(error),
            infra,
            usage: None,
            counts: Counts::default(),
            timeline,
            lines: LineCounts::default(),
            events: None,
            teardown: None,
            layers: NO_LAYERS,
        }
    }
}

/// Why the watch loop ended.
enum End {
    Exited(Option<AgentExit>),
    Stopped(Termination),
}

const NO_LAYERS: Layers = Layers {
    cgroup: false,
    shim: false,
    session: false,
    marker: false,
};

/// How often the agent's tree is re-scanned (and the ledger updated) while it runs.
const REFRESH_EVERY: Duration = Duration::from_millis(500);
/// How long SIGKILL rounds may take after the grace period before teardown gives up.
const KILL_TIMEOUT: Duration = Duration::from_secs(5);

#[expect(
    clippy::too_many_lines,
    reason = "one linear story: spawn, watch, stop, collect"
)]
async fn run_agent(
    ctx: &RunContext,
    spec: &EvalSpec,
    workspace: &dyn EvalWorkspace,
    pcx: PhaseContext<'_>,
    (started, live): (Instant, &LiveStatus),
    mut stop: Stop,
    mut service_exits: tokio::sync::mpsc::UnboundedReceiver<(String, Option<AgentExit>)>,
) -> AgentOutcome {
    let (eval_dir, env, clock) = (pcx.eval_dir, pcx.env, pcx.clock);
    let mut timeline = TimelineBuilder::new(started);
    let mut monitor = Monitor::new(spec.limits);
    // The agent's own command missing or not executable is its result; anything else
    // that keeps it from starting is the machine's fault.
    let spawn_failed = |error: String, timeline: TimelineBuilder| {
        AgentOutcome::not_run(Termination::SpawnFailed, error, true, timeline)
    };
    let log = match CappedLog::create(&eval_dir.join("output.log"), OUTPUT_CAP).await {
        Ok(log) => log,
        Err(err) => return spawn_failed(format!("cannot create output.log: {err}"), timeline),
    };
    let source = spec.events.resolve(&spec.command);
    let events_file = eval_dir.join("events.jsonl");
    if source == EventSource::Jsonl
        && let Err(err) = std::fs::File::create(&events_file)
    {
        return spawn_failed(
            format!("cannot create {}: {err}", events_file.display()),
            timeline,
        );
    }
    let events_env: Vec<(OsString, OsString)> = if source == EventSource::Jsonl {
        vec![("HYOKA_EVENTS".into(), events_file.clone().into())]
    } else {
        Vec::new()
    };
    let Some(command) = env.command(&spec.command, workspace.path(), &events_env) else {
        let _ = log.finish().await;
        return spawn_failed("the command is empty".to_owned(), timeline);
    };
    if let Err(err) = ctx
        .harness
        .processes
        .record_workspace(pcx.eval_id, workspace.path())
    {
        return spawn_failed(
            format!("cannot record the workspace in the ledger: {err}"),
            timeline,
        );
    }
    let (watch_tx, mut watch_rx) = unbounded_channel::<WatchUpdate>();
    let watcher = workspace.watch(watch_tx);
    let mut agent = match ctx.harness.processes.spawn(pcx.eval_id, command).await {
        Ok(agent) => agent,
        Err(err) => {
            let _ = log.finish().await;
            let (message, infra) = match &err {
                ProcTrackError::Spawn { program, source } => (
                    format!("cannot start {:?}: {source}", program.display().to_string()),
                    !matches!(
                        source.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                    ),
                ),
                other => (format!("cannot start the agent: {other}"), true),
            };
            return AgentOutcome::not_run(Termination::SpawnFailed, message, infra, timeline);
        }
    };
    // Read now: teardown removes the cgroup leaf, after which the agent no longer reports it.
    let layers = agent.layers();
    let (agent_tx, mut agent_rx) = unbounded_channel::<AgentEvent>();
    let stdout_reader = source
        .reads_stdout()
        .then(|| source.reader().map(|r| (r, agent_tx.clone())))
        .flatten();
    let stdout = agent.take_stdout().map(|out| {
        let log = log.clone();
        tokio::spawn(async move { pump(out, &log, stdout_reader).await })
    });
    let stderr = agent.take_stderr().map(|err| {
        let log = log.clone();
        tokio::spawn(async move { pump(err, &log, None).await })
    });
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let tail = (source == EventSource::Jsonl)
        .then(|| source.reader())
        .flatten()
        .map(|reader| {
            let tx = agent_tx.clone();
            let path = events_file.clone();
            tokio::spawn(async move { tail_jsonl(&path, reader, tx, done_rx).await })
        });
    drop(agent_tx);

    // A timeout too long for the clock never ends (durations are range-checked where they
    // are parsed; an embedder's are not).
    let deadline = (!spec.timeout.is_zero())
        .then(|| clock.now().checked_add(spec.timeout))
        .flatten();
    let mut service_error = None;
    let mut refresh = tokio::time::interval(REFRESH_EVERY);
    refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let end = loop {
        tokio::select! {
            exit = agent.wait() => break End::Exited(exit),
            reason = stop.requested() => {
                timeline.signal(clock.now(), format!("{}: stopping the agent", reason.name()));
                break End::Stopped(Termination::Interrupted);
            }
            () = sleep_until(deadline) => {
                timeline.signal(clock.now(), format!("timeout after {}", humantime::format_duration(spec.timeout)));
                break End::Stopped(Termination::Timeout);
            }
            Some(event) = agent_rx.recv() => {
                timeline.agent(clock.now(), &event);
                if let Some(termination) = monitor.event(&event) {
                    break End::Stopped(termination);
                }
            }
            Some(update) = watch_rx.recv() => {
                if let Some((change, path)) = update.change {
                    timeline.file(clock.now(), change, path);
                }
                if let Some(termination) = monitor.usage(update.usage.files, update.usage.bytes) {
                    break End::Stopped(termination);
                }
            }
            Some((name, exit)) = service_exits.recv() => {
                let how = exit_text(exit);
                let reason = format!("service {name} died with {how} while the agent ran");
                timeline.signal(clock.now(), reason.clone());
                service_error = Some(reason);
                break End::Stopped(Termination::ServiceFailed);
            }
            _ = refresh.tick() => {
                // Keeps the ledger current, so a crash of hyoka leaves `clean` everything it
                // needs, and `hyoka ps` the counts.
                agent.refresh();
                live.counts(monitor.counts());
            }
        }
    };
    let stop_counts = monitor.counts();
    // Read before teardown removes the cgroup leaf that counts the kernel's OOM kills.
    let oom_killed = agent.oom_killed();
    if let End::Stopped(termination) = end {
        if !matches!(
            termination,
            Termination::Timeout | Termination::Interrupted | Termination::ServiceFailed
        ) {
            timeline.limit(clock.now(), termination, stop_counts);
        }
        tracing::info!(?termination, "stopping the agent");
    }
    // The agent's whole tree goes now (on a normal exit: whatever it left behind), so no
    // pipe stays open and nothing outlives the eval. A second signal cuts the grace short.
    let escalation = Escalation::new();
    let escalate = {
        let (escalation, mut stop) = (escalation.clone(), stop.clone());
        tokio::spawn(async move {
            stop.forced().await;
            escalation.escalate();
        })
    };
    let teardown = agent
        .teardown(TeardownOptions {
            grace: spec.grace,
            kill_timeout: KILL_TIMEOUT,
            escalation,
        })
        .await;
    escalate.abort();
    if teardown.survivors > 0 {
        tracing::error!(
            survivors = teardown.survivors,
            "processes survived teardown"
        );
    }
    let exit = match end {
        End::Exited(exit) => exit,
        End::Stopped(_) => agent.exit(),
    };
    let mut lines = LineCounts::default();
    // Bounded: a process outside the tree may hold the agent's pipes open forever.
    let (pumped, held) = drain([stdout, stderr].into_iter().flatten()).await;
    if held {
        let why = "output held open by a process outside the agent's tree: stopped reading it";
        tracing::warn!("{why}");
        timeline.signal(clock.now(), why.to_owned());
    }
    for result in pumped {
        match result {
            Ok(counts) => lines.add(counts),
            Err(err) => tracing::warn!(error = %err, "reading agent output failed"),
        }
    }
    let _ = done_tx.send(true);
    if let Some(tail) = tail
        && let Ok(counts) = tail.await
    {
        lines.add(counts);
    }
    let _ = log.finish().await;
    drop(watcher);
    // Events still queued happened before the agent stopped: they belong to the timeline,
    // and to the counts unless a limit already froze them.
    while let Ok(event) = agent_rx.try_recv() {
        timeline.agent(clock.now(), &event);
        let _ = monitor.event(&event);
    }
    while let Ok(update) = watch_rx.try_recv() {
        if let Some((change, path)) = update.change {
            timeline.file(clock.now(), change, path);
        }
    }
    // The final scan is authoritative for files and bytes.
    match workspace.usage() {
        Ok(usage) => drop(monitor.usage(usage.files, usage.bytes)),
        Err(err) => tracing::warn!(error = %err, "cannot measure workspace usage"),
    }
    let (termination, counts) = match (end, monitor.stopped()) {
        (
            End::Stopped(
                t @ (Termination::Timeout | Termination::Interrupted | Termination::ServiceFailed),
            ),
            _,
        ) => (t, stop_counts),
        (End::Stopped(termination), _) => (
            termination,
            monitor.stopped().map_or(stop_counts, |(_, c)| c),
        ),
        // The agent exited, but a limit was crossed by output that arrived just before: the
        // limit was exceeded, so the eval says so.
        (End::Exited(_), Some((termination, counts))) => {
            timeline.limit(clock.now(), termination, counts);
            (termination, counts)
        }
        (End::Exited(_), None) => (Termination::Exited, monitor.counts()),
    };
    let (exit_code, signal) = exit.map_or((None, None), |e| (e.code(), e.signal()));
    let stopped = if teardown.processes_killed > 0 {
        format!(
            "; {} process(es) stopped by hyoka",
            teardown.processes_killed
        )
    } else {
        String::new()
    };
    timeline.exit(
        clock.now(),
        match (exit_code, signal) {
            (Some(code), _) => format!("exit code {code}{stopped}"),
            (None, Some(sig)) => format!("killed by signal {sig}{stopped}"),
            _ => format!("unknown exit{stopped}"),
        },
    );
    // A process of the agent killed by the kernel's OOM killer, when the agent then failed,
    // is the machine's fault.
    let oom = oom_killed
        && termination == Termination::Exited
        && exit_code != Some(0)
        && service_error.is_none();
    let infra = service_error.is_some() || oom;
    let error = service_error
        .or_else(|| oom.then(|| "the kernel's OOM killer ended a process of the agent".to_owned()));
    AgentOutcome {
        termination,
        exit_code,
        signal,
        error,
        infra,
        usage: monitor.spending(),
        counts,
        timeline,
        lines,
        events: (source != EventSource::None)
            .then(|| EventsRecord::new(spec.events, source, lines)),
        teardown: Some(teardown),
        layers,
    }
}

/// Copies a pipe into the log; with `events`, also reads it with that reader and sends the
/// events it finds. Returns what the reader made of the lines.
async fn pump(
    mut pipe: Pipe,
    log: &CappedLog,
    mut events: Option<(Box<dyn LineReader>, UnboundedSender<AgentEvent>)>,
) -> std::io::Result<LineCounts> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = Lines::default();
    loop {
        let n = pipe.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        log.write(&buf[..n]).await?;
        if let Some((reader, tx)) = &mut events {
            lines.feed(&buf[..n], reader.as_mut(), tx);
        }
    }
    Ok(events.map_or_else(LineCounts::default, |(mut reader, tx)| {
        lines.finish(reader.as_mut(), &tx);
        reader.counts()
    }))
}

/// A reader's line splitting and event buffer.
#[derive(Default)]
struct Lines {
    splitter: LineSplitter,
    parsed: Vec<AgentEvent>,
}

impl Lines {
    /// Reads the complete lines of `chunk` and sends their events.
    fn feed(
        &mut self,
        chunk: &[u8],
        reader: &mut dyn LineReader,
        tx: &UnboundedSender<AgentEvent>,
    ) {
        let parsed = &mut self.parsed;
        self.splitter.feed(chunk, |line, oversized| {
            read(reader, line, oversized, parsed);
        });
        for event in self.parsed.drain(..) {
            let _ = tx.send(event);
        }
    }

    /// Reads a last line without a newline and sends its events.
    fn finish(&mut self, reader: &mut dyn LineReader, tx: &UnboundedSender<AgentEvent>) {
        let parsed = &mut self.parsed;
        self.splitter
            .finish(|line, oversized| read(reader, line, oversized, parsed));
        for event in self.parsed.drain(..) {
            let _ = tx.send(event);
        }
    }
}

fn read(reader: &mut dyn LineReader, line: &[u8], oversized: bool, out: &mut Vec<AgentEvent>) {
    if oversized {
        reader.oversized();
    } else {
        reader.read_line(line, out);
    }
}

/// Follows `$HYOKA_EVENTS` until `done`, then reads what is left. Returns what the reader
/// made of the lines.
async fn tail_jsonl(
    path: &Path,
    mut reader: Box<dyn LineReader>,
    tx: UnboundedSender<AgentEvent>,
    mut done: tokio::sync::watch::Receiver<bool>,
) -> LineCounts {
    let Ok(mut file) = tokio::fs::File::open(path).await else {
        return reader.counts();
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = Lines::default();
    loop {
        let finished = *done.borrow();
        match file.read(&mut buf).await {
            Ok(0) | Err(_) if finished => break,
            Ok(0) | Err(_) => {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                    _ = done.changed() => {}
                }
            }
            Ok(n) => lines.feed(&buf[..n], reader.as_mut(), &tx),
        }
    }
    lines.finish(reader.as_mut(), &tx);
    reader.counts()
}

/// Creates a workspace of `id` (or an isolated home), recording it in the run's ledger
/// *before* it exists, so an owner that dies while it is made or filled leaves nothing
/// `clean` does not know of. When recording fails nothing is created.
fn create_recorded(
    ctx: &RunContext,
    id: &str,
    options: &WorkspaceOptions,
) -> Result<Box<dyn EvalWorkspace>, EvalError> {
    let processes = &ctx.harness.processes;
    Ok(ctx
        .harness
        .workspaces
        .create(options, &mut |path| processes.record_workspace(id, path))?)
}
