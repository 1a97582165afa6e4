//! Tests of the orphan rule on hand-written process tables.

use super::*;

fn p(pid: i32, ppid: i32, sid: i32, state: char) -> ProcInfo {
    ProcInfo {
        pid,
        ppid,
        pgid: sid,
        sid,
        start_ticks: 1,
        state,
        comm: format!("p{pid}"),
        cpu_ticks: 0,
    }
}

#[track_caller]
fn check(snapshot: &[ProcInfo], self_pid: i32, expected: &[i32]) {
    assert_eq!(adopted(snapshot, self_pid), expected);
}

// Pids far above any real pid_max, so the process-wide record of owned children (real pids)
// never names them.
const ME: i32 = 900_000_000;

#[test]
fn children_outside_our_session_are_adopted_orphans() {
    let world = [
        p(ME, 1, ME, 'S'),
        // A probe we started ourselves: our session.
        p(ME + 1, ME, ME, 'S'),
        // An orphan that left its session, and one that is a zombie.
        p(ME + 2, ME, ME + 2, 'S'),
        p(ME + 3, ME, ME + 3, 'Z'),
        // Someone else's child in another session.
        p(ME + 4, 1, ME + 4, 'S'),
    ];
    check(&world, ME, &[ME + 2]);
}

#[test]
fn owned_children_are_never_orphans() {
    let world = [p(ME, 1, ME, 'S'), p(ME + 5, ME, ME + 5, 'S')];
    check(&world, ME, &[ME + 5]);
    owned().insert(world[1].proc_ref());
    check(&world, ME, &[]);
    // The same pid with another start time is another process.
    let reused = [
        p(ME, 1, ME, 'S'),
        ProcInfo {
            start_ticks: 2,
            ..p(ME + 5, ME, ME + 5, 'S')
        },
    ];
    check(&reused, ME, &[ME + 5]);
}

#[test]
fn nothing_is_proved_without_our_own_entry() {
    check(&[p(ME + 2, ME, ME + 2, 'S')], ME, &[]);
}
