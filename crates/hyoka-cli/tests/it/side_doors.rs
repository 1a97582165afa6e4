//! `hyoka run --sandbox` against the side doors of issue 25, from the user's side: a root
//! agent making devices, changing metadata outside, injecting keystrokes; the supervisor's
//! control socket; forged workspace markers; and the resource limits (a fork bomb, a memory
//! hog, writes to the private /tmp). Where it matters each runs as root and as `nobody`.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use crate::support::{NOBODY, Scratch, as_nobody, give_to_nobody, need_root, stderr};

/// Whether the machine gives a strict sandbox; says why not on stderr.
fn strict_sandbox() -> bool {
    let support = hyoka_proctrack::SandboxSupport::detect();
    let ok = support.landlock.is_ok() && support.mounts.is_ok() && support.harden.is_ok();
    if !ok {
        eprintln!("skipping: this machine cannot give --sandbox ({support:?})");
    }
    ok
}

fn have(tool: &str) -> bool {
    let ok = std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok();
    if !ok {
        eprintln!("skipping: {tool} is not installed");
    }
    ok
}

/// The agent of [`powerless`]: each attempt prints `<name> ok` or `<name> denied`.
const ATTEMPTS: &str = r#"
import os, sys, stat, fcntl, termios, pty, socket
victim, home = sys.argv[1], sys.argv[2]
def attempt(name, f):
    try:
        f(); print(name, "ok")
    except OSError as e:
        print(name, "denied", e.errno)
attempt("mknod-block", lambda: os.mknod("disk", stat.S_IFBLK | 0o600, os.makedev(8, 0)))
attempt("mknod-char", lambda: os.mknod("mem", stat.S_IFCHR | 0o600, os.makedev(1, 1)))
attempt("chmod-outside", lambda: os.chmod(victim, 0o4777))
attempt("chown-outside", lambda: os.chown(victim, 0, 0))
attempt("utime-outside", lambda: os.utime(victim, (0, 0)))
attempt("xattr-outside", lambda: os.setxattr(victim, "user.x", b"1"))
def chattr():
    # FS_IOC_SETFLAGS with FS_IMMUTABLE_FL: `chattr +i` of a file outside.
    fd = os.open(victim, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, 0x40086602, (0x10).to_bytes(8, "little"))
    finally:
        os.close(fd)
attempt("chattr-outside", chattr)
attempt("xattr-workspace", lambda: os.setxattr(".", "user.hyoka.workspace", b"h3 forged"))
attempt("write-etc", lambda: open("/etc/hyoka-sbx-test", "w").write("x"))
attempt("read-home", lambda: os.listdir(home) and open(os.path.join(home, "secret")).read())
attempt("sysctl", lambda: open("/proc/sys/kernel/hostname", "w").write("x"))
attempt("cgroup-escape", lambda: open("/sys/fs/cgroup/unified/cgroup.procs", "w").write(str(os.getpid())))
def tiocsti():
    m, s = pty.openpty()
    fcntl.ioctl(s, termios.TIOCSTI, b"x")
attempt("tiocsti", tiocsti)
def abstract():
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect("\0" + sys.argv[3])
attempt("abstract-socket", abstract)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def unshare():
    if libc.unshare(0x10000000) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
attempt("unshare", unshare)
def call(name, *args):
    if getattr(libc, name)(*args) != 0:
        raise OSError(ctypes.get_errno(), name)
MS_REMOUNT, MS_BIND, MNT_DETACH = 32, 4096, 2
attempt("remount-rw", lambda: call("mount", None, b"/", None, MS_REMOUNT | MS_BIND, None))
attempt("mount-tmpfs", lambda: call("mount", b"tmpfs", b"/etc", b"tmpfs", 0, None))
attempt("umount-hidden", lambda: call("umount2", home.encode(), MNT_DETACH))
PTRACE_ATTACH = 16
attempt("ptrace-parent", lambda: call("ptrace", PTRACE_ATTACH, os.getppid(), None, None))
# The way out through /proc: another process's root is the host's, unhidden and writable.
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
outside = [p for p in pids if p != os.getpid()]
def through_proc(write):
    for pid in [1] + outside:
        root = "/proc/%d/root" % pid
        try:
            if write:
                open(root + "/etc/hyoka-sbx-test", "w").write("x")
            else:
                open(root + os.path.join(home, "secret")).read()
        except OSError:
            continue
        raise SystemExit("escaped through " + root)
    raise PermissionError(13, "no way through /proc")
