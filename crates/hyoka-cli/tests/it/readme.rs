//! The README's examples run as written: the Aider wrapper (extracted from README.md, with a
//! stand-in `aider` on `PATH`) under `--events jsonl`, and the GitHub matrix
//! (`deploy/github/suite-matrix.yml`, which the README points to): every shard's `run:`
//! step, the artifacts' upload and download done by copying, then the merge job's steps,
//! with `${{ matrix.shard }}` and `${{ github.run_id }}` filled in as Actions would.
//! The Kubernetes example runs in `cluster.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Scratch, hyoka_path, read_json, stderr};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The body of the README's fenced `sh` block whose second line starts with `marker`.
fn readme_block(marker: &str) -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    readme
        .split("```sh\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").unwrap()])
        .find(|block| block.lines().nth(1).is_some_and(|l| l.starts_with(marker)))
        .unwrap_or_else(|| panic!("no README block opening with {marker:?}"))
        .to_owned()
}

/// `PATH` with hyoka's directory and `extra` first.
fn path_with(extra: &Path) -> String {
    let bin = Path::new(hyoka_path()).parent().unwrap();
    format!(
        "{}:{}:{}",
        extra.display(),
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The README's Aider wrapper counts one turn per `aider --message` round through
/// `$HYOKA_EVENTS` (absolute, whatever the directory `--reports` is relative to), and a
/// failing round fails the trial.
#[test]
fn the_aider_wrapper_counts_a_turn_per_round() {
    let s = Scratch::new();
    let wrapper = readme_block("# agent.sh");
    let agent = s.path().join("agent.sh");
    std::fs::write(&agent, &wrapper).unwrap();
    // A stand-in for aider: does what the message says, in the workspace.
    let bin = s.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let aider = bin.join("aider");
    std::fs::write(
        &aider,
        "#!/bin/sh\n[ \"$1\" = --yes-always ] && [ \"$2\" = --message ] || exit 64\nsh -c \"$3\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&aider, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cwd = s.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    for (run_id, second, code, turns) in [("ok", "echo b > b.txt", 0, 2), ("bad", "exit 3", 1, 2)] {
        let out = Command::new(hyoka_path())
            .current_dir(&cwd)
            .env("PATH", path_with(&bin))
            .args([
                "run",
                "--run-id",
                run_id,
                "--events",
                "jsonl",
                "--workspace-root",
            ])
            .arg(s.ws_root())
            .arg("--")
            .arg("sh")
            .arg(&agent)
            .args(["echo a > a.txt", second])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{run_id}: {}", stderr(&out));
        let report = read_json(&cwd.join("reports").join(run_id).join("main/report.json"));
        assert_eq!(report["counts"]["turns"], turns, "{run_id}: {report}");
        if code == 0 {
            assert_eq!(report["counts"]["files"], 2, "{report}");
        }
    }
    s.assert_no_workspaces();
}

/// The `run:` text of the step named `name` (or the first that contains `name`).
fn step<'a>(steps: &'a [Value], name: &str) -> &'a str {
    steps
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .and_then(|s| s["run"].as_str())
        .unwrap_or_else(|| panic!("no step {name:?}"))
}

/// `run` with the Actions expressions filled in.
fn fill(run: &str, shard: u32, run_id: &str) -> String {
    run.replace("${{ matrix.shard }}", &shard.to_string())
        .replace("${{ github.run_id }}", run_id)
}

fn bash(dir: &Path, script: &str, env: &[(&str, &Path)]) -> std::process::Output {
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-c", script])
        .current_dir(dir)
        .env("PATH", path_with(Path::new("/nonexistent")));
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

/// The GitHub matrix: four shards run their step as written (a failing eval does not fail a
/// shard, `--fail-on error`), their reports travel as artifacts, and the merge job merges
/// them and writes the Markdown step summary and the JUnit file.
#[test]
fn the_github_matrix_runs_its_steps_as_written() {
    let text = std::fs::read_to_string(repo().join("deploy/github/suite-matrix.yml")).unwrap();
    let doc: Value = serde_saphyr::from_str(&text).unwrap();
    let jobs = &doc["jobs"];
    let shards: Vec<u32> = jobs["shards"]["strategy"]["matrix"]["shard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| u32::try_from(v.as_u64().unwrap()).unwrap())
        .collect();
    let shard_steps = jobs["shards"]["steps"].as_array().unwrap();
    let merge_steps = jobs["merge"]["steps"].as_array().unwrap();
    let s = Scratch::new();
    let run_id = "4242";
    let evals: String = (1..=8)
        .map(|i| {
            format!(
                "  - {{ id: e{i}, command: [sh, -c, \"exit {}\"] }}\n",
                i32::from(i % 4 == 0)
            )
        })
        .collect();
    let merge_dir = s.path().join("merge");
    for &shard in &shards {
        let checkout = s.path().join(format!("runner-{shard}"));
        std::fs::create_dir_all(&checkout).unwrap();
        std::fs::write(checkout.join("suite.yaml"), format!("evals:\n{evals}")).unwrap();
        let out = bash(
            &checkout,
            &fill(step(shard_steps, "Run shard"), shard, run_id),
            &[],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "shard {shard}: {}",
            stderr(&out)
        );
        // upload-artifact `reports` as shard-N, download-artifact into shards/shard-N.
        let artifact = merge_dir.join("shards").join(format!("shard-{shard}"));
        std::fs::create_dir_all(&artifact).unwrap();
        let copied = Command::new("cp")
            .arg("-a")
            .arg(checkout.join("reports").join(run_id))
            .arg(&artifact)
            .status()
            .unwrap();
        assert!(copied.success());
    }
    let summary = merge_dir.join("step-summary.md");
    let out = bash(
        &merge_dir,
        &fill(step(merge_steps, "Merge"), 0, run_id),
        &[],
    );
    // Two evals fail: the merged run fails, which fails the merge step.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = bash(
        &merge_dir,
        &fill(step(merge_steps, "Summary"), 0, run_id),
        &[("GITHUB_STEP_SUMMARY", summary.as_path())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("**Pass rate 75.0% of 8 trials**"), "{md}");
    let junit = std::fs::read_to_string(merge_dir.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 8, "{junit}");
    assert_eq!(junit.matches("<failure ").count(), 2, "{junit}");
    let merged = read_json(&merge_dir.join("merged-run.json"));
    assert_eq!(merged["totals"]["evals"], 8);
}
