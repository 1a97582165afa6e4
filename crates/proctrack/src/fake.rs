//! In-memory fakes of the OS seams, for tests here and downstream (`mock` feature).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::ProcTrackError;
use crate::clock::Clock;
use crate::identity::{BootId, ProcInfo, ProcRef};
use crate::proc_table::{ProcTable, Uids};
use crate::signal::{Delivery, Signal, Signaller, refusal};

/// How a fake process reacts to SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnTerm {
    /// It exits.
    #[default]
    Exit,
    /// It ignores the signal.
    Ignore,
}

/// One signal the fake received, and what it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeCall {
    /// [`Signaller::signal`].
    Signal {
        /// The target.
        target: ProcRef,
        /// The signal.
        signal: Signal,
        /// The answer.
        delivery: Delivery,
    },
    /// [`Signaller::signal_group`].
    Group {
        /// The member it went through.
        member: ProcRef,
        /// The group.
        pgid: i32,
        /// The signal.
        signal: Signal,
        /// The answer.
        delivery: Delivery,
    },
}

#[derive(Debug, Clone)]
struct FakeProc {
    info: ProcInfo,
    environ: Vec<u8>,
    uid: u32,
    on_term: OnTerm,
    respawn: bool,
}

#[derive(Debug)]
struct State {
    procs: BTreeMap<i32, FakeProc>,
    next_pid: i32,
    ticks: u64,
    calls: Vec<FakeCall>,
}

/// An in-memory process table and signaller that agree with each other.
///
/// The calling process is pid 100 in group 100. Processes die on SIGKILL, on SIGTERM unless
/// told to ignore it, and their children are re-parented to pid 1. A process marked with
/// [`FakeSystem::set_respawn`] behaves like a supervisor: each time the table is read while
/// it has no live child, it forks a new one (in its group, with its environment).
#[derive(Debug, Clone)]
pub struct FakeSystem {
    state: Arc<Mutex<State>>,
}

impl Default for FakeSystem {
    fn default() -> Self {
        Self::new()
    }
}

/// The pid the fake reports as the calling process.
pub const FAKE_SELF_PID: i32 = 100;
/// The boot id the fake reports.
pub const FAKE_BOOT_ID: &str = "00000000-0000-4000-8000-000000000001";

impl FakeSystem {
    /// A table holding init (pid 1) and the calling process (pid 100).
    pub fn new() -> Self {
        let fake = Self {
            state: Arc::new(Mutex::new(State {
                procs: BTreeMap::new(),
                next_pid: 1000,
                ticks: 1,
                calls: Vec::new(),
            })),
        };
        fake.insert(1, 0, 1, 1, "init", &[]);
        fake.insert(FAKE_SELF_PID, 1, FAKE_SELF_PID, FAKE_SELF_PID, "hyoka", &[]);
        fake
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn insert(
        &self,
        pid: i32,
        ppid: i32,
        pgid: i32,
        sid: i32,
        comm: &str,
        env: &[(&str, &str)],
    ) -> ProcRef {
        let mut state = self.lock();
        state.ticks += 1;
        let start_ticks = state.ticks;
        let environ = env
            .iter()
            .flat_map(|(k, v)| format!("{k}={v}\0").into_bytes())
            .collect();
        state.procs.insert(
            pid,
            FakeProc {
                info: ProcInfo {
                    pid,
                    ppid,
                    pgid,
                    sid,
                    start_ticks,
                    state: 'S',
                    comm: comm.to_owned(),
                    cpu_ticks: 0,
                },
                environ,
                uid: 0,
                on_term: OnTerm::Exit,
                respawn: false,
            },
        );
        ProcRef { pid, start_ticks }
    }

    /// Forks a process under `ppid`: in the parent's group and session (`new_group: false`),
    /// or as the leader of a new session and group; the environment is inherited from the
    /// parent when `env` is `None`.
    pub fn spawn(
        &self,
        ppid: i32,
        new_group: bool,
        comm: &str,
        env: Option<&[(&str, &str)]>,
    ) -> ProcRef {
        let (pid, parent) = {
            let mut state = self.lock();
            state.next_pid += 1;
            (state.next_pid, state.procs.get(&ppid).cloned())
        };
        let (pgid, sid) = match (&parent, new_group) {
            (Some(p), false) => (p.info.pgid, p.info.sid),
            _ => (pid, pid),
        };
        let r = self.insert(pid, ppid, pgid, sid, comm, env.unwrap_or(&[]));
        if let Some(parent) = parent
            && let Some(child) = self.lock().procs.get_mut(&pid)
        {
            child.uid = parent.uid;
            if env.is_none() {
                child.environ = parent.environ;
            }
        }
        r
    }

    /// Sets how `pid` reacts to SIGTERM.
    pub fn set_on_term(&self, pid: i32, on_term: OnTerm) {
        if let Some(p) = self.lock().procs.get_mut(&pid) {
            p.on_term = on_term;
        }
    }

    /// Makes `pid` belong to user `uid` (real and saved); processes are root's (0) unless told
    /// otherwise, and children inherit their parent's user.
    pub fn set_uid(&self, pid: i32, uid: u32) {
        if let Some(p) = self.lock().procs.get_mut(&pid) {
            p.uid = uid;
        }
    }

    /// Makes `pid` restart a child whenever it has none.
    pub fn set_respawn(&self, pid: i32, respawn: bool) {
        if let Some(p) = self.lock().procs.get_mut(&pid) {
            p.respawn = respawn;
        }
    }

    /// Makes `pid` exit on its own (it is reaped at once; children go to pid 1).
    pub fn exit(&self, pid: i32) {
        Self::remove(&mut self.lock(), pid);
    }

    /// Makes `pid` a zombie (exited, not yet reaped).
    pub fn zombify(&self, pid: i32) {
        if let Some(p) = self.lock().procs.get_mut(&pid) {
            p.info.state = 'Z';
        }
    }

    /// Replaces `pid` by an unrelated process with the same pid and a later start time.
    pub fn reuse_pid(&self, pid: i32, comm: &str) -> ProcRef {
        self.exit(pid);
        self.insert(pid, 1, pid, pid, comm, &[])
    }

    /// The live (non-zombie) processes other than init and the caller.
    pub fn alive(&self) -> Vec<ProcRef> {
        self.lock()
            .procs
            .values()
            .filter(|p| p.info.pid > 1 && p.info.pid != FAKE_SELF_PID && !p.info.is_gone())
            .map(|p| p.info.proc_ref())
            .collect()
    }

    /// Every signal received so far.
    pub fn calls(&self) -> Vec<FakeCall> {
        self.lock().calls.clone()
    }

    fn remove(state: &mut State, pid: i32) {
        state.procs.remove(&pid);
        for p in state.procs.values_mut() {
            if p.info.ppid == pid {
                p.info.ppid = 1;
            }
        }
    }

    fn deliver(state: &mut State, pid: i32, signal: Signal) {
        let Some(p) = state.procs.get(&pid) else {
            return;
        };
        if signal == Signal::Kill || p.on_term == OnTerm::Exit {
            Self::remove(state, pid);
        }
    }

    fn respawn(&self) {
        let parents: Vec<i32> = {
            let state = self.lock();
            state
                .procs
                .values()
                .filter(|p| p.respawn && !p.info.is_gone())
                .filter(|p| !state.procs.values().any(|c| c.info.ppid == p.info.pid))
                .map(|p| p.info.pid)
                .collect()
        };
        for pid in parents {
            self.spawn(pid, false, "respawned", None);
        }
    }

    fn check(state: &State, r: ProcRef) -> Result<&FakeProc, Delivery> {
        let p = state.procs.get(&r.pid).ok_or(Delivery::Gone)?;
        if p.info.start_ticks != r.start_ticks {
            return Err(Delivery::Mismatch);
        }
        if p.info.is_gone() {
            return Err(Delivery::Gone);
        }
        Ok(p)
    }
}

impl ProcTable for FakeSystem {
    fn boot_id(&self) -> Result<BootId, ProcTrackError> {
        BootId::new(FAKE_BOOT_ID)
    }

