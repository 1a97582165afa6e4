//! Bad input refused before anything is created, and hostile sizes refused before anything is
//! read (issue 11, findings 5 to 8): one `error:` line, exit 2 (or a refused run, exit 1 for
//! `clean`), no panic, nothing left behind.

use std::process::Stdio;

use crate::support::{Scratch, as_nobody, hyoka, need_root, pid_alive, read_pid, stderr};

/// Regression test for issue 11, finding 8: `clean` and `ps` on a reports path that does not
/// exist said "nothing to clean" and exited 0; a typo must not look like success.
#[test]
fn clean_and_ps_of_a_missing_reports_path_exit_2() {
    for command in ["clean", "ps"] {
        let out = hyoka()
            .args([command, "--reports", "/nonexistent/typo"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    }
}

/// Regression test for issue 11, finding 8: a reports directory on `/proc` (or one that
/// cannot be written) exited 1 after a failed start; it is refused up front with exit 2.
#[test]
fn unusable_reports_directories_are_refused_up_front() {
    let s = Scratch::new();
    let out = hyoka()
        .args([
            "run",
            "--reports",
            "/proc/hyoka-reports",
            "--workspace-root",
        ])
        .arg(s.ws_root())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("kernel file system"),
        "{}",
        stderr(&out)
    );
    s.assert_no_workspaces();
    if !need_root("unusable_reports_directories_are_refused_up_front (as nobody)") {
        return;
    }
    // As nobody, a directory of root's (mode 0755) cannot be written.
    let s = Scratch::for_nobody();
    let roots = s.path().join("roots");
    std::fs::create_dir(&roots).unwrap();
    let out = as_nobody(&mut hyoka())
        .args(["run", "--reports"])
        .arg(roots.join("reports"))
        .arg("--workspace-root")
        .arg(s.ws_root())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not writable"), "{}", stderr(&out));
    s.assert_no_workspaces();
}

/// Regression test for issue 11, finding 5: `--file /dev/zero:x` read until the OOM killer
/// came, `--file FIFO:x` blocked forever, and `--file inj.txt:` exited 1. Each is refused
/// with exit 2 before anything is created.
#[test]
fn special_or_targetless_injections_are_refused_before_anything_exists() {
    let s = Scratch::new();
    let fifo = s.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let file = s.path().join("inj.txt");
    std::fs::write(&file, "instructions").unwrap();
    for spec in [
        "/dev/zero:x".to_owned(),
        format!("{}:x", fifo.display()),
        format!("{}:", file.display()),
    ] {
        let out = s
            .hyoka("run")
            .args(["--file", &spec, "--", "true"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{spec}: {}", stderr(&out));
        assert_eq!(
            stderr(&out)
                .lines()
                .filter(|l| l.starts_with("error:"))
                .count(),
            1,
            "{spec}: {}",
            stderr(&out)
        );
        assert!(
            !s.reports().exists(),
            "{spec} created the reports directory"
        );
        s.assert_no_workspaces();
    }
}

/// Regression test for issue 11, finding 6: `clean --grace` near `u64::MAX` seconds panicked
/// adding it to an `Instant` (exit 101, ledger not marked cleaned).
#[test]
fn a_huge_clean_grace_does_not_panic() {
    let s = Scratch::new();
    let ready = s.path().join("ready");
    let mut run = s
        .hyoka("run")
        .args(["--run-id", "huge", "--grace", "30s", "--"])
        .args([
            "sh",
            "-c",
            &format!("setsid sleep 600 & echo $! > {}; wait", ready.display()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let escapee = read_pid(&ready);
    let ledger = s.reports().join("huge/pids.txt");
    crate::support::wait_for_ledger(&ledger, &[escapee]);
    crate::support::send(&run, rustix::process::Signal::KILL);
    run.wait().unwrap();
    let out = s
        .hyoka("clean")
        .args(["--grace", "18446744073709551615s"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert!(!pid_alive(escapee));
    assert!(
        std::fs::read_to_string(&ledger)
            .unwrap()
            .contains("# cleaned ")
    );
    s.assert_no_workspaces();
}

/// Regression test for issue 11, finding 7: a 1 GB sparse `pids.txt` cost 1 GB of memory; a
/// ledger larger than any hyoka writes is refused as hostile without being read, and `ps`
/// (live runs only) does not read it at all.
#[test]
fn an_oversized_ledger_is_refused_unread() {
    let s = Scratch::new();
    let run = s.reports().join("sparse");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("owner.lock"), "").unwrap();
    std::fs::File::create(run.join("pids.txt"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let out = s.hyoka("clean").arg("--dry-run").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("refused") && text.contains("more than"),
        "{text}"
    );
    let ps = hyoka()
        .args(["ps", "--reports"])
        .arg(s.reports())
        .output()
        .unwrap();
    assert_eq!(ps.status.code(), Some(0), "{}", stderr(&ps));
    assert_eq!(String::from_utf8_lossy(&ps.stdout).trim(), "no live runs");
}

/// Regression test for issue 11, finding 6: `run --grace` near `u64::MAX` seconds gave a
/// misleading `spawn_failed` (the shim could not parse its own grace).
#[test]
fn a_huge_run_grace_still_starts_the_agent() {
    let s = Scratch::new();
    let out = s.run(&[
        "--run-id",
        "huge-grace",
        "--grace",
        "18446744073709551615s",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(s.report("huge-grace", "main")["termination"], "exited");
    s.assert_no_workspaces();
}
