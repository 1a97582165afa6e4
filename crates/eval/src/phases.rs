//! The phases of one eval, each in its own file, in the order they run: `setup` (the
//! workspace, an isolated home, the sandbox), `services` before the agent, the `agent`
//! itself (its output fed to the log and its events reader by `output`), the `scorers`
//! (build and review) after it, and `cleanup`. This file holds what they share: the run's
//! [`RunContext`], the environment every phase process gets ([`PhaseEnv`]), the context of
//! one eval ([`PhaseContext`]) and the timing of a phase's record ([`PhaseClock`]).
//!
//! Every phase process runs under the run's containment, exactly like the agent: it is
//! spawned through the run's [`Processes`] (the tracker: its own cgroup leaf, the shim, a
//! session, the marker), listed in the ledger under `<eval>.s.<service>`, `<eval>.build` or
//! `<eval>.review`, and torn down with the usual grace; `hyoka clean` finds them after a
//! crash like any agent process.

pub(crate) mod agent;
pub(crate) mod cleanup;
mod output;
pub(crate) mod scorers;
pub(crate) mod services;
pub(crate) mod setup;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hyoka_proctrack::{
    AgentCommand, AgentExit, Clock, EnvVars, Escalation, Sandbox, StdioMode, TeardownOptions,
    TeardownReport,
};
use hyoka_workspace::{KeepPolicy, RunId};

use crate::capped_log::CappedLog;
use crate::host::{Harness, Process, Processes};
use crate::records::{millis, rfc3339};
use crate::report::{PhaseRecord, PhaseStatus};

/// How long SIGKILL rounds may take after the grace period before teardown gives up.
const KILL_TIMEOUT: Duration = Duration::from_secs(5);

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

/// The environment every phase process gets, beyond the marker the tracker adds.
#[derive(Debug, Clone, Default)]
pub(crate) struct PhaseEnv {
    /// Start from an empty environment (`--isolate-home`).
    pub(crate) clear: bool,
    /// The variables to set.
    pub(crate) vars: Vec<(OsString, OsString)>,
    /// The kernel sandbox of every phase process (the agent's may differ).
    pub(crate) sandbox: Sandbox,
    /// The cgroup limits of every process tree of the eval.
    pub(crate) resources: hyoka_proctrack::ResourceLimits,
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
        vars.push((EnvVars::HYOKA_WORKSPACE.into(), workspace.into()));
        Self {
            clear: home.is_some(),
            vars,
            sandbox: Sandbox::default(),
            resources: hyoka_proctrack::ResourceLimits::default(),
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
        command.resources = self.resources;
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

/// How a process ended, for a reason in a record.
pub(crate) fn exit_text(exit: Option<AgentExit>) -> String {
    match exit {
        Some(AgentExit::Code(code)) => format!("exit code {code}"),
        Some(AgentExit::Signal(sig)) => format!("signal {sig}"),
        _ => "an unknown status".to_owned(),
    }
}

/// Tears a phase process's tree down, then waits for its output to drain into `log`.
pub(crate) async fn stop_and_drain(
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

/// Sleeps until `deadline` (on the harness's clock, which follows tokio's), or forever
/// without one.
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)).await,
        None => std::future::pending().await,
    }
}
