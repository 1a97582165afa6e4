//! Starting an eval's agent under every layer (`Tracker::spawn`) or tracking a process that
//! was started by other means (`Tracker::adopt`): the command, the fork on the one spawner
//! thread, what the child does between fork and exec, and the shim's handshake.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rustix::io::FdFlags;

use crate::ProcTrackError;
use crate::agent::Agent;
use crate::cgroup::CgroupLeaf;
use crate::env_vars::marker_env;
use crate::identity::{ProcRef, validate_id};
use crate::proc_table::{NativeProcTable, ProcTable};
use crate::resources::ResourceLeaves;
use crate::sandbox::{Prepared, Sandbox};
use crate::shim::{ShimReport, parse_report, report_lines, shim_args};
use crate::signal::reset_signal_state;
use crate::teardown::TeardownReport;
use crate::tracker::{CgroupMode, Shared, Tracker, lock};

/// Where one of the agent's standard streams goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum StdioMode {
    /// Inherited from hyoka.
    #[default]
    Inherit,
    /// `/dev/null`.
    Null,
    /// A pipe, available as `Agent::stdin` / `stdout` / `stderr`.
    Piped,
}

impl StdioMode {
    fn stdio(self) -> Stdio {
        match self {
            Self::Inherit => Stdio::inherit(),
            Self::Null => Stdio::null(),
            Self::Piped => Stdio::piped(),
        }
    }
}

/// The agent to run: program, arguments, environment, directory and streams.
///
/// The tracker adds `HYOKA_RUN_ID`, `HYOKA_EVAL_ID` and `HYOKA_RUN_INSTANCE` to the
/// environment (overriding any values given here): the marker discovery scans for
/// (see [`Tracker::marker_env`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Start from an empty environment instead of hyoka's.
    pub env_clear: bool,
    /// Variables to set.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory (hyoka's when `None`).
    pub cwd: Option<PathBuf>,
    /// Standard input.
    pub stdin: StdioMode,
    /// Standard output.
    pub stdout: StdioMode,
    /// Standard error.
    pub stderr: StdioMode,
    /// The kernel sandbox of the whole tree (the shim, the agent and its descendants):
    /// confined writes, no network. The default restricts nothing.
    pub sandbox: Sandbox,
    /// The tree's memory, pids and CPU limits (cgroup controllers, see
    /// [`ResourceSupport`](crate::ResourceSupport)). The default limits nothing.
    pub resources: crate::ResourceLimits,
}

impl AgentCommand {
    /// `program` with `args`, hyoka's environment and directory, streams inherited.
    pub fn new<I, S>(program: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }
}

impl Tracker {
    /// Spawns `command` as eval `eval_id`'s agent under every available layer: a cgroup leaf
    /// (joined between fork and exec), the shim (if configured), a new session, the marker.
    ///
    /// Must be called within a tokio runtime. The fork happens on one long-lived dedicated
    /// thread, because the parent-death signal fires when the thread that forked exits.
    ///
    /// # Errors
    /// [`ProcTrackError::Spawn`] when the program (or the shim) cannot be started: the CLI's
    /// `spawn_failed`; [`ProcTrackError::DuplicateEval`]; [`ProcTrackError::Shim`];
    /// [`ProcTrackError::Io`] for the ledger or the cgroup; [`ProcTrackError::Sandbox`] when
    /// the command's sandbox cannot be prepared (a spawn that fails entering it is a
    /// [`ProcTrackError::Spawn`]).
    pub async fn spawn(
        &self,
        eval_id: &str,
        command: AgentCommand,
    ) -> Result<Agent, ProcTrackError> {
        validate_id("eval", eval_id)?;
        if !lock(&self.shared.evals).insert(eval_id.to_owned()) {
            return Err(ProcTrackError::DuplicateEval {
                eval_id: eval_id.to_owned(),
            });
        }
        let result = self.spawn_inner(eval_id, command).await;
        if result.is_err() {
            lock(&self.shared.evals).remove(eval_id);
        }
        result
    }

