//! Parsing a checker's answer (`respawn-reference.md` §5c 105), building its prompt (§5d
//! 116), and running it (§5b items 73 and 74: stdin, never argv; nothing left behind).

use hyoka_respawn::{CheckOutcome, IdleVerdict};

use super::{parse, prompt, run};

#[track_caller]
fn check(output: &str, expected: Result<(IdleVerdict, &str), &str>) {
    let got = parse(
        output,
        &[
            ("IDLE", IdleVerdict::Idle),
            ("WORKING", IdleVerdict::Working),
        ],
    );
    match (got, expected) {
        (CheckOutcome::Verdict { verdict, reasoning }, Ok((v, r))) => {
            assert_eq!((verdict, reasoning.as_str()), (v, r), "{output:?}");
        }
        (CheckOutcome::Failed { message }, Err(contains)) => {
            assert!(message.contains(contains), "{output:?}: {message}");
        }
        (got, expected) => panic!("{output:?}: got {got:?}, expected {expected:?}"),
    }
}

#[test]
fn s5c_105_verdicts_are_parsed_from_the_first_line() {
    check(
        "IDLE\nThe task is done.\n",
        Ok((IdleVerdict::Idle, "The task is done.")),
    );
    check("idle\nDone.", Ok((IdleVerdict::Idle, "Done.")));
    check(
        "WORKING",
        Ok((IdleVerdict::Working, "AI determined: WORKING")),
    );
    check(
        "  Working: a spinner\nmore",
        Ok((IdleVerdict::Working, "more")),
    );
    check("garbage", Err("could not parse"));
    check("warning: x\nIDLE", Err("could not parse"));
    check("", Err("empty"));
    check("IDLENESS", Err("could not parse"));
}

#[test]
fn d116_output_is_inserted_literally() {
    let text = prompt("head ", "cost $& and $' and $`", "IDLE or WORKING");
    assert!(text.contains("cost $& and $' and $`"), "{text}");
}

#[tokio::test]
async fn issue_1_a_large_prompt_goes_through_stdin_never_argv() {
    // 200 KB of context: far beyond what argv would take comfortably; the command sees it
    // on stdin and reports its size.
    let context = "x".repeat(200_000);
    let prompt = prompt("head ", &context, "IDLE or WORKING");
    let out = run("wc -c; echo IDLE >&2", &prompt, &[]).await.unwrap();
    let bytes: usize = out.trim().parse().unwrap();
    assert_eq!(bytes, prompt.len());
}

#[tokio::test]
async fn issue_2_a_cancelled_check_leaves_nothing_behind() {
    // The checker starts a background child and hangs; dropping the check kills the group.
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let command = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let check = run(&command, "prompt", &[]);
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), check).await;
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z'))
        })
    });
    assert!(gone, "the checker's child {pid} survived");
}

#[tokio::test]
async fn a_crashing_checker_is_an_error() {
    let err = run("echo boom >&2; exit 3", "p", &[]).await.unwrap_err();
    assert!(err.contains("code 3") && err.contains("boom"), "{err}");
}
