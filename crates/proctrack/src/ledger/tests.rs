//! Tests of the ledger format: round trip, tolerance, and refusal of hostile lines.

use super::*;

const BOOT: &str = "0f3c1a9e-7d2b-4a61-9c55-1b2e3d4f5a6b";
const SELF_PID: i32 = 4000;

fn sample() -> Ledger {
    let mut ledger = Ledger::new("run-1", format!("777 12345 {BOOT}").parse().unwrap()).unwrap();
    ledger.instance = Some(Instance::new("0123456789abcdef").unwrap());
    ledger
        .set_workspace("main", Path::new("/tmp/hyoka-run-1-abc def"))
        .unwrap();
    ledger
        .set_kept("main", Path::new("/tmp/hyoka-run-1-abc def"))
        .unwrap();
    ledger
        .set_cgroup("main", Path::new("/sys/fs/cgroup/unified/hyoka-run-1/main"))
        .unwrap();
    for hierarchy in ["memory", "pids", "memory"] {
        ledger
            .add_cgroup_v1(
                "main",
                &Path::new("/sys/fs/cgroup")
                    .join(hierarchy)
                    .join("hyoka-run-1/main"),
            )
            .unwrap();
    }
    ledger.entries.push(LedgerEntry {
        pid: 4242,
        start_ticks: 99,
        pgid: 4242,
        eval_id: "main".into(),
        comm: "tab\there".into(),
    });
    ledger
}

/// Parses `text` and compares the pids accepted and the line numbers refused.
#[track_caller]
fn check(text: &str, pids: &[i32], problem_lines: &[usize]) {
    let parsed = Ledger::parse(text.as_bytes(), SELF_PID);
    let got: Vec<i32> = parsed.ledger.entries.iter().map(|e| e.pid).collect();
    assert_eq!(got, pids, "accepted pids of {text:?}");
    let lines: Vec<usize> = parsed.problems.iter().map(|p| p.line).collect();
    assert_eq!(
        lines, problem_lines,
        "problems of {text:?}: {:?}",
        parsed.problems
    );
}

#[test]
fn round_trips_exactly() {
    let ledger = sample();
    let text = String::from_utf8(ledger.render()).unwrap();
    assert_eq!(
        text,
        format!(
            "# hyoka-pids v1\n# run run-1\n# owner 777 12345 {BOOT}\n\
             # instance 0123456789abcdef\n\
             # workspace main /tmp/hyoka-run-1-abc def\n\
             # kept main /tmp/hyoka-run-1-abc def\n\
             # cgroup main /sys/fs/cgroup/unified/hyoka-run-1/main\n\
             # cgroup-v1 main /sys/fs/cgroup/memory/hyoka-run-1/main\n\
             # cgroup-v1 main /sys/fs/cgroup/pids/hyoka-run-1/main\n\
             4242\t99\t4242\tmain\ttab?here\n"
        )
    );
    let parsed = Ledger::parse(text.as_bytes(), SELF_PID);
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    let mut expected = ledger;
    expected.entries[0].comm = "tab?here".into();
    assert_eq!(parsed.ledger, expected);
}

#[test]
fn refuses_hostile_lines_and_keeps_the_rest() {
    let head = "# hyoka-pids v1\n# run r\n";
    check(
        &format!(
            "{head}0\t1\t5\tmain\tx\n1\t1\t5\tmain\tx\n-1\t1\t5\tmain\tx\n{SELF_PID}\t1\t5\tmain\tx\n\
             garbage\n5000\t1\t-1\tmain\tx\n5001\tabc\t5\tmain\tx\n5002\t7\t5002\t../x\tx\n\
             5003\t7\t5003\tmain\tsh\n"
        ),
        &[5003],
        &[3, 4, 5, 6, 7, 8, 9, 10],
    );
}

#[test]
fn torn_last_line_is_never_acted_on() {
    check(
        "# hyoka-pids v1\n# run r\n5003\t7\t5003\tmain\tsh\n5004\t8",
        &[5003],
        &[4],
    );
    check("# hyoka-pids v1\n# run r\n50", &[], &[3]);
}

#[test]
fn foreign_or_empty_files_yield_nothing() {
    check("", &[], &[1]);
    check("5003\t7\t5003\tmain\tsh\n", &[], &[1]);
    check("# hyoka-pids v2\n5003\t7\t5003\tmain\tsh\n", &[], &[1]);
    check("# hyoka-pids v1\n5003\t7\t5003\tmain\tsh\n", &[5003], &[0]);
    check("\u{0}\u{1}binary\n", &[], &[1]);
}

