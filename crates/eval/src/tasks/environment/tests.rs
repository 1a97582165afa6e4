//! Tests of what the host gives a task: its `WORKDIR`, its build context's files, its
//! environment, and the one-line reasons it cannot run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::*;
use crate::tasks::folder::Task;

fn cookbook(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/harbor/cookbook")
        .join(name)
}

/// A task folder made in `dir` from `files` (path, contents).
fn task(dir: &Path, files: &[(&str, &str)]) -> Task {
    let root = dir.join("t");
    for (path, contents) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    Task::load(&root).unwrap()
}

const BASICS: [(&str, &str); 3] = [
    ("task.toml", ""),
    ("instruction.md", "do it"),
    ("tests/test.sh", "#!/bin/bash\n"),
];

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    BASICS
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect()
}

#[track_caller]
fn check(task: &Task, options: &TaskOptions) -> HostView {
    host_view(task, options).unwrap_or_else(|why| panic!("should be provided: {why}"))
}

#[track_caller]
fn refuse(task: &Task, options: &TaskOptions, needle: &str) {
    let why = host_view(task, options).expect_err("should be refused");
    assert!(why.contains(needle), "{why:?} should say {needle:?}");
}

#[test]
fn the_simple_task_works_in_app() {
    let task = Task::load(&cookbook("simple-task")).unwrap();
    let view = check(&task, &TaskOptions::default());
    assert_eq!(view.workdir, Path::new("/app"));
    assert!(view.workspace_files.is_empty() && view.root_files.is_empty());
    assert!(view.skipped.is_empty());
}

#[test]
fn run_steps_need_an_image_unless_skipped() {
    let task = Task::load(&cookbook("skills")).unwrap();
    refuse(
        &task,
        &TaskOptions::default(),
        "needs an image the host cannot provide: Dockerfile line 3: RUN apt-get update",
    );
    let view = check(
        &task,
        &TaskOptions {
            skip_build_steps: true,
            ..TaskOptions::default()
        },
    );
    assert_eq!(view.skipped.len(), 1);
    assert!(view.skipped[0].starts_with("Dockerfile line 3: RUN apt-get update"));
    // `COPY skills/ /skills/`: the directory's contents land at /skills, outside /app.
    assert_eq!(view.root_files.len(), 1);
    assert_eq!(view.root_files[0].target, Path::new("skills"));
    assert!(view.root_files[0].source.ends_with("environment/skills"));
}

#[test]
fn copies_into_the_workdir_become_workspace_files() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        &with(&[
            (
                "environment/Dockerfile",
                "FROM x\nWORKDIR /app\nCOPY data/returns.csv /app/data/returns.csv\nCOPY src/ .\nCOPY *.txt notes/\nCOPY . /app/all\n",
            ),
            ("environment/data/returns.csv", "1,2\n"),
            ("environment/src/main.py", "print(1)\n"),
            ("environment/src/util.py", "\n"),
            ("environment/a.txt", "a"),
            ("environment/b.txt", "b"),
        ]),
    );
    let view = check(&task, &TaskOptions::default());
    let targets: Vec<String> = view
        .workspace_files
        .iter()
        .map(|i| i.target.display().to_string())
        .collect();
    assert_eq!(
        targets,
        vec![
            "data/returns.csv",
            "main.py",
            "util.py",
            "notes/a.txt",
            "notes/b.txt",
            "all"
        ]
    );
}

#[test]
fn a_copy_of_a_missing_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        &with(&[(
            "environment/Dockerfile",
            "FROM x\nWORKDIR /app\nCOPY nope.txt .\n",
        )]),
    );
    refuse(
        &task,
        &TaskOptions::default(),
        "Dockerfile line 3: COPY nope.txt: not in the build context",
    );
}

#[test]
fn environment_comes_from_the_dockerfile_then_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        &[
            (
                "task.toml",
                "[environment.env]\nMODE = \"task\"\nKEY = \"${HOST_KEY}\"\n",
            ),
            ("instruction.md", "x"),
            ("tests/test.sh", ""),
            (
                "environment/Dockerfile",
                "FROM x\nENV MODE=image PATH_EXTRA=/opt/bin\nWORKDIR /workspace\n",
            ),
        ],
    );
    let options = TaskOptions {
        host_env: vec![("HOST_KEY".into(), "secret".into())],
        ..TaskOptions::default()
    };
    let view = check(&task, &options);
    assert_eq!(view.workdir, Path::new("/workspace"));
    let env: Vec<(OsString, OsString)> = vec![
        ("PATH_EXTRA".into(), "/opt/bin".into()),
        ("KEY".into(), "secret".into()),
        ("MODE".into(), "task".into()),
    ];
    assert_eq!(view.env, env);
    refuse(
        &task,
        &TaskOptions::default(),
        "needs the host variable HOST_KEY ([environment.env] KEY)",
    );
}

#[test]
fn what_the_host_cannot_give_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[(&str, &str)], &str); 8] = [
        (
            &[("environment/docker-compose.yaml", "services: {}\n")],
            "docker-compose",
        ),
        (
            &[("task.toml", "[environment]\ngpus = 1\n")],
            "needs 1 GPU(s)",
        ),
        (
            &[(
                "task.toml",
                "[[environment.mcp_servers]]\nname = \"m\"\nurl = \"http://m\"\n",
            )],
            "MCP server",
        ),
        (
            &[(
                "task.toml",
                "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"pypi.org\"]\n",
            )],
            "allows only some hosts (pypi.org)",
        ),
        (
            &[("task.toml", "[environment]\ndocker_image = \"org/img:1\"\n")],
            "needs the image org/img:1",
        ),
        (&[("environment/Dockerfile", "FROM x\n")], "has no WORKDIR"),
        (
            &[(
                "environment/Dockerfile",
                "FROM x\nWORKDIR /usr/share/nope-hyoka\n",
            )],
            "/usr is on the read-only host",
        ),
        (&[("task.toml", "[[steps]]\nname = \"a\"\n")], "multi-step"),
    ];
    for (i, (files, needle)) in cases.into_iter().enumerate() {
        let sub = dir.path().join(i.to_string());
        let task = task(&sub, &with(files));
        refuse(&task, &TaskOptions::default(), needle);
    }
}

#[test]
fn the_home_and_tmp_can_hold_a_workdir() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        &with(&[(
            "environment/Dockerfile",
            "FROM x\nWORKDIR /home/agent-hyoka/project\n",
        )]),
    );
    refuse(
        &task,
        &TaskOptions::default(),
        "/home is on the read-only host",
    );
    let options = TaskOptions {
        host_env: vec![("HOME".into(), "/home/agent-hyoka".into())],
        ..TaskOptions::default()
    };
    assert_eq!(
        check(&task, &options).workdir,
        Path::new("/home/agent-hyoka/project")
    );
}

#[test]
fn wildcards_match_one_component() {
    for (pattern, name, hit) in [
        ("*.py", "main.py", true),
        ("*.py", "main.pyc", false),
        ("data-?.csv", "data-1.csv", true),
        ("data-[0-9].csv", "data-7.csv", true),
        ("data-[!0-9].csv", "data-7.csv", false),
        ("*", ".hidden", true),
    ] {
        assert_eq!(wildcard(pattern, name), hit, "{pattern} {name}");
    }
}
