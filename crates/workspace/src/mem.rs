//! `MemWorkspace`: an in-memory [`Workspace`] for tests (the seed's stub workspace).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::rel::{join, normalize};
use crate::workspace::{Entry, EntryKind, Workspace};
use crate::{Usage, WorkspaceError};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File(Vec<u8>),
    Dir,
}

/// An in-memory workspace with the same path rules as the real one (no links exist, so no
/// escapes either). Files given to [`MemWorkspace::with_files`] play the starter: usage
/// counts what differs from them.
#[derive(Debug)]
pub struct MemWorkspace {
    path: PathBuf,
    nodes: Mutex<BTreeMap<PathBuf, Node>>,
    starter: BTreeMap<PathBuf, Vec<u8>>,
}

impl Default for MemWorkspace {
    fn default() -> Self {
        Self::new()
    }
}

impl MemWorkspace {
    /// An empty workspace whose (virtual) path is `/mem/hyoka-workspace`.
    pub fn new() -> Self {
        Self {
            path: PathBuf::from("/mem/hyoka-workspace"),
            nodes: Mutex::new(BTreeMap::new()),
            starter: BTreeMap::new(),
        }
    }

    /// A workspace holding `files` as its starter contents.
    ///
    /// # Errors
    /// [`WorkspaceError::InvalidPath`] for a path the real workspace would refuse.
    pub fn with_files<P: AsRef<Path>>(
        files: impl IntoIterator<Item = (P, Vec<u8>)>,
    ) -> Result<Self, WorkspaceError> {
        let workspace = Self::new();
        for (path, contents) in files {
            workspace.write_file(path.as_ref(), &contents)?;
        }
        let starter = workspace
            .lock()
            .iter()
            .filter_map(|(path, node)| match node {
                Node::File(bytes) => Some((path.clone(), bytes.clone())),
                Node::Dir => None,
            })
            .collect();
        Ok(Self {
            starter,
            ..workspace
        })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<PathBuf, Node>> {
        // A panic while holding the lock cannot leave the map half-updated: every mutation
        // is a single insert or a retain.
        self.nodes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ensure_parents(
        nodes: &mut BTreeMap<PathBuf, Node>,
        path: &Path,
    ) -> Result<(), WorkspaceError> {
        let mut parent = PathBuf::new();
        let components: Vec<_> = path.components().collect();
        for component in &components[..components.len().saturating_sub(1)] {
            parent.push(component);
            match nodes.get(&parent) {
                Some(Node::Dir) => {}
                Some(Node::File(_)) => {
                    return Err(WorkspaceError::io(
                        "create",
                        parent,
                        std::io::Error::from(std::io::ErrorKind::NotADirectory),
                    ));
                }
                None => {
                    nodes.insert(parent.clone(), Node::Dir);
                }
            }
        }
        Ok(())
    }
}

impl Workspace for MemWorkspace {
    fn path(&self) -> &Path {
        &self.path
    }

    fn write_file(&self, rel: &Path, contents: &[u8]) -> Result<(), WorkspaceError> {
        let path = join(&normalize(rel)?);
        let mut nodes = self.lock();
        Self::ensure_parents(&mut nodes, &path)?;
        if nodes.get(&path) == Some(&Node::Dir) {
            return Err(WorkspaceError::io(
                "write",
                path,
                std::io::Error::from(std::io::ErrorKind::IsADirectory),
            ));
        }
        nodes.insert(path, Node::File(contents.to_vec()));
        Ok(())
    }

    fn read_file(&self, rel: &Path) -> Result<Vec<u8>, WorkspaceError> {
        let path = join(&normalize(rel)?);
        match self.lock().get(&path) {
            Some(Node::File(bytes)) => Ok(bytes.clone()),
            Some(Node::Dir) => Err(WorkspaceError::io(
                "read",
                path,
                std::io::Error::from(std::io::ErrorKind::IsADirectory),
            )),
            None => Err(WorkspaceError::NotFound { path }),
        }
    }

    fn create_dir(&self, rel: &Path) -> Result<(), WorkspaceError> {
        let path = join(&normalize(rel)?);
        let mut nodes = self.lock();
        Self::ensure_parents(&mut nodes, &path)?;
        match nodes.get(&path) {
            Some(Node::Dir) => Ok(()),
            Some(Node::File(_)) => Err(WorkspaceError::io(
                "create",
                path,
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            )),
            None => {
                nodes.insert(path, Node::Dir);
                Ok(())
            }
        }
    }

    fn remove(&self, rel: &Path) -> Result<(), WorkspaceError> {
        let path = join(&normalize(rel)?);
        let mut nodes = self.lock();
        if nodes.remove(&path).is_none() {
            return Err(WorkspaceError::NotFound { path });
        }
        nodes.retain(|p, _| !p.starts_with(&path));
        Ok(())
    }

    fn list(&self, rel: &Path) -> Result<Vec<Entry>, WorkspaceError> {
        let dir = match normalize(rel) {
            Ok(parts) => join(&parts),
            Err(WorkspaceError::InvalidPath {
                reason: "is empty", ..
            }) => PathBuf::new(),
            Err(err) => return Err(err),
        };
        let nodes = self.lock();
        if !dir.as_os_str().is_empty() && nodes.get(&dir) != Some(&Node::Dir) {
            return Err(WorkspaceError::NotFound { path: dir });
        }
        Ok(nodes
            .iter()
            .filter(|(path, _)| path.parent() == Some(dir.as_path()))
            .map(|(path, node)| Entry {
                name: path.file_name().map(OsString::from).unwrap_or_default(),
                kind: match node {
                    Node::File(_) => EntryKind::File,
                    Node::Dir => EntryKind::Dir,
                },
                len: match node {
                    Node::File(bytes) => bytes.len() as u64,
                    Node::Dir => 0,
                },
            })
            .collect())
    }

    fn usage(&self) -> Result<Usage, WorkspaceError> {
        let nodes = self.lock();
        let mut usage = Usage::default();
        let mut present = 0u64;
        for (path, node) in nodes.iter() {
            let Node::File(bytes) = node else { continue };
            match self.starter.get(path) {
                None => {
                    usage.created += 1;
                    usage.bytes += bytes.len() as u64;
                }
                Some(old) => {
                    present += 1;
                    if old != bytes {
                        usage.changed += 1;
                        usage.bytes += bytes.len() as u64;
                    }
                }
            }
        }
        usage.files = usage.created + usage.changed;
        usage.deleted = self.starter.len() as u64 - present;
        Ok(usage)
    }
}