    /// Tracks a process that was started by other means (a PTY session, for example) as
    /// eval `eval_id`, so that it and everything it starts are contained and torn down like
    /// a spawned agent: it is recorded in the ledger (and [`Agent::refresh`] keeps its
    /// descendants and marker-carrying processes there, so `clean` finds them after a crash),
    /// moved into a cgroup leaf of its own when that layer is available, and stopped with
    /// its whole tree by [`Agent::teardown`].
    ///
    /// Call it right after starting the process: children it forked before being moved into
    /// the leaf stay outside the leaf, though ancestry and the marker still find them. The
    /// process is not a child of the tracker, so [`Agent::wait`] answers
    /// [`AgentExit::Unknown`](crate::AgentExit::Unknown) at once; its own parent waits for it.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`], [`ProcTrackError::DuplicateEval`], or
    /// [`ProcTrackError::InvalidIdentity`] when `pid` is not a live process that may be
    /// tracked (pid ≤ 1, ourselves, our own process group).
    pub fn adopt(&self, eval_id: &str, pid: i32) -> Result<Agent, ProcTrackError> {
        validate_id("eval", eval_id)?;
        let table = NativeProcTable::new();
        let info = table.process(pid).filter(|p| !p.is_gone()).ok_or_else(|| {
            ProcTrackError::InvalidIdentity {
                text: pid.to_string(),
                reason: "no such live process",
            }
        })?;
        if crate::signal::refusal(pid, Some(info.pgid), table.self_pid(), table.self_pgid())
            .is_some()
        {
            return Err(ProcTrackError::InvalidIdentity {
                text: pid.to_string(),
                reason: "pid 1, hyoka itself or hyoka's own process group",
            });
        }
        if !lock(&self.shared.evals).insert(eval_id.to_owned()) {
            return Err(ProcTrackError::DuplicateEval {
                eval_id: eval_id.to_owned(),
            });
        }
        let shared = &self.shared;
        let wanted = shared.create_leaf(eval_id);
        let cgroup_lost = wanted.is_some();
        let leaf = wanted.and_then(Result::ok).and_then(|leaf| {
            let joined = leaf
                .procs_fd()
                .ok()
                .is_some_and(|fd| rustix::io::write(&fd, pid.to_string().as_bytes()).is_ok());
            if joined {
                Some(leaf)
            } else {
                shared.forget_leaf(&leaf, eval_id);
                None
            }
        });
        // Its parent (this process, usually) collects its exit status: never an orphan.
        crate::orphans::owned().insert(info.proc_ref());
        let cgroup_lost = cgroup_lost && leaf.is_none();
        let mut agent = Agent::new(shared, eval_id, info.proc_ref(), leaf);
        agent.cgroup_lost = cgroup_lost;
        agent.adopted = true;
        agent.refresh()?;
        Ok(agent)
    }