attempt("proc-root-write", lambda: through_proc(True))
attempt("proc-root-read-home", lambda: through_proc(False))
attempt("records-write", lambda: open(sys.argv[4], "a").write("forged"))
attempt("pty", lambda: pty.openpty())
open("inside.txt", "w").write("fine")
print("uid", os.getuid(), "caps", [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0])
"#;

fn powerless(nobody: bool) {
    if !strict_sandbox() || !have("python3") {
        return;
    }
    let s = if nobody {
        Scratch::for_nobody()
    } else {
        Scratch::new()
    };
    let home = if nobody {
        s.files().join("home")
    } else {
        s.path().join("home")
    };
    if nobody {
        give_to_nobody(&home);
    } else {
        std::fs::create_dir_all(&home).unwrap();
    }
    std::fs::write(home.join("secret"), "ssh key").unwrap();
    // A file of the agent's own user outside every writable path (so without the sandbox
    // every change to it would succeed), and an abstract socket of the host.
    let victim = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "hyoka-victim-{}-{}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::write(&victim, "the user's file").unwrap();
    if nobody {
        std::os::unix::fs::chown(&victim, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let before = std::fs::metadata(&victim).unwrap();
    let name = format!("hyoka-sbx-{}-{}", std::process::id(), fastrand::u32(..));
    let listener = std::os::unix::net::UnixListener::bind_addr(
        &<std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            name.as_bytes(),
        )
        .unwrap(),
    )
    .unwrap();
    let mut cmd = s.hyoka("run");
    cmd.env("HOME", &home)
        .args(["--run-id", "root", "--sandbox", "--timeout", "60s", "--"])
        .args(["python3", "-c", ATTEMPTS])
        .arg(&victim)
        .arg(&home)
        .arg(&name)
        .arg(s.reports().join("root").join(hyoka_proctrack::LEDGER_FILE));
    if nobody {
        as_nobody(&mut cmd);
    }
    let out = cmd.output().unwrap();
    let log = std::fs::read_to_string(s.reports().join("root/main/output.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", stderr(&out));
    for attempt in [
        "mknod-block",
        "mknod-char",
        "chmod-outside",
        "chown-outside",
        "utime-outside",
        "xattr-outside",
        "chattr-outside",
        "xattr-workspace",
        "write-etc",
        "read-home",
        "sysctl",
        "cgroup-escape",
        "tiocsti",
        "abstract-socket",
        "unshare",
        "remount-rw",
        "mount-tmpfs",
        "umount-hidden",
        "ptrace-parent",
        "proc-root-write",
        "proc-root-read-home",
        "records-write",
    ] {
        assert!(
            log.lines()
                .any(|l| l.starts_with(&format!("{attempt} denied"))),
            "{attempt} was not denied:\n{log}"
        );
    }
    assert!(log.contains("pty ok"), "{log}");
    assert!(log.contains("caps 0000000000000000"), "{log}");
    assert!(!Path::new("/etc/hyoka-sbx-test").exists());
    let after = std::fs::metadata(&victim).unwrap();
    assert_eq!(
        (before.mode(), before.uid(), before.mtime()),
        (after.mode(), after.uid(), after.mtime())
    );
    std::fs::remove_file(&victim).unwrap();
    drop(listener);
    let report = s.report("root", "main");
    assert_eq!(report["sandbox"]["mount_namespace"], true, "{report}");
    assert_eq!(report["sandbox"]["privileges_dropped"], true, "{report}");
    assert_eq!(report["counts"]["files"], 1, "{report}");
    s.assert_no_workspaces();
}

/// Regression test for issue 25: a root agent under `--sandbox` makes no devices, changes no
/// metadata outside, injects no keystrokes, reaches no host abstract socket and sees no home.
#[test]
fn a_root_agent_is_powerless_in_the_sandbox() {
    powerless(false);
}

/// Regression test for issue 25, as `nobody` (the mount namespace through a user namespace).
#[test]
fn an_unprivileged_agent_is_powerless_in_the_sandbox() {
    if need_root("an_unprivileged_agent_is_powerless_in_the_sandbox") {
        powerless(true);
    }
}

/// Regression test for issue 25: an agent inside the sandbox cannot type into the user's
/// session, even when the registry is shown to it: the supervisor refuses the request.
#[test]
fn the_supervisor_refuses_requests_from_a_sandbox() {
    if !strict_sandbox() {
        return;
    }
    let case = crate::respawn::Case::new();
    let name = format!("victim-{}", fastrand::u32(..));
    let _running = case.start(&["--name", &name, "--no-cycle"], &case.sim(&[]));
    crate::support::wait_until("the session to be listed", || {
        case.hyoka()
            .args(["sessions", "--json"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&name))
    });
    let s = Scratch::new();
    let hyoka = crate::support::hyoka_path();
    for (shown, expected) in [(false, "error:"), (true, "refused")] {
        let mut cmd = s.hyoka("run");
        cmd.env("HYOKA_RUNTIME_DIR", case.runtime_dir())
            .args(["--run-id", if shown { "shown" } else { "hidden" }])
            .args(["--sandbox", "--timeout", "60s"]);
        if shown {
            cmd.arg("--sandbox-read").arg(case.runtime_dir());
        }
        let out = cmd
            .args(["--", hyoka, "send", &name, "rm -rf ~"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let run = if shown { "shown" } else { "hidden" };
        let log = std::fs::read_to_string(s.reports().join(run).join("main/output.log")).unwrap();
        assert!(log.to_lowercase().contains(expected), "{expected}: {log}");
    }
    assert!(
        std::fs::read_to_string(case.record_path())
            .unwrap_or_default()
            .lines()
            .all(|l| !l.contains("rm -rf")),
        "typed into the session"
    );
    // Listing the sessions and stopping one are refused the same way, and the session
    // still runs afterwards.
    for (run, request) in [
        ("list", vec!["sessions", "--json"]),
        ("stop", vec!["respawn", "--stop", "--name", &name]),
    ] {
        let out = s
            .hyoka("run")
            .env("HYOKA_RUNTIME_DIR", case.runtime_dir())
            .args([
                "--run-id",
                run,
                "--sandbox",
                "--timeout",
                "60s",
                "--sandbox-read",
            ])
            .arg(case.runtime_dir())
            .args(["--", hyoka])
            .args(&request)
            .output()
            .unwrap();
        let log = std::fs::read_to_string(s.reports().join(run).join("main/output.log")).unwrap();
        assert!(log.to_lowercase().contains("refused"), "{run}: {log}");
        // The registry shows the session's name, and nothing the controller would say.
        assert!(!log.contains("\"state\""), "{run}: {log}");
        // A listing says per session what went wrong (exit 0); a refused stop fails.
        let expected = i32::from(run == "stop");
        assert_eq!(
            out.status.code(),
            Some(expected),
            "{run}: {}\n{log}",
            stderr(&out)
        );
    }
    let listed = case.hyoka().args(["sessions", "--json"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(&name),
        "the session was stopped from the sandbox"
    );
}

/// Kills a test's tmux server (`tmux -L NAME`) however the test ends.
struct TmuxServer<'a>(&'a str);

impl Drop for TmuxServer<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", self.0, "kill-server"])
            .output();
    }
}

/// Regression test for issue 25: an agent under `--sandbox` typed into a tmux session
/// through the server's socket in the host's `/tmp`. The host's `/tmp` is hidden (the
/// eval's private one is there instead), so the same `tmux send-keys` that works from
/// outside finds no server inside.
#[test]
fn a_sandboxed_agent_cannot_type_through_a_tmux_socket() {
    if !strict_sandbox() || !crate::support::tmux_installed() {
        eprintln!("skipping: needs --sandbox and tmux");
        return;
    }
    let socket = format!("hyoka-sbx-{}-{}", std::process::id(), fastrand::u32(..));
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .unwrap()
    };
    let started = tmux(&["new-session", "-d", "-s", "victim", "cat"]);
    let _server = TmuxServer(&socket);
    assert!(started.status.success(), "{}", stderr(&started));
    let s = Scratch::new();
    let out = s
        .hyoka("run")
        .args(["--run-id", "tmux", "--sandbox", "--timeout", "60s", "--"])
        .args([
            "tmux",
            "-L",
            &socket,
            "send-keys",
            "-t",
            "victim",
            "typed-from-the-sandbox",
            "Enter",
        ])
        .output()
        .unwrap();
    let log = std::fs::read_to_string(s.reports().join("tmux/main/output.log")).unwrap_or_default();
    // From outside the same request works: the socket is there to be found.
    // (Keys are typed in order, so once these show, the sandbox's would have too.)
    let outside = tmux(&["send-keys", "-t", "victim", "typed-from-outside", "Enter"]);
    let pane = || {
        String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "victim"]).stdout).into_owned()
    };
    if outside.status.success() {
        crate::support::wait_until("the keys typed from outside to show", || {
            pane().contains("typed-from-outside")
        });
    }
    let shown = pane();
    assert!(outside.status.success(), "{}", stderr(&outside));
    assert_eq!(out.status.code(), Some(1), "{}\n{log}", stderr(&out));
    assert!(!shown.contains("typed-from-the-sandbox"), "{shown}");
    s.assert_no_workspaces();
}

