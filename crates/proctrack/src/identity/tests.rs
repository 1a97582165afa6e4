//! Tests of the stat parser and the identity string form.

use super::*;

#[track_caller]
fn check(stat: &str, expected: Option<(i32, &str, char, i32, i32, u64)>) {
    let got = parse_stat(stat).map(|p| (p.pid, p.comm, p.state, p.ppid, p.pgid, p.start_ticks));
    let expected = expected.map(|(pid, comm, state, ppid, pgid, ticks)| {
        (pid, comm.to_owned(), state, ppid, pgid, ticks)
    });
    assert_eq!(got, expected, "{stat:?}");
}

const TAIL: &str = "0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615";

#[test]
fn parses_plain_stat() {
    check(
        &format!("4242 (sleep) S 17 4242 4242 {TAIL}"),
        Some((4242, "sleep", 'S', 17, 4242, 987_654)),
    );
}

#[test]
fn comm_may_hold_spaces_and_parentheses() {
    check(
        &format!("77 (a) b (c)) Z 1 70 70 {TAIL}"),
        Some((77, "a) b (c)", 'Z', 1, 70, 987_654)),
    );
}

#[test]
fn rejects_garbage() {
    check("", None);
    check("12 sleep S 1 1 1", None);
    check("x (sleep) S 1 1 1", None);
    check("12 (sleep) S 1 1 1 0 0", None);
    check(")( 12", None);
}

#[test]
fn zombies_count_as_gone() {
    let zombie = parse_stat(&format!("9 (z) Z 1 9 9 {TAIL}")).unwrap();
    assert!(zombie.is_gone());
    let live = parse_stat(&format!("9 (z) S 1 9 9 {TAIL}")).unwrap();
    assert!(!live.is_gone());
}

#[test]
fn identity_round_trips_and_refuses_low_pids() {
    let boot = "0f3c1a9e-7d2b-4a61-9c55-1b2e3d4f5a6b";
    let id: Identity = format!("4242 987654 {boot}").parse().unwrap();
    assert_eq!(id.to_string(), format!("4242 987654 {boot}"));
    for bad in [
        format!("1 5 {boot}"),
        format!("0 5 {boot}"),
        format!("-1 5 {boot}"),
        format!("12 x {boot}"),
        "12 5 not-a-boot-id".to_owned(),
        format!("12 5 {boot} extra"),
        String::new(),
    ] {
        assert!(bad.parse::<Identity>().is_err(), "{bad:?}");
    }
}

#[test]
fn ids_follow_the_cli_contract() {
    assert!(validate_id("run", "20261129-185418-x1y2z3").is_ok());
    assert!(validate_id("eval", "main").is_ok());
    for bad in ["", "-x", ".x", "a/b", "a b", "a\tb", &"x".repeat(65)] {
        assert!(validate_id("run", bad).is_err(), "{bad:?}");
    }
}

#[test]
fn cpu_ticks_add_own_and_waited_for_children() {
    let ticks = |stat: &str| parse_stat(stat).map(|p| p.cpu_ticks);
    // utime 1 + stime 2 in the shared tail.
    assert_eq!(
        ticks(&format!("4242 (sleep) S 17 4242 4242 {TAIL}")),
        Some(3)
    );
    // A command name with `) ` inside, and children's ticks (cutime 300, cstime 40).
    let stat = "77 (a) 1 2 3 (c)) R 1 70 70 0 -1 0 5 0 0 0 1000 200 300 40 20 0 1 0 55";
    assert_eq!(ticks(stat), Some(1540));
    assert_eq!(ticks("77 (x) R 1 70 70 0 -1 0 5"), None);
    assert_eq!(
        ticks("7 (x) R 1 7 7 0 -1 0 5 0 0 0 ten 0 0 0 20 0 1 0 55"),
        None
    );
}

#[test]
fn a_workspace_owner_is_running_only_if_it_predates_the_workspace() {
    let me = Identity::current().unwrap();
    let pid = me.pid();
    let now = crate::clock::unix_now();
    // We started before a workspace made now, so we can be its owner...
    assert!(owner_running(pid, None, None, now));
    // ...but not the owner of one made long before we started: that owner is gone and our
    // pid is a reuse.
    assert!(!owner_running(pid, None, None, 1_000_000_000));
    // Exact identities, other boots, and dead pids.
    assert!(owner_running(pid, Some(me.proc_ref.start_ticks), None, 0));
    assert!(!owner_running(
        pid,
        Some(me.proc_ref.start_ticks + 1),
        None,
        0
    ));
    let other_boot = "11111111-2222-4333-8444-555555555555";
    assert!(!owner_running(pid, None, Some(other_boot), now));
    assert!(!owner_running(4_194_000, None, None, now));
}
