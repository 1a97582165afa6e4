//! The mount namespace of a sandboxed tree, as data: [`MountPlan`] lists what the tree sees
//! besides the host's file system made read-only, and it is applied between fork and exec
//! with system calls only.
//!
//! The way of systemd's `ProtectSystem=strict` and `PrivateTmp=` (and of bubblewrap's
//! `--ro-bind / /`): the host stays where it is, every mount of it read-only, without
//! set-user-id and without devices, so a write or a metadata change anywhere (`chmod`,
//! `chown`, `utimes`, `setxattr`) fails with `EROFS`, for root as for anyone. On top of it
//! the plan's entries are mounted in order: binds (writable or not), empty tmpfs that hide
//! what is beneath them, and a minimal `/dev`.
//!
//! # Theory of operation
//!
//! [`MountPlan::prepare`] runs in the parent. It checks every path, works out which mount
//! points must be created (a target inside an earlier tmpfs or writable bind that does not
//! exist there yet) and turns the plan into a list of steps over NUL-terminated paths, so the
//! child allocates nothing. In the child, after `unshare(CLONE_NEWNS)`:
//!
//! 1. propagation is made `slave`, so nothing mounted here reaches the host;
//! 2. every bind source (and every device of [`Mount::Devices`]) is cloned as a detached
//!    mount (`open_tree(OPEN_TREE_CLONE)`), before anything is hidden or made read-only;
//! 3. `/` is made read-only, `nosuid` and `nodev`, recursively (`mount_setattr`), which
//!    covers `/proc` (so `/proc/sys`), `/sys` (so the cgroup tree) and every other mount;
//! 4. the entries are applied in order, creating their mount points where needed; a
//!    read-only tmpfs is made read-only once the mount points inside it exist.
//!
//! A target whose top-level directory the host does not have (a task's `/app`, `/tests`,
//! `/logs`) cannot be made on the read-only host. Such a plan is applied in a new root, the
//! way bubblewrap builds its view: between steps 2 and 3 a tmpfs is mounted over `/tmp`,
//! each of the host's top-level entries is bound into it (recursively; links are made
//! again as links, `/tmp` is left empty), the missing mount points are made, the process
//! pivots into it and detaches the old root; steps 3 and 4 then apply inside the new root
//! as they would on the host, and Landlock's read rights are granted beneath the new `/`.
//! The plan's [`MountPlan::cwd`] is where the process starts inside the view.
//!
//! Mounts copied into a namespace owned by a user namespace are locked by the kernel: a
//! process there cannot unmount one to see what is beneath, nor clear its read-only flag.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::ProcTrackError;

/// One entry of a [`MountPlan`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Mount {
    /// `source` (a directory or a file) seen at `target`. The source is taken before anything
    /// is hidden, so a bind may bring back a path inside a hidden directory. A writable bind
    /// still has no devices and no set-user-id.
    Bind {
        /// What is bound (a host path).
        source: PathBuf,
        /// Where it is seen.
        target: PathBuf,
        /// Whether it may be written.
        writable: bool,
    },
    /// An empty tmpfs at `target`, hiding what is there. A read-only one holds only the
    /// mount points later entries need.
    Tmpfs {
        /// Where it is mounted.
        target: PathBuf,
        /// Whether it may be written (in memory, charged to the tree's memory cgroup).
        writable: bool,
    },
    /// A minimal `/dev` at `target`: the host's [`DEVICES`](crate::DEVICES) bound in, a
    /// private `devpts` (`/dev/pts`, `/dev/ptmx`) whose terminals are the tree's own, a
    /// private `/dev/shm`, and the `fd`, `stdin`, `stdout` and `stderr` links.
    Devices {
        /// Where it is mounted, usually `/dev`.
        target: PathBuf,
    },
}

impl Mount {
    /// Where the entry is seen.
    pub fn target(&self) -> &Path {
        match self {
            Self::Bind { target, .. } | Self::Tmpfs { target, .. } | Self::Devices { target } => {
                target
            }
        }
    }
}

