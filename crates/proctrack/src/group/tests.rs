//! Tests of a command in its own process group, with real processes: whatever the command
//! leaves in its group is gone after a timeout, a stop or a drop, proven through /proc.

use std::time::Duration;

use super::*;

fn sh(script: &str) -> Command {
    let mut command = Command::new("/bin/sh");
    command.args(["-c", script]);
    command
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The pid a command wrote to `file` (its background process), once the leader exited.
fn pid_in(file: &std::path::Path) -> i32 {
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[track_caller]
fn assert_alive(pid: i32, alive: bool) {
    let live = NativeProcTable::new()
        .process(pid)
        .is_some_and(|p| !p.is_gone());
    assert_eq!(live, alive, "pid {pid}");
}

#[test]
fn a_command_past_its_timeout_and_dropped_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pid");
    runtime().block_on(async {
        let script = format!(
            "sleep 300 & echo $! > {}.tmp; mv {0}.tmp {0}; wait",
            file.display()
        );
        let mut child = GroupChild::spawn(sh(&script)).unwrap();
        let pgid = i32::try_from(child.pgid().unwrap()).unwrap();
        // The background sleep is written before the leader waits: poll for the file (its
        // readiness), never a fixed sleep.
        while !file.exists() {
            tokio::time::sleep(POLL).await;
        }
        let exit = child
            .wait_within(Duration::from_millis(50), std::future::pending())
            .await;
        assert!(matches!(exit, GroupExit::TimedOut), "{exit:?}");
        let sleeper = pid_in(&file);
        assert_alive(sleeper, true);
        drop(child);
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while !live_members(pgid).is_empty() {
                tokio::time::sleep(POLL).await;
            }
        })
        .await;
        assert_alive(sleeper, false);
    });
}

#[test]
fn a_stop_after_the_leader_exited_ends_what_it_left_in_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pid");
    runtime().block_on(async {
        let script = format!("sleep 300 & echo $! > {}", file.display());
        let mut child = GroupChild::spawn(sh(&script)).unwrap();
        let exit = child
            .wait_within(Duration::from_secs(30), std::future::pending())
            .await;
        assert!(
            matches!(exit, GroupExit::Exited(s) if s.success()),
            "{exit:?}"
        );
        let sleeper = pid_in(&file);
        assert_alive(sleeper, true);
        child.stop(Signal::Term, Duration::from_secs(5)).await;
        assert_alive(sleeper, false);
    });
}

#[test]
fn a_cancelled_wait_says_so() {
    runtime().block_on(async {
        let mut child = GroupChild::spawn(sh("sleep 300")).unwrap();
        let exit = child.wait_within(Duration::from_secs(30), async {}).await;
        assert!(matches!(exit, GroupExit::Cancelled), "{exit:?}");
        child.stop(Signal::Term, Duration::ZERO).await;
        assert!(live_members(i32::try_from(child.pgid().unwrap()).unwrap()).is_empty());
    });
}
