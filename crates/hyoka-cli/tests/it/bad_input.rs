//! Bad input of every kind: exit 2, one `error:` line naming the bad value, nothing created.

use crate::support::{Scratch, stderr};

#[track_caller]
fn check(s: &Scratch, args: &[&str], mentions: &str) {
    let out = s.run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    let error_lines: Vec<_> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(error_lines.len(), 1, "{args:?}: {err}");
    assert!(error_lines[0].contains(mentions), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !s.reports().exists(),
        "{args:?} created the reports directory"
    );
    s.assert_no_workspaces();
}

#[test]
fn bad_flags_ids_durations_and_paths() {
    let s = Scratch::new();
    let missing = s.path().join("missing");
    let file = s.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let (missing, file) = (missing.to_str().unwrap(), file.to_str().unwrap());
    check(&s, &["--run-id", "../evil", "--", "true"], "../evil");
    check(&s, &["--run-id", "", "--", "true"], "run id");
    check(&s, &["--run-id", &"x".repeat(65), "--", "true"], "64");
    check(&s, &["--timeout", "soon", "--", "true"], "soon");
    check(&s, &["--timeout", "-1s", "--", "true"], "-1s");
    check(&s, &["--grace", "5 parsecs", "--", "true"], "parsecs");
    check(
        &s,
        &["--keep-workspace", "sometimes", "--", "true"],
        "sometimes",
    );
    check(&s, &["--starter", missing, "--", "true"], missing);
    check(&s, &["--starter", file, "--", "true"], file);
    check(&s, &["--no-such-flag", "--", "true"], "--no-such-flag");
    check(&s, &[], "no agent command");
    check(&s, &["--", ""], "empty");
}

#[test]
fn a_bad_workspace_root_or_reports_path_is_refused() {
    let s = Scratch::new();
    let file = s.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let out = crate::support::hyoka()
        .args(["run", "--reports"])
        .arg(&file)
        .arg("--workspace-root")
        .arg(s.ws_root())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a directory"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "x",
        "the file was not touched"
    );

    let out = crate::support::hyoka()
        .args(["run", "--reports"])
        .arg(s.reports())
        .arg("--workspace-root")
        .arg(s.path().join("nowhere"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nowhere"), "{}", stderr(&out));
    assert!(!s.reports().exists());
}

#[test]
fn a_reused_run_id_is_refused_and_the_old_reports_kept() {
    let s = Scratch::new();
    assert_eq!(
        s.run(&["--run-id", "once", "--", "true"]).status.code(),
        Some(0)
    );
    let before = std::fs::read(s.reports().join("once/main/report.json")).unwrap();
    let out = s.run(&["--run-id", "once", "--", "false"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("once"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(s.reports().join("once/main/report.json")).unwrap(),
        before
    );
    s.assert_no_workspaces();
}
