//! The registry against real directories, sockets and locks, including forged entries.
#![allow(
    clippy::disallowed_methods,
    reason = "tests need an origin for virtual time"
)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

use super::{ControlServer, Registry, SessionInfo};
use crate::driver::{Control, LiveStatus};
use crate::error::RespawnError;
use crate::event::{Refusal, SendOutcome};
use crate::machine::Machine;

fn scratch() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("registry-test-")
        .tempdir()
        .unwrap();
    let reg = dir.path().join("reg");
    (dir, reg)
}

#[track_caller]
fn check_refused(dir: &Path, why: &str) {
    match Registry::open(dir) {
        Err(RespawnError::Registry { reason, .. }) => {
            assert!(reason.contains(why), "{reason}");
        }
        other => panic!("{dir:?} was accepted: {other:?}"),
    }
}

#[test]
fn the_directory_is_created_private_and_checked() {
    let (scratch, reg) = scratch();
    let registry = Registry::open(&reg).unwrap();
    let mode = std::fs::metadata(registry.dir())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    // Open to others: refused, and left as it is.
    let open = scratch.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    check_refused(&open, "lets others in");
    // A link to a private directory: refused.
    let link = scratch.path().join("link");
    std::os::unix::fs::symlink(&reg, &link).unwrap();
    check_refused(&link, "not a directory");
    // A file: refused.
    let file = scratch.path().join("file");
    std::fs::write(&file, "").unwrap();
    check_refused(&file, "not a directory");
}

#[test]
fn a_name_is_held_while_registered_and_gone_after() {
    let (_scratch, reg) = scratch();
    let registry = Registry::open(&reg).unwrap();
    let registration = registry.register("alpha").unwrap();
    assert_eq!(registry.names(), ["alpha"]);
    assert!(matches!(
        registry.register("alpha"),
        Err(RespawnError::SessionTaken { .. })
    ));
    assert!(matches!(
        registry.register("../x"),
        Err(RespawnError::SessionName { .. })
    ));
    drop(registration);
    assert!(registry.names().is_empty());
    assert!(
        std::fs::read_dir(&reg).unwrap().next().is_none(),
        "entry left"
    );
    // Free again.
    drop(registry.register("alpha").unwrap());
}

/// An entry as a controller SIGKILLed mid-run leaves it: the lock nobody holds, the socket
/// nobody listens on.
fn stale_entry(reg: &Path, name: &str) {
    let entry = reg.join(name);
    std::fs::create_dir(&entry).unwrap();
    std::fs::write(entry.join("lock"), "").unwrap();
    drop(std::os::unix::net::UnixListener::bind(entry.join("sock")).unwrap());
}

#[test]
fn stale_entries_are_swept() {
    let (_scratch, reg) = scratch();
    let registry = Registry::open(&reg).unwrap();
    stale_entry(&reg, "dead");
    assert!(registry.names().is_empty());
    assert!(!reg.join("dead").exists());
    // A stale entry holding something else: its lock and socket go, the rest stays.
    stale_entry(&reg, "odd");
    std::fs::write(reg.join("odd/notes"), "mine").unwrap();
    assert!(registry.names().is_empty());
    assert_eq!(
        std::fs::read_to_string(reg.join("odd/notes")).unwrap(),
        "mine"
    );
    assert!(!reg.join("odd/lock").exists() && !reg.join("odd/sock").exists());
    // The name can be registered again over a stale entry.
    stale_entry(&reg, "again");
    drop(registry.register("again").unwrap());
}

#[test]
fn forged_entries_are_never_followed_or_removed() {
    let (scratch, reg) = scratch();
    let registry = Registry::open(&reg).unwrap();
    // A link named like a session, to a directory that looks like a stale entry.
    let elsewhere = scratch.path().join("elsewhere");
    stale_entry(scratch.path(), "elsewhere");
    std::os::unix::fs::symlink(&elsewhere, reg.join("linked")).unwrap();
    // A lock that is a FIFO (opening it for reading would block) and one that is a link.
    std::fs::create_dir(reg.join("fifo")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        reg.join("fifo/lock"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    std::fs::create_dir(reg.join("lnk")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("lock"), reg.join("lnk/lock")).unwrap();
    // A name outside the grammar.
    stale_entry(&reg, "bad.name");
    assert!(registry.names().is_empty());
    for kept in [
        elsewhere.join("lock"),
        elsewhere.join("sock"),
        reg.join("linked"),
        reg.join("fifo/lock"),
        reg.join("lnk/lock"),
        reg.join("bad.name/lock"),
    ] {
        assert!(
            std::fs::symlink_metadata(&kept).is_ok(),
            "{kept:?} was removed"
        );
    }
    // A name cannot be registered over an entry that is not a directory of ours.
    assert!(matches!(
        registry.register("linked"),
        Err(RespawnError::Registry { .. })
    ));
}

fn info(name: &str) -> Arc<SessionInfo> {
    Arc::new(SessionInfo {
        name: name.to_owned(),
        agent: "claude".to_owned(),
        profile: "claude-code".to_owned(),
        tmux: None,
        started_wall: SystemTime::UNIX_EPOCH + std::time::Duration::from_hours(500_000),
        started: Instant::now(),
    })
}

/// A controller whose driver answers every status with a fresh machine's and every send
/// with `outcome`.
fn serve(registration: &mut super::Registration, info: Arc<SessionInfo>, outcome: SendOutcome) {
    let (tx, mut rx) = mpsc::channel(4);
    let server = ControlServer {
        listener: registration.take_listener().unwrap(),
        info,
        driver: tx,
    };
    tokio::spawn(server.serve(std::future::pending()));
    tokio::spawn(async move {
        while let Some(request) = rx.recv().await {
            match request {
                Control::Status(reply) => {
                    let mut machine = Machine::new(crate::RespawnConfig::default());
                    let _ = reply.send(LiveStatus {
                        verdict: hyoka_idle_detect::Verdict::default(),
                        state_for: std::time::Duration::from_secs(3),
                        machine: machine.status(Instant::now()),
                        human_present: false,
                        attached: 0,
                        last_event: Some("watching the session".to_owned()),
                    });
                }
                Control::Send { reply, .. } => {
                    let _ = reply.send(outcome);
                }
                Control::Stop => {}
            }
        }
    });
}

#[tokio::test]
async fn a_live_session_answers_and_an_impostor_does_not() {
    let (_scratch, reg) = scratch();
    let registry = Registry::open(&reg).unwrap();
    let mut alpha = registry.register("alpha").unwrap();
    serve(
        &mut alpha,
        info("alpha"),
        SendOutcome::Refused(Refusal::Working),
    );
    let status = registry.status("alpha").await.unwrap();
    assert_eq!(status.name, "alpha");
    assert_eq!(status.agent, "claude");
    assert_eq!(status.state_for_ms, 3_000);
    assert_eq!(
        registry.send("alpha", "hi", false).await.unwrap(),
        SendOutcome::Refused(Refusal::Working)
    );
    let listed = registry.list().await;
    assert_eq!(listed.len(), 1);
    assert!(listed[0].status.is_ok());
    // A controller that answers for another name is not believed.
    let mut beta = registry.register("beta").unwrap();
    serve(&mut beta, info("gamma"), SendOutcome::Delivered);
    assert!(matches!(
        registry.status("beta").await,
        Err(RespawnError::Control { .. })
    ));
    assert!(matches!(
        registry.status("nobody").await,
        Err(RespawnError::UnknownSession { .. })
    ));
}
