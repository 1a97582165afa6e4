//! Resource limits of a spawned tree, through cgroup controllers: memory, pids and CPU.
//!
//! Each controller is used from the cgroup v2 tree when the run's cgroup there can have it
//! (the tracker's own cgroup delegates it: `cgroup.subtree_control`), else from a cgroup v1
//! hierarchy that has it (hybrid hosts mount `memory`, `pids` and `cpu` as v1 and leave the
//! v2 tree without them). [`ResourceSupport::detect`] says where each one is, or why it is
//! missing; a tree spawned with [`ResourceLimits`] joins one leaf per hierarchy between fork
//! and exec, before it can fork, so a fork bomb is held from its first child.
//!
//! What a leaf reports ([`ResourceUsage`]): the memory peak and the kernel's OOM kills in it,
//! the pids peak and how often a fork was refused, the CPU time used.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::ProcTrackError;
use crate::cgroup::CgroupRoot;

/// The limits of one spawned tree; `None` leaves a resource unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ResourceLimits {
    /// Bytes of memory (and swap: none beyond it) the tree may use.
    pub memory: Option<u64>,
    /// Processes and threads the tree may have at once.
    pub pids: Option<u64>,
    /// Thousandths of a CPU's time per period (`1500`: one and a half CPUs).
    pub cpu_millis: Option<u32>,
}

impl ResourceLimits {
    /// Whether it limits anything.
    pub fn is_unlimited(&self) -> bool {
        self.memory.is_none() && self.pids.is_none() && self.cpu_millis.is_none()
    }
}

/// A cgroup controller hyoka limits through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Controller {
    /// `memory`.
    Memory,
    /// `pids`.
    Pids,
    /// `cpu`.
    Cpu,
}

impl Controller {
    /// The kernel's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Pids => "pids",
            Self::Cpu => "cpu",
        }
    }
}

/// Where a controller's leaves are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// Whether it is the cgroup v2 tree.
    pub v2: bool,
    /// The cgroup under which a run's leaves are made (this process's own).
    pub base: PathBuf,
}

/// Where each controller can be used here, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSupport {
    /// The memory controller.
    pub memory: Result<Hierarchy, String>,
    /// The pids controller.
    pub pids: Result<Hierarchy, String>,
    /// The cpu controller.
    pub cpu: Result<Hierarchy, String>,
}

impl ResourceSupport {
    /// Probes the machine: the v2 tree's delegated controllers (enabling them in this
    /// process's cgroup when it may), then the v1 hierarchies (a probe directory made and
    /// removed in each).
    pub fn detect() -> Self {
        let root = CgroupRoot::detect().ok();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let find = |controller: Controller| find(controller, root.as_ref(), &mountinfo, &own);
        Self {
            memory: find(Controller::Memory),
            pids: find(Controller::Pids),
            cpu: find(Controller::Cpu),
        }
    }

    /// The hierarchy of `controller`.
    pub fn get(&self, controller: Controller) -> &Result<Hierarchy, String> {
        match controller {
            Controller::Memory => &self.memory,
            Controller::Pids => &self.pids,
            Controller::Cpu => &self.cpu,
        }
    }
}

fn find(
    controller: Controller,
    root: Option<&CgroupRoot>,
    mountinfo: &str,
    own: &str,
) -> Result<Hierarchy, String> {
    let name = controller.as_str();
    let mut why = Vec::new();
    if let Some(root) = root {
        match v2_delegates(&root.base, name) {
            Ok(()) => {
                return Ok(Hierarchy {
                    v2: true,
                    base: root.base.clone(),
                });
            }
            Err(reason) => why.push(reason),
        }
    } else {
        why.push("no writable cgroup v2 tree".to_owned());
    }
    match v1_base(name, mountinfo, own) {
        Some(base) => {
            let probe = base.join(format!("hyoka-probe-{}", std::process::id()));
            match std::fs::create_dir(&probe) {
                Ok(()) => {
                    let _ = std::fs::remove_dir(&probe);
                    return Ok(Hierarchy { v2: false, base });
                }
                Err(e) => why.push(format!(
                    "the cgroup v1 {name} hierarchy at {} is not writable: {e}",
                    base.display()
                )),
            }
        }
        None => why.push(format!("no cgroup v1 hierarchy has {name}")),
    }
    Err(format!("no {name} controller: {}", why.join("; ")))
}

