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
