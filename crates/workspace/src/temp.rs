//! `TempWorkspace`: a real, marked, self-removing directory.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::copy::{CopyReport, copy_tree};
use crate::marker::{self, Marker, MarkerOwner};
use crate::rel::{self, map_errno, normalize, open_beneath, open_parent};
use crate::remove::{RemovalReport, remove_open_tree, remove_tree, remove_tree_at};
use crate::usage::{MARKER_FILE, Snapshot, Usage, scan};
use crate::workspace::{Entry, EntryKind, Workspace};
use crate::{EvalId, RunId, WorkspaceError};

/// When a workspace is kept instead of removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum KeepPolicy {
    /// Always remove it (the default).
    #[default]
    Never,
    /// Keep it when the run failed, for debugging.
    OnFailure,
    /// Always keep it.
    Always,
}

impl KeepPolicy {
    /// The policy's name as written on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::OnFailure => "on-failure",
            Self::Always => "always",
        }
    }

    fn keeps(self, outcome: RunVerdict) -> bool {
        match self {
            Self::Never => false,
            Self::OnFailure => outcome == RunVerdict::Failure,
            Self::Always => true,
        }
    }
}

impl FromStr for KeepPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "never" => Ok(Self::Never),
            "on-failure" => Ok(Self::OnFailure),
            "always" => Ok(Self::Always),
            other => Err(format!(
                "invalid keep policy {other:?}: expected never, on-failure or always"
            )),
        }
    }
}

/// How the run that used a workspace ended, for the [`KeepPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunVerdict {
    /// The run passed.
    Success,
    /// The run failed, errored or was interrupted.
    Failure,
}

/// What [`TempWorkspace::close`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Closed {
    /// The workspace was removed completely.
    Removed(RemovalReport),
    /// The workspace was kept at this path, per the keep policy.
    Kept(PathBuf),
}

/// One file or directory to inject into a new workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// The file or directory to copy (links inside a directory are handled as by
    /// [`copy_tree`]; a source that is itself a link is followed, as the caller chose it).
    pub source: PathBuf,
    /// Where it goes, relative to the workspace (contained like every relative path). For a
    /// directory, its contents land in this directory.
    pub target: PathBuf,
}

/// Everything needed to create a [`TempWorkspace`].
#[derive(Debug, Clone)]
pub struct WorkspaceOptions {
    /// The directory the workspace is created in (usually the system temp directory).
    pub root: PathBuf,
    /// The run this workspace belongs to.
    pub run_id: RunId,
    /// The eval, for suites; `None` gives `hyoka-<run_id>-XXXXXX`.
    pub eval_id: Option<EvalId>,
    /// When to keep the directory instead of removing it.
    pub keep: KeepPolicy,
    /// A directory whose contents are copied in first.
    pub starter: Option<PathBuf>,
    /// Files or directories injected after the starter (skills, instructions): each source is
    /// copied to its target, relative to the workspace, with the starter's link safety.
    /// Injected files are part of the baseline, not the agent's output.
    pub inject: Vec<Injection>,
    /// The run instance's token, recorded in the marker (see [`Marker::instance`]): `clean`
    /// removes a workspace its ledger lists only when the tokens match. Printable, no spaces;
    /// keep it short (see the marker's module docs).
    pub instance: Option<String>,
    /// The process that makes the workspace, recorded in the marker (see [`Marker::owner`]).
    pub owner: Option<MarkerOwner>,
}

/// The largest file [`TempWorkspace::create`] injects (256 MiB): skills and instructions are
/// small, and a mistaken `--file` must not fill the disk.
pub const MAX_INJECTED_FILE_BYTES: u64 = 256 << 20;

/// What an injection's source is, checked without opening it for reading.
enum Source {
    Dir,
    File { fd: OwnedFd, stat: rustix::fs::Stat },
}

/// Opens an injection's source with `O_PATH` (following a link, as the caller chose it, but
/// never opening a FIFO or a device for reading, so nothing blocks or has side effects) and
/// checks what it is.
fn inspect(source: &Path) -> Result<Source, WorkspaceError> {
    let fd = rustix::fs::open(source, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| WorkspaceError::io("open", source, e.into()))?;
    let stat =
        rustix::fs::fstat(&fd).map_err(|e| WorkspaceError::io("inspect", source, e.into()))?;
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => return Ok(Source::Dir),
        FileType::RegularFile => {
            let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
            if size > MAX_INJECTED_FILE_BYTES {
                return Err(WorkspaceError::TooLarge {
                    path: source.to_owned(),
                    size,
                    limit: MAX_INJECTED_FILE_BYTES,
                });
            }
            return Ok(Source::File { fd, stat });
        }
        FileType::Fifo => "FIFO",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Socket => "socket",
        FileType::Symlink | FileType::Unknown => "special file",
    };
    Err(WorkspaceError::UnsupportedFile {
        path: source.to_owned(),
        kind,
    })
}

