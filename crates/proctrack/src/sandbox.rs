//! The kernel sandbox of an agent's tree: a mount namespace shows it the host read-only with
//! a few paths writable ([`MountPlan`]), Landlock confines its file-system writes to those
//! paths again, its capabilities and a few system calls are taken away (`harden`), and a
//! network namespace with only loopback takes its network away.
//!
//! A [`Sandbox`] is prepared in the parent before the fork (the Landlock ruleset is built and
//! its paths are opened there, the user-namespace maps are formatted there) and entered in the
//! child between fork and exec with system calls only, so nothing allocates after the fork.
//! The child is the shim (or the agent when there is no shim): the shim, the agent and
//! everything it starts, however it detaches, inherit the restrictions, which no process can
//! lift.
//!
//! # Theory of operation
//!
//! Landlock: the ruleset handles every file-system right of the ABI the crate targets
//! ([`LANDLOCK_TARGET_ABI`]); `/` is granted the read rights (read files and directories,
//! execute), each writable path every right, and the null-like [`DEVICES`] the file rights.
//! A write anywhere else fails with `EACCES`. Ioctls on devices opened inside the sandbox are
//! refused too (ABI 5), so the tree cannot push keystrokes into a terminal it opens, and with
//! ABI 6 it cannot signal processes outside the sandbox (hyoka and the shim still signal it).
//! The child sets `PR_SET_NO_NEW_PRIVS` (set-user-id programs no longer gain privileges) and
//! calls `landlock_restrict_self`.
//!
//! Mounts: the child makes a mount namespace of its own (as root directly; otherwise in a user
//! namespace that maps only its own user and group) and applies the [`MountPlan`]
//! (`mounts.rs`), then changes to its working directory again, which the new mounts cover.
//! With [`Sandbox::harden`] it then installs the seccomp filters and gives up every
//! capability, last, after Landlock.
//!
//! Network: as root the child calls `unshare(CLONE_NEWNET)`; otherwise it makes a user
//! namespace first (mapping only its own user and group, so it keeps its identity and gains
//! no privilege on the host), then the network namespace. It brings `lo` up; there is no
//! other interface. [`SandboxSupport::detect`] probes which way works in a forked child.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;

use landlock::{
    ABI, Access, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope,
};

use crate::ProcTrackError;
use crate::harden::Filters;
use crate::mounts::{Grant, MountPlan, PreparedMounts};

/// The newest Landlock ABI whose rights a sandbox handles; a newer kernel runs it at this ABI.
pub const LANDLOCK_TARGET_ABI: u32 = 7;

/// The oldest Landlock ABI [`Sandbox`] accepts without best effort: ABI 3 is the first that
/// also stops truncating files outside the writable paths.
pub const MIN_LANDLOCK_ABI: u32 = 3;

/// The devices every sandboxed tree may write: the null-like ones and the controlling
/// terminal (which an agent in its own session does not have).
pub const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The network an agent's tree gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Network {
    /// The host's network (the default: real agents call their model's API).
    #[default]
    Host,
    /// A network namespace of its own with only loopback up.
    None,
}

impl Network {
    /// The name as written in flags, suites and reports (`host`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::None => "none",
        }
    }
}

impl std::str::FromStr for Network {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "host" => Ok(Self::Host),
            "none" => Ok(Self::None),
            _ => Err(format!("invalid network {text:?}: expected host or none")),
        }
    }
}

/// What a spawned tree may do; the default restricts nothing.
///
/// [`MountPlan`]: crate::MountPlan
///
/// Set it on [`AgentCommand::sandbox`](crate::AgentCommand::sandbox). Preparing it fails
/// ([`ProcTrackError::Sandbox`]) when a writable path cannot be opened or the machine lacks
/// what it asks for (check [`SandboxSupport::detect`] first); entering it fails the spawn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// Confine file-system writes with Landlock to these files and directories (and the
    /// [`DEVICES`]); reads stay allowed everywhere. `None` leaves the file system alone.
    pub writable: Option<Vec<PathBuf>>,
    /// The network.
    pub network: Network,
    /// With [`Network::None`], join this namespace instead of making one for the process, so
    /// that processes spawned with it share one loopback.
    pub namespace: Option<NetNamespace>,
    /// A mount namespace of its own with this plan: the host read-only, the plan's entries on
    /// top. `None` leaves the mounts alone.
    pub mounts: Option<MountPlan>,
    /// Root without power: no capabilities (bounding, ambient, inheritable, permitted and
    /// effective sets emptied, secure bits locked), `no_new_privs`, and the seccomp filters
    /// of `harden.rs` (no device nodes, no `TIOCSTI`, no keyrings, no `ptrace`, no modules,
    /// no mounts or namespaces, no extended attributes set).
    pub harden: bool,
}

