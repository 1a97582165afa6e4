//! The agent's streams and exit status, with and without the shim; spawn failures; the owner
//! lock is never inherited.

use std::os::unix::process::CommandExt as _;
use std::time::Duration;

use hyoka_proctrack::{AgentCommand, AgentExit, ProcTrackError, StdioMode, TeardownOptions};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::runner::Test;
use crate::support::{Config, Sandbox, assert_nothing_left, runtime, tracker};

pub(crate) const TESTS: &[Test] = &[
    (
        "shim::a_killed_shim_hands_its_orphans_to_the_tracker",
        a_killed_shim_hands_its_orphans_to_the_tracker,
    ),
    (
        "shim::streams_and_exit_code_pass_through",
        streams_and_exit_code_pass_through,
    ),
    (
        "shim::death_by_signal_is_reported",
        death_by_signal_is_reported,
    ),
    (
        "shim::missing_program_is_a_spawn_error",
        missing_program_is_a_spawn_error,
    ),
    (
        "shim::owner_lock_is_not_inherited",
        owner_lock_is_not_inherited,
    ),
    (
        "shim::the_agent_is_born_in_the_leaf",
        the_agent_is_born_in_the_leaf,
    ),
    (
        "shim::a_tree_that_is_gone_is_torn_down_without_a_scan",
        a_tree_that_is_gone_is_torn_down_without_a_scan,
    ),
    (
        "shim::a_young_marked_process_outside_the_tree_is_still_stopped",
        a_young_marked_process_outside_the_tree_is_still_stopped,
    ),
];

/// The shim configurations, with the cgroup layer where the machine has it.
fn shimmed() -> Vec<Config> {
    let mut configs = vec![Config {
        cgroup: false,
        shim: true,
    }];
    if crate::support::cgroup_available() {
        configs.push(Config {
            cgroup: true,
            shim: true,
        });
    }
    configs
}

/// Issue 29: when the shim has reaped its last child after the agent, the tree is provably
/// gone, and teardown says so without reading every process of the machine.
///
/// Another test's process caught inside `execve` (its environment not readable yet) rightly
/// sends a teardown the long way, so of a few agents in a row one must settle, and none may
/// leave anything.
fn a_tree_that_is_gone_is_torn_down_without_a_scan() {
    for config in shimmed() {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let run_id = sandbox.run_id("g");
        let settled = runtime().block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let mut settled = 0;
            for attempt in 0..8 {
                let mut command = role_command("echo", &["3"]);
                command.stdin = StdioMode::Null;
                command.stdout = StdioMode::Null;
                command.stderr = StdioMode::Null;
                let eval = format!("main{attempt}");
                let mut agent = tracker.spawn(&eval, command).await.unwrap();
                let exit = tokio::time::timeout(Duration::from_secs(20), agent.wait())
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(exit, AgentExit::Code(3), "under {config}");
                // The shim says the tree is gone just before it exits: once it is a zombie,
                // that line waits in the pipe, whatever the machine's load.
                let shim = agent.shim().expect("the shim");
                let left =
                    crate::support::wait_gone(&[("shim".into(), shim)], Duration::from_secs(20));
                assert!(left.is_empty(), "under {config}: the shim did not end");
                let report = agent.teardown(TeardownOptions::default()).await.unwrap();
                assert_eq!(report.survivors, 0, "under {config}");
                assert_eq!(report.processes_killed, 0, "under {config}");
                assert!(report.layers_lost.is_empty(), "under {config}");
                if report.settled {
                    settled += 1;
                    break;
                }
            }
            tracker.close().unwrap();
            settled
        });
        assert_eq!(
            settled, 1,
            "under {config}: no teardown of a finished tree settled"
        );
        assert_nothing_left(&run_id, &[], "settled");
    }
}

/// The settled teardown still looks for the marker among processes started since the spawn:
/// one another program started with the agent's environment, outside its tree (a job
/// scheduler would), is stopped like a full teardown would stop it.
fn a_young_marked_process_outside_the_tree_is_still_stopped() {
    for config in shimmed() {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let run_id = sandbox.run_id("y");
        let (report, outsider) = runtime().block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let mut command = role_command("echo", &["0"]);
            command.stdin = StdioMode::Null;
            command.stdout = StdioMode::Null;
            command.stderr = StdioMode::Null;
            let mut agent = tracker.spawn("main", command).await.unwrap();
            let mut outsider = std::process::Command::new("sleep")
                .arg("300")
                .envs(tracker.marker_env("main"))
                .process_group(0)
                .spawn()
                .expect("spawn the outsider");
            tokio::time::timeout(Duration::from_secs(20), agent.wait())
                .await
                .unwrap()
                .unwrap();
            let report = agent.teardown(TeardownOptions::default()).await.unwrap();
            let status = outsider.wait().expect("reap the outsider");
            tracker.close().unwrap();
            (report, status)
        });
        assert!(!report.settled, "under {config}: {report:#?}");
        assert_eq!(report.survivors, 0, "under {config}");
        assert!(
            !outsider.success(),
            "under {config}: the outsider was stopped, not left to finish"
        );
        assert_nothing_left(&run_id, &[], "outsider");
    }
}