    fn snapshot(&self) -> Result<Vec<ProcInfo>, ProcTrackError> {
        self.respawn();
        Ok(self.lock().procs.values().map(|p| p.info.clone()).collect())
    }

    fn process(&self, pid: i32) -> Option<ProcInfo> {
        self.lock().procs.get(&pid).map(|p| p.info.clone())
    }

    fn environ(&self, pid: i32) -> Option<Vec<u8>> {
        self.lock().procs.get(&pid).map(|p| p.environ.clone())
    }

    fn uids(&self, pid: i32) -> Option<Uids> {
        self.lock().procs.get(&pid).map(|p| Uids {
            real: p.uid,
            saved: p.uid,
        })
    }

    fn self_pid(&self) -> i32 {
        FAKE_SELF_PID
    }

    fn self_pgid(&self) -> i32 {
        FAKE_SELF_PID
    }
}

impl Signaller for FakeSystem {
    fn signal(&self, target: ProcRef, signal: Signal) -> Delivery {
        let mut state = self.lock();
        let delivery = match refusal(target.pid, None, FAKE_SELF_PID, -1) {
            Some(r) => Delivery::Refused(r),
            None => match Self::check(&state, target) {
                Ok(_) => {
                    Self::deliver(&mut state, target.pid, signal);
                    Delivery::Sent
                }
                Err(d) => d,
            },
        };
        state.calls.push(FakeCall::Signal {
            target,
            signal,
            delivery,
        });
        delivery
    }

    fn signal_group(&self, member: ProcRef, pgid: i32, signal: Signal) -> Delivery {
        let mut state = self.lock();
        let delivery = match refusal(member.pid, Some(pgid), FAKE_SELF_PID, FAKE_SELF_PID) {
            Some(r) => Delivery::Refused(r),
            None => match Self::check(&state, member) {
                Ok(p) if p.info.pgid != pgid => Delivery::Mismatch,
                Ok(_) => {
                    let members: Vec<i32> = state
                        .procs
                        .values()
                        .filter(|p| p.info.pgid == pgid)
                        .map(|p| p.info.pid)
                        .collect();
                    for pid in members {
                        Self::deliver(&mut state, pid, signal);
                    }
                    Delivery::Sent
                }
                Err(d) => d,
            },
        };
        state.calls.push(FakeCall::Group {
            member,
            pgid,
            signal,
            delivery,
        });
        delivery
    }
}

/// A clock that only moves when someone sleeps on it.
#[derive(Debug, Clone)]
pub struct FakeClock {
    start: Instant,
    elapsed: Arc<Mutex<Duration>>,
}

impl FakeClock {
    /// A clock at an arbitrary fixed instant.
    pub fn new(start: Instant) -> Self {
        Self {
            start,
            elapsed: Arc::new(Mutex::new(Duration::ZERO)),
        }
    }

    /// Total time slept so far.
    pub fn elapsed(&self) -> Duration {
        *self
            .elapsed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.start + self.elapsed()
    }

    /// The Unix epoch plus the time slept so far.
    fn wall(&self) -> std::time::SystemTime {
        std::time::SystemTime::UNIX_EPOCH + self.elapsed()
    }

    fn sleep(&self, duration: Duration) {
        let mut elapsed = self
            .elapsed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *elapsed = elapsed.saturating_add(duration);
    }
}