/// Whether the v2 cgroup `base` gives `name` to its children, enabling it when it may.
fn v2_delegates(base: &Path, name: &str) -> Result<(), String> {
    let control = base.join("cgroup.subtree_control");
    let enabled = |text: &str| text.split_ascii_whitespace().any(|c| c == name);
    if std::fs::read_to_string(&control).is_ok_and(|t| enabled(&t)) {
        return Ok(());
    }
    let available = std::fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
    if !enabled(&available) {
        return Err(format!(
            "the cgroup v2 tree at {} does not offer {name} (cgroup.controllers: {:?})",
            base.display(),
            available.trim()
        ));
    }
    // Fails with EBUSY while the cgroup has processes of its own (the kernel's rule for
    // domain controllers): then hyoka needs a cgroup of its own with the controller
    // delegated (`systemd-run --user --scope -p Delegate=yes`, a container's cgroup).
    std::fs::write(&control, format!("+{name}")).map_err(|e| {
        format!(
            "cannot enable {name} in {}: {e} (run hyoka in a cgroup that delegates it)",
            control.display()
        )
    })
}

/// This process's cgroup in the v1 hierarchy that has `name`.
fn v1_base(name: &str, mountinfo: &str, own: &str) -> Option<PathBuf> {
    let mount = mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut fields = right.split_ascii_whitespace();
        if fields.next()? != "cgroup" {
            return None;
        }
        let options = fields.nth(1)?;
        options
            .split(',')
            .any(|o| o == name)
            .then(|| left.split_ascii_whitespace().nth(4).map(PathBuf::from))?
    })?;
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let _id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        controllers.split(',').any(|c| c == name).then_some(path)
    })?;
    let rel = Path::new(path.trim()).strip_prefix("/").ok()?;
    if rel
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    Some(mount.join(rel))
}

/// The v1 leaves (and limit files of the v2 leaf) of one spawned tree.
#[derive(Debug, Default)]
pub(crate) struct ResourceLeaves {
    /// v1 leaves made for the tree, removed after it: (controller, leaf).
    v1: Vec<(Controller, PathBuf)>,
    /// The leaf each controller's figures are read from.
    read_from: Vec<(Controller, PathBuf, bool)>,
}

/// Figures of one tree's leaves, read while it runs or just before teardown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceUsage {
    /// The most memory it used, in bytes.
    pub memory_peak: Option<u64>,
    /// How many of its processes the kernel's OOM killer ended for the memory limit.
    pub oom_kills: Option<u64>,
    /// The most processes it had at once.
    pub pids_peak: Option<u64>,
    /// How often a fork was refused at the pids limit.
    pub pids_refused: Option<u64>,
    /// CPU time it used, in microseconds.
    pub cpu_usec: Option<u64>,
}

