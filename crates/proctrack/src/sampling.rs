//! Samples of an agent's tree (CPU ticks and busy children), for telling an agent at work
//! from an idle one.

use std::path::Path;

use crate::ProcTrackError;
use crate::discover::{Scope, discover};
use crate::identity::ProcRef;
use crate::proc_table::{NativeProcTable, ProcTable};

/// One sample of an agent's tree, for telling an agent at work from an idle one (for
/// example `hyoka-idle-detect`'s `ProcessActivity`, from the difference of two samples).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeSample {
    /// CPU the tree has used so far, in clock ticks (`sysconf(_SC_CLK_TCK)`, usually 100
    /// per second). From the cgroup leaf's `cpu.stat` when the agent has one (every process
    /// that ever ran in it, exited ones included); otherwise the sum over the live tracked
    /// processes and the shim of their own and their waited-for children's ticks, which
    /// drops when a process exits before anyone waits for it, so compare samples with a
    /// saturating difference.
    pub cpu_ticks: u64,
    /// Tracked processes other than the agent and the shim that were running or in
    /// uninterruptible sleep (`R`, `D`) when sampled: a build or a test run, not an idle
    /// shell.
    pub busy_children: u32,
}

/// Samples a process tree that is not tracked by an [`Agent`](crate::Agent) (a tmux pane's, for
/// example): `root` and every descendant, found by one `/proc` scan. The CPU is the sum of
/// their own and their waited-for children's ticks; processes deeper than `agent_depth`
/// (0: the root is the agent; 1: the root is a wrapper whose children are the agent) count
/// as busy children when running.
///
/// # Errors
/// [`ProcTrackError::ProcTable`] when `/proc` cannot be read.
pub fn sample_tree(root: ProcRef, agent_depth: u32) -> Result<TreeSample, ProcTrackError> {
    let table = NativeProcTable::new();
    let snapshot = table.snapshot()?;
    let scope = Scope {
        roots: vec![root],
        ..Scope::default()
    };
    let found = discover(&snapshot, &[], &scope, &table);
    let (cpu_ticks, busy_children) = sample_processes(
        found
            .iter()
            .map(|f| (f.info.proc_ref(), f.depth > agent_depth)),
    );
    Ok(TreeSample {
        cpu_ticks,
        busy_children,
    })
}

/// Reads each process's `stat` once: the sum of their CPU ticks (own and waited-for
/// children's), and how many of those flagged as children are running (`R`, `D`). A process
/// whose identity changed, or that is gone, counts for nothing.
pub(crate) fn sample_processes(processes: impl Iterator<Item = (ProcRef, bool)>) -> (u64, u32) {
    let table = NativeProcTable::new();
    let (mut ticks, mut busy) = (0u64, 0u32);
    for (r, child) in processes {
        let Some(info) = table.process(r.pid) else {
            continue;
        };
        if info.start_ticks != r.start_ticks || info.is_gone() {
            continue;
        }
        ticks = ticks.saturating_add(info.cpu_ticks);
        if child && matches!(info.state, 'R' | 'D') {
            busy += 1;
        }
    }
    (ticks, busy)
}

/// `usage_usec` from a cgroup's `cpu.stat`.
pub(crate) fn cgroup_usage_usec(leaf: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(leaf.join("cpu.stat")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse().ok())
}
