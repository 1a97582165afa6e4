//! Running one eval: workspace, agent, events, limits, timeline, teardown, records.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use hyoka_workspace::{
    Closed, EvalId, KeepPolicy, Outcome, RunId, TempWorkspace, Workspace, WorkspaceError,
    WorkspaceOptions,
};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::events::{AgentEvent, EventSource, LineSplitter, StreamJsonParser, parse_jsonl_event};
use crate::interrupt::{Interrupt, Level};
use crate::limits::{LimitSet, Monitor};
use crate::output::{CappedLog, OUTPUT_CAP};
use crate::records::{millis, rfc3339, write_json};
use crate::report::{Cleanup, Counts, Limits, Report, Status, Termination};
use crate::timeline::TimelineBuilder;
use crate::watch::{WatchUpdate, watch};

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
    /// The owner's identity, for workspace markers.
    pub(crate) owner: String,
    /// Whether the workspace name carries the eval id (suites).
    pub(crate) name_with_eval: bool,
}

/// One eval to run, with its effective settings.
#[derive(Debug, Clone)]
pub(crate) struct EvalSpec {
    pub(crate) eval_id: EvalId,
    pub(crate) command: Vec<OsString>,
    pub(crate) starter: Option<PathBuf>,
    /// Zero disables the timeout.
    pub(crate) timeout: Duration,
    pub(crate) grace: Duration,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) limits: LimitSet,
    pub(crate) events: EventSource,
}

/// The report of an eval that never started because hyoka was interrupted first.
pub(crate) fn not_started(ctx: &RunContext, spec: &EvalSpec, sig: &str) -> Report {
    let now = rfc3339(SystemTime::now());
    Report {
        run_id: ctx.run_id.to_string(),
        eval_id: spec.eval_id.to_string(),
        command: spec
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        workspace: String::new(),
        started_at: now.clone(),
        ended_at: now,
        duration_ms: 0,
        status: Status::Failed,
        termination: Termination::Interrupted,
        exit_code: None,
        signal: None,
        limits: limits_of(spec),
        counts: Counts::default(),
        cleanup: Cleanup {
            workspace_removed: true,
            ..Cleanup::default()
        },
        error: Some(format!("not started: {sig} arrived first")),
    }
}

fn limits_of(spec: &EvalSpec) -> Limits {
    Limits {
        max_turns: spec.limits.max_turns,
        max_files: spec.limits.max_files,
        max_output_size: spec.limits.max_output_size,
        max_session_actions: spec.limits.max_session_actions,
        timeout_ms: millis(spec.timeout),
        grace_ms: millis(spec.grace),
    }
}

/// Runs one eval to the end and writes its records. Every outcome of the agent, a failed
/// spawn included, becomes a report; only a failure to create the workspace or write the
/// records is an error.
pub(crate) async fn run_eval(
    ctx: &RunContext,
    spec: &EvalSpec,
    interrupt: Interrupt,
) -> Result<Report, WorkspaceError> {
    let eval_dir = ctx.run_dir.join(spec.eval_id.as_str());
    std::fs::create_dir_all(&eval_dir).map_err(|e| WorkspaceError::Io {
        op: "create",
        path: eval_dir.clone(),
        source: e,
    })?;
    let workspace = TempWorkspace::create(&WorkspaceOptions {
        root: ctx.workspace_root.clone(),
        run_id: ctx.run_id.clone(),
        eval_id: ctx.name_with_eval.then(|| spec.eval_id.clone()),
        keep: ctx.keep,
        starter: spec.starter.clone(),
        owner: ctx.owner.clone(),
    })?;
    let started_at = SystemTime::now();
    let started = Instant::now();
    let outcome = run_agent(ctx, spec, &workspace, &eval_dir, started, interrupt).await;
    let status = match outcome.termination {
        Termination::Exited if outcome.exit_code == Some(0) => Status::Passed,
        Termination::SpawnFailed => Status::Error,
        _ => Status::Failed,
    };
    let workspace_path = workspace.path().display().to_string();
    let cleanup = close_workspace(workspace, status);
    let duration = started.elapsed();
    let timeline = outcome.timeline.finish(
        ctx.run_id.as_str(),
        spec.eval_id.as_str(),
        outcome.counts,
        duration,
        outcome.unknown_lines,
        outcome.malformed_lines,
    );
    let report = Report {
        run_id: ctx.run_id.to_string(),
        eval_id: spec.eval_id.to_string(),
        command: spec
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        workspace: workspace_path,
        started_at: rfc3339(started_at),
        ended_at: rfc3339(SystemTime::now()),
        duration_ms: millis(duration),
        status,
        termination: outcome.termination,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        limits: limits_of(spec),
        counts: outcome.counts,
        cleanup,
        error: outcome.error,
    };
    for (name, result) in [
        (
            "action_timeline.json",
            write_json(&eval_dir.join("action_timeline.json"), &timeline),
        ),
        (
            "report.json",
            write_json(&eval_dir.join("report.json"), &report),
        ),
    ] {
        result.map_err(|e| WorkspaceError::Io {
            op: "write",
            path: eval_dir.join(name),
            source: e,
        })?;
    }
    Ok(report)
}

