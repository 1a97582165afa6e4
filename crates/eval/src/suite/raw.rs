//! The suite file's raw shape, as serde reads it from the YAML: every field optional, unknown
//! keys denied, commands as an argv list or a shell string; and the reading itself, whose
//! errors name the file, the line and column, and the eval and field. The parent module
//! validates this shape into settings.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSuite {
    #[serde(default)]
    pub(super) agents: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub(super) defaults: RawSettings,
    #[serde(default)]
    pub(super) evals: Vec<RawEval>,
    pub(super) tasks: Option<RawTasks>,
}

/// `tasks: DIR` or `tasks: [DIR, …]`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawTasks {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSettings {
    pub(super) timeout: Option<String>,
    pub(super) grace: Option<String>,
    pub(super) events: Option<String>,
    pub(super) limits: Option<RawLimits>,
    pub(super) env: Option<BTreeMap<String, String>>,
    pub(super) files: Option<Vec<RawFile>>,
    pub(super) services: Option<Vec<RawService>>,
    pub(super) build: Option<RawPhase>,
    pub(super) review: Option<RawPhase>,
    pub(super) isolate_home: Option<bool>,
    pub(super) pass_env: Option<Vec<String>>,
    pub(super) sandbox: Option<RawSandbox>,
    pub(super) network: Option<String>,
    pub(super) sandbox_write: Option<Vec<String>>,
    pub(super) sandbox_read: Option<Vec<String>>,
    pub(super) sandbox_read_only: Option<bool>,
    pub(super) epochs: Option<u32>,
    pub(super) retries: Option<u32>,
    pub(super) model: Option<RawModel>,
}

// The eval's own fields plus the settings fields: serde cannot deny unknown fields through
// `flatten`, so they are listed again.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEval {
    pub(super) id: String,
    pub(super) command: Option<RawCommand>,
    pub(super) prompt: Option<String>,
    pub(super) starter: Option<String>,
    pub(super) timeout: Option<String>,
    pub(super) grace: Option<String>,
    pub(super) events: Option<String>,
    pub(super) limits: Option<RawLimits>,
    pub(super) env: Option<BTreeMap<String, String>>,
    pub(super) files: Option<Vec<RawFile>>,
    pub(super) services: Option<Vec<RawService>>,
    pub(super) build: Option<RawPhase>,
    pub(super) review: Option<RawPhase>,
    pub(super) isolate_home: Option<bool>,
    pub(super) pass_env: Option<Vec<String>>,
    pub(super) sandbox: Option<RawSandbox>,
    pub(super) network: Option<String>,
    pub(super) sandbox_write: Option<Vec<String>>,
    pub(super) sandbox_read: Option<Vec<String>>,
    pub(super) sandbox_read_only: Option<bool>,
    pub(super) epochs: Option<u32>,
    pub(super) retries: Option<u32>,
    pub(super) model: Option<RawModel>,
}

/// `model: { script: FILE }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    pub(super) script: String,
}

/// `sandbox: true`, `sandbox: false` or `sandbox: best-effort`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawSandbox {
    Bool(bool),
    Text(String),
}

impl RawEval {
    pub(super) fn split(
        self,
    ) -> (
        String,
        Option<RawCommand>,
        Option<String>,
        Option<String>,
        RawSettings,
    ) {
        let settings = RawSettings {
            timeout: self.timeout,
            grace: self.grace,
            events: self.events,
            limits: self.limits,
            env: self.env,
            files: self.files,
            services: self.services,
            build: self.build,
            review: self.review,
            isolate_home: self.isolate_home,
            pass_env: self.pass_env,
            sandbox: self.sandbox,
            network: self.network,
            sandbox_write: self.sandbox_write,
            sandbox_read: self.sandbox_read,
            sandbox_read_only: self.sandbox_read_only,
            epochs: self.epochs,
            retries: self.retries,
            model: self.model,
        };
        (self.id, self.command, self.prompt, self.starter, settings)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) source: String,
    pub(super) target: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawService {
    pub(super) name: String,
    pub(super) command: RawCommand,
    pub(super) ready: Option<RawReady>,
    pub(super) timeout: Option<String>,
    pub(super) env: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReady {
    pub(super) file: Option<String>,
    pub(super) tcp: Option<String>,
    pub(super) command: Option<RawCommand>,
}

/// A command: an argv list, or a string run as a shell command (`sh -c`, as `--build CMD`).
pub(super) struct RawCommand(pub(super) Vec<String>);

impl RawCommand {
    /// Whether there is no program to run.
    pub(super) fn is_empty(&self) -> bool {
        self.0.first().is_none_or(String::is_empty)
    }

    pub(super) fn argv(self) -> Vec<OsString> {
        self.0.into_iter().map(OsString::from).collect()
    }
}

impl<'de> Deserialize<'de> for RawCommand {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CommandVisitor)
    }
}

