//! Containment: every kind of detaching process is found and stopped, under every layer
//! combination the machine offers (with and without the cgroup and the shim).

use std::os::unix::process::CommandExt;
use std::time::Duration;

use hyoka_proctrack::{AgentExit, ProcRef, ProcessFate, TeardownOptions, TeardownReport};

use crate::roles::scenario_names;
use crate::runner::Test;
use crate::support::{
    Config, Sandbox, agent_command, assert_nothing_left, configs, runtime, tracker, wait_gone,
    wait_ready,
};

pub(crate) const TESTS: &[Test] = &[
    ("containment::tree_three_deep", tree_three_deep),
    ("containment::child_in_new_session", child_in_new_session),
    (
        "containment::double_forked_daemon_with_empty_env",
        double_forked_daemon_with_empty_env,
    ),
    (
        "containment::child_ignoring_term_and_hup",
        child_ignoring_term_and_hup,
    ),
    ("containment::child_under_timeout", child_under_timeout),
    (
        "containment::parent_restarting_its_child",
        parent_restarting_its_child,
    ),
    ("containment::storm_of_300_children", storm_of_300_children),
    (
        "containment::agent_exits_while_children_run",
        agent_exits_while_children_run,
    ),
    (
        "containment::zero_grace_kills_at_once",
        zero_grace_kills_at_once,
    ),
    (
        "containment::an_adopted_process_tree_is_tracked_and_stopped",
        an_adopted_process_tree_is_tracked_and_stopped,
    ),
    (
        "containment::tree_samples_show_cpu_and_busy_children",
        tree_samples_show_cpu_and_busy_children,
    ),
    (
        "containment::an_untracked_tree_is_sampled_from_its_root",
        an_untracked_tree_is_sampled_from_its_root,
    ),
];

/// What one scenario run returned, for per-test assertions.
struct Outcome_ {
    report: TeardownReport,
    refs: Vec<(String, ProcRef)>,
    config: Config,
}

/// Runs `scenario` under each configuration, tears it down, and proves through `/proc` that
/// nothing survived. (Without the cgroup and the shim, a double-forked daemon that clears its
/// environment escaped until the test process became a subreaper: now it is an orphan of
/// ours, and found as one.)
fn scenario(scenario: &str, mode: &str, n: u32, grace: Duration) -> Vec<Outcome_> {
    let mut out = Vec::new();
    for config in configs() {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let dir = sandbox.subdir("run");
        let run_id = sandbox.run_id("c");
        let context = format!("{scenario} under {config}");
        let rt = runtime();
        let (report, refs) = rt.block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let mut agent = tracker
                .spawn("main", agent_command(&dir, mode, scenario, n))
                .await
                .expect("spawn");
            assert_eq!(agent.layers().cgroup, config.cgroup, "{context}");
            assert_eq!(agent.layers().shim, config.shim, "{context}");
            let mut names = scenario_names(scenario);
            names.push("agent");
            let refs = wait_ready(&dir, &names);
            if mode == "exit" {
                let exit = tokio::time::timeout(Duration::from_secs(30), agent.wait())
                    .await
                    .expect("agent exits")
                    .expect("wait");
                assert_eq!(exit, AgentExit::Code(0), "{context}");
            }
            agent.refresh().expect("refresh");
            let report = agent
                .teardown(TeardownOptions {
                    grace,
                    kill_timeout: Duration::from_secs(10),
                    ..TeardownOptions::default()
                })
                .await
                .expect("teardown");
            tracker.close().expect("close");
            (report, refs)
        });
        assert_eq!(report.survivors, 0, "{context}: {report:#?}");
        assert_eq!(report.survivors_unknown, None, "{context}");
        assert!(report.layers_lost.is_empty(), "{context}: {report:#?}");
        assert!(!report.timed_out, "{context}");
        assert_nothing_left(&run_id, &refs, &context);
        for (name, r) in &refs {
            if name == "agent" {
                continue;
            }
            assert!(
                report
                    .processes
                    .iter()
                    .any(|p| p.pid == r.pid && p.start_ticks == r.start_ticks),
                "{context}: {name} missing from the report {report:#?}"
            );
        }
        let reported: usize = report.processes.len();
        assert_eq!(report.processes_seen, reported, "{context}");
        if config.cgroup {
            let cg = hyoka_proctrack::Capabilities::detect()
                .cgroup
                .expect("cgroup");
            let left = crate::support::run_cgroups(&cg.base, &run_id);
            assert!(left.is_empty(), "{context}: cgroups left behind: {left:?}");
        }
        let ledger =
            std::fs::read_to_string(sandbox.reports().join(&run_id).join("pids.txt")).unwrap();
        assert!(ledger.contains("# cleaned "), "{context}: {ledger}");
        drop(sandbox);
        out.push(Outcome_ {
            report,
            refs,
            config,
        });
    }
    out
}

