//! A task folder's `task.toml`, read the way Harbor reads it.
//!
//! The fields and their defaults follow Harbor's `TaskConfig` (`harbor/models/task/config.py`
//! in `harbor-framework/harbor`, read through the forks the public index holds, and the task
//! format's documentation, `content/docs/tasks/index.mdx` of `laude-institute/harbor-docs`):
//! `[agent] timeout_sec` (no default in the model; the documentation's 600 s is hyoka's own
//! default of ten minutes), `[verifier] timeout_sec` (600 s) and `env`, `[solution] env`,
//! `[environment]` `build_timeout_sec`, `docker_image`, `cpus` (1), `memory_mb` (2048),
//! `storage_mb` (10240), the deprecated `memory`/`storage` strings (`"2G"`, `"512M"`,
//! `"2048K"`), `gpus`, `allow_internet` (true), `network_mode` (`public`, `no-network`,
//! `allowlist`), `env`, `workdir`, `skills_dir`, `mcp_servers`, `healthcheck`. As in Harbor's
//! pydantic models, keys hyoka does not know are ignored (`[metadata]` is free-form), while a
//! known key of the wrong type is an error.
//!
//! Environment values of the form `${NAME}` or `${NAME:-default}` are taken from the host's
//! environment when the task runs (Harbor's `resolve_env_vars` does the same, for a whole
//! value only); anything else is literal.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::units::MAX_DURATION;

/// Harbor's default `[verifier] timeout_sec`.
pub const DEFAULT_VERIFIER_TIMEOUT: Duration = Duration::from_mins(10);
/// Harbor's default `[environment] cpus`.
pub const DEFAULT_CPUS: u32 = 1;
/// Harbor's default `[environment] memory_mb`.
pub const DEFAULT_MEMORY_MB: u64 = 2048;
/// Harbor's default `[environment] storage_mb`.
pub const DEFAULT_STORAGE_MB: u64 = 10240;

/// The parts of a `task.toml` that decide how a task runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskConfig {
    /// `[task] name` (`org/name`), when the task is a registry package.
    pub name: Option<String>,
    /// `[agent] timeout_sec`; `None` leaves the agent's timeout to hyoka's settings.
    pub agent_timeout: Option<Duration>,
    /// `[agent] user`, when it names someone else than root.
    pub agent_user: Option<String>,
    /// `[verifier] timeout_sec`.
    pub verifier_timeout: Duration,
    /// `[verifier] env`: variables of the verifier only.
    pub verifier_env: Vec<(String, EnvValue)>,
    /// `[verifier] user`, when it names someone else than root.
    pub verifier_user: Option<String>,
    /// `[solution] env`: variables of the oracle only.
    pub solution_env: Vec<(String, EnvValue)>,
    /// `[environment]`.
    pub environment: EnvironmentConfig,
    /// Whether the task is a multi-step task (`[[steps]]`), which hyoka does not run.
    pub multi_step: bool,
}

/// A task's `[environment]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentConfig {
    /// `build_timeout_sec`: how long building the image may take.
    pub build_timeout: Duration,
    /// `docker_image`: a prebuilt image of the environment.
    pub docker_image: Option<String>,
    /// `cpus`.
    pub cpus: u32,
    /// `memory_mb` (or the deprecated `memory`), in MiB.
    pub memory_mb: u64,
    /// `storage_mb` (or the deprecated `storage`), in MiB.
    pub storage_mb: u64,
    /// `gpus`.
    pub gpus: u32,
    /// The network the task's processes get.
    pub network: TaskNetwork,
    /// `env`: variables of every process of the task.
    pub env: Vec<(String, EnvValue)>,
    /// `workdir`: the working directory, overriding the Dockerfile's `WORKDIR`.
    pub workdir: Option<String>,
    /// `skills_dir`: where in the environment the agent's skills are.
    pub skills_dir: Option<String>,
    /// How many `mcp_servers` the task declares.
    pub mcp_servers: usize,
    /// Whether the task declares a `healthcheck`.
    pub healthcheck: bool,
}

/// The network a task asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskNetwork {
    /// The internet (`allow_internet = true`, `network_mode = "public"`, the default).
    Public,
    /// No network (`allow_internet = false`, `network_mode = "no-network"`).
    None,
    /// Only these hosts (`network_mode = "allowlist"`).
    Allowlist(Vec<String>),
}

