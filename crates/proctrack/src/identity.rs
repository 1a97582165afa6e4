//! Process identity: (pid, start time in clock ticks, boot id), and the `/proc/<pid>/stat` parser.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::ProcTrackError;

/// The kernel's boot id (`/proc/sys/kernel/random/boot_id`), a UUID in lowercase hex.
///
/// Start times are clock ticks since boot, so an identity is only meaningful within one boot:
/// a ledger written before a reboot names nothing alive.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct BootId(String);

impl BootId {
    /// Validates `text` (surrounding whitespace is ignored) as a boot id.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidIdentity`] unless it is 36 characters of hex digits and dashes.
    pub fn new(text: &str) -> Result<Self, ProcTrackError> {
        let text = text.trim();
        let ok = text.len() == 36
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-');
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(ProcTrackError::InvalidIdentity {
                text: text.to_owned(),
                reason: "boot id is not a lowercase UUID",
            })
        }
    }

    /// The boot id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BootId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A process as the kernel names it at one moment: pid plus start time in clock ticks.
///
/// Two `ProcRef`s are the same process exactly when both fields are equal; a pid alone is not
/// an identity (pids are reused, and `pid_max` may be as small as 32768).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProcRef {
    /// The process id.
    pub pid: i32,
    /// Field 22 of `/proc/<pid>/stat`: start time in clock ticks since boot.
    pub start_ticks: u64,
}

impl fmt::Display for ProcRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.pid, self.start_ticks)
    }
}

/// A process identity valid across reboots: pid, start ticks and boot id.
///
/// Its string form is `<pid> <start_ticks> <boot_id>`, as written in the ledger's
/// `# owner` header and in workspace markers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Identity {
    /// The process id and start ticks.
    #[serde(flatten)]
    pub proc_ref: ProcRef,
    /// The boot the start ticks count from.
    pub boot_id: BootId,
}

impl Identity {
    /// The identity of the calling process, read from `/proc/self/stat` and the boot id.
    ///
    /// # Errors
    /// [`ProcTrackError::ProcTable`] when `/proc` cannot be read.
    pub fn current() -> Result<Self, ProcTrackError> {
        use crate::ProcTable;
        let table = crate::NativeProcTable::new();
        let pid = table.self_pid();
        let info = table
            .process(pid)
            .ok_or_else(|| ProcTrackError::ProcTable {
                path: "/proc/self/stat".into(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            })?;
        Ok(Self {
            proc_ref: info.proc_ref(),
            boot_id: table.boot_id()?,
        })
    }

    /// The process id.
    pub fn pid(&self) -> i32 {
        self.proc_ref.pid
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.proc_ref.pid, self.proc_ref.start_ticks, self.boot_id
        )
    }
}

impl FromStr for Identity {
    type Err = ProcTrackError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |reason| ProcTrackError::InvalidIdentity {
            text: text.to_owned(),
            reason,
        };
        let mut fields = text.split_ascii_whitespace();
        let (Some(pid), Some(ticks), Some(boot), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(invalid("expected <pid> <start_ticks> <boot_id>"));
        };
        let pid: i32 = pid.parse().map_err(|_| invalid("pid is not a number"))?;
        if pid <= 1 {
            return Err(invalid("pid must be greater than 1"));
        }
        let start_ticks = ticks
            .parse()
            .map_err(|_| invalid("start ticks are not a number"))?;
        Ok(Self {
            proc_ref: ProcRef { pid, start_ticks },
            boot_id: BootId::new(boot)?,
        })
    }
}

