//! The sandbox policy of an eval: whether its processes run in a kernel sandbox, which paths
//! they may write, which network they get, and what `report.json` says about it.
//!
//! The spawn layer (`hyoka-proctrack`'s `Sandbox`) enforces; this module decides. The
//! decision is sans-IO: [`decide`] takes the eval's [`SandboxSpec`] and what the machine
//! offers (`SandboxSupport`, from [`Processes::sandbox_support`](crate::Processes)) and
//! either refuses (strict `--sandbox` without Landlock, `--network none` without network
//! namespaces: bad input, before anything is created) or says what will be in force.

use std::path::{Path, PathBuf};

use hyoka_proctrack::{MIN_LANDLOCK_ABI, Network, Sandbox, SandboxSupport};
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
    /// With best effort and no Landlock: why.
    pub unavailable: Option<String>,
    /// The network.
    pub network: Network,
}

/// Decides what an eval's sandbox will be on a machine offering `support`.
///
/// # Errors
/// A one-line reason, when the eval cannot run as asked: `--sandbox` (strict) where Landlock
/// is missing or older than ABI [`MIN_LANDLOCK_ABI`], or `--network none` where no network
/// namespace can be made.
pub fn decide(spec: &SandboxSpec, support: &SandboxSupport) -> Result<SandboxDecision, String> {
    let (landlock_abi, unavailable) = match (spec.mode, &support.landlock) {
        (SandboxMode::Off, _) => (None, None),
        (SandboxMode::On, Err(reason)) => {
            return Err(format!(
                "--sandbox needs Landlock, which this machine lacks: {reason} (--sandbox=best-effort runs without it)"
            ));
        }
        (SandboxMode::On, Ok(abi)) if *abi < MIN_LANDLOCK_ABI => {
            return Err(format!(
                "--sandbox needs Landlock ABI {MIN_LANDLOCK_ABI} or newer (Linux 6.2), this kernel has ABI {abi} (--sandbox=best-effort runs with what there is)"
            ));
        }
        (SandboxMode::On | SandboxMode::BestEffort, Ok(_)) => (support.landlock_in_force(), None),
        (SandboxMode::BestEffort, Err(reason)) => (None, Some(reason.clone())),
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
        unavailable,
        network: spec.network,
    })
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
    /// agent).
    pub(crate) fn sandbox(
        &self,
        writable: &Writable,
        workspace: bool,
        agent_files: &[&Path],
    ) -> Sandbox {
        Sandbox {
            writable: self
                .landlock_abi
                .map(|_| paths(writable, workspace, agent_files)),
            network: self.network,
            namespace: None,
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
    /// With `best-effort` and no Landlock: why it was unavailable.
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