/// Regression test for issue 25: a sandboxed agent cannot rewrite its workspace's marker, so
/// a workspace kept for the user stays kept through `hyoka clean`.
#[test]
fn kept_stays_kept_whatever_the_agent_writes() {
    if !strict_sandbox() || !have("python3") {
        return;
    }
    let s = Scratch::new();
    let forge = "import os\n\
        try:\n    os.setxattr('.', 'user.hyoka.workspace', b'h3 forged main - 2')\n    print('forged')\n\
        except OSError as e:\n    print('refused', e.errno)\n";
    let out = s.run(&[
        "--run-id",
        "kept",
        "--sandbox",
        "--keep-workspace",
        "always",
        "--",
        "python3",
        "-c",
        forge,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = std::fs::read_to_string(s.reports().join("kept/main/output.log")).unwrap();
    assert!(log.contains("refused 95"), "{log}");
    let kept: Vec<_> = std::fs::read_dir(s.ws_root()).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let clean = s.hyoka("clean").output().unwrap();
    assert_eq!(clean.status.code(), Some(0), "{}", stderr(&clean));
    assert!(kept[0].path().exists(), "clean removed a kept workspace");
    std::fs::remove_dir_all(kept[0].path()).unwrap();
}

/// The agent of the forged-marker tests, run without a sandbox: it rewrites the marker of the
/// workspace named by its first argument to name an owner that never ran, without ` kept`.
const FORGE: &str = r#"
import os, sys
path = sys.argv[1]
words = os.getxattr(path, "user.hyoka.workspace").decode().split(" ")
words[4] = "4194000"
os.setxattr(path, "user.hyoka.workspace", " ".join(words[:5]).encode())
print("forged", " ".join(words[:5]))
"#;

/// Runs [`FORGE`] on `victim` as an eval of run `attacker-<n>`, without a sandbox.
#[track_caller]
fn forge_marker(s: &Scratch, victim: &Path) {
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let run_id = format!(
        "attacker-{}",
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let out = s.run(&[
        "--run-id",
        &run_id,
        "--",
        "python3",
        "-c",
        FORGE,
        &victim.display().to_string(),
    ]);
    let log = std::fs::read_to_string(s.reports().join(&run_id).join("main/output.log"))
        .unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}{log}", stderr(&out));
    assert!(log.contains("forged h3 "), "{log}");
}

fn clean_text(s: &Scratch, extra: &[&str]) -> String {
    let out = s
        .hyoka("clean")
        .args(["--grace", "1s"])
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    text
}

/// Regression test for issue 25: an agent without a sandbox rewrote the marker of another
/// live run's workspace (an owner that never ran), and the next `hyoka clean` deleted that
/// live workspace. The workspace is removed only when an abandoned run's ledger names it:
/// the live run's stays.
#[test]
fn a_forged_marker_does_not_let_clean_delete_a_live_workspace() {
    if !have("python3") {
        return;
    }
    let s = Scratch::new();
    let named = s.path().join("victim.ws");
    let victim = s.spawn_run(
        &["--run-id", "victim", "--timeout", "120s", "--grace", "1s"],
        &format!(
            "echo \"$HYOKA_WORKSPACE\" > {0}.tmp && mv {0}.tmp {0}; exec sleep 600",
            named.display()
        ),
    );
    let mut victim = crate::support::ReapOnDrop(victim);
    crate::support::wait_until("the victim's workspace", || named.exists());
    let workspace = std::path::PathBuf::from(std::fs::read_to_string(&named).unwrap().trim());
    forge_marker(&s, &workspace);
    let text = clean_text(&s, &[]);
    assert!(
        workspace.is_dir(),
        "clean deleted a live run's workspace:\n{text}"
    );
    assert!(text.contains("run victim is live"), "{text}");
    // The victim ends as it would have: its workspace removed by its own run.
    crate::support::send(&victim.0, rustix::process::Signal::TERM);
    assert_eq!(victim.0.wait().unwrap().code(), Some(143));
    assert_eq!(s.report("victim", "main")["termination"], "interrupted");
    s.assert_no_workspaces();
}

/// Regression test for issue 25: removing ` kept` from a kept workspace's marker (an agent
/// without a sandbox) made a plain `hyoka clean` delete it. The ledger records the keep: the
/// workspace stays kept until `hyoka clean --kept`.
#[test]
fn an_unkept_marker_does_not_let_clean_delete_a_kept_workspace() {
    if !have("python3") {
        return;
    }
    let s = Scratch::new();
    let mut kept = Vec::new();
    for (run_id, keep, script) in [
        ("always", "always", "echo always > notes.txt"),
        ("failed", "on-failure", "echo failed > notes.txt; exit 3"),
    ] {
        let out = s.run(&[
            "--run-id",
            run_id,
            "--keep-workspace",
            keep,
            "--",
            "sh",
            "-c",
            script,
        ]);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr(&out)
        );
        let path = s.report(run_id, "main")["cleanup"]["workspace_kept_at"]
            .as_str()
            .map_or_else(|| panic!("{run_id} kept nothing"), std::path::PathBuf::from);
        forge_marker(&s, &path);
        kept.push(path);
    }
    let text = clean_text(&s, &[]);
    for path in &kept {
        assert!(
            path.join("notes.txt").is_file(),
            "clean deleted a kept workspace:\n{text}"
        );
        assert!(
            text.contains(&format!("workspace {}: kept", path.display())),
            "{text}"
        );
    }
    clean_text(&s, &["--kept"]);
    s.assert_no_workspaces();
}

/// Regression test for issue 25: a 1,000-process fork bomb under `--max-pids 256` is held at
/// 256, torn down, and recorded with its peak.
#[test]
fn a_fork_bomb_is_held_at_max_pids() {
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "bomb",
        "--max-pids",
        "256",
        "--timeout",
        "60s",
        "--grace",
        "1s",
        "--",
        "sh",
        "-c",
        "i=0; while [ $i -lt 1000 ]; do sleep 30 & i=$((i+1)); done 2>/dev/null; wait",
    ]);
    if stderr(&out).contains("needs the pids cgroup controller") {
        eprintln!("skipping: no pids controller here: {}", stderr(&out));
        return;
    }
    let report = s.report("bomb", "main");
    let pids = &report["resources"]["pids"];
    assert_eq!(pids["limit"], 256, "{report}");
    assert!(pids["peak"].as_u64().is_some_and(|p| p <= 256), "{report}");
    assert!(pids["hits"].as_u64() > Some(0), "{report}");
    assert_eq!(report["cleanup"]["survivors"], 0, "{report}");
    s.assert_no_workspaces();
}