impl Sandbox {
    /// Whether it restricts anything.
    pub fn is_unrestricted(&self) -> bool {
        self.writable.is_none()
            && self.network == Network::Host
            && self.mounts.is_none()
            && !self.harden
    }

    /// Makes `command` enter this sandbox between fork and exec, as [`Tracker::spawn`]
    /// does for an [`AgentCommand`](crate::AgentCommand), for a process started by other
    /// means (a readiness probe, for example).
    ///
    /// [`Tracker::spawn`]: crate::Tracker::spawn
    ///
    /// # Errors
    /// [`ProcTrackError::Sandbox`] when it cannot be prepared; entering it fails the spawn.
    pub fn apply_to(&self, command: &mut std::process::Command) -> Result<(), ProcTrackError> {
        if self.is_unrestricted() {
            return Ok(());
        }
        let cwd = command.get_current_dir().map(Path::to_path_buf);
        let prepared = Arc::new(Prepared::new(self, cwd.as_deref())?);
        // SAFETY: `enter` makes system calls only, on memory and descriptors prepared here
        // and kept alive by the closure until the command is dropped.
        unsafe {
            command.pre_exec(move || prepared.enter());
        }
        Ok(())
    }
}

/// A network namespace with only loopback up, made once ([`NetNamespace::create`]) and
/// joined by every process spawned with it ([`Sandbox::namespace`]): the processes of one
/// eval (its services, its agent, its build and review) share one loopback and no other
/// network.
///
/// Cheap to clone; the namespace lives while a clone or a process in it does.
#[derive(Debug, Clone)]
pub struct NetNamespace(Arc<NamespaceFds>);

#[derive(Debug)]
struct NamespaceFds {
    /// The user namespace owning it, when it was made without privileges.
    user: Option<OwnedFd>,
    net: OwnedFd,
}

impl PartialEq for NetNamespace {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for NetNamespace {}

impl NetNamespace {
    /// Makes a namespace: a forked child enters a new one (as [`Network::None`] does, through
    /// a user namespace without privileges), sends its descriptors back over a socket pair
    /// and exits.
    ///
    /// # Errors
    /// [`ProcTrackError::Sandbox`] when the machine cannot make one or the child failed.
    pub fn create() -> Result<Self, ProcTrackError> {
        let failed = |what: &str, e: io::Error| ProcTrackError::Sandbox {
            reason: format!("cannot make a network namespace: {what}: {e}"),
        };
        let entry = match SandboxSupport::detect().network {
            NetIsolation::Direct => NetEntry::new(false),
            NetIsolation::UserNamespace => NetEntry::new(true),
            NetIsolation::Unavailable(reason) => {
                return Err(ProcTrackError::Sandbox {
                    reason: format!("no network namespace: {reason}"),
                });
            }
        };
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| failed("socketpair", e.into()))?;
        let status = in_child(|| make_and_send(&entry, theirs.as_fd()));
        drop(theirs);
        status.map_err(|e| failed("in the child", e))?;
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut byte = [0u8; 1];
        rustix::net::recvmsg(
            &ours,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(|e| failed("receive", e.into()))?;
        let mut fds = Vec::new();
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = message {
                fds.extend(received);
            }
        }
        let mut fds = fds.into_iter();
        let net = fds
            .next()
            .ok_or_else(|| failed("receive", io::Error::other("no descriptor")))?;
        Ok(Self(Arc::new(NamespaceFds {
            net,
            user: fds.next(),
        })))
    }