fn outcome_of(o: &Outcome_, name: &str) -> Option<ProcessFate> {
    let (_, r) = o.refs.iter().find(|(n, _)| n == name)?;
    o.report
        .processes
        .iter()
        .find(|p| p.pid == r.pid && p.start_ticks == r.start_ticks)
        .map(|p| p.outcome)
}

fn tree_three_deep() {
    for o in scenario("tree", "stay", 0, Duration::from_secs(2)) {
        for name in ["t", "t.c", "t.c.c"] {
            assert_eq!(
                outcome_of(&o, name),
                Some(ProcessFate::Terminated),
                "{name} under {}: {:#?}",
                o.config,
                o.report
            );
        }
        assert!(o.report.processes_killed >= 4, "{:#?}", o.report);
    }
}

fn child_in_new_session() {
    for o in scenario("session", "stay", 0, Duration::from_secs(2)) {
        assert_eq!(
            outcome_of(&o, "s"),
            Some(ProcessFate::Terminated),
            "under {}",
            o.config
        );
    }
}

fn double_forked_daemon_with_empty_env() {
    for o in scenario("daemon", "stay", 0, Duration::from_secs(2)) {
        assert_eq!(
            outcome_of(&o, "d"),
            Some(ProcessFate::Terminated),
            "under {}",
            o.config
        );
    }
}

fn child_ignoring_term_and_hup() {
    for o in scenario("stubborn", "stay", 0, Duration::from_millis(500)) {
        assert_eq!(
            outcome_of(&o, "st"),
            Some(ProcessFate::Killed),
            "under {}: {:#?} {:?}",
            o.config,
            o.report,
            o.refs
        );
        assert_eq!(o.report.cgroup_killed, o.config.cgroup);
    }
}

fn child_under_timeout() {
    for o in scenario("timeout", "stay", 0, Duration::from_secs(2)) {
        assert!(
            matches!(
                outcome_of(&o, "tm"),
                Some(ProcessFate::Terminated | ProcessFate::Killed)
            ),
            "under {}: {:#?}",
            o.config,
            o.report
        );
    }
}

fn parent_restarting_its_child() {
    for o in scenario("restarter", "stay", 0, Duration::from_millis(500)) {
        assert_eq!(
            outcome_of(&o, "restarter"),
            Some(ProcessFate::Killed),
            "under {}",
            o.config
        );
        // The restarter replaced its child at least once during the grace period.
        assert!(
            o.report.processes_seen >= 4,
            "under {}: {:#?}",
            o.config,
            o.report
        );
    }
}

fn storm_of_300_children() {
    for o in scenario("storm", "stay", 300, Duration::from_secs(2)) {
        assert!(
            o.report.processes_seen >= 302,
            "under {}: {}",
            o.config,
            o.report.processes_seen
        );
        assert!(o.report.processes_killed >= 302, "under {}", o.config);
    }
}

fn agent_exits_while_children_run() {
    for o in scenario("all", "exit", 0, Duration::from_millis(500)) {
        assert_eq!(
            outcome_of(&o, "st"),
            Some(ProcessFate::Killed),
            "under {}",
            o.config
        );
    }
}

fn zero_grace_kills_at_once() {
    for o in scenario("tree+stubborn", "stay", 0, Duration::ZERO) {
        for name in ["t", "t.c", "t.c.c", "st"] {
            assert_eq!(
                outcome_of(&o, name),
                Some(ProcessFate::Killed),
                "{name} under {}",
                o.config
            );
        }
    }
}

/// A process started by other means (as `hyoka respawn` starts its PTY session) is adopted:
/// it joins a cgroup leaf when there is one, its tree lands in the ledger, and teardown stops
/// its descendants, detached or not, that carry the marker or descend from it. (A daemon that
/// clears its environment and was double-forked before the adoption is out of reach: that is
/// `adopt`'s documented window, so this scenario leaves it out.)
fn an_adopted_process_tree_is_tracked_and_stopped() {
    const SCENARIO: &str = "tree+session+stubborn+timeout";
    for config in configs().into_iter().filter(|c| !c.shim) {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let dir = sandbox.subdir("run");
        let run_id = sandbox.run_id("a");
        let context = format!("adopted under {config}");
        let rt = runtime();
        let (report, refs, ledger) = rt.block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let command = agent_command(&dir, "stay", SCENARIO, 0);
            // Started outside the tracker, with the run's marker like a respawn session.
            let mut child = std::process::Command::new(&command.program)
                .args(&command.args)
                .envs(tracker.marker_env("session"))
                .process_group(0)
                .spawn()
                .expect("spawn outside the tracker");
            let pid = i32::try_from(child.id()).unwrap();
            let mut agent = tracker.adopt("session", pid).expect("adopt");
            assert_eq!(agent.layers().cgroup, config.cgroup, "{context}");
            assert!(
                tracker.adopt("session", pid).is_err(),
                "an eval id is adopted once"
            );
            let mut names = scenario_names(SCENARIO);
            names.push("agent");
            let refs = wait_ready(&dir, &names);
            agent.refresh().expect("refresh");
            let ledger =
                std::fs::read_to_string(sandbox.reports().join(&run_id).join("pids.txt")).unwrap();
            let report = agent
                .teardown(TeardownOptions {
                    grace: Duration::from_secs(1),
                    kill_timeout: Duration::from_secs(10),
                    ..TeardownOptions::default()
                })
                .await
                .expect("teardown");
            let _ = child.wait();
            tracker.close().expect("close");
            (report, refs, ledger)
        });
        assert_eq!(report.survivors, 0, "{context}: {report:#?}");
        assert!(report.layers_lost.is_empty(), "{context}: {report:#?}");
        for (name, r) in &refs {
            assert!(
                ledger
                    .lines()
                    .any(|l| l.starts_with(&format!("{}\t", r.pid))),
                "{context}: {name} not in the ledger:\n{ledger}"
            );
        }
        assert_nothing_left(&run_id, &refs, &context);
    }
}

