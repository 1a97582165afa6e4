//! Tests of suite files: validation before anything runs, errors that name the field.

use super::*;

#[track_caller]
fn check_error(yaml: &str, expected: &str) {
    let err = Suite::from_yaml(yaml, Path::new("/suites/s.yaml")).unwrap_err();
    let text = err.to_string();
    assert!(err.is_bad_input(), "{text}");
    assert!(text.contains(expected), "{text}\nexpected: {expected}");
    assert!(text.starts_with("/suites/s.yaml"), "{text}");
}

#[test]
fn every_error_names_the_file_the_eval_and_the_field() {
    check_error("evals: []", "field evals: the suite has no evals");
    check_error(
        "evals:\n  - id: fix\n    command: [x]\n    limits: { max_turns: lots }\n",
        "eval \"fix\" (evals[0]), field limits.max_turns",
    );
    check_error(
        "evals:\n  - id: a\n    command: [x]\n  - id: a\n    command: [y]\n",
        "duplicate eval id \"a\"",
    );
    check_error(
        "evals:\n  - id: a\n    command: [x]\n    timeout: soon\n",
        "invalid duration \"soon\"",
    );
    check_error("defaults: { colour: red }\nevals: []\n", "colour");
}

#[test]
fn specs_apply_the_levels_and_the_shard() {
    let yaml = "defaults: { timeout: 30s, limits: { max_turns: 5 } }\n\
                evals:\n  - id: a\n    command: [x]\n    limits: { max_turns: 2 }\n\
                \n  - id: b\n    command: [y]\n  - id: c\n    command: [z]\n";
    let suite = Suite::from_yaml(yaml, Path::new("s.yaml")).unwrap();
    let cli = Settings {
        timeout: Some(std::time::Duration::from_secs(1)),
        ..Settings::default()
    };
    let specs = suite.specs(&cli, None);
    let turns: Vec<u64> = specs.iter().map(|s| s.limits.max_turns).collect();
    assert_eq!(turns, [2, 5, 5]);
    assert!(
        specs
            .iter()
            .all(|s| s.timeout == std::time::Duration::from_secs(1))
    );
    let second: Vec<String> = suite
        .specs(&Settings::default(), Some(Shard { index: 2, count: 2 }))
        .iter()
        .map(|s| s.eval_id.to_string())
        .collect();
    assert_eq!(second, ["b"]);
}

#[test]
fn sandbox_fields_resolve_and_bad_ones_are_refused() {
    let yaml = "defaults: { sandbox: true, network: none }\n\
                evals:\n  - id: a\n    command: [x]\n\
                \n  - id: b\n    command: [y]\n    sandbox: best-effort\n    sandbox_write: [/tmp]\n    sandbox_read_only: true\n\
                \n  - id: c\n    command: [z]\n    sandbox: false\n    network: host\n";
    let suite = Suite::from_yaml(yaml, Path::new("s.yaml")).unwrap();
    let specs = suite.specs(&Settings::default(), None);
    let got: Vec<(&str, &str, bool, usize)> = specs
        .iter()
        .map(|s| {
            (
                s.sandbox.mode.as_str(),
                s.sandbox.network.as_str(),
                s.sandbox.read_only,
                s.sandbox.write.len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("on", "none", false, 0),
            ("best-effort", "none", true, 1),
            ("off", "host", false, 0),
        ]
    );
    check_error(
        "evals:\n  - id: a\n    command: [x]\n    sandbox: maybe\n",
        "eval \"a\" (evals[0]), field sandbox: invalid sandbox \"maybe\"",
    );
    check_error(
        "evals:\n  - id: a\n    command: [x]\n    network: wifi\n",
        "field network: invalid network \"wifi\"",
    );
    check_error(
        "defaults: { sandbox_write: [/nonexistent/hyoka-cache] }\nevals:\n  - id: a\n    command: [x]\n",
        "defaults, field sandbox_write: /nonexistent/hyoka-cache does not exist",
    );
}

#[test]
fn agents_run_every_eval_without_a_command_with_its_prompt() {
    let yaml = r#"
agents:
  claude: [claude, -p, "{prompt}"]
  codex: [codex, exec, "--prompt={prompt}"]
defaults: { epochs: 3, retries: 1, limits: { max_tokens: 1000, max_cost: 0.5 } }
evals:
  - id: fix
    prompt: fix the test
  - id: own
    command: "echo {prompt}"
    prompt: hi
    epochs: 1
"#;
    let suite = Suite::from_yaml(yaml, Path::new("s.yaml")).unwrap();
    let specs = suite.specs(&Settings::default(), None);
    let got: Vec<(String, Option<String>, Vec<String>, u32)> = specs
        .iter()
        .map(|s| {
            (
                s.eval_id.to_string(),
                s.agent.clone(),
                s.command
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
                s.epochs,
            )
        })
        .collect();
    let strings = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        got,
        [
            (
                "fix".to_owned(),
                Some("claude".to_owned()),
                strings(&["claude", "-p", "fix the test"]),
                3
            ),
            (
                "fix".to_owned(),
                Some("codex".to_owned()),
                strings(&["codex", "exec", "--prompt=fix the test"]),
                3
            ),
            ("own".to_owned(), None, strings(&["sh", "-c", "echo hi"]), 1),
        ]
    );
    assert!(specs.iter().all(|s| s.retries == 1));
    assert_eq!(
        (specs[0].limits.max_tokens, specs[0].limits.max_cost),
        (1000, 0.5)
    );
    // A shard takes whole evals, with all their agents.
    let first = suite.specs(&Settings::default(), Some(Shard { index: 1, count: 2 }));
    assert_eq!(first.len(), 2);
    // The identity covers every eval whatever the shard, and changes with the settings.
    let identity = suite.identity(&Settings::default()).unwrap();
    assert_eq!(identity.len(), 64);
    let stricter = Settings {
        epochs: Some(5),
        ..Settings::default()
    };
    assert_ne!(suite.identity(&stricter).unwrap(), identity);
}

#[test]
fn agents_prompts_epochs_and_costs_are_checked() {
    check_error(
        "evals:\n  - id: a\n",
        "eval \"a\" (evals[0]), field command: the eval has no command and the suite names no agents",
    );
    check_error(
        "agents: { x: [x, \"{prompt}\"] }\nevals:\n  - id: a\n",
        "eval \"a\" (evals[0]), field prompt: the command uses {prompt} but the eval sets no prompt",
    );
    check_error(
        "agents: { \"../x\": [x] }\nevals:\n  - id: a\n",
        "agents, \"../x\": an agent's name is 1 to 32",
    );
    check_error(
        "agents: { x: [] }\nevals:\n  - id: a\n",
        "agents, \"x\": the command is empty",
    );
    check_error(
        "evals:\n  - id: a\n    command: [x]\n    epochs: 0\n",
        "eval \"a\" (evals[0]), field epochs: 0 is not 1 to 10000",
    );
    check_error(
        "defaults: { retries: 101 }\nevals:\n  - id: a\n    command: [x]\n",
        "defaults, field retries: 101 is more than 100",
    );
    check_error(
        "evals:\n  - id: a\n    command: [x]\n    limits: { max_cost: -1 }\n",
        "field limits.max_cost: -1 is not a cost in dollars",
    );
}
