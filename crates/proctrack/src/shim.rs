//! The subreaper shim: a tiny process (like tini) that owns the agent, so that processes
//! which double-fork or `setsid` are re-parented to it and stay visible, and that tears the
//! tree down when hyoka asks or dies.
//!
//! The CLI runs it as the hidden subcommand `hyoka __shim`, calling [`shim_main`] first thing
//! in `main`, before building a runtime or starting any thread. The tracker starts it with
//! [`shim_args`]:
//!
//! ```text
//! <launcher…> [--cgroup-fd <n> [--cgroup-procs-fd <n>]] [--seccomp 1] --report-fd <n> --parent <pid> --grace-ms <ms> -- <program> [args…]
//! ```
//!
//! With `--cgroup-fd`, an inherited descriptor of the eval's cgroup v2 leaf, the shim starts
//! the agent in that leaf with `clone3(CLONE_INTO_CGROUP)`: the agent is born there, and no
//! process is ever moved between cgroups, which costs a wait for an RCU grace period (often
//! 10–20 ms) each time. The shim itself stays outside the leaf. A kernel without
//! `clone3` (before 5.7, or a container whose filter refuses it) gets a fork and a move of
//! the child instead, through `--cgroup-procs-fd` when hyoka opened the leaf's
//! `cgroup.procs` for a sandboxed shim (Landlock would refuse the shim the open).
//!
//! A sandboxed shim enters every layer of the sandbox before its exec but the seccomp
//! filters and the capability drop, which refuse `clone3`: with `--seccomp 1` the agent
//! enters them between its fork and its exec, and the shim right after it started the
//! agent. The shim is made not dumpable first, for its whole life, so the agent cannot use
//! it (by `ptrace` or its `/proc` memory) to reach outside the filters or the leaf.
//!
//! The shim leaves file descriptors 0–2 untouched, so the agent's stdin, stdout and stderr are
//! the ones hyoka gave the shim, and it never writes to them itself. It reports on the
//! inherited pipe `--report-fd`, one line each:
//!
//! - `started <pid> <start_ticks>` once the agent runs;
//! - `spawn-failed <errno>` if it could not be started (the shim then exits 127);
//! - `exited <code>` or `signaled <signal>` when the agent has been reaped.
//!
//! # Theory of operation
//!
//! The shim blocks SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT and SIGUSR1 and takes them
//! synchronously with `sigtimedwait`, so it has no signal handlers and one thread. It marks
//! itself `PR_SET_CHILD_SUBREAPER`, sets `PR_SET_PDEATHSIG` to SIGTERM (hyoka also sets it
//! between fork and exec, from its one long-lived spawner thread, because the signal fires
//! when the *thread* that forked exits) and then compares `getppid()` with `--parent` to close
//! the race of hyoka dying before that. It is the only process that waits for its children
//! (`waitpid(-1)`), so nothing races it for exit statuses; hyoka waits only for the shim.
//! On SIGTERM (from hyoka, or as the parent-death signal) it runs the same verified teardown
//! as hyoka: SIGTERM to every descendant and group, the grace period, SIGKILL rounds until a
//! scan of its tree finds nothing, then it reaps and exits. Once the agent has exited and no
//! child is left, it exits on its own with the agent's status (`128 + n` for a signal).

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::fd::{BorrowedFd, FromRawFd as _, OwnedFd, RawFd};
use std::process::ExitCode;
use std::time::Duration;

use rustix::io::FdFlags;
use rustix::process::WaitOptions;

use tokio::io::{AsyncBufReadExt as _, BufReader, Lines};
use tokio::net::unix::pipe;

use crate::clock::SystemClock;
use crate::discover::Scope;
use crate::identity::ProcRef;
use crate::proc_table::{NativeProcTable, ProcTable};
use crate::signal::{NativeSignaller, reset_signal_state};
use crate::teardown::{Seams, TeardownOptions, teardown};

/// The exit status of the shim when it fails itself (bad arguments, lost parent).
pub const SHIM_FAILURE: u8 = 125;

