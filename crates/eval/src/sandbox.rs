//! The sandbox policy of an eval: whether its processes run in a kernel sandbox, what they
//! see and may write, which network they get, and what `report.json` says about it.
//!
//! The spawn layer (`hyoka-proctrack`'s `Sandbox` and `MountPlan`) enforces; this module
//! decides. The decision is sans-IO: [`decide`] takes the eval's [`SandboxSpec`] and what
//! the machine offers (`SandboxSupport`, from [`Processes::sandbox_support`](crate::Processes))
//! and either refuses (strict `--sandbox` without Landlock, a mount namespace or the seccomp
//! filters; `--network none` without network namespaces: bad input, before anything is
//! created) or says what will be in force.
//!
//! What a sandboxed process sees ([`plan`]): the host read-only; `/run` (sockets of every
//! daemon, the user's runtime directory), the caller's home, runtime directory and session
//! registry hidden by empty tmpfs; a private `/tmp` (the eval's temp directory, bound there,
//! so what is written there is counted and removed with the eval); a minimal `/dev`; the
//! `sandbox_read` paths read-only; the workspace, the isolated home, the `sandbox_write`
//! paths and the agent's events file writable, each at its own path.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hyoka_proctrack::EnvVars;
use hyoka_proctrack::{MIN_LANDLOCK_ABI, Mount, MountPlan, Network, Sandbox, SandboxSupport};
use serde::{Deserialize, Serialize};

/// Whether an eval's processes run in the Landlock sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SandboxMode {
    /// No sandbox (the default).
    #[default]
    Off,
    /// The sandbox, or refuse to run where Landlock is unavailable.
    On,
    /// The sandbox where Landlock is available; elsewhere run without it and record that.
    BestEffort,
}

impl SandboxMode {
    /// The name as written in flags, suites and reports (`off`, `on`, `best-effort`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::On => "on",
            Self::BestEffort => "best-effort",
        }
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "off" | "false" => Ok(Self::Off),
            "on" | "true" => Ok(Self::On),
            "best-effort" => Ok(Self::BestEffort),
            _ => Err(format!(
                "invalid sandbox {text:?}: expected on, off or best-effort"
            )),
        }
    }
}

/// The sandbox settings of one level (command line, eval, defaults); unset fields fall
/// through to the next level.
#[derive(Debug, Clone, Default)]
pub struct SandboxSettings {
    /// `--sandbox` / `sandbox:`.
    pub mode: Option<SandboxMode>,
    /// `--network` / `network:`.
    pub network: Option<Network>,
    /// `sandbox_write:`: more paths the processes may write (absolute).
    pub write: Option<Vec<PathBuf>>,
    /// `sandbox_read:` / `--sandbox-read`: paths inside a hidden directory (the home) the
    /// processes may read (absolute): an agent installed in the home, its configuration.
    pub read: Option<Vec<PathBuf>>,
    /// `sandbox_read_only:`: the agent may not write its workspace (only its temp directory,
    /// its home and `sandbox_write` paths); services, build and review still may.
    pub read_only: Option<bool>,
}

/// An eval's resolved sandbox settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Whether the processes run in the Landlock sandbox.
    pub mode: SandboxMode,
    /// Their network.
    pub network: Network,
    /// More paths they may write, besides the workspace, the isolated home, the private temp
    /// directory and the null-like devices.
    pub write: Vec<PathBuf>,
    /// Paths inside hidden directories they may read.
    pub read: Vec<PathBuf>,
    /// The agent may not write its workspace.
    pub read_only: bool,
}

impl SandboxSpec {
    /// Each field from the strongest level that sets it (`levels` strongest first), else the
    /// built-in value: no sandbox, the host's network.
    pub fn resolve(levels: &[&SandboxSettings]) -> Self {
        Self {
            mode: levels.iter().find_map(|l| l.mode).unwrap_or_default(),
            network: levels.iter().find_map(|l| l.network).unwrap_or_default(),
            write: levels
                .iter()
                .find_map(|l| l.write.clone())
                .unwrap_or_default(),
            read: levels
                .iter()
                .find_map(|l| l.read.clone())
                .unwrap_or_default(),
            read_only: levels.iter().find_map(|l| l.read_only).unwrap_or(false),
        }
    }

