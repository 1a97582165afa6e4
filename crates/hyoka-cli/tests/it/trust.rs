//! A ledger is evidence, not a command (issue 11, finding 2): reports directories written by
//! another user (`nobody`, played through a helper that drops privileges) and cleaned by
//! root. Nothing of root's is signalled, deleted or printed, and nobody's files stay nobody's.
//!
//! Every test here needs root (to be the victim and to play `nobody`) and skips elsewhere.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::{
    NOBODY, Scratch, as_nobody, give_to_nobody, hyoka, need_root, pid_alive, read_pid, stderr,
};

/// Runs `script` with `sh -c` as `nobody` and asserts it succeeded.
#[track_caller]
fn as_nobody_sh(script: &str) {
    let out = as_nobody(Command::new("sh").args(["-c", script]))
        .output()
        .unwrap();
    assert!(out.status.success(), "{script}: {}", stderr(&out));
}

/// A reports directory `nobody` owns, with one abandoned run `run_id` whose `pids.txt` is
/// `ledger` and whose `owner.lock` nobody holds, all written by `nobody`.
fn nobodys_run(s: &Scratch, run_id: &str, ledger: &str) -> PathBuf {
    let reports = s.path().join("evil");
    give_to_nobody(&reports);
    let run = reports.join(run_id);
    let ledger_file = s.path().join(format!("{run_id}.ledger"));
    std::fs::write(&ledger_file, ledger).unwrap();
    std::fs::set_permissions(
        &ledger_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    as_nobody_sh(&format!(
        "mkdir -m 755 {run} && : > {run}/owner.lock && cat {src} > {run}/pids.txt",
        run = run.display(),
        src = ledger_file.display()
    ));
    reports
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_owned()
}

/// A forged ledger header: the run, an owner that never existed (started at boot, so every
/// process qualifies by age), this boot.
fn header(run_id: &str) -> String {
    format!(
        "# hyoka-pids v1\n# run {run_id}\n# owner 4194000 1 {}\n",
        boot_id()
    )
}

fn clean_as_root(reports: &Path, ws_root: &Path, extra: &[&str]) -> Output {
    hyoka()
        .args(["clean", "--grace", "1s", "--reports"])
        .arg(reports)
        .arg("--workspace-root")
        .arg(ws_root)
        .args(extra)
        .output()
        .unwrap()
}

/// A root process group the test owns: a `sh` leading its own session with a child, both
/// killed when the guard drops.
struct RootTree {
    leader: std::process::Child,
    child: u32,
}

impl RootTree {
    fn start(s: &Scratch, name: &str) -> Self {
        let ready = s.path().join(format!("{name}.child"));
        let leader = Command::new("setsid")
            .args(["sh", "-c"])
            .arg(format!(
                "sleep 600 & echo $! > {r}.tmp && mv {r}.tmp {r}; wait",
                r = ready.display()
            ))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let child = read_pid(&ready);
        Self { leader, child }
    }
}

impl Drop for RootTree {
    fn drop(&mut self) {
        for pid in [self.child, self.leader.id()] {
            if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        let _ = self.leader.wait();
    }
}

/// Regression test for issue 11, finding 2: a ledger written by `nobody` that names root's
/// processes with their true start times (a lone `sleep`, and a `sh` leading a group with a
/// child) makes root's `clean` signal none of them.
#[test]
fn a_forged_ledger_cannot_make_root_signal_roots_processes() {
    if !need_root("a_forged_ledger_cannot_make_root_signal_roots_processes") {
        return;
    }
    let s = Scratch::new();
    let tree = RootTree::start(&s, "tree");
    let leader = tree.leader.id();
    let ledger = format!(
        "{}{leader}\t{}\t{leader}\tmain\tsh\n{child}\t{}\t{leader}\tmain\tsleep\n",
        header("forged"),
        crate::support::start_ticks(leader),
        crate::support::start_ticks(tree.child),
        child = tree.child,
    );
    let reports = nobodys_run(&s, "forged", &ledger);
    let out = clean_as_root(&reports, &s.ws_root(), &["--json"]);
    assert!(pid_alive(leader), "root's group leader was signalled");
    assert!(pid_alive(tree.child), "root's child was signalled");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &report["runs"][0];
    assert!(run["found"].as_array().unwrap().is_empty(), "{run}");
    let reasons: Vec<&str> = run["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["other_user", "other_user"], "{run}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Regression test for issue 11, finding 2: a `# workspace` line whose parent is a link to a
/// root-only directory does not make root's `clean` delete the unmarked directory there.
#[test]
fn a_workspace_reached_through_a_link_is_not_deleted() {
    if !need_root("a_workspace_reached_through_a_link_is_not_deleted") {
        return;
    }
    let s = Scratch::new();
    let secret = s.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    let victim = secret.join("hyoka-linked-abcdef");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "precious").unwrap();
    let link = s.ws_root().join("link");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let ledger = format!(
        "{}# workspace main {}\n",
        header("linked"),
        link.join("hyoka-linked-abcdef").display()
    );
    let reports = nobodys_run(&s, "linked", &ledger);
    let out = clean_as_root(&reports, &s.ws_root(), &["--json"]);
    assert_eq!(
        std::fs::read_to_string(victim.join("keep.txt")).unwrap(),
        "precious",
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["workspaces"][0]["action"], "refused", "{report}");
}

/// Regression test for issue 11, finding 2: a forged ledger naming a live run's workspace
/// does not delete it under the running agent.
#[test]
fn a_forged_ledger_cannot_delete_a_live_runs_workspace() {
    if !need_root("a_forged_ledger_cannot_delete_a_live_runs_workspace") {
        return;
    }
    let s = Scratch::new();
    let (ready, go) = (s.path().join("ready"), s.path().join("go"));
    let live = s
        .hyoka("run")
        .args(["--run-id", "live", "--"])
        .args([
            "sh",
            "-c",
            &format!(
                "echo $$ > {}; while [ ! -e {} ]; do sleep 0.05; done; test -e mine",
                ready.display(),
                go.display()
            ),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    read_pid(&ready);
    let workspace = std::fs::read_dir(s.ws_root())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .next()
        .unwrap();
    std::fs::write(workspace.join("mine"), "").unwrap();
    let ledger = format!(
        "{}# workspace main {}\n",
        header("live"),
        workspace.display()
    );
    let reports = nobodys_run(&s, "live", &ledger);
    let out = clean_as_root(&reports, &s.ws_root(), &["--json"]);
    assert!(
        workspace.join("mine").exists(),
        "the live run's workspace was deleted: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::write(&go, "").unwrap();
    let out = live.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    s.assert_no_workspaces();
}

/// Regression test for issue 11, finding 2: a `pids.txt` that is a link to a root-only file
/// is refused, and nothing of that file is printed (not even by `--dry-run`).
#[test]
fn a_ledger_that_is_a_link_is_refused_and_not_printed() {
    if !need_root("a_ledger_that_is_a_link_is_refused_and_not_printed") {
        return;
    }
    let s = Scratch::new();
    let secret = s.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-FIRST-LINE\nsecond\n").unwrap();
    let reports = s.path().join("evil");
    give_to_nobody(&reports);
    as_nobody_sh(&format!(
        "mkdir {run} && : > {run}/owner.lock && ln -s {secret} {run}/pids.txt",
        run = reports.join("linked").display(),
        secret = secret.display()
    ));
    for extra in [
        &["--dry-run"][..],
        &["--dry-run", "--json"],
        &[],
        &["--json"],
    ] {
        let out = clean_as_root(&reports, &s.ws_root(), extra);
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(
            !all.contains("TOP-SECRET"),
            "{extra:?} printed the file: {all}"
        );
        assert!(
            all.contains("pids.txt"),
            "{extra:?} does not say why: {all}"
        );
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {all}");
    }
    let ps = hyoka()
        .args(["ps", "--reports"])
        .arg(&reports)
        .output()
        .unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&ps.stdout), stderr(&ps));
    assert!(!all.contains("TOP-SECRET"), "ps printed the file: {all}");
    assert!(
        std::fs::symlink_metadata(reports.join("linked/pids.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// Regression test for issue 11, finding 2: a run directory or ledger anyone but its owner
/// may write is refused as a whole.
#[test]
fn a_group_writable_run_directory_is_refused() {
    if !need_root("a_group_writable_run_directory_is_refused") {
        return;
    }
    let s = Scratch::new();
    let tree = RootTree::start(&s, "tree");
    let leader = tree.leader.id();
    let ledger = format!(
        "{}{leader}\t{}\t{leader}\tmain\tsh\n",
        header("loose"),
        crate::support::start_ticks(leader)
    );
    let reports = nobodys_run(&s, "loose", &ledger);
    as_nobody_sh(&format!("chmod 777 {}", reports.join("loose").display()));
    let out = clean_as_root(&reports, &s.ws_root(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("writable"), "{text}");
    assert!(pid_alive(leader));
}

/// Regression test for issue 11, finding 2: root's `clean` of a run `nobody` crashed stops
/// nobody's processes, and the ledger it rewrites stays nobody's, with its mode.
#[test]
fn roots_clean_of_nobodys_crashed_run_keeps_the_ledger_nobodys() {
    if !need_root("roots_clean_of_nobodys_crashed_run_keeps_the_ledger_nobodys") {
        return;
    }
    let s = Scratch::for_nobody();
    let ready = s.files().join("ready");
    let mut run = as_nobody(&mut s.hyoka("run"))
        .args(["--run-id", "crashed", "--grace", "30s", "--"])
        .args([
            "sh",
            "-c",
            &format!(
                "trap '' TERM HUP; (trap '' TERM HUP; setsid sleep 600 & echo $! > {r}.tmp && mv {r}.tmp {r}; wait) & wait",
                r = ready.display()
            ),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let escapee = read_pid(&ready);
    let ledger = s.reports().join("crashed/pids.txt");
    crate::support::wait_for_ledger(&ledger, &[escapee]);
    crate::support::send(&run, rustix::process::Signal::KILL);
    run.wait().unwrap();
    let before = std::fs::metadata(&ledger).unwrap();
    assert_eq!(before.uid(), NOBODY);
    let out = clean_as_root(&s.reports(), &s.ws_root(), &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert!(!pid_alive(escapee), "nobody's escapee survived");
    let after = std::fs::metadata(&ledger).unwrap();
    assert!(
        std::fs::read_to_string(&ledger)
            .unwrap()
            .contains("# cleaned ")
    );
    assert_eq!(
        (after.uid(), after.gid(), after.mode()),
        (before.uid(), before.gid(), before.mode()),
        "root's clean changed the ledger's owner or mode"
    );
    s.assert_no_workspaces();
}