/// Checks an injection before anything is created: its source must be a regular file of at
/// most [`MAX_INJECTED_FILE_BYTES`] or a directory (a FIFO is never opened, so this never
/// blocks), and its target a relative path inside the workspace.
///
/// # Errors
/// [`WorkspaceError::UnsupportedFile`], [`WorkspaceError::TooLarge`],
/// [`WorkspaceError::InvalidPath`] or [`WorkspaceError::Io`] (the source cannot be opened).
pub fn check_injection(injection: &Injection) -> Result<(), WorkspaceError> {
    normalize(&injection.target)?;
    inspect(&injection.source).map(drop)
}

/// A real workspace directory: `<root>/hyoka-<run_id>[-<eval_id>]-XXXXXX`, mode 0700,
/// marked as hyoka's, filled from the starter, and removed on [`close`](Self::close) or on
/// drop (also during a panic) unless the [`KeepPolicy`] says otherwise.
///
/// Dropping a workspace that was not closed counts as [`RunVerdict::Failure`]; errors during
/// that removal cannot be reported, so callers should always `close`.
#[derive(Debug)]
pub struct TempWorkspace {
    path: PathBuf,
    /// The workspace's directory, open until `close` hands it to the removal.
    dir: Option<OwnedFd>,
    keep: KeepPolicy,
    /// The marker as written at creation, rewritten with `kept` when the keep is decided.
    marker: Marker,
    snapshot: Snapshot,
    starter: Option<CopyReport>,
    closed: bool,
}

impl TempWorkspace {
    /// Creates, marks and fills a workspace. On any error nothing is left behind.
    ///
    /// # Errors
    /// [`WorkspaceError::RootNotDir`], [`WorkspaceError::StarterNotDir`], the errors of
    /// [`check_injection`], or [`WorkspaceError::Io`] naming what failed.
    pub fn create(options: &WorkspaceOptions) -> Result<Self, WorkspaceError> {
        Self::create_recorded(options, |_| Ok::<(), std::convert::Infallible>(()))
    }

