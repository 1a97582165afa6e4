//! The suite's `model:` entry: the scripted model server (`hyoka model-stub serve`) started
//! as a service in the eval's own network namespace, and every agent handed the settings
//! that point it there.
//!
//! What each agent gets (verified with Claude Code 2.1.328, Codex 0.169.0 and Gemini CLI
//! 0.61.0, see the README's agent table):
//!
//! - Claude Code: `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, a fresh `CLAUDE_CONFIG_DIR`
//!   and `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`.
//! - Codex: its own `CODEX_HOME` (so a shared `codex app-server` daemon it starts lives in
//!   the eval's directory and dies with the eval's processes) holding a `config.toml` whose
//!   `model_provider` is the stub (`wire_api = "responses"`, key from
//!   `HYOKA_MODEL_STUB_KEY`).
//! - Gemini CLI: `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY`, a `GEMINI_CLI_HOME` of its own
//!   whose `.gemini/settings.json` selects the API-key auth (without it 0.61 picks the
//!   `gateway` auth for a base URL and exits 41; a system settings file under `/tmp` is
//!   refused as insecure), and `GEMINI_CLI_TRUST_WORKSPACE=true` (a fresh workspace is
//!   untrusted: exit 55 without `--skip-trust`). The settings also cap its attempts per
//!   request at 3 (`general.maxAttempts`; 0.61 makes 10 with a backoff of minutes), so a
//!   scripted 429 or 503 that lasts ends the agent in seconds, as an infrastructure error.
//! - Any OpenAI-compatible agent: `OPENAI_BASE_URL` and `OPENAI_API_KEY`.
//!
//! With `network: none` the stub listens on 127.0.0.1:8787 of the eval's namespace; on the
//! host network it gets a free loopback port of its own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyoka_proctrack::EnvVars;

use crate::settings::{Readiness, ServiceSpec};

/// A suite's `model: { script: FILE }`: run the eval against the scripted model server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStub {
    /// The script (absolute, or relative to the suite file when parsed from one).
    pub script: PathBuf,
    /// The argv that serves a script: `[<hyoka>, "model-stub", "serve"]`, which the
    /// embedding program sets (the suite parser puts `hyoka` from `PATH`).
    pub program: Vec<OsString>,
}

impl ModelStub {
    /// A stub of `script` served by `hyoka` from `PATH`.
    pub fn new(script: PathBuf) -> Self {
        Self {
            script,
            program: vec!["hyoka".into(), "model-stub".into(), "serve".into()],
        }
    }
}

/// The port the stub listens on in an eval's own network namespace.
pub const MODEL_STUB_PORT: u16 = 8787;

/// The key every agent is given (the stub accepts any).
const KEY: &str = "hyoka-model-stub";

/// The service and the agent settings for one eval.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// The stub, as a service ready when its port accepts.
    pub(crate) service: ServiceSpec,
    /// The variables every process of the eval gets.
    pub(crate) env: Vec<(OsString, OsString)>,
}

/// Writes the agents' settings into `dir` (the eval's model directory, removed with the
/// eval) and describes the stub's service, which logs every request to `log`; `isolated`:
/// the eval has a network namespace of its own.
pub(crate) fn prepare(
    stub: &ModelStub,
    dir: &Path,
    log: &Path,
    isolated: bool,
) -> std::io::Result<Prepared> {
    let port = if isolated {
        MODEL_STUB_PORT
    } else {
        // A free port of the host's loopback (a race with another program is possible, and
        // shows as a service that cannot listen).
        std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let claude = dir.join("claude");
    let codex = dir.join("codex-home");
    std::fs::create_dir_all(&claude)?;
    std::fs::create_dir_all(&codex)?;
    std::fs::write(
        codex.join("config.toml"),
        format!(
            "model_provider = \"hyoka-model-stub\"\n\n[model_providers.hyoka-model-stub]\nname = \"hyoka model stub\"\nbase_url = \"{url}/v1\"\nwire_api = \"responses\"\nenv_key = \"HYOKA_MODEL_STUB_KEY\"\n"
        ),
    )?;
    let gemini = dir.join("gemini");
    std::fs::create_dir_all(gemini.join(".gemini"))?;
    std::fs::write(
        gemini.join(".gemini/settings.json"),
        r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":3}}"#,
    )?;
    let mut command = stub.program.clone();
    command.extend([
        "--script".into(),
        stub.script.clone().into(),
        "--listen".into(),
        format!("127.0.0.1:{port}").into(),
        "--log".into(),
        log.into(),
    ]);
    let pair = |k: &str, v: OsString| (OsString::from(k), v);
    let env = vec![
        pair("ANTHROPIC_BASE_URL", url.clone().into()),
        pair("ANTHROPIC_API_KEY", KEY.into()),
        pair("CLAUDE_CONFIG_DIR", claude.into()),
        pair("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        pair("CODEX_HOME", codex.into()),
        pair(EnvVars::HYOKA_MODEL_STUB_KEY, KEY.into()),
        pair("GOOGLE_GEMINI_BASE_URL", url.clone().into()),
        pair("GEMINI_API_KEY", KEY.into()),
        pair("GEMINI_CLI_HOME", gemini.into()),
        pair("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
        pair("OPENAI_BASE_URL", format!("{url}/v1").into()),
        pair("OPENAI_API_KEY", KEY.into()),
        pair(EnvVars::HYOKA_MODEL_STUB_URL, url.into()),
    ];
    Ok(Prepared {
        service: ServiceSpec {
            name: "model".to_owned(),
            command,
            ready: Readiness::Tcp(format!("127.0.0.1:{port}")),
            timeout: Duration::from_secs(30),
            env: Vec::new(),
        },
        env,
    })
}

#[cfg(test)]
mod tests;
