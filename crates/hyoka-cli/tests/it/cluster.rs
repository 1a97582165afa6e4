//! The cluster examples: the Kubernetes Indexed Job's pod command run for every index and
//! then its merge command, verbatim from the YAML; the CI matrix's settings.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Scratch, hyoka_path, stderr};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_multiple::<Value>(&text).unwrap()
}

/// The document of `kind` named `name`.
fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// A Job's container `name`: its command line (command then args) and its environment.
fn container(job: &Value, name: &str) -> (Vec<String>, Vec<(String, String)>) {
    let spec = &job["spec"]["template"]["spec"];
    let container = spec["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"));
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    let mut argv = strings(&container["command"]);
    argv.extend(strings(&container["args"]));
    let env = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (argv, env)
}

/// Runs `argv` as the pod would, with the YAML's environment, where `mounts` replace the
/// variables that name mounted paths, and `hyoka` first on `PATH` (it is in the image).
fn run_pod(
    argv: &[String],
    env: &[(String, String)],
    mounts: &[(&str, &Path)],
    extra: &[(&str, String)],
) -> std::process::Output {
    let bin = Path::new(hyoka_path()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).env("PATH", path);
    for (name, value) in env {
        match mounts.iter().find(|(n, _)| n == name) {
            Some((_, local)) => cmd.env(name, local),
            None => cmd.env(name, value),
        };
    }
    for (name, value) in extra {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

/// Issue 15: the example's pods, one per index, then its merge, exactly as the YAML says.
/// Failing evals do not fail a pod (`--fail-on error`); the merge joins every shard.
#[test]
fn kubernetes_example_runs_every_index_then_merges() {
    let docs = documents(&repo().join("deploy/kubernetes/indexed-job.yaml"));
    let suite_job = find(&docs, "Job", "hyoka-suite");
    let merge_job = find(&docs, "Job", "hyoka-suite-merge");
    // The merge must not start before the shards finish, and one index's failure must not
    // fail the others.
    let init = &merge_job["spec"]["template"]["spec"]["initContainers"][0];
    let wait = init["args"][0].as_str().unwrap();
    assert!(
        wait.contains("kubectl get job hyoka-suite") && wait.contains("Complete|Failed"),
        "{wait}"
    );
    assert!(suite_job["spec"]["backoffLimitPerIndex"].as_u64().is_some());
    assert!(suite_job["spec"]["podFailurePolicy"]["rules"].is_array());
    assert_eq!(
        merge_job["spec"]["template"]["spec"]["serviceAccountName"],
        "hyoka-suite-merge"
    );
    find(&docs, "RoleBinding", "hyoka-suite-merge");
    let completions = suite_job["spec"]["completions"].as_u64().unwrap();
    let (pod, pod_env) = container(suite_job, "hyoka");
    assert!(pod.iter().any(|a| a.contains("--fail-on error")), "{pod:?}");
    let (merge, merge_env) = container(merge_job, "merge");

    let s = Scratch::new();
    let evals: String = (1..=6)
        .map(|i| {
            let code = i32::from(i % 3 == 0);
            format!("  - {{ id: e{i}, command: [sh, -c, \"exit {code}\"] }}\n")
        })
        .collect();
    let suite = s.path().join("suite.yaml");
    std::fs::write(&suite, format!("evals:\n{evals}")).unwrap();
    let mounts = [("SUITE", suite.as_path()), ("REPORTS", &s.reports())];
    for index in 0..completions {
        let out = run_pod(
            &pod,
            &pod_env,
            &mounts,
            &[("JOB_COMPLETION_INDEX", index.to_string())],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "index {index}: {}",
            stderr(&out)
        );
    }
    let out = run_pod(&merge, &merge_env, &mounts, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Two evals fail: the merged run fails, and says so in its summary.
    assert_eq!(out.status.code(), Some(1), "{}\n{stdout}", stderr(&out));
    assert!(stdout.contains("4 passed, 2 failed"), "{stdout}");
    let merged: Value =
        serde_json::from_slice(&std::fs::read(s.reports().join("merged-run.json")).unwrap())
            .unwrap();
    assert_eq!(merged["totals"]["evals"], 6);
    assert_eq!(
        merged["run_id"],
        pod_env.iter().find(|(n, _)| n == "RUN_ID").unwrap().1
    );
    assert!(merged["missing_shards"].is_null());
    s.assert_no_workspaces();
}

/// The CI matrix runs every shard to its end and uploads the reports of failing shards too;
/// the merge job runs whatever the shards did.
#[test]
fn the_ci_matrix_example_keeps_failing_shards_reports() {
    let docs = documents(&repo().join("deploy/github/suite-matrix.yml"));
    let jobs = &docs[0]["jobs"];
    assert_eq!(jobs["shards"]["strategy"]["fail-fast"], false);
    let steps = jobs["shards"]["steps"].as_array().unwrap();
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .unwrap();
    assert_eq!(upload["if"], "always()");
    let run = steps
        .iter()
        .find_map(|s| s["run"].as_str().filter(|r| r.contains("hyoka run")))
        .unwrap();
    assert!(
        run.contains("--fail-on error") && run.contains("--shard"),
        "{run}"
    );
    assert_eq!(jobs["merge"]["needs"], "shards");
    assert_eq!(jobs["merge"]["if"], "always()");
}
