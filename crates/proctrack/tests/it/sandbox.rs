//! The kernel sandbox with real processes: Landlock confines the writes of the agent and of a
//! daemon it detaches, and a network namespace keeps it from the host's loopback. Each test
//! skips with a message where the machine lacks what it needs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyoka_proctrack::{
    AgentCommand, AgentExit, NetNamespace, Network, ProcTrackError, Sandbox, SandboxSupport,
    TeardownOptions,
};

use crate::runner::Test;
use crate::support::{Sandbox as Scratch, assert_nothing_left, runtime, tracker};

pub(crate) const TESTS: &[Test] = &[
    (
        "sandbox::writes_outside_fail_for_the_agent_and_its_daemon",
        writes_outside_fail_for_the_agent_and_its_daemon,
    ),
    (
        "sandbox::no_network_cannot_reach_the_hosts_loopback",
        no_network_cannot_reach_the_hosts_loopback,
    ),
    (
        "sandbox::processes_sharing_a_namespace_share_its_loopback",
        processes_sharing_a_namespace_share_its_loopback,
    ),
    (
        "sandbox::an_unopenable_writable_path_is_refused",
        an_unopenable_writable_path_is_refused,
    ),
    (
        "sandbox::a_hardened_agent_is_born_in_its_leaf_under_a_shim_it_cannot_use",
        a_hardened_agent_is_born_in_its_leaf_under_a_shim_it_cannot_use,
    ),
];

fn role_command(dir: &Path, role: &str, args: &[String]) -> AgentCommand {
    let mut argv: Vec<String> = vec![
        "--hyoka-role".into(),
        role.into(),
        dir.display().to_string(),
    ];
    argv.extend(args.iter().cloned());
    AgentCommand::new(std::env::current_exe().expect("current exe"), argv)
}

/// Spawns `command` as eval `main` and waits until it exits 0.
async fn spawn_to_exit(
    tracker: &hyoka_proctrack::Tracker,
    command: AgentCommand,
    config: crate::support::Config,
) -> hyoka_proctrack::Agent {
    let mut agent = tracker.spawn("main", command).await.expect("spawn");
    let exit = tokio::time::timeout(Duration::from_mins(1), agent.wait())
        .await
        .expect("the agent ends")
        .expect("its status");
    assert_eq!(exit, AgentExit::Code(0), "under {config}");
    agent
}

/// [`spawn_to_exit`], then a teardown that leaves no survivor.
async fn run_to_end(
    tracker: &hyoka_proctrack::Tracker,
    command: AgentCommand,
    config: crate::support::Config,
) {
    let mut agent = spawn_to_exit(tracker, command, config).await;
    let report = agent
        .teardown(TeardownOptions::with_grace(Duration::from_secs(1)))
        .await
        .expect("teardown");
    assert_eq!(report.survivors, 0, "under {config}");
}

/// `<dir>/<label>.result` as path → outcome (`ok` or an errno).
fn results(dir: &Path, label: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join(format!("{label}.result")))
        .unwrap_or_else(|e| panic!("no {label}.result: {e}"));
    text.lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(p, o)| (p.to_owned(), o.to_owned()))
        .collect()
}

/// Removes what a failing test may have written outside.
struct Outside(Vec<PathBuf>);