    /// Whether a TCP connection to `address` inside the namespace succeeds within `timeout`
    /// (tried in a forked child that joins it). Blocks.
    pub fn connects(&self, address: SocketAddr, timeout: Duration) -> bool {
        let family = match address {
            SocketAddr::V4(_) => AddressFamily::INET,
            SocketAddr::V6(_) => AddressFamily::INET6,
        };
        in_child(|| {
            join(&self.0)?;
            let socket =
                rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
            rustix::net::sockopt::set_socket_timeout(
                &socket,
                rustix::net::sockopt::Timeout::Send,
                Some(timeout),
            )?;
            rustix::net::connect(&socket, &address)?;
            Ok(())
        })
        .is_ok()
    }
}

/// In the child making a namespace: enters it, then sends `/proc/self/ns/net` (and
/// `ns/user`) over `socket`. System calls only.
fn make_and_send(entry: &NetEntry, socket: BorrowedFd<'_>) -> io::Result<()> {
    use rustix::fs::{Mode, OFlags, open};
    enter_network(entry, 0)?;
    let flags = OFlags::RDONLY | OFlags::CLOEXEC;
    let net = open(c"/proc/self/ns/net", flags, Mode::empty())?;
    let user = if entry.user_namespace {
        Some(open(c"/proc/self/ns/user", flags, Mode::empty())?)
    } else {
        None
    };
    let fds = [net.as_fd(), user.as_ref().map_or(net.as_fd(), AsFd::as_fd)];
    let count = if user.is_some() { 2 } else { 1 };
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds[..count])) {
        return Err(io::Error::from_raw_os_error(libc::ENOBUFS));
    }
    rustix::net::sendmsg(
        socket,
        &[IoSlice::new(b"n")],
        &mut control,
        SendFlags::empty(),
    )?;
    Ok(())
}

/// Joins `fds`' namespaces (its user namespace first). System calls only.
fn join(fds: &NamespaceFds) -> io::Result<()> {
    // SAFETY: `setns` takes an open namespace descriptor and a flag.
    unsafe {
        if let Some(user) = &fds.user {
            cvt(libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER))?;
        }
        cvt(libc::setns(fds.net.as_raw_fd(), libc::CLONE_NEWNET))
    }
}

/// How this machine can give a tree a network namespace of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NetIsolation {
    /// Directly (`CAP_SYS_ADMIN`, usually root).
    Direct,
    /// Through an unprivileged user namespace.
    UserNamespace,
    /// Not at all, with the reason.
    Unavailable(String),
}

impl NetIsolation {
    /// Whether a network namespace can be made.
    pub fn is_available(&self) -> bool {
        !matches!(self, Self::Unavailable(_))
    }
}

/// What the machine offers for [`Sandbox`], detected once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    /// The kernel's Landlock ABI, or why Landlock is unavailable.
    pub landlock: Result<u32, String>,
    /// How a network namespace can be made.
    pub network: NetIsolation,
    /// Whether a mount namespace with the host read-only can be made (as root directly,
    /// otherwise in a user namespace), or why not.
    pub mounts: Result<(), String>,
    /// Whether the seccomp filters and the capability drop of [`Sandbox::harden`] can be
    /// installed, or why not.
    pub harden: Result<(), String>,
}

impl SandboxSupport {
    /// Probes the machine (once; later calls return the first answer): the Landlock ABI with
    /// one system call; network and mount namespaces and the seccomp filters each in a
    /// forked child that makes them and exits.
    pub fn detect() -> Self {
        static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
        SUPPORT
            .get_or_init(|| Self {
                landlock: landlock_abi(),
                network: probe_network(),
                mounts: probe_mounts(),
                harden: probe_harden(),
            })
            .clone()
    }

    /// The ABI a sandbox runs at on this kernel (the kernel's, capped at
    /// [`LANDLOCK_TARGET_ABI`]), when Landlock is available.
    pub fn landlock_in_force(&self) -> Option<u32> {
        self.landlock
            .as_ref()
            .ok()
            .map(|&abi| abi.min(LANDLOCK_TARGET_ABI))
    }
}

/// Whether a mount namespace whose host is read-only can be made here, tried in a child.
fn probe_mounts() -> Result<(), String> {
    let entry = NetEntry::new(!rustix::process::geteuid().is_root());
    let plan = MountPlan::default().prepare().map_err(|e| e.to_string())?;
    in_child(|| {
        enter_mount_namespace(&entry)?;
        plan.apply(&|_, _| Ok(()))
    })
    .map_err(|e| {
        format!("a mount namespace with the host read-only cannot be made here (Linux 5.12 or newer, and unprivileged user namespaces for a user other than root): {e}")
    })
}