#[test]
fn duplicates_collapse_and_cleaned_marker_parses() {
    let text =
        "# hyoka-pids v1\n# run r\n# cleaned 1700000000\n9\t1\t9\tmain\ta\n9\t1\t9\tmain\ta\n";
    let parsed = Ledger::parse(text.as_bytes(), SELF_PID);
    assert_eq!(parsed.ledger.entries.len(), 1);
    assert_eq!(parsed.ledger.cleaned, Some(1_700_000_000));
}

#[test]
fn paths_with_line_breaks_are_refused() {
    let mut ledger = sample();
    assert!(
        ledger
            .set_workspace("main", Path::new("/tmp/a\nb"))
            .is_err()
    );
    assert!(ledger.set_workspace("main", Path::new("relative")).is_err());
}

#[test]
fn atomic_write_replaces_and_leaves_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(LEDGER_FILE);
    let mut ledger = sample();
    ledger.write_atomic(&path).unwrap();
    ledger.cleaned = Some(5);
    ledger.write_atomic(&path).unwrap();
    let parsed = Ledger::read(&path, SELF_PID).unwrap();
    assert_eq!(parsed.ledger.cleaned, Some(5));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from(LEDGER_FILE)]);
}

#[test]
fn a_streamed_write_lands_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    // Larger than the write buffer, so the content reaches the file in several writes.
    let big = "x".repeat(100_000);
    write_atomic_with(&path, |out| out.write_all(big.as_bytes())).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), big);
    let err = write_atomic_with(&path, |out| {
        out.write_all(b"torn")?;
        Err(std::io::Error::other("the value cannot be serialized"))
    })
    .unwrap_err();
    let cause = std::error::Error::source(&err).map(ToString::to_string);
    assert_eq!(
        cause.as_deref(),
        Some("the value cannot be serialized"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), big, "unchanged");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        [std::ffi::OsString::from("run.json")],
        "no temp left"
    );
}

#[test]
fn a_rewrite_keeps_the_owner_and_mode_of_the_file_it_replaces() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(LEDGER_FILE);
    sample().write_atomic(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let root = rustix::process::geteuid().is_root();
    if root {
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    }
    let mut ledger = sample();
    ledger.cleaned = Some(9);
    ledger.write_atomic(&path).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    if root {
        assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    }
    assert_eq!(
        Ledger::read(&path, SELF_PID).unwrap().ledger.cleaned,
        Some(9)
    );
}

#[test]
fn a_hostile_flood_of_lines_is_parsed_once_and_listed_briefly() {
    use std::fmt::Write as _;
    let mut text = String::from("# hyoka-pids v1\n# run r\n");
    for i in 0..10_000 {
        let _ = write!(text, "{}\t7\t5\tmain\tx\ngarbage {i}\n", 5000 + i % 100);
    }
    let parsed = Ledger::parse(text.as_bytes(), SELF_PID);
    // Duplicates collapse (100 distinct identities), garbage is counted past 100 problems.
    assert_eq!(parsed.ledger.entries.len(), 100);
    assert_eq!(parsed.problems.len(), 101);
    assert_eq!(parsed.problems[100].text, "9900 more");
}

#[test]
fn reading_refuses_links_and_special_files() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("secret");
    std::fs::write(&target, "# hyoka-pids v1\n# run r\n").unwrap();
    let link = dir.path().join(LEDGER_FILE);
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(matches!(
        Ledger::read(&link, SELF_PID),
        Err(ProcTrackError::Untrusted { .. })
    ));
    assert!(matches!(
        Ledger::read(Path::new("/dev/zero"), SELF_PID),
        Err(ProcTrackError::Untrusted { .. })
    ));
}

/// What a ledger says, whatever the order its lines were written in.
fn said(ledger: &Ledger) -> (Vec<String>, Option<u64>) {
    let mut lines: Vec<String> = String::from_utf8(ledger.render())
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("# cleaned"))
        .map(str::to_owned)
        .collect();
    lines.sort();
    (lines, ledger.cleaned)
}

fn entry(pid: i32, eval: &str) -> LedgerEntry {
    LedgerEntry {
        pid,
        start_ticks: 7,
        pgid: pid,
        eval_id: eval.into(),
        comm: "sh".into(),
    }
}

/// One change to a ledger.
type Step = Box<dyn Fn(&mut Ledger)>;

