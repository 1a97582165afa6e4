//! Tests of the shim's argument and report protocols.

use super::*;

#[track_caller]
fn check(args: &[&str], expected: Option<(RawFd, i32, u64, &str, &[&str])>) {
    let got = parse_args(args.iter().map(OsString::from));
    let cgroup_fd = args
        .iter()
        .position(|a| *a == "--cgroup-fd")
        .map(|i| args[i + 1].parse().unwrap());
    let cgroup_procs_fd = args
        .iter()
        .position(|a| *a == "--cgroup-procs-fd")
        .map(|i| args[i + 1].parse().unwrap());
    let seccomp = args.windows(2).any(|w| w == ["--seccomp", "1"]);
    let expected = expected.map(|(report_fd, parent, ms, program, rest)| ShimArgs {
        cgroup_fd,
        cgroup_procs_fd,
        seccomp,
        report_fd,
        parent,
        grace: Duration::from_millis(ms),
        program: program.into(),
        args: rest.iter().map(OsString::from).collect(),
    });
    assert_eq!(got, expected, "{args:?}");
}

#[test]
fn round_trips_what_the_tracker_builds() {
    let built = shim_args(
        9,
        1234,
        Duration::from_millis(2500),
        OsStr::new("agent"),
        &["--flag".into(), "--".into()],
    );
    let built: Vec<String> = built
        .into_iter()
        .map(|s| s.into_string().unwrap())
        .collect();
    let built: Vec<&str> = built.iter().map(String::as_str).collect();
    check(&built, Some((9, 1234, 2500, "agent", &["--flag", "--"])));
}

#[test]
fn refuses_incomplete_or_dangerous_arguments() {
    check(&[], None);
    check(&["--report-fd", "9", "--parent", "3", "--"], None);
    check(&["--report-fd", "1", "--parent", "3", "--", "x"], None);
    check(&["--report-fd", "9", "--", "x"], None);
    check(
        &[
            "--report-fd",
            "9",
            "--parent",
            "3",
            "--bogus",
            "1",
            "--",
            "x",
        ],
        None,
    );
    check(&["--report-fd", "nine", "--parent", "3", "--", "x"], None);
    check(
        &[
            "--cgroup-fd",
            "2",
            "--report-fd",
            "9",
            "--parent",
            "3",
            "--",
            "x",
        ],
        None,
    );
}

#[test]
fn a_sandboxed_shim_takes_the_leafs_procs_file_and_the_filters() {
    let args = [
        "--cgroup-fd",
        "7",
        "--cgroup-procs-fd",
        "8",
        "--seccomp",
        "1",
        "--report-fd",
        "9",
        "--parent",
        "3",
        "--",
        "x",
    ];
    check(&args, Some((9, 3, 5000, "x", &[])));
    let mut bad = args;
    bad[5] = "yes";
    check(&bad, None);
    bad = args;
    bad[3] = "1";
    check(&bad, None);
}

#[test]
fn takes_the_leaf_to_start_the_agent_in() {
    check(
        &[
            "--cgroup-fd",
            "7",
            "--report-fd",
            "9",
            "--parent",
            "3",
            "--",
            "x",
        ],
        Some((9, 3, 5000, "x", &[])),
    );
}

#[test]
fn exit_status_mirrors_the_agent() {
    assert_eq!(exit_byte(Some(3 << 8)), 3);
    assert_eq!(exit_byte(Some(libc::SIGKILL)), 137);
    assert_eq!(exit_byte(None), 143);
}

#[test]
fn report_lines_round_trip_and_refuse_garbage() {
    for report in [
        ShimReport::Started(ProcRef {
            pid: 4242,
            start_ticks: 987_654,
        }),
        ShimReport::SpawnFailed(libc::ENOENT),
        ShimReport::Exited(3),
        ShimReport::Signaled(libc::SIGKILL),
        ShimReport::Empty,
    ] {
        let line = report.line();
        assert_eq!(parse_report(line.trim_end()), Some(report), "{line:?}");
    }
    for bad in [
        "",
        "started",
        "started 12",
        "started x 5",
        "exited 99999999999",
        "exited 1 2",
        "shim-error parent already gone",
    ] {
        assert_eq!(parse_report(bad), None, "{bad:?}");
    }
}

/// Regression test for issue 11, finding 6: `run --grace` near `u64::MAX` seconds made a
/// shim argument the shim could not parse (a misleading `spawn_failed`).
#[test]
fn a_huge_grace_still_makes_arguments_the_shim_accepts() {
    let built = shim_args(9, 1234, Duration::MAX, OsStr::new("agent"), &[]);
    let parsed = parse_args(built).expect("accepted");
    assert_eq!(parsed.grace, Duration::from_millis(u64::MAX));
}