/// Regression test for issue 25: a memory hog under `--max-memory` ends the trial with
/// `max_memory`, the figures recorded.
#[test]
fn a_memory_hog_ends_with_max_memory() {
    if !have("python3") {
        return;
    }
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "hog",
        "--max-memory",
        "64MiB",
        "--timeout",
        "60s",
        "--",
        "python3",
        "-c",
        "x = []\nwhile True: x.append(bytearray(8 << 20))",
    ]);
    if stderr(&out).contains("needs the memory cgroup controller") {
        eprintln!("skipping: no memory controller here: {}", stderr(&out));
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("hog", "main");
    assert_eq!(report["termination"], "max_memory", "{report}");
    assert_eq!(report["status"], "failed", "{report}");
    let memory = &report["resources"]["memory"];
    assert_eq!(memory["limit"], 64 << 20, "{report}");
    assert!(memory["peak"].as_u64() > Some(32 << 20), "{report}");
    assert!(
        report["error"]
            .as_str()
            .is_some_and(|e| e.contains("memory limit"))
    );
    s.assert_no_workspaces();
}

/// Regression test for issue 25: writes to the isolated home counted toward nothing (the
/// report said 0 files, 0 bytes), and a build or review printing without end was buffered
/// in memory (6 GB: hyoka died without a `report.json`). The home's writes are counted, and
/// a service's, the build's and the review's output is cut at the cap of `output.log`
/// (16 MiB) with a marker while the review's verdict, printed last, still decides. hyoka
/// runs under a 1 GiB address-space limit while its phases print 1.2 GB.
#[test]
fn the_home_is_counted_and_phase_output_is_capped() {
    if !strict_sandbox() {
        return;
    }
    let s = Scratch::new();
    let flood = "head -c 400000000 /dev/zero";
    let suite = s.path().join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "evals:\n  - id: loud\n    sandbox: true\n    isolate_home: true\n    command: [sh, -c, 'head -c 3000000 /dev/zero > \"$HOME/big\" && echo x > \"$HOME/small\"']\n    services:\n      - {{ name: noisy, command: [sh, -c, '{flood}; echo up > up; exec sleep 300'], ready: {{ file: up }}, timeout: 60s }}\n    build: '{flood}'\n    review: '{flood}; echo; echo ''{{\"pass\": true}}'''\n"
        ),
    )
    .unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$@\"")
        .arg("sh")
        .arg(crate::support::hyoka_path())
        .arg("run")
        .arg("--reports")
        .arg(s.reports())
        .arg("--workspace-root")
        .arg(s.ws_root())
        .args(["--run-id", "loud", "--suite"])
        .arg(&suite)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("loud", "loud");
    assert_eq!(report["status"], "passed", "{report}");
    assert_eq!(report["review"]["pass"], true, "{report}");
    assert_eq!(report["counts"]["home_files"], 2, "{report}");
    assert!(
        report["counts"]["home_bytes"].as_u64() >= Some(3_000_000),
        "{report}"
    );
    let cap = 16 << 20;
    for log in ["services/noisy.log", "build.log", "review.log"] {
        let path = s.reports().join("loud/loud").join(log);
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > cap && len < cap + 200, "{log}: {len}");
        let bytes = std::fs::read(&path).unwrap();
        let tail = String::from_utf8_lossy(&bytes[usize::try_from(cap).unwrap()..]);
        assert!(
            tail.contains("truncated at 16777216 bytes"),
            "{log}: {tail}"
        );
    }
    s.assert_no_workspaces();
}

