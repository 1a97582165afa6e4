//! Running one eval: workspace, agent, output, timeout, teardown, records.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use hyoka_workspace::{
    Closed, EvalId, KeepPolicy, Outcome, RunId, TempWorkspace, Workspace, WorkspaceError,
    WorkspaceOptions,
};
use tokio::process::Command;

use crate::output::{CappedLog, OUTPUT_CAP};
use crate::records::{millis, rfc3339, write_json};
use crate::report::{Cleanup, Counts, Limits, Report, Status, Termination};

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

/// One eval to run.
#[derive(Debug, Clone)]
pub(crate) struct EvalSpec {
    /// The eval id.
    pub(crate) eval_id: EvalId,
    /// The agent's argv.
    pub(crate) command: Vec<OsString>,
    /// The starter directory.
    pub(crate) starter: Option<PathBuf>,
    /// Timeout (zero disables).
    pub(crate) timeout: Duration,
    /// SIGTERM→SIGKILL grace.
    pub(crate) grace: Duration,
    /// Extra environment for the agent.
    pub(crate) env: Vec<(OsString, OsString)>,
}

/// Runs one eval to the end and writes its records. Never panics on agent behaviour; every
/// outcome, including a failed spawn, becomes a report.
pub(crate) async fn run_eval(ctx: &RunContext, spec: &EvalSpec) -> Result<Report, WorkspaceError> {
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
    let outcome = run_agent(ctx, spec, &workspace, &eval_dir).await;
    let counts = match workspace.usage() {
        Ok(usage) => Counts {
            files: usage.files,
            output_bytes: usage.bytes,
            ..Counts::default()
        },
        Err(err) => {
            tracing::warn!(error = %err, "cannot measure workspace usage");
            Counts::default()
        }
    };
    let status = match outcome.termination {
        Termination::Exited if outcome.exit_code == Some(0) => Status::Passed,
        Termination::SpawnFailed => Status::Error,
        _ => Status::Failed,
    };
    let workspace_path = workspace.path().display().to_string();
    let mut cleanup = Cleanup::default();
    let closed = workspace.close(if status == Status::Passed {
        Outcome::Success
    } else {
        Outcome::Failure
    });
    match closed {
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
    let ended_at = SystemTime::now();
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
        ended_at: rfc3339(ended_at),
        duration_ms: millis(started.elapsed()),
        status,
        termination: outcome.termination,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        limits: Limits {
            max_turns: 0,
            max_files: 0,
            max_output_size: 0,
            max_session_actions: 0,
            timeout_ms: millis(spec.timeout),
            grace_ms: millis(spec.grace),
        },
        counts,
        cleanup,
        error: outcome.error,
    };
    let path = eval_dir.join("report.json");
    write_json(&path, &report).map_err(|e| WorkspaceError::Io {
        op: "write",
        path,
        source: e,
    })?;
    Ok(report)
}

struct AgentOutcome {
    termination: Termination,
    exit_code: Option<i32>,
    signal: Option<i32>,
    error: Option<String>,
}

async fn run_agent(
    ctx: &RunContext,
    spec: &EvalSpec,
    workspace: &TempWorkspace,
    eval_dir: &std::path::Path,
) -> AgentOutcome {
    let spawn_failed = |error: String| AgentOutcome {
        termination: Termination::SpawnFailed,
        exit_code: None,
        signal: None,
        error: Some(error),
    };
    let log = match CappedLog::create(&eval_dir.join("output.log"), OUTPUT_CAP).await {
        Ok(log) => log,
        Err(err) => return spawn_failed(format!("cannot create output.log: {err}")),
    };
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
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            let _ = log.finish().await;
            return spawn_failed(format!(
                "cannot start {:?}: {err}",
                program.to_string_lossy()
            ));
        }
    };
    let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
    let stdout = child.stdout.take().map(|out| {
        let log = log.clone();
        tokio::spawn(async move { log.pump(out).await })
    });
    let stderr = child.stderr.take().map(|err| {
        let log = log.clone();
        tokio::spawn(async move { log.pump(err).await })
    });
    let waited = if spec.timeout.is_zero() {
        Some(child.wait().await)
    } else {
        tokio::time::timeout(spec.timeout, child.wait()).await.ok()
    };
    let (termination, status) = if let Some(status) = waited {
        (Termination::Exited, status.ok())
    } else {
        tracing::info!(timeout = ?spec.timeout, "timeout: stopping the agent");
        stop_group(pgid, &mut child, spec.grace).await;
        (Termination::Timeout, child.wait().await.ok())
    };
    // Whatever the agent left running in its group goes now, so no pipe stays open.
    stop_group(pgid, &mut child, spec.grace).await;
    for pump in [stdout, stderr].into_iter().flatten() {
        if let Ok(Err(err)) = pump.await {
            tracing::warn!(error = %err, "reading agent output failed");
        }
    }
    let _ = log.finish().await;
    let (exit_code, signal) = status.map_or((None, None), |s| {
        (s.code(), std::os::unix::process::ExitStatusExt::signal(&s))
    });
    AgentOutcome {
        termination,
        exit_code,
        signal,
        error: None,
    }
}

/// SIGTERM to the agent's process group, a grace period, then SIGKILL.
async fn stop_group(pgid: Option<i32>, child: &mut tokio::process::Child, grace: Duration) {
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
    while tokio::time::Instant::now() < deadline {
        let _ = child.try_wait();
        if !signal_group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal_group(rustix::process::Signal::KILL);
}

fn signal_group_alive(pgid: rustix::process::Pid) -> bool {
    rustix::process::test_kill_process_group(pgid).is_ok()
}