    /// Whether the eval asks for anything (a sandbox in any mode, or no network); only then
    /// is the machine probed.
    pub fn is_requested(&self) -> bool {
        self.mode != SandboxMode::Off || self.network != Network::Host
    }
}

/// What will be in force for an eval, decided by [`decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxDecision {
    /// The mode asked for.
    pub mode: SandboxMode,
    /// The Landlock ABI the processes run at; `None` when they run without Landlock.
    pub landlock_abi: Option<u32>,
    /// With best effort: why a layer is missing (each reason once, `; `-separated).
    pub unavailable: Option<String>,
    /// Whether the processes get a mount namespace (the host read-only, private `/tmp`).
    pub mounts: bool,
    /// Whether they run without capabilities and under the seccomp filters.
    pub harden: bool,
    /// The network.
    pub network: Network,
}

/// Decides what an eval's sandbox will be on a machine offering `support`.
///
/// # Errors
/// A one-line reason, when the eval cannot run as asked: `--sandbox` (strict) where Landlock
/// is missing or older than ABI [`MIN_LANDLOCK_ABI`], where no mount namespace with the host
/// read-only can be made, or where the seccomp filters cannot be installed; `--network none`
/// where no network namespace can be made.
pub fn decide(spec: &SandboxSpec, support: &SandboxSupport) -> Result<SandboxDecision, String> {
    let mut missing: Vec<String> = Vec::new();
    let (landlock_abi, mounts, harden) = match spec.mode {
        SandboxMode::Off => (None, false, false),
        SandboxMode::On => {
            match &support.landlock {
                Err(reason) => {
                    return Err(format!(
                        "--sandbox needs Landlock, which this machine lacks: {reason} (--sandbox=best-effort runs without it)"
                    ));
                }
                Ok(abi) if *abi < MIN_LANDLOCK_ABI => {
                    return Err(format!(
                        "--sandbox needs Landlock ABI {MIN_LANDLOCK_ABI} or newer (Linux 6.2), this kernel has ABI {abi} (--sandbox=best-effort runs with what there is)"
                    ));
                }
                Ok(_) => {}
            }
            for (what, result) in [
                ("a mount namespace", &support.mounts),
                ("seccomp", &support.harden),
            ] {
                if let Err(reason) = result {
                    return Err(format!(
                        "--sandbox needs {what}, which this machine cannot give: {reason} (--sandbox=best-effort runs without it)"
                    ));
                }
            }
            (support.landlock_in_force(), true, true)
        }
        SandboxMode::BestEffort => {
            for result in [
                support.landlock.as_ref().map(|_| &()),
                support.mounts.as_ref(),
                support.harden.as_ref(),
            ] {
                if let Err(reason) = result {
                    missing.push(reason.clone());
                }
            }
            (
                support.landlock_in_force(),
                support.mounts.is_ok(),
                support.harden.is_ok(),
            )
        }
    };
    if spec.network == Network::None
        && let hyoka_proctrack::NetIsolation::Unavailable(reason) = &support.network
    {
        return Err(format!(
            "--network none needs a network namespace, which this machine cannot make: {reason}"
        ));
    }
    Ok(SandboxDecision {
        mode: spec.mode,
        landlock_abi,
        unavailable: (!missing.is_empty()).then(|| missing.join("; ")),
        mounts,
        harden,
        network: spec.network,
    })
}