    #[expect(
        clippy::too_many_lines,
        reason = "the steps before and after the fork, in order, read best as one sequence"
    )]
    async fn spawn_inner(
        &self,
        eval_id: &str,
        command: AgentCommand,
    ) -> Result<Agent, ProcTrackError> {
        let shared = &self.shared;
        // Built before anything else exists: a sandbox that cannot be had leaves nothing.
        let mut sandbox = Prepared::new(
            &with_launcher(&command.sandbox, shared.shim.as_ref()),
            command.cwd.as_deref(),
        )?;
        let (leaf, cgroup_lost) = match shared.create_leaf(eval_id) {
            Some(Ok(leaf)) => (Some(leaf), false),
            Some(Err(e)) if shared.mode == CgroupMode::Required => return Err(e),
            // The run has the layer, this eval does not: the report says so.
            Some(Err(_)) => (None, true),
            None => (None, false),
        };
        let placeholder = ProcRef {
            pid: 0,
            start_ticks: 0,
        };
        let mut agent = Agent::new(shared, eval_id, placeholder, leaf);
        agent.cgroup_lost = cgroup_lost;
        // With the shim, the agent is born in the leaf (`clone3(CLONE_INTO_CGROUP)`, see
        // `shim`): nothing is moved between cgroups, which waits for an RCU grace period.
        // Otherwise the child joins the leaf between fork and exec, before it enters its
        // sandbox. A sandboxed shim leaves the filters, which refuse `clone3` (they cannot
        // read its flags), until it started the agent, and is given the leaf's
        // `cgroup.procs` for a fallback, whose open Landlock would refuse it.
        let born_in_leaf = shared.shim.is_some();
        let (procs_fd, leaf_dir) = match &agent.leaf {
            Some(leaf) if born_in_leaf => (None, Some(leaf.dir_fd()?)),
            Some(leaf) => (Some(leaf.procs_fd()?), None),
            None => (None, None),
        };
        // Every hardened shim enters the filters itself, made not dumpable first (see `shim`).
        let seccomp_in_shim = shared.shim.is_some() && sandbox.hand_filters_to_shim();
        let fallback_procs = match &agent.leaf {
            Some(leaf) if leaf_dir.is_some() && !sandbox.is_inert() => Some(leaf.procs_fd()?),
            _ => None,
        };
        let mut limit_fds = Vec::new();
        if !command.resources.is_unlimited() {
            let record = |leaf: &Path| shared.update(|l| drop(l.add_cgroup_v1(eval_id, leaf)));
            let created = ResourceLeaves::create(
                &command.resources,
                shared.resource_support(),
                &format!("hyoka-{}-{}", shared.run_id, shared.instance),
                eval_id,
                agent.leaf.as_ref().map(CgroupLeaf::path),
                &record,
            );
            match created {
                Ok((leaves, fds)) => {
                    agent.resources = Some(leaves);
                    limit_fds = fds;
                }
                Err(e) => {
                    agent.torn_down = true;
                    let _ = agent.finish(&TeardownReport::default());
                    return Err(e);
                }
            }
        }
        let limit_raw: Vec<i32> = limit_fds.iter().map(AsRawFd::as_raw_fd).collect();
        let (report_read, report_write) = if shared.shim.is_some() {
            let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                .map_err(|e| ProcTrackError::io("create pipe for", "shim", e.into()))?;
            (Some(r), Some(w))
        } else {
            (None, None)
        };
        let parent = std::process::id();
        let leaf_raw = leaf_dir.as_ref().map(AsRawFd::as_raw_fd);
        let fallback_raw = fallback_procs.as_ref().map(AsRawFd::as_raw_fd);
        let (program, mut cmd) = build_command(
            shared,
            eval_id,
            &command,
            ShimFds {
                report: report_write.as_ref().map(AsRawFd::as_raw_fd),
                leaf: leaf_raw,
                leaf_procs: fallback_raw,
                seccomp: seccomp_in_shim,
            },
            parent,
        );
        let procs_raw = procs_fd.as_ref().map(AsRawFd::as_raw_fd);
        let report_raw = report_write.as_ref().map(AsRawFd::as_raw_fd);
        // The shim does itself what a child of a plain fork would do before exec (see
        // `shim_main`): with nothing left to do between fork and exec, the standard library
        // spawns with `posix_spawn`, which shares this process's memory until the exec
        // instead of copying its page tables, a cost that grows with hyoka's size.
        let direct = report_raw.is_some() && procs_raw.is_none() && limit_raw.is_empty();
        let direct = direct && sandbox.is_inert();
        let inherit: Vec<i32> = [report_raw, leaf_raw, fallback_raw]
            .into_iter()
            .flatten()
            .collect();
        let sandbox = std::sync::Arc::new(sandbox);
        let kept = std::sync::Arc::clone(&sandbox);
        if direct {
            // Its own process group: outside hyoka's, so a terminal's signals reach hyoka
            // alone, and the shim makes the agent's session.
            cmd.process_group(0);
        } else {
            // SAFETY: the closure runs between fork and exec and only makes async-signal-safe
            // system calls (write, setsid, prctl, getppid, fcntl, and the sandbox's unshare,
            // open, ioctl and landlock calls) on descriptors and memory the parent keeps until
            // `spawn` returns; it allocates nothing on success.
            unsafe {
                cmd.as_std_mut().pre_exec(move || {
                    for &fd in &limit_raw {
                        // SAFETY: the parent holds these descriptors open until spawn returns.
                        rustix::io::write(BorrowedFd::borrow_raw(fd), b"0")?;
                    }
                    pre_exec(procs_raw, [report_raw, leaf_raw, fallback_raw], parent)?;
                    sandbox.enter()
                });
            }
        }
        if report_raw.is_some() {
            agent.born_after = crate::proc_table::PidMark::now();
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|e| ProcTrackError::Task {
            reason: e.to_string(),
        })?;
        let spawned = on_spawner(move || {
            let _enter = handle.enter();
            // The record of owned children is held across the fork, so a scan for adopted
            // orphans never takes this child for one (see `orphans`).
            let mut owned = crate::orphans::owned();
            if direct {
                // Inheritable only here, for this spawn: every spawn of this crate runs on
                // this thread, so no other child of ours can inherit them meanwhile.
                for &fd in &inherit {
                    // SAFETY: the descriptors are held open by the caller until spawn returns.
                    let _ = rustix::io::fcntl_setfd(
                        unsafe { BorrowedFd::borrow_raw(fd) },
                        FdFlags::empty(),
                    );
                }
            }
            let spawned = cmd.spawn();
            if let Some(pid) = spawned.as_ref().ok().and_then(tokio::process::Child::id) {
                crate::orphans::own(&mut owned, i32::try_from(pid).unwrap_or(0));
            }
            spawned
        })
        .await?;
        drop(report_write);
        drop(procs_fd);
        drop(leaf_dir);
        drop(fallback_procs);
        drop(limit_fds);
        drop(kept);
        let mut child = match spawned {
            Ok(child) => child,
            Err(source) => {
                agent.torn_down = true;
                let _ = agent.finish(&TeardownReport::default());
                return Err(ProcTrackError::Spawn { program, source });
            }
        };
        agent.stdin = child.stdin.take();
        agent.stdout = child.stdout.take();
        agent.stderr = child.stderr.take();
        let child_pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        let table = NativeProcTable::new();
        let child_ref = ProcRef {
            pid: child_pid,
            start_ticks: table.process(child_pid).map_or(0, |p| p.start_ticks),
        };
        agent.child = Some(child);
        match report_read {
            Some(fd) => {
                agent.shim = Some(child_ref);
                handshake(&mut agent, fd, program, &command.program).await?;
            }
            None => agent.process = child_ref,
        }
        if agent.shim.is_some() {
            agent.record_started()?;
        } else {
            agent.refresh()?;
        }
        Ok(agent)
    }
}

