//! Tests of the owner lock: exclusive, probed without side effects, released on drop.

use super::*;

#[track_caller]
fn check(path: &Path, expected: LockState) {
    assert_eq!(OwnerLock::probe(path).unwrap(), expected);
}

#[test]
fn exclusive_while_held_and_free_after_drop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(LOCK_FILE);
    check(&path, LockState::Missing);
    assert!(!path.exists(), "probing must not create the file");
    let lock = OwnerLock::acquire(&path).unwrap();
    check(&path, LockState::Live);
    assert!(matches!(
        OwnerLock::acquire(&path),
        Err(ProcTrackError::RunLive { .. })
    ));
    assert!(matches!(
        OwnerLock::acquire_existing(&path),
        Err(ProcTrackError::RunLive { .. })
    ));
    drop(lock);
    check(&path, LockState::Abandoned);
    let again = OwnerLock::acquire_existing(&path).unwrap();
    assert!(again.is_some());
}

#[test]
fn acquire_existing_never_creates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(LOCK_FILE);
    assert!(OwnerLock::acquire_existing(&path).unwrap().is_none());
    assert!(!path.exists());
}

#[test]
fn the_descriptor_is_close_on_exec() {
    let dir = tempfile::tempdir().unwrap();
    let lock = OwnerLock::acquire(&dir.path().join(LOCK_FILE)).unwrap();
    let flags = rustix::io::fcntl_getfd(&lock.file).unwrap();
    assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
}