/// Builds the shim's arguments (what follows the launcher's own program and arguments).
pub fn shim_args(
    report_fd: RawFd,
    parent: i32,
    grace: Duration,
    program: &OsStr,
    args: &[OsString],
) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![
        "--report-fd".into(),
        report_fd.to_string().into(),
        "--parent".into(),
        parent.to_string().into(),
        "--grace-ms".into(),
        // A grace too long for milliseconds in a u64 (centuries) is as good as forever.
        grace
            .as_millis()
            .min(u128::from(u64::MAX))
            .to_string()
            .into(),
        "--".into(),
        program.to_owned(),
    ];
    out.extend(args.iter().cloned());
    out
}

/// One line of the shim's report protocol (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShimReport {
    /// `started <pid> <start_ticks>`: the agent runs.
    Started(ProcRef),
    /// `spawn-failed <errno>`: the agent could not be started.
    SpawnFailed(i32),
    /// `exited <code>`: the agent exited and was reaped.
    Exited(i32),
    /// `signaled <signal>`: a signal ended the agent, which was reaped.
    Signaled(i32),
    /// `empty 0`: after the agent, the shim reaped its last child and exits. A subreaper
    /// with no child has no living descendant: whatever the tree started (a daemon re-parented
    /// to the shim included) is gone.
    Empty,
}

impl ShimReport {
    /// The line the shim writes, newline included.
    fn line(self) -> String {
        match self {
            Self::Started(r) => format!("started {} {}\n", r.pid, r.start_ticks),
            Self::SpawnFailed(errno) => format!("spawn-failed {errno}\n"),
            Self::Exited(code) => format!("exited {code}\n"),
            Self::Signaled(signal) => format!("signaled {signal}\n"),
            Self::Empty => "empty 0\n".to_owned(),
        }
    }
}

/// Parses one report line (without its newline); `None` for anything else.
pub(crate) fn parse_report(line: &str) -> Option<ShimReport> {
    let mut words = line.split_ascii_whitespace();
    let kind = words.next()?;
    let a: i64 = words.next()?.parse().ok()?;
    let int = |v: i64| i32::try_from(v).ok();
    let report = match kind {
        "started" => ShimReport::Started(ProcRef {
            pid: int(a)?,
            start_ticks: words.next()?.parse().ok()?,
        }),
        "spawn-failed" => ShimReport::SpawnFailed(int(a)?),
        "exited" => ShimReport::Exited(int(a)?),
        "signaled" => ShimReport::Signaled(int(a)?),
        "empty" if a == 0 => ShimReport::Empty,
        _ => return None,
    };
    words.next().is_none().then_some(report)
}

/// The tracker's end of the report pipe, as lines.
pub(crate) fn report_lines(fd: OwnedFd) -> std::io::Result<Lines<BufReader<pipe::Receiver>>> {
    let receiver = pipe::Receiver::from_owned_fd(fd)?;
    Ok(BufReader::new(receiver).lines())
}

#[derive(Debug, PartialEq, Eq)]
struct ShimArgs {
    cgroup_fd: Option<RawFd>,
    /// The leaf's `cgroup.procs`, opened by hyoka, for a kernel (or a container's filter)
    /// without `clone3`: a sandboxed shim may not open it itself (Landlock).
    cgroup_procs_fd: Option<RawFd>,
    /// Enter the sandbox's seccomp filters and capability drop once the agent runs (the
    /// agent enters them before its exec).
    seccomp: bool,
    report_fd: RawFd,
    parent: i32,
    grace: Duration,
    program: OsString,
    args: Vec<OsString>,
}

fn parse_args(args: impl IntoIterator<Item = OsString>) -> Option<ShimArgs> {
    let mut args = args.into_iter();
    let (mut report_fd, mut parent, mut grace) = (None, None, Duration::from_secs(5));
    let (mut cgroup_fd, mut cgroup_procs_fd, mut seccomp) = (None, None, false);
    loop {
        let flag = args.next()?;
        if flag == "--" {
            break;
        }
        let value = args.next()?;
        let value = value.to_str()?;
        match flag.to_str()? {
            "--report-fd" => report_fd = Some(value.parse().ok()?),
            "--cgroup-fd" => cgroup_fd = Some(value.parse().ok().filter(|&fd| fd > 2)?),
            "--cgroup-procs-fd" => {
                cgroup_procs_fd = Some(value.parse().ok().filter(|&fd| fd > 2)?);
            }
            "--seccomp" if value == "1" => seccomp = true,
            "--parent" => parent = Some(value.parse().ok()?),
            "--grace-ms" => grace = Duration::from_millis(value.parse().ok()?),
            _ => return None,
        }
    }
    let program = args.next()?;
    Some(ShimArgs {
        cgroup_fd,
        cgroup_procs_fd,
        seccomp,
        report_fd: report_fd.filter(|&fd| fd > 2)?,
        parent: parent.filter(|&p| p > 0)?,
        grace,
        program,
        args: args.collect(),
    })
}