/// One process as read from `/proc/<pid>/stat`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProcInfo {
    /// The process id.
    pub pid: i32,
    /// The parent's pid (0 for the kernel's own roots).
    pub ppid: i32,
    /// The process group id.
    pub pgid: i32,
    /// The session id.
    pub sid: i32,
    /// Start time in clock ticks since boot (field 22).
    pub start_ticks: u64,
    /// The state letter (`R`, `S`, `D`, `Z`, `T`, …).
    pub state: char,
    /// The command name (at most 15 bytes, may contain spaces and parentheses).
    pub comm: String,
    /// The CPU the process and its waited-for children used, in clock ticks (`utime + stime
    /// + cutime + cstime`, fields 14–17).
    pub cpu_ticks: u64,
}

impl ProcInfo {
    /// The process's identity within this boot.
    pub fn proc_ref(&self) -> ProcRef {
        ProcRef {
            pid: self.pid,
            start_ticks: self.start_ticks,
        }
    }

    /// Whether the process has exited (zombie `Z` or dead `X`): a zombie counts as gone.
    pub fn is_gone(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the contents of `/proc/<pid>/stat`: the one parser of that file in hyoka.
///
/// The command name is delimited by the first `(` and the **last** `)`, since it may contain
/// spaces and parentheses itself. Returns `None` for anything malformed.
pub fn parse_stat(text: &str) -> Option<ProcInfo> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let pid: i32 = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_owned();
    // Fields 3 onwards, after the command name.
    let mut rest = text[close + 1..].split_ascii_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgid = rest.next()?.parse().ok()?;
    let sid = rest.next()?.parse().ok()?;
    // Fields 7..=13 precede the CPU times (fields 14..=17).
    let mut cpu_ticks: u64 = 0;
    for ticks in rest.by_ref().skip(7).take(4) {
        // cutime and cstime are signed in the kernel's format; never negative in practice.
        let ticks: i64 = ticks.parse().ok()?;
        cpu_ticks = cpu_ticks.saturating_add(u64::try_from(ticks).unwrap_or(0));
    }
    // Field 22 follows fields 18..=21.
    let start_ticks = rest.nth(4)?.parse().ok()?;
    Some(ProcInfo {
        pid,
        ppid,
        pgid,
        sid,
        start_ticks,
        state,
        comm,
        cpu_ticks,
    })
}

/// Whether the process that made a workspace still runs, from what the workspace's marker
/// says of it (`hyoka-workspace`'s `MarkerOwner`) and when the workspace was created
/// (`created_unix`, seconds since the epoch; 0 when unknown).
///
/// With the owner's start ticks (older markers) the identity is exact. The current marker
/// records only the pid, and the workspace's creation time stands for the start time: a live
/// process with that pid that started before the workspace existed is its owner, since no
/// other process could hold the pid meanwhile. Two seconds of slack cover the boot time's
/// whole-second precision; every doubt answers "running", so a workspace in doubt is kept.
pub fn owner_running(
    pid: i32,
    start_ticks: Option<u64>,
    boot_id: Option<&str>,
    created_unix: u64,
) -> bool {
    use crate::ProcTable as _;
    let table = crate::NativeProcTable::new();
    if boot_id.is_some_and(|b| table.boot_id().is_ok_and(|now| now.as_str() != b)) {
        return false;
    }
    let Some(info) = table.process(pid).filter(|p| !p.is_gone()) else {
        return false;
    };
    if let Some(ticks) = start_ticks {
        return info.start_ticks == ticks;
    }
    let hz = rustix::param::clock_ticks_per_second();
    let Some(boot) = boot_time_unix() else {
        return true;
    };
    if created_unix == 0 || hz == 0 {
        return true;
    }
    boot.saturating_add(info.start_ticks / hz) <= created_unix.saturating_add(2)
}

/// The boot time, seconds since the epoch (`btime` in `/proc/stat`).
fn boot_time_unix() -> Option<u64> {
    std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// Validates a run or eval id: `[A-Za-z0-9][A-Za-z0-9._-]{0,63}` (the CLI's contract).
pub(crate) fn validate_id(kind: &'static str, id: &str) -> Result<(), ProcTrackError> {
    let bytes = id.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ProcTrackError::InvalidId {
            kind,
            id: id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests;
