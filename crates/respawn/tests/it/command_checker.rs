//! The command-backed checker with real processes: the prompt goes through stdin (never argv),
//! verdicts parse, failures are errors, and a timeout kills the whole process group.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyoka_idle_detect::{CheckError, IdleAnswer, IdleChecker, PlanAnswer, PlanChecker};
use hyoka_respawn::{CommandChecker, CommandCheckerOptions};

fn sh(script: &str) -> CommandCheckerOptions {
    CommandCheckerOptions::new("/bin/sh", ["-c", script])
}

#[track_caller]
fn pid_alive(pid: i32) -> bool {
    // A zombie has been killed and only waits for its parent.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[tokio::test]
async fn the_prompt_reaches_stdin_and_the_verdict_parses() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut options = sh(
        "wc -c > /dev/null; cat /proc/$$/cmdline | tr '\\0' ' ' >&2; printf 'IDLE\\nlooks done\\n'",
    );
    let pids = Arc::clone(&seen);
    options.on_spawn = Some(Arc::new(move |pid| pids.lock().expect("lock").push(pid)));
    let checker = CommandChecker::new(options);
    let context = "x".repeat(200_000) + "✻ Worked for 5s";
    let reply = checker.check_idle(&context).await.expect("a verdict");
    assert_eq!(reply.verdict, IdleAnswer::Idle);
    assert_eq!(reply.reasoning, "looks done");
    assert_eq!(seen.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn the_prompt_is_never_an_argument() {
    // The child prints its own argv; the 16,000-character context must not be in it.
    let checker = CommandChecker::new(sh(
        "cat > /dev/null; printf 'WORKING\\n'; tr '\\0' ' ' < /proc/$$/cmdline",
    ));
    let reply = checker
        .check_idle(&"marker-in-context ".repeat(1000))
        .await
        .expect("a verdict");
    assert_eq!(reply.verdict, IdleAnswer::Working);
    assert!(
        !reply.reasoning.contains("marker-in-context"),
        "{}",
        reply.reasoning
    );
}

#[tokio::test]
async fn garbage_empty_and_failing_commands_are_errors() {
    let garbage = CommandChecker::new(sh("cat > /dev/null; echo 'I think so'"));
    assert!(matches!(
        garbage.check_idle("x").await,
        Err(CheckError::Unparsable { .. })
    ));
    let empty = CommandChecker::new(sh("cat > /dev/null"));
    assert!(matches!(
        empty.check_plan("x").await,
        Err(CheckError::EmptyOutput)
    ));
    let failing = CommandChecker::new(sh("cat > /dev/null; echo oops >&2; exit 3"));
    match failing.check_idle("x").await {
        Err(CheckError::Failed {
            code: Some(3),
            stderr,
            ..
        }) => assert!(stderr.contains("oops")),
        other => panic!("{other:?}"),
    }
    let missing = CommandChecker::new(CommandCheckerOptions::new(
        "/nonexistent/checker",
        Vec::<String>::new(),
    ));
    assert!(matches!(
        missing.check_idle("x").await,
        Err(CheckError::Spawn { .. })
    ));
    let plan = CommandChecker::new(sh("cat > /dev/null; echo NOT_PLAN_MODE"));
    assert_eq!(
        plan.check_plan("x").await.map(|r| r.verdict).ok(),
        Some(PlanAnswer::NotPlanMode)
    );
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile_dir();
    let pid_file = dir.join("grandchild.pid");
    let script = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
    let mut options = sh(&script);
    options.timeout = Duration::from_millis(500);
    let checker = CommandChecker::new(options);
    let result = checker.check_idle("x").await;
    assert!(
        matches!(result, Err(CheckError::Timeout { .. })),
        "{result:?}"
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    let mut gone = false;
    for _ in 0..100 {
        if !pid_alive(pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "the grandchild {pid} survived the timeout");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn dropping_a_running_check_kills_its_group() {
    let dir = tempfile_dir();
    let pid_file = dir.join("leader.pid");
    let checker = CommandChecker::new(sh(&format!("echo $$ > {}; sleep 300", pid_file.display())));
    let run = checker.check_idle("x");
    // Let it start, then cancel by dropping the future.
    let _ = tokio::time::timeout(Duration::from_millis(300), run).await;
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    let mut gone = false;
    for _ in 0..100 {
        if !pid_alive(pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "the checker {pid} survived its cancellation");
    let _ = std::fs::remove_dir_all(dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "idle-detect-test-{}-{}",
        std::process::id(),
        fastrand_suffix()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn fastrand_suffix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::thread::current().id())
}
