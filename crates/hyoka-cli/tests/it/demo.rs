//! `hyoka demo`: runs end to end, exits 0, leaves no workspace behind.

use crate::support::{Scratch, hyoka, stderr};

#[test]
fn the_demo_runs_and_cleans_up() {
    let s = Scratch::new();
    let out = hyoka()
        .arg("demo")
        .arg("--reports")
        .arg(s.reports())
        .arg("--workspace-root")
        .arg(s.ws_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("reports in"), "{stdout}");
    assert!(stdout.contains("workspace removed"), "{stdout}");
    let runs: Vec<_> = std::fs::read_dir(s.reports()).unwrap().collect();
    assert_eq!(runs.len(), 1);
    s.assert_no_workspaces();
}