/// The shim's entry point: runs the agent in argument list `args` (without the program name
/// and the subcommand) and returns the agent's exit status.
///
/// Call it before any other thread exists: signals are blocked only in the calling thread,
/// so the shim refuses to run (exit status [`SHIM_FAILURE`]) when the process has more than
/// one thread.
pub fn shim_main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    // Started from a memfd, the kernel names the process after the descriptor (`9`): `ps -e`,
    // `top`, `pgrep`, the ledger and `hyoka ps` show this name instead.
    let _ = rustix::thread::set_name(c"hyoka-shim");
    let Some(args) = parse_args(args) else {
        return ExitCode::from(SHIM_FAILURE);
    };
    // SAFETY: `fcntl(F_GETFD)` only inspects the descriptor number; a closed number fails.
    let valid = rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(args.report_fd) }).is_ok();
    if !valid {
        return ExitCode::from(SHIM_FAILURE);
    }
    // SAFETY: the descriptor is open (checked above) and was handed to us, and only us, by
    // the parent; from here on this `File` owns it.
    let mut report = unsafe { std::fs::File::from_raw_fd(args.report_fd) };
    // The agent must not inherit the report pipe.
    let _ = rustix::io::fcntl_setfd(&report, FdFlags::CLOEXEC);
    let mut say = |line: String| {
        let _ = report.write_all(line.as_bytes());
    };
    for fd in [args.cgroup_fd, args.cgroup_procs_fd].into_iter().flatten() {
        // SAFETY: `fcntl` on a descriptor number only; a closed one fails.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        if rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC).is_err() {
            say("shim-error bad --cgroup-fd\n".into());
            return ExitCode::from(SHIM_FAILURE);
        }
    }
    if thread_count() != Some(1) {
        say("shim-error more than one thread\n".into());
        return ExitCode::from(SHIM_FAILURE);
    }
    let set = block_signals();
    let me = rustix::process::getpid();
    let _ = rustix::process::set_child_subreaper(Some(me));
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM));
    if rustix::process::getppid().map(|p| p.as_raw_nonzero().get()) != Some(args.parent) {
        say("shim-error parent already gone\n".into());
        return ExitCode::from(SHIM_FAILURE);
    }

    let filters = if args.seccomp {
        let Ok(filters) = crate::harden::Filters::shared() else {
            say(ShimReport::SpawnFailed(libc::EPERM).line());
            return ExitCode::from(127);
        };
        Some(filters)
    } else {
        None
    };
    let agent = match start_sandboxed_agent(&args, filters) {
        Ok(pid) => pid,
        Err(errno) => {
            say(ShimReport::SpawnFailed(errno).line());
            return ExitCode::from(127);
        }
    };
    // The child stays ours until we reap it, so its pid cannot name anyone else yet.
    let table = NativeProcTable::new();
    let ticks = table.process(agent).map_or(0, |p| p.start_ticks);
    say(ShimReport::Started(ProcRef {
        pid: agent,
        start_ticks: ticks,
    })
    .line());

    let mut status: Option<i32> = None;
    loop {
        match wait_signal(&set, Duration::from_secs(1)) {
            Some(libc::SIGCHLD) | None => {
                if reap(agent, &mut status, &mut say) {
                    if status.is_some() && no_children() {
                        say(ShimReport::Empty.line());
                    }
                    break;
                }
            }
            Some(_) => {
                tear_down_tree(me.as_raw_nonzero().get(), args.grace);
                // Reap what the teardown stopped; a child stuck in the kernel must not keep
                // the shim alive forever, so this is bounded (its zombie goes to init).
                for _ in 0..50 {
                    if reap(agent, &mut status, &mut say) || no_children() {
                        break;
                    }
                    wait_signal(&set, Duration::from_millis(100));
                }
                break;
            }
        }
    }
    ExitCode::from(exit_byte(status))
}

