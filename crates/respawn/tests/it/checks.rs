//! The AI checks the driver runs, through `hyoka-idle-detect`'s command checker: what the
//! machine is told (`docs/respawn.md` §5c 105), how the prompt is built (§5d 116) and
//! delivered (§5b item 73), and that a cancelled check leaves nothing behind (§5b item 74).

use std::time::Duration;

use hyoka_idle_detect::{
    CheckError, IDLE_CONTEXT_CHARS, IdleAnswer, IdleChecker, idle_prompt, parse_idle_reply,
};
use hyoka_respawn::{CommandChecker, CommandCheckerOptions};

#[track_caller]
fn check(output: &str, expected: Result<(IdleAnswer, &str), &str>) {
    match (parse_idle_reply(output), expected) {
        (Ok(reply), Ok((verdict, reasoning))) => {
            assert_eq!(
                (reply.verdict, reply.reasoning.as_str()),
                (verdict, reasoning),
                "{output:?}"
            );
        }
        (Err(err), Err(contains)) => {
            assert!(err.to_string().contains(contains), "{output:?}: {err}");
        }
        (got, expected) => panic!("{output:?}: got {got:?}, expected {expected:?}"),
    }
}

#[test]
fn s5c_105_verdicts_are_read_from_the_first_line() {
    check(
        "IDLE\nThe task is done.\n",
        Ok((IdleAnswer::Idle, "The task is done.")),
    );
    check("idle\nDone.", Ok((IdleAnswer::Idle, "Done.")));
    check(
        "WORKING",
        Ok((IdleAnswer::Working, "AI determined: WORKING")),
    );
    check("garbage", Err("could not parse"));
    check("warning: something\nIDLE", Err("could not parse"));
    check("", Err("empty"));
}

#[test]
fn d116_output_is_inserted_literally() {
    let prompt = idle_prompt("cost $& and $' and $`");
    assert!(prompt.contains("cost $& and $' and $`"), "{prompt}");
}

fn shell(command: &str) -> CommandChecker {
    let mut options = CommandCheckerOptions::new("/bin/sh", ["-c", command]);
    options.timeout = Duration::from_secs(20);
    CommandChecker::new(options)
}

#[tokio::test]
async fn issue_1_a_large_prompt_goes_through_stdin_never_argv() {
    // 100,000 characters of context: the checker sees the whole prompt (with the last
    // 16,000 characters of context) on stdin and reports its size.
    let context = "x".repeat(100_000);
    let expected = idle_prompt(&context).len();
    assert!(expected > IDLE_CONTEXT_CHARS);
    let checker = shell("n=$(wc -c); echo IDLE; echo \"$n\"");
    let reply = checker.check_idle(&context).await.unwrap();
    assert_eq!(reply.verdict, IdleAnswer::Idle);
    assert_eq!(reply.reasoning.trim().parse::<usize>().unwrap(), expected);
}

#[tokio::test]
async fn issue_2_a_cancelled_check_leaves_nothing_behind() {
    // The checker starts a background child and hangs; dropping the check kills its group.
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let checker = shell(&format!(
        "sleep 300 & echo $! > {}; wait",
        pidfile.display()
    ));
    let mut check = checker.check_idle("context");
    let started = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            tokio::select! {
                _ = &mut check => panic!("the checker should hang"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            if std::fs::read_to_string(&pidfile).is_ok_and(|p| !p.trim().is_empty()) {
                return;
            }
        }
    })
    .await;
    assert!(started.is_ok(), "the checker never started its child");
    // Dropping the future cancels the check.
    drop(check);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z')));
            if !alive {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the checker's child {pid} survived");
}

#[tokio::test]
async fn a_crashing_checker_is_an_error() {
    let err = shell("echo boom >&2; exit 3")
        .check_idle("context")
        .await
        .unwrap_err();
    assert!(
        matches!(err, CheckError::Failed { code: Some(3), .. }),
        "{err}"
    );
}
