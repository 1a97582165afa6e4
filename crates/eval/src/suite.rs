//! Suite files: YAML with `defaults:` and `evals:`, validated completely before anything
//! runs.
//!
//! ```yaml
//! agents:                      # optional: every eval without a command runs with each
//!   claude: [claude, -p, "{prompt}", --output-format, stream-json, --verbose]
//!   other: [other-agent, --task, "{prompt}"]
//! defaults:
//!   timeout: 10m
//!   grace: 5s
//!   events: stream-json
//!   limits: { max_turns: 25, max_files: 50, max_output_size: 1MiB, max_session_actions: 50,
//!             max_tokens: 2000000, max_cost: 5.0 }
//!   env: { MODE: eval }
//!   epochs: 3                  # trials per eval (per agent)
//!   retries: 1                 # reruns of a trial that ended in an infrastructure error
//! evals:
//!   - id: fix-bug
//!     prompt: "fix the failing test"   # replaces {prompt} in the agents' commands
//!   - id: own-command
//!     command: [claude, -p, "fix the failing test"]   # runs as is; or one string, run by `sh -c`
//!     starter: starters/bug    # relative to the suite file
//!     timeout: 5m
//!     limits: { max_turns: 10 }
//!     env: { EXTRA: "1" }
//!     files:                   # injected after the starter (skills, instructions)
//!       - { source: skills, target: .claude/skills }
//!     services:                # started before the agent, torn down with the eval
//!       - name: api
//!         command: [python3, -m, http.server, "8765"]
//!         ready: { tcp: "127.0.0.1:8765" }   # or { file: ready.txt } or { command: [...] }
//!         timeout: 30s
//!     build: { command: [cargo, build], timeout: 5m }   # or `build: "cargo build"`
//!     review: { command: [python3, review.py], timeout: 2m }   # may print {"pass": …}
//!     isolate_home: true       # own HOME and XDG dirs; the environment is cleared …
//!     pass_env: [ANTHROPIC_API_KEY]   # … except the basics and these
//!     sandbox: true            # Landlock: writes only to the workspace, home, temp dir
//!     sandbox_write: [/opt/cache]     # … and these (relative to the suite file)
//!     sandbox_read: [/root/.cache/agents] # shown read-only inside the hidden home
//!     sandbox_read_only: false # true: the agent may not write its workspace either
//!     network: none            # a network namespace with only loopback (default host)
//!     model: { script: scripts/fix.yaml }  # the scripted model server instead of the API
//! ```
//!
//! A suite may also name Harbor task folders or datasets (`tasks: datasets/tb2`, or a list),
//! relative to the suite file: each task is one more eval (after `evals:`, which may then be
//! left out), run with each of the suite's `agents:` (its instruction in place of
//! `{prompt}`, and in `$HYOKA_PROMPT`), or with the caller's agent when the suite names none.
//!
//! Every `command` is an argv list or a string; a string is a shell command, run by `sh -c`
//! like `hyoka run --build CMD`, and `build:` and `review:` may be that string alone (with
//! the built-in timeout).
//!
//! Parsing runs in two steps so every error can be precise: the YAML is read into a
//! generic tree (syntax errors carry line and column), then deserialized into typed
//! structs with unknown keys denied (errors carry the field path, which names the eval).

mod raw;

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hyoka_proctrack::EnvVars;
use hyoka_workspace::{EvalId, Injection};

use crate::error::EvalError;
use crate::limits::PartialLimits;
use crate::model::ModelStub;
use crate::sandbox::{SandboxMode, SandboxSettings};
use crate::settings::{
    self, DEFAULT_PHASE_TIMEOUT, DEFAULT_READY_TIMEOUT, EvalSpec, MAX_EPOCHS, MAX_RETRIES,
    PhaseCommand, PhaseSettings, Readiness, ServiceSpec, Settings,
};
use crate::shard::Shard;
use crate::tasks::{Task, TaskAgent, TaskRunOptions, hidden_dirs, load_tasks, task_specs};
use crate::units;

use self::raw::{
    RawCpus, RawFile, RawLimits, RawModel, RawPhase, RawReady, RawSandbox, RawService, RawSettings,
    RawSize, RawSuite, RawTasks,
};

