//! Tests of the teardown engine against `FakeSystem`: verification, ordering, convergence.
#![allow(
    clippy::disallowed_methods,
    reason = "tests start the fake clock at an arbitrary real instant"
)]

use std::time::{Duration, Instant};

use super::*;
use crate::fake::{FakeCall, FakeClock, FakeSystem, OnTerm};

struct World {
    fake: FakeSystem,
    clock: FakeClock,
}

fn world() -> World {
    World {
        fake: FakeSystem::new(),
        clock: FakeClock::new(Instant::now()),
    }
}

/// Tears down `scope` in `w` with `grace` and returns (report, outcome per pid).
#[track_caller]
fn check(w: &World, scope: &Scope, grace: Duration) -> (TeardownReport, Vec<(i32, ProcessFate)>) {
    let seams = Seams {
        table: &w.fake,
        signaller: &w.fake,
        clock: &w.clock,
    };
    let report = teardown(
        seams,
        scope,
        &[],
        &TeardownOptions {
            grace,
            kill_timeout: Duration::from_secs(5),
            ..TeardownOptions::default()
        },
    );
    assert_eq!(report.processes_seen, report.processes.len());
    let outcomes = report
        .processes
        .iter()
        .map(|p| (p.pid, p.outcome))
        .collect();
    (report, outcomes)
}

fn root(r: ProcRef) -> Scope {
    Scope {
        roots: vec![r],
        ..Scope::default()
    }
}

#[test]
fn polite_tree_terminates_within_grace() {
    let w = world();
    let agent = w.fake.spawn(100, true, "agent", None);
    let child = w.fake.spawn(agent.pid, false, "child", None);
    let (report, outcomes) = check(&w, &root(agent), Duration::from_secs(5));
    assert_eq!(
        outcomes,
        [
            (agent.pid, ProcessFate::Terminated),
            (child.pid, ProcessFate::Terminated)
        ]
    );
    assert_eq!(
        (
            report.processes_killed,
            report.survivors,
            report.kill_rounds
        ),
        (2, 0, 0)
    );
    assert!(w.fake.alive().is_empty());
    // The group was signalled once through its leader; no one was signalled twice.
    let calls = w.fake.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(matches!(
        calls[0],
        FakeCall::Group {
            signal: Signal::Term,
            ..
        }
    ));
}

#[test]
fn stubborn_process_is_killed_after_grace() {
    let w = world();
    let agent = w.fake.spawn(100, true, "agent", None);
    let stubborn = w.fake.spawn(agent.pid, true, "stubborn", None);
    w.fake.set_on_term(stubborn.pid, OnTerm::Ignore);
    let (report, outcomes) = check(&w, &root(agent), Duration::from_secs(2));
    assert_eq!(
        outcomes,
        [
            (agent.pid, ProcessFate::Terminated),
            (stubborn.pid, ProcessFate::Killed)
        ]
    );
    assert_eq!(report.kill_rounds, 1);
    assert!(
        w.clock.elapsed() >= Duration::from_secs(2),
        "waited out the grace period"
    );
    assert!(w.clock.elapsed() < Duration::from_secs(3));
}

#[test]
fn restarting_parent_converges() {
    let w = world();
    let agent = w.fake.spawn(100, true, "agent", None);
    let supervisor = w.fake.spawn(agent.pid, true, "supervisor", None);
    w.fake.set_on_term(supervisor.pid, OnTerm::Ignore);
    w.fake.set_respawn(supervisor.pid, true);
    let (report, _) = check(&w, &root(agent), Duration::from_millis(100));
    assert!(w.fake.alive().is_empty(), "{:?}", w.fake.alive());
    assert_eq!(report.survivors, 0);
    // The supervisor's replacement children were seen and stopped too.
    assert!(report.processes_seen >= 4, "{report:#?}");
}

#[test]
fn storm_of_hundreds_converges() {
    let w = world();
    let agent = w.fake.spawn(100, true, "agent", None);
    for _ in 0..500 {
        let c = w.fake.spawn(agent.pid, true, "storm", None);
        w.fake.set_on_term(c.pid, OnTerm::Ignore);
    }
    let (report, _) = check(&w, &root(agent), Duration::from_millis(10));
    assert_eq!(
        (
            report.processes_seen,
            report.processes_killed,
            report.survivors
        ),
        (501, 501, 0)
    );
}

#[test]
fn pid_reused_between_scan_and_signal_is_vanished_not_signalled() {
    let w = world();
    let agent = w.fake.spawn(100, true, "agent", None);
    let child = w.fake.spawn(agent.pid, true, "child", None);
    w.fake.exit(agent.pid);
    let scope = Scope {
        known: vec![crate::LedgerEntry::from_info(
            &w.fake.process(child.pid).unwrap(),
            "main",
        )],
        ..Scope::default()
    };
    let stranger = w.fake.reuse_pid(child.pid, "stranger");
    let (_, outcomes) = check(&w, &scope, Duration::from_secs(1));
    assert_eq!(outcomes, [(child.pid, ProcessFate::Exited)]);
    assert_eq!(w.fake.alive(), [stranger], "the stranger was signalled");
    assert!(w.fake.calls().is_empty());
}