/// `sandbox`, with the shim's program bound back read-only when the mount plan hides it (a
/// hyoka installed in the home): the shim is what the sandboxed child executes first. A
/// shim run from its in-memory image needs no file, and gets no bind (one mount, and a
/// mount point made, fewer per sandboxed spawn).
fn with_launcher(sandbox: &Sandbox, shim: Option<&crate::Launcher>) -> Sandbox {
    let mut sandbox = sandbox.clone();
    if let (Some(plan), Some(shim)) = (&mut sandbox.mounts, shim)
        && shim.image.is_none()
        && let Ok(program) = std::fs::canonicalize(&shim.program)
        && plan.hides(&program)
    {
        plan.mounts.push(crate::Mount::Bind {
            source: program.clone(),
            target: program,
            writable: false,
        });
    }
    sandbox
}

/// The descriptors (and the filters' hand-over) a shim is given.
#[derive(Clone, Copy)]
struct ShimFds {
    report: Option<i32>,
    leaf: Option<i32>,
    leaf_procs: Option<i32>,
    seccomp: bool,
}

fn build_command(
    shared: &Shared,
    eval_id: &str,
    command: &AgentCommand,
    fds: ShimFds,
    parent: u32,
) -> (PathBuf, tokio::process::Command) {
    let (program, mut cmd) = if let Some(launcher) = &shared.shim {
        // The image is the shim alone: `args` (a hidden subcommand) are `program`'s. It is
        // named `hyoka-shim` in `ps`, in `program`'s directory. A sandbox keeps the host's
        // `/proc` (no pid namespace of its own), so its `/proc/self/fd` path serves a
        // sandboxed child too, and Landlock leaves a memfd's internal mount alone.
        let mut cmd = if let Some(image) = &launcher.image {
            let mut cmd = tokio::process::Command::new(image.path());
            cmd.arg0(launcher.program.with_file_name("hyoka-shim"));
            cmd
        } else {
            let mut cmd = tokio::process::Command::new(&launcher.program);
            cmd.args(&launcher.args);
            cmd
        };
        if let Some(fd) = fds.leaf {
            cmd.args(["--cgroup-fd", &fd.to_string()]);
        }
        if let Some(fd) = fds.leaf_procs {
            cmd.args(["--cgroup-procs-fd", &fd.to_string()]);
        }
        if fds.seccomp {
            cmd.args(["--seccomp", "1"]);
        }
        cmd.args(shim_args(
            fds.report.unwrap_or(-1),
            i32::try_from(parent).unwrap_or(0),
            shared.shim_grace,
            command.program.as_os_str(),
            &command.args,
        ));
        (launcher.program.clone(), cmd)
    } else {
        let mut cmd = tokio::process::Command::new(&command.program);
        cmd.args(&command.args);
        (command.program.clone(), cmd)
    };
    if command.env_clear {
        cmd.env_clear();
    }
    let marker = marker_env(&shared.run_id, eval_id, Some(&shared.instance));
    cmd.envs(command.env.iter().map(|(k, v)| (k, v)))
        .envs(marker)
        .stdin(command.stdin.stdio())
        .stdout(command.stdout.stdio())
        .stderr(command.stderr.stdio())
        .kill_on_drop(false);
    if let Some(cwd) = &command.cwd {
        cmd.current_dir(cwd);
    }
    (program, cmd)
}

