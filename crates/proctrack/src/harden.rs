//! Root without power: what a sandboxed tree loses besides its view of the file system.
//!
//! - Every capability: the bounding set is emptied (so no `execve`, even of a set-user-id
//!   program or by root, gives one back), the ambient, inheritable, permitted and effective
//!   sets are cleared, and the secure bits that would let root regain them are locked. With
//!   `no_new_privs` set first, root in the sandbox is a user id like any other: it owns
//!   its files but may not override permissions, change owners, load modules or mount.
//! - A seccomp filter (compiled by `seccompiler` once per process, installed in each child) for
//!   what capabilities and namespaces do not cover: making device nodes (`mknod` of a
//!   character or block device), pushing keystrokes into a terminal (`TIOCSTI`,
//!   `TIOCLINUX`), the kernel keyrings (`keyctl`, `add_key`, `request_key`), `ptrace` and
//!   `process_vm_*` of other processes, loading modules or kernels, every mount call, new
//!   namespaces (`unshare`, `clone` with a `CLONE_NEW*` flag, `setns`), `bpf`, and
//!   `io_uring` (whose operations would not pass through this filter). `clone3`, whose flags
//!   a filter cannot read, fails with `ENOSYS`, so the C library falls back to `clone`.
//!   Setting or removing an extended attribute fails with `ENOTSUP`, as on a file system
//!   without them: so no process of any eval can forge the ownership marker of a workspace
//!   (`user.hyoka.workspace`), its own included.
//!
//! On x86-64 a first filter refuses the x32 system-call numbers, which the other filters
//! would not recognise.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::ProcTrackError;

/// The seccomp filters of a sandbox, compiled in the parent.
#[derive(Debug, Clone)]
pub(crate) struct Filters {
    programs: Vec<Vec<libc::sock_filter>>,
    capabilities: Vec<caps::Capability>,
}

/// `TIOCSTI` and `TIOCLINUX`, which push input into a terminal.
const TERMINAL_INJECTION: [u64; 2] = [0x5412, 0x541C];
/// The `CLONE_NEW*` flags, one rule each.
const NAMESPACE_FLAGS: [i32; 8] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWTIME,
];
/// `setxattrat` and `removexattrat` (Linux 6.13), which the `libc` crate does not name yet;
/// the number is the same on every architecture since the tables were unified.
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;

fn arch() -> Result<TargetArch, ProcTrackError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| ProcTrackError::Sandbox {
        reason: format!("no seccomp filter for this architecture: {e}"),
    })
}

fn failed(e: impl std::fmt::Display) -> ProcTrackError {
    ProcTrackError::Sandbox {
        reason: format!("cannot build the seccomp filter: {e}"),
    }
}

fn condition(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, ProcTrackError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(failed)
}

/// A rule per flag: argument `arg` has that flag set.
fn any_flag(arg: u8, flags: &[u64]) -> Result<Vec<SeccompRule>, ProcTrackError> {
    flags
        .iter()
        .map(|&flag| {
            SeccompRule::new(vec![condition(arg, SeccompCmpOp::MaskedEq(flag), flag)?])
                .map_err(failed)
        })
        .collect()
}

/// A rule per file type: argument `arg` (a mode) is a character or block device.
fn device_mode(arg: u8) -> Result<Vec<SeccompRule>, ProcTrackError> {
    let mask = u64::from(libc::S_IFMT);
    [libc::S_IFCHR, libc::S_IFBLK]
        .into_iter()
        .map(|kind| {
            SeccompRule::new(vec![condition(
                arg,
                SeccompCmpOp::MaskedEq(mask),
                u64::from(kind),
            )?])
            .map_err(failed)
        })
        .collect()
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
) -> Result<Vec<libc::sock_filter>, ProcTrackError> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno.unsigned_abs()),
        arch()?,
    )
    .map_err(failed)?;
    let program: BpfProgram = filter.try_into().map_err(failed)?;
    Ok(program
        .into_iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect())
}

