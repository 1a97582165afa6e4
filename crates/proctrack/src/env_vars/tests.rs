//! Tests of the marker variables: what `marker_env` writes is what `Marker` matches.

use super::*;
use crate::discover::Marker;

/// The environment block a process started with `env` has, as `/proc/<pid>/environ` shows it.
fn environ(env: &[(OsString, OsString)]) -> Vec<u8> {
    let mut block = b"PATH=/usr/bin\0".to_vec();
    for (key, value) in env {
        block.extend_from_slice(key.as_encoded_bytes());
        block.push(b'=');
        block.extend_from_slice(value.as_encoded_bytes());
        block.push(0);
    }
    block
}

#[track_caller]
fn check(instance: Option<&Instance>, expected: &[&str]) {
    let env = marker_env("run-1", "main", instance);
    let entries: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
        .collect();
    assert_eq!(entries, expected);
    // What the writers set is what the sweeps look for.
    let block = environ(&env);
    assert!(Marker::eval("run-1", "main").matches(&block));
    assert!(!Marker::eval("run-1", "other").matches(&block));
    if let Some(instance) = instance {
        assert!(Marker::instance(instance).matches(&block));
    }
}

#[test]
fn marker_without_an_instance() {
    check(None, &["HYOKA_RUN_ID=run-1", "HYOKA_EVAL_ID=main"]);
}

#[test]
fn marker_with_an_instance() {
    let instance = Instance::new("0123456789abcdef").unwrap();
    check(
        Some(&instance),
        &[
            "HYOKA_RUN_ID=run-1",
            "HYOKA_EVAL_ID=main",
            "HYOKA_RUN_INSTANCE=0123456789abcdef",
        ],
    );
}