/// Reads the shim's first report: the agent's identity, or why it could not start.
async fn handshake(
    agent: &mut Agent,
    fd: OwnedFd,
    program: PathBuf,
    agent_program: &Path,
) -> Result<(), ProcTrackError> {
    let mut lines = report_lines(fd).map_err(|e| ProcTrackError::Shim {
        program: program.clone(),
        reason: e.to_string(),
    })?;
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
    agent.report = Some(lines);
    let error = match first {
        Ok(Ok(Some(line))) => match parse_report(&line) {
            Some(ShimReport::Started(r)) => {
                agent.process = r;
                return Ok(());
            }
            Some(ShimReport::SpawnFailed(errno)) => ProcTrackError::Spawn {
                program: agent_program.to_owned(),
                source: std::io::Error::from_raw_os_error(errno),
            },
            _ => ProcTrackError::Shim {
                program,
                reason: format!("unexpected report {line:?}"),
            },
        },
        Err(_) => ProcTrackError::Shim {
            program,
            reason: "no report within 30 s".to_owned(),
        },
        Ok(Err(e)) => ProcTrackError::Shim {
            program,
            reason: e.to_string(),
        },
        Ok(Ok(None)) => ProcTrackError::Shim {
            program,
            reason: "exited without starting the agent".to_owned(),
        },
    };
    agent.abandon().await;
    Err(error)
}

fn pre_exec(procs: Option<i32>, inherit: [Option<i32>; 3], parent: u32) -> std::io::Result<()> {
    reset_signal_state();
    if let Some(fd) = procs {
        // SAFETY: the parent holds this descriptor open until spawn returns.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        rustix::io::write(fd, b"0")?;
    }
    rustix::process::setsid()?;
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
    let ppid = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    if u32::try_from(ppid).ok() != Some(parent) {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    for fd in inherit.into_iter().flatten() {
        // SAFETY: the parent holds this descriptor open until spawn returns.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        rustix::io::fcntl_setfd(fd, FdFlags::empty())?;
    }
    Ok(())
}

type Job = Box<dyn FnOnce() + Send>;

// The CLI moves trackers and agents across tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    const fn assert_send<T: Send>() {}
    assert_send_sync::<Tracker>();
    assert_send::<Agent>();
};

/// Runs `job` on the process's one long-lived spawner thread and returns its result.
async fn on_spawner<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ProcTrackError> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        // The thread lives as long as the process: a parent-death signal set by a child
        // fires when the thread that forked it exits.
        let _ = std::thread::Builder::new()
            .name("hyoka-spawner".into())
            .spawn(move || {
                for job in rx {
                    // A panicking job must not take the spawner, and every later spawn, down.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            });
        Mutex::new(tx)
    });
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(job());
    });
    lock(sender).send(job).map_err(|_| ProcTrackError::Task {
        reason: "spawner thread is gone".to_owned(),
    })?;
    rx.await.map_err(|_| ProcTrackError::Task {
        reason: "spawner thread dropped the request".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mount, MountPlan};

    /// A sandbox whose plan hides `dir` under a tmpfs.
    fn hiding(dir: &Path) -> Sandbox {
        Sandbox {
            mounts: Some(MountPlan {
                mounts: vec![Mount::Tmpfs {
                    target: dir.to_owned(),
                    writable: true,
                }],
                cwd: None,
            }),
            ..Sandbox::default()
        }
    }

    #[test]
    fn a_hidden_shim_file_is_bound_back_unless_the_shim_runs_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let program = std::fs::canonicalize(dir.path())
            .unwrap()
            .join("hyoka-shim");
        std::fs::write(&program, b"#!/bin/sh\n").unwrap();
        let sandbox = hiding(&std::fs::canonicalize(dir.path()).unwrap());
        let mut launcher = crate::Launcher::new(&program, Vec::new());
        let bound = with_launcher(&sandbox, Some(&launcher));
        let mounts = &bound.mounts.as_ref().unwrap().mounts;
        assert_eq!(mounts.len(), 2, "{mounts:?}");
        assert!(
            matches!(&mounts[1], Mount::Bind { source, target, writable: false }
            if *source == program && *target == program)
        );
        launcher.image = Some(crate::ShimImage::new(b"\x7fELF").unwrap());
        let unbound = with_launcher(&sandbox, Some(&launcher));
        assert_eq!(unbound.mounts.as_ref().unwrap().mounts.len(), 1);
    }
}