/// What a sandboxed tree sees: the host read-only, then these entries in order (see the
/// module docs). Targets are absolute paths without `..`; a target that does not exist is
/// created, which is possible only inside an earlier tmpfs or writable bind.
///
/// A plan is data, so an embedder adds its own entries: a workspace seen at `/app`, a test
/// directory bound read-only at `/tests`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MountPlan {
    /// The entries, applied in order.
    pub mounts: Vec<Mount>,
    /// Where the tree starts, a path of the view (a task's `WORKDIR`); `None` keeps the
    /// process's own working directory, entered again once the mounts cover it.
    pub cwd: Option<PathBuf>,
}

/// The devices of [`Mount::Devices`], bound from the host.
const DEV_NODES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// One system call (or two) of the plan, over paths prepared in the parent.
#[derive(Debug)]
enum Step {
    /// A tmpfs at the path with these options.
    Tmpfs(CString, CString),
    /// A directory (an existing one is fine).
    Mkdir(CString),
    /// An empty file (an existing one is fine).
    Touch(CString),
    /// The detached clone in this slot, attached at the path.
    Attach(usize, CString),
    /// The mount at the path made read-only (not recursively).
    ReadOnly(CString),
    /// A symbolic link: (what it points to, where it is).
    Symlink(CString, CString),
    /// A private devpts instance at the path.
    Devpts(CString),
    /// Landlock rights beneath the path, added to the ruleset in the child (for a file
    /// system that exists only there).
    Grant(CString, Grant),
}

/// Which Landlock rights a [`Step::Grant`] adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Every right but the device ones: a writable file system of the child's.
    Write,
    /// The file rights and terminal ioctls (`/dev/pts`).
    Terminals,
    /// The read rights: the new root of a view built in one.
    Read,
}

/// How a view built in a new root is made (see the module docs).
#[derive(Debug)]
struct NewRoot {
    /// Where its tmpfs is mounted before the pivot (`/tmp`).
    base: CString,
    /// The host's top-level entries, made in it.
    entries: Vec<RootEntry>,
    /// Mount points of the plan's targets, made in it before anything is read-only.
    points: Vec<Step>,
    /// Where the old root goes for the pivot, in `base` and then in the new root.
    old_in_base: CString,
    old: CString,
}

/// One of the host's top-level entries in a new root.
#[derive(Debug)]
enum RootEntry {
    /// A directory or file bound recursively from the host (`/usr` at `<base>/usr`).
    Bind {
        from: CString,
        to: CString,
        dir: bool,
    },
    /// A symbolic link made again: (what it points to, where it is).
    Link(CString, CString),
    /// An empty directory (`/tmp`, which the base covers).
    Empty(CString),
}

/// Where a new root is assembled before the pivot.
const NEW_ROOT_BASE: &str = "/tmp";
/// Where the old root is put by the pivot, relative to the new root.
const OLD_ROOT: &str = ".hyoka-old-root";

/// A [`MountPlan`] made ready in the parent; [`PreparedMounts::apply`] runs in the child.
#[derive(Debug)]
pub(crate) struct PreparedMounts {
    /// The sources to clone, with the slot each clone's descriptor goes into.
    sources: Vec<(CString, bool)>,
    slots: Box<[AtomicI32]>,
    steps: Vec<Step>,
    /// With targets the host's `/` lacks: the new root the view is built in.
    new_root: Option<NewRoot>,
    /// Where the process starts inside the view ([`MountPlan::cwd`]).
    pub(crate) cwd: Option<CString>,
}

fn cstring(path: &Path) -> Result<CString, ProcTrackError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| ProcTrackError::Sandbox {
        reason: format!("{} holds a NUL byte", path.display()),
    })
}

fn is_clean_absolute(path: &Path) -> bool {
    path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// What the view holds at a path while the plan is being worked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cover {
    /// The host's read-only file system.
    Host,
    /// An entry's tmpfs (or `/dev`): only what the plan created exists there.
    Tmpfs,
    /// An entry's bind of this source path, writable or not.
    Bind(usize, bool),
}

impl MountPlan {
    /// Whether the host's `path` is out of the view: at or beneath a [`Mount::Tmpfs`] of the
    /// plan, or beneath a bind of another source (the private `/tmp` shows the eval's own temp
    /// directory there), unless a later entry brings it back.
    pub fn hides(&self, path: &Path) -> bool {
        let mut hidden = false;
        for mount in &self.mounts {
            if let Ok(rest) = path.strip_prefix(mount.target()) {
                hidden = match mount {
                    Mount::Tmpfs { .. } | Mount::Devices { .. } => true,
                    Mount::Bind { source, .. } => source.join(rest) != path,
                };
            }
        }
        hidden
    }

