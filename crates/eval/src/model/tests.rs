//! The model entry's settings: files written, variables handed over, the service's argv.

use std::ffi::OsString;
use std::path::PathBuf;

use super::*;

#[test]
fn an_isolated_eval_gets_the_fixed_port_and_every_agent_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    let stub = ModelStub {
        script: PathBuf::from("/s/script.yaml"),
        program: vec!["/bin/hyoka".into(), "model-stub".into(), "serve".into()],
    };
    let prepared = prepare(&stub, dir.path(), &dir.path().join("log"), true).unwrap();
    let env = |key: &str| {
        prepared
            .env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    assert_eq!(
        env("ANTHROPIC_BASE_URL").as_deref(),
        Some("http://127.0.0.1:8787")
    );
    assert_eq!(
        env("GOOGLE_GEMINI_BASE_URL").as_deref(),
        Some("http://127.0.0.1:8787")
    );
    assert_eq!(
        env("OPENAI_BASE_URL").as_deref(),
        Some("http://127.0.0.1:8787/v1")
    );
    let codex = PathBuf::from(env("CODEX_HOME").unwrap());
    let config = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    assert!(
        config.contains("base_url = \"http://127.0.0.1:8787/v1\""),
        "{config}"
    );
    assert!(config.contains("wire_api = \"responses\""), "{config}");
    let gemini = PathBuf::from(env("GEMINI_CLI_HOME").unwrap());
    let settings = std::fs::read_to_string(gemini.join(".gemini/settings.json")).unwrap();
    assert!(settings.contains("gemini-api-key"), "{settings}");
    assert!(settings.contains(r#""maxAttempts":3"#), "{settings}");
    assert!(PathBuf::from(env("CLAUDE_CONFIG_DIR").unwrap()).is_dir());
    let argv: Vec<OsString> = prepared.service.command.clone();
    assert_eq!(
        argv[..3],
        ["/bin/hyoka", "model-stub", "serve"].map(OsString::from)
    );
    assert!(argv.iter().any(|a| a == "127.0.0.1:8787"), "{argv:?}");
    assert_eq!(
        prepared.service.ready,
        Readiness::Tcp("127.0.0.1:8787".into())
    );
}

#[test]
fn on_the_host_network_the_stub_gets_a_free_port() {
    let dir = tempfile::tempdir().unwrap();
    let prepared = prepare(
        &ModelStub::new("/s.yaml".into()),
        dir.path(),
        &dir.path().join("log"),
        false,
    )
    .unwrap();
    let Readiness::Tcp(addr) = &prepared.service.ready else {
        panic!("a TCP readiness");
    };
    assert_ne!(addr, "127.0.0.1:8787");
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
}