struct CommandVisitor;

impl<'de> serde::de::Visitor<'de> for CommandVisitor {
    type Value = RawCommand;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an argv list like [cargo, build] or a shell command string like \"make test\"")
    }

    fn visit_str<E: serde::de::Error>(self, script: &str) -> Result<RawCommand, E> {
        if script.trim().is_empty() {
            return Ok(RawCommand(Vec::new()));
        }
        Ok(RawCommand(vec!["sh".into(), "-c".into(), script.into()]))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawCommand, A::Error> {
        let mut argv = Vec::new();
        while let Some(word) = seq.next_element::<String>()? {
            argv.push(word);
        }
        Ok(RawCommand(argv))
    }
}

/// `build:` or `review:`: `{command: …, timeout: …}`, or the command alone as a string.
pub(super) struct RawPhase {
    pub(super) command: RawCommand,
    pub(super) timeout: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhaseMap {
    command: RawCommand,
    timeout: Option<String>,
}

impl<'de> Deserialize<'de> for RawPhase {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PhaseVisitor)
    }
}

struct PhaseVisitor;

impl<'de> serde::de::Visitor<'de> for PhaseVisitor {
    type Value = RawPhase;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("{command: [...], timeout: ...} or a shell command string like \"cargo build\"")
    }

    fn visit_str<E: serde::de::Error>(self, script: &str) -> Result<RawPhase, E> {
        Ok(RawPhase {
            command: CommandVisitor.visit_str(script)?,
            timeout: None,
        })
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawPhase, A::Error> {
        let raw = RawPhaseMap::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(RawPhase {
            command: raw.command,
            timeout: raw.timeout,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) max_turns: Option<u64>,
    pub(super) max_files: Option<u64>,
    pub(super) max_output_size: Option<RawSize>,
    pub(super) max_session_actions: Option<u64>,
    pub(super) max_tokens: Option<u64>,
    pub(super) max_cost: Option<f64>,
    pub(super) max_memory: Option<RawSize>,
    pub(super) max_pids: Option<u64>,
    pub(super) cpus: Option<RawCpus>,
    pub(super) max_disk: Option<RawSize>,
}

/// `cpus: 2`, `cpus: 1.5` or `cpus: "1.5"`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawCpus {
    Number(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawSize {
    Bytes(u64),
    Text(String),
}

/// Reads the suite `text` (from `path`, which names the file in errors) into its raw shape:
/// one line per error, with the file, the line and column, and the eval and field.
pub(super) fn read(text: &str, path: &Path) -> Result<RawSuite, String> {
    let file = path.display();
    // Typed deserialization straight from the YAML keeps plain scalars as written (`y` stays
    // "y", `5` can be an argv string) and gives line and column; the path wrapper adds which
    // field failed.
    let mut failed_at: Option<String> = None;
    let parsed = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_path_to_error::deserialize::<_, RawSuite>(de).map_err(|e| {
            failed_at = Some(e.path().to_string());
            e.into_inner()
        })
    });
    match parsed {
        Ok(raw) => Ok(raw),
        Err(err) => {
            let location = err.location().map_or_else(String::new, |loc| {
                format!(":{}:{}", loc.line(), loc.column())
            });
            let message = one_line(&err.to_string());
            Err(match failed_at {
                Some(field) if field != "." && !field.is_empty() => {
                    format!(
                        "{file}{location}: {}: {message}",
                        describe_path(text, &field)
                    )
                }
                _ => format!("{file}{location}: {message}"),
            })
        }
    }
}

/// The first line of a serde-saphyr message, without its own `error: line L column C:`
/// prefix (the location is printed as `file:L:C` instead).
fn one_line(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let first = match first.split_once(": ") {
        Some((loc, rest)) if loc.starts_with("line ") && loc.contains(" column ") => rest,
        _ => first,
    };
    first.to_owned()
}

/// `evals[2].limits.max_turns` → `eval "fix" (evals[2]), field limits.max_turns`. The id is
/// looked up in a loose re-read of the text, which only happens on this error path.
fn describe_path(text: &str, path: &str) -> String {
    let Some(rest) = path.strip_prefix("evals[") else {
        return format!("field {path}");
    };
    let Some((index, field)) = rest.split_once(']') else {
        return format!("field {path}");
    };
    let tree: Option<serde_json::Value> = serde_saphyr::from_str(text).ok();
    let id = index.parse::<usize>().ok().and_then(|i| {
        tree.as_ref()?
            .get("evals")?
            .get(i)?
            .get("id")?
            .as_str()
            .map(str::to_owned)
    });
    let field = field.trim_start_matches('.');
    let field = if field.is_empty() {
        "(the eval itself)"
    } else {
        field
    };
    match id {
        Some(id) => format!("eval {id:?} (evals[{index}]), field {field}"),
        None => format!("evals[{index}], field {field}"),
    }
}