    /// Checks the plan and turns it into steps (see the module docs).
    ///
    /// # Errors
    /// [`ProcTrackError::Sandbox`] for a relative target or source, a source that does not
    /// exist, or a target that cannot be made (it does not exist on the read-only host, or
    /// lies inside a read-only bind).
    pub(crate) fn prepare(&self) -> Result<PreparedMounts, ProcTrackError> {
        let refuse = |reason: String| ProcTrackError::Sandbox { reason };
        let mut sources: Vec<(CString, bool)> = Vec::new();
        let mut steps = Vec::new();
        // Targets applied so far, with what each shows; later ones cover earlier ones.
        let mut covers: Vec<(PathBuf, Cover)> = Vec::new();
        // Paths created in a tmpfs of the plan (and, with a new root, in it).
        let mut created: Vec<PathBuf> = Vec::new();
        let new_root = self.new_root(&mut created)?;
        let mut read_only_tmpfs = Vec::new();
        for (index, mount) in self.mounts.iter().enumerate() {
            let target = mount.target();
            if !is_clean_absolute(target) {
                return Err(refuse(format!(
                    "mount target {} is not an absolute path without `..`",
                    target.display()
                )));
            }
            let is_file = match mount {
                Mount::Bind { source, .. } => {
                    if !is_clean_absolute(source) {
                        return Err(refuse(format!(
                            "bind source {} is not an absolute path without `..`",
                            source.display()
                        )));
                    }
                    let meta = std::fs::metadata(source)
                        .map_err(|e| refuse(format!("cannot bind {}: {e}", source.display())))?;
                    !meta.is_dir()
                }
                _ => false,
            };
            mount_point(target, is_file, &covers, &mut created, &mut steps, &sources)?;
            let c_target = cstring(target)?;
            match mount {
                Mount::Bind {
                    source, writable, ..
                } => {
                    sources.push((cstring(source)?, *writable));
                    let slot = sources.len() - 1;
                    steps.push(Step::Attach(slot, c_target));
                    covers.push((target.to_owned(), Cover::Bind(slot, *writable)));
                }
                Mount::Tmpfs { writable, .. } => {
                    steps.push(Step::Tmpfs(c_target.clone(), c"mode=0755".to_owned()));
                    if *writable {
                        steps.push(Step::Grant(c_target, Grant::Write));
                    } else {
                        read_only_tmpfs.push((index, c_target));
                    }
                    covers.push((target.to_owned(), Cover::Tmpfs));
                }
                Mount::Devices { .. } => {
                    devices(target, &mut sources, &mut steps)?;
                    read_only_tmpfs.push((index, c_target));
                    covers.push((target.to_owned(), Cover::Tmpfs));
                }
            }
        }
        // A tmpfs a later entry covers is not in the view any more: nothing to make read-only.
        let covered = |index: usize| {
            let target = self.mounts[index].target();
            self.mounts[index + 1..]
                .iter()
                .any(|m| target.starts_with(m.target()))
        };
        steps.extend(
            read_only_tmpfs
                .into_iter()
                .filter(|(index, _)| !covered(*index))
                .map(|(_, target)| Step::ReadOnly(target)),
        );
        let slots = (0..sources.len()).map(|_| AtomicI32::new(-1)).collect();
        let cwd = match &self.cwd {
            Some(cwd) if !is_clean_absolute(cwd) => {
                return Err(refuse(format!(
                    "working directory {} is not an absolute path without `..`",
                    cwd.display()
                )));
            }
            Some(cwd) => Some(cstring(cwd)?),
            None => None,
        };
        Ok(PreparedMounts {
            sources,
            slots,
            steps,
            new_root,
            cwd,
        })
    }

