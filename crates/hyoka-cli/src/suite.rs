//! Suite files: YAML with `defaults:` and `evals:`, validated completely before anything
//! runs.
//!
//! ```yaml
//! defaults:
//!   timeout: 10m
//!   grace: 5s
//!   events: stream-json
//!   limits: { max_turns: 25, max_files: 50, max_output_size: 1MiB, max_session_actions: 50 }
//!   env: { MODE: eval }
//! evals:
//!   - id: fix-bug
//!     command: [claude, -p, "fix the failing test"]
//!     starter: starters/bug    # relative to the suite file
//!     timeout: 5m
//!     limits: { max_turns: 10 }
//!     env: { EXTRA: "1" }
//! ```
//!
//! Parsing runs in two steps so every error can be precise: the YAML is read into a
//! generic tree (syntax errors carry line and column), then deserialized into typed
//! structs with unknown keys denied (errors carry the field path, which names the eval).

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyoka_workspace::EvalId;
use serde::Deserialize;

use crate::events::EventSource;
use crate::limits::PartialLimits;
use crate::units::{parse_duration, parse_size};

/// A validated suite.
#[derive(Debug, Clone)]
pub(crate) struct Suite {
    pub(crate) defaults: Settings,
    pub(crate) evals: Vec<SuiteEval>,
}

/// Settings at one level (defaults or eval); unset fields fall through.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    pub(crate) timeout: Option<Duration>,
    pub(crate) grace: Option<Duration>,
    pub(crate) events: Option<EventSource>,
    pub(crate) limits: PartialLimits,
    pub(crate) env: Vec<(OsString, OsString)>,
}

