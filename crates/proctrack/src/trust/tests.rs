//! Tests of the evidence checks on real files: links, special files, loose modes, sizes.
#![allow(clippy::print_stderr, reason = "tests say on stderr why they skip")]

use std::os::unix::fs::PermissionsExt as _;

use rustix::fs::FileType;

use super::*;

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A run directory `r1` with a lock file and `ledger` as `pids.txt`.
fn run_dir(ledger: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("r1");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(run.join(LOCK_FILE), b"").unwrap();
    std::fs::write(run.join(LEDGER_FILE), ledger).unwrap();
    (dir, run)
}

/// Opens `run` and reads its ledger; the refusal's reason, if refused.
#[track_caller]
fn check(run: &Path) -> Result<(), String> {
    let read = RunDir::open(run).and_then(|dir| {
        dir.probe()?;
        dir.read_ledger(1).map(drop)
    });
    match read {
        Ok(()) => Ok(()),
        Err(ProcTrackError::Untrusted { reason, .. }) => Err(reason),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

const LEDGER: &[u8] = b"# hyoka-pids v1\n# run r1\n";

#[test]
fn a_plain_run_directory_is_evidence() {
    let (_dir, run) = run_dir(LEDGER);
    assert_eq!(check(&run), Ok(()));
}

#[test]
fn links_are_refused_wherever_they_are() {
    let (dir, run) = run_dir(LEDGER);
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "TOP SECRET\n").unwrap();
    std::fs::remove_file(run.join(LEDGER_FILE)).unwrap();
    std::os::unix::fs::symlink(&secret, run.join(LEDGER_FILE)).unwrap();
    assert_eq!(check(&run), Err("is a symbolic link".to_owned()));

    let (dir, run) = run_dir(LEDGER);
    std::fs::remove_file(run.join(LOCK_FILE)).unwrap();
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), run.join(LOCK_FILE)).unwrap();
    assert_eq!(check(&run), Err("is a symbolic link".to_owned()));

    let (dir, run) = run_dir(LEDGER);
    let link = dir.path().join("r2");
    std::os::unix::fs::symlink(&run, &link).unwrap();
    assert!(check(&link).unwrap_err().contains("symbolic link"));
}

#[test]
fn special_files_are_refused_without_blocking() {
    let (_dir, run) = run_dir(LEDGER);
    std::fs::remove_file(run.join(LEDGER_FILE)).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        run.join(LEDGER_FILE),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    assert_eq!(check(&run), Err("is not a regular file".to_owned()));
}

#[test]
fn files_others_may_write_are_refused() {
    for (name, mode) in [(LEDGER_FILE, 0o664), (LOCK_FILE, 0o646), ("", 0o775)] {
        let (_dir, run) = run_dir(LEDGER);
        let path = if name.is_empty() {
            run.clone()
        } else {
            run.join(name)
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let reason = check(&run).unwrap_err();
        assert!(reason.contains("writable by others"), "{name}: {reason}");
    }
}

#[test]
fn a_ledger_larger_than_any_hyoka_writes_is_refused() {
    let (_dir, run) = run_dir(LEDGER);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(run.join(LEDGER_FILE))
        .unwrap();
    // Sparse: costs no disk, and must cost no memory either.
    file.set_len(crate::MAX_LEDGER_BYTES + 1).unwrap();
    let reason = check(&run).unwrap_err();
    assert!(reason.contains("more than"), "{reason}");
}

#[test]
fn a_file_of_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipping a_file_of_another_user_is_refused: it needs root to chown");
        return;
    }
    let (_dir, run) = run_dir(LEDGER);
    std::os::unix::fs::chown(run.join(LEDGER_FILE), Some(NOBODY), None).unwrap();
    let reason = check(&run).unwrap_err();
    assert!(reason.contains("belongs to user 65534"), "{reason}");
}

#[test]
fn reports_files_are_read_with_the_same_care() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    std::fs::write(&file, b"{}").unwrap();
    assert_eq!(read_reports_file(&file, 16).unwrap(), b"{}");
    assert!(matches!(
        read_reports_file(&file, 1),
        Err(ProcTrackError::Untrusted { .. })
    ));
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    assert!(matches!(
        read_reports_file(&link, 16),
        Err(ProcTrackError::Untrusted { .. })
    ));
    assert!(matches!(
        read_reports_file(Path::new("/dev/zero"), 16),
        Err(ProcTrackError::Untrusted { .. })
    ));
}

#[track_caller]
fn refused(path: &Path, usage: ReportsUse) -> String {
    match check_reports_dir(path, usage) {
        Err(ProcTrackError::ReportsDir { reason, .. }) => reason,
        other => panic!("{path:?}: {other:?}"),
    }
}

#[test]
fn reports_directories_are_checked_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("a/b");
    assert!(check_reports_dir(&missing, ReportsUse::Write).is_ok());
    assert_eq!(refused(&missing, ReportsUse::Read), "does not exist");
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    assert_eq!(refused(&file, ReportsUse::Read), "is not a directory");
    assert!(refused(&file.join("sub"), ReportsUse::Write).contains("not a directory"));
    assert!(refused(Path::new("/proc"), ReportsUse::Write).contains("kernel file system"));
    assert!(refused(Path::new("/proc/self/x"), ReportsUse::Write).contains("kernel"));
    assert!(check_reports_dir(dir.path(), ReportsUse::Read).is_ok());
}

#[test]
fn acting_for_a_user_takes_that_users_power_on_one_thread_only() {
    if !is_root() {
        eprintln!("skipping acting_for_a_user_…: it needs root to switch users");
        return;
    }
    let nobody = Authority {
        uid: NOBODY,
        gid: NOBODY,
    };
    let (uid, gid) = nobody
        .run(|| {
            (
                rustix::process::geteuid().as_raw(),
                rustix::process::getegid().as_raw(),
            )
        })
        .unwrap();
    assert_eq!((uid, gid), (NOBODY, NOBODY));
    // The rest of the process is still root.
    assert!(rustix::process::geteuid().is_root());
    // And the kernel holds the thread to nobody's power: it cannot write root's directory.
    let dir = tempfile::tempdir().unwrap();
    let denied = nobody
        .run(|| std::fs::write(dir.path().join("x"), "").is_err())
        .unwrap();
    assert!(denied);
}