#[test]
fn appended_changes_read_back_as_the_ledger_they_describe() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(LEDGER_FILE);
    let mut ledger = sample();
    let mut log = LedgerLog::create(&path, &ledger).unwrap();
    let steps: Vec<Step> = vec![
        Box::new(|l| l.set_workspace("a", Path::new("/w/a")).unwrap()),
        Box::new(|l| l.entries.push(entry(5000, "a"))),
        Box::new(|l| l.set_cgroup("a", Path::new("/cg/a")).unwrap()),
        Box::new(|l| l.entries[1].comm = "renamed".into()),
        Box::new(|l| l.entries.retain(|e| e.pid != 4242)),
        Box::new(|l| l.set_workspace("a", Path::new("/w/a2")).unwrap()),
        Box::new(|l| l.workspaces.retain(|w| w.eval_id != "main")),
        Box::new(|l| l.cgroups.clear()),
        Box::new(|l| l.cgroups_v1.truncate(1)),
        Box::new(|l| l.kept.clear()),
        Box::new(|l| l.cleaned = Some(77)),
    ];
    for step in steps {
        step(&mut ledger);
        log.write(&ledger).unwrap();
        let parsed = Ledger::read(&path, SELF_PID).unwrap();
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        assert_eq!(said(&parsed.ledger), said(&ledger));
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(&String::from_utf8(sample().render()).unwrap()),
        "{text}"
    );
    for line in [
        "# -process 4242 99\n",
        "# -workspace main /tmp/hyoka-run-1-abc def\n",
        "# -workspace a /w/a\n",
        "# -cgroup a /cg/a\n",
        "5000\t7\t5000\ta\trenamed\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
}

#[test]
fn only_lines_that_outlive_a_reboot_are_synced() {
    let old = sample();
    let durable = |f: &dyn Fn(&mut Ledger)| {
        let mut new = old.clone();
        f(&mut new);
        old.delta(&new).unwrap().durable
    };
    assert!(durable(&|l| l
        .set_workspace("b", Path::new("/w/b"))
        .unwrap()));
    assert!(durable(&|l| l.set_kept("b", Path::new("/w/b")).unwrap()));
    assert!(durable(&|l| l.cleaned = Some(1)));
    assert!(!durable(&|l| l.workspaces.clear()));
    assert!(!durable(&|l| l.entries.push(entry(5001, "main"))));
    assert!(!durable(&|l| l.entries.clear()));
    assert!(!durable(&|l| l
        .set_cgroup("b", Path::new("/cg/b"))
        .unwrap()));
    assert!(old.delta(&old).unwrap().bytes.is_empty());
    let mut other = old.clone();
    other.run_id = "run-2".into();
    assert!(old.delta(&other).is_none(), "another run is a rewrite");
}

#[test]
fn a_long_run_keeps_a_ledger_the_size_of_what_is_live() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(LEDGER_FILE);
    let mut ledger = Ledger::new("run-1", format!("777 12345 {BOOT}").parse().unwrap()).unwrap();
    let mut log = LedgerLog::create(&path, &ledger).unwrap();
    let mut largest = 0;
    for i in 0..5000 {
        let eval = format!("t{i:05}");
        let ws = PathBuf::from(format!("/tmp/ws/hyoka-run-1-{eval}-abcdef"));
        ledger.set_workspace(&eval, &ws).unwrap();
        log.write(&ledger).unwrap();
        ledger.entries.push(entry(10_000 + i, &eval));
        log.write(&ledger).unwrap();
        ledger.entries.clear();
        log.write(&ledger).unwrap();
        ledger.workspaces.clear();
        log.write(&ledger).unwrap();
        largest = largest.max(std::fs::metadata(&path).unwrap().len());
    }
    assert!(largest <= 2 * COMPACT_MIN_BYTES, "{largest} bytes");
    let parsed = Ledger::read(&path, SELF_PID).unwrap();
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    assert_eq!(said(&parsed.ledger), said(&ledger));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        [std::ffi::OsString::from(LEDGER_FILE)],
        "no temporary file left"
    );
}

#[test]
fn a_later_record_replaces_and_a_dropped_one_is_gone() {
    let text = "# hyoka-pids v1\n# run r\n9\t1\t9\tmain\ta\n10\t1\t10\tmain\tb\n9\t1\t9\tmain\tc\n\
                # -process 10 1\n# -process 11 1\n# workspace e /w/1\n# -workspace e /w/2\n\
                # workspace f /w/3\n# -workspace f /w/3\n# -process x\n";
    let parsed = Ledger::parse(text.as_bytes(), SELF_PID);
    let got: Vec<(i32, &str)> = parsed
        .ledger
        .entries
        .iter()
        .map(|e| (e.pid, e.comm.as_str()))
        .collect();
    assert_eq!(got, [(9, "c")]);
    let ws: Vec<&str> = parsed
        .ledger
        .workspaces
        .iter()
        .map(|w| w.eval_id.as_str())
        .collect();
    assert_eq!(ws, ["e"], "a drop of another path leaves the record");
    let lines: Vec<usize> = parsed.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, [12], "{:?}", parsed.problems);
}