    /// The new root the plan needs when a target's top-level directory is not on the host
    /// (see the module docs), with the mount points it makes recorded in `created`.
    fn new_root(&self, created: &mut Vec<PathBuf>) -> Result<Option<NewRoot>, ProcTrackError> {
        let top = |path: &Path| {
            path.components()
                .nth(1)
                .map(|c| Path::new("/").join(c))
                .filter(|top| top.symlink_metadata().is_err())
        };
        if !self.mounts.iter().any(|m| top(m.target()).is_some()) {
            return Ok(None);
        }
        let base = Path::new(NEW_ROOT_BASE);
        let inside = |path: &Path| base.join(path.strip_prefix("/").unwrap_or(path));
        let mut entries = Vec::new();
        let listing = std::fs::read_dir("/").map_err(|e| ProcTrackError::Sandbox {
            reason: format!("cannot list / for a new root: {e}"),
        })?;
        let mut names: Vec<_> = listing
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        names.sort();
        for name in names {
            let host = Path::new("/").join(&name);
            let Ok(meta) = host.symlink_metadata() else {
                continue;
            };
            let to = cstring(&inside(&host))?;
            if host == base {
                entries.push(RootEntry::Empty(to));
            } else if meta.file_type().is_symlink() {
                let link = std::fs::read_link(&host).map_err(|e| ProcTrackError::Sandbox {
                    reason: format!("cannot read the link {}: {e}", host.display()),
                })?;
                entries.push(RootEntry::Link(cstring(&link)?, to));
            } else if meta.is_dir() || meta.is_file() {
                entries.push(RootEntry::Bind {
                    from: cstring(&host)?,
                    to,
                    dir: meta.is_dir(),
                });
            }
        }
        // The mount points of targets under a top-level directory the host lacks, made in
        // the new root while it is still writable (a file bind's last one is a file).
        let mut points = Vec::new();
        for mount in &self.mounts {
            let target = mount.target();
            if top(target).is_none() {
                continue;
            }
            let is_file = match mount {
                Mount::Bind { source, .. } => !source.is_dir(),
                _ => false,
            };
            let mut path = PathBuf::from("/");
            let count = target.components().count() - 1;
            for (i, part) in target.components().skip(1).enumerate() {
                path.push(part);
                if created.contains(&path) {
                    continue;
                }
                let c = cstring(&inside(&path))?;
                points.push(if is_file && i + 1 == count {
                    Step::Touch(c)
                } else {
                    Step::Mkdir(c)
                });
                created.push(path.clone());
            }
        }
        Ok(Some(NewRoot {
            base: cstring(base)?,
            entries,
            points,
            old_in_base: cstring(&base.join(OLD_ROOT))?,
            old: cstring(&Path::new("/").join(OLD_ROOT))?,
        }))
    }
}

/// The host path a bind source slot names (for mount points inside a bind).
fn source_path(sources: &[(CString, bool)], slot: usize) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(sources[slot].0.as_bytes()))
}

/// Adds the steps that make `target` exist, if it does not already in the view.
fn mount_point(
    target: &Path,
    is_file: bool,
    covers: &[(PathBuf, Cover)],
    created: &mut Vec<PathBuf>,
    steps: &mut Vec<Step>,
    sources: &[(CString, bool)],
) -> Result<(), ProcTrackError> {
    // Each path from the covering entry's target down to the target.
    let (base, cover) = covers
        .iter()
        .rev()
        .find(|(t, _)| target.starts_with(t))
        .map_or((Path::new("/"), Cover::Host), |(t, c)| (t.as_path(), *c));
    let exists = |path: &Path, created: &[PathBuf]| match cover {
        // With a new root, the host's paths and the mount points made in it.
        Cover::Host => path.symlink_metadata().is_ok() || created.iter().any(|c| c == path),
        Cover::Tmpfs => created.iter().any(|c| c == path) || path == base,
        Cover::Bind(slot, _) => {
            let rel = path.strip_prefix(base).unwrap_or(Path::new(""));
            source_path(sources, slot)
                .join(rel)
                .symlink_metadata()
                .is_ok()
        }
    };
    if exists(target, created) {
        return Ok(());
    }
    let may_create = match cover {
        Cover::Host => false,
        Cover::Tmpfs => true,
        Cover::Bind(_, writable) => writable,
    };
    if !may_create {
        return Err(ProcTrackError::Sandbox {
            reason: format!(
                "mount target {} does not exist and cannot be made (the {} is read-only)",
                target.display(),
                if cover == Cover::Host {
                    "host"
                } else {
                    "bind around it"
                }
            ),
        });
    }
    let rel = target.strip_prefix(base).unwrap_or(Path::new(""));
    let mut path = base.to_owned();
    let count = rel.components().count();
    for (i, part) in rel.components().enumerate() {
        path.push(part);
        if exists(&path, created) {
            continue;
        }
        let c = cstring(&path)?;
        steps.push(if is_file && i + 1 == count {
            Step::Touch(c)
        } else {
            Step::Mkdir(c)
        });
        if cover == Cover::Tmpfs {
            created.push(path.clone());
        }
    }
    Ok(())
}

