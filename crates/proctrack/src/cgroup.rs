//! The cgroup v2 layer: find a writable cgroup2 tree, make a leaf per eval, join it before
//! the child can fork, and kill everything in it at once; and, for `clean`, the recorded
//! leaves of a run (v2, and the v1 ones resource limits make on hybrid hosts).

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};

use crate::ProcTrackError;
use crate::instance::Instance;
use crate::proc_table::{NativeProcTable, ProcTable as _};
use crate::signal::{NativeSignaller, Signal, Signaller as _};

/// Where this process can create cgroup v2 leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupRoot {
    /// The cgroup2 mount point (`/sys/fs/cgroup` or, on hybrid hosts, `/sys/fs/cgroup/unified`).
    pub mount: PathBuf,
    /// The directory of our own cgroup, under which leaves are created.
    pub base: PathBuf,
    /// Whether `cgroup.kill` exists (Linux ≥ 5.14); otherwise teardown freezes and kills.
    pub has_kill: bool,
}

/// Finds the cgroup2 mount point in the text of `/proc/self/mountinfo`.
///
/// Mount points are octal-escaped there (`\040` for a space); they are unescaped.
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_ascii_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mount_point = left.split_ascii_whitespace().nth(4)?;
        Some(PathBuf::from(OsStr::from_bytes(&unescape(mount_point))))
    })
}

/// The mount points of the cgroup v1 hierarchies in the text of `/proc/self/mountinfo`
/// (unescaped), where resource limits make leaves on hybrid hosts.
pub fn cgroup1_mounts(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            if right.split_ascii_whitespace().next()? != "cgroup" {
                return None;
            }
            let mount_point = left.split_ascii_whitespace().nth(4)?;
            Some(PathBuf::from(OsStr::from_bytes(&unescape(mount_point))))
        })
        .collect()
}

/// The cgroup file systems `clean` may act in: the cgroup2 mount and the cgroup v1
/// hierarchies, as `/proc/self/mountinfo` lists them (never paths a ledger names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupMounts {
    /// The cgroup2 mount point.
    pub v2: Option<PathBuf>,
    /// The cgroup v1 mount points.
    pub v1: Vec<PathBuf>,
}

impl CgroupMounts {
    /// Reads them from `/proc/self/mountinfo` (none when it cannot be read).
    pub fn detect() -> Self {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Self {
            v2: cgroup2_mount(&mountinfo),
            v1: cgroup1_mounts(&mountinfo),
        }
    }

    /// The v1 mount `path` lies strictly beneath, if any.
    pub(crate) fn v1_containing(&self, path: &Path) -> Option<&Path> {
        self.v1
            .iter()
            .find(|m| path.starts_with(m) && path != m.as_path())
            .map(PathBuf::as_path)
    }
}

fn unescape(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..=i + 3]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value = bytes[i + 1..=i + 3]
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            out.push(u8::try_from(value).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Our own cgroup v2 path (the `0::` line of `/proc/self/cgroup`), relative to the mount.
pub fn own_cgroup(proc_self_cgroup: &str) -> Option<PathBuf> {
    let path = proc_self_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))?;
    let rel = Path::new(path.trim()).strip_prefix("/").ok()?;
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| rel.to_owned())
}