/// What an eval's processes see besides the host (see [`plan`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    /// Directories to hide: the caller's home, runtime directory and session registry.
    pub(crate) hidden: Vec<PathBuf>,
    /// Paths inside them to show read-only (`sandbox_read`).
    pub(crate) read: Vec<PathBuf>,
    /// The private temp directory, seen at `/tmp`.
    pub(crate) tmp: Option<PathBuf>,
    /// Directories never writable, even beneath a writable path: the run's records (the
    /// ledger is the record of trust `clean` acts on).
    pub(crate) protected: Vec<PathBuf>,
}

/// The directories of the caller's environment a sandbox hides: `HOME`, `XDG_RUNTIME_DIR`
/// and `HYOKA_RUNTIME_DIR` (the session registry), when set to an absolute path other than
/// `/`; and `/run`, where every daemon's socket is.
pub(crate) fn hidden_dirs(env: &[(OsString, OsString)]) -> Vec<PathBuf> {
    let mut hidden = vec![PathBuf::from("/run")];
    for name in ["HOME", "XDG_RUNTIME_DIR", EnvVars::HYOKA_RUNTIME_DIR] {
        if let Some((_, value)) = env.iter().find(|(k, _)| k == name) {
            let path = PathBuf::from(value);
            if path.is_absolute() && path.parent().is_some() && !hidden.contains(&path) {
                hidden.push(path);
            }
        }
    }
    hidden
}

/// The mount plan of one process: hidden directories (those that exist) as read-only tmpfs,
/// the host's resolver configuration when it lives in `/run`, the private `/tmp`, a minimal
/// `/dev`, the read-only paths, then the writable ones, parents before children; a
/// protected directory beneath a writable path is bound read-only over it (a writable file
/// inside it, the events file, is bound after it).
pub(crate) fn plan(view: &View, writable: &[PathBuf], read_only: &[PathBuf]) -> MountPlan {
    let mut mounts: Vec<Mount> = Vec::new();
    let mut hidden: Vec<&PathBuf> = view.hidden.iter().filter(|p| p.is_dir()).collect();
    hidden.sort_by_key(|p| p.components().count());
    // What is in the temp directory is not seen anyway: the private `/tmp` covers it.
    let private_tmp = view.tmp.is_some();
    for dir in hidden {
        let covered = (private_tmp && dir.starts_with("/tmp"))
            || mounts.iter().any(|m| dir.starts_with(m.target()));
        if !covered {
            mounts.push(Mount::Tmpfs {
                target: dir.clone(),
                writable: false,
            });
        }
    }
    // `/etc/resolv.conf` is often a link into `/run`: the file it names stays readable.
    if let Ok(resolver) = std::fs::canonicalize("/etc/resolv.conf")
        && mounts.iter().any(|m| resolver.starts_with(m.target()))
    {
        mounts.push(Mount::Bind {
            source: resolver.clone(),
            target: resolver,
            writable: false,
        });
    }
    if let Some(tmp) = &view.tmp {
        mounts.push(Mount::Bind {
            source: tmp.clone(),
            target: PathBuf::from("/tmp"),
            writable: true,
        });
    }
    mounts.push(Mount::Devices {
        target: PathBuf::from("/dev"),
    });
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let protected: Vec<PathBuf> = view
        .protected
        .iter()
        .filter(|p| {
            let p = real(p);
            writable.iter().any(|w| p.starts_with(real(w)))
        })
        .cloned()
        .collect();
    let mut binds: Vec<(&PathBuf, bool)> = view
        .read
        .iter()
        .chain(read_only)
        .map(|p| (p, false))
        .chain(writable.iter().map(|p| (p, true)))
        .chain(protected.iter().map(|p| (p, false)))
        .collect();
    // Stable: at the same depth a protected directory comes after a writable one.
    binds.sort_by_key(|(p, _)| p.components().count());
    for (path, writable) in binds {
        if view.tmp.as_ref() == Some(path) {
            continue;
        }
        mounts.push(Mount::Bind {
            source: path.clone(),
            target: path.clone(),
            writable,
        });
    }
    MountPlan { mounts, cwd: None }
}

