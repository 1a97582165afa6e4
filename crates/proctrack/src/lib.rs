//! Process identity, layered containment, discovery, the pid ledger and verified teardown.
//!
//! This crate will own everything hyoka knows about the processes an agent starts: their
//! identity (pid, start time in clock ticks, boot id), the containment layers (a cgroup v2
//! leaf, a subreaper shim, a new session and process group, an environment-marker scan), the
//! crash-safe ledger `reports/<run_id>/pids.txt`, teardown with re-verification before every
//! signal, and the sweep that `hyoka clean` runs after a crash.