impl CgroupRoot {
    /// Detects a cgroup2 tree this process may create leaves in.
    ///
    /// # Errors
    /// [`ProcTrackError::CgroupUnavailable`] naming the reason: no cgroup2 mount, our cgroup
    /// unknown, or not writable (a probe directory could not be created).
    pub fn detect() -> Result<Self, ProcTrackError> {
        static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let unavailable = |reason: String| ProcTrackError::CgroupUnavailable { reason };
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| unavailable(format!("cannot read /proc/self/mountinfo: {e}")))?;
        let mount = cgroup2_mount(&mountinfo)
            .ok_or_else(|| unavailable("no cgroup2 file system is mounted".to_owned()))?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| unavailable(format!("cannot read /proc/self/cgroup: {e}")))?;
        let rel = own_cgroup(&own)
            .ok_or_else(|| unavailable("this process has no cgroup v2 path".to_owned()))?;
        let base = if rel.as_os_str().is_empty() {
            mount.clone()
        } else {
            mount.join(rel)
        };
        let probe = base.join(format!(
            "hyoka-probe-{}-{}",
            std::process::id(),
            PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir(&probe)
            .map_err(|e| unavailable(format!("{} is not writable: {e}", base.display())))?;
        let has_kill = probe.join("cgroup.kill").exists();
        let joinable = std::fs::OpenOptions::new()
            .write(true)
            .open(probe.join("cgroup.procs"))
            .is_ok();
        let _ = std::fs::remove_dir(&probe);
        if !joinable {
            return Err(unavailable(format!(
                "cannot open cgroup.procs under {}",
                base.display()
            )));
        }
        Ok(Self {
            mount,
            base,
            has_kill,
        })
    }

    /// Where [`CgroupRoot::create_leaf`] puts eval `eval_id`'s leaf of run instance
    /// `instance`, so it can be recorded before it exists:
    /// `<base>/hyoka-<run_id>-<instance>/<eval_id>`. Keyed by the instance, a leaf left by a
    /// crashed run never collides with a later run that reuses the run id.
    pub fn leaf_path(&self, run_id: &str, instance: &Instance, eval_id: &str) -> PathBuf {
        self.base
            .join(run_dir_name(run_id, Some(instance)))
            .join(eval_id)
    }

    /// Creates the leaf [`CgroupRoot::leaf_path`] (ids must already be validated).
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when a directory cannot be created (an existing leaf is an error:
    /// it would mean two trackers share one eval).
    pub fn create_leaf(
        &self,
        run_id: &str,
        instance: &Instance,
        eval_id: &str,
    ) -> Result<CgroupLeaf, ProcTrackError> {
        let path = self.leaf_path(run_id, instance, eval_id);
        let run_dir = self.base.join(run_dir_name(run_id, Some(instance)));
        make_leaf_dir(&run_dir, &path)?;
        Ok(CgroupLeaf {
            path,
            has_kill: self.has_kill,
            may_kill: true,
        })
    }
}

/// Makes the leaf directory `leaf` in the run's directory `run_dir` (of the v2 tree or of a
/// v1 hierarchy), making `run_dir` first when needed. A sibling eval's teardown removes the
/// run's directory when its leaf was the last one (`CgroupLeaf::remove`,
/// `ResourceLeaves::remove`), which may fall between making the directory and the leaf in
/// it: the leaf then finds no parent, and the directory is made again.
pub(crate) fn make_leaf_dir(run_dir: &Path, leaf: &Path) -> Result<(), ProcTrackError> {
    let mut attempts = 0;
    loop {
        match std::fs::create_dir(run_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(ProcTrackError::io("create cgroup", run_dir, e)),
        }
        match std::fs::create_dir(leaf) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempts < LEAF_ATTEMPTS => {
                attempts += 1;
            }
            Err(e) => return Err(ProcTrackError::io("create cgroup", leaf, e)),
        }
    }
}

/// How many times [`make_leaf_dir`] makes the run's directory again after a sibling's
/// teardown removed it under the new leaf (each time needs another sibling to end at that
/// very moment).
const LEAF_ATTEMPTS: u32 = 16;

/// The name of a run's cgroup directory: `hyoka-<run_id>-<instance>`, or `hyoka-<run_id>` for
/// a ledger written before instances existed.
fn run_dir_name(run_id: &str, instance: Option<&Instance>) -> String {
    match instance {
        Some(instance) => format!("hyoka-{run_id}-{instance}"),
        None => format!("hyoka-{run_id}"),
    }
}

/// Whether a recorded leaf path looks like one of ours: absolute, no `..`, under the cgroup2
/// mount, named `…/hyoka-<run_id>-<instance>/<eval_id>` (`…/hyoka-<run_id>/<eval_id>` without
/// an instance).
fn looks_ours(path: &Path, run_id: &str, instance: Option<&Instance>, mount: &Path) -> bool {
    let clean = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let parent_ok = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == OsStr::new(&run_dir_name(run_id, instance)));
    clean && parent_ok && path.starts_with(mount)
}

/// For a recorded leaf that does not exist (its owner died after recording it, before or
/// while creating it): removes the run's `hyoka-<run_id>` directory if it was left empty.
pub(crate) fn remove_empty_run_dir(
    path: &Path,
    run_id: &str,
    instance: Option<&Instance>,
    mount: &Path,
) {
    if looks_ours(path, run_id, instance, mount)
        && !path.exists()
        && let Some(run_dir) = path.parent()
    {
        // rmdir: a run directory that still holds a leaf stays.
        let _ = std::fs::remove_dir(run_dir);
    }
}

/// One cgroup v2 leaf holding one eval's processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupLeaf {
    path: PathBuf,
    has_kill: bool,
    /// Whether [`CgroupLeaf::kill`] may kill the whole leaf at once (not when acting for a
    /// user who could not: then each member is signalled, and checked, on its own).
    may_kill: bool,
}