/// Whether the seccomp filters and the capability drop work here, tried in a child.
fn probe_harden() -> Result<(), String> {
    let filters = Filters::shared().map_err(|e| e.to_string())?;
    in_child(|| {
        no_new_privs()?;
        filters.enter()
    })
    .map_err(|e| format!("the seccomp filters cannot be installed: {e}"))
}

/// Sets `PR_SET_NO_NEW_PRIVS`. A system call.
fn no_new_privs() -> io::Result<()> {
    // SAFETY: `prctl` with integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Enters a new mount namespace: directly as root, else in a new user namespace mapping
/// only the caller (`entry`). System calls only.
fn enter_mount_namespace(entry: &NetEntry) -> io::Result<()> {
    if entry.user_namespace {
        // SAFETY: `unshare` takes flags only.
        cvt(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) })?;
        write_maps(entry)
    } else {
        // SAFETY: `unshare` takes flags only.
        cvt(unsafe { libc::unshare(libc::CLONE_NEWNS) })
    }
}

fn write_maps(entry: &NetEntry) -> io::Result<()> {
    write_proc(c"/proc/self/setgroups", b"deny")?;
    write_proc(c"/proc/self/uid_map", &entry.uid_map)?;
    write_proc(c"/proc/self/gid_map", &entry.gid_map)
}

/// The kernel's Landlock ABI version, or why there is none.
fn landlock_abi() -> Result<u32, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the call only returns
    // the ABI version (or fails); it reads and writes no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if version > 0 {
        return u32::try_from(version).map_err(|_| "unexpected Landlock ABI".to_owned());
    }
    Err(match io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built into the kernel but not enabled (add landlock to the lsm= boot parameter)".to_owned()
        }
        Some(libc::ENOSYS) => "the kernel has no Landlock (Linux 5.13 or newer with CONFIG_SECURITY_LANDLOCK)".to_owned(),
        _ => format!("Landlock is unavailable: {}", io::Error::last_os_error()),
    })
}

/// A [`Sandbox`] made ready in the parent; [`Prepared::enter`] runs in the child.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    ruleset: Option<OwnedFd>,
    network: Option<NetPlan>,
    mounts: Option<(PreparedMounts, NetEntry)>,
    filters: Option<&'static Filters>,
    /// The filters were handed to the shim, which enters them itself once it has started
    /// the agent (see [`Prepared::hand_filters_to_shim`]): `no_new_privs` is still set here.
    filters_in_shim: bool,
    /// The working directory, entered again once the mounts cover it.
    cwd: Option<CString>,
    /// Landlock rights for a writable file system that exists only in the child, for its
    /// terminals (`/dev/pts`), and for reading a new root.
    grants: (u64, u64, u64),
}

/// How the child gets its network namespace.
#[derive(Debug)]
enum NetPlan {
    /// A new one of its own.
    New(NetEntry),
    /// A shared one.
    Join(NetNamespace),
}