/// One environment variable's value in a `task.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// A literal value.
    Literal(String),
    /// `${NAME}` or `${NAME:-default}`: the host's variable, or the default.
    Host {
        /// The host variable.
        name: String,
        /// The value when it is not set; without one, an unset variable is an error.
        default: Option<String>,
    },
}

impl EnvValue {
    fn parse(value: String) -> Self {
        let Some(inner) = value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) else {
            return Self::Literal(value);
        };
        if inner.contains('}') || inner.is_empty() {
            return Self::Literal(value);
        }
        match inner.split_once(":-") {
            Some((name, default)) => Self::Host {
                name: name.to_owned(),
                default: Some(default.to_owned()),
            },
            None => Self::Host {
                name: inner.to_owned(),
                default: None,
            },
        }
    }

    /// The value, with `host` giving the host's variables.
    ///
    /// # Errors
    /// The name of a host variable that is not set and has no default.
    pub fn resolve(&self, host: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
        match self {
            Self::Literal(value) => Ok(value.clone()),
            Self::Host { name, default } => host(name)
                .or_else(|| default.clone())
                .ok_or_else(|| name.clone()),
        }
    }
}

impl TaskConfig {
    /// Parses `text`, a `task.toml`.
    ///
    /// # Errors
    /// One line saying what is wrong (TOML syntax with its line, a field of the wrong type, a
    /// value out of range).
    pub fn parse(text: &str) -> Result<Self, String> {
        let at = |span: Option<std::ops::Range<usize>>| {
            span.map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(" (line {line}, column {column})")
            })
            .unwrap_or_default()
        };
        let deserializer = toml::Deserializer::parse(text)
            .map_err(|e| format!("{}{}", e.message(), at(e.span())))?;
        let raw: RawTask = serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let field = if path == "." {
                String::new()
            } else {
                format!("{path}: ")
            };
            format!("{field}{}{}", inner.message(), at(inner.span()))
        })?;
        raw.resolve()
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawTask {
    task: Option<RawPackage>,
    agent: RawAgent,
    verifier: RawVerifier,
    solution: RawSolution,
    environment: RawEnvironment,
    steps: Option<Vec<toml::Value>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPackage {
    name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawAgent {
    timeout_sec: Option<f64>,
    user: Option<RawUser>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawVerifier {
    timeout_sec: Option<f64>,
    env: BTreeMap<String, String>,
    user: Option<RawUser>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawSolution {
    env: BTreeMap<String, String>,
}

/// `user = "name"` or `user = 1000`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawUser {
    Name(String),
    Id(i64),
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawEnvironment {
    build_timeout_sec: Option<f64>,
    docker_image: Option<String>,
    cpus: Option<i64>,
    memory_mb: Option<i64>,
    storage_mb: Option<i64>,
    memory: Option<String>,
    storage: Option<String>,
    gpus: Option<i64>,
    allow_internet: Option<bool>,
    network_mode: Option<String>,
    allowed_hosts: Vec<String>,
    env: BTreeMap<String, String>,
    workdir: Option<String>,
    skills_dir: Option<String>,
    mcp_servers: Vec<toml::Value>,
    healthcheck: Option<toml::Value>,
}

impl RawTask {
    fn resolve(self) -> Result<TaskConfig, String> {
        let env = self.environment;
        let memory_mb = match (env.memory_mb, env.memory) {
            (Some(mb), _) => positive("environment.memory_mb", mb)?,
            (None, Some(text)) => size_mb("environment.memory", &text)?,
            (None, None) => DEFAULT_MEMORY_MB,
        };
        let storage_mb = match (env.storage_mb, env.storage) {
            (Some(mb), _) => positive("environment.storage_mb", mb)?,
            (None, Some(text)) => size_mb("environment.storage", &text)?,
            (None, None) => DEFAULT_STORAGE_MB,
        };
        let network = match env.network_mode.as_deref() {
            Some("public") => TaskNetwork::Public,
            Some("no-network") => TaskNetwork::None,
            Some("allowlist") => TaskNetwork::Allowlist(env.allowed_hosts.clone()),
            Some(other) => {
                return Err(format!(
                    "environment.network_mode {other:?}: expected public, no-network or allowlist"
                ));
            }
            None if !env.allowed_hosts.is_empty() => {
                TaskNetwork::Allowlist(env.allowed_hosts.clone())
            }
            None if env.allow_internet == Some(false) => TaskNetwork::None,
            None => TaskNetwork::Public,
        };
        let cpus = match env.cpus {
            Some(n) => u32::try_from(positive("environment.cpus", n)?)
                .map_err(|_| format!("environment.cpus {n}: too many"))?,
            None => DEFAULT_CPUS,
        };
        let gpus = match env.gpus {
            Some(n) if n >= 0 => {
                u32::try_from(n).map_err(|_| format!("environment.gpus {n}: too many"))?
            }
            Some(n) => return Err(format!("environment.gpus {n}: must not be negative")),
            None => 0,
        };
        Ok(TaskConfig {
            name: self.task.and_then(|t| t.name),
            agent_timeout: self
                .agent
                .timeout_sec
                .map(|s| seconds("agent.timeout_sec", s))
                .transpose()?,
            agent_user: other_user(self.agent.user),
            verifier_timeout: self
                .verifier
                .timeout_sec
                .map(|s| seconds("verifier.timeout_sec", s))
                .transpose()?
                .unwrap_or(DEFAULT_VERIFIER_TIMEOUT),
            verifier_env: env_list("verifier.env", self.verifier.env)?,
            verifier_user: other_user(self.verifier.user),
            solution_env: env_list("solution.env", self.solution.env)?,
            environment: EnvironmentConfig {
                build_timeout: env
                    .build_timeout_sec
                    .map(|s| seconds("environment.build_timeout_sec", s))
                    .transpose()?
                    .unwrap_or(Duration::from_mins(10)),
                docker_image: env.docker_image.filter(|i| !i.trim().is_empty()),
                cpus,
                memory_mb,
                storage_mb,
                gpus,
                network,
                env: env_list("environment.env", env.env)?,
                workdir: env.workdir.filter(|w| !w.is_empty()),
                skills_dir: env.skills_dir.filter(|s| !s.is_empty()),
                mcp_servers: env.mcp_servers.len(),
                healthcheck: env.healthcheck.is_some(),
            },
            multi_step: self.steps.is_some_and(|s| !s.is_empty()),
        })
    }
}

/// A user other than root (`root`, `0` and nothing all mean root).
fn other_user(user: Option<RawUser>) -> Option<String> {
    match user? {
        RawUser::Name(name) if name == "root" || name == "0" || name.is_empty() => None,
        RawUser::Name(name) => Some(name),
        RawUser::Id(0) => None,
        RawUser::Id(id) => Some(id.to_string()),
    }
}

fn env_list(field: &str, env: BTreeMap<String, String>) -> Result<Vec<(String, EnvValue)>, String> {
    env.into_iter()
        .map(|(name, value)| {
            if crate::settings::valid_env_name(&name) {
                Ok((name, EnvValue::parse(value)))
            } else {
                Err(format!("{field}: {name:?} is not a variable name"))
            }
        })
        .collect()
}

fn seconds(field: &str, value: f64) -> Result<Duration, String> {
    if !value.is_finite() || value <= 0.0 {
        return Err(format!(
            "{field} {value}: must be a positive number of seconds"
        ));
    }
    if value > MAX_DURATION.as_secs_f64() {
        return Err(format!("{field} {value}: too long, at most 10 years"));
    }
    Ok(Duration::from_secs_f64(value))
}

fn positive(field: &str, value: i64) -> Result<u64, String> {
    u64::try_from(value)
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| format!("{field} {value}: must be at least 1"))
}

/// Harbor's deprecated size strings: a number and `G`, `M` or `K` (`"2G"`, `"512M"`), in
/// MiB, as Harbor's `_parse_size_to_mb` reads them.
fn size_mb(field: &str, text: &str) -> Result<u64, String> {
    let upper = text.trim().to_ascii_uppercase();
    let bad = || format!("{field} {text:?}: expected a size like \"2G\", \"512M\" or \"2048K\"");
    let (number, scale) = if let Some(n) = upper.strip_suffix('G') {
        (n, 1024.0)
    } else if let Some(n) = upper.strip_suffix('M') {
        (n, 1.0)
    } else if let Some(n) = upper.strip_suffix('K') {
        (n, 1.0 / 1024.0)
    } else {
        return Err(bad());
    };
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    let mb = value * scale;
    if !mb.is_finite() || !(1.0..=1e12).contains(&mb) {
        return Err(bad());
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked finite, at least 1 and at most 1e12 above"
    )]
    Ok(mb as u64)
}

#[cfg(test)]
mod tests;