fn write(path: &Path, value: &str) -> Result<(), ProcTrackError> {
    std::fs::write(path, value).map_err(|e| ProcTrackError::io("write", path, e))
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn keyed(path: &Path, key: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

impl ResourceLeaves {
    /// Makes the leaves of `limits` for eval `eval_id` (v1 ones under
    /// `<run_dir_name>/<eval_id>`, each passed to `record` before it is made, so a run
    /// killed in between leaves nothing `clean` does not know of; the v2 ones in `v2_leaf`,
    /// the tree's leaf in the v2 tree) and writes the limits. Returns them with the
    /// `cgroup.procs` descriptors the child writes itself into.
    pub(crate) fn create(
        limits: &ResourceLimits,
        support: &ResourceSupport,
        run_dir_name: &str,
        eval_id: &str,
        v2_leaf: Option<&Path>,
        record: &dyn Fn(&Path) -> Result<(), ProcTrackError>,
    ) -> Result<(Self, Vec<OwnedFd>), ProcTrackError> {
        let mut leaves = Self::default();
        let mut fds = Vec::new();
        match leaves.fill(
            limits,
            support,
            run_dir_name,
            eval_id,
            v2_leaf,
            record,
            &mut fds,
        ) {
            Ok(()) => Ok((leaves, fds)),
            Err(e) => {
                // What was made before the failure goes again (its record with the run's end).
                drop(fds);
                let _ = leaves.remove();
                Err(e)
            }
        }
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "the arguments of `create`, passed through"
    )]
    fn fill(
        &mut self,
        limits: &ResourceLimits,
        support: &ResourceSupport,
        run_dir_name: &str,
        eval_id: &str,
        v2_leaf: Option<&Path>,
        record: &dyn Fn(&Path) -> Result<(), ProcTrackError>,
        fds: &mut Vec<OwnedFd>,
    ) -> Result<(), ProcTrackError> {
        let leaves = self;
        let wanted = [
            (Controller::Memory, limits.memory.is_some()),
            (Controller::Pids, limits.pids.is_some()),
            (Controller::Cpu, limits.cpu_millis.is_some()),
        ];
        for (controller, on) in wanted {
            if !on {
                continue;
            }
            let hierarchy =
                support
                    .get(controller)
                    .as_ref()
                    .map_err(|reason| ProcTrackError::Sandbox {
                        reason: reason.clone(),
                    })?;
            let leaf = if hierarchy.v2 {
                let leaf = v2_leaf.ok_or_else(|| ProcTrackError::Sandbox {
                    reason: format!(
                        "the {} limit needs the eval's cgroup v2 leaf, which could not be made",
                        controller.as_str()
                    ),
                })?;
                if let Some(run) = leaf.parent() {
                    write(
                        &run.join("cgroup.subtree_control"),
                        &format!("+{}", controller.as_str()),
                    )?;
                }
                leaf.to_owned()
            } else {
                // A leaf made by another controller of the same hierarchy (cpu,cpuacct).
                let run = hierarchy.base.join(run_dir_name);
                let leaf = run.join(eval_id);
                if !leaves.v1.iter().any(|(_, l)| *l == leaf) {
                    record(&leaf)?;
                    crate::cgroup::make_leaf_dir(&run, &leaf)?;
                    leaves.v1.push((controller, leaf.clone()));
                    let procs = leaf.join("cgroup.procs");
                    fds.push(
                        rustix::fs::open(&procs, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())
                            .map_err(|e| ProcTrackError::io("open", procs, e.into()))?,
                    );
                }
                leaf
            };
            Self::limit(controller, &leaf, hierarchy.v2, limits)?;
            leaves.read_from.push((controller, leaf, hierarchy.v2));
        }
        Ok(())
    }

    fn limit(
        controller: Controller,
        leaf: &Path,
        v2: bool,
        limits: &ResourceLimits,
    ) -> Result<(), ProcTrackError> {
        match (controller, v2) {
            (Controller::Memory, true) => {
                let bytes = limits.memory.unwrap_or(0).to_string();
                write(&leaf.join("memory.max"), &bytes)?;
                // No swap beyond the limit, where the machine has swap accounting.
                let _ = std::fs::write(leaf.join("memory.swap.max"), "0");
                let _ = std::fs::write(leaf.join("memory.oom.group"), "0");
            }
            (Controller::Memory, false) => {
                let bytes = limits.memory.unwrap_or(0).to_string();
                write(&leaf.join("memory.limit_in_bytes"), &bytes)?;
                let _ = std::fs::write(leaf.join("memory.memsw.limit_in_bytes"), &bytes);
                let _ = std::fs::write(leaf.join("memory.swappiness"), "0");
            }
            (Controller::Pids, _) => {
                write(
                    &leaf.join("pids.max"),
                    &limits.pids.unwrap_or(0).to_string(),
                )?;
            }
            (Controller::Cpu, v2) => {
                const PERIOD: u64 = 100_000;
                // At least 1 ms per period: the kernel's minimum quota.
                let quota =
                    (u64::from(limits.cpu_millis.unwrap_or(1000)) * PERIOD / 1000).max(1000);
                if v2 {
                    write(&leaf.join("cpu.max"), &format!("{quota} {PERIOD}"))?;
                } else {
                    write(&leaf.join("cpu.cfs_period_us"), &PERIOD.to_string())?;
                    write(&leaf.join("cpu.cfs_quota_us"), &quota.to_string())?;
                }
            }
        }
        Ok(())
    }

    /// What the leaves say now.
    pub(crate) fn usage(&self) -> ResourceUsage {
        let mut usage = ResourceUsage::default();
        for (controller, leaf, v2) in &self.read_from {
            match (controller, v2) {
                (Controller::Memory, true) => {
                    usage.memory_peak = read_u64(&leaf.join("memory.peak"));
                    usage.oom_kills = keyed(&leaf.join("memory.events"), "oom_kill");
                }
                (Controller::Memory, false) => {
                    usage.memory_peak = read_u64(&leaf.join("memory.max_usage_in_bytes"));
                    usage.oom_kills = keyed(&leaf.join("memory.oom_control"), "oom_kill");
                }
                (Controller::Pids, _) => {
                    usage.pids_peak = read_u64(&leaf.join("pids.peak"));
                    usage.pids_refused = keyed(&leaf.join("pids.events"), "max");
                }
                (Controller::Cpu, true) => {
                    usage.cpu_usec = keyed(&leaf.join("cpu.stat"), "usage_usec");
                }
                (Controller::Cpu, false) => {
                    // cpuacct is mounted with cpu on most hybrid hosts.
                    usage.cpu_usec = read_u64(&leaf.join("cpuacct.usage")).map(|ns| ns / 1000);
                }
            }
        }
        usage
    }

    /// Removes the v1 leaves (and their run directories when empty), waiting a little for
    /// exiting processes to leave them. Returns the ones left behind.
    pub(crate) fn remove(&self) -> Vec<PathBuf> {
        let mut left = Vec::new();
        for (_, leaf) in &self.v1 {
            let mut gone = false;
            for _ in 0..200 {
                match std::fs::remove_dir(leaf) {
                    Ok(()) => {
                        gone = true;
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        gone = true;
                        break;
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
            if gone {
                if let Some(run) = leaf.parent() {
                    let _ = std::fs::remove_dir(run);
                }
            } else {
                left.push(leaf.clone());
            }
        }
        left
    }
}

#[cfg(test)]
mod tests;