/// How the child enters its network namespace.
#[derive(Debug, Clone)]
struct NetEntry {
    user_namespace: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl NetEntry {
    fn new(user_namespace: bool) -> Self {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        Self {
            user_namespace,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// `LANDLOCK_RULE_PATH_BENEATH`, the rule type of [`PathBeneathAttr`].
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// Landlock's rule for one path, as `landlock_add_rule` takes it.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

impl Prepared {
    /// Builds the ruleset (opening every path), the namespace and mount plans and the
    /// filters for `sandbox`, for a process that runs in `cwd`.
    pub(crate) fn new(sandbox: &Sandbox, cwd: Option<&Path>) -> Result<Self, ProcTrackError> {
        if sandbox.is_unrestricted() {
            return Ok(Self::default());
        }
        let support = SandboxSupport::detect();
        let network = match (sandbox.network, &sandbox.namespace) {
            (Network::Host, _) => None,
            (Network::None, Some(shared)) => Some(NetPlan::Join(shared.clone())),
            (Network::None, None) => Some(NetPlan::New(match support.network {
                NetIsolation::Direct => NetEntry::new(false),
                NetIsolation::UserNamespace => NetEntry::new(true),
                NetIsolation::Unavailable(reason) => {
                    return Err(ProcTrackError::Sandbox {
                        reason: format!("no network namespace: {reason}"),
                    });
                }
            })),
        };
        let ruleset = match &sandbox.writable {
            None => None,
            Some(paths) => {
                if let Err(reason) = support.landlock {
                    return Err(ProcTrackError::Sandbox { reason });
                }
                Some(ruleset(paths)?)
            }
        };
        let mounts = match &sandbox.mounts {
            None => None,
            Some(plan) => {
                if let Err(reason) = &support.mounts {
                    return Err(ProcTrackError::Sandbox {
                        reason: reason.clone(),
                    });
                }
                Some((
                    plan.prepare()?,
                    NetEntry::new(!rustix::process::geteuid().is_root()),
                ))
            }
        };
        let filters = if sandbox.harden {
            if let Err(reason) = &support.harden {
                return Err(ProcTrackError::Sandbox {
                    reason: reason.clone(),
                });
            }
            Some(Filters::shared()?)
        } else {
            None
        };
        let abi = ABI::from(i32::try_from(support.landlock_in_force().unwrap_or(0)).unwrap_or(0));
        let handled = AccessFs::from_all(abi);
        let writable = (handled & !devices()).bits();
        let terminals = (AccessFs::from_file(abi) & handled).bits();
        let read = (AccessFs::from_read(abi) & handled).bits();
        Ok(Self {
            ruleset,
            network,
            mounts,
            filters,
            filters_in_shim: false,
            cwd: match (&sandbox.mounts, cwd) {
                // The plan's own working directory is entered by its prepared mounts.
                (Some(plan), _) if plan.cwd.is_some() => None,
                (Some(_), Some(cwd)) => {
                    Some(CString::new(cwd.as_os_str().as_bytes()).map_err(|_| {
                        ProcTrackError::Sandbox {
                            reason: format!("{} holds a NUL byte", cwd.display()),
                        }
                    })?)
                }
                _ => None,
            },
            grants: (writable, terminals, read),
        })
    }

    /// Whether [`Prepared::enter`] would change nothing but the working directory (which
    /// the spawn sets anyway): no namespace, mount, Landlock ruleset or filter.
    pub(crate) fn is_inert(&self) -> bool {
        self.ruleset.is_none()
            && self.network.is_none()
            && self.mounts.is_none()
            && self.filters.is_none()
            && !self.filters_in_shim
    }

    /// Leaves the filters and the capability drop to the shim, which enters them after it
    /// started the agent in its cgroup leaf with `clone3` (the filters refuse `clone3`, and
    /// the fallback, a move into the leaf, waits for an RCU grace period, often 10–20 ms):
    /// the agent enters them between its fork and its exec, the shim right after. Whether
    /// there were filters to hand over.
    pub(crate) fn hand_filters_to_shim(&mut self) -> bool {
        self.filters_in_shim = self.filters.take().is_some();
        self.filters_in_shim
    }

    /// Enters the sandbox: the namespaces first (writing the user-namespace maps is a write
    /// Landlock would refuse), then the mounts and the working directory, then Landlock,
    /// then the filters and the capability drop.
    ///
    /// Runs in the child between fork and exec: system calls only, on memory prepared before
    /// the fork, nothing allocated.
    pub(crate) fn enter(&self) -> io::Result<()> {
        let mount_flag = if self.mounts.is_some() {
            libc::CLONE_NEWNS
        } else {
            0
        };
        match &self.network {
            Some(NetPlan::New(entry)) => enter_network(entry, mount_flag)?,
            Some(NetPlan::Join(shared)) => {
                join(&shared.0)?;
                // SAFETY: `unshare` takes flags only.
                cvt(unsafe { libc::unshare(mount_flag) })?;
            }
            None => {
                if let Some((_, entry)) = &self.mounts {
                    enter_mount_namespace(entry)?;
                }
            }
        }
        if let Some((mounts, _)) = &self.mounts {
            mounts.apply(&|path, kind| self.grant(path, kind))?;
        }
        if let Some(cwd) = self
            .mounts
            .as_ref()
            .and_then(|(m, _)| m.cwd.as_ref())
            .or(self.cwd.as_ref())
        {
            // SAFETY: `cwd` is NUL-terminated.
            cvt(unsafe { libc::chdir(cwd.as_ptr()) })?;
        }
        if self.ruleset.is_some() || self.filters.is_some() || self.filters_in_shim {
            no_new_privs()?;
        }
        if let Some(ruleset) = &self.ruleset {
            // SAFETY: a plain system call on integers; the ruleset descriptor is open (the
            // parent keeps it until the spawn returns).
            unsafe {
                if libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    ruleset.as_raw_fd(),
                    0 as libc::c_uint,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        if let Some(filters) = &self.filters {
            filters.enter()?;
        }
        Ok(())
    }

    /// Adds Landlock rights beneath `path` (a file system made in the child) to the ruleset.
    /// System calls only.
    fn grant(&self, path: &std::ffi::CStr, kind: Grant) -> io::Result<()> {
        let Some(ruleset) = &self.ruleset else {
            return Ok(());
        };
        // SAFETY: `path` is NUL-terminated; the descriptor is closed before returning; the
        // attribute is a valid `landlock_path_beneath_attr`.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let attr = PathBeneathAttr {
                allowed_access: match kind {
                    Grant::Write => self.grants.0,
                    Grant::Terminals => self.grants.1,
                    Grant::Read => self.grants.2,
                },
                parent_fd: fd,
            };
            let result = libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                LANDLOCK_RULE_PATH_BENEATH,
                &raw const attr,
                0 as libc::c_uint,
            );
            let error = io::Error::last_os_error();
            libc::close(fd);
            if result == 0 { Ok(()) } else { Err(error) }
        }
    }
}

/// The rights that make or touch devices, never granted beneath a writable path: a root
/// agent could otherwise make a block device there and write to a disk through it.
fn devices() -> BitFlags<AccessFs> {
    AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev
}

/// The Landlock ruleset: reads everywhere; beneath `writable` every right but the device
/// ones; the file rights on the null-like devices; signals and abstract Unix sockets scoped
/// to the sandbox.
fn ruleset(writable: &[PathBuf]) -> Result<OwnedFd, ProcTrackError> {
    let abi = ABI::V7;
    let failed = |e: landlock::RulesetError| ProcTrackError::Sandbox {
        reason: format!("cannot build the Landlock ruleset: {e}"),
    };
    let open = |path: &Path| {
        PathFd::new(path).map_err(|e| ProcTrackError::Sandbox {
            reason: format!("cannot open {} for the sandbox: {e}", path.display()),
        })
    };
    let mut created = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .and_then(Ruleset::create)
        .map_err(failed)?
        .add_rule(PathBeneath::new(
            open(Path::new("/"))?,
            AccessFs::from_read(abi),
        ))
        .map_err(failed)?;
    for path in writable {
        created = created
            .add_rule(PathBeneath::new(
                open(path)?,
                AccessFs::from_all(abi) & !devices(),
            ))
            .map_err(failed)?;
    }
    for device in DEVICES {
        // A device this machine lacks is simply not granted.
        if let Ok(fd) = PathFd::new(device) {
            created = created
                .add_rule(PathBeneath::new(
                    fd,
                    AccessFs::from_file(abi) & !AccessFs::IoctlDev,
                ))
                .map_err(failed)?;
        }
    }
    Option::<OwnedFd>::from(created).ok_or_else(|| ProcTrackError::Sandbox {
        reason: "the kernel refused to create a Landlock ruleset".to_owned(),
    })
}

fn cvt(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `data` to the file `path` (a `/proc` map). System calls only.
fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `data` is valid for its length; the descriptor is
    // closed before returning.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if usize::try_from(written).ok() == Some(data.len()) {
            Ok(())
        } else {
            Err(error)
        }
    }
}

/// Enters a new network namespace (through a user namespace when `entry` says so), and the
/// namespaces of `extra` (`CLONE_NEWNS`) with it, and brings loopback up. System calls only.
fn enter_network(entry: &NetEntry, extra: libc::c_int) -> io::Result<()> {
    // SAFETY: `unshare` takes flags only.
    if entry.user_namespace {
        cvt(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET | extra) })?;
        write_maps(entry)?;
    } else {
        cvt(unsafe { libc::unshare(libc::CLONE_NEWNET | extra) })?;
    }
    loopback_up()
}