    /// [`TempWorkspace::create`], calling `record` with the workspace's path *before* the
    /// directory exists (and again with a new path if that name was taken meanwhile), so
    /// the caller can write it where a crash repair will find it (`hyoka-proctrack`'s
    /// `Tracker::record_workspace`): an owner that dies while the workspace is being made
    /// or filled leaves nothing unrecorded. When `record` fails nothing is created.
    ///
    /// # Errors
    /// As [`TempWorkspace::create`], and [`WorkspaceError::Record`] when `record` fails.
    pub fn create_recorded<E>(
        options: &WorkspaceOptions,
        mut record: impl FnMut(&Path) -> Result<(), E>,
    ) -> Result<Self, WorkspaceError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        use std::os::unix::fs::DirBuilderExt as _;
        if let Some(starter) = &options.starter
            && !starter.is_dir()
        {
            return Err(WorkspaceError::StarterNotDir {
                path: starter.clone(),
            });
        }
        for injection in &options.inject {
            check_injection(injection)?;
        }
        let prefix = match &options.eval_id {
            Some(eval) => format!("hyoka-{}-{}-", options.run_id, eval),
            None => format!("hyoka-{}-", options.run_id),
        };
        let mut refused = None;
        let made = tempfile::Builder::new()
            .prefix(&prefix)
            .rand_bytes(6)
            .make_in(&options.root, |path| {
                if let Err(e) = record(path) {
                    refused = Some((path.to_owned(), e.into()));
                    return Err(std::io::Error::other("not recorded"));
                }
                std::fs::DirBuilder::new().mode(0o700).create(path)
            });
        let made = match (made, refused) {
            (_, Some((path, source))) => return Err(WorkspaceError::Record { path, source }),
            (Ok(made), None) => made,
            (Err(e), None) if options.root.is_dir() => {
                return Err(WorkspaceError::io("create workspace in", &options.root, e));
            }
            (Err(_), None) => {
                return Err(WorkspaceError::RootNotDir {
                    path: options.root.clone(),
                });
            }
        };
        // From here on hyoka removes the directory itself, safely (tempfile's own removal
        // would only try to unlink it as a file).
        let path = made
            .into_temp_path()
            .keep()
            .map_err(|e| WorkspaceError::io("keep", &options.root, e.error))?;
        match Self::prepare(path.clone(), options) {
            Ok(workspace) => Ok(workspace),
            Err(err) => {
                remove_tree(&path);
                Err(err)
            }
        }
    }

    fn prepare(path: PathBuf, options: &WorkspaceOptions) -> Result<Self, WorkspaceError> {
        let dir = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| WorkspaceError::io("open", &path, e.into()))?;
        let marker = Marker {
            run_id: options.run_id.to_string(),
            eval_id: options
                .eval_id
                .as_ref()
                .map_or_else(|| "main".to_owned(), ToString::to_string),
            instance: options.instance.clone(),
            owner: options.owner.clone(),
            // The directory's own birth time stands for it (`read_marker`).
            created_unix: 0,
            // `always` is decided now: the workspace is the user's whatever happens, even
            // if the run's owner dies and `clean` repairs the run.
            kept: options.keep == KeepPolicy::Always,
        };
        marker::write(&dir, &path, &marker)?;
        let mut starter = match &options.starter {
            Some(starter) => Some(copy_tree(starter, &path)?),
            None => None,
        };
        let mut workspace = Self {
            path,
            dir: Some(dir),
            keep: options.keep,
            marker,
            snapshot: Snapshot::default(),
            starter: None,
            closed: false,
        };
        for injection in &options.inject {
            let report = match workspace.inject(injection) {
                Ok(report) => report,
                Err(err) => {
                    // `create` removes the directory; this half-built value must not keep it.
                    workspace.closed = true;
                    return Err(err);
                }
            };
            let total = starter.get_or_insert_with(CopyReport::default);
            total.files += report.files;
            total.dirs += report.dirs;
            total.links += report.links;
            total.bytes += report.bytes;
            total.skipped.extend(report.skipped);
        }
        // A fresh directory without a starter is empty (the fallback marker file is never
        // counted), so its snapshot is known without walking it.
        if starter.is_some() {
            match Snapshot::take(&workspace.path) {
                Ok(snapshot) => workspace.snapshot = snapshot,
                Err(err) => {
                    workspace.closed = true;
                    return Err(err);
                }
            }
        }
        workspace.starter = starter;
        // Built by hand above so the failure path can still remove it; it is complete now.
        Ok(workspace)
    }

    /// Copies one injection into place: a directory with [`copy_tree`], a regular file in
    /// bounded chunks (never all in memory), up to [`MAX_INJECTED_FILE_BYTES`].
    fn inject(&self, injection: &Injection) -> Result<CopyReport, WorkspaceError> {
        let parts = normalize(&injection.target)?;
        let (fd, stat) = match inspect(&injection.source)? {
            Source::Dir => {
                // `create_dir` proves the target resolves inside (a link planted by the starter
                // is refused); nothing else runs in the workspace yet, so the path stays valid.
                self.create_dir(&injection.target)?;
                return copy_tree(&injection.source, &self.path.join(rel::join(&parts)));
            }
            Source::File { fd, stat } => (fd, stat),
        };
        let source = &injection.source;
        // Reopen the very file that was checked (not whatever the path names now), for
        // reading; O_NONBLOCK in case it is not the file it was after all.
        let reopened = rustix::fs::open(
            format!("/proc/self/fd/{}", fd.as_raw_fd()).as_str(),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| WorkspaceError::io("read", source, e.into()))?;
        let again = rustix::fs::fstat(&reopened)
            .map_err(|e| WorkspaceError::io("inspect", source, e.into()))?;
        if (again.st_dev, again.st_ino) != (stat.st_dev, stat.st_ino) {
            return Err(WorkspaceError::io(
                "read",
                source,
                std::io::Error::other("the file changed while it was opened"),
            ));
        }
        self.create_parents(&parts)?;
        let mut target = std::fs::File::from(
            open_beneath(
                self.fd(),
                &parts,
                OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC,
                Mode::from_raw_mode(0o644),
            )
            .map_err(|e| map_errno("inject", &parts, e))?,
        );
        let mut chunk = vec![0u8; 64 * 1024];
        let mut bytes: u64 = 0;
        loop {
            let n = match rustix::io::read(&reopened, &mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(WorkspaceError::io("read", source, e.into())),
            };
            bytes += n as u64;
            if bytes > MAX_INJECTED_FILE_BYTES {
                return Err(WorkspaceError::TooLarge {
                    path: source.clone(),
                    size: bytes,
                    limit: MAX_INJECTED_FILE_BYTES,
                });
            }
            std::io::Write::write_all(&mut target, &chunk[..n])
                .map_err(|e| WorkspaceError::io("inject", &injection.target, e))?;
        }
        rustix::fs::fchmod(&target, Mode::from_raw_mode(stat.st_mode & 0o7777))
            .map_err(|e| WorkspaceError::io("chmod", &injection.target, e.into()))?;
        Ok(CopyReport {
            files: 1,
            bytes,
            ..CopyReport::default()
        })
    }

    /// What the starter copy did, if there was a starter.
    pub fn starter_report(&self) -> Option<&CopyReport> {
        self.starter.as_ref()
    }

    /// The snapshot taken right after the starter copy.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Takes a new snapshot: what exists now is the baseline that [`Workspace::usage`]
    /// compares with (for example after helper services wrote their files).
    ///
    /// # Errors
    /// [`WorkspaceError::Io`] when the tree cannot be read.
    pub fn rebaseline(&mut self) -> Result<(), WorkspaceError> {
        self.snapshot = Snapshot::take(&self.path)?;
        Ok(())
    }

    /// The keep policy.
    pub fn keep_policy(&self) -> KeepPolicy {
        self.keep
    }

    /// Removes the workspace, or keeps it if the policy says so for `outcome`. A kept
    /// workspace carries the kept mark in its marker (see [`Marker::kept`]), so no sweep
    /// removes it unless asked to remove kept workspaces.
    ///
    /// # Errors
    /// [`WorkspaceError::RemoveIncomplete`] listing everything that could not be removed
    /// (for example a bind mount inside, or an immutable file); [`WorkspaceError::Io`] when a
    /// kept workspace cannot be marked as kept (it is then neither removed nor marked).
    pub fn close(mut self, outcome: RunVerdict) -> Result<Closed, WorkspaceError> {
        self.closed = true;
        if self.keep.keeps(outcome) {
            self.mark_kept()?;
            return Ok(Closed::Kept(self.path.clone()));
        }
        let report = match self.dir.take() {
            Some(dir) => remove_open_tree(dir, &self.path),
            None => remove_tree(&self.path),
        };
        if report.is_complete() {
            Ok(Closed::Removed(report))
        } else {
            Err(WorkspaceError::RemoveIncomplete {
                path: self.path.clone(),
                report,
            })
        }
    }

    /// Hands the directory over to the caller, as it is: it is neither removed nor marked
    /// as kept, so it stays what its marker says, a workspace of the run, which a crash
    /// repair (`hyoka clean`) removes once the run's owner is gone. For directories the
    /// caller removes itself (a respawn session's hook-socket directory).
    pub fn detach(mut self) -> PathBuf {
        self.closed = true;
        std::mem::take(&mut self.path)
    }

    /// Writes the kept mark, unless the marker carries it from creation.
    fn mark_kept(&mut self) -> Result<(), WorkspaceError> {
        if self.marker.kept {
            return Ok(());
        }
        self.marker.kept = true;
        match &self.dir {
            Some(dir) => marker::rewrite(dir, &self.path, &self.marker),
            None => Ok(()),
        }
    }

    /// The workspace's directory descriptor.
    fn fd(&self) -> BorrowedFd<'_> {
        self.dir
            .as_ref()
            .expect("the descriptor is only taken by close, which consumes the workspace")
            .as_fd()
    }

    fn create_parents(&self, parts: &[&OsStr]) -> Result<(), WorkspaceError> {
        for end in 1..parts.len() {
            let prefix = &parts[..end];
            match open_beneath(
                self.fd(),
                prefix,
                OFlags::PATH | OFlags::DIRECTORY,
                Mode::empty(),
            ) {
                Ok(_) => {}
                Err(Errno::NOENT) => self.mkdir(prefix)?,
                Err(errno) => return Err(map_errno("create", prefix, errno)),
            }
        }
        Ok(())
    }

    fn mkdir(&self, parts: &[&OsStr]) -> Result<(), WorkspaceError> {
        let parent = open_parent(self.fd(), parts).map_err(|e| map_errno("create", parts, e))?;
        let base = parent.as_ref().map_or(self.fd(), AsFd::as_fd);
        let name = parts[parts.len() - 1];
        match rustix::fs::mkdirat(base, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => Ok(()),
            Err(errno) => Err(map_errno("create", parts, errno)),
        }
    }
}