/// `CLONE_INTO_CGROUP` (Linux 5.7): the child starts in the cgroup `clone_args.cgroup` names.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `struct clone_args` of `clone3` (the version with `cgroup`, `CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Starts the agent (in its own session, signals reset, through `PATH` like `execvp`), in
/// the cgroup of `--cgroup-fd` when given; its pid, or the errno of what failed. The shim has
/// one thread (checked before), so its child may run any code until it executes.
fn start_agent(args: &ShimArgs, filters: Option<&crate::harden::Filters>) -> Result<i32, i32> {
    use std::os::unix::ffi::OsStrExt as _;
    let cstr = |s: &OsStr| std::ffi::CString::new(s.as_bytes()).map_err(|_| libc::EINVAL);
    let program = cstr(&args.program)?;
    let argv_owned: Vec<std::ffi::CString> = std::iter::once(args.program.as_os_str())
        .chain(args.args.iter().map(OsString::as_os_str))
        .map(cstr)
        .collect::<Result<_, _>>()?;
    let mut argv: Vec<*const libc::c_char> = argv_owned.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let (err_read, err_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(rustix::io::Errno::raw_os_error)?;
    // Without `clone3`, the child is forked and then moved into the leaf.
    let mut join: Option<OwnedFd> = None;
    let pid = match args.cgroup_fd {
        Some(fd) => {
            let clone = CloneArgs {
                flags: CLONE_INTO_CGROUP,
                exit_signal: libc::SIGCHLD as u64,
                cgroup: u64::try_from(fd).unwrap_or(0),
                ..CloneArgs::default()
            };
            // SAFETY: `clone3` without `CLONE_VM` is a fork: the child gets a copy of this
            // single-threaded process; `clone` is a valid `clone_args` of the size given.
            let pid = unsafe {
                libc::syscall(libc::SYS_clone3, &raw const clone, size_of::<CloneArgs>())
            };
            if pid >= 0 {
                pid
            } else {
                join = Some(if let Some(procs) = args.cgroup_procs_fd {
                    // SAFETY: the inherited descriptor of the leaf's `cgroup.procs`, ours alone.
                    unsafe { OwnedFd::from_raw_fd(procs) }
                } else {
                    // SAFETY: `fd` is the inherited descriptor of the leaf's directory.
                    let dir = unsafe { BorrowedFd::borrow_raw(fd) };
                    rustix::fs::openat(
                        dir,
                        "cgroup.procs",
                        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                        rustix::fs::Mode::empty(),
                    )
                    .map_err(rustix::io::Errno::raw_os_error)?
                });
                // SAFETY: a fork of a single-threaded process.
                libc::c_long::from(unsafe { libc::fork() })
            }
        }
        // SAFETY: a fork of a single-threaded process.
        None => libc::c_long::from(unsafe { libc::fork() }),
    };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EAGAIN));
    }
    if pid == 0 {
        // The child: it never returns.
        reset_signal_state();
        let failed = (|| -> Result<(), rustix::io::Errno> {
            if let Some(fd) = &join {
                rustix::io::write(fd, b"0")?;
            }
            rustix::process::setsid()?;
            if let Some(filters) = filters {
                filters.enter().map_err(|e| {
                    rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::PERM)
                })?;
            }
            // SAFETY: `program` and `argv` are NUL-terminated and outlive the call, which
            // only returns on failure.
            unsafe { libc::execvp(program.as_ptr(), argv.as_ptr()) };
            Err(rustix::io::Errno::from_raw_os_error(
                std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::ENOEXEC),
            ))
        })();
        let errno = failed
            .err()
            .map_or(libc::ENOEXEC, rustix::io::Errno::raw_os_error);
        let _ = rustix::io::write(&err_write, &errno.to_ne_bytes());
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(127) };
    }
    drop(err_write);
    drop(join);
    let pid = i32::try_from(pid).unwrap_or(-1);
    let mut errno = [0u8; 4];
    let mut got = 0;
    while got < errno.len() {
        match rustix::io::read(&err_read, &mut errno[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    if got == 0 {
        return Ok(pid);
    }
    let _ = rustix::process::waitpid(rustix::process::Pid::from_raw(pid), WaitOptions::empty());
    Err(i32::from_ne_bytes(errno))
}

/// [`start_agent`], then, for a sandboxed tree (`filters`), the shim enters the filters and
/// the capability drop the agent entered before its exec. The shim stays outside the
/// agent's cgroup leaf, so it is made not dumpable first, for good: an agent of the same
/// user can neither trace it nor write its memory through `/proc`, to make it call `clone3`
/// before it entered the filters, or start processes outside the leaf (and its limits)
/// after. An agent whose shim cannot follow it into the filters is killed.
fn start_sandboxed_agent(
    args: &ShimArgs,
    filters: Option<&crate::harden::Filters>,
) -> Result<i32, i32> {
    let Some(filters) = filters else {
        return start_agent(args, None);
    };
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(rustix::io::Errno::raw_os_error)?;
    let agent = start_agent(args, Some(filters))?;
    if let Err(e) = filters.enter() {
        // SAFETY: `kill` and `waitpid` on our own unreaped child.
        unsafe { libc::kill(agent, libc::SIGKILL) };
        let _ =
            rustix::process::waitpid(rustix::process::Pid::from_raw(agent), WaitOptions::empty());
        return Err(e.raw_os_error().unwrap_or(libc::EPERM));
    }
    Ok(agent)
}

fn exit_byte(status: Option<i32>) -> u8 {
    let code = match status {
        Some(raw) if libc::WIFEXITED(raw) => libc::WEXITSTATUS(raw),
        Some(raw) if libc::WIFSIGNALED(raw) => 128 + libc::WTERMSIG(raw),
        _ => 128 + libc::SIGTERM,
    };
    u8::try_from(code & 0xff).unwrap_or(1)
}

fn thread_count() -> Option<usize> {
    std::fs::read_dir("/proc/self/task")
        .ok()
        .map(Iterator::count)
}

fn block_signals() -> libc::sigset_t {
    // SAFETY: `sigset_t` is plain data; `sigemptyset`/`sigaddset` initialise it, and
    // `pthread_sigmask` only changes the calling (single) thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        for sig in [
            libc::SIGCHLD,
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGUSR1,
        ] {
            libc::sigaddset(&raw mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
        set
    }
}

/// Waits up to `timeout` for one of the blocked signals; `None` on timeout.
fn wait_signal(set: &libc::sigset_t, timeout: Duration) -> Option<i32> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().try_into().unwrap_or(1),
        tv_nsec: libc::c_long::from(timeout.subsec_nanos()),
    };
    // SAFETY: `set` is an initialised signal set, the info pointer may be null, and `ts` is a
    // valid timespec that outlives the call.
    let sig = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &raw const ts) };
    (sig > 0).then_some(sig)
}