/// The cgroup v2 path of `pid` (`/proc/<pid>/cgroup`'s `0::` line).
fn cgroup_of(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_owned))
        .unwrap_or_default()
}

/// Issue 29: moving a process into a cgroup waits for an RCU grace period (10 to 20 ms on a
/// busy machine, twice a trial). Under the shim the agent is started in its leaf instead
/// (`clone3(CLONE_INTO_CGROUP)`), its children with it, and the shim stays outside.
fn the_agent_is_born_in_the_leaf() {
    if !crate::support::cgroup_available() {
        eprintln!("skipped: no cgroup v2 layer here");
        return;
    }
    let config = Config {
        cgroup: true,
        shim: true,
    };
    let _pool = crate::support::orphan_pool(config);
    let sandbox = Sandbox::new();
    let dir = sandbox.subdir("leaf");
    let run_id = sandbox.run_id("c");
    runtime().block_on(async {
        let tracker = tracker(&sandbox.reports(), &run_id, config);
        let mut agent = tracker
            .spawn(
                "main",
                crate::support::agent_command(&dir, "stay", "tree", 0),
            )
            .await
            .unwrap();
        let mut names = crate::roles::scenario_names("tree");
        names.push("agent");
        let refs = crate::support::wait_ready(&dir, &names);
        let leaf = format!("/hyoka-{run_id}-{}/main", tracker.instance());
        for (name, r) in &refs {
            assert!(
                cgroup_of(r.pid).ends_with(&leaf),
                "{name} in {:?}, not {leaf}",
                cgroup_of(r.pid)
            );
        }
        let shim = agent.shim().expect("the shim").pid;
        assert!(!cgroup_of(shim).ends_with(&leaf), "the shim stays outside");
        let report = agent.teardown(TeardownOptions::default()).await.unwrap();
        assert_eq!(report.survivors, 0);
        assert!(report.layers_lost.is_empty(), "{:?}", report.layers_lost);
        tracker.close().unwrap();
    });
    assert_nothing_left(&run_id, &[], "born in the leaf");
}

fn role_command(role: &str, args: &[&str]) -> AgentCommand {
    let mut a: Vec<String> = vec!["--hyoka-role".into(), role.into(), "/".into()];
    a.extend(args.iter().map(|s| (*s).to_owned()));
    AgentCommand::new(std::env::current_exe().unwrap(), a)
}

pub(crate) fn both() -> [Config; 2] {
    [
        Config {
            cgroup: false,
            shim: true,
        },
        Config {
            cgroup: false,
            shim: false,
        },
    ]
}

fn streams_and_exit_code_pass_through() {
    for config in both() {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let run_id = sandbox.run_id("s");
        runtime().block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let mut command = role_command("echo", &["3"]);
            command.stdin = StdioMode::Piped;
            command.stdout = StdioMode::Piped;
            command.stderr = StdioMode::Piped;
            let mut agent = tracker.spawn("main", command).await.unwrap();
            let mut stdin = agent.stdin.take().unwrap();
            stdin.write_all(b"ping\n").await.unwrap();
            drop(stdin);
            let (mut out, mut err) = (String::new(), String::new());
            agent
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .await
                .unwrap();
            agent
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .await
                .unwrap();
            assert_eq!(out, "out:ping\n", "under {config}");
            assert_eq!(err, "err:hello\n", "under {config}");
            let exit = tokio::time::timeout(Duration::from_secs(20), agent.wait())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(exit, AgentExit::Code(3), "under {config}");
            let report = agent.teardown(TeardownOptions::default()).await.unwrap();
            assert_eq!(report.survivors, 0);
            tracker.close().unwrap();
        });
        assert_nothing_left(&run_id, &[], "echo");
    }
}

fn death_by_signal_is_reported() {
    for config in both() {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let run_id = sandbox.run_id("k");
        runtime().block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let mut agent = tracker
                .spawn("main", role_command("suicide", &[]))
                .await
                .unwrap();
            let exit = tokio::time::timeout(Duration::from_secs(20), agent.wait())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(exit, AgentExit::Signal(libc::SIGKILL), "under {config}");
            agent.teardown(TeardownOptions::default()).await.unwrap();
            tracker.close().unwrap();
        });
    }
}

