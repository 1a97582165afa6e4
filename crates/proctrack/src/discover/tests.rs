//! Tests of attribution: what is ours, and why, in hand-written process tables.

use super::*;

const SELF_PID: i32 = 100;

fn p(pid: i32, ppid: i32, pgid: i32, state: char) -> ProcInfo {
    ProcInfo {
        pid,
        ppid,
        pgid,
        sid: pgid,
        start_ticks: 1000 + u64::try_from(pid).unwrap(),
        state,
        comm: format!("p{pid}"),
        cpu_ticks: 0,
    }
}

fn r(pid: i32) -> ProcRef {
    ProcRef {
        pid,
        start_ticks: 1000 + u64::try_from(pid).unwrap(),
    }
}

/// Discovers in `table` with `scope`; `marked` pids carry the run marker; compares
/// `(pid, source)` pairs.
#[track_caller]
fn check(
    table: &[ProcInfo],
    cgroup: &[i32],
    scope: &Scope,
    marked: &[i32],
    expected: &[(i32, Source)],
) {
    let environ = |pid: i32| {
        Some(if marked.contains(&pid) {
            b"A=1\0HYOKA_RUN_ID=run\0HYOKA_EVAL_ID=main\0".to_vec()
        } else {
            b"A=1\0".to_vec()
        })
    };
    let got: Vec<(i32, Source)> = discover(table, cgroup, scope, &environ, SELF_PID, SELF_PID)
        .into_iter()
        .map(|f| (f.info.pid, f.source))
        .collect();
    assert_eq!(got, expected);
}

fn world() -> Vec<ProcInfo> {
    vec![
        p(1, 0, 1, 'S'),
        p(2, 0, 0, 'S'),
        p(3, 2, 0, 'I'),
        p(SELF_PID, 1, SELF_PID, 'S'),
        // The agent (session leader) with a child, a grandchild and a zombie.
        p(200, SELF_PID, 200, 'S'),
        p(201, 200, 200, 'S'),
        p(202, 201, 200, 'R'),
        p(203, 200, 200, 'Z'),
        // A member of the agent's group re-parented to init.
        p(204, 1, 200, 'S'),
        // A stranger, and a stranger's child.
        p(300, 1, 300, 'S'),
        p(301, 300, 300, 'S'),
    ]
}

#[test]
fn descendants_and_led_groups_of_the_root() {
    let scope = Scope {
        roots: vec![r(200)],
        ..Scope::default()
    };
    check(
        &world(),
        &[],
        &scope,
        &[],
        &[
            (200, Source::Root),
            (201, Source::Descendant),
            (202, Source::Descendant),
            (204, Source::Group),
        ],
    );
}

#[test]
fn a_root_with_another_start_time_is_a_stranger() {
    let scope = Scope {
        roots: vec![ProcRef {
            pid: 200,
            start_ticks: 7,
        }],
        ..Scope::default()
    };
    check(&world(), &[], &scope, &[], &[]);
}

#[test]
fn marker_finds_escapees_but_not_their_strangers_group() {
    // 301 carries the marker (a stranger's shell exported it) but leads no group: its
    // group-mate 300 must not be pulled in.
    let scope = Scope {
        marker: Some(Marker::eval("run", "main")),
        ..Scope::default()
    };
    check(&world(), &[], &scope, &[301], &[(301, Source::Marker)]);
    let other_eval = Scope {
        marker: Some(Marker::eval("run", "other")),
        ..Scope::default()
    };
    check(&world(), &[], &other_eval, &[301], &[]);
    let whole_run = Scope {
        marker: Some(Marker::run("run")),
        ..Scope::default()
    };
    check(&world(), &[], &whole_run, &[301], &[(301, Source::Marker)]);
}

#[test]
fn cgroup_members_and_tracked_entries() {
    let known = vec![LedgerEntry {
        pid: 300,
        start_ticks: 1300,
        pgid: 300,
        eval_id: "main".into(),
        comm: "x".into(),
    }];
    let scope = Scope {
        known,
        ..Scope::default()
    };
    check(
        &world(),
        &[202, 203, SELF_PID, 1],
        &scope,
        &[],
        &[
            (202, Source::Cgroup),
            (300, Source::Tracked),
            (301, Source::Descendant),
        ],
    );
}

#[test]
fn never_ourselves_init_kernel_threads_or_zombies() {
    let scope = Scope {
        roots: vec![r(1), r(2), r(3), r(SELF_PID), r(203)],
        marker: Some(Marker::run("run")),
        ..Scope::default()
    };
    // Our own descendants (the agent tree) are found through us as a root (that is how the
    // shim walks its tree), but never ourselves, init, kernel threads or zombies, and init
    // never seeds the walk (or every process would be "ours").
    check(
        &world(),
        &[],
        &scope,
        &[1, 2, 3, SELF_PID, 203],
        &[
            (200, Source::Descendant),
            (201, Source::Descendant),
            (202, Source::Descendant),
            (204, Source::Group),
        ],
    );
}

#[test]
fn excluded_processes_are_walked_but_not_reported() {
    let scope = Scope {
        roots: vec![r(200)],
        exclude: vec![r(200)],
        ..Scope::default()
    };
    check(
        &world(),
        &[],
        &scope,
        &[],
        &[
            (201, Source::Descendant),
            (202, Source::Descendant),
            (204, Source::Group),
        ],
    );
}

#[test]
fn depth_orders_parents_first() {
    let scope = Scope {
        roots: vec![r(200)],
        ..Scope::default()
    };
    let found = discover(&world(), &[], &scope, &|_| None, SELF_PID, SELF_PID);
    let depths: Vec<(i32, u32)> = found.iter().map(|f| (f.info.pid, f.depth)).collect();
    assert_eq!(depths, [(200, 0), (201, 1), (202, 2), (204, 0)]);
}
