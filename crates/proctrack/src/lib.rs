//! Process identity, layered containment, discovery, the pid ledger and verified teardown.
//!
//! Nothing an agent starts outlives its run, however it detaches, and nothing that is not
//! the run's is ever signalled.
//!
//! # Overview
//!
//! - [`Tracker`] is one run: it holds the [`OwnerLock`] and the [`Ledger`]; its
//!   [`Tracker::spawn`] starts an eval's agent ([`AgentCommand`]) as an [`Agent`] under every
//!   layer the machine offers ([`Capabilities`], [`Layers`]); [`Agent::wait`],
//!   [`Agent::refresh`] and [`Agent::teardown`] (a [`TeardownReport`]) follow.
//! - The layers: a cgroup v2 leaf per eval ([`CgroupRoot`], [`CgroupLeaf`]); the subreaper
//!   shim ([`shim_main`], started through a [`Launcher`]), and the tracker's own process as
//!   the next subreaper (its adopted orphans are [`Source::Orphan`]); a new session and
//!   process group; discovery by a direct `/proc` scan ([`discover`]) of descendants, process
//!   groups and the run [`Instance`]'s [`Marker`] ([`marker_env`]; every variable's name is
//!   declared once, in [`EnvVars`]). A layer an agent defeats is reported as lost
//!   ([`Layer`]).
//! - Identity: [`Identity`] (pid, start ticks, [`BootId`]) and [`ProcRef`]; every signal goes
//!   through a [`Signaller`] that re-verifies it (see [`Delivery`]).
//! - `clean` and `ps`: [`clean_run`] and [`clean_runs`] ([`CleanOptions`], [`CleanReport`]),
//!   [`list_runs`] and [`live_runs`] ([`RunListing`]). A reports directory is evidence, not a
//!   command: it is read through the checks of [`ProcTrackError::Untrusted`], and `clean`
//!   acts with its owner's power only ([`Authority`]); [`check_reports_dir`] and
//!   [`read_reports_file`] serve `hyoka-eval` and the CLI.
//! - The kernel sandbox ([`Sandbox`] on an [`AgentCommand`]): Landlock confines the tree's
//!   writes to a few paths and a network namespace ([`Network::None`]) takes its network away,
//!   entered between fork and exec so nothing the agent starts escapes it;
//!   [`SandboxSupport::detect`] says what the machine offers.
//! - Seams: [`ProcTable`], [`Signaller`], [`Clock`] with [`NativeProcTable`],
//!   [`NativeSignaller`], [`SystemClock`]; with the `mock` feature also `FakeSystem`,
//!   `FakeClock` and the `mockall` mocks `MockProcTable` and `MockSignaller`.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use hyoka_proctrack::{AgentCommand, Launcher, StdioMode, TeardownOptions, Tracker, TrackerOptions};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let mut options = TrackerOptions::new("20261129-120000-abc123", "reports");
//! options.shim = Some(Launcher::new(std::env::current_exe()?, vec!["__shim".into()]));
//! let tracker = Tracker::start(options)?;
//! let mut command = AgentCommand::new("claude", ["-p", "fix the bug"]);
//! command.stdout = StdioMode::Piped;
//! let mut agent = tracker.spawn("main", command).await?;
//! let exit = tokio::time::timeout(Duration::from_secs(600), agent.wait()).await;
//! let report = agent.teardown(TeardownOptions::with_grace(Duration::from_secs(5))).await?;
//! println!("{exit:?}: {} seen, {} killed, {} survivors",
//!     report.processes_seen, report.processes_killed, report.survivors);
//! tracker.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! # Testing with fakes and mocks
//!
//! With the `mock` feature, [`teardown`] and the other decisions run against `FakeSystem`, a
//! process table and signaller in memory, on a `FakeClock`: a downstream crate tests its
//! policy on exact timelines, without a real process. (`MockProcTable` and `MockSignaller`
//! are `mockall` mocks of the same seams.)
//!
//! ```
//! # #[cfg(feature = "mock")] {
//! use std::time::{Duration, Instant};
//! use hyoka_proctrack::{
//!     FakeClock, FakeSystem, OnTerm, ProcessFate, Scope, Seams, TeardownOptions, teardown,
//! };
//!
//! let fake = FakeSystem::new();
//! # #[expect(clippy::disallowed_methods, reason = "the fake clock starts somewhere")]
//! let clock = FakeClock::new(Instant::now());
//! // An agent (its own group) with a child that ignores SIGTERM.
//! let agent = fake.spawn(100, true, "agent", None);
//! let stubborn = fake.spawn(agent.pid, false, "stubborn", None);
//! fake.set_on_term(stubborn.pid, OnTerm::Ignore);
//!
//! let seams = Seams { table: &fake, signaller: &fake, clock: &clock };
//! let scope = Scope { roots: vec![agent], ..Scope::default() };
//! let report = teardown(seams, &scope, &[], &TeardownOptions::with_grace(Duration::from_secs(2)));
//!
//! let outcome = |pid| report.processes.iter().find(|p| p.pid == pid).map(|p| p.outcome);
//! assert_eq!(outcome(agent.pid), Some(ProcessFate::Terminated));
//! assert_eq!(outcome(stubborn.pid), Some(ProcessFate::Killed));
//! assert_eq!(report.survivors, 0);
//! // SIGKILL came exactly when the grace period ran out, in virtual time.
//! assert!(clock.elapsed() >= Duration::from_secs(2));
//! assert!(fake.alive().is_empty());
//! # }
//! ```
//!
//! # Theory of operation
//!
//! A run takes `reports/<run_id>/owner.lock` (`flock`, close-on-exec) and writes the ledger
//! `pids.txt` before anything is spawned. Each agent is forked on one long-lived spawner
//! thread; between fork and exec the child writes `0` to the leaf's `cgroup.procs` (so it is
//! contained before it can fork), calls `setsid`, sets its parent-death signal and checks
//! `getppid`. With a launcher, that child is the shim, which makes itself a subreaper and
//! starts the agent in a session of its own; the agent's streams pass through it unchanged
//! and its exit status comes back over a pipe.
//!
//! While the agent runs, [`Agent::refresh`] scans `/proc` (cgroup members, descendants of the
//! shim or agent, groups they lead, the marker in `environ`) and rewrites the ledger
//! atomically when the set changes. [`Agent::teardown`] SIGTERMs every verified process and
//! group, waits up to the grace period polling `/proc` (zombies count as gone), then runs
//! SIGKILL rounds — `cgroup.kill` first when there is a leaf — until a scan finds nothing or
//! the kill timeout runs out, stops the shim last, removes the leaf and updates the ledger.
//! Every signal is sent through a pidfd opened *before* the start time is re-checked.
//!
//! If hyoka is SIGKILLed, the shim receives its parent-death signal and tears its tree down;
//! whatever it cannot reach (no shim, or an escapee from it) is found by the next
//! [`clean_run`] through the ledger, the recorded cgroup leaf and the instance marker. If
//! instead the agent SIGKILLs the shim, its orphans come to the tracker's process, a
//! subreaper since [`Tracker::start`]: the agent notices the shim's death, reports
//! [`Layer::Shim`] lost and attributes those orphans from then on. They are told apart from
//! the process's own children by their session and by the record of children the tracker
//! started (taken while forking), and their zombies are reaped by pid only, never with
//! `waitpid(-1)`, so the statuses tokio waits for are never stolen.
#![warn(
    clippy::disallowed_methods,
    reason = "libraries read no environment and take time from their callers"
)]
#![allow(
    clippy::similar_names,
    reason = "pid, ppid, pgid and sid are the kernel's names and read best as such"
)]