/// A validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The `agents:` map, by name: each agent's argv, where `{prompt}` stands for an eval's
    /// prompt.
    pub agents: BTreeMap<String, Vec<OsString>>,
    /// The `defaults:` level.
    pub defaults: Settings,
    /// The evals, in file order.
    pub evals: Vec<SuiteEval>,
    /// The `tasks:` entries: Harbor task folders or datasets (relative to the suite file),
    /// each read and checked; their tasks follow the evals, one eval per task.
    pub tasks: Vec<SuiteTasks>,
    /// How the tasks run: where, how rewards are judged, and the agent when the suite names
    /// none (the caller fills it from its flags; the suite's `agents:` win).
    pub task_run: TaskRunOptions,
}

/// One `tasks:` entry of a suite.
#[derive(Debug, Clone)]
pub struct SuiteTasks {
    /// The task folder or dataset, resolved against the suite file's directory.
    pub dir: PathBuf,
    /// Its tasks.
    pub tasks: Vec<Task>,
}

/// One validated eval of a suite.
#[derive(Debug, Clone)]
pub struct SuiteEval {
    /// Its id, unique in the suite.
    pub id: EvalId,
    /// Its own argv (its prompt already in place of `{prompt}`); empty when it runs with
    /// each of the suite's agents instead.
    pub command: Vec<OsString>,
    /// Its prompt, for `{prompt}` in the agents' commands.
    pub prompt: Option<String>,
    /// Its starter directory, resolved against the suite file's directory.
    pub starter: Option<PathBuf>,
    /// The eval's own level of settings.
    pub settings: Settings,
}

impl Suite {
    /// Parses and validates the suite `text`, read from `path` (which names the file in
    /// errors and anchors relative `starter` and `files` paths). Everything is checked
    /// before anything runs: unknown fields, ids, durations, sizes, commands, starters,
    /// injected files, services.
    ///
    /// # Errors
    /// [`EvalError::Suite`] with one line naming the file, and the eval and field where there
    /// is one.
    pub fn from_yaml(text: &str, path: &Path) -> Result<Self, EvalError> {
        parse(text, path).map_err(|message| EvalError::Suite {
            path: path.to_owned(),
            message,
        })
    }

    /// The suite's identity with `cli` as the strongest level (see
    /// [`suite_identity`](crate::suite_identity)): of every eval, whatever the shard.
    ///
    /// # Errors
    /// [`EvalError::Io`] when a starter or an injected file cannot be read.
    pub fn identity(&self, cli: &Settings) -> Result<String, EvalError> {
        crate::identity::suite_identity(&self.specs(cli, None))
    }

    /// The effective settings of every eval (of `shard`, when given), with `cli` as the
    /// strongest level: `cli` > the eval > `defaults` > built-in. An eval without a command
    /// gives one spec per agent (in name order), its prompt in place of `{prompt}`; a shard
    /// takes whole evals, with all their agents.
    pub fn specs(&self, cli: &Settings, shard: Option<Shard>) -> Vec<EvalSpec> {
        let mut specs = self.eval_specs(self.evals.iter(), cli, shard);
        self.add_task_specs(&mut specs, self.evals.len(), cli, shard);
        specs
    }

    /// As [`specs`](Self::specs), giving the suite's memory back as its evals are resolved:
    /// a long suite is not held twice over.
    pub fn into_specs(mut self, cli: &Settings, shard: Option<Shard>) -> Vec<EvalSpec> {
        let evals = std::mem::take(&mut self.evals);
        let count = evals.len();
        let mut specs = self.eval_specs(crate::drain::draining(evals), cli, shard);
        self.add_task_specs(&mut specs, count, cli, shard);
        specs
    }

    /// The specs of the suite's tasks, which follow its `count` evals, onto `specs`.
    fn add_task_specs(
        &self,
        specs: &mut Vec<EvalSpec>,
        count: usize,
        cli: &Settings,
        shard: Option<Shard>,
    ) {
        let agents: Vec<TaskAgent> = if self.agents.is_empty() {
            self.task_run.agent.clone().into_iter().collect()
        } else {
            self.agents
                .iter()
                .map(|(name, argv)| TaskAgent::Command {
                    name: Some(name.clone()),
                    argv: argv.clone(),
                })
                .collect()
        };
        let mut position = count;
        for entry in &self.tasks {
            let hide = hidden_dirs(&entry.dir);
            for task in &entry.tasks {
                if shard.is_none_or(|shard| shard.includes(position)) {
                    specs.extend(task_specs(
                        std::slice::from_ref(task),
                        &agents,
                        &self.task_run,
                        cli,
                        Some(&self.defaults),
                        &hide,
                    ));
                }
                position += 1;
            }
        }
    }

