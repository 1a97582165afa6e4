//! `hyoka run -- COMMAND`: records, exit codes, workspaces, timeouts, output capture.

use crate::support::{Scratch, hyoka, pid_alive, read_pid, stderr};

#[test]
fn a_passing_command_writes_its_records_and_removes_its_workspace() {
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "pass-1",
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2; mkdir -p sub; printf abc > sub/f; test \"$HYOKA_RUN_ID\" = pass-1 && test \"$HYOKA_EVAL_ID\" = main && test \"$HYOKA_WORKSPACE\" = \"$PWD\"",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("pass-1", "main");
    assert_eq!(report["status"], "passed");
    assert_eq!(report["termination"], "exited");
    assert_eq!(report["exit_code"], 0);
    assert_eq!(report["run_id"], "pass-1");
    assert_eq!(report["eval_id"], "main");
    assert_eq!(report["counts"]["files"], 1);
    assert_eq!(report["counts"]["output_bytes"], 3);
    assert_eq!(report["cleanup"]["workspace_removed"], true);
    let workspace = report["workspace"].as_str().unwrap();
    assert!(
        workspace.starts_with(s.ws_root().join("hyoka-pass-1-").to_str().unwrap()),
        "{workspace}"
    );
    for field in [
        "command",
        "started_at",
        "ended_at",
        "duration_ms",
        "signal",
        "limits",
    ] {
        assert!(report.get(field).is_some(), "report lacks {field}");
    }
    let log = std::fs::read_to_string(s.reports().join("pass-1/main/output.log")).unwrap();
    assert!(log.contains("out\n") && log.contains("err\n"), "{log:?}");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.reports().join("pass-1/run.json")).unwrap())
            .unwrap();
    assert_eq!(run["status"], "passed");
    assert_eq!(run["evals"][0]["eval_id"], "main");
    assert!(s.reports().join("pass-1/owner.lock").exists());
    s.assert_no_workspaces();
}