/// The steps of a minimal `/dev` at `target`.
fn devices(
    target: &Path,
    sources: &mut Vec<(CString, bool)>,
    steps: &mut Vec<Step>,
) -> Result<(), ProcTrackError> {
    let at = |name: &str| cstring(&target.join(name));
    steps.push(Step::Tmpfs(cstring(target)?, c"mode=0755".to_owned()));
    for node in DEV_NODES {
        let host = Path::new("/dev").join(node);
        if host.exists() {
            sources.push((cstring(&host)?, true));
            steps.push(Step::Touch(at(node)?));
            steps.push(Step::Attach(sources.len() - 1, at(node)?));
        }
    }
    steps.push(Step::Mkdir(at("pts")?));
    steps.push(Step::Devpts(at("pts")?));
    steps.push(Step::Grant(at("pts")?, Grant::Terminals));
    steps.push(Step::Symlink(c"pts/ptmx".to_owned(), at("ptmx")?));
    steps.push(Step::Mkdir(at("shm")?));
    steps.push(Step::Tmpfs(at("shm")?, c"mode=1777".to_owned()));
    steps.push(Step::Grant(at("shm")?, Grant::Write));
    for (link, to) in [
        ("fd", c"/proc/self/fd"),
        ("stdin", c"/proc/self/fd/0"),
        ("stdout", c"/proc/self/fd/1"),
        ("stderr", c"/proc/self/fd/2"),
    ] {
        steps.push(Step::Symlink(to.to_owned(), at(link)?));
    }
    Ok(())
}

/// `mount_setattr` flags: what a mount becomes.
const HOST_ATTRS: u64 = libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV;

fn cvt(result: libc::c_long) -> std::io::Result<libc::c_long> {
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// `mount_setattr(dirfd, path, flags, {set, clear})`.
fn set_attrs(
    dirfd: i32,
    path: &std::ffi::CStr,
    flags: libc::c_uint,
    set: u64,
) -> std::io::Result<()> {
    let attr = libc::mount_attr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is NUL-terminated and `attr` a valid `mount_attr` of the size passed.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            &raw const attr,
            size_of::<libc::mount_attr>(),
        )
    })
    .map(drop)
}