#[test]
fn own_group_is_never_signalled() {
    let w = world();
    // A process left in our own group (pgid 100) is signalled on its own, never as a group.
    let inside = w
        .fake
        .spawn(100, false, "inside", Some(&[("HYOKA_RUN_ID", "r")]));
    let scope = Scope {
        marker: Some(crate::Marker::run("r")),
        ..Scope::default()
    };
    let (_, outcomes) = check(&w, &scope, Duration::from_secs(1));
    assert_eq!(outcomes, [(inside.pid, ProcessFate::Terminated)]);
    assert!(
        w.fake
            .calls()
            .iter()
            .all(|c| !matches!(c, FakeCall::Group { .. }))
    );
    assert!(w.fake.process(crate::fake::FAKE_SELF_PID).is_some());
}

#[test]
fn zero_grace_skips_sigterm() {
    let w = world();
    let agent = w.fake.spawn(100, true, "agent", None);
    let (_, outcomes) = check(&w, &root(agent), Duration::ZERO);
    assert_eq!(outcomes, [(agent.pid, ProcessFate::Killed)]);
    assert!(w.fake.calls().iter().all(|c| !matches!(
        c,
        FakeCall::Group {
            signal: Signal::Term,
            ..
        } | FakeCall::Signal {
            signal: Signal::Term,
            ..
        }
    )));
}

#[test]
fn shim_is_stopped_last_and_not_reported() {
    let w = world();
    let shim = w.fake.spawn(100, true, "shim", None);
    let agent = w.fake.spawn(shim.pid, true, "agent", None);
    let scope = Scope {
        roots: vec![shim],
        exclude: vec![shim],
        ..Scope::default()
    };
    let (report, outcomes) = check(&w, &scope, Duration::from_secs(1));
    assert_eq!(outcomes, [(agent.pid, ProcessFate::Terminated)]);
    assert_eq!(report.shim, Some(ProcessFate::Terminated));
    let last = w.fake.calls().pop().unwrap();
    assert!(
        matches!(last, FakeCall::Signal { target, .. } if target == shim),
        "{last:?}"
    );
}

#[test]
fn unkillable_process_is_a_survivor_and_teardown_is_bounded() {
    use crate::proc_table::MockProcTable;
    use crate::signal::MockSignaller;
    let stuck = ProcInfo {
        pid: 4242,
        ppid: 1,
        pgid: 4242,
        sid: 4242,
        start_ticks: 9,
        state: 'D',
        comm: "stuck".into(),
        cpu_ticks: 0,
    };
    let mut table = MockProcTable::new();
    table.expect_self_pid().return_const(100);
    table.expect_self_pgid().return_const(100);
    let snapshot = vec![stuck.clone()];
    table
        .expect_snapshot()
        .returning(move || Ok(snapshot.clone()));
    table
        .expect_process()
        .returning(move |_| Some(stuck.clone()));
    table.expect_environ().returning(|_| None);
    let mut signaller = MockSignaller::new();
    signaller.expect_signal().returning(|_, _| Delivery::Sent);
    signaller
        .expect_signal_group()
        .returning(|_, _, _| Delivery::Sent);
    let clock = FakeClock::new(Instant::now());
    let seams = Seams {
        table: &table,
        signaller: &signaller,
        clock: &clock,
    };
    let scope = Scope {
        roots: vec![ProcRef {
            pid: 4242,
            start_ticks: 9,
        }],
        ..Scope::default()
    };
    let options = TeardownOptions {
        grace: Duration::from_secs(1),
        kill_timeout: Duration::from_secs(3),
        ..TeardownOptions::default()
    };
    let report = teardown(seams, &scope, &[], &options);
    assert_eq!((report.survivors, report.timed_out), (1, true));
    assert_eq!(report.processes[0].outcome, ProcessFate::Failed);
    assert!(clock.elapsed() <= Duration::from_secs(4) + Duration::from_millis(100));
}

#[test]
fn escalation_cuts_the_grace_period_short() {
    let w = world();
    let agent = w.fake.spawn(100, true, "agent", None);
    w.fake.set_on_term(agent.pid, OnTerm::Ignore);
    let options = TeardownOptions::with_grace(Duration::from_mins(1));
    options.escalation.escalate();
    let seams = Seams {
        table: &w.fake,
        signaller: &w.fake,
        clock: &w.clock,
    };
    let report = teardown(seams, &root(agent), &[], &options);
    assert_eq!(report.processes[0].outcome, ProcessFate::Killed);
    assert!(
        w.clock.elapsed() < Duration::from_secs(2),
        "{:?}",
        w.clock.elapsed()
    );
}

/// Regression test for issue 11, finding 6: a grace or kill timeout near `u64::MAX` seconds
/// panicked adding it to an `Instant`; now such a period never ends, and teardown simply
/// waits for what it waits for.
#[test]
fn huge_periods_never_overflow() {
    let w = world();
    let agent = w.fake.spawn(100, true, "agent", None);
    let child = w.fake.spawn(agent.pid, false, "child", None);
    let seams = Seams {
        table: &w.fake,
        signaller: &w.fake,
        clock: &w.clock,
    };
    let report = teardown(
        seams,
        &root(agent),
        &[],
        &TeardownOptions {
            grace: Duration::MAX,
            kill_timeout: Duration::MAX,
            ..TeardownOptions::default()
        },
    );
    assert_eq!(report.survivors, 0);
    let fates: Vec<(i32, ProcessFate)> = report
        .processes
        .iter()
        .map(|p| (p.pid, p.outcome))
        .collect();
    assert_eq!(
        fates,
        [
            (agent.pid, ProcessFate::Terminated),
            (child.pid, ProcessFate::Terminated)
        ]
    );
}
