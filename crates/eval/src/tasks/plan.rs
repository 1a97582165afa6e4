//! From task folders to evals: one [`EvalSpec`] per task (and agent), with the task's
//! timeouts, network, environment and verifier, and the [`TaskTrial`] its trials need.
//!
//! The task is the eval's level of settings, so the usual precedence holds: an explicit
//! command-line flag > `task.toml` > a suite's `defaults` > the built-in value. `task.toml`
//! gives the agent's timeout (`[agent] timeout_sec`), the network (`allow_internet = false`
//! is `--network none`), the environment (the Dockerfile's `ENV`, `[environment] env`) and
//! the verifier (`bash /tests/test.sh` as the review phase, with `[verifier] timeout_sec`).
//! `[environment]` `cpus`, `memory_mb` and `storage_mb` become the eval's `--cpus`,
//! `--max-memory` and `--max-disk` (where the machine cannot enforce one, the task runs
//! without it and `report.json` `resources` says why). The counted limits (turns, actions,
//! files, bytes) are off unless a flag or the suite sets them: a benchmark's task decides
//! with its timeouts and its tests, not with hyoka's defaults. Every trial runs sandboxed with an isolated home, as the host environment needs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use crate::limits::PartialLimits;
use crate::sandbox::{SandboxMode, SandboxSettings};
use crate::settings::{EvalSpec, PhaseCommand, PhaseSettings, Settings};
use crate::tasks::config::TaskNetwork;
use crate::tasks::environment::{HostView, TaskEnvironment, TaskOptions, host_view};
use crate::tasks::folder::Task;
use hyoka_harbor::RewardRules;
use hyoka_proctrack::Network;

/// Where the verifier, the tests, the logs and the oracle's solution are seen.
pub const TESTS_DIR: &str = "/tests";
/// See [`TESTS_DIR`].
pub const LOGS_DIR: &str = "/logs";
/// See [`TESTS_DIR`].
pub const SOLUTION_DIR: &str = "/solution";
/// The host variables a task with internet access gets through its isolated environment:
/// where the certificates are and the proxy.
pub const HOST_NETWORK_ENV: [&str; 8] = [
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];
/// A mebibyte: Harbor's `memory_mb` and `storage_mb` unit.
const MIB: u64 = 1024 * 1024;
/// The environment variable that holds a task's instruction for `-- COMMAND` agents.
pub const PROMPT_ENV: &str = "HYOKA_PROMPT";

/// Who works on a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskAgent {
    /// Harbor's oracle: the task's `solution/solve.sh`, seen at `/solution`.
    Oracle,
    /// Harbor's nop agent: nothing runs.
    Nop,
    /// A command, given the instruction as `$HYOKA_PROMPT`; a suite's agents have
    /// `{prompt}` replaced by it too. The name is the suite agent's, if any.
    Command {
        /// The suite agent's name, or `None` for `-- COMMAND`.
        name: Option<String>,
        /// The argv.
        argv: Vec<OsString>,
    },
}

impl TaskAgent {
    /// The agent's name in records: `oracle`, `nop`, the suite agent's, or `None`.
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Oracle => Some("oracle"),
            Self::Nop => Some("nop"),
            Self::Command { name, .. } => name.as_deref(),
        }
    }
}

/// What a trial of a Harbor task needs besides an ordinary eval ([`EvalSpec::task`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskTrial {
    /// The task folder (never written).
    pub task_dir: PathBuf,
    /// Directories no process of the trial may see: the task folder and its dataset.
    pub hide: Vec<PathBuf>,
    /// Where it runs.
    pub environment: TaskEnvironment,
    /// What the host gives it, when it can.
    pub view: Option<HostView>,
    /// Why it cannot run here: the trial is `not_run` with this reason.
    pub unavailable: Option<String>,
    /// The oracle's `solution/` (copied and seen at `/solution` by the agent only).
    pub solution: Option<PathBuf>,
    /// The task's `tests/` (copied and seen at `/tests` once the agent has finished).
    pub tests: PathBuf,
    /// `[verifier] env`, resolved.
    pub verifier_env: Vec<(OsString, OsString)>,
    /// How the reward becomes a verdict.
    pub rules: RewardRules,
    /// Who works on it.
    pub agent: TaskAgent,
}

