//! The agent phase: spawn the agent under every containment layer, watch it (its exit, its
//! deadline, a stop request, its events, the workspace, the services, a periodic refresh of
//! its tree) until the first of them ends it, stop its whole tree, and collect what it did.

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hyoka_proctrack::{
    AgentExit, Clock, EnvVars, Escalation, Layers, ProcTrackError, TeardownOptions, TeardownReport,
};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::task::JoinHandle;

use super::output::{EVENTS_CAP, pump_events, tail_jsonl};
use super::{KILL_TIMEOUT, PhaseClock, PhaseContext, exit_text, sleep_until};
use crate::capped_log::{CappedLog, OUTPUT_CAP, drain};
use crate::changes::{CHANGES_FILE, MAX_CHANGES_LISTED, record_changes};
use crate::host::{EvalWorkspace, Process};
use crate::limits::Monitor;
use crate::ps::LiveStatus;
use crate::records::write_json_before_report;
use crate::report::{
    Counts, EventsRecord, PhaseRecord, PhaseStatus, ResourceFigure, ResourcesRecord, Termination,
};
use crate::settings::EvalSpec;
use crate::stop::Stop;
use crate::timeline::TimelineBuilder;
use crate::watch::WatchUpdate;
use hyoka_events::{AgentEvent, AgentNotes, EventSource, LineCounts, TokenUsage};

/// How the agent ended and what it did.
pub(crate) struct AgentOutcome {
    pub(crate) termination: Termination,
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) error: Option<String>,
    /// Whether the agent's end is the infrastructure's fault (see
    /// [`ErrorKind::Infra`](crate::ErrorKind::Infra)).
    pub(crate) infra: bool,
    pub(crate) usage: Option<TokenUsage>,
    pub(crate) counts: Counts,
    pub(crate) timeline: TimelineBuilder,
    /// What the events reader made of the agent's lines.
    pub(crate) lines: LineCounts,
    /// `report.json` `events`, for an agent that ran with events on.
    pub(crate) events: Option<EventsRecord>,
    pub(crate) teardown: Option<TeardownReport>,
    pub(crate) layers: Layers,
    /// The resource limits' figures.
    pub(crate) resources: ResourcesRecord,
}

impl AgentOutcome {
    /// The outcome of an agent that was never started (`infra`: through no fault of its
    /// command).
    pub(crate) fn not_run(
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
            resources: ResourcesRecord::default(),
        }
    }
}

/// Where a service's exit reaches the agent phase.
type ServiceExits = UnboundedReceiver<(String, Option<AgentExit>)>;

/// The private `/tmp` and the isolated home, when the eval has them.
pub(crate) type Scratch<'a> = [Option<&'a dyn EvalWorkspace>; 2];

