//! Tests of `task.toml` reading: Harbor's defaults, the deprecated size strings, networks,
//! environment templates, and refusals of values of the wrong type or out of range.

use std::time::Duration;

use super::*;

#[track_caller]
fn check(text: &str) -> TaskConfig {
    TaskConfig::parse(text).unwrap_or_else(|e| panic!("{text:?} should parse: {e}"))
}

#[track_caller]
fn refuse(text: &str, needle: &str) {
    let err = TaskConfig::parse(text).expect_err("should be refused");
    assert!(err.contains(needle), "{err:?} should mention {needle:?}");
}

#[test]
fn an_empty_file_takes_harbors_defaults() {
    let config = check("");
    assert_eq!(config.agent_timeout, None);
    assert_eq!(config.verifier_timeout, DEFAULT_VERIFIER_TIMEOUT);
    assert_eq!(config.environment.cpus, 1);
    assert_eq!(config.environment.memory_mb, 2048);
    assert_eq!(config.environment.storage_mb, 10240);
    assert_eq!(config.environment.network, TaskNetwork::Public);
    assert!(!config.multi_step);
}

#[test]
fn the_cookbook_simple_task_reads_as_written() {
    let text = include_str!("../../../tests/fixtures/harbor/cookbook/simple-task/task.toml");
    let config = check(text);
    assert_eq!(config.agent_timeout, Some(Duration::from_mins(2)));
    assert_eq!(config.verifier_timeout, Duration::from_mins(2));
    assert_eq!(config.environment.build_timeout, Duration::from_mins(10));
    assert_eq!(config.environment.memory_mb, 2048);
}

#[test]
fn a_terminal_bench_2_task_toml_reads_with_its_metadata_ignored() {
    // The shape of Terminal-Bench 2's task.toml files (metadata, deprecated sizes, a
    // prebuilt image); unknown keys are ignored as Harbor's models ignore them.
    let config = check(
        r#"version = "1.0"
[metadata]
author_name = "someone"
difficulty = "medium"
tags = ["coding"]
expert_time_estimate_min = 60.0
[verifier]
timeout_sec = 900.0
[agent]
timeout_sec = 1800.0
[environment]
build_timeout_sec = 600.0
docker_image = "alexgshaw/example:20251031"
cpus = 2
memory = "4G"
storage = "10G"
"#,
    );
    assert_eq!(config.agent_timeout, Some(Duration::from_mins(30)));
    assert_eq!(config.environment.cpus, 2);
    assert_eq!(config.environment.memory_mb, 4096);
    assert_eq!(config.environment.storage_mb, 10240);
    assert_eq!(
        config.environment.docker_image.as_deref(),
        Some("alexgshaw/example:20251031")
    );
}

#[test]
fn sizes_read_as_harbor_reads_them() {
    for (text, mb) in [("512M", 512), ("1.5G", 1536), ("2048K", 2), ("2g", 2048)] {
        let config = check(&format!("[environment]\nmemory = {text:?}\n"));
        assert_eq!(config.environment.memory_mb, mb, "{text}");
    }
    refuse("[environment]\nmemory = \"4GB\"\n", "environment.memory");
    refuse("[environment]\nmemory = \"lots\"\n", "environment.memory");
    // memory_mb wins over the deprecated field.
    let config = check("[environment]\nmemory_mb = 100\nmemory = \"4G\"\n");
    assert_eq!(config.environment.memory_mb, 100);
}

#[test]
fn networks_follow_allow_internet_and_network_mode() {
    assert_eq!(
        check("[environment]\nallow_internet = false\n")
            .environment
            .network,
        TaskNetwork::None
    );
    assert_eq!(
        check("[environment]\nnetwork_mode = \"no-network\"\n")
            .environment
            .network,
        TaskNetwork::None
    );
    assert_eq!(
        check("[environment]\nallow_internet = false\nnetwork_mode = \"public\"\n")
            .environment
            .network,
        TaskNetwork::Public
    );
    assert_eq!(
        check("[environment]\nallowed_hosts = [\"pypi.org\"]\n")
            .environment
            .network,
        TaskNetwork::Allowlist(vec!["pypi.org".into()])
    );
    refuse(
        "[environment]\nnetwork_mode = \"offline\"\n",
        "network_mode",
    );
}

#[test]
fn environment_values_may_come_from_the_host() {
    let config = check(
        "[verifier.env]\nKEY = \"${API_KEY}\"\nMODE = \"${MODE:-fast}\"\nPLAIN = \"x${Y}\"\n",
    );
    let host = |name: &str| (name == "API_KEY").then(|| "sk-1".to_owned());
    let resolved: Vec<_> = config
        .verifier_env
        .iter()
        .map(|(k, v)| (k.clone(), v.resolve(&host)))
        .collect();
    assert_eq!(
        resolved,
        vec![
            ("KEY".to_owned(), Ok("sk-1".to_owned())),
            ("MODE".to_owned(), Ok("fast".to_owned())),
            ("PLAIN".to_owned(), Ok("x${Y}".to_owned())),
        ]
    );
    let unset = |_: &str| None;
    assert_eq!(
        config.verifier_env[0].1.resolve(&unset),
        Err("API_KEY".to_owned())
    );
}

#[test]
fn users_other_than_root_are_kept() {
    let config = check("[agent]\nuser = \"agent\"\n[verifier]\nuser = 0\n");
    assert_eq!(config.agent_user.as_deref(), Some("agent"));
    assert_eq!(config.verifier_user, None);
}

#[test]
fn bad_values_are_refused_naming_the_field() {
    refuse("[agent]\ntimeout_sec = -1\n", "agent.timeout_sec");
    refuse("[agent]\ntimeout_sec = nan\n", "agent.timeout_sec");
    refuse("[verifier]\ntimeout_sec = 1e12\n", "too long");
    refuse(
        "[agent]\ntimeout_sec = \"ten\"\n",
        "agent.timeout_sec: invalid type: string \"ten\", expected f64 (line 2, column 15)",
    );
    refuse("[environment]\ncpus = 0\n", "environment.cpus");
    refuse("[environment]\ngpus = -1\n", "environment.gpus");
    refuse(
        "[environment.env]\n\"A=B\" = \"x\"\n",
        "not a variable name",
    );
    refuse(
        "[environment]\nenv = { A = 1 }\n",
        "environment.env.A: invalid type: integer",
    );
    refuse("this is not toml", "(line 1, column");
}

#[test]
fn steps_mark_a_multi_step_task() {
    assert!(check("[[steps]]\nname = \"one\"\n").multi_step);
}