fn close_workspace(workspace: TempWorkspace, status: Status) -> Cleanup {
    let mut cleanup = Cleanup::default();
    let outcome = if status == Status::Passed {
        Outcome::Success
    } else {
        Outcome::Failure
    };
    match workspace.close(outcome) {
        Ok(Closed::Removed(_)) => cleanup.workspace_removed = true,
        Ok(Closed::Kept(path)) => cleanup.workspace_kept_at = Some(path.display().to_string()),
        Ok(_) => {}
        Err(WorkspaceError::RemoveIncomplete { path, report }) => {
            tracing::error!(workspace = %path.display(), "{}", report.summary());
            cleanup.workspace_leftovers = report
                .leftovers
                .iter()
                .map(|l| format!("{}: {}", l.path.display(), l.reason))
                .collect();
        }
        Err(err) => tracing::error!(error = %err, "cannot remove the workspace"),
    }
    cleanup
}

struct AgentOutcome {
    termination: Termination,
    exit_code: Option<i32>,
    signal: Option<i32>,
    error: Option<String>,
    counts: Counts,
    timeline: TimelineBuilder,
    unknown_lines: u64,
    malformed_lines: u64,
}

/// Why the watch loop ended.
enum End {
    Exited(Option<std::process::ExitStatus>),
    Stopped(Termination),
}