/// Runs the agent phase in `workspace`: the agent with `pcx`'s environment (the agent's),
/// watched on the eval's timeline from `started`, its counts kept current in `live`, until it
/// exits or something stops it; `scratch`'s bytes count toward its disk limit. Returns its
/// outcome and the phase's record.
pub(crate) async fn agent(
    spec: &EvalSpec,
    (workspace, scratch): (&dyn EvalWorkspace, &Scratch<'_>),
    pcx: PhaseContext<'_>,
    (started, live): (Instant, &LiveStatus),
    stop: Stop,
    service_exits: ServiceExits,
) -> (AgentOutcome, PhaseRecord) {
    let phase = PhaseClock::start(pcx.clock, "agent");
    live.phase("agent", pcx.clock.wall());
    let timeline = TimelineBuilder::new(started);
    let outcome = match start(spec, workspace, pcx, timeline).await {
        Ok(running) => {
            let dirs = (workspace, scratch);
            (running.watch(spec, dirs, pcx, live, stop, service_exits)).await
        }
        Err(outcome) => outcome,
    };
    let status = match outcome.termination {
        Termination::Exited if outcome.exit_code == Some(0) => PhaseStatus::Passed,
        // A task's agent is judged by the reward: its exit ends the phase cleanly.
        Termination::Exited if spec.task.is_some() => PhaseStatus::Passed,
        _ if outcome.infra => PhaseStatus::Error,
        _ => PhaseStatus::Failed,
    };
    let detail = (status != PhaseStatus::Passed).then(|| {
        (outcome.error.clone()).unwrap_or_else(|| outcome.termination.as_str().to_owned())
    });
    let record = phase.finish(status, outcome.exit_code, detail);
    (outcome, record)
}

/// A started agent: its process, the tasks feeding its output, and what watches it.
struct Running {
    agent: Box<dyn Process>,
    source: EventSource,
    log: CappedLog,
    layers: Layers,
    timeline: TimelineBuilder,
    monitor: Monitor,
    /// What the agent said about itself: its model, its version, the API's refusals.
    notes: AgentNotes,
    /// Whether the limit that stopped the agent was crossed by an end-of-session total.
    stopped_by_total: bool,
    events: UnboundedReceiver<AgentEvent>,
    updates: UnboundedReceiver<WatchUpdate>,
    /// Dropped to stop watching the workspace.
    watcher: Option<Box<dyn Send>>,
    pumps: Vec<JoinHandle<std::io::Result<LineCounts>>>,
    /// Follows `$HYOKA_EVENTS` until told the agent is done.
    tail: Option<(JoinHandle<LineCounts>, tokio::sync::watch::Sender<bool>)>,
    /// The `$HYOKA_EVENTS` file hyoka created (`jsonl`), cut back to [`EVENTS_CAP`] when the
    /// agent writes more, and whether it was.
    events_file: Option<(std::fs::File, Arc<AtomicBool>)>,
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

/// Starts the agent: its `output.log`, its events file (`jsonl`), the workspace in the
/// ledger, the workspace watcher, the process, and the tasks that feed its output to the log
/// and its events reader. An agent that cannot start is an outcome already.
async fn start(
    spec: &EvalSpec,
    workspace: &dyn EvalWorkspace,
    pcx: PhaseContext<'_>,
    timeline: TimelineBuilder,
) -> Result<Running, AgentOutcome> {
    // The agent's own command missing or not executable is its result; anything else
    // that keeps it from starting is the machine's fault.
    let spawn_failed = |error: String, timeline: TimelineBuilder| {
        AgentOutcome::not_run(Termination::SpawnFailed, error, true, timeline)
    };
    let log = match CappedLog::create(&pcx.eval_dir.join("output.log"), OUTPUT_CAP).await {
        Ok(log) => log,
        Err(err) => {
            return Err(spawn_failed(
                format!("cannot create output.log: {err}"),
                timeline,
            ));
        }
    };
    let source = spec.events.resolve(&spec.command);
    let events_file = pcx.eval_dir.join("events.jsonl");
    let events_fd = match (source == EventSource::Jsonl).then(|| create_events(&events_file)) {
        Some(Err(err)) => {
            let why = format!("cannot create {}: {err}", events_file.display());
            return Err(spawn_failed(why, timeline));
        }
        created => created.transpose().ok().flatten(),
    };
    let events_env: Vec<(OsString, OsString)> = if source == EventSource::Jsonl {
        vec![(EnvVars::HYOKA_EVENTS.into(), events_file.clone().into())]
    } else {
        Vec::new()
    };
    let Some(command) = pcx
        .env
        .command(&spec.command, workspace.path(), &events_env)
    else {
        let _ = log.finish().await;
        return Err(spawn_failed("the command is empty".to_owned(), timeline));
    };
    if let Err(err) = pcx
        .processes
        .record_workspace(pcx.eval_id, workspace.path())
    {
        let why = format!("cannot record the workspace in the ledger: {err}");
        return Err(spawn_failed(why, timeline));
    }
    let (watch_tx, updates) = unbounded_channel::<WatchUpdate>();
    let watcher = workspace.watch(watch_tx);
    let mut agent = match pcx.processes.spawn(pcx.eval_id, command).await {
        Ok(agent) => agent,
        Err(err) => {
            let _ = log.finish().await;
            let (message, infra) = spawn_error(&err);
            return Err(AgentOutcome::not_run(
                Termination::SpawnFailed,
                message,
                infra,
                timeline,
            ));
        }
    };
    // Read now: teardown removes the cgroup leaf, after which the agent no longer reports it.
    let layers = agent.layers();
    let (agent_tx, events) = unbounded_channel::<AgentEvent>();
    let mut pumps = Vec::new();
    if let Some(out) = agent.take_stdout() {
        let reader = (source.reads_stdout())
            .then(|| source.reader().map(|r| (r, agent_tx.clone())))
            .flatten();
        let log = log.clone();
        pumps.push(tokio::spawn(
            async move { pump_events(out, &log, reader).await },
        ));
    }
    if let Some(err) = agent.take_stderr() {
        let log = log.clone();
        pumps.push(tokio::spawn(
            async move { pump_events(err, &log, None).await },
        ));
    }
    let capped = Arc::new(AtomicBool::new(false));
    let (tail_fd, events_file) = events_fd.unzip();
    let tail = tail_fd.zip(source.reader()).map(|(fd, reader)| {
        let (done_tx, done_rx) = tokio::sync::watch::channel(false);
        let (tx, cap) = (agent_tx.clone(), (EVENTS_CAP, capped.clone()));
        let task = tokio::spawn(async move { tail_jsonl(fd, cap, reader, tx, done_rx).await });
        (task, done_tx)
    });
    Ok(Running {
        agent,
        source,
        log,
        layers,
        timeline,
        monitor: Monitor::new(spec.limits),
        notes: AgentNotes::default(),
        stopped_by_total: false,
        events,
        updates,
        watcher: Some(watcher),
        pumps,
        tail,
        events_file: events_file.map(|file| (file, capped)),
    })
}

/// Creates the `$HYOKA_EVENTS` file empty: a descriptor for following it and one for
/// cutting it back.
fn create_events(path: &std::path::Path) -> std::io::Result<(std::fs::File, std::fs::File)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    Ok((file.try_clone()?, file))
}

/// Why the agent could not be spawned, and whether that is the machine's fault: its own
/// command missing or not executable is the agent's result.
fn spawn_error(err: &ProcTrackError) -> (String, bool) {
    match err {
        ProcTrackError::Spawn { program, source } => (
            format!("cannot start {:?}: {source}", program.display().to_string()),
            !matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            ),
        ),
        other => (format!("cannot start the agent: {other}"), true),
    }
}

