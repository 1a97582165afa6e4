//! Harbor task folders end to end (issue 28): `hyoka run --tasks` with the oracle, the nop
//! agent and a command, `hyoka tasks check`, a suite's `tasks:`; the stored public tasks of
//! the Harbor cookbook; what each process of a trial can see (the task folder, `/tests` and
//! `/solution` never reach the wrong one); rewards as scores; `task.toml` honoured; tasks the
//! host cannot run named as such.
//!
//! The task folders these tests write live under the target directory, outside the system
//! temp directory, so that hiding them is really tested (the sandbox's private `/tmp` would
//! hide a folder in `/tmp` anyway).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::support::{Scratch, stderr};

/// Whether the sandbox can show a task its view here; says why not on stderr.
fn views() -> bool {
    let support = hyoka_proctrack::SandboxSupport::detect();
    if let (Ok(_), Ok(()), Ok(())) = (&support.landlock, &support.mounts, &support.harden) {
        return true;
    }
    eprintln!(
        "skipping: the sandbox cannot show a task its view here (landlock {:?}, mounts {:?}, seccomp {:?})",
        support.landlock, support.mounts, support.harden
    );
    false
}

/// A dataset of task folders written under the target directory, removed at the end.
struct Dataset {
    dir: tempfile::TempDir,
}