    /// Whether the suite's tasks have an agent: the suite's `agents:`, or the caller's.
    pub fn tasks_have_agents(&self) -> bool {
        self.tasks.is_empty() || !self.agents.is_empty() || self.task_run.agent.is_some()
    }

    fn eval_specs<E: std::borrow::Borrow<SuiteEval>>(
        &self,
        evals: impl IntoIterator<Item = E>,
        cli: &Settings,
        shard: Option<Shard>,
    ) -> Vec<EvalSpec> {
        let mut specs = Vec::new();
        for (position, eval) in evals.into_iter().enumerate() {
            let eval = eval.borrow();
            if shard.is_some_and(|shard| !shard.includes(position)) {
                continue;
            }
            let resolve = |command: Vec<OsString>| {
                EvalSpec::resolve(
                    eval.id.clone(),
                    command,
                    eval.starter.clone(),
                    &[cli, &eval.settings, &self.defaults],
                )
            };
            if !eval.command.is_empty() {
                specs.push(resolve(eval.command.clone()));
                continue;
            }
            for (name, command) in &self.agents {
                let mut spec = resolve(with_prompt(command, eval.prompt.as_deref()));
                spec.agent = Some(name.clone());
                specs.push(spec);
            }
        }
        specs
    }
}

/// A duration of the suite file, its error as text.
fn duration(text: &str) -> Result<std::time::Duration, String> {
    units::parse_duration(text).map_err(|e| e.to_string())
}