fn missing_program_is_a_spawn_error() {
    for config in both() {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let run_id = sandbox.run_id("m");
        runtime().block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let err = tracker
                .spawn("main", AgentCommand::new("/nonexistent/agent", ["x"]))
                .await
                .unwrap_err();
            match err {
                ProcTrackError::Spawn { program, source } => {
                    assert_eq!(
                        program,
                        std::path::Path::new("/nonexistent/agent"),
                        "under {config}"
                    );
                    assert_eq!(
                        source.kind(),
                        std::io::ErrorKind::NotFound,
                        "under {config}"
                    );
                }
                other => panic!("under {config}: {other:?}"),
            }
            // The eval id is free again after a failed start.
            let mut agent = tracker
                .spawn("main", role_command("echo", &["0"]))
                .await
                .unwrap();
            agent.wait().await.unwrap();
            agent.teardown(TeardownOptions::default()).await.unwrap();
            tracker.close().unwrap();
        });
        assert_nothing_left(&run_id, &[], "missing program");
    }
}

fn owner_lock_is_not_inherited() {
    for config in both() {
        let _pool = crate::support::orphan_pool(config);
        let sandbox = Sandbox::new();
        let dir = sandbox.subdir("lock");
        let run_id = sandbox.run_id("l");
        runtime().block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let lock = tracker.run_dir().join("owner.lock");
            let mut agent = tracker
                .spawn(
                    "main",
                    crate::support::agent_command(&dir, "stay", "tree", 0),
                )
                .await
                .unwrap();
            let mut names = crate::roles::scenario_names("tree");
            names.push("agent");
            let refs = crate::support::wait_ready(&dir, &names);
            let mut pids: Vec<i32> = refs.iter().map(|(_, r)| r.pid).collect();
            pids.extend(agent.shim().map(|s| s.pid));
            for pid in pids {
                for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
                    .unwrap()
                    .flatten()
                {
                    let target = std::fs::read_link(fd.path()).unwrap_or_default();
                    assert_ne!(
                        target, lock,
                        "pid {pid} inherited the owner lock under {config}"
                    );
                }
            }
            assert_eq!(
                hyoka_proctrack::OwnerLock::probe(&lock).unwrap(),
                hyoka_proctrack::LockState::Live
            );
            agent.teardown(TeardownOptions::default()).await.unwrap();
            tracker.close().unwrap();
            assert_eq!(
                hyoka_proctrack::OwnerLock::probe(&lock).unwrap(),
                hyoka_proctrack::LockState::Abandoned
            );
        });
    }
}

/// Regression test for issue 11, finding 3, in the library: the shim is SIGKILLed after a
/// double-forked daemon that cleared its environment was born and before any refresh saw it.
/// The daemon comes to this process (a subreaper), the agent reports the shim lost, and
/// teardown stops the daemon: nothing survives, and the count is proof.
fn a_killed_shim_hands_its_orphans_to_the_tracker() {
    use hyoka_proctrack::{Layer, ProcessFate, Signal, Signaller as _};
    // The daemon and the agent become orphans of this process: no other test may claim them.
    let _pool = crate::support::orphan_pool_all();
    for config in crate::support::configs().into_iter().filter(|c| c.shim) {
        let sandbox = Sandbox::new();
        let dir = sandbox.subdir("lost");
        let run_id = sandbox.run_id("k");
        let context = format!("shim killed under {config}");
        let (report, refs) = runtime().block_on(async {
            let tracker = tracker(&sandbox.reports(), &run_id, config);
            let mut agent = tracker
                .spawn(
                    "main",
                    crate::support::agent_command(&dir, "stay", "daemon", 0),
                )
                .await
                .unwrap();
            let refs = crate::support::wait_ready(&dir, &["d", "agent"]);
            let shim = agent.shim().expect("a shim");
            assert_eq!(
                hyoka_proctrack::NativeSignaller::new().signal(shim, Signal::Kill),
                hyoka_proctrack::Delivery::Sent
            );
            let exit = tokio::time::timeout(Duration::from_secs(30), agent.wait())
                .await
                .expect("the shim's death ends the wait")
                .unwrap();
            assert_eq!(exit, AgentExit::Unknown, "{context}");
            assert_eq!(agent.layers_lost(), [Layer::Shim], "{context}");
            let report = agent
                .teardown(TeardownOptions::with_grace(Duration::from_secs(2)))
                .await
                .unwrap();
            tracker.close().unwrap();
            (report, refs)
        });
        assert_eq!(report.survivors, 0, "{context}: {report:#?}");
        assert_eq!(report.survivors_unknown, None, "{context}");
        assert!(report.layers_lost.contains(&Layer::Shim), "{context}");
        let daemon = refs.iter().find(|(n, _)| n == "d").unwrap().1;
        let fate = report
            .processes
            .iter()
            .find(|p| p.pid == daemon.pid && p.start_ticks == daemon.start_ticks)
            .map(|p| p.outcome);
        assert_eq!(
            fate,
            Some(ProcessFate::Terminated),
            "{context}: {report:#?}"
        );
        assert_nothing_left(&run_id, &refs, &context);
    }
}