/// Regression test for issue 25: writes to the private /tmp count (they were 0 files, 0
/// bytes) and toward `--max-disk`.
#[test]
fn writes_to_the_private_tmp_count_toward_max_disk() {
    if !strict_sandbox() {
        return;
    }
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "disk",
        "--sandbox",
        "--max-disk",
        "4MiB",
        "--timeout",
        "60s",
        "--",
        "sh",
        "-c",
        "head -c 8388608 /dev/zero > /tmp/big; while :; do sleep 1; done",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = s.report("disk", "main");
    assert_eq!(report["termination"], "max_disk", "{report}");
    assert_eq!(report["counts"]["tmp_files"], 1, "{report}");
    assert!(
        report["counts"]["tmp_bytes"].as_u64() >= Some(4 << 20),
        "{report}"
    );
    assert_eq!(report["resources"]["disk"]["limit"], 4 << 20, "{report}");
    s.assert_no_workspaces();
}

#[test]
fn bad_limit_values_are_refused() {
    let s = Scratch::new();
    for (args, named) in [
        (&["--max-memory", "lots", "--", "true"][..], "lots"),
        (&["--max-pids", "-3", "--", "true"][..], "-3"),
        (&["--max-pids", "99999999", "--", "true"][..], "99999999"),
        (&["--cpus", "NaN", "--", "true"][..], "NaN"),
        (&["--cpus", "5000", "--", "true"][..], "5000"),
        (&["--max-disk", "1e309", "--", "true"][..], "1e309"),
    ] {
        let out = s.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with("error:") && err.contains(named), "{err}");
    }
    assert!(!s.reports().exists());
}

/// Regression test for issue 25: the `$HYOKA_EVENTS` file was uncapped (1.5 GB kept under
/// `--max-output-size 1MiB`). Past 16 MiB it is no longer read and is cut back, and the
/// report says so.
#[test]
fn the_events_file_is_capped() {
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "events",
        "--events",
        "jsonl",
        "--timeout",
        "60s",
        "--",
        "sh",
        "-c",
        r#"yes '{"type":"noise"}' | head -c 40000000 >> "$HYOKA_EVENTS""#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = s.report("events", "main");
    let cap = 16u64 << 20;
    assert_eq!(report["events"]["capped_at"], cap, "{report}");
    // Lines of a type `jsonl` does not have; at most what fits in the cap was read.
    let lines = report["events"]["malformed_lines"].as_u64().unwrap();
    assert!(lines > 0 && lines <= cap / 17 + 1, "{report}");
    let kept = std::fs::metadata(s.reports().join("events/main/events.jsonl"))
        .unwrap()
        .len();
    assert!(kept <= cap, "{kept} bytes kept");
    s.assert_no_workspaces();
}
