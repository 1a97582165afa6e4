//! Tests of `clean` decisions against `FakeSystem`: what is killed, skipped and reported.
#![allow(
    clippy::disallowed_methods,
    reason = "tests start the fake clock at an arbitrary real instant"
)]

use std::fmt::Write as _;

use std::time::Instant;

use super::*;
use crate::fake::{FAKE_BOOT_ID, FakeClock, FakeSystem};
use crate::{LEDGER_FILE, LOCK_FILE, OwnerLock};

/// The instance of the run the tests' ledgers describe.
const TOKEN: &str = "00112233445566ff";

struct Run {
    _dir: tempfile::TempDir,
    run_dir: PathBuf,
}

/// An abandoned run `r1` whose ledger (owned in `boot`) lists `entries`.
fn run(boot: &str, entries: &[(ProcRefLike, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("r1");
    std::fs::create_dir(&run_dir).unwrap();
    std::fs::write(run_dir.join(LOCK_FILE), b"").unwrap();
    let mut text = format!(
        "# hyoka-pids v1\n# run r1\n# owner 50 1 {boot}\n# instance {TOKEN}\n# workspace main /tmp/ws\n"
    );
    for ((pid, ticks, pgid), eval) in entries {
        let _ = writeln!(text, "{pid}\t{ticks}\t{pgid}\t{eval}\tx");
    }
    std::fs::write(run_dir.join(LEDGER_FILE), text).unwrap();
    Run { _dir: dir, run_dir }
}

type ProcRefLike = (i32, u64, i32);

fn entry(r: crate::ProcRef, pgid: i32) -> ProcRefLike {
    (r.pid, r.start_ticks, pgid)
}

#[track_caller]
fn check(fake: &FakeSystem, run: &Run, dry_run: bool) -> CleanReport {
    let options = CleanOptions {
        dry_run,
        ..CleanOptions::default()
    };
    let clock = FakeClock::new(Instant::now());
    clean_run_with(
        &run.run_dir,
        &options,
        fake,
        fake,
        &clock,
        &CgroupMounts::default(),
    )
    .unwrap()
}

#[test]
fn kills_matching_identities_and_skips_strangers() {
    let fake = FakeSystem::new();
    let ours = fake.spawn(100, true, "ours", None);
    let stranger = fake.spawn(1, true, "stranger", None);
    let gone = crate::ProcRef {
        pid: 7777,
        start_ticks: 3,
    };
    let run = run(
        FAKE_BOOT_ID,
        &[
            (entry(ours, ours.pid), "main"),
            (
                (stranger.pid, stranger.start_ticks + 1, stranger.pid),
                "main",
            ),
            (entry(gone, gone.pid), "main"),
        ],
    );
    let report = check(&fake, &run, false);
    assert_eq!(report.state, LockState::Abandoned);
    assert_eq!(report.found.len(), 1);
    assert_eq!(report.found[0].outcome, Some(ProcessFate::Terminated));
    let reasons: Vec<SkipReason> = report.skipped.iter().map(|s| s.reason).collect();
    assert_eq!(reasons, [SkipReason::IdentityMismatch, SkipReason::Gone]);
    assert_eq!(fake.alive(), [stranger]);
    assert!(report.marked_cleaned && report.is_clean());
    assert_eq!(report.workspaces[0].path, Path::new("/tmp/ws"));
    let parsed = Ledger::read(&run.run_dir.join(LEDGER_FILE), 1).unwrap();
    assert!(parsed.ledger.cleaned.is_some() && parsed.ledger.entries.is_empty());
}

#[test]
fn the_instance_marker_finds_processes_missing_from_the_ledger() {
    let fake = FakeSystem::new();
    let escapee = fake.spawn(
        1,
        true,
        "escapee",
        Some(&[("HYOKA_RUN_ID", "r1"), ("HYOKA_RUN_INSTANCE", TOKEN)]),
    );
    // Another run with the same run id (another reports directory), and a user's shell
    // that exported the run id: neither carries this run's instance.
    let same_id = fake.spawn(
        1,
        true,
        "same-id",
        Some(&[
            ("HYOKA_RUN_ID", "r1"),
            ("HYOKA_RUN_INSTANCE", "ffeeddccbbaa9988"),
        ]),
    );
    let shell = fake.spawn(1, true, "shell", Some(&[("HYOKA_RUN_ID", "r1")]));
    let run = run(FAKE_BOOT_ID, &[]);
    let report = check(&fake, &run, false);
    assert_eq!(report.found.len(), 1, "{report:#?}");
    assert_eq!(report.found[0].pid, escapee.pid);
    assert_eq!(fake.alive(), [same_id, shell]);
}

#[test]
fn a_ledger_without_an_instance_gets_no_marker_scan() {
    let fake = FakeSystem::new();
    let shell = fake.spawn(1, true, "shell", Some(&[("HYOKA_RUN_ID", "r1")]));
    let run = run(FAKE_BOOT_ID, &[]);
    let ledger = run.run_dir.join(LEDGER_FILE);
    let text = std::fs::read_to_string(&ledger).unwrap();
    std::fs::write(&ledger, text.replace(&format!("# instance {TOKEN}\n"), "")).unwrap();
    let report = check(&fake, &run, false);
    assert!(report.found.is_empty(), "{report:#?}");
    assert_eq!(fake.alive(), [shell]);
}

#[test]
fn processes_older_than_the_run_are_never_its_own() {
    let fake = FakeSystem::new();
    // Started before the owner (start ticks 1 in the ledger header is the boot; here the
    // owner starts after the process).
    let old = fake.spawn(100, true, "old", None);
    let run = run(FAKE_BOOT_ID, &[(entry(old, old.pid), "main")]);
    let ledger = run.run_dir.join(LEDGER_FILE);
    let text = std::fs::read_to_string(&ledger).unwrap();
    let later = old.start_ticks + 1;
    std::fs::write(
        &ledger,
        text.replace("# owner 50 1 ", &format!("# owner 50 {later} ")),
    )
    .unwrap();
    let report = check(&fake, &run, false);
    assert_eq!(report.skipped[0].reason, SkipReason::BeforeRun);
    assert!(report.found.is_empty() && fake.calls().is_empty());
}

#[test]
fn another_boot_means_nothing_is_signalled() {
    let fake = FakeSystem::new();
    let p = fake.spawn(100, true, "same-pid-other-boot", None);
    let run = run(
        "11111111-2222-4333-8444-555555555555",
        &[(entry(p, p.pid), "main")],
    );
    let report = check(&fake, &run, false);
    assert_eq!(report.skipped[0].reason, SkipReason::OtherBoot);
    assert!(report.found.is_empty() && fake.calls().is_empty());
    assert!(report.marked_cleaned);
}

#[test]
fn dry_run_signals_and_writes_nothing() {
    let fake = FakeSystem::new();
    let p = fake.spawn(100, true, "ours", None);
    let run = run(FAKE_BOOT_ID, &[(entry(p, p.pid), "main")]);
    let before = std::fs::read(run.run_dir.join(LEDGER_FILE)).unwrap();
    let report = check(&fake, &run, true);
    assert_eq!(report.found.len(), 1);
    assert_eq!(report.found[0].outcome, None);
    assert!(!report.is_clean() && !report.marked_cleaned);
    assert!(fake.calls().is_empty());
    assert_eq!(
        std::fs::read(run.run_dir.join(LEDGER_FILE)).unwrap(),
        before
    );
}

#[test]
fn live_and_lockless_runs_are_not_touched() {
    let fake = FakeSystem::new();
    let p = fake.spawn(100, true, "ours", None);
    let run = run(FAKE_BOOT_ID, &[(entry(p, p.pid), "main")]);
    let held = OwnerLock::acquire(&run.run_dir.join(LOCK_FILE)).unwrap();
    let report = check(&fake, &run, false);
    assert_eq!(report.state, LockState::Live);
    assert!(report.found.is_empty() && fake.calls().is_empty() && report.is_clean());
    drop(held);
    std::fs::remove_file(run.run_dir.join(LOCK_FILE)).unwrap();
    let report = check(&fake, &run, false);
    assert_eq!(report.state, LockState::Missing);
    assert!(fake.calls().is_empty());
}

#[test]
fn a_ledger_of_another_run_is_not_acted_on() {
    let fake = FakeSystem::new();
    let p = fake.spawn(100, true, "ours", None);
    let run = run(FAKE_BOOT_ID, &[(entry(p, p.pid), "main")]);
    let path = run.run_dir.join(LEDGER_FILE);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("# run r1", "# run r2");
    std::fs::write(&path, text).unwrap();
    let report = check(&fake, &run, false);
    assert_eq!(report.problems.len(), 1);
    assert!(report.found.is_empty() && fake.calls().is_empty());
}