impl Running {
    /// Watches the agent until it exits or something stops it, stops its tree, and collects
    /// what it did.
    async fn watch(
        mut self,
        spec: &EvalSpec,
        (workspace, scratch): (&dyn EvalWorkspace, &Scratch<'_>),
        pcx: PhaseContext<'_>,
        live: &LiveStatus,
        mut stop: Stop,
        mut service_exits: ServiceExits,
    ) -> AgentOutcome {
        let clock = pcx.clock;
        // A timeout too long for the clock never ends (durations are range-checked where
        // they are parsed; an embedder's are not).
        let deadline = (!spec.timeout.is_zero())
            .then(|| clock.now().checked_add(spec.timeout))
            .flatten();
        let mut service_error = None;
        // The first refresh is one period after the start: the spawn just put the agent in
        // the ledger, and an agent that ends sooner needs no scan but teardown's.
        let mut refresh = tokio::time::interval(REFRESH_EVERY);
        refresh.reset();
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (timeline, monitor, notes) = (&mut self.timeline, &mut self.monitor, &mut self.notes);
        let end = loop {
            tokio::select! {
                exit = self.agent.wait() => break End::Exited(exit),
                reason = stop.requested() => {
                    timeline.signal(clock.now(), format!("{}: stopping the agent", reason.name()));
                    break End::Stopped(Termination::Interrupted);
                }
                () = sleep_until(deadline) => {
                    timeline.signal(clock.now(), format!("timeout after {}", humantime::format_duration(spec.timeout)));
                    break End::Stopped(Termination::Timeout);
                }
                Some(event) = self.events.recv() => {
                    timeline.agent(clock.now(), &event);
                    notes.note(&event);
                    if let Some(termination) = monitor.event(&event) {
                        self.stopped_by_total = is_total(&event);
                        break End::Stopped(termination);
                    }
                }
                Some(update) = self.updates.recv() => {
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
                    // Keeps the ledger current, so a crash of hyoka leaves `clean` everything
                    // it needs, and `hyoka ps` the counts.
                    self.agent.refresh();
                    live.counts(monitor.counts());
                    if cap_events(self.events_file.as_ref()) {
                        let why = format!("{} passed {EVENTS_CAP} bytes: the rest is not read, and is cut", "$HYOKA_EVENTS");
                        timeline.signal(clock.now(), why);
                    }
                    if self.agent.resource_usage().and_then(|u| u.oom_kills).unwrap_or(0) > 0
                        && let Some(termination) = monitor.out_of_memory()
                    {
                        let why = "the memory limit was hit: the kernel's OOM killer ended a process";
                        timeline.signal(clock.now(), why.to_owned());
                        break End::Stopped(termination);
                    }
                    if spec.limits.max_disk > 0 {
                        let on_disk = monitor.counts().output_bytes + scratch_usage(scratch).1;
                        if let Some(termination) = monitor.disk(on_disk) {
                            break End::Stopped(termination);
                        }
                    }
                }
            }
        };
        let end = outside_signal(end, &mut stop, timeline, clock).await;
        self.finish(spec, (workspace, scratch), pcx, (end, stop), service_error)
            .await
    }

    /// Stops the agent's whole tree (on a normal exit: whatever it left behind), so no pipe
    /// stays open and nothing outlives the eval; a second stop request cuts the grace short.
    /// Then drains its output and queued events, takes the final scan of the workspace, and
    /// decides how it ended.
    async fn finish(
        mut self,
        spec: &EvalSpec,
        (workspace, scratch): (&dyn EvalWorkspace, &Scratch<'_>),
        pcx: PhaseContext<'_>,
        (end, stop): (End, Stop),
        service_error: Option<String>,
    ) -> AgentOutcome {
        let clock = pcx.clock;
        let stop_counts = self.monitor.counts();
        // Read before teardown removes the cgroup leaf that counts the kernel's OOM kills.
        let oom_killed = self.agent.oom_killed();
        let usage = self.agent.resource_usage();
        let memory_hit = usage.and_then(|u| u.oom_kills).unwrap_or(0) > 0;
        if memory_hit && let End::Exited(_) = end {
            let _ = self.monitor.out_of_memory();
        }
        if let End::Stopped(termination) = end {
            if !matches!(
                termination,
                Termination::Timeout | Termination::Interrupted | Termination::ServiceFailed
            ) {
                self.timeline.limit(clock.now(), termination, stop_counts);
            }
            tracing::info!(?termination, "stopping the agent");
        }
        let teardown = self.teardown(spec.grace, stop).await;
        let exit = match end {
            End::Exited(exit) => exit,
            End::Stopped(_) => self.agent.exit(),
        };
        let lines = self.drain(pcx).await;
        cap_events(self.events_file.as_ref());
        let events_capped =
            (self.events_file.as_ref()).is_some_and(|(_, capped)| capped.load(Ordering::Relaxed));
        // The final scan is authoritative for files and bytes; the changes it names are
        // recorded with their diffs (nothing is read when it names none).
        match workspace.changes(MAX_CHANGES_LISTED) {
            Ok((usage, changes)) => {
                let _ = self.monitor.usage(usage.files, usage.bytes);
                if !changes.is_empty() {
                    let record =
                        record_changes(workspace.path(), spec.starter.as_deref(), &usage, &changes);
                    if let Err(err) =
                        write_json_before_report(&pcx.eval_dir.join(CHANGES_FILE), &record)
                    {
                        tracing::warn!(error = %err, "cannot record the workspace's changes");
                    }
                }
            }
            Err(err) => tracing::warn!(error = %err, "cannot measure workspace usage"),
        }
        let [tmp, home] = scratch.map(|d| d.map(usage_of).unwrap_or_default());
        if spec.limits.max_disk > 0 {
            let _ = (self.monitor).disk(self.monitor.counts().output_bytes + tmp.1 + home.1);
        }
        let (termination, counts) = self.ended(end, stop_counts, clock.now());
        let counts = Counts {
            tmp_files: tmp.0,
            tmp_bytes: tmp.1,
            home_files: home.0,
            home_bytes: home.1,
            ..counts
        };
        let (exit_code, signal) = exit.map_or((None, None), |e| (e.code(), e.signal()));
        self.timeline.exit(
            clock.now(),
            exit_line(exit_code, signal, teardown.processes_killed),
        );
        // A process of the agent killed by the kernel's OOM killer, when the agent then
        // failed, is the machine's fault.
        let oom = oom_killed
            && !memory_hit
            && termination == Termination::Exited
            && exit_code != Some(0)
            && service_error.is_none();
        // An agent that failed after the model API refused it (429, 5xx, overloaded) failed
        // for the API, not for itself.
        let api = (termination == Termination::Exited && exit_code != Some(0))
            .then(|| self.notes.api_failure())
            .flatten();
        let infra = service_error.is_some() || oom || api.is_some();
        let resources = resources_record(spec, usage, self.monitor.disk_peak());
        let error = service_error
            .or_else(|| {
                oom.then(|| "the kernel's OOM killer ended a process of the agent".to_owned())
            })
            .or(api)
            .or_else(|| limit_hit(termination, &resources));
        // A spending limit crossed by the figures the agent reports only at the end fired
        // after the work was done.
        let limit_late = matches!(termination, Termination::MaxTokens | Termination::MaxCost)
            && self.stopped_by_total;
        AgentOutcome {
            termination,
            exit_code,
            signal,
            error,
            infra,
            usage: self.monitor.spending(),
            counts,
            timeline: self.timeline,
            lines,
            events: (self.source != EventSource::None).then(|| EventsRecord {
                capped_at: events_capped.then_some(EVENTS_CAP),
                ..EventsRecord::new(spec.events, self.source, lines).with_notes(
                    &self.notes,
                    self.monitor.spending().is_some(),
                    limit_late,
                )
            }),
            teardown: Some(teardown),
            layers: self.layers,
            resources,
        }
    }

    /// Tears the agent's tree down with `grace`; a forced stop request escalates at once.
    async fn teardown(&mut self, grace: Duration, stop: Stop) -> TeardownReport {
        let escalation = Escalation::new();
        let escalate = {
            let (escalation, mut stop) = (escalation.clone(), stop);
            tokio::spawn(async move {
                stop.forced().await;
                escalation.escalate();
            })
        };
        let teardown = self
            .agent
            .teardown(TeardownOptions {
                grace,
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
        teardown
    }

    /// Drains the output pumps (bounded: a process outside the tree may hold the agent's
    /// pipes open forever) and the events file, closes the log, and puts the events and file
    /// changes still queued on the timeline: they happened before the agent stopped, so they
    /// count too unless a limit already froze the counts. Returns what the reader made of the
    /// lines.
    async fn drain(&mut self, pcx: PhaseContext<'_>) -> LineCounts {
        let clock = pcx.clock;
        let mut lines = LineCounts::default();
        let (pumped, held) = drain(std::mem::take(&mut self.pumps)).await;
        if held {
            let why = "output held open by a process outside the agent's tree: stopped reading it";
            tracing::warn!("{why}");
            self.timeline.signal(clock.now(), why.to_owned());
        }
        for result in pumped {
            match result {
                Ok(counts) => lines.add(counts),
                Err(err) => tracing::warn!(error = %err, "reading agent output failed"),
            }
        }
        if let Some((task, done)) = self.tail.take() {
            let _ = done.send(true);
            if let Ok(counts) = task.await {
                lines.add(counts);
            }
        }
        let _ = self.log.finish().await;
        self.watcher = None;
        while let Ok(event) = self.events.try_recv() {
            self.timeline.agent(clock.now(), &event);
            self.notes.note(&event);
            if self.monitor.event(&event).is_some() {
                self.stopped_by_total = is_total(&event);
            }
        }
        while let Ok(update) = self.updates.try_recv() {
            if let Some((change, path)) = update.change {
                self.timeline.file(clock.now(), change, path);
            }
        }
        lines
    }

    /// How the agent ended and its counts, once the final scan of the workspace is in.
    fn ended(&mut self, end: End, stop_counts: Counts, now: Instant) -> (Termination, Counts) {
        match (end, self.monitor.stopped()) {
            (
                End::Stopped(
                    t @ (Termination::Timeout
                    | Termination::Interrupted
                    | Termination::ServiceFailed),
                ),
                _,
            ) => (t, stop_counts),
            (End::Stopped(termination), _) => (
                termination,
                self.monitor.stopped().map_or(stop_counts, |(_, c)| c),
            ),
            // The agent exited, but a limit was crossed by output that arrived just before:
            // the limit was exceeded, so the eval says so.
            (End::Exited(_), Some((termination, counts))) => {
                self.timeline.limit(now, termination, counts);
                (termination, counts)
            }
            (End::Exited(_), None) => (Termination::Exited, self.monitor.counts()),
        }
    }
}

/// How long an agent killed by a stop signal from outside waits for the same signal to reach
/// hyoka before its end is taken as its own.
const SAME_SIGNAL_WINDOW: Duration = Duration::from_millis(250);

/// An agent killed by SIGTERM, SIGINT or SIGHUP that hyoka did not send (hyoka sends its
/// signals only after the watch loop ended) was most likely hit by the signal that also stops
/// the run: Slurm's `scancel` and a systemd stop signal every process of the job at once, in
/// no set order. Waits [`SAME_SIGNAL_WINDOW`] for that stop; when it comes, the trial was
/// interrupted (and a `--resume` runs it again), not failed by its agent.
async fn outside_signal(
    end: End,
    stop: &mut Stop,
    timeline: &mut TimelineBuilder,
    clock: &dyn Clock,
) -> End {
    use tokio::signal::unix::SignalKind;
    let End::Exited(Some(exit)) = end else {
        return end;
    };
    let stop_signals = [
        SignalKind::terminate(),
        SignalKind::interrupt(),
        SignalKind::hangup(),
    ]
    .map(|kind| kind.as_raw_value());
    if !exit.signal().is_some_and(|s| stop_signals.contains(&s)) {
        return end;
    }
    match tokio::time::timeout(SAME_SIGNAL_WINDOW, stop.requested()).await {
        Ok(reason) => {
            let why = format!(
                "{}: the agent had already been stopped by it",
                reason.name()
            );
            timeline.signal(clock.now(), why);
            End::Stopped(Termination::Interrupted)
        }
        Err(_) => end,
    }
}

/// Whether `event` is an agent's authoritative total of spending (reported at the end of its
/// session by Claude Code, Codex and Gemini CLI).
fn is_total(event: &AgentEvent) -> bool {
    matches!(event, AgentEvent::Usage(hyoka_events::UsageEvent::Total(_)))
}

/// The timeline's line for the agent's exit.
fn exit_line(exit_code: Option<i32>, signal: Option<i32>, killed: usize) -> String {
    let stopped = if killed > 0 {
        format!("; {killed} process(es) stopped by hyoka")
    } else {
        String::new()
    };
    match (exit_code, signal) {
        (Some(code), _) => format!("exit code {code}{stopped}"),
        (None, Some(sig)) => format!("killed by signal {sig}{stopped}"),
        _ => format!("unknown exit{stopped}"),
    }
}

/// Cuts the events file back to [`EVENTS_CAP`] when it holds more; `true` the first time it
/// is found over the cap. Through the descriptor hyoka created, so only that file is cut.
fn cap_events(file: Option<&(std::fs::File, Arc<AtomicBool>)>) -> bool {
    let Some((file, capped)) = file else {
        return false;
    };
    if file.metadata().map_or(true, |m| m.len() <= EVENTS_CAP) {
        return false;
    }
    if let Err(err) = file.set_len(EVENTS_CAP) {
        tracing::warn!(error = %err, "cannot cut the events file back to its cap");
    }
    !capped.swap(true, Ordering::Relaxed)
}

/// The error text of a trial ended by its memory or disk limit, with the figures.
fn limit_hit(termination: Termination, resources: &ResourcesRecord) -> Option<String> {
    match termination {
        Termination::MaxMemory => resources.memory.map(|m| {
            format!(
                "hit the memory limit of {} bytes (peak {} bytes; {} process(es) ended by the OOM killer)",
                m.limit.unwrap_or(0),
                m.peak
                    .map_or_else(|| "unknown".to_owned(), |p| p.to_string()),
                m.hits.unwrap_or(0)
            )
        }),
        Termination::MaxDisk => resources.disk.map(|d| {
            format!(
                "the workspace, /tmp and the home held {} bytes, over the disk limit of {} bytes",
                d.peak.unwrap_or(0),
                d.limit.unwrap_or(0)
            )
        }),
        _ => None,
    }
}

/// Files and bytes in the private `/tmp` and the isolated home together.
fn scratch_usage(scratch: &Scratch<'_>) -> (u64, u64) {
    scratch.iter().flatten().fold((0, 0), |(f, b), dir| {
        let (files, bytes) = usage_of(*dir);
        (f + files, b + bytes)
    })
}

fn usage_of(dir: &dyn EvalWorkspace) -> (u64, u64) {
    dir.usage().map_or((0, 0), |u| (u.files, u.bytes))
}

/// `report.json` `resources` from the limits and what the leaves said before teardown.
fn resources_record(
    spec: &EvalSpec,
    usage: Option<hyoka_proctrack::ResourceUsage>,
    disk_peak: u64,
) -> ResourcesRecord {
    let limits = &spec.limits;
    let usage = usage.unwrap_or_default();
    let figure = |limit: u64, peak: Option<u64>, hits: Option<u64>| {
        (limit > 0).then_some(ResourceFigure {
            limit: Some(limit),
            peak,
            hits,
        })
    };
    ResourcesRecord {
        memory: figure(limits.max_memory, usage.memory_peak, usage.oom_kills),
        pids: figure(limits.max_pids, usage.pids_peak, usage.pids_refused),
        cpu: figure(u64::from(limits.cpu_millis), usage.cpu_usec, None),
        disk: figure(limits.max_disk, Some(disk_peak), None),
        unavailable: Vec::new(),
    }
}
