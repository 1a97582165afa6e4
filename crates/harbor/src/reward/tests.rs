//! Tests of reward reading: `reward.txt` and `reward.json` as Harbor writes them, the
//! deciding metric, the range, and everything that makes a scorer error.

use std::path::Path;

use hyoka_workspace::{MemWorkspace, RunId, TempWorkspace, Workspace, WorkspaceOptions};

use super::*;

fn logs(files: &[(&str, &str)]) -> MemWorkspace {
    let ws = MemWorkspace::new();
    ws.create_dir(Path::new("verifier")).unwrap();
    for (name, contents) in files {
        ws.write_file(&Path::new("verifier").join(name), contents.as_bytes())
            .unwrap();
    }
    ws
}

#[track_caller]
fn check(files: &[(&str, &str)], rules: &RewardRules) -> Result<Reward, RewardError> {
    read_reward(&logs(files), Path::new("verifier"), rules)
}

#[track_caller]
fn score(files: &[(&str, &str)]) -> (f64, bool) {
    let reward = check(files, &RewardRules::default()).expect("a reward");
    (reward.score, reward.passes())
}

#[track_caller]
fn scorer_error(files: &[(&str, &str)], needle: &str) {
    let err = check(files, &RewardRules::default()).expect_err("a scorer error");
    assert!(
        err.to_string().contains(needle),
        "{err} should say {needle:?}"
    );
}

#[test]
fn reward_txt_is_one_number() {
    assert_eq!(score(&[("reward.txt", "1\n")]), (1.0, true));
    assert_eq!(score(&[("reward.txt", " 0 ")]), (0.0, false));
    assert_eq!(score(&[("reward.txt", "0.5")]), (0.5, false));
    assert_eq!(score(&[("reward.txt", "1.0")]), (1.0, true));
    assert_eq!(score(&[("reward.txt", "1e0")]), (1.0, true));
}

#[test]
fn reward_txt_decides_over_reward_json_whose_metrics_are_kept() {
    let reward = check(
        &[
            ("reward.txt", "0.25"),
            ("reward.json", r#"{"accuracy": 0.9, "runtime_sec": 3}"#),
        ],
        &RewardRules::default(),
    )
    .unwrap();
    assert_eq!((reward.file, reward.score), (RewardFile::Text, 0.25));
    assert_eq!(
        reward.metrics.keys().collect::<Vec<_>>(),
        vec!["accuracy", "reward", "runtime_sec"]
    );
}

#[test]
fn reward_json_decides_with_reward_or_its_only_metric() {
    let reward = check(
        &[(
            "reward.json",
            r#"{"reward": 1, "tests": 12, "ok": true, "note": "x"}"#,
        )],
        &RewardRules::default(),
    )
    .unwrap();
    assert_eq!((reward.key.as_str(), reward.score), ("reward", 1.0));
    // Booleans and strings are not metrics, as Harbor leaves them out.
    assert_eq!(reward.metrics.len(), 2);
    assert_eq!(
        score(&[("reward.json", r#"{"accuracy": 0.75}"#)]),
        (0.75, false)
    );
}

#[test]
fn several_metrics_need_a_named_one() {
    let files = [("reward.json", r#"{"correctness": 1, "performance": 0}"#)];
    scorer_error(
        &files,
        "reward.json has no \"reward\" metric to decide with (it has correctness, performance)",
    );
    let rules = RewardRules {
        key: "correctness".to_owned(),
        ..RewardRules::default()
    };
    let reward = check(&files, &rules).unwrap();
    assert_eq!((reward.key.as_str(), reward.score), ("correctness", 1.0));
}

#[test]
fn the_threshold_decides_a_pass() {
    let rules = RewardRules {
        threshold: 0.5,
        ..RewardRules::default()
    };
    assert!(check(&[("reward.txt", "0.5")], &rules).unwrap().passes());
    assert!(!check(&[("reward.txt", "0.49")], &rules).unwrap().passes());
}

#[test]
fn what_is_not_a_reward_is_a_scorer_error() {
    scorer_error(&[], "wrote no reward");
    scorer_error(&[("other.txt", "1")], "wrote no reward");
    scorer_error(&[("reward.txt", "")], "the file is empty");
    scorer_error(&[("reward.txt", "  \n")], "the file is empty");
    scorer_error(&[("reward.txt", "pass")], "\"pass\" is not a number");
    scorer_error(&[("reward.txt", "1\n0\n")], "is not a number");
    scorer_error(
        &[("reward.txt", "1.5")],
        "reward.txt reward is 1.5, outside 0 to 1",
    );
    scorer_error(&[("reward.txt", "-0.1")], "outside 0 to 1");
    scorer_error(&[("reward.txt", "nan")], "outside 0 to 1");
    scorer_error(&[("reward.txt", "inf")], "outside 0 to 1");
    scorer_error(&[("reward.json", "")], "the file is empty");
    scorer_error(&[("reward.json", "[1]")], "not a JSON object");
    scorer_error(
        &[("reward.json", r#"{"reward": 1} trailing"#)],
        "reward.json is not a valid reward",
    );
    scorer_error(
        &[("reward.json", r#"{"reward": 1e309}"#)],
        "reward.json is not a valid reward",
    );
    scorer_error(&[("reward.json", r#"{"ok": true}"#)], "no numeric metric");
    scorer_error(
        &[("reward.json", r#"{"reward": 2}"#)],
        "reward.json reward is 2, outside 0 to 1",
    );
    let big = "1".repeat(usize::try_from(MAX_REWARD_BYTES).unwrap() + 1);
    scorer_error(&[("reward.txt", &big)], "is larger than 65536 bytes");
}

#[test]
fn a_missing_verifier_directory_is_no_reward() {
    let ws = MemWorkspace::new();
    let err = read_reward(&ws, Path::new("verifier"), &RewardRules::default()).unwrap_err();
    assert_eq!(err, RewardError::Missing);
}

#[test]
fn links_and_fifos_are_never_read() {
    let root = tempfile::tempdir().unwrap();
    let ws = TempWorkspace::create(&WorkspaceOptions {
        root: root.path().to_owned(),
        run_id: RunId::new("reward-test").unwrap(),
        eval_id: None,
        keep: hyoka_workspace::KeepPolicy::Never,
        starter: None,
        inject: Vec::new(),
        instance: None,
        owner: None,
    })
    .unwrap();
    let dir = ws.path().join("verifier");
    std::fs::create_dir(&dir).unwrap();
    let secret = root.path().join("secret");
    std::fs::write(&secret, "1").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("reward.txt")).unwrap();
    let err = read_reward(&ws, Path::new("verifier"), &RewardRules::default()).unwrap_err();
    assert_eq!(err.to_string(), "reward.txt is a symbolic link");
    std::fs::remove_file(dir.join("reward.txt")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("reward.json"))
        .status()
        .unwrap();
    assert!(status.success());
    // A FIFO would block a reader forever: it is refused from its listing, never opened.
    let err = read_reward(&ws, Path::new("verifier"), &RewardRules::default()).unwrap_err();
    assert_eq!(err.to_string(), "reward.json is not a regular file");
    // A verifier directory replaced by a link out of the logs is refused too.
    std::fs::remove_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(root.path(), &dir).unwrap();
    let err = read_reward(&ws, Path::new("verifier"), &RewardRules::default()).unwrap_err();
    assert!(matches!(err, RewardError::Unreadable { .. }), "{err}");
    drop(ws);
}
