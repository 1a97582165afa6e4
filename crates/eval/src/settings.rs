//! What an eval runs with: settings given at several levels, resolved into one [`EvalSpec`].
//!
//! A setting comes from the strongest level that gives it: an explicit command-line flag,
//! then the eval, then the suite's `defaults`, then the built-in value. [`EvalSpec::resolve`]
//! applies that rule field by field (limits each on their own, environment variables merged
//! with the stronger level winning per variable).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use hyoka_workspace::{EvalId, Injection};

use crate::error::EvalError;
use crate::limits::{LimitSet, PartialLimits};
use crate::model::ModelStub;
use crate::sandbox::{SandboxSettings, SandboxSpec};
use hyoka_events::EventSource;

/// The built-in agent timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_mins(10);
/// The built-in SIGTERM→SIGKILL grace.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// The built-in build and review timeout.
pub const DEFAULT_PHASE_TIMEOUT: Duration = Duration::from_mins(10);
/// The built-in time a service has to become ready.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings at one level (command line, eval or defaults); unset fields fall through.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// How long the agent may run (zero: no limit).
    pub timeout: Option<Duration>,
    /// SIGTERM→SIGKILL grace for every process of the eval.
    pub grace: Option<Duration>,
    /// Where turns and tool calls come from.
    pub events: Option<EventSource>,
    /// The counted limits.
    pub limits: PartialLimits,
    /// Environment variables for the agent and its phases.
    pub env: Vec<(OsString, OsString)>,
    /// The phases around the agent.
    pub phases: PhaseSettings,
    /// The kernel sandbox and the network.
    pub sandbox: SandboxSettings,
    /// How many trials of each eval run (`--epochs`, at least 1).
    pub epochs: Option<u32>,
    /// How many times a trial that ended in an infrastructure error is run again
    /// (`--retries`).
    pub retries: Option<u32>,
}

/// The phase settings of one level; `None` falls through to the next level.
#[derive(Debug, Clone, Default)]
pub struct PhaseSettings {
    /// Files or directories injected into the workspace after the starter.
    pub files: Option<Vec<Injection>>,
    /// Services started before the agent.
    pub services: Option<Vec<ServiceSpec>>,
    /// The build phase, after the agent.
    pub build: Option<PhaseCommand>,
    /// The review phase, after the build.
    pub review: Option<PhaseCommand>,
    /// Give the agent and its phases their own HOME and a cleared environment.
    pub isolate_home: Option<bool>,
    /// With an isolated home, the variables passed through besides the basics.
    pub pass_env: Option<Vec<String>>,
    /// Run against the scripted model server (the suite's `model:`).
    pub model: Option<ModelStub>,
}

/// A command run as a phase (build, review), with its own timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseCommand {
    /// The argv.
    pub command: Vec<OsString>,
    /// How long it may run.
    pub timeout: Duration,
}

impl PhaseCommand {
    /// `sh -c <script>` with `timeout` (the built-in one when `None`).
    pub fn shell(script: &str, timeout: Option<Duration>) -> Self {
        Self {
            command: vec!["sh".into(), "-c".into(), script.into()],
            timeout: timeout.unwrap_or(DEFAULT_PHASE_TIMEOUT),
        }
    }
}

/// A helper process started before the agent and stopped with the eval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSpec {
    /// Its name (1 to 16 of letters, digits, `.`, `_`, `-`); its processes are tracked as
    /// `<eval>.s.<name>` and its output goes to `services/<name>.log`.
    pub name: String,
    /// The argv.
    pub command: Vec<OsString>,
    /// When it counts as ready.
    pub ready: Readiness,
    /// How long it may take to become ready.
    pub timeout: Duration,
    /// Its own environment variables, on top of the eval's.
    pub env: Vec<(OsString, OsString)>,
}

/// When a service counts as ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// As soon as it started.
    Started,
    /// A file appears (relative to the workspace, or absolute).
    File(PathBuf),
    /// A TCP port accepts a connection (`host:port`).
    Tcp(String),
    /// A command exits 0 (run in the workspace, retried until the timeout).
    Command(Vec<OsString>),
}

/// One eval to run, with its effective settings.
#[derive(Debug, Clone)]
pub struct EvalSpec {
    /// The eval's id (`main` for a single command).
    pub eval_id: EvalId,
    /// The agent's argv.
    pub command: Vec<OsString>,
    /// A directory copied into the workspace before anything runs.
    pub starter: Option<PathBuf>,
    /// How long the agent may run; zero disables the timeout.
    pub timeout: Duration,
    /// SIGTERM→SIGKILL grace for every process of the eval.
    pub grace: Duration,
    /// Environment variables for the agent and its phases.
    pub env: Vec<(OsString, OsString)>,
    /// The counted limits.
    pub limits: LimitSet,
    /// Where turns and tool calls come from.
    pub events: EventSource,
    /// The phases around the agent.
    pub phases: EvalPhases,
    /// The kernel sandbox and the network of every process of the eval.
    pub sandbox: SandboxSpec,
    /// How many trials of the eval run (at least 1; the built-in value is 1).
    pub epochs: u32,
    /// How many times a trial that ended in an infrastructure error is run again, with
    /// backoff (the built-in value is 0).
    pub retries: u32,
    /// The agent of a suite's `agents:` map this eval runs with, when it names one.
    pub agent: Option<String>,
    /// What the eval's trials need when it is a Harbor task (see [`task_specs`]).
    ///
    /// [`task_specs`]: crate::tasks::task_specs
    pub task: Option<std::sync::Arc<crate::tasks::TaskTrial>>,
}

