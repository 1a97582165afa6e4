//! Run-time detection of the containment layers this machine offers.

use serde::Serialize;

use crate::cgroup::CgroupRoot;

/// What the machine offers, detected at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// A writable cgroup v2 tree, or `None`.
    pub cgroup: Option<CgroupRoot>,
    /// Why the cgroup layer is unavailable, when it is.
    pub cgroup_unavailable: Option<String>,
    /// Whether `pidfd_open` works (Linux ≥ 5.3); without it signals are verified but racy.
    pub pidfd: bool,
    /// Whether `PR_SET_CHILD_SUBREAPER` can be queried (Linux ≥ 3.4), which the shim needs.
    pub subreaper: bool,
}

impl Capabilities {
    /// Probes the machine: the cgroup2 mount (creating and removing one probe directory), a
    /// pidfd on ourselves, the subreaper `prctl`.
    pub fn detect() -> Self {
        let (cgroup, cgroup_unavailable) = match CgroupRoot::detect() {
            Ok(root) => (Some(root), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let pidfd = rustix::process::pidfd_open(
            rustix::process::getpid(),
            rustix::process::PidfdFlags::empty(),
        )
        .is_ok();
        let subreaper = rustix::process::child_subreaper().is_ok();
        Self {
            cgroup,
            cgroup_unavailable,
            pidfd,
            subreaper,
        }
    }
}

/// The containment layers one agent actually runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Layers {
    /// In a cgroup v2 leaf of its own.
    pub cgroup: bool,
    /// Under the subreaper shim.
    pub shim: bool,
    /// In a new session and process group (always).
    pub session: bool,
    /// Carrying the `HYOKA_RUN_ID`/`HYOKA_EVAL_ID` marker (always, unless the agent clears it).
    pub marker: bool,
}

/// One containment layer, as named in reports (`cleanup.layers_lost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The eval's cgroup v2 leaf: a process of the tree was found outside it (a process that
    /// may write the root cgroup's `cgroup.procs` can leave).
    Cgroup,
    /// The subreaper shim: it died before teardown asked it to stop (an agent may SIGKILL
    /// it), so its orphans went to hyoka, the next subreaper.
    Shim,
}

impl Layer {
    /// The layer's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cgroup => "cgroup",
            Self::Shim => "shim",
        }
    }
}
