//! The hook socket's private directory: for a tracked session a marked directory of the
//! run, recorded in the ledger before it exists; for a named tmux session a fixed path, so a
//! re-attached agent still finds the next controller.

use std::path::{Path, PathBuf};

use hyoka_proctrack::Tracker;
use hyoka_workspace::{EvalId, KeepPolicy, MarkerOwner, RunId, TempWorkspace, WorkspaceOptions};

use crate::error::RespawnError;
use crate::hook::HookListener;

/// The private directory of the hook socket, removed at the end. For a named tmux session
/// its path is fixed, so that a re-attached agent's `HYOKA_RESPAWN_SOCKET` still points
/// at the controller.
pub(super) struct SocketDir(PathBuf);

impl SocketDir {
    /// Creates the directory and binds the hook socket in it.
    pub(super) async fn bind(
        temp_dir: &Path,
        session: Option<&str>,
        run_id: &str,
        tracker: Option<&Tracker>,
    ) -> Result<(Self, HookListener), RespawnError> {
        let dir = Self::create(temp_dir, session, run_id, tracker)?;
        let listener = HookListener::bind(&dir.0.join("hook.sock")).await?;
        Ok((dir, listener))
    }

    /// Removes the socket directory of the tmux session `session` once it is over: a real
    /// directory (not a link) of this user's, holding only the socket, which nobody listens on.
    pub(super) fn forget(temp_dir: &Path, session: &str) {
        use std::os::unix::fs::MetadataExt as _;
        if session.is_empty() || session.contains('/') || session.starts_with('.') {
            return;
        }
        let dir = temp_dir.join(format!("hyoka-respawn-{session}"));
        let ours = std::fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == rustix::process::geteuid().as_raw());
        if ours && Self::abandoned(&dir) {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// Removes the socket directories of the unnamed tmux session of the dead controller
    /// `run_id` (`hyoka-<run_id>-sock-…`): real directories of this user's, holding only the
    /// socket, which nobody listens on.
    pub(super) fn forget_run(temp_dir: &Path, run_id: &str) {
        use std::os::unix::fs::MetadataExt as _;
        if RunId::new(run_id).is_err() {
            return;
        }
        let prefix = format!("hyoka-{run_id}-sock-");
        let Ok(entries) = std::fs::read_dir(temp_dir) else {
            return;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            let ours = entry.file_name().to_string_lossy().starts_with(&prefix)
                && std::fs::symlink_metadata(&dir)
                    .is_ok_and(|m| m.is_dir() && m.uid() == rustix::process::geteuid().as_raw());
            if ours && Self::abandoned(&dir) {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }

    /// Whether nobody listens on the directory's socket and it holds nothing else.
    fn abandoned(dir: &Path) -> bool {
        let listened = std::os::unix::net::UnixStream::connect(dir.join("hook.sock")).is_ok();
        let only_socket = std::fs::read_dir(dir)
            .is_ok_and(|mut d| d.all(|e| e.is_ok_and(|e| e.file_name() == "hook.sock")));
        !listened && only_socket
    }

    /// Removes the socket directories of controllers that died without cleaning up (a
    /// SIGKILL): nobody listens on their socket and they are older than a minute.
    fn sweep_stale(temp_dir: &Path) {
        let Ok(entries) = std::fs::read_dir(temp_dir) else {
            return;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            let name = entry.file_name();
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 60));
            if !name.to_string_lossy().starts_with("hyoka-respawn-")
                || !entry.file_type().is_ok_and(|t| t.is_dir())
                || !old
            {
                continue;
            }
            if Self::abandoned(&dir) {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }

    /// The directory of a session: for a tracked (PTY) session, marked like a workspace of
    /// the run instance and recorded in the ledger before it exists, so `clean` removes it
    /// if the controller is SIGKILLed; else a private directory named as below.
    fn create(
        temp_dir: &Path,
        session: Option<&str>,
        run_id: &str,
        tracker: Option<&Tracker>,
    ) -> Result<Self, RespawnError> {
        Self::sweep_stale(temp_dir);
        if let (None, Some(tracker)) = (session, tracker) {
            return Self::create_recorded(temp_dir, run_id, tracker).map(Self);
        }
        let fail = |path: &Path| {
            let path = path.to_owned();
            move |source| RespawnError::Socket { path, source }
        };
        let dir = match session {
            Some(session) => {
                let dir = temp_dir.join(format!("hyoka-respawn-{session}"));
                match std::fs::create_dir(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(fail(&dir)(e)),
                }
                let private =
                    <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700);
                std::fs::set_permissions(&dir, private).map_err(fail(&dir))?;
                dir
            }
            // `hyoka-<run_id>-…`: the name `hyoka clean` accepts for a run's directories.
            None => tempfile::Builder::new()
                .prefix(&format!("hyoka-{run_id}-sock-"))
                .tempdir_in(temp_dir)
                .map_err(fail(temp_dir))?
                .keep(),
        };
        Ok(Self(dir))
    }
}

impl SocketDir {
    /// The directory.
    pub(super) fn path(&self) -> &Path {
        &self.0
    }

    fn create_recorded(
        temp_dir: &Path,
        run_id: &str,
        tracker: &Tracker,
    ) -> Result<PathBuf, RespawnError> {
        let fail = |source| RespawnError::SocketDir { source };
        let options = WorkspaceOptions {
            root: temp_dir.to_owned(),
            run_id: RunId::new(run_id).map_err(fail)?,
            eval_id: Some(EvalId::new(SOCKET_EVAL).map_err(fail)?),
            keep: KeepPolicy::Never,
            starter: None,
            inject: Vec::new(),
            instance: Some(tracker.instance().to_string()),
            owner: Some(MarkerOwner::pid(tracker.owner().pid())),
        };
        // Detached, not kept: the session removes it, and `hyoka clean` after a crash.
        TempWorkspace::create_recorded(&options, |path| tracker.record_workspace(SOCKET_EVAL, path))
            .map(TempWorkspace::detach)
            .map_err(fail)
    }
}

/// The ledger id of the hook socket directory (a workspace of the session's run).
const SOCKET_EVAL: &str = "session.sock";

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
