//! Workspaces kept by `--keep-workspace`: the run's summary names them, `hyoka clean` lists
//! them as kept and never removes them (also after a crash), `hyoka clean --kept` does.

use std::path::PathBuf;
use std::process::Output;

use crate::support::{Scratch, pid_alive, read_pid, send, stderr, wait_for_ledger};

fn clean(s: &Scratch, extra: &[&str]) -> Output {
    s.hyoka("clean")
        .args(["--grace", "1s"])
        .args(extra)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The kept path `report.json` names, checked against the human summary.
fn kept_at(s: &Scratch, run_id: &str, summary: &Output) -> PathBuf {
    let report = s.report(run_id, "main");
    let path = report["cleanup"]["workspace_kept_at"]
        .as_str()
        .unwrap_or_else(|| panic!("{run_id} kept nothing: {report}"));
    assert!(
        stdout(summary).contains(&format!("kept workspace (main): {path}")),
        "the summary does not name the kept workspace: {}",
        stdout(summary)
    );
    PathBuf::from(path)
}

#[track_caller]
fn assert_kept(path: &std::path::Path, contents: &str) {
    assert_eq!(
        std::fs::read_to_string(path.join("notes.txt"))
            .ok()
            .as_deref(),
        Some(contents),
        "{} or its files are gone",
        path.display()
    );
}

/// Regression test for issue 12: `hyoka clean` deleted the workspaces `--keep-workspace
/// always` and `on-failure` had kept (and `--dry-run` said "would remove"). They are listed
/// as kept, never removed by `clean`, and removed by `clean --kept`.
#[test]
fn clean_lists_kept_workspaces_and_only_clean_kept_removes_them() {
    let s = Scratch::new();
    let always = s.run(&[
        "--run-id",
        "always",
        "--keep-workspace",
        "always",
        "--",
        "sh",
        "-c",
        "echo always > notes.txt",
    ]);
    assert_eq!(always.status.code(), Some(0), "{}", stderr(&always));
    let failed = s.run(&[
        "--run-id",
        "failed",
        "--keep-workspace",
        "on-failure",
        "--",
        "sh",
        "-c",
        "echo failed > notes.txt; exit 3",
    ]);
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    let passed = s.run(&[
        "--run-id",
        "passed",
        "--keep-workspace",
        "on-failure",
        "--",
        "true",
    ]);
    assert_eq!(passed.status.code(), Some(0), "{}", stderr(&passed));
    assert!(!stdout(&passed).contains("kept workspace"));
    let kept = [
        kept_at(&s, "always", &always),
        kept_at(&s, "failed", &failed),
    ];
    assert_eq!(std::fs::read_dir(s.ws_root()).unwrap().count(), 2);

    let dry = clean(&s, &["--dry-run"]);
    assert_eq!(
        dry.status.code(),
        Some(0),
        "{}{}",
        stdout(&dry),
        stderr(&dry)
    );
    assert!(!stdout(&dry).contains("would remove"), "{}", stdout(&dry));
    let real = clean(&s, &[]);
    assert_eq!(
        real.status.code(),
        Some(0),
        "{}{}",
        stdout(&real),
        stderr(&real)
    );
    for (path, what) in kept.iter().zip(["always\n", "failed\n"]) {
        assert!(
            stdout(&real).contains(&format!("workspace {}: kept", path.display())),
            "{}",
            stdout(&real)
        );
        assert_kept(path, what);
    }
    let json: serde_json::Value = serde_json::from_slice(&clean(&s, &["--json"]).stdout).unwrap();
    let actions: Vec<&str> = json["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["action"] != "already_gone")
        .map(|w| w["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["kept", "kept"], "{json}");

    // A relative workspace root names the same directories (they were "not directly inside
    // a workspace root" and listed twice).
    let relative = crate::support::hyoka()
        .args(["clean", "--reports"])
        .arg(s.reports())
        .args(["--workspace-root", "ws"])
        .current_dir(s.path())
        .output()
        .unwrap();
    let text = stdout(&relative);
    assert_eq!(
        relative.status.code(),
        Some(0),
        "{text}{}",
        stderr(&relative)
    );
    assert_eq!(text.matches(": kept for you").count(), 2, "{text}");
    assert!(!text.contains("refused"), "{text}");
    // Younger than the cutoff: still kept.
    let young = clean(&s, &["--kept", "--older-than", "1h"]);
    assert_eq!(young.status.code(), Some(0), "{}", stderr(&young));
    for (path, what) in kept.iter().zip(["always\n", "failed\n"]) {
        assert_kept(path, what);
    }
    let would = clean(&s, &["--kept", "--dry-run"]);
    assert!(
        stdout(&would).contains("would remove 1 workspace"),
        "{}",
        stdout(&would)
    );
    assert!(kept.iter().all(|p| p.exists()));
    let removed = clean(&s, &["--kept"]);
    assert_eq!(
        removed.status.code(),
        Some(0),
        "{}{}",
        stdout(&removed),
        stderr(&removed)
    );
    s.assert_no_workspaces();
    // `--older-than` without `--kept` is bad input.
    assert_eq!(clean(&s, &["--older-than", "1h"]).status.code(), Some(2));
}

/// Regression test for issue 12: with `--keep-workspace always` the keep is decided when the
/// workspace is made, so repairing a crashed run stops its processes and keeps the
/// workspace.
#[test]
fn a_crashed_always_run_is_repaired_and_its_workspace_kept() {
    let s = Scratch::new();
    let ready = s.path().join("ready");
    let script = format!(
        "echo crashed > notes.txt; sleep 600 & echo $! > {}; wait",
        ready.display()
    );
    let mut run = s.spawn_run(
        &[
            "--run-id",
            "crashed",
            "--keep-workspace",
            "always",
            "--grace",
            "1s",
        ],
        &script,
    );
    let sleeper = read_pid(&ready);
    wait_for_ledger(&s.reports().join("crashed/pids.txt"), &[sleeper]);
    send(&run, rustix::process::Signal::KILL);
    run.wait().unwrap();
    let out = clean(&s, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(!pid_alive(sleeper), "clean left {sleeper} running");
    let workspaces: Vec<PathBuf> = std::fs::read_dir(s.ws_root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(workspaces.len(), 1, "{}", stdout(&out));
    assert_kept(&workspaces[0], "crashed\n");
    assert_eq!(clean(&s, &["--kept"]).status.code(), Some(0));
    s.assert_no_workspaces();
}
