//! Tests of attribution: what is ours, and why, in hand-written process tables.

use super::*;
use crate::proc_table::ProcTable;

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
    check_with(table, cgroup, scope, marked, &[], expected);
}

/// [`check`] with `others`: processes of user 1000 carrying only `HYOKA_RUN_ID=run`.
#[track_caller]
fn check_with(
    table: &[ProcInfo],
    cgroup: &[i32],
    scope: &Scope,
    marked: &[i32],
    others: &[i32],
    expected: &[(i32, Source)],
) {
    let world = World {
        table,
        marked,
        others,
    };
    let got: Vec<(i32, Source)> = discover(table, cgroup, scope, &world)
        .into_iter()
        .map(|f| (f.info.pid, f.source))
        .collect();
    assert_eq!(got, expected);
}

/// A process table over a hand-written snapshot: `marked` pids carry the run's whole
/// marker (run `run`, eval `main`, instance [`TOKEN`]); `others` carry only
/// `HYOKA_RUN_ID=run` (a user's shell) and belong to user 1000; everything else belongs to
/// root.
struct World<'a> {
    table: &'a [ProcInfo],
    marked: &'a [i32],
    others: &'a [i32],
}

const TOKEN: &str = "0123456789abcdef";

impl ProcTable for World<'_> {
    fn boot_id(&self) -> Result<crate::BootId, crate::ProcTrackError> {
        crate::BootId::new(crate::fake::FAKE_BOOT_ID)
    }
    fn snapshot(&self) -> Result<Vec<ProcInfo>, crate::ProcTrackError> {
        Ok(self.table.to_vec())
    }
    fn process(&self, pid: i32) -> Option<ProcInfo> {
        self.table.iter().find(|p| p.pid == pid).cloned()
    }
    fn environ(&self, pid: i32) -> Option<Vec<u8>> {
        Some(if self.marked.contains(&pid) {
            format!("A=1\0HYOKA_RUN_ID=run\0HYOKA_EVAL_ID=main\0HYOKA_RUN_INSTANCE={TOKEN}\0")
                .into_bytes()
        } else if self.others.contains(&pid) {
            b"A=1\0HYOKA_RUN_ID=run\0".to_vec()
        } else {
            b"A=1\0".to_vec()
        })
    }
    fn uids(&self, pid: i32) -> Option<crate::Uids> {
        let uid = if self.others.contains(&pid) { 1000 } else { 0 };
        Some(crate::Uids {
            real: uid,
            saved: uid,
        })
    }
    fn self_pid(&self) -> i32 {
        SELF_PID
    }
    fn self_pgid(&self) -> i32 {
        SELF_PID
    }
}

fn instance_marker() -> Marker {
    Marker::instance(&Instance::new(TOKEN).unwrap())
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
    let table = world();
    let found = discover(
        &table,
        &[],
        &scope,
        &World {
            table: &table,
            marked: &[],
            others: &[],
        },
    );
    let depths: Vec<(i32, u32)> = found.iter().map(|f| (f.info.pid, f.depth)).collect();
    assert_eq!(depths, [(200, 0), (201, 1), (202, 2), (204, 0)]);
}

/// Regression test for issue 11, finding 1: `HYOKA_RUN_ID` is anyone's to set; only the
/// instance marker names a run's processes.
#[test]
fn the_instance_marker_ignores_a_users_run_id() {
    let scope = Scope {
        marker: Some(instance_marker()),
        ..Scope::default()
    };
    // 300 is a user's shell exporting HYOKA_RUN_ID=run; 301 is the run's escapee.
    check_with(
        &world(),
        &[],
        &scope,
        &[301],
        &[300],
        &[(301, Source::Marker)],
    );
    let eval = Scope {
        marker: Some(instance_marker().with_eval("other")),
        ..Scope::default()
    };
    check(&world(), &[], &eval, &[301], &[]);
}

#[test]
fn nothing_older_than_the_run_is_attributed_whatever_the_reason() {
    // The run started at tick 1202: the agent (1200) and its child (1201) are older, so
    // neither the root, nor the ledger, nor the cgroup, nor the marker makes them ours, and
    // what descends from them is not reached through them either; 202 is younger and marked.
    let scope = Scope {
        roots: vec![r(200)],
        known: vec![LedgerEntry::from_info(&p(201, 200, 200, 'S'), "main")],
        marker: Some(instance_marker()),
        since: 1202,
        ..Scope::default()
    };
    check(
        &world(),
        &[200],
        &scope,
        &[201, 202],
        &[(202, Source::Marker)],
    );
}

#[test]
fn acting_for_a_user_attributes_only_that_users_processes() {
    let scope = Scope {
        roots: vec![r(300)],
        user: Some(1000),
        ..Scope::default()
    };
    check_with(
        &world(),
        &[],
        &scope,
        &[],
        &[301],
        &[(301, Source::Descendant)],
    );
}

#[test]
fn orphans_are_children_of_ours_in_other_sessions() {
    // 200 (its own session) is our child; so is 205 (our own session: a probe we started).
    let mut table = world();
    table.push(ProcInfo {
        sid: SELF_PID,
        ..p(205, SELF_PID, SELF_PID, 'S')
    });
    let scope = Scope {
        orphans: true,
        ..Scope::default()
    };
    check(
        &table,
        &[],
        &scope,
        &[],
        &[
            (200, Source::Orphan),
            (201, Source::Descendant),
            (202, Source::Descendant),
            (204, Source::Group),
        ],
    );
    check(&table, &[], &Scope::default(), &[], &[]);
}