/// The paths one eval's processes may write.
#[derive(Debug, Clone, Default)]
pub(crate) struct Writable {
    /// The workspace.
    pub(crate) workspace: PathBuf,
    /// The isolated home, the private temp directory and `sandbox_write` paths.
    pub(crate) shared: Vec<PathBuf>,
}

impl SandboxDecision {
    /// The spawn layer's sandbox for one process: with `agent_files` (the events file) added,
    /// and without the workspace when `workspace` is false (`sandbox_read_only` for the
    /// agent, which then sees it read-only).
    pub(crate) fn sandbox(
        &self,
        writable: &Writable,
        view: &View,
        workspace: bool,
        agent_files: &[&Path],
    ) -> Sandbox {
        let paths = paths(writable, workspace, agent_files);
        let read_only: Vec<PathBuf> = (!workspace)
            .then(|| writable.workspace.clone())
            .into_iter()
            .collect();
        Sandbox {
            mounts: self.mounts.then(|| plan(view, &paths, &read_only)),
            writable: self.landlock_abi.map(|_| paths),
            network: self.network,
            namespace: None,
            harden: self.harden,
        }
    }

    /// The record in `report.json`, listing the agent's writable paths.
    pub(crate) fn record(
        &self,
        writable: &Writable,
        workspace: bool,
        agent_files: &[&Path],
    ) -> SandboxRecord {
        let enforced = self.landlock_abi.is_some();
        let mut listed: Vec<String> = if enforced {
            paths(writable, workspace, agent_files)
                .iter()
                .map(|p| p.display().to_string())
                .collect()
        } else {
            Vec::new()
        };
        if enforced {
            listed.extend(hyoka_proctrack::DEVICES.iter().map(|d| (*d).to_owned()));
        }
        SandboxRecord {
            mode: self.mode.as_str().to_owned(),
            landlock_abi: self.landlock_abi,
            mount_namespace: self.mounts,
            privileges_dropped: self.harden,
            unavailable: self.unavailable.clone(),
            writable: listed,
            network: self.network.as_str().to_owned(),
            denied_writes: None,
            denied_writes_unknown: enforced.then(|| DENIALS_UNCOUNTED.to_owned()),
        }
    }
}

/// Why denied writes are not counted.
const DENIALS_UNCOUNTED: &str = "Landlock reports denials only to the kernel's audit log, which hyoka does not read; each denied write failed with EACCES in the agent";

fn paths(writable: &Writable, workspace: bool, agent_files: &[&Path]) -> Vec<PathBuf> {
    workspace
        .then(|| writable.workspace.clone())
        .into_iter()
        .chain(writable.shared.iter().cloned())
        .chain(agent_files.iter().map(|p| p.to_path_buf()))
        .collect()
}

/// `report.json` `sandbox`: what confined the eval's processes. Present when the eval asked
/// for a sandbox or for no network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxRecord {
    /// `on`, `best-effort` or `off`.
    pub mode: String,
    /// The Landlock ABI in force; `null` when the processes ran without Landlock.
    pub landlock_abi: Option<u32>,
    /// Whether they ran in a mount namespace: the host read-only, a private `/tmp`, the home,
    /// the runtime directory and `/run` hidden, a minimal `/dev`.
    #[serde(default)]
    pub mount_namespace: bool,
    /// Whether they ran without capabilities, with `no_new_privs` and the seccomp filters.
    #[serde(default)]
    pub privileges_dropped: bool,
    /// With `best-effort`: why a layer was unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The paths the agent could write (with Landlock in force; empty otherwise).
    pub writable: Vec<String>,
    /// `host` or `none`.
    pub network: String,
    /// How many writes were denied; `null` when they cannot be counted
    /// (`denied_writes_unknown` says why).
    pub denied_writes: Option<u64>,
    /// Why `denied_writes` is `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_writes_unknown: Option<String>,
}

#[cfg(test)]
mod tests;
