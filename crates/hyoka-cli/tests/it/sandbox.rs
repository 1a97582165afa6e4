//! `hyoka run --sandbox` and `--network none` end to end (issue 17): writes outside the
//! workspace fail in the agent and in a daemon it detaches, and no file appears; writes inside
//! work and are counted; without a network the agent cannot reach a listener on the host's
//! loopback, with one it can. Each runs as root and as `nobody` (through a user namespace).

use std::path::Path;
use std::process::Command;

use crate::support::{Scratch, as_nobody, give_to_nobody, need_root, stderr};

/// Whether the machine has what `--sandbox` needs; says why not on stderr.
fn landlock() -> bool {
    let ok = hyoka_proctrack::SandboxSupport::detect().landlock.is_ok();
    if !ok {
        eprintln!("skipping: no Landlock on this machine");
    }
    ok
}

/// The agent: tries each target, then starts a daemon (a new session, a cleared environment,
/// its parent gone) that tries them again, waits for it and prints both results.
fn writer(targets: &[String]) -> String {
    let tries: String = targets
        .iter()
        .map(|t| format!("if echo x > {t} 2>/dev/null; then echo \"$who {t} ok\"; else echo \"$who {t} denied\"; fi; "))
        .collect();
    format!(
        "who=agent; {tries} echo in > inside.txt; \
         ( setsid env -i /bin/sh -c 'who=daemon; {tries} echo done > daemon.done' </dev/null > daemon.log 2>&1 & ); \
         while [ ! -s daemon.done ]; do sleep 0.01; done; cat daemon.log; echo tmp > \"$TMPDIR/t\" && echo tmpdir ok"
    )
}

fn confined(s: &Scratch, home: &Path, nobody: bool) {
    let outside = [
        s.path().join("outside.txt"),
        home.join("home.txt"),
        std::env::temp_dir().join(format!("cli-sbx-{}.txt", std::process::id())),
    ];
    let mut targets: Vec<String> = outside.iter().map(|p| p.display().to_string()).collect();
    targets.push("../sibling.txt".to_owned());
    let mut cmd = s.hyoka("run");
    cmd.env("HOME", home)
        .args([
            "--run-id",
            "sbx",
            "--sandbox",
            "--grace",
            "1s",
            "--timeout",
            "60s",
        ])
        .args(["--", "sh", "-c", &writer(&targets)]);
    if nobody {
        as_nobody(&mut cmd);
    }
    let out = cmd.output().unwrap();
    let log = std::fs::read_to_string(s.reports().join("sbx/main/output.log")).unwrap_or_default();
    for path in &outside {
        let _ = std::fs::remove_file(path);
    }
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", stderr(&out));
    for who in ["agent", "daemon"] {
        // A path under /tmp (the scratch area, `../sibling.txt` beside the workspace) is in
        // the private /tmp: writing it works there and never reaches the host's, checked
        // below.
        for target in targets
            .iter()
            .filter(|t| !t.starts_with("..") && !t.starts_with("/tmp/"))
        {
            assert!(
                log.contains(&format!("{who} {target} denied")),
                "{who} {target}:\n{log}"
            );
        }
    }
    assert!(log.contains("tmpdir ok"), "{log}");
    for path in &outside {
        assert!(!path.exists(), "{} appeared", path.display());
    }
    assert!(!s.ws_root().join("sibling.txt").exists());
    let report = s.report("sbx", "main");
    // inside.txt, daemon.log and daemon.done: the writes inside work and are counted.
    assert_eq!(report["counts"]["files"], 3, "{report}");
    let sandbox = &report["sandbox"];
    assert_eq!(sandbox["mode"], "on", "{report}");
    assert!(sandbox["landlock_abi"].as_u64() >= Some(3), "{report}");
    assert_eq!(sandbox["network"], "host", "{report}");
    assert_eq!(sandbox["writable"][0], report["workspace"], "{report}");
    assert!(sandbox["denied_writes"].is_null(), "{report}");
    assert_eq!(report["cleanup"]["survivors"], 0, "{report}");
    // The workspace and the private temp directory are gone.
    s.assert_no_workspaces();
}

/// Regression test for issue 17: writes outside the workspace are refused, as root.
#[test]
fn the_sandbox_confines_the_agent_and_its_daemon() {
    if !landlock() {
        return;
    }
    let s = Scratch::new();
    let home = s.path().join("home");
    std::fs::create_dir(&home).unwrap();
    confined(&s, &home, false);
}

