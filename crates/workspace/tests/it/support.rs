//! Shared helpers: a scratch root, workspace options, and tree inspection.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use hyoka_workspace::{KeepPolicy, RunId, TempWorkspace, WorkspaceOptions};

/// A scratch directory that plays the workspace root (removed by `tempfile` at the end).
pub(crate) fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("ws-test-")
        .tempdir()
        .expect("scratch dir")
}

pub(crate) fn options(root: &Path, run: &str) -> WorkspaceOptions {
    WorkspaceOptions {
        root: root.to_owned(),
        run_id: RunId::new(run).unwrap(),
        eval_id: None,
        keep: KeepPolicy::Never,
        starter: None,
        inject: Vec::new(),
        instance: Some("0123456789abcdef".to_owned()),
        owner: Some(hyoka_workspace::MarkerOwner::pid(4242)),
    }
}

pub(crate) fn create(root: &Path, run: &str) -> TempWorkspace {
    TempWorkspace::create(&options(root, run)).expect("create workspace")
}

/// Every entry directly inside `dir`, sorted.
pub(crate) fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Makes a tree writable again so the scratch root can always be cleaned up.
pub(crate) fn make_writable(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
        if let Ok(read) = std::fs::read_dir(path) {
            for entry in read.flatten() {
                make_writable(&entry.path());
            }
        }
    }
}

/// An outside directory holding a sentinel file that must survive.
pub(crate) struct Sentinel {
    pub(crate) dir: PathBuf,
    pub(crate) file: PathBuf,
}

pub(crate) fn sentinel(root: &Path) -> Sentinel {
    let dir = root.join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("precious.txt");
    std::fs::write(&file, b"do not delete").unwrap();
    Sentinel { dir, file }
}

impl Sentinel {
    #[track_caller]
    pub(crate) fn assert_intact(&self) {
        assert_eq!(
            std::fs::read(&self.file).expect("sentinel survives"),
            b"do not delete"
        );
    }
}
