//! The cluster examples: the Kubernetes Indexed Job's pod command run for every index and
//! then its merge command, verbatim from the YAML, and its documents validated against the
//! Kubernetes schemas; the CI matrix's settings; the Slurm array of `docs/cluster.md` on a
//! real Slurm.

use std::fmt::Write as _;
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
    // The CI formats beside it, with the merged run's figures.
    let summary = std::fs::read_to_string(s.reports().join("summary.md")).unwrap();
    assert!(
        summary.contains("**Pass rate 66.7% of 6 trials**"),
        "{summary}"
    );
    let junit = std::fs::read_to_string(s.reports().join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 6, "{junit}");
    assert_eq!(junit.matches("<failure ").count(), 2, "{junit}");
    s.assert_no_workspaces();
}

/// The schema of a document's kind, from the stored Kubernetes schemas (see
/// `tests/fixtures/kubernetes/README.md`), with their shared definitions registered under
/// the `$id` the kind files refer to; nothing is fetched.
fn kubernetes_validator(doc: &Value) -> jsonschema::Validator {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kubernetes/v1.33.0-local-strict");
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
    };
    let kind = doc["kind"].as_str().unwrap().to_lowercase();
    let api = doc["apiVersion"].as_str().unwrap();
    // `batch/v1` is `job-batch-v1.json`; the core group's `v1` is `serviceaccount-v1.json`;
    // `rbac.authorization.k8s.io/v1` is `role-rbac-v1.json`.
    let file = match api.split_once('/') {
        Some((group, version)) => {
            format!("{kind}-{}-{version}.json", group.split('.').next().unwrap())
        }
        None => format!("{kind}-{api}.json"),
    };
    let registry = jsonschema::Registry::new()
        .add(
            "https://kubernetes.io/api/_definitions.json",
            read("_definitions.json"),
        )
        .unwrap()
        .prepare()
        .unwrap();
    jsonschema::options()
        .with_registry(&registry)
        .build(&read(&file))
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The schema's errors for `doc`, one line each.
fn schema_errors(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Issue 28: every document of the Kubernetes example is valid against the Kubernetes
/// v1.33 schemas (strict: no field the API does not have), and the same schemas reject a
/// misspelt field and a wrong type, so the check can fail.
#[test]
fn kubernetes_manifests_validate_against_the_schemas() {
    let docs = documents(&repo().join("deploy/kubernetes/indexed-job.yaml"));
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        vec!["Job", "ServiceAccount", "Role", "RoleBinding", "Job"]
    );
    for doc in &docs {
        let validator = kubernetes_validator(doc);
        let errors = schema_errors(&validator, doc);
        assert!(
            errors.is_empty(),
            "{} {}: {errors:#?}",
            doc["kind"],
            doc["metadata"]["name"]
        );
    }
    let job = find(&docs, "Job", "hyoka-suite");
    let validator = kubernetes_validator(job);
    let mut misspelt = job.clone();
    let spec = misspelt["spec"].as_object_mut().unwrap();
    let limit = spec.remove("backoffLimitPerIndex").unwrap();
    spec.insert("backoffLimitPerIndx".to_owned(), limit);
    let errors = schema_errors(&validator, &misspelt);
    assert!(
        errors.iter().any(|e| e.contains("backoffLimitPerIndx")),
        "{errors:#?}"
    );
    let mut wrong = job.clone();
    wrong["spec"]["completions"] = Value::from("four");
    let errors = schema_errors(&validator, &wrong);
    assert!(
        errors.iter().any(|e| e.starts_with("/spec/completions")),
        "{errors:#?}"
    );
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

/// Whether a Slurm controller answers here (`.ci/slurm start` makes one); with
/// `HYOKA_SLURM=1` (the `slurm` stage of `.ci/run`) it must.
fn slurm() -> bool {
    let up = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if !up {
        assert!(
            std::env::var_os("HYOKA_SLURM").is_none(),
            "HYOKA_SLURM is set but no Slurm controller answers (SLURM_CONF={:?})",
            std::env::var_os("SLURM_CONF")
        );
        eprintln!("skipping: no Slurm controller answers here (`.ci/slurm start` starts one)");
    }
    up
}

/// The fenced `sh` blocks of `docs/cluster.md`'s Slurm section, by the name on their second
/// line (`# shard.sbatch: …`).
fn slurm_scripts() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(repo().join("docs/cluster.md")).unwrap();
    let section = &doc[doc.find("## Slurm\n").unwrap()..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut scripts = Vec::new();
    let mut rest = section;
    while let Some(start) = rest.find("```sh\n") {
        let body = &rest[start + 6..];
        let end = body.find("```").unwrap();
        let script = &body[..end];
        if let Some(name) = script
            .lines()
            .nth(1)
            .and_then(|l| l.strip_prefix("# "))
            .and_then(|l| l.split(':').next())
        {
            scripts.push((name.to_owned(), script.to_owned()));
        }
        rest = &body[end + 3..];
    }
    scripts
}

/// Cancels the test's jobs (by their ids) when it ends, however it ends.
struct Cancel(Vec<String>);

impl Drop for Cancel {
    fn drop(&mut self) {
        for id in &self.0 {
            let _ = Command::new("scancel").arg(id).output();
        }
    }
}

/// `scontrol show job -o ID`: one line per job (each array task), as `key=value` maps.
fn jobs(id: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let out = Command::new("scontrol")
        .args(["show", "job", "-o", id])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            line.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

fn scontrol(args: &[&str]) {
    let out = Command::new("scontrol").args(args).output().unwrap();
    assert!(out.status.success(), "scontrol {args:?}: {}", stderr(&out));
}

/// Polls `ok` until it holds, bounded by two minutes (Slurm schedules within seconds once a
/// job is eligible; the bound only keeps a broken cluster from hanging the test).
fn slurm_wait(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(2);
    while !ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Waits until every job of `id` (each array task) is in a final state; returns them.
fn wait_done(id: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut all = Vec::new();
    slurm_wait(&format!("job {id} to end"), || {
        all = jobs(id);
        !all.is_empty()
            && all.iter().all(|j| {
                matches!(
                    j.get("JobState").map(String::as_str),
                    Some("COMPLETED" | "FAILED" | "CANCELLED" | "TIMEOUT" | "NODE_FAIL")
                )
            })
    });
    all
}

/// The docs' Slurm array, as written, on a real Slurm: shards scheduled by Slurm, a shard
/// cancelled with `scancel` and requeued resumes, the merge waits for the whole array
/// (`afterany`), and the merged page covers every eval.
#[test]
fn slurm_array_shards_requeues_and_merges() {
    if !slurm() {
        return;
    }
    let scripts = slurm_scripts();
    let names: Vec<&str> = scripts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["shard.sbatch", "merge.sbatch", "submit.sh"]);
    let s = Scratch::new();
    for (name, script) in &scripts {
        std::fs::write(s.path().join(name), script).unwrap();
    }
    // Eight evals over four shards (dealt round-robin): shard 1 runs `quick` (eval 1), then
    // `hold` (eval 5); shard 2 runs `e2`, then `hold2` (eval 6). Both holds wait until the test
    // releases them, so the array is still running (shard 2) while shard 1 is cancelled and
    // requeued.
    let marks = s.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let hold = |name: &str| {
        format!(
            "[sh, -c, 'touch {m}/{name}.started; while [ ! -e {m}/release ]; do sleep 0.05; done']",
            m = marks.display()
        )
    };
    let mut suite = String::from("defaults: { timeout: 10m }\nevals:\n");
    for i in 1..=8 {
        let (id, command) = match i {
            1 => (
                "quick".to_owned(),
                "[sh, -c, 'echo done > out.txt']".to_owned(),
            ),
            5 => ("hold".to_owned(), hold("hold")),
            6 => ("hold2".to_owned(), hold("hold2")),
            i => (
                format!("e{i}"),
                "[sh, -c, 'echo done > out.txt']".to_owned(),
            ),
        };
        let _ = writeln!(suite, "  - {{ id: {id}, command: {command} }}");
    }
    std::fs::write(s.path().join("suite.yaml"), suite).unwrap();
    let bin = Path::new(hyoka_path()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let submit = Command::new("bash")
        .arg("submit.sh")
        .current_dir(s.path())
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(submit.status.success(), "submit.sh: {}", stderr(&submit));
    // `array job N, merge job M` (a job id may carry `;cluster`).
    let said = String::from_utf8_lossy(&submit.stdout).trim().to_owned();
    let ids: Vec<String> = said
        .split(", ")
        .filter_map(|part| part.rsplit(' ').next())
        .map(|id| id.split(';').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "{said}");
    let [array, merge] = [&ids[0], &ids[1]];
    let _cancel = Cancel(ids.clone());
    let task1 = format!("{array}_1");
    eprintln!("$ sbatch --parsable shard.sbatch → {array}");
    eprintln!("$ sbatch --parsable --dependency=afterany:{array} merge.sbatch {array} → {merge}");
    // The merge is held by its dependency while the array runs.
    let held = jobs(merge);
    assert_eq!(
        held[0]["Dependency"],
        format!("afterany:{array}_*(unfulfilled)")
    );
    slurm_wait("shards 1 and 2 to reach their holds", || {
        marks.join("hold.started").exists() && marks.join("hold2.started").exists()
    });
    let cancelled = Command::new("scancel").arg(&task1).output().unwrap();
    assert!(
        cancelled.status.success(),
        "scancel: {}",
        stderr(&cancelled)
    );
    eprintln!("$ scancel {task1}");
    let first = wait_done(&task1);
    assert_eq!(first[0]["JobState"], "CANCELLED");
    let run_dir = s.path().join(format!("reports/shard-1/{array}"));
    let cut = crate::support::read_json(&run_dir.join("hold/report.json"));
    assert_eq!(cut["termination"], "interrupted", "{cut:#}");
    let kept_before = std::fs::read(run_dir.join("quick/report.json")).unwrap();
    // Shard 2 still runs, so the merge still waits.
    let waiting = jobs(merge);
    assert_eq!(waiting[0]["JobState"], "PENDING", "{waiting:#?}");
    assert_eq!(
        waiting[0]["Dependency"],
        format!("afterany:{array}_*(unfulfilled)")
    );
    // Requeued (and released at once), the shard runs again with the same array job id;
    // then the holds are let go.
    scontrol(&["requeue", &task1]);
    scontrol(&["update", &format!("JobId={task1}"), "StartTime=now"]);
    eprintln!("$ scontrol requeue {task1}; scontrol update JobId={task1} StartTime=now");
    std::fs::write(marks.join("release"), "").unwrap();
    let tasks = wait_done(array);
    let merged = wait_done(merge);
    for task in &tasks {
        assert_eq!(task["JobState"], "COMPLETED", "{task:#?}");
    }
    let restarted = tasks
        .iter()
        .find(|t| t["ArrayTaskId"] == "1")
        .expect("array task 1");
    assert_eq!(restarted["Restarts"], "1");
    // The requeued shard resumed: the finished trial's record is the first attempt's, the
    // cut one ran again and passed.
    assert_eq!(
        std::fs::read(run_dir.join("quick/report.json")).unwrap(),
        kept_before
    );
    let again = crate::support::read_json(&run_dir.join("hold/report.json"));
    assert_eq!(again["status"], "passed", "{again:#}");
    let log = std::fs::read_to_string(s.path().join(format!("slurm-{array}_1.out"))).unwrap();
    assert!(log.contains("resumed: 1 finished trial(s) kept"), "{log}");
    eprintln!("shard 1: restarts=1, quick kept from the first attempt, hold run again: passed");
    // The merge started only once every array task had ended, the requeued one included.
    assert_eq!(merged[0]["JobState"], "COMPLETED", "{merged:#?}");
    let last_end = tasks.iter().map(|t| t["EndTime"].clone()).max().unwrap();
    assert!(merged[0]["StartTime"] >= last_end, "{merged:#?} {tasks:#?}");
    let summary = crate::support::read_json(&s.path().join("reports/merged.json"));
    assert_eq!(summary["status"], "passed", "{summary:#}");
    assert_eq!(summary["evals"].as_array().unwrap().len(), 8);
    assert_eq!(summary["totals"]["passed"], 8);
    assert!(
        summary["missing_shards"]
            .as_array()
            .is_none_or(Vec::is_empty)
    );
    eprintln!(
        "merge: started {} after the last array task ended {}; 8 trials, status passed",
        merged[0]["StartTime"], last_end
    );
    // The page of the merged run covers every eval.
    let page = std::fs::read_to_string(s.path().join("reports/merged.html")).unwrap();
    let index = crate::support::inflate(&page, "hyoka-index");
    let mut shown: Vec<&str> = index["runs"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap_or_default())
        .collect();
    shown.sort_unstable();
    assert_eq!(
        shown,
        vec!["e2", "e3", "e4", "e7", "e8", "hold", "hold2", "quick"],
        "{index:#}"
    );
    eprintln!("page: reports/merged.html, {} tasks", shown.len());
    s.assert_no_workspaces();
}