#[expect(
    clippy::too_many_lines,
    reason = "one linear story: spawn, watch, stop, collect"
)]
async fn run_agent(
    ctx: &RunContext,
    spec: &EvalSpec,
    workspace: &TempWorkspace,
    eval_dir: &Path,
    started: Instant,
    mut interrupt: Interrupt,
) -> AgentOutcome {
    let mut timeline = TimelineBuilder::new(started);
    let mut monitor = Monitor::new(spec.limits);
    let spawn_failed = |error: String, timeline: TimelineBuilder| AgentOutcome {
        termination: Termination::SpawnFailed,
        exit_code: None,
        signal: None,
        error: Some(error),
        counts: Counts::default(),
        timeline,
        unknown_lines: 0,
        malformed_lines: 0,
    };
    let log = match CappedLog::create(&eval_dir.join("output.log"), OUTPUT_CAP).await {
        Ok(log) => log,
        Err(err) => return spawn_failed(format!("cannot create output.log: {err}"), timeline),
    };
    let events_file = eval_dir.join("events.jsonl");
    if spec.events == EventSource::Jsonl
        && let Err(err) = std::fs::File::create(&events_file)
    {
        return spawn_failed(
            format!("cannot create {}: {err}", events_file.display()),
            timeline,
        );
    }
    let (program, args) = spec.command.split_first().expect("command is never empty");
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(workspace.path())
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env("HYOKA_RUN_ID", ctx.run_id.as_str())
        .env("HYOKA_EVAL_ID", spec.eval_id.as_str())
        .env("HYOKA_WORKSPACE", workspace.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if spec.events == EventSource::Jsonl {
        command.env("HYOKA_EVENTS", &events_file);
    }
    let (watch_tx, mut watch_rx) = unbounded_channel::<WatchUpdate>();
    let watcher = watch(workspace.path(), workspace.snapshot().clone(), watch_tx);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            let _ = log.finish().await;
            return spawn_failed(
                format!("cannot start {:?}: {err}", program.to_string_lossy()),
                timeline,
            );
        }
    };
    let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
    let (agent_tx, mut agent_rx) = unbounded_channel::<AgentEvent>();
    let parse_stdout = spec.events == EventSource::StreamJson;
    let stdout = child.stdout.take().map(|out| {
        let (log, tx) = (log.clone(), agent_tx.clone());
        tokio::spawn(async move { pump(out, &log, parse_stdout.then_some(tx)).await })
    });
    let stderr = child.stderr.take().map(|err| {
        let log = log.clone();
        tokio::spawn(async move { pump(err, &log, None).await })
    });
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let tail = (spec.events == EventSource::Jsonl).then(|| {
        let tx = agent_tx.clone();
        let path = events_file.clone();
        tokio::spawn(async move { tail_jsonl(&path, tx, done_rx).await })
    });
    drop(agent_tx);

    let deadline = (!spec.timeout.is_zero()).then(|| tokio::time::Instant::now() + spec.timeout);
    let end = loop {
        tokio::select! {
            status = child.wait() => break End::Exited(status.ok()),
            sig = interrupt.requested() => {
                timeline.signal(Instant::now(), format!("{}: stopping the agent", sig.name()));
                break End::Stopped(Termination::Interrupted);
            }
            () = sleep_until(deadline) => {
                timeline.signal(Instant::now(), format!("timeout after {}", humantime::format_duration(spec.timeout)));
                break End::Stopped(Termination::Timeout);
            }
            Some(event) = agent_rx.recv() => {
                timeline.agent(Instant::now(), &event);
                let crossed = match event {
                    AgentEvent::Turn { .. } => monitor.turn(),
                    AgentEvent::ToolCall { .. } => monitor.action(),
                };
                if let Some(termination) = crossed {
                    break End::Stopped(termination);
                }
            }
            Some(update) = watch_rx.recv() => {
                if let Some((change, path)) = update.change {
                    timeline.file(Instant::now(), change, path);
                }
                if let Some(termination) = monitor.usage(update.usage.files, update.usage.bytes) {
                    break End::Stopped(termination);
                }
            }
        }
    };
    let stop_counts = monitor.counts();
    if let End::Stopped(termination) = end {
        if !matches!(termination, Termination::Timeout | Termination::Interrupted) {
            timeline.limit(Instant::now(), termination, stop_counts);
        }
        tracing::info!(?termination, "stopping the agent");
    }
    // The agent's whole group goes now (on a normal exit: whatever it left behind), so no
    // pipe stays open and nothing outlives the eval.
    stop_group(pgid, &mut child, spec.grace, &mut interrupt).await;
    let status = match end {
        End::Exited(status) => status,
        End::Stopped(_) => child.wait().await.ok(),
    };
    let (mut unknown_lines, mut malformed_lines) = (0, 0);
    for pump in [stdout, stderr].into_iter().flatten() {
        match pump.await {
            Ok(Ok((unknown, malformed))) => {
                unknown_lines += unknown;
                malformed_lines += malformed;
            }
            Ok(Err(err)) => tracing::warn!(error = %err, "reading agent output failed"),
            Err(err) => tracing::warn!(error = %err, "output pump panicked"),
        }
    }
    let _ = done_tx.send(true);
    if let Some(tail) = tail
        && let Ok((unknown, malformed)) = tail.await
    {
        unknown_lines += unknown;
        malformed_lines += malformed;
    }
    let _ = log.finish().await;
    drop(watcher);
    // Events still queued happened before the agent stopped: they belong to the timeline,
    // and to the counts unless a limit already froze them.
    while let Ok(event) = agent_rx.try_recv() {
        timeline.agent(Instant::now(), &event);
        match event {
            AgentEvent::Turn { .. } => drop(monitor.turn()),
            AgentEvent::ToolCall { .. } => drop(monitor.action()),
        }
    }
    while let Ok(update) = watch_rx.try_recv() {
        if let Some((change, path)) = update.change {
            timeline.file(Instant::now(), change, path);
        }
    }
    // The final scan is authoritative for files and bytes.
    match workspace.usage() {
        Ok(usage) => drop(monitor.usage(usage.files, usage.bytes)),
        Err(err) => tracing::warn!(error = %err, "cannot measure workspace usage"),
    }
    let (termination, counts) = match (end, monitor.stopped()) {
        (End::Stopped(t @ (Termination::Timeout | Termination::Interrupted)), _) => {
            (t, stop_counts)
        }
        (End::Stopped(termination), _) => (
            termination,
            monitor.stopped().map_or(stop_counts, |(_, c)| c),
        ),
        // The agent exited, but a limit was crossed by output that arrived just before: the
        // limit was exceeded, so the eval says so.
        (End::Exited(_), Some((termination, counts))) => {
            timeline.limit(Instant::now(), termination, counts);
            (termination, counts)
        }
        (End::Exited(_), None) => (Termination::Exited, monitor.counts()),
    };
    let (exit_code, signal) = status.map_or((None, None), |s| {
        (s.code(), std::os::unix::process::ExitStatusExt::signal(&s))
    });
    timeline.exit(
        Instant::now(),
        match (exit_code, signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "unknown exit".to_owned(),
        },
    );
    AgentOutcome {
        termination,
        exit_code,
        signal,
        error: None,
        counts,
        timeline,
        unknown_lines,
        malformed_lines,
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Copies a pipe into the log; with `events`, also parses it as stream-json. Returns the
/// unknown and malformed line counts.
async fn pump(
    mut reader: impl AsyncRead + Unpin,
    log: &CappedLog,
    events: Option<UnboundedSender<AgentEvent>>,
) -> std::io::Result<(u64, u64)> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut splitter = LineSplitter::default();
    let mut parser = StreamJsonParser::default();
    let mut parsed = Vec::new();
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        log.write(&buf[..n]).await?;
        if let Some(tx) = &events {
            splitter.feed(&buf[..n], |line, oversized| {
                feed(&mut parser, line, oversized, &mut parsed);
            });
            for event in parsed.drain(..) {
                let _ = tx.send(event);
            }
        }
    }
    if let Some(tx) = &events {
        splitter.finish(|line, oversized| feed(&mut parser, line, oversized, &mut parsed));
        for event in parsed.drain(..) {
            let _ = tx.send(event);
        }
    }
    Ok((parser.unknown, parser.malformed))
}