impl PreparedMounts {
    /// Applies the plan in the current (new, private) mount namespace. `grant` adds
    /// Landlock rights beneath a path that exists only here (`true`: terminal ioctls too).
    ///
    /// Runs in the child between fork and exec: system calls only, nothing allocated.
    pub(crate) fn apply(
        &self,
        grant: &dyn Fn(&std::ffi::CStr, Grant) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        // SAFETY (every block below): plain system calls on NUL-terminated paths prepared in
        // the parent and on descriptors this function opened; no memory is written but the
        // atomic slots.
        unsafe {
            cvt(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            )
            .into())?;
        }
        for ((source, writable), slot) in self.sources.iter().zip(self.slots.iter()) {
            // SAFETY: see above.
            let fd = cvt(unsafe {
                libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    source.as_ptr(),
                    libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | libc::AT_RECURSIVE as u32,
                )
            })?;
            let fd = i32::try_from(fd).unwrap_or(-1);
            slot.store(fd, Ordering::Relaxed);
            let attrs = if *writable {
                libc::MOUNT_ATTR_NOSUID
            } else {
                libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_RDONLY
            };
            // A device's clone keeps its devices; a directory's loses them.
            let attrs = if source.as_bytes().starts_with(b"/dev/") {
                attrs
            } else {
                attrs | libc::MOUNT_ATTR_NODEV
            };
            set_attrs(
                fd,
                c"",
                (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint,
                attrs,
            )?;
        }
        if let Some(root) = &self.new_root {
            self.enter_new_root(root, grant)?;
        }
        set_attrs(
            libc::AT_FDCWD,
            c"/",
            libc::AT_RECURSIVE as libc::c_uint,
            HOST_ATTRS,
        )?;
        for step in &self.steps {
            self.step(step, grant)?;
        }
        for slot in &*self.slots {
            let fd = slot.swap(-1, Ordering::Relaxed);
            if fd >= 0 {
                // SAFETY: closes a descriptor this function opened.
                unsafe { libc::close(fd) };
            }
        }
        Ok(())
    }

    /// Builds the new root at its base and pivots into it (see the module docs). System
    /// calls only.
    fn enter_new_root(
        &self,
        root: &NewRoot,
        grant: &dyn Fn(&std::ffi::CStr, Grant) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.step(
            &Step::Tmpfs(root.base.clone(), c"mode=0755".to_owned()),
            grant,
        )?;
        for entry in &root.entries {
            // SAFETY: plain system calls on NUL-terminated paths prepared in the parent.
            unsafe {
                match entry {
                    RootEntry::Bind { from, to, dir } => {
                        if *dir {
                            self.step(&Step::Mkdir(to.clone()), grant)?;
                        } else {
                            self.step(&Step::Touch(to.clone()), grant)?;
                        }
                        cvt(libc::mount(
                            from.as_ptr(),
                            to.as_ptr(),
                            std::ptr::null(),
                            libc::MS_BIND | libc::MS_REC,
                            std::ptr::null(),
                        )
                        .into())?;
                    }
                    RootEntry::Link(target, at) => {
                        self.step(&Step::Symlink(target.clone(), at.clone()), grant)?;
                    }
                    RootEntry::Empty(dir) => self.step(&Step::Mkdir(dir.clone()), grant)?,
                }
            }
        }
        for point in &root.points {
            self.step(point, grant)?;
        }
        self.step(&Step::Mkdir(root.old_in_base.clone()), grant)?;
        // SAFETY: plain system calls on NUL-terminated paths prepared in the parent.
        unsafe {
            cvt(libc::syscall(
                libc::SYS_pivot_root,
                root.base.as_ptr(),
                root.old_in_base.as_ptr(),
            ))?;
            cvt(libc::chdir(c"/".as_ptr()).into())?;
            cvt(libc::umount2(root.old.as_ptr(), libc::MNT_DETACH).into())?;
            cvt(libc::rmdir(root.old.as_ptr()).into())?;
        }
        grant(c"/", Grant::Read)
    }

    fn step(
        &self,
        step: &Step,
        grant: &dyn Fn(&std::ffi::CStr, Grant) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let exists = |r: libc::c_int| {
            if r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        };
        // SAFETY (every block below): plain system calls on NUL-terminated paths prepared in
        // the parent and on descriptors this function opened.
        unsafe {
            match step {
                Step::Tmpfs(target, data) => cvt(libc::mount(
                    c"tmpfs".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    data.as_ptr().cast(),
                )
                .into())
                .map(drop),
                Step::Mkdir(path) => exists(libc::mkdir(path.as_ptr(), 0o755)),
                Step::Touch(path) => {
                    let fd = libc::open(
                        path.as_ptr(),
                        libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                        0o644,
                    );
                    if fd >= 0 {
                        libc::close(fd);
                        Ok(())
                    } else {
                        exists(fd)
                    }
                }
                Step::Attach(slot, target) => {
                    let fd = self.slots[*slot].load(Ordering::Relaxed);
                    cvt(libc::syscall(
                        libc::SYS_move_mount,
                        fd,
                        c"".as_ptr(),
                        libc::AT_FDCWD,
                        target.as_ptr(),
                        libc::MOVE_MOUNT_F_EMPTY_PATH,
                    ))
                    .map(drop)
                }
                Step::ReadOnly(target) => {
                    set_attrs(libc::AT_FDCWD, target, 0, libc::MOUNT_ATTR_RDONLY)
                }
                Step::Symlink(to, link) => exists(libc::symlink(to.as_ptr(), link.as_ptr())),
                Step::Devpts(target) => cvt(libc::mount(
                    c"devpts".as_ptr(),
                    target.as_ptr(),
                    c"devpts".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NOEXEC,
                    c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
                )
                .into())
                .map(drop),
                Step::Grant(path, kind) => grant(path, *kind),
            }
        }
    }
}

#[cfg(test)]
mod tests;