/// The most trials of one eval (`--epochs`).
pub const MAX_EPOCHS: u32 = 10_000;
/// The most retries of one trial (`--retries`).
pub const MAX_RETRIES: u32 = 100;

/// The phases around the agent, resolved for one eval.
#[derive(Debug, Clone, Default)]
pub struct EvalPhases {
    /// Files or directories injected into the workspace after the starter.
    pub files: Vec<Injection>,
    /// Services started before the agent.
    pub services: Vec<ServiceSpec>,
    /// The build phase.
    pub build: Option<PhaseCommand>,
    /// The review phase.
    pub review: Option<PhaseCommand>,
    /// An isolated HOME and a cleared environment.
    pub isolate_home: bool,
    /// With an isolated home, the variables passed through besides the basics.
    pub pass_env: Vec<String>,
    /// The scripted model server the eval runs against, instead of the real API.
    pub model: Option<ModelStub>,
}

/// A file or directory to inject into a workspace: `source` must be a regular file (at most
/// `hyoka-workspace`'s `MAX_INJECTED_FILE_BYTES`) or a directory, never a FIFO or a device,
/// and `target` (the source's file name by default) must name something inside the
/// workspace.
///
/// # Errors
/// [`EvalError::InvalidValue`] saying which rule the file or its target breaks.
pub fn injection(source: PathBuf, target: Option<PathBuf>) -> Result<Injection, EvalError> {
    let name = || source.display().to_string();
    if !source.exists() {
        return Err(EvalError::invalid("file", &name(), "does not exist"));
    }
    let target = match target {
        Some(target) => target,
        None => PathBuf::from(
            source
                .file_name()
                .ok_or_else(|| EvalError::invalid("file", &name(), "has no file name"))?,
        ),
    };
    if target.is_absolute()
        || target
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(EvalError::invalid(
            "file target",
            &target.display().to_string(),
            "must stay inside the workspace",
        ));
    }
    let injection = Injection { source, target };
    // A regular file (size-capped) or a directory, never a FIFO or a device, and a target
    // that names something: refused before anything is created.
    hyoka_workspace::check_injection(&injection).map_err(|e| {
        EvalError::invalid(
            "file",
            &injection.source.display().to_string(),
            e.to_string(),
        )
    })?;
    Ok(injection)
}

/// A file injection given as text, `SRC` or `SRC:DEST` (as `hyoka run --file` takes it),
/// checked as [`injection`] checks it.
///
/// # Errors
/// As [`injection`].
pub fn injection_arg(spec: &str) -> Result<Injection, EvalError> {
    let (source, target) = match spec.split_once(':') {
        Some((source, target)) => (source, Some(PathBuf::from(target))),
        None => (spec, None),
    };
    injection(PathBuf::from(source), target)
}

/// Whether `name` can be an environment variable's name (not empty, no `=`, no NUL).
pub fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('=') && !name.contains('\0')
}

impl EvalSpec {
    /// An eval of `command` with the built-in settings.
    pub fn new(eval_id: EvalId, command: Vec<OsString>) -> Self {
        Self::resolve(eval_id, command, None, &[])
    }

    /// Builds an eval's effective settings from `levels`, ordered strongest first (command
    /// line, eval, defaults); what no level sets takes the built-in value.
    pub fn resolve(
        eval_id: EvalId,
        command: Vec<OsString>,
        starter: Option<PathBuf>,
        levels: &[&Settings],
    ) -> Self {
        let pick = |f: &dyn Fn(&Settings) -> Option<Duration>| levels.iter().find_map(|l| f(l));
        let limits = levels
            .iter()
            .fold(PartialLimits::default(), |acc, level| acc.or(level.limits))
            .resolve();
        // Environment: weakest level first, so stronger levels override.
        let env = levels
            .iter()
            .rev()
            .flat_map(|l| l.env.iter().cloned())
            .collect();
        // Each phase field comes from the strongest level that sets it.
        let phases = EvalPhases {
            files: levels
                .iter()
                .find_map(|l| l.phases.files.clone())
                .unwrap_or_default(),
            services: levels
                .iter()
                .find_map(|l| l.phases.services.clone())
                .unwrap_or_default(),
            build: levels.iter().find_map(|l| l.phases.build.clone()),
            review: levels.iter().find_map(|l| l.phases.review.clone()),
            isolate_home: levels
                .iter()
                .find_map(|l| l.phases.isolate_home)
                .unwrap_or(false),
            pass_env: levels
                .iter()
                .find_map(|l| l.phases.pass_env.clone())
                .unwrap_or_default(),
            model: levels.iter().find_map(|l| l.phases.model.clone()),
        };
        Self {
            eval_id,
            command,
            starter,
            timeout: pick(&|l| l.timeout).unwrap_or(DEFAULT_TIMEOUT),
            grace: pick(&|l| l.grace).unwrap_or(DEFAULT_GRACE),
            env,
            limits,
            events: levels
                .iter()
                .find_map(|l| l.events)
                .unwrap_or(EventSource::None),
            phases,
            sandbox: SandboxSpec::resolve(&levels.iter().map(|l| &l.sandbox).collect::<Vec<_>>()),
            epochs: levels
                .iter()
                .find_map(|l| l.epochs)
                .unwrap_or(1)
                .clamp(1, MAX_EPOCHS),
            retries: levels
                .iter()
                .find_map(|l| l.retries)
                .unwrap_or(0)
                .min(MAX_RETRIES),
            agent: None,
            task: None,
        }
    }
}

#[cfg(test)]
mod tests;