fn feed(parser: &mut StreamJsonParser, line: &[u8], oversized: bool, out: &mut Vec<AgentEvent>) {
    if oversized {
        parser.oversized();
    } else {
        parser.feed_line(line, out);
    }
}

/// Follows `$HYOKA_EVENTS` until `done`, then reads what is left. Returns the unknown and
/// malformed line counts.
async fn tail_jsonl(
    path: &Path,
    tx: UnboundedSender<AgentEvent>,
    mut done: tokio::sync::watch::Receiver<bool>,
) -> (u64, u64) {
    let Ok(mut file) = tokio::fs::File::open(path).await else {
        return (0, 0);
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut splitter = LineSplitter::default();
    let mut bad = 0u64;
    let handle = |line: &[u8], oversized: bool, bad: &mut u64| {
        if line.iter().all(u8::is_ascii_whitespace) && !oversized {
            return;
        }
        match (oversized, parse_jsonl_event(line)) {
            (false, Some(event)) => {
                let _ = tx.send(event);
            }
            _ => *bad += 1,
        }
    };
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
            Ok(n) => splitter.feed(&buf[..n], |line, oversized| {
                handle(line, oversized, &mut bad);
            }),
        }
    }
    splitter.finish(|line, oversized| handle(line, oversized, &mut bad));
    (0, bad)
}

/// SIGTERM to the agent's process group, a grace period (cut short by a forced
/// interruption), then SIGKILL.
async fn stop_group(
    pgid: Option<i32>,
    child: &mut tokio::process::Child,
    grace: Duration,
    interrupt: &mut Interrupt,
) {
    let Some(pgid) = pgid
        .filter(|&p| p > 1)
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    if rustix::process::getpgrp() == pgid {
        return;
    }
    let signal_group = |sig| rustix::process::kill_process_group(pgid, sig).is_ok();
    if !signal_group(rustix::process::Signal::TERM) {
        return;
    }
    let deadline = tokio::time::Instant::now() + grace;
    while tokio::time::Instant::now() < deadline && !matches!(interrupt.level(), Level::Force(_)) {
        let _ = child.try_wait();
        if rustix::process::test_kill_process_group(pgid).is_err() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
            () = interrupt.forced() => {}
        }
    }
    signal_group(rustix::process::Signal::KILL);
}