impl Workspace for TempWorkspace {
    fn path(&self) -> &Path {
        &self.path
    }

    fn write_file(&self, rel: &Path, contents: &[u8]) -> Result<(), WorkspaceError> {
        let parts = normalize(rel)?;
        self.create_parents(&parts)?;
        let fd = open_beneath(
            self.fd(),
            &parts,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| map_errno("write", &parts, e))?;
        std::io::Write::write_all(&mut std::fs::File::from(fd), contents)
            .map_err(|e| WorkspaceError::io("write", rel, e))
    }

    fn read_file(&self, rel: &Path) -> Result<Vec<u8>, WorkspaceError> {
        let parts = normalize(rel)?;
        let fd = open_beneath(self.fd(), &parts, OFlags::RDONLY, Mode::empty())
            .map_err(|e| map_errno("read", &parts, e))?;
        let mut contents = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut contents)
            .map_err(|e| WorkspaceError::io("read", rel, e))?;
        Ok(contents)
    }

    fn create_dir(&self, rel: &Path) -> Result<(), WorkspaceError> {
        let parts = normalize(rel)?;
        self.create_parents(&parts)?;
        self.mkdir(&parts)?;
        // The last component may have been an existing link or file: check it resolves to a
        // directory inside.
        open_beneath(
            self.fd(),
            &parts,
            OFlags::PATH | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map(drop)
        .map_err(|e| map_errno("create", &parts, e))
    }

    fn remove(&self, rel: &Path) -> Result<(), WorkspaceError> {
        let parts = normalize(rel)?;
        let parent = open_parent(self.fd(), &parts).map_err(|e| map_errno("remove", &parts, e))?;
        let base = parent.as_ref().map_or(self.fd(), AsFd::as_fd);
        let name = parts[parts.len() - 1];
        match rustix::fs::statat(base, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(errno) => Err(map_errno("remove", &parts, errno)),
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
                let path = self.path.join(rel::join(&parts));
                let report = remove_tree_at(base, name, &path);
                if report.is_complete() {
                    Ok(())
                } else {
                    Err(WorkspaceError::RemoveIncomplete { path, report })
                }
            }
            Ok(_) => rustix::fs::unlinkat(base, name, AtFlags::empty())
                .map_err(|e| map_errno("remove", &parts, e)),
        }
    }

    fn list(&self, rel: &Path) -> Result<Vec<Entry>, WorkspaceError> {
        let listing = match normalize(rel) {
            Err(WorkspaceError::InvalidPath {
                reason: "is empty", ..
            }) => Dir::read_from(self.fd())
                .map_err(|e| WorkspaceError::io("list", &self.path, e.into()))?,
            Err(err) => return Err(err),
            Ok(parts) => {
                let fd = open_beneath(
                    self.fd(),
                    &parts,
                    OFlags::RDONLY | OFlags::DIRECTORY,
                    Mode::empty(),
                )
                .map_err(|e| map_errno("list", &parts, e))?;
                Dir::new(fd).map_err(|e| WorkspaceError::io("list", rel, e.into()))?
            }
        };
        let top = matches!(normalize(rel), Err(WorkspaceError::InvalidPath { .. }));
        let fd = listing
            .fd()
            .map_err(|e| WorkspaceError::io("list", rel, e.into()))?;
        let fd = rustix::io::dup(fd).map_err(|e| WorkspaceError::io("list", rel, e.into()))?;
        let mut entries = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| WorkspaceError::io("list", rel, e.into()))?;
            let name = entry.file_name();
            if name == c"." || name == c".." || (top && name.to_bytes() == MARKER_FILE.as_bytes()) {
                continue;
            }
            let Ok(stat) = rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            let kind = match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => EntryKind::File,
                FileType::Directory => EntryKind::Dir,
                FileType::Symlink => EntryKind::Symlink,
                _ => EntryKind::Other,
            };
            entries.push(Entry {
                name: OsString::from(OsStr::from_bytes(name.to_bytes())),
                kind,
                len: if kind == EntryKind::Dir {
                    0
                } else {
                    u64::try_from(stat.st_size).unwrap_or(0)
                },
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn usage(&self) -> Result<Usage, WorkspaceError> {
        scan(&self.path, &self.snapshot)
    }
}

impl Drop for TempWorkspace {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        if self.keep.keeps(RunVerdict::Failure) {
            // Errors cannot be reported from a drop; the workspace stays either way.
            let _ = self.mark_kept();
        } else {
            remove_tree(&self.path);
        }
    }
}
