//! Starter copies: contents, modes, hidden and build directories, and links.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use hyoka_workspace::{SkipReason, TempWorkspace, Workspace};

use crate::support::{make_writable, options, scratch, sentinel};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn copies_files_dirs_modes_hidden_and_build_dirs() {
    let root = scratch();
    let starter = root.path().join("starter");
    for dir in [
        "src",
        ".git/objects",
        "target/debug",
        "node_modules/x",
        "ro",
    ] {
        std::fs::create_dir_all(starter.join(dir)).unwrap();
    }
    std::fs::write(starter.join("src/main.rs"), b"fn main() {}\n").unwrap();
    std::fs::write(starter.join(".git/HEAD"), b"ref: main\n").unwrap();
    std::fs::write(starter.join("target/debug/app"), b"\x7fELF").unwrap();
    std::fs::write(starter.join("node_modules/x/index.js"), b"1").unwrap();
    std::fs::write(starter.join("ro/readme"), b"read only").unwrap();
    std::fs::write(starter.join("run.sh"), b"#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        starter.join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        starter.join("ro/readme"),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    std::fs::set_permissions(starter.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();

    let mut opts = options(root.path(), "starter");
    opts.starter = Some(starter.clone());
    let ws = TempWorkspace::create(&opts).unwrap();
    let report = ws.starter_report().unwrap().clone();
    assert_eq!(report.files, 6);
    assert_eq!(
        report.dirs, 8,
        "src .git .git/objects target target/debug node_modules node_modules/x ro"
    );
    assert!(report.skipped.is_empty());
    for file in [
        "src/main.rs",
        ".git/HEAD",
        "target/debug/app",
        "node_modules/x/index.js",
        "ro/readme",
        "run.sh",
    ] {
        assert_eq!(
            ws.read_file(Path::new(file)).unwrap(),
            std::fs::read(starter.join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(mode(&ws.path().join("run.sh")), 0o755);
    assert_eq!(mode(&ws.path().join("ro/readme")), 0o444);
    assert_eq!(mode(&ws.path().join("ro")), 0o555);
    // The starter is the baseline: nothing counts as the agent's yet.
    assert_eq!(ws.usage().unwrap().files, 0);
    let path = ws.path().to_owned();
    ws.close(hyoka_workspace::RunVerdict::Success).unwrap();
    assert!(!path.exists());
    make_writable(&starter);
}

#[test]
fn links_are_recreated_only_when_they_stay_inside() {
    let root = scratch();
    let outside = sentinel(root.path());
    let starter = root.path().join("starter");
    std::fs::create_dir_all(starter.join("lib/deep")).unwrap();
    std::fs::write(starter.join("lib/real.txt"), b"real").unwrap();
    symlink("real.txt", starter.join("lib/alias.txt")).unwrap();
    symlink("..", starter.join("lib/deep/up")).unwrap();
    symlink("missing-target", starter.join("dangling")).unwrap();
    symlink(&outside.file, starter.join("abs-out")).unwrap();
    symlink("../outside/precious.txt", starter.join("rel-out")).unwrap();
    symlink("../../../outside", starter.join("lib/deep/far-out")).unwrap();
    // Each link alone points inside, together they climb out: `here` is the root itself, so
    // `here/..` is the root's parent.
    symlink(".", starter.join("here")).unwrap();
    symlink("here/..", starter.join("sneaky")).unwrap();
    // A link to a directory outside must not be followed: its contents are never copied.
    symlink(&outside.dir, starter.join("dir-out")).unwrap();

    let mut opts = options(root.path(), "starter-links");
    opts.starter = Some(starter.clone());
    let ws = TempWorkspace::create(&opts).unwrap();
    let report = ws.starter_report().unwrap().clone();
    let mut skipped: Vec<_> = report
        .skipped
        .iter()
        .map(|s| {
            assert!(matches!(s.reason, SkipReason::LinkEscapes { .. }), "{s:?}");
            s.path.to_str().unwrap().to_owned()
        })
        .collect();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            "abs-out",
            "dir-out",
            "lib/deep/far-out",
            "rel-out",
            "sneaky"
        ]
    );
    assert_eq!(report.links, 4, "alias, up, dangling, here");
    assert_eq!(ws.read_file(Path::new("lib/alias.txt")).unwrap(), b"real");
    assert_eq!(
        ws.read_file(Path::new("lib/deep/up/real.txt")).unwrap(),
        b"real"
    );
    assert!(
        std::fs::symlink_metadata(ws.path().join("dangling"))
            .unwrap()
            .is_symlink()
    );
    for gone in [
        "abs-out",
        "rel-out",
        "dir-out",
        "sneaky",
        "lib/deep/far-out",
    ] {
        assert!(
            std::fs::symlink_metadata(ws.path().join(gone)).is_err(),
            "{gone}"
        );
    }
    assert!(!ws.path().join("precious.txt").exists());
    ws.close(hyoka_workspace::RunVerdict::Success).unwrap();
    outside.assert_intact();
}

#[test]
fn a_starter_that_is_a_file_is_refused() {
    let root = scratch();
    let file = root.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let mut opts = options(root.path(), "bad-starter");
    opts.starter = Some(file);
    assert!(TempWorkspace::create(&opts).is_err());
    assert_eq!(crate::support::entries(root.path()), ["file"]);
}

#[test]
fn injected_files_keep_link_safety_and_count_as_baseline() {
    use hyoka_workspace::Injection;
    let root = scratch();
    let outside = sentinel(root.path());
    let skills = root.path().join("skills");
    std::fs::create_dir_all(skills.join("review")).unwrap();
    std::fs::write(skills.join("review/SKILL.md"), b"# review").unwrap();
    symlink("review/SKILL.md", skills.join("alias.md")).unwrap();
    symlink(&outside.file, skills.join("leak")).unwrap();
    let instructions = root.path().join("CLAUDE.md");
    std::fs::write(&instructions, b"be careful").unwrap();
    std::fs::set_permissions(&instructions, std::fs::Permissions::from_mode(0o640)).unwrap();
    let starter = root.path().join("starter");
    std::fs::create_dir_all(&starter).unwrap();
    // A starter link that would redirect an injection outside.
    symlink(&outside.dir, starter.join("trap")).unwrap();

    let mut opts = options(root.path(), "inject");
    opts.starter = Some(starter.clone());
    opts.inject = vec![
        Injection {
            source: skills.clone(),
            target: ".claude/skills".into(),
        },
        Injection {
            source: instructions.clone(),
            target: "CLAUDE.md".into(),
        },
    ];
    let ws = TempWorkspace::create(&opts).unwrap();
    assert_eq!(
        ws.read_file(Path::new(".claude/skills/review/SKILL.md"))
            .unwrap(),
        b"# review"
    );
    assert_eq!(
        ws.read_file(Path::new(".claude/skills/alias.md")).unwrap(),
        b"# review"
    );
    assert!(std::fs::symlink_metadata(ws.path().join(".claude/skills/leak")).is_err());
    assert_eq!(mode(&ws.path().join("CLAUDE.md")), 0o640);
    let report = ws.starter_report().unwrap();
    assert!(
        report.skipped.iter().any(|s| s.path == Path::new("leak")),
        "{report:?}"
    );
    assert_eq!(
        ws.usage().unwrap().files,
        0,
        "injected files are baseline, not output"
    );
    ws.close(hyoka_workspace::RunVerdict::Success).unwrap();

    // The starter's link that leads outside was never recreated, so an injection through its
    // name lands in a real directory inside.
    let mut opts = options(root.path(), "inject-trap");
    opts.starter = Some(starter);
    opts.inject = vec![Injection {
        source: skills.clone(),
        target: "trap/skills".into(),
    }];
    let ws = TempWorkspace::create(&opts).unwrap();
    assert!(
        std::fs::symlink_metadata(ws.path().join("trap"))
            .unwrap()
            .is_dir()
    );
    assert!(!outside.dir.join("skills").exists());
    ws.close(hyoka_workspace::RunVerdict::Success).unwrap();
    outside.assert_intact();

    // A target that climbs out is refused before anything is copied, and nothing stays.
    let mut opts = options(root.path(), "inject-up");
    opts.inject = vec![Injection {
        source: skills,
        target: "../escaped".into(),
    }];
    let err = TempWorkspace::create(&opts).unwrap_err();
    assert!(
        matches!(err, hyoka_workspace::WorkspaceError::InvalidPath { .. }),
        "{err}"
    );
    assert!(!root.path().join("escaped").exists());
    let left: Vec<_> = crate::support::entries(root.path())
        .into_iter()
        .filter(|n| n.starts_with("hyoka-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