/// Reaps every child that has exited; reports the agent's status. Returns true when the agent
/// has been reaped and no child is left.
fn reap(agent: i32, status: &mut Option<i32>, say: &mut impl FnMut(String)) -> bool {
    loop {
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(Some((pid, st))) => {
                if pid.as_raw_nonzero().get() == agent {
                    let raw = st.as_raw();
                    *status = Some(raw);
                    say(if libc::WIFEXITED(raw) {
                        ShimReport::Exited(libc::WEXITSTATUS(raw)).line()
                    } else {
                        ShimReport::Signaled(libc::WTERMSIG(raw)).line()
                    });
                }
            }
            Ok(None) => return false,
            Err(_) => return status.is_some() || no_children(),
        }
    }
}

fn no_children() -> bool {
    matches!(
        rustix::process::wait(WaitOptions::NOHANG),
        Err(rustix::io::Errno::CHILD)
    )
}

fn tear_down_tree(me: i32, grace: Duration) {
    let table = NativeProcTable::new();
    let signaller = NativeSignaller::new();
    let scope = Scope {
        roots: table
            .process(me)
            .map(|p| p.proc_ref())
            .into_iter()
            .collect(),
        ..Scope::default()
    };
    let seams = Seams {
        table: &table,
        signaller: &signaller,
        clock: &SystemClock,
    };
    teardown(seams, &scope, &[], &TeardownOptions::with_grace(grace));
}

#[cfg(test)]
mod tests;