/// How a set of tasks runs.
#[derive(Debug, Clone, Default)]
pub struct TaskRunOptions {
    /// Who works on them (with a suite's `agents:`, each agent instead).
    pub agent: Option<TaskAgent>,
    /// Where they run.
    pub environment: TaskEnvironment,
    /// How rewards become verdicts.
    pub rules: RewardRules,
    /// Host-environment choices and the host's variables.
    pub options: TaskOptions,
}

/// The evals of `tasks` with `agents` (each task once per agent, in order), resolved with
/// `levels` around the task's own level: `stronger` (the command line) first, then the task,
/// then `weaker` (a suite's defaults). `hide` lists directories no trial may see (the
/// datasets the tasks come from).
pub fn task_specs(
    tasks: &[Task],
    agents: &[TaskAgent],
    run: &TaskRunOptions,
    stronger: &Settings,
    weaker: Option<&Settings>,
    hide: &[PathBuf],
) -> Vec<EvalSpec> {
    let mut specs = Vec::new();
    for task in tasks {
        for agent in agents {
            specs.push(task_spec(task, agent, run, stronger, weaker, hide));
        }
    }
    specs
}

fn task_spec(
    task: &Task,
    agent: &TaskAgent,
    run: &TaskRunOptions,
    stronger: &Settings,
    weaker: Option<&Settings>,
    hide: &[PathBuf],
) -> EvalSpec {
    let config = &task.config;
    let (view, mut unavailable) = match run.environment {
        TaskEnvironment::Host => match host_view(task, &run.options) {
            Ok(view) => (Some(view), None),
            Err(why) => (None, Some(why)),
        },
        other => (
            None,
            Some(format!(
                "the {} environment does not run tasks in this build of hyoka (use --environment host)",
                other.as_str()
            )),
        ),
    };
    if *agent == TaskAgent::Oracle && !task.has_solution && unavailable.is_none() {
        unavailable = Some("has no solution/solve.sh for the oracle".to_owned());
    }
    let (env, verifier_env) = task_env(task, agent, run, view.as_ref(), &mut unavailable);
    let tests = task.tests_dir();
    let level = Settings {
        timeout: config.agent_timeout,
        env,
        limits: PartialLimits {
            max_turns: Some(0),
            max_files: Some(0),
            max_output_size: Some(0),
            max_session_actions: Some(0),
            max_memory: Some(config.environment.memory_mb.saturating_mul(MIB)),
            cpu_millis: Some(config.environment.cpus.saturating_mul(1000)),
            max_disk: Some(config.environment.storage_mb.saturating_mul(MIB)),
            ..PartialLimits::default()
        },
        phases: PhaseSettings {
            files: view.as_ref().map(|v| v.workspace_files.clone()),
            review: Some(PhaseCommand {
                command: script_command(&tests.join("test.sh"), TESTS_DIR, "test.sh"),
                timeout: config.verifier_timeout,
            }),
            isolate_home: Some(true),
            ..PhaseSettings::default()
        },
        sandbox: SandboxSettings {
            mode: Some(SandboxMode::On),
            network: Some(match config.environment.network {
                TaskNetwork::None => Network::None,
                _ => Network::Host,
            }),
            ..SandboxSettings::default()
        },
        ..Settings::default()
    };
    let levels: Vec<&Settings> = std::iter::once(stronger)
        .chain(std::iter::once(&level))
        .chain(weaker)
        .collect();
    let command = match agent {
        TaskAgent::Oracle => script_command(
            &task.solution_dir().join("solve.sh"),
            SOLUTION_DIR,
            "solve.sh",
        ),
        TaskAgent::Nop => vec!["true".into()],
        TaskAgent::Command { argv, .. } => argv
            .iter()
            .map(|a| {
                a.to_str().map_or_else(
                    || a.clone(),
                    |s| s.replace("{prompt}", &task.instruction).into(),
                )
            })
            .collect(),
    };
    let mut spec = EvalSpec::resolve(task.id.clone(), command, None, &levels);
    spec.agent = agent.name().map(str::to_owned);
    // What a task that reaches the internet needs of the host's network setup (its
    // certificate bundle and proxy), as a container on this host would be given, besides
    // what the caller passes through.
    if config.environment.network != TaskNetwork::None {
        for name in HOST_NETWORK_ENV {
            if !spec.phases.pass_env.iter().any(|p| p == name) {
                spec.phases.pass_env.push(name.to_owned());
            }
        }
    }
    let mut hidden: Vec<PathBuf> = hide.to_vec();
    if !hidden.iter().any(|h| task.dir.starts_with(h)) {
        hidden.push(task.dir.clone());
    }
    spec.task = Some(Arc::new(TaskTrial {
        task_dir: task.dir.clone(),
        hide: hidden,
        environment: run.environment,
        view,
        unavailable,
        solution: (*agent == TaskAgent::Oracle).then(|| task.solution_dir()),
        tests,
        verifier_env,
        rules: run.rules.clone(),
        agent: agent.clone(),
    }));
    spec
}