impl Drop for Outside {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn writes_outside_fail_for_the_agent_and_its_daemon() {
    if let Err(why) = SandboxSupport::detect().landlock {
        println!("skipped: no Landlock here ({why})");
        return;
    }
    for config in crate::shim::both() {
        let _pool = crate::support::orphan_pool(config);
        let scratch = Scratch::new();
        let run_id = scratch.run_id("sbx");
        let workspace = scratch.subdir("ws");
        let pid = std::process::id();
        let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
        let outside = Outside(vec![
            scratch.root.path().join("parent.txt"),
            std::env::temp_dir().join(format!("pt-sbx-{pid}-tmp.txt")),
            home.join(format!(".pt-sbx-{pid}-home.txt")),
        ]);
        let inside = workspace.join("inside.txt");
        let mut targets: Vec<String> = outside.0.iter().map(|p| p.display().to_string()).collect();
        targets.push(inside.display().to_string());
        targets.push("/dev/null".to_owned());
        runtime().block_on(async {
            let tracker = tracker(&scratch.reports(), &run_id, config);
            let mut command = role_command(&workspace, "sandboxed", &targets);
            command.sandbox = Sandbox {
                writable: Some(vec![workspace.clone()]),
                ..Sandbox::default()
            };
            // The daemon still runs, detached; teardown finds and stops it.
            run_to_end(&tracker, command, config).await;
            tracker.close().expect("close");
        });
        for label in ["agent", "daemon"] {
            let results = results(&workspace, label);
            for path in &outside.0 {
                assert_eq!(
                    results.get(&path.display().to_string()).map(String::as_str),
                    Some("13"),
                    "{label} under {config}: a write to {} must fail with EACCES",
                    path.display()
                );
                assert!(!path.exists(), "{} appeared", path.display());
            }
            assert_eq!(
                results[&inside.display().to_string()],
                "ok",
                "{label} under {config}"
            );
            assert_eq!(results["/dev/null"], "ok", "{label} under {config}");
        }
        assert_eq!(
            std::fs::read_to_string(&inside).ok().as_deref(),
            Some("daemon")
        );
        assert_nothing_left(&run_id, &[], "sandboxed");
    }
}

fn no_network_cannot_reach_the_hosts_loopback() {
    if let hyoka_proctrack::NetIsolation::Unavailable(why) = SandboxSupport::detect().network {
        println!("skipped: no network namespaces here ({why})");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port().to_string();
    for config in crate::shim::both() {
        let _pool = crate::support::orphan_pool(config);
        for (network, expected) in [(Network::Host, "ok"), (Network::None, "111")] {
            let scratch = Scratch::new();
            let run_id = scratch.run_id("net");
            let dir = scratch.dir();
            runtime().block_on(async {
                let tracker = tracker(&scratch.reports(), &run_id, config);
                let mut command = role_command(&dir, "connect", std::slice::from_ref(&port));
                command.sandbox.network = network;
                let mut agent = spawn_to_exit(&tracker, command, config).await;
                agent
                    .teardown(TeardownOptions::default())
                    .await
                    .expect("teardown");
                tracker.close().expect("close");
            });
            let result = std::fs::read_to_string(dir.join("connect.result")).expect("result");
            assert_eq!(
                result,
                expected,
                "network {} under {config}: connecting to the host's 127.0.0.1:{port}",
                network.as_str()
            );
            assert_nothing_left(&run_id, &[], "connect");
        }
    }
}

fn processes_sharing_a_namespace_share_its_loopback() {
    if let hyoka_proctrack::NetIsolation::Unavailable(why) = SandboxSupport::detect().network {
        println!("skipped: no network namespaces here ({why})");
        return;
    }
    for config in crate::shim::both() {
        let _pool = crate::support::orphan_pool(config);
        let namespace = NetNamespace::create().expect("a namespace");
        let shared = Sandbox {
            network: Network::None,
            namespace: Some(namespace.clone()),
            ..Sandbox::default()
        };
        let scratch = Scratch::new();
        let run_id = scratch.run_id("ns");
        let dir = scratch.dir();
        runtime().block_on(async {
            let tracker = tracker(&scratch.reports(), &run_id, config);
            let mut command = role_command(&dir, "listen", &[]);
            command.sandbox = shared.clone();
            let mut server = tracker.spawn("server", command).await.expect("spawn");
            let port = wait_port(&dir.join("listen.port"));
            let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            // From the namespace the server answers; a second one of its own does not.
            assert!(
                namespace.connects(address, Duration::from_secs(5)),
                "under {config}"
            );
            let other = NetNamespace::create().expect("another namespace");
            assert!(
                !other.connects(address, Duration::from_secs(5)),
                "under {config}"
            );
            let mut command =
                role_command(&dir, "connect", std::slice::from_ref(&port.to_string()));
            command.sandbox = shared.clone();
            let mut client = tracker.spawn("main", command).await.expect("spawn");
            let exit = tokio::time::timeout(Duration::from_mins(1), client.wait())
                .await
                .expect("the client ends")
                .expect("its status");
            assert_eq!(exit, AgentExit::Code(0), "under {config}");
            client
                .teardown(TeardownOptions::default())
                .await
                .expect("teardown");
            server
                .teardown(TeardownOptions::with_grace(Duration::from_secs(1)))
                .await
                .expect("teardown");
            tracker.close().expect("close");
        });
        let result = std::fs::read_to_string(dir.join("connect.result")).expect("result");
        assert_eq!(result, "ok", "under {config}");
        assert_nothing_left(&run_id, &[], "namespace");
    }
}

/// Waits for the port the `listen` role publishes.
fn wait_port(path: &Path) -> u16 {
    let deadline = std::time::Instant::now() + Duration::from_mins(1);
    loop {
        if let Some(port) = std::fs::read_to_string(path)
            .ok()
            .and_then(|p| p.parse().ok())
        {
            return port;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no port in {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn an_unopenable_writable_path_is_refused() {
    if SandboxSupport::detect().landlock.is_err() {
        println!("skipped: no Landlock here");
        return;
    }
    let config = crate::shim::both()[0];
    let _pool = crate::support::orphan_pool(config);
    let scratch = Scratch::new();
    let run_id = scratch.run_id("bad");
    runtime().block_on(async {
        let tracker = tracker(&scratch.reports(), &run_id, config);
        let mut command = role_command(&scratch.dir(), "sleeper", &["never".to_owned()]);
        command.sandbox.writable = Some(vec![scratch.root.path().join("missing")]);
        let err = tracker.spawn("main", command).await.expect_err("refused");
        assert!(matches!(err, ProcTrackError::Sandbox { .. }), "{err:?}");
        // Nothing was started, and the eval id is free again.
        assert!(!scratch.dir().join("never").exists());
        let again = role_command(&scratch.dir(), "try-write", &["x".to_owned()]);
        let mut agent = tracker.spawn("main", again).await.expect("spawn");
        agent
            .teardown(TeardownOptions::default())
            .await
            .expect("teardown");
        tracker.close().expect("close");
    });
    assert_nothing_left(&run_id, &[], "refused");
}

/// A hardened, Landlocked agent under the shim: the agent is born in its cgroup leaf under
/// the filters; the shim, outside the leaf, enters the same filters once the agent runs, and
/// the agent can open neither its memory nor, through it, anything it could not itself.
fn a_hardened_agent_is_born_in_its_leaf_under_a_shim_it_cannot_use() {
    let support = SandboxSupport::detect();
    if let (Err(why), _) | (_, Err(why)) = (&support.landlock.clone().map(|_| ()), &support.harden)
    {
        println!("skipped: no hardened sandbox here ({why})");
        return;
    }
    let configs = [true, false]
        .into_iter()
        .filter(|&cgroup| !cgroup || crate::support::cgroup_available())
        .map(|cgroup| crate::support::Config { cgroup, shim: true });
    for config in configs {
        let scratch = Scratch::new();
        let run_id = scratch.run_id("hard");
        let ws = scratch.subdir("ws");
        let script = format!(
            "cd {ws} || exit 9
             grep Seccomp: /proc/self/status > self
             cat /proc/self/cgroup > self.cgroup
             i=0
             until grep -q 'Seccomp:.2' /proc/$PPID/status; do
               i=$((i+1)); [ $i -gt 100000 ] && break
             done
             grep Seccomp: /proc/$PPID/status > shim
             cat /proc/$PPID/cgroup > shim.cgroup
             if (exec 3</proc/$PPID/mem) 2>/dev/null; then echo open; else echo refused; fi > mem",
            ws = ws.display()
        );
        runtime().block_on(async {
            let tracker = tracker(&scratch.reports(), &run_id, config);
            let mut command = AgentCommand::new("/bin/sh", ["-c", script.as_str()]);
            command.sandbox = Sandbox {
                writable: Some(vec![ws.clone()]),
                harden: true,
                ..Sandbox::default()
            };
            run_to_end(&tracker, command, config).await;
            tracker.close().expect("close");
        });
        let read = |name: &str| std::fs::read_to_string(ws.join(name)).unwrap_or_default();
        assert_eq!(
            read("self").split_whitespace().nth(1),
            Some("2"),
            "under {config}"
        );
        assert_eq!(
            read("shim").split_whitespace().nth(1),
            Some("2"),
            "under {config}"
        );
        assert_eq!(read("mem").trim(), "refused", "under {config}");
        let unified = |text: String| {
            text.lines()
                .find_map(|l| l.strip_prefix("0::").map(str::to_owned))
        };
        let (agent_cg, shim_cg) = (unified(read("self.cgroup")), unified(read("shim.cgroup")));
        if config.cgroup {
            assert!(
                agent_cg.as_deref().is_some_and(|c| c.ends_with("/main")),
                "the agent is in its leaf: {agent_cg:?}"
            );
            assert_ne!(agent_cg, shim_cg, "the shim stays outside the leaf");
        }
        assert_nothing_left(&run_id, &[], &format!("{config}"));
    }
}
