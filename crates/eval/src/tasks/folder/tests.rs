//! Tests of reading task folders and datasets.

use std::path::{Path, PathBuf};

use super::*;

fn cookbook() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbor/cookbook")
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

#[track_caller]
fn refuse(dir: &Path, needle: &str) {
    let err = load_tasks(dir).expect_err("should be refused");
    let text = err.to_string();
    assert!(text.contains(needle), "{text:?} should say {needle:?}");
    assert!(err.is_bad_input(), "{text}");
}

#[test]
fn a_dataset_is_its_task_folders_in_name_order() {
    let tasks = load_tasks(&cookbook()).unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, vec!["multi-reward", "simple-task", "skills"]);
    let simple = &tasks[1];
    assert_eq!(
        simple.instruction.trim(),
        "Create a file called hello.txt with \"Hello, world!\" as the content."
    );
    assert!(simple.has_solution && !simple.compose && !simple.dockerignore);
    assert_eq!(
        simple.dockerfile.as_ref().unwrap().workdir.as_deref(),
        Some("/app")
    );
}

#[test]
fn a_task_folder_alone_is_one_task() {
    let tasks = load_tasks(&cookbook().join("skills")).unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].id.as_str(), "skills");
}

#[test]
fn other_entries_of_a_dataset_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("b/task.toml", ""),
            ("b/instruction.md", "x"),
            ("b/tests/test.sh", ""),
            (".hidden/task.toml", ""),
            ("notes/readme.md", "not a task"),
            ("README.md", "a dataset"),
        ],
    );
    let tasks = load_tasks(dir.path()).unwrap();
    assert_eq!(tasks.len(), 1);
    assert!(!tasks[0].has_solution);
    assert!(tasks[0].dockerfile.is_none());
}

#[test]
fn bad_folders_are_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    refuse(&root.join("nothing"), "is not a directory of Harbor tasks");
    write(root, &[("empty/README.md", "")]);
    refuse(&root.join("empty"), "holds no task");
    write(root, &[("bad name!/task.toml", "")]);
    refuse(&root.join("bad name!"), "cannot be an eval id");
    write(root, &[("no-instruction/task.toml", "")]);
    refuse(&root.join("no-instruction"), "instruction.md is missing");
    write(
        root,
        &[("no-tests/task.toml", ""), ("no-tests/instruction.md", "x")],
    );
    refuse(&root.join("no-tests"), "has no tests/test.sh");
    write(
        root,
        &[
            ("bad-toml/task.toml", "[agent]\ntimeout_sec = \"x\"\n"),
            ("bad-toml/instruction.md", "x"),
            ("bad-toml/tests/test.sh", ""),
        ],
    );
    refuse(&root.join("bad-toml"), "task.toml:");
    write(
        root,
        &[
            ("bad-docker/task.toml", ""),
            ("bad-docker/instruction.md", "x"),
            ("bad-docker/tests/test.sh", ""),
            ("bad-docker/environment/Dockerfile", "FROM x\nNOPE\n"),
        ],
    );
    refuse(&root.join("bad-docker"), "environment/Dockerfile line 2");
    write(root, &[("big/task.toml", ""), ("big/tests/test.sh", "")]);
    std::fs::write(
        root.join("big/instruction.md"),
        vec![b'x'; usize::try_from(MAX_INSTRUCTION_BYTES).unwrap() + 1],
    )
    .unwrap();
    refuse(&root.join("big"), "is larger than");
    write(
        root,
        &[("linked/task.toml", ""), ("linked/tests/test.sh", "")],
    );
    std::os::unix::fs::symlink("/etc/hostname", root.join("linked/instruction.md")).unwrap();
    refuse(&root.join("linked"), "instruction.md is not a regular file");
}