/// Regression test for issue 17, as `nobody`.
#[test]
fn the_sandbox_confines_the_agent_and_its_daemon_as_nobody() {
    if !need_root("the_sandbox_confines_the_agent_and_its_daemon_as_nobody") || !landlock() {
        return;
    }
    let s = Scratch::for_nobody();
    let home = s.files().join("home");
    give_to_nobody(&home);
    confined(&s, &home, true);
}

fn network(nobody: bool) {
    if let hyoka_proctrack::NetIsolation::Unavailable(why) =
        hyoka_proctrack::SandboxSupport::detect().network
    {
        eprintln!("skipping: no network namespaces here ({why})");
        return;
    }
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipping: the agent needs bash for /dev/tcp");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let s = if nobody {
        Scratch::for_nobody()
    } else {
        Scratch::new()
    };
    for (net, expected) in [("host", 0), ("none", 1)] {
        let run_id = format!("net-{net}");
        let mut cmd = s.hyoka("run");
        cmd.args([
            "--run-id",
            &run_id,
            "--network",
            net,
            "--timeout",
            "60s",
            "--",
        ])
        .args(["bash", "-c", &format!("exec 3<>/dev/tcp/127.0.0.1/{port}")]);
        if nobody {
            as_nobody(&mut cmd);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(expected),
            "--network {net}: {}",
            stderr(&out)
        );
        let report = s.report(&run_id, "main");
        if net == "none" {
            assert_eq!(report["sandbox"]["network"], "none", "{report}");
            assert!(report["sandbox"]["landlock_abi"].is_null(), "{report}");
        } else {
            assert!(report.get("sandbox").is_none(), "{report}");
        }
    }
    s.assert_no_workspaces();
}

/// Regression test for issue 17: `--network none` keeps the agent from the host's loopback.
#[test]
fn no_network_cannot_reach_the_hosts_loopback() {
    network(false);
}

/// Regression test for issue 17, as `nobody` (the namespace comes from a user namespace).
#[test]
fn no_network_cannot_reach_the_hosts_loopback_as_nobody() {
    if need_root("no_network_cannot_reach_the_hosts_loopback_as_nobody") {
        network(true);
    }
}

/// A suite eval under `sandbox: true` and `network: none`: its service (a TCP server on
/// loopback, ready by a TCP check) and its agent share one namespace, so the agent reaches the
/// service and not the host's listener.
fn shared_namespace(nobody: bool) {
    if hyoka_proctrack::SandboxSupport::detect().landlock.is_err()
        || !hyoka_proctrack::SandboxSupport::detect()
            .network
            .is_available()
    {
        eprintln!("skipping: no Landlock or network namespaces here");
        return;
    }
    for tool in ["python3", "bash"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!("skipping: the service needs python3 and the agent bash");
            return;
        }
    }
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host_port = host.local_addr().unwrap().port();
    let s = if nobody {
        Scratch::for_nobody()
    } else {
        Scratch::new()
    };
    let suite = s.files().join("suite.yaml");
    std::fs::create_dir_all(s.files()).unwrap();
    std::fs::write(
        &suite,
        format!(
            "defaults: {{ sandbox: true, network: none }}\n\
             evals:\n\
             \x20 - id: offline\n\
             \x20   command: [bash, -c, 'exec 3<>/dev/tcp/127.0.0.1/8765 && ! (exec 4<>/dev/tcp/127.0.0.1/{host_port}) 2>/dev/null']\n\
             \x20   services:\n\
             \x20     - name: api\n\
             \x20       command: [python3, -m, http.server, '8765', --bind, 127.0.0.1]\n\
             \x20       ready: {{ tcp: '127.0.0.1:8765' }}\n\
             \x20       timeout: 30s\n"
        ),
    )
    .unwrap();
    let mut cmd = s.hyoka("run");
    cmd.args(["--run-id", "shared", "--grace", "1s", "--suite"])
        .arg(&suite);
    if nobody {
        as_nobody(&mut cmd);
    }
    let out = cmd.output().unwrap();
    let report = s.report("shared", "offline");
    assert_eq!(out.status.code(), Some(0), "{}\n{report}", stderr(&out));
    assert_eq!(report["sandbox"]["network"], "none", "{report}");
    assert_eq!(report["cleanup"]["survivors"], 0, "{report}");
    s.assert_no_workspaces();
}