/// Sets `lo` up in the current network namespace.
fn loopback_up() -> io::Result<()> {
    // SAFETY: `ifreq` is plain data, zeroed and then given the interface name; both ioctls
    // read or write only that struct; the socket is closed before returning.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo") {
            *slot = libc::c_char::from_ne_bytes([*byte]);
        }
        let mut result = libc::ioctl(socket, libc::SIOCGIFFLAGS as libc::Ioctl, &raw mut request);
        if result == 0 {
            let up = libc::c_short::try_from(libc::IFF_UP | libc::IFF_RUNNING).unwrap_or(1);
            request.ifr_ifru.ifru_flags |= up;
            result = libc::ioctl(
                socket,
                libc::SIOCSIFFLAGS as libc::Ioctl,
                &raw const request,
            );
        }
        let error = io::Error::last_os_error();
        libc::close(socket);
        if result == 0 { Ok(()) } else { Err(error) }
    }
}

/// Which way of making a network namespace works here, tried in forked children.
fn probe_network() -> NetIsolation {
    let direct = rustix::process::geteuid().is_root().then(|| {
        let entry = NetEntry::new(false);
        in_child(|| enter_network(&entry, 0))
    });
    if let Some(Ok(())) = direct {
        return NetIsolation::Direct;
    }
    let entry = NetEntry::new(true);
    match in_child(|| enter_network(&entry, 0)) {
        Ok(()) => NetIsolation::UserNamespace,
        Err(user) => NetIsolation::Unavailable(match direct {
            Some(Err(direct)) => {
                format!(
                    "unshare(CLONE_NEWNET) failed ({direct}), and so did a user namespace ({user})"
                )
            }
            _ => format!("an unprivileged user namespace cannot be made ({user})"),
        }),
    }
}