mod agent;
mod caps;
mod cgroup;
mod clean;
mod clock;
mod discover;
mod env_vars;
mod error;
mod evidence;
#[cfg(any(test, feature = "mock"))]
mod fake;
mod group;
mod harden;
mod identity;
mod instance;
mod ledger;
mod lock;
mod mounts;
mod orphans;
mod proc_table;
mod resources;
mod sampling;
mod sandbox;
mod shim;
mod shim_image;
mod signal;
mod spawn;
mod status;
mod teardown;
mod tracker;
mod trust;

pub use crate::agent::{Agent, AgentExit, Refresh};
pub use crate::caps::{Capabilities, Layer, Layers};
pub use crate::cgroup::{
    CgroupLeaf, CgroupMounts, CgroupRoot, cgroup1_mounts, cgroup2_mount, own_cgroup,
};
pub use crate::clean::{
    CgroupCleanup, CleanOptions, CleanReport, CleanedProcess, ListedProcess, RunListing,
    SkipReason, Skipped, clean_run, clean_run_with, clean_runs, list_runs, list_runs_with,
    live_runs,
};
pub use crate::clock::{Clock, SystemClock};
pub use crate::discover::{Found, Marker, Scope, Source, discover};
pub use crate::env_vars::{EnvVars, marker_env};
pub use crate::error::ProcTrackError;
pub use crate::evidence::MAX_LEDGER_BYTES;
#[cfg(feature = "mock")]
pub use crate::fake::{FAKE_BOOT_ID, FAKE_SELF_PID, FakeCall, FakeClock, FakeSystem, OnTerm};
pub use crate::group::{GroupChild, GroupExit};
pub use crate::identity::{BootId, Identity, ProcInfo, ProcRef, owner_running, parse_stat};
pub use crate::instance::Instance;
pub use crate::ledger::{
    EvalPath, LEDGER_FILE, Ledger, LedgerEntry, LedgerProblem, ParsedLedger, write_atomic,
    write_atomic_file_synced, write_atomic_unsynced, write_atomic_with,
};
pub use crate::lock::{LOCK_FILE, LockState, OwnerLock};
pub use crate::mounts::{Mount, MountPlan};
#[cfg(feature = "mock")]
pub use crate::proc_table::MockProcTable;
pub use crate::proc_table::{NativeProcTable, ProcTable, Uids};
pub use crate::resources::{Controller, Hierarchy, ResourceLimits, ResourceSupport, ResourceUsage};
pub use crate::sampling::{TreeSample, sample_tree};
pub use crate::sandbox::{
    DEVICES, LANDLOCK_TARGET_ABI, MIN_LANDLOCK_ABI, NetIsolation, NetNamespace, Network, Sandbox,
    SandboxSupport, sandboxed_peer,
};
pub use crate::shim::{SHIM_FAILURE, shim_args, shim_main};
pub use crate::shim_image::ShimImage;
#[cfg(feature = "mock")]
pub use crate::signal::MockSignaller;
pub use crate::signal::{Delivery, NativeSignaller, Refusal, Signal, Signaller, refusal};
pub use crate::spawn::{AgentCommand, StdioMode};
pub use crate::status::{
    Counts, MAX_STATUS_BYTES, PhaseNow, SESSION_PHASE, STATUS_FILE, read_status, remove_status,
    write_status,
};
pub use crate::teardown::{
    Escalation, ProcessFate, ProcessReport, Seams, TeardownOptions, TeardownReport, teardown,
};
pub use crate::tracker::{CgroupMode, Launcher, Tracker, TrackerOptions};
pub use crate::trust::{Authority, ReportsUse, check_reports_dir, read_reports_file};