/// One validated eval.
#[derive(Debug, Clone)]
pub(crate) struct SuiteEval {
    pub(crate) id: EvalId,
    pub(crate) command: Vec<OsString>,
    pub(crate) starter: Option<PathBuf>,
    pub(crate) settings: Settings,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    #[serde(default)]
    defaults: RawSettings,
    evals: Vec<RawEval>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    timeout: Option<String>,
    grace: Option<String>,
    events: Option<String>,
    limits: Option<RawLimits>,
    env: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEval {
    id: String,
    command: Vec<String>,
    starter: Option<String>,
    timeout: Option<String>,
    grace: Option<String>,
    events: Option<String>,
    limits: Option<RawLimits>,
    env: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    max_turns: Option<u64>,
    max_files: Option<u64>,
    max_output_size: Option<RawSize>,
    max_session_actions: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawSize {
    Bytes(u64),
    Text(String),
}

/// Reads and validates the suite at `path`. The error is one line naming the file, and the
/// eval and field where there is one.
pub(crate) fn load(path: &Path) -> Result<Suite, String> {
    let file = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read suite {file}: {e}"))?;
    // Typed deserialization straight from the YAML keeps plain scalars as written (`y` stays
    // "y", `5` can be an argv string) and gives line and column; the path wrapper adds which
    // field failed.
    let mut failed_at: Option<String> = None;
    let parsed = serde_saphyr::with_deserializer_from_str(&text, |de| {
        serde_path_to_error::deserialize::<_, RawSuite>(de).map_err(|e| {
            failed_at = Some(e.path().to_string());
            e.into_inner()
        })
    });
    let raw = match parsed {
        Ok(raw) => raw,
        Err(err) => {
            let location = err.location().map_or_else(String::new, |loc| {
                format!(":{}:{}", loc.line(), loc.column())
            });
            let message = one_line(&err.to_string());
            return Err(match failed_at {
                Some(field) if field != "." && !field.is_empty() => {
                    format!(
                        "{file}{location}: {}: {message}",
                        describe_path(&text, &field)
                    )
                }
                _ => format!("{file}{location}: {message}"),
            });
        }
    };
    let base = path.parent().unwrap_or(Path::new("."));
    validate(raw, base).map_err(|e| format!("{file}: {e}"))
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

fn validate(raw: RawSuite, base: &Path) -> Result<Suite, String> {
    let defaults = settings(
        raw.defaults.timeout,
        raw.defaults.grace,
        raw.defaults.events,
        raw.defaults.limits,
        raw.defaults.env,
    )
    .map_err(|(field, e)| format!("defaults, field {field}: {e}"))?;
    if raw.evals.is_empty() {
        return Err("field evals: the suite has no evals".to_owned());
    }
    let mut seen = HashSet::new();
    let mut evals = Vec::with_capacity(raw.evals.len());
    for (index, eval) in raw.evals.into_iter().enumerate() {
        let name = format!("eval {:?} (evals[{index}])", eval.id);
        let id = EvalId::new(eval.id.clone()).map_err(|e| format!("{name}, field id: {e}"))?;
        if !seen.insert(eval.id.clone()) {
            return Err(format!("{name}, field id: duplicate eval id {:?}", eval.id));
        }
        if eval.command.first().is_none_or(String::is_empty) {
            return Err(format!("{name}, field command: the command is empty"));
        }
        let starter = match eval.starter {
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
        let settings = settings(eval.timeout, eval.grace, eval.events, eval.limits, eval.env)
            .map_err(|(field, e)| format!("{name}, field {field}: {e}"))?;
        evals.push(SuiteEval {
            id,
            command: eval.command.into_iter().map(OsString::from).collect(),
            starter,
            settings,
        });
    }
    Ok(Suite { defaults, evals })
}

fn settings(
    timeout: Option<String>,
    grace: Option<String>,
    events: Option<String>,
    limits: Option<RawLimits>,
    env: Option<BTreeMap<String, String>>,
) -> Result<Settings, (&'static str, String)> {
    let timeout = timeout
        .map(|t| parse_duration(&t))
        .transpose()
        .map_err(|e| ("timeout", e))?;
    let grace = grace
        .map(|t| parse_duration(&t))
        .transpose()
        .map_err(|e| ("grace", e))?;
    let events = events
        .map(|e| e.parse())
        .transpose()
        .map_err(|e| ("events", e))?;
    let limits = match limits {
        None => PartialLimits::default(),
        Some(raw) => PartialLimits {
            max_turns: raw.max_turns,
            max_files: raw.max_files,
            max_output_size: match raw.max_output_size {
                None => None,
                Some(RawSize::Bytes(bytes)) => Some(bytes),
                Some(RawSize::Text(text)) => {
                    Some(parse_size(&text).map_err(|e| ("limits.max_output_size", e))?)
                }
            },
            max_session_actions: raw.max_session_actions,
        },
    };
    let mut env_pairs = Vec::new();
    for (key, value) in env.unwrap_or_default() {
        if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
            return Err(("env", format!("invalid variable name {key:?}")));
        }
        if key.starts_with("HYOKA_") {
            return Err((
                "env",
                format!("{key} is set by hyoka and cannot be overridden"),
            ));
        }
        env_pairs.push((OsString::from(key), OsString::from(value)));
    }
    Ok(Settings {
        timeout,
        grace,
        events,
        limits,
        env: env_pairs,
    })
}

/// `--shard I/N`: the 1-based shard `I` of `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl Shard {
    /// Whether the eval at `position` (0-based, in suite order) belongs to this shard.
    /// Evals are dealt round-robin, so shards differ in size by at most one and together
    /// cover the suite exactly once.
    pub fn includes(self, position: usize) -> bool {
        position % self.count == self.index - 1
    }
}

/// Parses `I/N` with `1 <= I <= N`.
pub(crate) fn parse_shard(text: &str) -> Result<Shard, String> {
    let err = || format!("invalid shard {text:?}: expected I/N with 1 <= I <= N, for example 2/4");
    let (index, count) = text.split_once('/').ok_or_else(err)?;
    let index: usize = index.trim().parse().map_err(|_| err())?;
    let count: usize = count.trim().parse().map_err(|_| err())?;
    if index == 0 || count == 0 || index > count {
        return Err(err());
    }
    Ok(Shard { index, count })
}

#[cfg(test)]
mod tests;