/// Regression test for issue 17: an eval's service and agent share one network namespace.
#[test]
fn an_evals_service_and_agent_share_the_namespace() {
    shared_namespace(false);
}

/// Regression test for issue 17, as `nobody` (a namespace in a user namespace, shared).
#[test]
fn an_evals_service_and_agent_share_the_namespace_as_nobody() {
    if need_root("an_evals_service_and_agent_share_the_namespace_as_nobody") {
        shared_namespace(true);
    }
}

#[test]
fn bad_sandbox_flags_are_refused() {
    let s = Scratch::new();
    for (args, named) in [
        (&["--sandbox=maybe", "--", "true"][..], "maybe"),
        (&["--network", "wifi", "--", "true"][..], "wifi"),
    ] {
        let out = s.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with("error:") && err.contains(named), "{err}");
    }
    assert!(!s.reports().exists());
}

/// A hyoka unpacked in the host's `/tmp` (a downloaded release, a CI cache) runs sandboxed
/// agents: the shim it starts them through, hidden by the private `/tmp`, is bound back.
#[test]
fn a_hyoka_in_the_hosts_tmp_runs_sandboxed_agents() {
    if !landlock() {
        return;
    }
    let s = Scratch::new();
    let dir = tempfile::Builder::new()
        .prefix("cli-unpacked-")
        .tempdir_in("/tmp")
        .unwrap();
    let copy = dir.path().join("hyoka");
    std::fs::copy(crate::support::hyoka_path(), &copy).unwrap();
    let out = Command::new(&copy)
        .arg("run")
        .arg("--reports")
        .arg(s.reports())
        .arg("--workspace-root")
        .arg(s.ws_root())
        .args(["--run-id", "tmpbin", "--sandbox", "--timeout", "60s"])
        .args(["--", "sh", "-c", "echo hi > a.txt"])
        .output()
        .unwrap();
    let report = s.report("tmpbin", "main");
    assert_eq!(report["termination"], "exited", "{report}");
    assert_eq!(report["sandbox"]["mount_namespace"], true, "{report}");
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The shim a sandboxed agent starts under is the static build in memory too: the sandbox
/// keeps the host's `/proc`, where the memfd's path is. Seen from outside, since the agent
/// may not look at its shim (it is not dumpable), as root and as `nobody`.
fn under_the_embedded_shim(nobody: bool) {
    let image = std::fs::metadata(concat!(env!("OUT_DIR"), "/hyoka-shim.image")).unwrap();
    if image.len() == 0 {
        eprintln!("skipping: this build embeds no static shim (no musl target installed)");
        return;
    }
    let s = if nobody {
        Scratch::for_nobody()
    } else {
        Scratch::new()
    };
    let mut cmd = s.hyoka("run");
    cmd.args(["--run-id", "memfd", "--sandbox", "--timeout", "60s", "--"])
        .args([
            "sh",
            "-c",
            "echo $$ > ready.tmp && mv ready.tmp ready; while [ ! -e go ]; do sleep 0.01; done",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if nobody {
        as_nobody(&mut cmd);
    }
    let child = cmd.spawn().unwrap();
    let workspace = || {
        std::fs::read_dir(s.ws_root())
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("ready").exists())
    };
    crate::support::wait_until("the agent's readiness file", || workspace().is_some());
    let workspace = workspace().unwrap();
    let agent: u32 = std::fs::read_to_string(workspace.join("ready"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{agent}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let shim = after_name.split(' ').nth(1).unwrap();
    let exe = std::fs::read_link(format!("/proc/{shim}/exe")).unwrap();
    std::fs::write(workspace.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        exe.to_string_lossy().starts_with("/memfd:hyoka-shim"),
        "{}",
        exe.display()
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(s.report("memfd", "main")["termination"], "exited");
}

#[test]
fn a_sandboxed_agent_starts_under_the_embedded_shim() {
    if landlock() {
        under_the_embedded_shim(false);
    }
}

#[test]
fn a_sandboxed_agent_starts_under_the_embedded_shim_as_nobody() {
    if need_root("a_sandboxed_agent_starts_under_the_embedded_shim_as_nobody") && landlock() {
        under_the_embedded_shim(true);
    }
}