impl Filters {
    /// The filters of this process, compiled on first use and shared by every spawn after
    /// it (they depend on nothing but the architecture): a sandboxed spawn only installs them.
    ///
    /// # Errors
    /// [`ProcTrackError::Sandbox`] when they cannot be compiled (every later call says so
    /// too).
    pub(crate) fn shared() -> Result<&'static Self, ProcTrackError> {
        static FILTERS: std::sync::OnceLock<Result<Filters, String>> = std::sync::OnceLock::new();
        FILTERS
            .get_or_init(|| Self::new().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|reason| ProcTrackError::Sandbox {
                reason: reason.clone(),
            })
    }

    /// Compiles the filters (see the module docs) and lists the capabilities to drop.
    fn new() -> Result<Self, ProcTrackError> {
        let namespace_flags: Vec<u64> = NAMESPACE_FLAGS
            .iter()
            .map(|&f| u64::from(f.unsigned_abs()))
            .collect();
        let mut denied: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for call in [
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_kexec_load,
            libc::SYS_kexec_file_load,
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_mount_setattr,
            libc::SYS_move_mount,
            libc::SYS_open_tree,
            libc::SYS_fsopen,
            libc::SYS_fsmount,
            libc::SYS_fsconfig,
            libc::SYS_fspick,
            libc::SYS_setns,
            libc::SYS_bpf,
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            denied.insert(call, Vec::new());
        }
        denied.insert(libc::SYS_mknodat, device_mode(2)?);
        #[cfg(target_arch = "x86_64")]
        denied.insert(libc::SYS_mknod, device_mode(1)?);
        denied.insert(libc::SYS_ioctl, any_flag_exact(1, &TERMINAL_INJECTION)?);
        denied.insert(libc::SYS_unshare, any_flag(0, &namespace_flags)?);
        denied.insert(libc::SYS_clone, any_flag(0, &namespace_flags)?);
        #[cfg(target_arch = "x86_64")]
        let mut programs = vec![x32_guard(), compile(denied, libc::EPERM)?];
        #[cfg(not(target_arch = "x86_64"))]
        let mut programs = vec![compile(denied, libc::EPERM)?];
        programs.push(compile(
            std::iter::once((libc::SYS_clone3, Vec::new())).collect(),
            libc::ENOSYS,
        )?);
        programs.push(compile(
            [
                libc::SYS_setxattr,
                libc::SYS_lsetxattr,
                libc::SYS_fsetxattr,
                libc::SYS_removexattr,
                libc::SYS_lremovexattr,
                libc::SYS_fremovexattr,
                SYS_SETXATTRAT,
                SYS_REMOVEXATTRAT,
            ]
            .into_iter()
            .map(|call| (call, Vec::new()))
            .collect(),
            libc::ENOTSUP,
        )?);
        Ok(Self {
            programs,
            capabilities: caps::all().into_iter().collect(),
        })
    }

    /// Installs the filters and gives up every capability. `no_new_privs` must be set.
    ///
    /// Runs in the child between fork and exec: system calls only, nothing allocated on
    /// success.
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        let fail = |_| std::io::Error::from_raw_os_error(libc::EPERM);
        // The secure bits first (they need CAP_SETPCAP): root never regains capabilities by
        // exec, and nothing can change that.
        let bits = libc::SECBIT_NOROOT
            | libc::SECBIT_NOROOT_LOCKED
            | libc::SECBIT_NO_SETUID_FIXUP
            | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
            | libc::SECBIT_NO_CAP_AMBIENT_RAISE
            | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        // SAFETY: `prctl` with integers. A process without CAP_SETPCAP (an unprivileged one
        // outside a user namespace) cannot set them, and has no capability to lose anyway.
        let _ = unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) };
        for &cap in &self.capabilities {
            // Dropping needs CAP_SETPCAP; without it the bounding set is the caller's, and
            // the caller has no capabilities to give.
            let _ = caps::drop(None, caps::CapSet::Bounding, cap);
        }
        caps::clear(None, caps::CapSet::Ambient).map_err(fail)?;
        caps::clear(None, caps::CapSet::Inheritable).map_err(fail)?;
        for program in &self.programs {
            let prog = libc::sock_fprog {
                len: u16::try_from(program.len()).unwrap_or(u16::MAX),
                filter: program.as_ptr().cast_mut(),
            };
            // SAFETY: the program lives until exec; the kernel copies it.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &raw const prog,
                )
            };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        caps::clear(None, caps::CapSet::Permitted).map_err(fail)
    }
}

/// One rule per value: argument `arg` equals it (its low 32 bits, as the kernel reads an
/// `ioctl` request).
fn any_flag_exact(arg: u8, values: &[u64]) -> Result<Vec<SeccompRule>, ProcTrackError> {
    values
        .iter()
        .map(|&v| SeccompRule::new(vec![condition(arg, SeccompCmpOp::Eq, v)?]).map_err(failed))
        .collect()
}

/// Refuses the x32 system calls (numbers with bit 30 set) with `ENOSYS`: the other filters
/// match x86-64 numbers only.
#[cfg(target_arch = "x86_64")]
fn x32_guard() -> Vec<libc::sock_filter> {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const NR_OFFSET: u32 = 0;
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: u16::try_from(code).unwrap_or(0),
        jt: 0,
        jf: 0,
        k,
    };
    vec![
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, NR_OFFSET),
        libc::sock_filter {
            code: u16::try_from(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K).unwrap_or(0),
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS.unsigned_abs(),
        ),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}