/// Runs `work` in a forked child that exits at once; the child's error, if any.
///
/// `work` runs after a fork of a multi-threaded process: it must make system calls only,
/// on memory prepared before, and allocate nothing.
fn in_child(work: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    // SAFETY: the child makes system calls only (on memory prepared before the fork) and
    // leaves with `_exit`, so no lock another thread held at the fork is ever needed.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        let code = match work() {
            Ok(()) => 0,
            Err(e) => e.raw_os_error().unwrap_or(libc::EPERM).clamp(1, 255),
        };
        // SAFETY: ends the child without running anything of the parent's.
        unsafe { libc::_exit(code) }
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child by pid; `status` is a valid out pointer.
        let waited = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if waited == pid {
            break;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, errno) => Err(io::Error::from_raw_os_error(errno)),
        _ => Err(io::Error::other("the probe was killed")),
    }
}

#[cfg(test)]
mod tests;

/// Whether the process `pid` runs inside (or may run inside) an eval's sandbox, with why:
/// its mount namespace is not this process's (every `--sandbox` tree has one of its own), or
/// it runs under a seccomp filter while carrying a run's marker
/// ([`EnvVars::HYOKA_RUN_INSTANCE`]), as a best-effort sandbox without a mount namespace
/// does. A process whose namespace cannot be read is taken for one. `None`: it shares this process's view of the machine.
///
/// A supervisor calls it for each peer of its control socket and refuses the sandboxed
/// ones, whatever their user: an agent must not reach the user's other sessions.
///
/// [`EnvVars::HYOKA_RUN_INSTANCE`]: crate::EnvVars::HYOKA_RUN_INSTANCE
pub fn sandboxed_peer(pid: i32) -> Option<String> {
    let ours = std::fs::read_link("/proc/self/ns/mnt").ok();
    let theirs = std::fs::read_link(format!("/proc/{pid}/ns/mnt")).ok();
    match (ours, theirs) {
        (Some(a), Some(b)) if a == b => {}
        (Some(_), Some(_)) => {
            return Some("it runs in another mount namespace (a sandbox)".to_owned());
        }
        _ => return Some("its mount namespace cannot be read".to_owned()),
    }
    let filtered = std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        s.lines()
            .any(|l| l.split_whitespace().eq(["Seccomp:", "2"]))
    });
    let marked = std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
        env.split(|b| *b == 0)
            .any(|v| v.starts_with(format!("{}=", crate::EnvVars::HYOKA_RUN_INSTANCE).as_bytes()))
    });
    (filtered && marked).then(|| "it runs under a seccomp filter in an eval's tree".to_owned())
}