impl Dataset {
    fn new() -> Self {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(base).unwrap();
        Self {
            dir: tempfile::Builder::new()
                .prefix("tasks-")
                .tempdir_in(base)
                .unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes task `name` from `files` (path, contents); `test.sh` and `solve.sh` are made
    /// executable.
    fn task(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let root = self.path().join(name);
        for (path, contents) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, contents).unwrap();
            if path.extension().is_some_and(|e| e == "sh") {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        root
    }

    /// A task whose instruction is to write `hello` to /app/hello.txt, with a seed file the
    /// Dockerfile copies in; its verifier is `verifier` (a bash script body).
    fn hello(&self, name: &str, verifier: &str) -> PathBuf {
        self.task(
            name,
            &[
                (
                    "task.toml",
                    "[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n",
                ),
                ("instruction.md", "Write hello to /app/hello.txt.\n"),
                (
                    "environment/Dockerfile",
                    "FROM ubuntu:24.04\nWORKDIR /app\nCOPY seed.txt /app/seed.txt\n",
                ),
                ("environment/seed.txt", "seed\n"),
                (
                    "solution/solve.sh",
                    "#!/bin/bash\necho hello > /app/hello.txt\n",
                ),
                ("tests/test.sh", &format!("#!/bin/bash\n{verifier}\n")),
            ],
        )
    }
}

/// The verifier of [`Dataset::hello`]: reward 1 when /app holds hello and the seed.
const HELLO_VERIFIER: &str = r#"if [ "$(cat /app/hello.txt 2>/dev/null)" = hello ] && [ "$(cat /app/seed.txt)" = seed ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi"#;

fn run(s: &Scratch, args: &[&str]) -> Output {
    s.run(args)
}

/// `hyoka tasks check --reports … --workspace-root …`, for more arguments.
fn check(s: &Scratch) -> std::process::Command {
    let mut cmd = crate::support::hyoka();
    cmd.args(["tasks", "check", "--reports"])
        .arg(s.reports())
        .arg("--workspace-root")
        .arg(s.ws_root());
    cmd
}

#[track_caller]
fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// `report.json` `review.score`.
fn score(report: &Value) -> Option<f64> {
    report["review"]["score"].as_f64()
}

/// A digest of every file of `dir` (path, mode, bytes), to prove it unchanged.
fn digest(dir: &Path) -> Vec<(PathBuf, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.push((
                    path.clone(),
                    meta.permissions().mode(),
                    std::fs::read(&path).unwrap_or_default(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_oracle_passes_and_the_nop_agent_fails_each_with_its_reward() {
    if !views() {
        return;
    }
    let data = Dataset::new();
    let task = data.hello("hello", HELLO_VERIFIER);
    let before = digest(data.path());
    let s = Scratch::new();
    let dir = data.path().to_str().unwrap();
    let out = run(
        &s,
        &["--run-id", "oracle", "--tasks", dir, "--agent", "oracle"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = s.report("oracle", "hello.oracle");
    assert_eq!(report["status"], "passed");
    assert_eq!(report["agent"], "oracle");
    assert_eq!(score(&report), Some(1.0));
    assert_eq!(report["task"]["reward"]["file"], "reward.txt");
    assert_eq!(report["task"]["workdir"], "/app");
    assert_eq!(report["task"]["dir"], task.display().to_string());
    // What the verifier left in /logs is kept with the trial's records.
    assert_eq!(
        std::fs::read_to_string(
            s.reports()
                .join("oracle/hello.oracle/logs/verifier/reward.txt")
        )
        .unwrap()
        .trim(),
        "1"
    );
    let out = run(&s, &["--run-id", "nop", "--tasks", dir, "--agent", "nop"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report = s.report("nop", "hello.nop");
    assert_eq!(report["status"], "failed");
    assert_eq!(score(&report), Some(0.0));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("why: review failed: reward 0 is below 1 (verdict fail, score 0)"),
        "{summary}"
    );
    // The task folder itself is never written.
    assert_eq!(digest(data.path()), before);
    s.assert_no_workspaces();
}

#[test]
fn tasks_check_lists_the_tasks_that_do_not_behave() {
    if !views() {
        return;
    }
    let data = Dataset::new();
    data.hello("good", HELLO_VERIFIER);
    // Tests that accept an untouched environment, and a reference solution that fails.
    data.hello("lenient", "echo 1 > /logs/verifier/reward.txt");
    let broken = data.hello("broken", HELLO_VERIFIER);
    std::fs::write(
        broken.join("solution/solve.sh"),
        "#!/bin/bash\necho goodbye > /app/hello.txt\n",
    )
    .unwrap();
    let s = Scratch::new();
    let out = check(&s)
        .args([
            data.path().to_str().unwrap(),
            "--run-id",
            "check",
            "--workers",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("broken   failed (0)    failed (0)    the oracle fails with reward 0\n"),
        "{text}"
    );
    assert!(text.contains("lenient  passed (1)    passed (1)    the nop agent passes (reward 1): the tests accept an untouched environment\n"), "{text}");
    assert!(!text.contains("\ngood "), "{text}");
    assert!(
        text.contains("3 task(s): 1 behave (the oracle passes, the nop agent fails), 2 do not"),
        "{text}"
    );
    let out = check(&s)
        .args([
            data.path().join("good").to_str().unwrap(),
            "--run-id",
            "good",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["behave"], 1);
    assert_eq!(json["tasks"][0]["oracle_reward"], 1.0);
    assert_eq!(json["tasks"][0]["nop_reward"], 0.0);
    s.assert_no_workspaces();
}

#[test]
fn neither_the_agent_nor_the_tests_can_read_what_is_not_theirs() {
    if !views() {
        return;
    }
    let data = Dataset::new();
    let other = data.hello("other", HELLO_VERIFIER);
    let dir = data.path().display().to_string();
    let task_dir = format!("{dir}/peek");
    // A verifier that cheats if it can: it reads the solution (as Harbor's oracle leaves it
    // at /solution, or from the task folder) and passes when it could.
    data.task(
        "peek",
        &[
            ("task.toml", ""),
            ("instruction.md", "Look around.\n"),
            ("environment/Dockerfile", "FROM ubuntu\nWORKDIR /app\n"),
            ("solution/solve.sh", "#!/bin/bash\necho secret-solution > /app/out.txt\n"),
            (
                "tests/test.sh",
                &format!(
                    "#!/bin/bash\nif cat /solution/solve.sh || cat {task_dir}/solution/solve.sh; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
                ),
            ),
        ],
    );
    let s = Scratch::new();
    let out = run(
        &s,
        &[
            "--run-id", "cheat", "--tasks", &task_dir, "--agent", "oracle",
        ],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report = s.report("cheat", "peek.oracle");
    assert_eq!(score(&report), Some(0.0), "the verifier read the solution");
    let review = std::fs::read_to_string(s.reports().join("cheat/peek.oracle/review.log")).unwrap();
    assert!(
        review.contains("/solution/solve.sh: No such file or directory"),
        "{review}"
    );
    assert!(!review.contains("secret-solution"), "{review}");
    // An agent looking for the tests and the solutions finds nothing: not /tests, not the
    // task folder, not another task of the dataset.
    let probe = format!(
        "for p in /tests /tests/test.sh {task_dir}/tests/test.sh {task_dir}/solution/solve.sh {}/solution/solve.sh; do if [ -e $p ]; then echo \"seen $p\"; else echo \"hidden $p\"; fi; done; ls -A {dir} | wc -l",
        other.display()
    );
    let out = run(
        &s,
        &[
            "--run-id", "agent", "--tasks", &task_dir, "--", "sh", "-c", &probe,
        ],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let log = std::fs::read_to_string(s.reports().join("agent/peek/output.log")).unwrap();
    assert!(!log.contains("seen "), "{log}");
    assert_eq!(log.matches("hidden ").count(), 5, "{log}");
    assert!(
        log.trim_end().ends_with('0'),
        "the dataset is an empty directory: {log}"
    );
    s.assert_no_workspaces();
}

/// The tests arrive only once the agent has finished: an agent that leaves a detached
/// process behind, watching for `/tests`, has it killed before the tests are copied in; the
/// verifier then sees its tests and no process of the agent.
#[test]
fn the_tests_are_copied_in_only_after_the_agents_tree_is_gone() {
    if !views() {
        return;
    }
    let data = Dataset::new();
    let dir = data.path().display().to_string();
    // The watcher runs as `sh /app/watcher.sh`, a name the agent's command line spells
    // only in pieces, so that only the watcher's own command line has it (hyoka's, which
    // runs on, does not); the bracket keeps a search for it from finding itself.
    let verifier = r#"#!/bin/bash
if grep -qs 'watche[r].sh' /proc/[0-9]*/cmdline; then echo 0; elif [ -e /tests/test.sh ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"#;
    data.task(
        "late",
        &[
            ("task.toml", "[agent]\ntimeout_sec = 60\n"),
            ("instruction.md", "Wait for the tests.\n"),
            ("environment/Dockerfile", "FROM ubuntu\nWORKDIR /app\n"),
            ("solution/solve.sh", "#!/bin/bash\ntrue\n"),
            ("tests/test.sh", verifier),
        ],
    );
    let watcher = r#"n=watch; echo 'while :; do if [ -e /tests/test.sh ]; then touch /logs/agent/saw-tests; fi; sleep 0.01; done' > /app/${n}er.sh; setsid sh /app/${n}er.sh </dev/null >/dev/null 2>&1 & touch /logs/agent/started"#;
    let s = Scratch::new();
    let out = run(
        &s,
        &[
            "--run-id", "late", "--tasks", &dir, "--", "sh", "-c", watcher,
        ],
    );
    let report = s.report("late", "late");
    assert_eq!(code(&out), 0, "{}\n{report:#}", stderr(&out));
    assert_eq!(report["status"], "passed", "{report:#}");
    assert_eq!(score(&report), Some(1.0), "{report:#}");
    // The watcher ran, was stopped with the agent's tree, and never saw the tests.
    let logs = s.reports().join("late/late/logs/agent");
    assert!(logs.join("started").exists(), "{report:#}");
    assert!(
        !logs.join("saw-tests").exists(),
        "the agent's process saw /tests"
    );
    assert!(
        report["cleanup"]["processes_killed"].as_u64() >= Some(1),
        "{report:#}"
    );
    assert_eq!(report["cleanup"]["survivors"], 0, "{report:#}");
    let alive: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let dir = e.ok()?.path();
            let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
            cmdline
                .windows(10)
                .any(|w| w == b"watcher.sh")
                .then(|| format!("{}: {}", dir.display(), String::from_utf8_lossy(&cmdline)))
        })
        .collect();
    assert!(
        alive.is_empty(),
        "the agent's watcher outlived its trial: {alive:#?}"
    );
    s.assert_no_workspaces();
}

#[test]
fn rewards_become_scores_and_broken_ones_are_scorer_errors() {
    if !views() {
        return;
    }
    let data = Dataset::new();
    for (name, verifier) in [
        ("partial", "echo 0.5 > /logs/verifier/reward.txt"),
        (
            "json",
            r#"echo '{"reward": 1, "tests_passed": 12}' > /logs/verifier/reward.json"#,
        ),
        ("garbage", "echo pass > /logs/verifier/reward.txt"),
        ("silent", "echo nothing written"),
        ("range", "echo 1.5 > /logs/verifier/reward.txt"),
        (
            "metrics",
            r#"echo '{"a": 1, "b": 0}' > /logs/verifier/reward.json"#,
        ),
        (
            "crashes",
            "echo 1 > /logs/verifier/reward.txt; kill -SEGV $$",
        ),
        ("exits", "echo 1 > /logs/verifier/reward.txt; exit 3"),
    ] {
        data.task(
            name,
            &[
                ("task.toml", "[verifier]\ntimeout_sec = 30\n"),
                ("instruction.md", "x\n"),
                ("environment/Dockerfile", "FROM x\nWORKDIR /app\n"),
                ("tests/test.sh", &format!("#!/bin/bash\n{verifier}\n")),
            ],
        );
    }
    let s = Scratch::new();
    let dir = data.path().to_str().unwrap();
    let out = run(
        &s,
        &[
            "--run-id",
            "r",
            "--tasks",
            dir,
            "--agent",
            "nop",
            "--workers",
            "4",
        ],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let verdict = |task: &str| {
        let r = s.report("r", &format!("{task}.nop"));
        (
            r["status"].as_str().unwrap().to_owned(),
            r["error_kind"].as_str().map(str::to_owned),
            score(&r),
            r["task"]["reward_error"].as_str().map(str::to_owned),
        )
    };
    assert_eq!(verdict("partial"), ("failed".into(), None, Some(0.5), None));
    // Harbor ignores the verifier's exit code: the reward decides.
    assert_eq!(verdict("exits"), ("passed".into(), None, Some(1.0), None));
    let json = s.report("r", "json.nop");
    assert_eq!(json["status"], "passed");
    assert_eq!(json["task"]["reward"]["metrics"]["tests_passed"], 12.0);
    for (task, why) in [
        (
            "garbage",
            "reward.txt is not a valid reward: \"pass\" is not a number",
        ),
        ("silent", "the verifier wrote no reward"),
        ("range", "reward.txt reward is 1.5, outside 0 to 1"),
        (
            "metrics",
            "reward.json has no \"reward\" metric to decide with (it has a, b)",
        ),
    ] {
        let (status, kind, score, error) = verdict(task);
        assert_eq!(
            (status.as_str(), kind.as_deref(), score),
            ("error", Some("scorer"), None),
            "{task}"
        );
        assert!(error.unwrap_or_default().contains(why), "{task}");
    }
    // A verifier killed by a signal is the scorer's crash, whatever it wrote.
    let (status, kind, ..) = verdict("crashes");
    assert_eq!(
        (status.as_str(), kind.as_deref()),
        ("error", Some("scorer"))
    );
    // A threshold flag and a reward key change what passes.
    let out = run(
        &s,
        &[
            "--run-id",
            "half",
            "--tasks",
            &format!("{dir}/partial"),
            "--agent",
            "nop",
            "--reward-threshold",
            "0.5",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(
        &s,
        &[
            "--run-id",
            "key",
            "--tasks",
            &format!("{dir}/metrics"),
            "--agent",
            "nop",
            "--reward-key",
            "a",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.report("key", "metrics.nop")["task"]["reward"]["key"], "a");
    s.assert_no_workspaces();
}

#[test]
fn task_toml_is_honoured() {
    if !views() {
        return;
    }
    let data = Dataset::new();
    // The agent's environment, its workdir, no network; the verifier's own variables.
    data.task(
        "settings",
        &[
            (
                "task.toml",
                "[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\nenv = { ONLY_VERIFIER = \"v\" }\n[environment]\nallow_internet = false\ncpus = 1\nmemory_mb = 512\n[environment.env]\nFROM_TASK = \"task\"\n",
            ),
            ("instruction.md", "Report what you see.\n"),
            (
                "environment/Dockerfile",
                "FROM x\nENV FROM_IMAGE=image\nWORKDIR /workspace/project\n",
            ),
            (
                "tests/test.sh",
                "#!/bin/bash\n[ \"$ONLY_VERIFIER\" = v ] && [ \"$(pwd)\" = /workspace/project ] && grep -q 'image task unset' seen.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
            ),
        ],
    );
    data.task(
        "slow",
        &[
            (
                "task.toml",
                "[agent]\ntimeout_sec = 1\n[verifier]\ntimeout_sec = 1\n",
            ),
            ("instruction.md", "x\n"),
            ("environment/Dockerfile", "FROM x\nWORKDIR /app\n"),
            ("tests/test.sh", "#!/bin/bash\nsleep 30\n"),
        ],
    );
    let s = Scratch::new();
    let dir = data.path().display().to_string();
    let agent = "echo \"$FROM_IMAGE $FROM_TASK ${ONLY_VERIFIER:-unset}\" > seen.txt; ls /sys/class/net > nets.txt";
    let out = run(
        &s,
        &[
            "--run-id",
            "t",
            "--tasks",
            &format!("{dir}/settings"),
            "--grace",
            "1s",
            "--",
            "sh",
            "-c",
            agent,
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = s.report("t", "settings");
    assert_eq!(report["sandbox"]["network"], "none");
    assert_eq!(report["limits"]["max_memory"], 512 * 1024 * 1024);
    assert_eq!(report["limits"]["timeout_ms"], 60_000);
    assert_eq!(report["task"]["workdir"], "/workspace/project");
    // The agent's timeout and the verifier's: a timeout fails the agent, and a verifier
    // that runs past its own is the scorer's error.
    let out = run(
        &s,
        &[
            "--run-id",
            "slow",
            "--tasks",
            &format!("{dir}/slow"),
            "--grace",
            "1s",
            "--",
            "sleep",
            "30",
        ],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report = s.report("slow", "slow");
    // The agent's result comes first: its timeout fails the trial, whatever the verifier.
    assert_eq!(report["termination"], "timeout");
    assert_eq!(report["status"], "failed");
    let review = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "review")
        .unwrap()
        .clone();
    assert_eq!(review["detail"], "timed out after 1s");
    s.assert_no_workspaces();
}

#[test]
fn a_task_the_host_cannot_give_its_environment_says_why() {
    let data = Dataset::new();
    data.task(
        "compose",
        &[
            ("task.toml", ""),
            ("instruction.md", "x\n"),
            ("environment/Dockerfile", "FROM x\nWORKDIR /app\n"),
            ("environment/docker-compose.yaml", "services: {}\n"),
            ("tests/test.sh", "#!/bin/bash\n"),
        ],
    );
    data.task(
        "built",
        &[
            ("task.toml", ""),
            ("instruction.md", "x\n"),
            (
                "environment/Dockerfile",
                "FROM x\nRUN apt-get install -y gcc\nWORKDIR /app\n",
            ),
            ("tests/test.sh", "#!/bin/bash\n"),
        ],
    );
    let s = Scratch::new();
    let out = run(
        &s,
        &[
            "--run-id",
            "u",
            "--tasks",
            data.path().to_str().unwrap(),
            "--agent",
            "nop",
        ],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let compose = s.report("u", "compose.nop");
    assert_eq!(compose["status"], "not_run");
    assert_eq!(compose["termination"], "unavailable");
    assert!(
        compose["error"]
            .as_str()
            .unwrap()
            .contains("docker-compose")
    );
    let built = s.report("u", "built.nop");
    assert_eq!(
        built["error"],
        "needs an image the host cannot provide: Dockerfile line 2: RUN apt-get install -y gcc (--skip-build-steps runs it on the host anyway)"
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("why: needs an image the host cannot provide"),
        "{summary}"
    );
    s.assert_no_workspaces();
}

#[test]
fn a_suite_runs_tasks_with_its_agents_and_the_instruction_as_prompt() {
    if !views() {
        return;
    }
    let data = Dataset::new();
    data.task(
        "echo",
        &[
            ("task.toml", ""),
            ("instruction.md", "say it"),
            ("environment/Dockerfile", "FROM x\nWORKDIR /app\n"),
            (
                "tests/test.sh",
                "#!/bin/bash\n[ \"$(cat prompt.txt)\" = 'say it|say it' ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
            ),
        ],
    );
    let s = Scratch::new();
    let suite = s.path().join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "agents:\n  echoer: [sh, -c, 'printf \"%s|%s\" \"{{prompt}}\" \"$HYOKA_PROMPT\" > prompt.txt']\ntasks: {}\n",
            data.path().display()
        ),
    )
    .unwrap();
    let out = run(
        &s,
        &["--run-id", "suite", "--suite", suite.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = s.report("suite", "echo.echoer");
    assert_eq!(report["agent"], "echoer");
    assert_eq!(score(&report), Some(1.0));
    s.assert_no_workspaces();
}

#[test]
fn bad_task_input_exits_2_with_one_error_line() {
    let data = Dataset::new();
    data.hello("fine", HELLO_VERIFIER);
    data.task(
        "bad",
        &[
            ("task.toml", "[agent]\ntimeout_sec = \"soon\"\n"),
            ("instruction.md", "x"),
            ("tests/test.sh", ""),
        ],
    );
    let s = Scratch::new();
    let fine = data.path().join("fine");
    let fine = fine.to_str().unwrap();
    for (args, needle) in [
        (vec!["--tasks", fine], "--tasks needs an agent"),
        (
            vec!["--tasks", "/nonexistent-hyoka-tasks", "--agent", "nop"],
            "is not a directory of Harbor tasks",
        ),
        (
            vec!["--tasks", data.path().to_str().unwrap(), "--agent", "nop"],
            "agent.timeout_sec: invalid type: string \"soon\"",
        ),
        (
            vec!["--tasks", fine, "--agent", "nop", "--reward-threshold", "0"],
            "invalid reward threshold",
        ),
        (
            vec!["--tasks", fine, "--agent", "nop", "--environment", "vm"],
            "invalid environment",
        ),
        (
            vec!["--agent", "oracle", "--", "true"],
            "cannot be used with",
        ),
        (vec!["--agent", "oracle"], "apply to Harbor tasks"),
    ] {
        let out = run(&s, &args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // A container engine that is not there is refused up front.
    let engine = std::process::Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output();
    if !engine.is_ok_and(|o| o.status.success()) {
        let out = run(
            &s,
            &["--tasks", fine, "--agent", "nop", "--environment", "docker"],
        );
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--environment docker:"),
            "{}",
            stderr(&out)
        );
    }
    assert!(!s.reports().exists() || std::fs::read_dir(s.reports()).unwrap().next().is_none());
}

/// The directory of the `uvx` on `PATH` (resolved through links), and the directory to show
/// read-only when it lies in the hidden home; `None` (saying why) when there is no working
/// `uvx` that reaches PyPI here.
fn uv() -> Option<(PathBuf, Option<PathBuf>)> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("uvx"))
            .find(|p| p.is_file())
    });
    let Some(uvx) = found else {
        eprintln!("skipping: no uvx on PATH (the cookbook's verifiers install pytest with uv)");
        return None;
    };
    // The Python uv runs pytest with; with pyenv its `bin` holds the real `uvx` too (a
    // shim on PATH is a script that needs all of pyenv).
    let real = std::process::Command::new(uvx.with_file_name("uv"))
        .args(["python", "find"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let probe = std::process::Command::new(&uvx)
        .args([
            "--with",
            "pytest==8.4.1",
            "--with",
            "pytest-json-ctrf==0.3.5",
            "pytest",
            "--version",
        ])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipping: uvx cannot fetch pytest from PyPI here");
        return None;
    }
    let python = real?.canonicalize().ok()?;
    let bin = python.parent()?.to_owned();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let shown = home
        .filter(|h| bin.starts_with(h))
        .and_then(|_| bin.parent().map(Path::to_owned));
    Some((bin, shown))
}

/// The stored public tasks of the Harbor cookbook, run as they are.
#[test]
fn the_stored_cookbook_tasks_pass_with_the_oracle_and_fail_with_nop() {
    if !views() {
        return;
    }
    let Some((bin, shown)) = uv() else {
        return;
    };
    let cookbook =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../eval/tests/fixtures/harbor/cookbook");
    let before = digest(&cookbook);
    let s = Scratch::new();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let check = |run_id: &str, extra: &[&str]| {
        let mut cmd = check(&s);
        cmd.env("PATH", &path)
            .args([
                cookbook.to_str().unwrap(),
                "--run-id",
                run_id,
                "--workers",
                "2",
                "--json",
            ])
            .args(extra);
        if let Some(shown) = &shown {
            cmd.arg("--sandbox-read").arg(shown);
        }
        let out = cmd.output().unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {} {}",
                String::from_utf8_lossy(&out.stdout),
                stderr(&out)
            )
        });
        (code(&out), json)
    };
    // As they are, with the build steps the host does not perform and multi-reward's two
    // metrics named: every oracle passes with reward 1, every nop agent fails with 0.
    let (status, json) = check(
        "all",
        &["--skip-build-steps", "--reward-key", "correctness"],
    );
    assert_eq!(status, 0, "{json:#}");
    for task in json["tasks"].as_array().unwrap() {
        assert_eq!(
            (
                task["oracle"].as_str(),
                task["oracle_reward"].as_f64(),
                task["nop"].as_str(),
                task["nop_reward"].as_f64()
            ),
            (Some("passed"), Some(1.0), Some("failed"), Some(0.0)),
            "{task:#}"
        );
    }
    let names: Vec<&str> = json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["multi-reward", "simple-task", "skills"]);
    // Without those flags, the tasks that need them say so.
    let (status, json) = check("strict", &[]);
    assert_eq!(status, 1, "{json:#}");
    let problems: Vec<String> = json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| {
            t["problems"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| format!("{}: {}", t["task"].as_str().unwrap(), p.as_str().unwrap()))
        })
        .collect();
    assert!(problems.iter().any(|p| p.starts_with("skills: the oracle did not run: needs an image the host cannot provide: Dockerfile line 3: RUN apt-get update")), "{problems:#?}");
    assert!(
        !problems.iter().any(|p| p.starts_with("simple-task")),
        "{problems:#?}"
    );
    assert_eq!(digest(&cookbook), before, "the stored tasks were written");
    s.assert_no_workspaces();
}