#[test]
fn a_failing_command_exits_1_and_is_reported() {
    let s = Scratch::new();
    let out = s.run(&["--run-id", "fail-1", "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(1));
    let report = s.report("fail-1", "main");
    assert_eq!(report["status"], "failed");
    assert_eq!(report["termination"], "exited");
    assert_eq!(report["exit_code"], 3);
    s.assert_no_workspaces();
}

#[test]
fn a_missing_command_is_spawn_failed_with_records() {
    let s = Scratch::new();
    let out = s.run(&["--run-id", "nocmd", "--", "/definitely/not/a/command"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("nocmd", "main");
    // The agent's own command missing is its result, not the machine's fault.
    assert_eq!(report["status"], "failed");
    assert!(report.get("error_kind").is_none(), "{report}");
    assert_eq!(report["termination"], "spawn_failed");
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("/definitely/not/a/command")
    );
    s.assert_no_workspaces();
}

#[test]
fn a_timeout_stops_the_agent_and_its_group() {
    let s = Scratch::new();
    let pidfile = s.path().join("pids");
    let script = format!(
        "sleep 300 & echo $! > {p}.child; echo $$ > {p}; wait",
        p = pidfile.display()
    );
    let out = s.run(&[
        "--run-id",
        "slow",
        "--timeout",
        "1s",
        "--grace",
        "1s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("slow", "main");
    assert_eq!(report["termination"], "timeout");
    assert_eq!(report["status"], "failed");
    let agent = read_pid(&pidfile);
    let child = read_pid(&pidfile.with_extension("child"));
    assert!(!pid_alive(agent), "agent {agent} survived");
    assert!(!pid_alive(child), "child {child} survived");
    s.assert_no_workspaces();
}

#[test]
fn keep_workspace_on_failure_keeps_only_failed_runs() {
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "k-pass",
        "--keep-workspace",
        "on-failure",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        s.report("k-pass", "main")["cleanup"]["workspace_removed"],
        true
    );
    s.assert_no_workspaces();

    let out = s.run(&[
        "--run-id",
        "k-fail",
        "--keep-workspace",
        "on-failure",
        "--",
        "sh",
        "-c",
        "echo x > kept.txt; exit 1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = s.report("k-fail", "main");
    let kept = report["cleanup"]["workspace_kept_at"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        std::fs::read_to_string(std::path::Path::new(&kept).join("kept.txt")).unwrap(),
        "x\n"
    );
    assert_eq!(report["cleanup"]["workspace_removed"], false);
    std::fs::remove_dir_all(kept).unwrap();
}

#[test]
fn the_starter_is_copied_and_does_not_count_as_output() {
    let s = Scratch::new();
    let starter = s.path().join("starter");
    std::fs::create_dir_all(starter.join(".hidden")).unwrap();
    std::fs::write(starter.join("README.md"), "hello").unwrap();
    std::fs::write(starter.join(".hidden/config"), "x").unwrap();
    let out = s.run(&[
        "--run-id",
        "starter",
        "--starter",
        starter.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "test \"$(cat README.md)\" = hello && test -f .hidden/config && echo new > new.txt",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("starter", "main");
    assert_eq!(report["counts"]["files"], 1);
    assert_eq!(report["counts"]["output_bytes"], 4);
    s.assert_no_workspaces();
}

#[test]
fn output_log_is_capped_with_a_marker() {
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "big",
        "--",
        "sh",
        "-c",
        "head -c 17000000 /dev/zero; echo done >&2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = std::fs::read(s.reports().join("big/main/output.log")).unwrap();
    let cap = 16 * 1024 * 1024;
    assert!(log.len() > cap && log.len() < cap + 200, "{}", log.len());
    let tail = String::from_utf8_lossy(&log[cap..]);
    assert!(
        tail.contains("output.log truncated at 16777216 bytes"),
        "{tail}"
    );
    s.assert_no_workspaces();
}

#[test]
fn two_default_run_ids_differ_and_follow_the_format() {
    let s = Scratch::new();
    for _ in 0..2 {
        let out = s.run(&["--", "true"]);
        assert_eq!(out.status.code(), Some(0));
    }
    let mut runs: Vec<String> = std::fs::read_dir(s.reports())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for id in &runs {
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(parts.len(), 3, "{id}");
        assert_eq!(parts[0].len(), 8, "{id}");
        assert_eq!(parts[1].len(), 6, "{id}");
        assert_eq!(parts[2].len(), 6, "{id}");
        assert!(
            parts[0]
                .bytes()
                .chain(parts[1].bytes())
                .all(|b| b.is_ascii_digit()),
            "{id}"
        );
    }
    let _ = hyoka;
}

/// Claude Code 2.1 writes `g.txt.tmp.<pid>.<hex>` and renames it to `g.txt`: the timeline
/// records the final name, created (or changed, for a file of the starter).
#[test]
fn a_file_renamed_into_place_is_recorded_by_its_final_name() {
    let s = Scratch::new();
    let starter = s.path().join("starter");
    std::fs::create_dir_all(&starter).unwrap();
    std::fs::write(starter.join("old.txt"), "before").unwrap();
    let out = s.run(&[
        "--run-id",
        "rename",
        "--starter",
        starter.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "printf hello > g.txt.tmp.1.ab && mv g.txt.tmp.1.ab g.txt && printf after > old.tmp && mv old.tmp old.txt",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let timeline: serde_json::Value = serde_json::from_slice(
        &std::fs::read(s.reports().join("rename/main/action_timeline.json")).unwrap(),
    )
    .unwrap();
    let files: Vec<(String, String)> = timeline["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("file_")))
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        files.contains(&("file_created".to_owned(), "g.txt".to_owned())),
        "{files:?}"
    );
    assert!(
        files.contains(&("file_changed".to_owned(), "old.txt".to_owned())),
        "{files:?}"
    );
    let report = s.report("rename", "main");
    assert_eq!(
        report["counts"]["files"], 2,
        "g.txt created, old.txt changed"
    );
    s.assert_no_workspaces();
}

/// Outside a sandbox, agents start under the static shim embedded in hyoka, run from a
/// sealed memfd (`build.rs`, `ShimImage`); inside one, under the `hyoka-shim` file.
#[test]
fn an_agent_outside_a_sandbox_starts_under_the_embedded_shim() {
    let image = std::fs::metadata(concat!(env!("OUT_DIR"), "/hyoka-shim.image")).unwrap();
    if image.len() == 0 {
        eprintln!("skipping: this build embeds no static shim (no musl target installed)");
        return;
    }
    let s = Scratch::new();
    let seen = s.path().join("parent");
    let script = format!(
        "readlink /proc/$PPID/exe > {0}; tr '\\0' ' ' < /proc/$PPID/cmdline >> {0}; echo >> {0}; cat /proc/$PPID/comm >> {0}",
        seen.display()
    );
    let out = s.run(&["--run-id", "memfd-1", "--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = std::fs::read_to_string(&seen).unwrap();
    let mut lines = seen.lines();
    let (exe, cmdline, comm) = (lines.next().unwrap(), lines.next().unwrap(), lines.next());
    assert!(exe.starts_with("/memfd:hyoka-shim"), "{seen}");
    // Not the descriptor's number the kernel names a program run from a memfd after.
    assert_eq!(comm, Some("hyoka-shim"), "{seen}");
    let program = cmdline.split(' ').next().unwrap();
    assert!(program.ends_with("/hyoka-shim"), "{seen}");
    assert!(!cmdline.contains("__shim"), "{seen}");
    // The same run with the image turned off starts the shim from its file.
    let out = s
        .hyoka("run")
        .env("HYOKA_EMBED_SHIM", "0")
        .args(["--run-id", "memfd-2", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = std::fs::read_to_string(s.path().join("parent")).unwrap();
    assert!(!seen.starts_with("/memfd:"), "{seen}");
}
