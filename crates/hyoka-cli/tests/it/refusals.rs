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
/// adding it to an `Instant` (exit 101, ledger not marked cleaned). Durations are
/// range-checked where they are parsed: exit 2, and the crashed run is left as it was for a
/// clean with a sane grace.
#[test]
fn a_huge_clean_grace_is_refused_and_changes_nothing() {
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
    let before = std::fs::read(&ledger).unwrap();
    for grace in ["18446744073709551615s", "9223372036854775807s", "3651d"] {
        let out = s.hyoka("clean").args(["--grace", grace]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{grace}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("at most 10 years"),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read(&ledger).unwrap(),
            before,
            "{grace}: clean acted"
        );
    }
    let out = s.hyoka("clean").args(["--grace", "1s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!pid_alive(escapee));
    assert!(
        std::fs::read_to_string(&ledger)
            .unwrap()
            .contains("# cleaned ")
    );
    s.assert_no_workspaces();
}

/// Regression test for issue 11, findings 5 and 6: `--timeout 9223372036854775807s` (and a
/// suite `timeout:` near `u64::MAX`) panicked with an overflow adding to an `Instant` (exit
/// 101, the run directory created), and `run --grace` near `u64::MAX` gave a misleading
/// `spawn_failed`. Every duration flag and suite field is range-checked: one `error:` line,
/// exit 2, no panic, nothing created.
#[test]
fn huge_durations_are_refused_before_anything_is_created() {
    let s = Scratch::new();
    let huge = "9223372036854775807s";
    let check = |what: &str, out: &std::process::Output| {
        let err = stderr(out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.starts_with("error:")).count(),
            1,
            "{what}: {err}"
        );
        assert!(err.contains("at most 10 years"), "{what}: {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert!(
            !s.reports().exists(),
            "{what} created the reports directory"
        );
        s.assert_no_workspaces();
    };
    for flag in [
        "--timeout",
        "--grace",
        "--build-timeout",
        "--review-timeout",
    ] {
        let out = s.run(&[
            flag, huge, "--build", "true", "--review", "true", "--", "true",
        ]);
        check(flag, &out);
    }
    for (field, yaml) in [
        (
            "timeout",
            format!("defaults: {{ timeout: {huge} }}\nevals: [{{ id: a, command: [\"true\"] }}]\n"),
        ),
        (
            "grace",
            "evals: [{ id: a, command: [\"true\"], grace: 18446744073709551615s }]\n".to_owned(),
        ),
        (
            "build",
            format!(
                "evals: [{{ id: a, command: [\"true\"], build: {{ command: [\"true\"], timeout: {huge} }} }}]\n"
            ),
        ),
        (
            "service",
            format!(
                "evals: [{{ id: a, command: [\"true\"], services: [{{ name: s, command: [sleep, \"9\"], timeout: {huge} }}] }}]\n"
            ),
        ),
    ] {
        let suite = s.path().join(format!("{field}.yaml"));
        std::fs::write(&suite, yaml).unwrap();
        let out = s.hyoka("run").arg("--suite").arg(&suite).output().unwrap();
        check(field, &out);
    }
    // Sizes too: a byte count beyond u64 is refused the same way.
    let out = s.run(&["--max-output-size", "20000000TiB", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("too large"), "{}", stderr(&out));
    let suite = s.path().join("size.yaml");
    std::fs::write(
        &suite,
        "evals: [{ id: a, command: [\"true\"], limits: { max_output_size: 20000000TiB } }]\n",
    )
    .unwrap();
    let out = s.hyoka("run").arg("--suite").arg(&suite).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("too large"), "{}", stderr(&out));
    assert!(!s.reports().exists());
    for flag in [
        "--human-lock",
        "--grace",
        "--completion-confirm",
        "--check-timeout",
    ] {
        let out = hyoka()
            .args(["respawn", "--headless", "--reports"])
            .arg(s.reports())
            .args([flag, huge, "--", "true"])
            .output()
            .unwrap();
        check(flag, &out);
    }
}

/// Regression test for issue 11, finding 7: a 1 GB sparse `pids.txt` cost 1 GB of memory; a
/// ledger larger than any hyoka writes is refused as hostile without being read, and `ps`
/// (which reads the ledgers of live runs and of runs not yet cleaned, bounded) lists
/// nothing from it.
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