/// Environment variables, in order (a later one wins).
type EnvVars = Vec<(OsString, OsString)>;

/// The environment of the agent's trial (the view's, the instruction, `[solution] env` for
/// the oracle) and `[verifier] env`, resolved; a host variable that is missing makes the
/// trial unavailable.
fn task_env(
    task: &Task,
    agent: &TaskAgent,
    run: &TaskRunOptions,
    view: Option<&HostView>,
    unavailable: &mut Option<String>,
) -> (EnvVars, EnvVars) {
    let config = &task.config;
    let mut verifier_env = Vec::new();
    for (name, value) in &config.verifier_env {
        match value.resolve(&|n| host_var(&run.options, n)) {
            Ok(value) => verifier_env.push((name.into(), value.into())),
            Err(missing) => {
                unavailable.get_or_insert_with(|| {
                    format!("needs the host variable {missing} ([verifier.env] {name})")
                });
            }
        }
    }
    let mut env: Vec<(OsString, OsString)> = view.map(|v| v.env.clone()).unwrap_or_default();
    env.push((PROMPT_ENV.into(), task.instruction.clone().into()));
    env.push(("DEBIAN_FRONTEND".into(), "noninteractive".into()));
    let mut agent_env = Vec::new();
    if *agent == TaskAgent::Oracle {
        for (name, value) in &config.solution_env {
            match value.resolve(&|n| host_var(&run.options, n)) {
                Ok(value) => agent_env.push((OsString::from(name), OsString::from(value))),
                Err(missing) => {
                    unavailable.get_or_insert_with(|| {
                        format!("needs the host variable {missing} ([solution.env] {name})")
                    });
                }
            }
        }
    }
    env.extend(agent_env);
    (env, verifier_env)
}

fn host_var(options: &TaskOptions, name: &str) -> Option<String> {
    options
        .host_env
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.to_string_lossy().into_owned())
}

/// How a task script runs, seen at `dir/name`: as the kernel would run it by its `#!` line
/// (the interpreter, its one optional argument, then the script), so the copy needs no
/// execute bit; with `bash` when it has no `#!` line (Harbor's scripts are bash).
fn script_command(host: &std::path::Path, dir: &str, name: &str) -> Vec<OsString> {
    let seen = format!("{dir}/{name}");
    let mut head = Vec::new();
    if let Ok(file) = std::fs::File::open(host) {
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, 256), &mut head);
    }
    let first = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let interpreter = first
        .strip_prefix(b"#!")
        .and_then(|rest| std::str::from_utf8(rest).ok())
        .map(str::trim)
        .filter(|rest| !rest.is_empty());
    match interpreter {
        Some(line) => {
            let (program, arg) = match line.split_once(char::is_whitespace) {
                Some((program, arg)) => (program, Some(arg.trim())),
                None => (line, None),
            };
            std::iter::once(OsString::from(program))
                .chain(arg.filter(|a| !a.is_empty()).map(OsString::from))
                .chain(std::iter::once(OsString::from(seen)))
                .collect()
        }
        None => vec!["bash".into(), seen.into()],
    }
}