fn parse(text: &str, path: &Path) -> Result<Suite, String> {
    let raw = raw::read(text, path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    validate(raw, base).map_err(|e| format!("{}: {e}", path.display()))
}

/// The longest agent name (it becomes part of trial ids).
const MAX_AGENT_NAME: usize = 32;

/// `command` with `prompt` in place of every `{prompt}`.
fn with_prompt(command: &[OsString], prompt: Option<&str>) -> Vec<OsString> {
    command
        .iter()
        .map(|arg| match (arg.to_str(), prompt) {
            (Some(text), Some(prompt)) if text.contains(PROMPT) => {
                OsString::from(text.replace(PROMPT, prompt))
            }
            _ => arg.clone(),
        })
        .collect()
}

/// What a command writes where an eval's prompt goes.
const PROMPT: &str = "{prompt}";

fn uses_prompt(command: &[String]) -> bool {
    command.iter().any(|arg| arg.contains(PROMPT))
}

fn validate(raw: RawSuite, base: &Path) -> Result<Suite, String> {
    let defaults = settings(raw.defaults, base)
        .map_err(|(field, e)| format!("defaults, field {field}: {e}"))?;
    let mut agents = BTreeMap::new();
    for (name, command) in raw.agents {
        if EvalId::new(name.clone()).is_err() || name.len() > MAX_AGENT_NAME {
            return Err(format!(
                "agents, {name:?}: an agent's name is 1 to {MAX_AGENT_NAME} of letters, \
                 digits, '.', '_', '-', starting with a letter or digit"
            ));
        }
        if command.first().is_none_or(String::is_empty) {
            return Err(format!("agents, {name:?}: the command is empty"));
        }
        agents.insert(name, command);
    }
    let task_dirs = match raw.tasks {
        None => Vec::new(),
        Some(RawTasks::One(dir)) => vec![dir],
        Some(RawTasks::Many(dirs)) => dirs,
    };
    if raw.evals.is_empty() && task_dirs.is_empty() {
        return Err("field evals: the suite has no evals (and no tasks:)".to_owned());
    }
    let mut tasks = Vec::new();
    for (index, dir) in task_dirs.iter().enumerate() {
        let resolved = base.join(dir);
        let loaded = load_tasks(&resolved).map_err(|e| format!("field tasks[{index}]: {e}"))?;
        tasks.push(SuiteTasks {
            dir: std::fs::canonicalize(&resolved).unwrap_or(resolved),
            tasks: loaded,
        });
    }
    let mut seen = HashSet::new();
    let mut evals = Vec::with_capacity(raw.evals.len());
    for (index, eval) in crate::drain::draining(raw.evals).enumerate() {
        let (id, command, prompt, starter, raw_settings) = eval.split();
        let name = format!("eval {id:?} (evals[{index}])");
        let eval_id = EvalId::new(id.clone()).map_err(|e| format!("{name}, field id: {e}"))?;
        if !seen.insert(id.clone()) {
            return Err(format!("{name}, field id: duplicate eval id {id:?}"));
        }
        let command = match command {
            Some(command) if command.is_empty() => {
                return Err(format!("{name}, field command: the command is empty"));
            }
            Some(command) => command.0,
            None if agents.is_empty() => {
                return Err(format!(
                    "{name}, field command: the eval has no command and the suite names no agents"
                ));
            }
            None => Vec::new(),
        };
        let needs_prompt = if command.is_empty() {
            agents.values().any(|c| uses_prompt(c))
        } else {
            uses_prompt(&command)
        };
        if needs_prompt && prompt.is_none() {
            return Err(format!(
                "{name}, field prompt: the command uses {PROMPT} but the eval sets no prompt"
            ));
        }
        let starter = match starter {
            Some(starter) => {
                let resolved = base.join(&starter);
                if !resolved.is_dir() {
                    return Err(format!(
                        "{name}, field starter: {} is not a directory",
                        resolved.display()
                    ));
                }
                Some(resolved)
            }
            None => None,
        };
        let settings = settings(raw_settings, base)
            .map_err(|(field, e)| format!("{name}, field {field}: {e}"))?;
        check_phase_ids(&eval_id, &settings.phases, &defaults.phases)
            .map_err(|(field, e)| format!("{name}, field {field}: {e}"))?;
        let command: Vec<OsString> = command.into_iter().map(OsString::from).collect();
        evals.push(SuiteEval {
            id: eval_id,
            command: with_prompt(&command, prompt.as_deref()),
            prompt,
            starter,
            settings,
        });
    }
    let agents = agents
        .into_iter()
        .map(|(name, command)| (name, command.into_iter().map(OsString::from).collect()))
        .collect();
    Ok(Suite {
        agents,
        defaults,
        evals,
        tasks,
        task_run: TaskRunOptions::default(),
    })
}

/// Phase processes are tracked under `<eval>.build`, `<eval>.review` and
/// `<eval>.svc.<name>`, which must still be valid ids (at most 64 characters).
fn check_phase_ids(
    eval: &EvalId,
    own: &PhaseSettings,
    defaults: &PhaseSettings,
) -> Result<(), (&'static str, String)> {
    let services = own.services.as_ref().or(defaults.services.as_ref());
    for service in services.into_iter().flatten() {
        let id = format!("{eval}.svc.{}", service.name);
        if EvalId::new(id.clone()).is_err() {
            return Err((
                "services",
                format!(
                    "{id:?} is too long for a process id; shorten the eval id or the service name"
                ),
            ));
        }
    }
    if EvalId::new(format!("{eval}.review")).is_err()
        || EvalId::new(format!("{eval}.home")).is_err()
    {
        return Err((
            "id",
            "leave room for the phase suffixes (at most 57 characters)".to_owned(),
        ));
    }
    Ok(())
}

fn settings(raw: RawSettings, base: &Path) -> Result<Settings, (&'static str, String)> {
    let timeout = raw
        .timeout
        .map(|t| duration(&t))
        .transpose()
        .map_err(|e| ("timeout", e))?;
    let grace = raw
        .grace
        .map(|t| duration(&t))
        .transpose()
        .map_err(|e| ("grace", e))?;
    let events = raw
        .events
        .map(|e| {
            e.parse()
                .map_err(|e: hyoka_events::UnknownEventSource| EvalError::from(e).to_string())
        })
        .transpose()
        .map_err(|e| ("events", e))?;
    let limits = limits(raw.limits)?;
    let epochs = match raw.epochs {
        Some(n) if n == 0 || n > MAX_EPOCHS => {
            return Err(("epochs", format!("{n} is not 1 to {MAX_EPOCHS}")));
        }
        n => n,
    };
    let retries = match raw.retries {
        Some(n) if n > MAX_RETRIES => {
            return Err(("retries", format!("{n} is more than {MAX_RETRIES}")));
        }
        n => n,
    };
    let env = env_pairs(raw.env).map_err(|e| ("env", e))?;
    let files = raw
        .files
        .map(|files| {
            files
                .into_iter()
                .map(|f| injection(f, base))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .map_err(|e| ("files", e))?;
    let services = raw
        .services
        .map(|services| {
            let mut names = HashSet::new();
            services
                .into_iter()
                .map(|raw| {
                    let service = service(raw)?;
                    if !names.insert(service.name.clone()) {
                        return Err(format!("duplicate service name {:?}", service.name));
                    }
                    Ok(service)
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .transpose()
        .map_err(|e| ("services", e))?;
    let build = raw.build.map(phase).transpose().map_err(|e| ("build", e))?;
    let review = raw
        .review
        .map(phase)
        .transpose()
        .map_err(|e| ("review", e))?;
    if let Some(names) = &raw.pass_env
        && let Some(bad) = names.iter().find(|n| !settings::valid_env_name(n))
    {
        return Err(("pass_env", format!("invalid variable name {bad:?}")));
    }
    let model = raw.model.map(|m| model(&m, base)).transpose()?;
    let sandbox = sandbox_settings(
        raw.sandbox,
        raw.network,
        raw.sandbox_write,
        raw.sandbox_read,
        raw.sandbox_read_only,
        base,
    )?;
    Ok(Settings {
        timeout,
        grace,
        events,
        limits,
        env,
        phases: PhaseSettings {
            files,
            services,
            build,
            review,
            isolate_home: raw.isolate_home,
            pass_env: raw.pass_env,
            model,
        },
        sandbox,
        epochs,
        retries,
    })
}

/// `model: { script: FILE }`, the script resolved against the suite file's directory.
fn model(raw: &RawModel, base: &Path) -> Result<ModelStub, (&'static str, String)> {
    let script = base.join(&raw.script);
    if script.is_file() {
        Ok(ModelStub::new(script))
    } else {
        Err((
            "model.script",
            format!("the script {} is not a file", script.display()),
        ))
    }
}

/// The sandbox fields of one level; `sandbox_write` paths are resolved against the suite
/// file's directory and must exist.
fn sandbox_settings(
    mode: Option<RawSandbox>,
    network: Option<String>,
    write: Option<Vec<String>>,
    read: Option<Vec<String>>,
    read_only: Option<bool>,
    base: &Path,
) -> Result<SandboxSettings, (&'static str, String)> {
    let mode = match mode {
        None => None,
        Some(RawSandbox::Bool(true)) => Some(SandboxMode::On),
        Some(RawSandbox::Bool(false)) => Some(SandboxMode::Off),
        Some(RawSandbox::Text(text)) => Some(text.parse().map_err(|e| ("sandbox", e))?),
    };
    let network = network
        .map(|n| n.parse())
        .transpose()
        .map_err(|e| ("network", e))?;
    let existing = |paths: Vec<String>| {
        paths
            .into_iter()
            .map(|p| {
                let resolved = base.join(&p);
                if resolved.exists() {
                    Ok(resolved)
                } else {
                    Err(format!("{} does not exist", resolved.display()))
                }
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let write = write
        .map(existing)
        .transpose()
        .map_err(|e| ("sandbox_write", e))?;
    let read = read
        .map(existing)
        .transpose()
        .map_err(|e| ("sandbox_read", e))?;
    Ok(SandboxSettings {
        mode,
        network,
        write,
        read,
        read_only,
    })
}

fn size(raw: Option<RawSize>, field: &'static str) -> Result<Option<u64>, (&'static str, String)> {
    match raw {
        None => Ok(None),
        Some(RawSize::Bytes(bytes)) => Ok(Some(bytes)),
        Some(RawSize::Text(text)) => units::parse_size(&text)
            .map(Some)
            .map_err(|e| (field, e.to_string())),
    }
}

fn limits(raw: Option<RawLimits>) -> Result<PartialLimits, (&'static str, String)> {
    let Some(limits) = raw else {
        return Ok(PartialLimits::default());
    };
    Ok(PartialLimits {
        max_turns: limits.max_turns,
        max_files: limits.max_files,
        max_output_size: match limits.max_output_size {
            None => None,
            Some(RawSize::Bytes(bytes)) => Some(bytes),
            Some(RawSize::Text(text)) => Some(
                units::parse_size(&text).map_err(|e| ("limits.max_output_size", e.to_string()))?,
            ),
        },
        max_session_actions: limits.max_session_actions,
        max_tokens: limits.max_tokens,
        max_memory: size(limits.max_memory, "limits.max_memory")?,
        max_disk: size(limits.max_disk, "limits.max_disk")?,
        max_pids: limits
            .max_pids
            .map(|n| units::parse_pids(&n.to_string()))
            .transpose()
            .map_err(|e| ("limits.max_pids", e.to_string()))?,
        cpu_millis: match limits.cpus {
            None => None,
            Some(RawCpus::Number(n)) => Some(n.to_string()),
            Some(RawCpus::Text(t)) => Some(t),
        }
        .map(|t| units::parse_cpus(&t))
        .transpose()
        .map_err(|e| ("limits.cpus", e.to_string()))?,
        max_cost: match limits.max_cost {
            Some(cost) if !cost.is_finite() || cost < 0.0 => {
                return Err((
                    "limits.max_cost",
                    format!("{cost} is not a cost in dollars (0 or more)"),
                ));
            }
            cost => cost,
        },
    })
}

fn env_pairs(env: Option<BTreeMap<String, String>>) -> Result<Vec<(OsString, OsString)>, String> {
    let mut pairs = Vec::new();
    for (key, value) in env.unwrap_or_default() {
        if !settings::valid_env_name(&key) || value.contains('\0') {
            return Err(format!("invalid variable name {key:?}"));
        }
        if key.starts_with(EnvVars::PREFIX) {
            return Err(format!("{key} is set by hyoka and cannot be overridden"));
        }
        pairs.push((OsString::from(key), OsString::from(value)));
    }
    Ok(pairs)
}

fn injection(raw: RawFile, base: &Path) -> Result<Injection, String> {
    settings::injection(base.join(&raw.source), raw.target.map(PathBuf::from))
        .map_err(|e| e.to_string())
}

fn service(raw: RawService) -> Result<ServiceSpec, String> {
    if EvalId::new(raw.name.clone()).is_err() || raw.name.len() > 16 {
        return Err(format!(
            "invalid service name {:?}: 1 to 16 of letters, digits, '.', '_', '-'",
            raw.name
        ));
    }
    if raw.command.is_empty() {
        return Err(format!("service {}: the command is empty", raw.name));
    }
    let ready = match raw.ready {
        None => Readiness::Started,
        Some(RawReady {
            file: Some(file),
            tcp: None,
            command: None,
        }) => Readiness::File(file.into()),
        Some(RawReady {
            file: None,
            tcp: Some(tcp),
            command: None,
        }) => {
            if !tcp.contains(':') {
                return Err(format!(
                    "service {}: ready.tcp {tcp:?} is not host:port",
                    raw.name
                ));
            }
            Readiness::Tcp(tcp)
        }
        Some(RawReady {
            file: None,
            tcp: None,
            command: Some(command),
        }) if !command.is_empty() => Readiness::Command(command.argv()),
        Some(_) => {
            return Err(format!(
                "service {}: ready takes exactly one of file, tcp or command",
                raw.name
            ));
        }
    };
    let timeout = raw
        .timeout
        .map(|t| duration(&t))
        .transpose()
        .map_err(|e| format!("service {}: {e}", raw.name))?
        .unwrap_or(DEFAULT_READY_TIMEOUT);
    Ok(ServiceSpec {
        name: raw.name,
        command: raw.command.argv(),
        ready,
        timeout,
        env: env_pairs(raw.env)?,
    })
}

fn phase(raw: RawPhase) -> Result<PhaseCommand, String> {
    if raw.command.is_empty() {
        return Err("the command is empty".to_owned());
    }
    Ok(PhaseCommand {
        command: raw.command.argv(),
        timeout: raw
            .timeout
            .map(|t| duration(&t))
            .transpose()?
            .unwrap_or(DEFAULT_PHASE_TIMEOUT),
    })
}

#[cfg(test)]
mod tests;
