//! `hyoka demo`: runs end to end, exits 0, leaves no workspace behind.

use crate::support::{Scratch, hyoka, stderr};

#[test]
fn the_demo_runs_and_cleans_up() {
    let s = Scratch::new();
    let out = s.hyoka("demo").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("all good"), "{stdout}");
    assert!(stdout.contains("0 survivors"), "{stdout}");
    assert!(stdout.contains("termination max_turns"), "{stdout}");
    assert!(
        !stdout.contains('\x1b'),
        "no colour when stdout is not a terminal: {stdout}"
    );
    assert!(
        stdout.contains("update → clear → init (1 cycle)"),
        "the respawn step ran one full cycle: {stdout}"
    );
    assert!(stdout.contains("(0 keys while busy)"), "{stdout}");
    // It ends with the page of its first run.
    let page = std::path::PathBuf::from(stdout.lines().last().unwrap().trim());
    assert!(
        page.starts_with(s.reports()) && page.ends_with("report.html"),
        "{stdout}"
    );
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .starts_with("<!doctype html>")
    );
    let runs: Vec<_> = std::fs::read_dir(s.reports())
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .collect();
    assert_eq!(
        runs.len(),
        3,
        "the eval, the limited eval and the crashed run"
    );
    s.assert_no_workspaces();
}

#[test]
fn doctor_reports_every_layer_as_json_and_text() {
    let out = hyoka().args(["doctor", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cgroup v2",
            "subreaper",
            "pidfd",
            "tmux",
            "inotify",
            "landlock",
            "netns"
        ]
    );
    for check in checks.as_array().unwrap() {
        assert!(check["available"].is_boolean());
        assert!(!check["effect"].as_str().unwrap().is_empty());
        if check["available"] == false {
            assert!(check["advice"].is_string(), "{check}");
        }
    }
    let text = hyoka().arg("doctor").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("containment in force"));
}

#[test]
fn the_demo_speaks_json_too() {
    let s = Scratch::new();
    let out = s.hyoka("demo").args(["--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["survivors"], 0);
    assert_eq!(summary["runs"].as_array().unwrap().len(), 3);
    assert!(
        std::path::Path::new(summary["page"].as_str().unwrap()).is_file(),
        "{summary}"
    );
    assert!(
        std::path::Path::new(summary["respawn_events"].as_str().unwrap()).is_file(),
        "{summary}"
    );
    s.assert_no_workspaces();
}

#[test]
fn bad_demo_paths_exit_2_before_anything_runs() {
    let s = Scratch::new();
    let file = s.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    for (reports, ws_root, bad) in [
        (
            s.reports(),
            s.path().join("missing"),
            s.path().join("missing"),
        ),
        (s.reports(), file.clone(), file.clone()),
        (file.clone(), s.ws_root(), file.clone()),
    ] {
        let out = hyoka()
            .arg("demo")
            .arg("--reports")
            .arg(&reports)
            .arg("--workspace-root")
            .arg(&ws_root)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&bad.display().to_string()),
            "{}",
            stderr(&out)
        );
        assert!(
            out.stdout.is_empty(),
            "nothing ran: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert!(!s.reports().exists(), "no reports were written");
}