/// Samples until the tree's ticks grew by a tenth of a second (the burner is on the CPU, or
/// runnable, whenever it is sampled, so this comes well within the deadline); returns that
/// sample.
#[track_caller]
fn burning(
    context: &str,
    sample: impl Fn() -> hyoka_proctrack::TreeSample,
) -> hyoka_proctrack::TreeSample {
    let first = sample();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = sample();
        if now.cpu_ticks >= first.cpu_ticks + 10 {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{context}: ticks stuck at {now:?} (first {first:?})"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Spawns `scenario`'s agent as `eval`, waits until its whole tree is up, and refreshes it.
async fn spawn_ready(
    tracker: &hyoka_proctrack::Tracker,
    eval: &str,
    dir: &std::path::Path,
    scenario: &str,
) -> hyoka_proctrack::Agent {
    let mut agent = tracker
        .spawn(eval, agent_command(dir, "stay", scenario, 0))
        .await
        .expect("spawn");
    let mut names = scenario_names(scenario);
    names.push("agent");
    wait_ready(dir, &names);
    agent.refresh().expect("refresh");
    agent
}

/// A tree of sleepers samples as quiet; a child on the CPU shows as a busy child and its
/// ticks add up, under every layer (cgroup `cpu.stat`, or the tracked processes' own).
fn tree_samples_show_cpu_and_busy_children() {
    for config in configs() {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let context = format!("samples under {config}");
        let rt = runtime();
        let run_id = sandbox.run_id("u");
        rt.block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let quiet = spawn_ready(&tracker, "quiet", &sandbox.subdir("quiet"), "tree").await;
            // Sleepers may still be on their way from writing the ready file to sleeping.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while quiet.sample().busy_children > 0 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{context}: sleepers count as busy: {:?}",
                    quiet.sample()
                );
                std::thread::sleep(Duration::from_millis(20));
            }

            let busy = spawn_ready(&tracker, "busy", &sandbox.subdir("busy"), "tree+burn").await;
            let last = burning(&context, || busy.sample());
            assert!(last.busy_children >= 1, "{context}: {last:?}");
            for agent in [quiet, busy] {
                let mut agent = agent;
                let report = agent
                    .teardown(TeardownOptions::with_grace(Duration::ZERO))
                    .await
                    .expect("teardown");
                assert_eq!(report.survivors, 0, "{context}: {report:#?}");
            }
            tracker.close().expect("close");
        });
        assert_nothing_left(&run_id, &[], &context);
    }
}

/// `sample_tree` (a tmux pane's tree, which no tracker owns): the burner below the root is a
/// busy child unless the agent's depth reaches it, and its ticks add up.
fn an_untracked_tree_is_sampled_from_its_root() {
    let sandbox = Sandbox::new();
    let dir = sandbox.subdir("pane");
    let run_id = sandbox.run_id("p");
    let command = agent_command(&dir, "stay", "tree+burn", 0);
    let mut child = std::process::Command::new(&command.program)
        .args(&command.args)
        .env("HYOKA_RUN_ID", &run_id)
        .process_group(0)
        .spawn()
        .expect("spawn the tree");
    let mut names = scenario_names("tree+burn");
    names.push("agent");
    let refs = wait_ready(&dir, &names);
    let root = refs.iter().find(|(n, _)| n == "agent").unwrap().1;
    let last = burning("an untracked tree", || {
        hyoka_proctrack::sample_tree(root, 0).expect("sample")
    });
    assert!(last.busy_children >= 1, "{last:?}");
    // With the whole tree counted as the agent, nothing is a busy child.
    assert_eq!(
        hyoka_proctrack::sample_tree(root, 10)
            .expect("sample")
            .busy_children,
        0
    );
    let pgid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL).expect("kill");
    let _ = child.wait();
    let left = wait_gone(&refs, Duration::from_secs(10));
    assert!(left.is_empty(), "still running: {left:?}");
    assert_nothing_left(&run_id, &refs, "an untracked tree");
}
