//! Tests of `status.json`: what is written is what `hyoka ps` reads back, in the shape it
//! has always had on disk.

use super::*;

#[track_caller]
fn check(status: &PhaseNow, file: &serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    write_status(dir.path(), status).unwrap();
    let text = std::fs::read_to_string(dir.path().join(STATUS_FILE)).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap(),
        *file
    );
    let read = read_status(dir.path()).expect("the status reads back");
    assert_eq!(
        read,
        PhaseNow {
            pid_comm: None,
            ..status.clone()
        }
    );
    remove_status(dir.path());
    assert!(read_status(dir.path()).is_none());
}

#[test]
fn an_eval_status_names_its_phase_and_counts() {
    let counts = Counts {
        turns: 2,
        actions: 3,
        ..Counts::default()
    };
    check(
        &PhaseNow {
            phase: "agent".to_owned(),
            since: "2026-01-01T00:00:01.000Z".to_owned(),
            started: Some("2026-01-01T00:00:00.000Z".to_owned()),
            counts: Some(counts),
            ..PhaseNow::default()
        },
        &serde_json::json!({
            "phase": "agent", "since": "2026-01-01T00:00:01.000Z",
            "started": "2026-01-01T00:00:00.000Z",
            "counts": {"turns": 2, "actions": 3, "files": 0, "output_bytes": 0, "tmp_files": 0,
                "tmp_bytes": 0, "home_files": 0, "home_bytes": 0},
        }),
    );
}

#[test]
fn a_session_status_names_its_backend_and_agent_but_never_its_command() {
    check(
        &PhaseNow {
            phase: SESSION_PHASE.to_owned(),
            since: "t".to_owned(),
            started: Some("t".to_owned()),
            backend: Some("tmux".to_owned()),
            tmux_session: Some("work".to_owned()),
            pid: Some(42),
            pid_start_ticks: Some(7),
            pid_comm: Some("claude".to_owned()),
            ..PhaseNow::default()
        },
        &serde_json::json!({
            "phase": "session", "since": "t", "started": "t", "backend": "tmux",
            "tmux_session": "work", "pid": 42, "pid_start_ticks": 7, "pid_comm": "claude",
        }),
    );
}

#[test]
fn what_is_not_a_status_reads_as_none() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(STATUS_FILE), b"[1, 2]").unwrap();
    assert!(read_status(dir.path()).is_none());
}