impl CgroupLeaf {
    /// Opens an existing leaf (for `clean`), after checking that `path` looks like one of ours:
    /// absolute, no `..`, under a cgroup2 mount, named `…/hyoka-<run_id>-<instance>/<eval_id>`
    /// (without an instance, `…/hyoka-<run_id>/<eval_id>`), a directory (not a link).
    ///
    /// With `owner` (acting for another user), the leaf must belong to that user, and it is
    /// never killed at once: its members are signalled one by one, each checked.
    pub fn open_recorded(
        path: &Path,
        run_id: &str,
        instance: Option<&Instance>,
        mount: &Path,
        owner: Option<u32>,
    ) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::symlink_metadata(path).ok()?;
        let owned = owner.is_none_or(|uid| meta.uid() == uid);
        if !(looks_ours(path, run_id, instance, mount)
            && meta.is_dir()
            && owned
            && path.join("cgroup.procs").is_file())
        {
            return None;
        }
        Some(Self {
            path: path.to_owned(),
            has_kill: path.join("cgroup.kill").exists(),
            may_kill: owner.is_none(),
        })
    }

    /// Opens an existing cgroup v1 leaf a run made for its resource limits (for `clean`),
    /// after the checks of [`CgroupLeaf::open_recorded`] with `mount` the v1 hierarchy (from
    /// `/proc/self/mountinfo`) that holds it. A v1 leaf has no `cgroup.kill`: its members are
    /// signalled one by one, each identity checked.
    pub fn open_recorded_v1(
        path: &Path,
        run_id: &str,
        instance: Option<&Instance>,
        mounts: &CgroupMounts,
        owner: Option<u32>,
    ) -> Option<Self> {
        let mount = mounts.v1_containing(path)?;
        let mut leaf = Self::open_recorded(path, run_id, instance, mount, owner)?;
        leaf.has_kill = false;
        Some(leaf)
    }

    /// The leaf's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the leaf's directory (close-on-exec), for the shim to start the agent in it
    /// with `clone3(CLONE_INTO_CGROUP)`.
    pub(crate) fn dir_fd(&self) -> Result<OwnedFd, ProcTrackError> {
        rustix::fs::open(
            &self.path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| ProcTrackError::io("open", &self.path, e.into()))
    }

    /// Opens `cgroup.procs` for writing (close-on-exec), for a child to join in `pre_exec`.
    pub(crate) fn procs_fd(&self) -> Result<OwnedFd, ProcTrackError> {
        let path = self.path.join("cgroup.procs");
        rustix::fs::open(&path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| ProcTrackError::io("open", path, e.into()))
    }

    /// The pids in the leaf now.
    pub fn members(&self) -> Vec<i32> {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Whether any process is still in the leaf (`cgroup.events` `populated 1`).
    pub fn populated(&self) -> bool {
        std::fs::read_to_string(self.path.join("cgroup.events")).map_or_else(
            |_| !self.members().is_empty(),
            |t| t.lines().any(|l| l.trim() == "populated 1"),
        )
    }

    /// SIGKILLs every process in the leaf at once, including ones forking right now.
    ///
    /// Uses `cgroup.kill`; without it (Linux < 5.14) freezes the leaf, SIGKILLs each member
    /// through the verified [`Signaller`](crate::Signaller) (a fatal signal is delivered even
    /// to frozen tasks) and thaws it. Returns whether the kill was issued (never for a leaf
    /// opened on another user's behalf).
    pub fn kill(&self) -> bool {
        if !self.may_kill {
            return false;
        }
        if self.has_kill {
            return std::fs::write(self.path.join("cgroup.kill"), b"1").is_ok();
        }
        let frozen = std::fs::write(self.path.join("cgroup.freeze"), b"1").is_ok();
        let (table, signaller) = (NativeProcTable::new(), NativeSignaller::new());
        // Frozen members cannot exit and hand their pid to someone else meanwhile.
        for info in self
            .members()
            .into_iter()
            .filter_map(|pid| table.process(pid))
        {
            signaller.signal(info.proc_ref(), Signal::Kill);
        }
        if frozen {
            let _ = std::fs::write(self.path.join("cgroup.freeze"), b"0");
        }
        true
    }

    /// Removes the leaf (and its `hyoka-<run_id>` parent when that is now empty), waiting up to
    /// `patience` for exiting processes to leave it. Returns whether the leaf is gone.
    ///
    /// A `patience` too long for the clock means waiting as long as it takes.
    pub fn remove(&self, patience: Duration, clock: &dyn crate::Clock) -> bool {
        let deadline = crate::clock::deadline(clock.now(), patience);
        loop {
            match std::fs::remove_dir(&self.path) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(_) if deadline.is_none_or(|d| clock.now() < d) => {
                    clock.sleep(Duration::from_millis(5));
                }
                Err(_) => return false,
            }
        }
        if let Some(parent) = self.path.parent() {
            // Fails harmlessly while sibling evals of the same run still have leaves.
            let _ = std::fs::remove_dir(parent);
        }
        true
    }
}

#[cfg(test)]
mod tests;
