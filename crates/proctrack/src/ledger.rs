//! The crash-safe ledger `reports/<run_id>/pids.txt`: what a run started, for `clean`.
//!
//! ```text
//! # hyoka-pids v1
//! # run <run_id>
//! # owner <pid> <start_ticks> <boot_id>
//! # workspace <eval_id> <absolute path>
//! # cgroup <eval_id> <absolute path>
//! # cleaned <unix seconds>
//! <pid>\t<start_ticks>\t<pgid>\t<eval_id>\t<comm>
//! ```
//!
//! The file is rewritten atomically (temporary file, fsync, rename, fsync of the directory)
//! whenever the tracked set changes, so a crash leaves either the old or the new version,
//! never a torn one. The parser is still tolerant: it reports garbage, dangerous pids and torn
//! lines as [`LedgerProblem`]s and never returns them as entries.
//!
//! Entries for processes that have exited are pruned at the next rewrite once they are
//! confirmed gone (absent, a zombie, or their pid reused); an entry that is still listed when
//! the owner dies costs `clean` one identity check, nothing more, because `clean` verifies
//! every identity before it signals.

use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::ProcTrackError;
use crate::identity::{Identity, ProcInfo, ProcRef, validate_id};

/// The ledger's file name inside a run directory.
pub const LEDGER_FILE: &str = "pids.txt";

const MAGIC: &str = "# hyoka-pids v1";

/// One tracked process: a process line of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LedgerEntry {
    /// The process id.
    pub pid: i32,
    /// Its start time in clock ticks (the identity, with the owner's boot id).
    pub start_ticks: u64,
    /// Its process group when it was recorded.
    pub pgid: i32,
    /// The eval it belongs to.
    pub eval_id: String,
    /// Its command name when it was recorded (informational only; never used to decide).
    pub comm: String,
}

impl LedgerEntry {
    /// The entry for a process seen in the table.
    pub fn from_info(info: &ProcInfo, eval_id: &str) -> Self {
        Self {
            pid: info.pid,
            start_ticks: info.start_ticks,
            pgid: info.pgid,
            eval_id: eval_id.to_owned(),
            comm: info.comm.clone(),
        }
    }

    /// The entry's identity within its boot.
    pub fn proc_ref(&self) -> ProcRef {
        ProcRef {
            pid: self.pid,
            start_ticks: self.start_ticks,
        }
    }
}

/// An eval id and a path, from a `# workspace` or `# cgroup` header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EvalPath {
    /// The eval id.
    pub eval_id: String,
    /// The absolute path.
    pub path: PathBuf,
}

/// The content of a ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Ledger {
    /// The run id (`# run`).
    pub run_id: String,
    /// The identity of the hyoka process that owns the run (`# owner`).
    pub owner: Option<Identity>,
    /// The run's workspaces (`# workspace`).
    pub workspaces: Vec<EvalPath>,
    /// The run's cgroup leaves (`# cgroup`).
    pub cgroups: Vec<EvalPath>,
    /// When `clean` (or the owner, at a clean exit) marked the run cleaned (`# cleaned`).
    pub cleaned: Option<u64>,
    /// The tracked processes.
    pub entries: Vec<LedgerEntry>,
}

/// Why a ledger line was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LedgerProblem {
    /// The 1-based line number (0 for the file as a whole).
    pub line: usize,
    /// The offending text (lossy UTF-8, at most 120 characters).
    pub text: String,
    /// Why it was refused.
    pub reason: &'static str,
}

/// A parsed ledger and everything that was wrong with it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ParsedLedger {
    /// What could be read safely.
    pub ledger: Ledger,
    /// Lines that were refused; none of them is ever acted on.
    pub problems: Vec<LedgerProblem>,
}

fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn check_path(path: &Path) -> Result<(), ProcTrackError> {
    let reason = if !path.is_absolute() {
        "not absolute"
    } else if path
        .as_os_str()
        .as_bytes()
        .iter()
        .any(|&b| b == b'\n' || b == b'\r' || b == 0)
    {
        "contains a line break"
    } else {
        return Ok(());
    };
    Err(ProcTrackError::InvalidPath {
        path: path.to_owned(),
        reason,
    })
}

impl Ledger {
    /// An empty ledger for `run_id` owned by `owner`.
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`] for a run id outside the CLI's alphabet.
    pub fn new(run_id: &str, owner: Identity) -> Result<Self, ProcTrackError> {
        validate_id("run", run_id)?;
        Ok(Self {
            run_id: run_id.to_owned(),
            owner: Some(owner),
            ..Self::default()
        })
    }

    /// Records a workspace header (replacing an earlier one for the same eval).
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`] or [`ProcTrackError::InvalidPath`].
    pub fn set_workspace(&mut self, eval_id: &str, path: &Path) -> Result<(), ProcTrackError> {
        set_eval_path(&mut self.workspaces, eval_id, path)
    }

    /// Records a cgroup header (replacing an earlier one for the same eval).
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`] or [`ProcTrackError::InvalidPath`].
    pub fn set_cgroup(&mut self, eval_id: &str, path: &Path) -> Result<(), ProcTrackError> {
        set_eval_path(&mut self.cgroups, eval_id, path)
    }

    /// The file's bytes.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + 48 * self.entries.len());
        let _ = writeln!(out, "{MAGIC}");
        let _ = writeln!(out, "# run {}", self.run_id);
        if let Some(owner) = &self.owner {
            let _ = writeln!(out, "# owner {owner}");
        }
        for (kind, list) in [("workspace", &self.workspaces), ("cgroup", &self.cgroups)] {
            for item in list {
                let _ = write!(out, "# {kind} {} ", item.eval_id);
                out.extend_from_slice(item.path.as_os_str().as_bytes());
                out.push(b'\n');
            }
        }
        if let Some(at) = self.cleaned {
            let _ = writeln!(out, "# cleaned {at}");
        }
        for e in &self.entries {
            let _ = writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}",
                e.pid,
                e.start_ticks,
                e.pgid,
                e.eval_id,
                sanitize(&e.comm)
            );
        }
        out
    }

    /// Parses a ledger, refusing every line that is malformed or names a pid that must never be
    /// signalled (≤ 1, or `self_pid`, the process that reads it).
    pub fn parse(bytes: &[u8], self_pid: i32) -> ParsedLedger {
        let mut parsed = ParsedLedger::default();
        let problem = |line: usize, raw: &[u8], reason: &'static str| LedgerProblem {
            line,
            text: String::from_utf8_lossy(raw).chars().take(120).collect(),
            reason,
        };
        let mut problems = Vec::new();
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        // A well-formed file ends with a newline, so the last split piece is empty.
        let last = lines.pop().unwrap_or_default();
        if !last.is_empty() {
            problems.push(problem(
                lines.len() + 1,
                last,
                "torn line (no trailing newline)",
            ));
        }
        if lines.first().copied() != Some(MAGIC.as_bytes()) {
            problems.push(problem(
                1,
                lines.first().copied().unwrap_or_default(),
                "missing `# hyoka-pids v1` header: not a ledger this version can act on",
            ));
            parsed.problems = problems;
            return parsed;
        }
        let ledger = &mut parsed.ledger;
        for (index, raw) in lines.iter().enumerate().skip(1) {
            let n = index + 1;
            if raw.is_empty() {
                continue;
            }
            let result = if raw.starts_with(b"#") {
                parse_header(ledger, raw)
            } else {
                parse_entry(raw, self_pid).map(|entry| {
                    if !ledger
                        .entries
                        .iter()
                        .any(|e| e.proc_ref() == entry.proc_ref())
                    {
                        ledger.entries.push(entry);
                    }
                })
            };
            if let Err(reason) = result {
                problems.push(problem(n, raw, reason));
            }
        }
        if ledger.run_id.is_empty() {
            problems.push(problem(0, b"", "no valid `# run` header"));
        }
        parsed.problems = problems;
        parsed
    }

    /// Reads and parses the ledger at `path`.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when the file cannot be read.
    pub fn read(path: &Path, self_pid: i32) -> Result<ParsedLedger, ProcTrackError> {
        let bytes = std::fs::read(path).map_err(|e| ProcTrackError::io("read", path, e))?;
        Ok(Self::parse(&bytes, self_pid))
    }

    /// Writes the ledger to `path` atomically: a temporary file in the same directory,
    /// fsync, rename over `path`, fsync of the directory.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] naming the step that failed; `path` is then unchanged.
    pub fn write_atomic(&self, path: &Path) -> Result<(), ProcTrackError> {
        write_atomic(path, &self.render())
    }
}

fn set_eval_path(
    list: &mut Vec<EvalPath>,
    eval_id: &str,
    path: &Path,
) -> Result<(), ProcTrackError> {
    validate_id("eval", eval_id)?;
    check_path(path)?;
    list.retain(|e| e.eval_id != eval_id);
    list.push(EvalPath {
        eval_id: eval_id.to_owned(),
        path: path.to_owned(),
    });
    Ok(())
}

fn parse_header(ledger: &mut Ledger, raw: &[u8]) -> Result<(), &'static str> {
    let rest = raw.strip_prefix(b"# ").ok_or("malformed header")?;
    let (key, value) = match rest.iter().position(|&b| b == b' ') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let text = || std::str::from_utf8(value).map_err(|_| "header is not UTF-8");
    match key {
        b"run" => {
            let id = text()?;
            validate_id("run", id).map_err(|_| "invalid run id")?;
            id.clone_into(&mut ledger.run_id);
        }
        b"owner" => {
            ledger.owner = Some(text()?.parse().map_err(|_| "invalid owner identity")?);
        }
        b"workspace" | b"cgroup" => {
            let split = value
                .iter()
                .position(|&b| b == b' ')
                .ok_or("expected <eval_id> <path>")?;
            let eval = std::str::from_utf8(&value[..split]).map_err(|_| "invalid eval id")?;
            let path = Path::new(OsStr::from_bytes(&value[split + 1..]));
            let list = if key == b"workspace" {
                &mut ledger.workspaces
            } else {
                &mut ledger.cgroups
            };
            set_eval_path(list, eval, path).map_err(|_| "invalid eval id or path")?;
        }
        b"cleaned" => {
            ledger.cleaned = Some(text()?.trim().parse().map_err(|_| "invalid cleaned time")?);
        }
        _ => return Err("unknown header"),
    }
    Ok(())
}

fn parse_entry(raw: &[u8], self_pid: i32) -> Result<LedgerEntry, &'static str> {
    let text = std::str::from_utf8(raw).map_err(|_| "process line is not UTF-8")?;
    let fields: Vec<&str> = text.split('\t').collect();
    let [pid, ticks, pgid, eval, comm] = fields[..] else {
        return Err("expected <pid>\\t<start_ticks>\\t<pgid>\\t<eval_id>\\t<comm>");
    };
    let pid: i32 = pid.parse().map_err(|_| "pid is not a number")?;
    if pid <= 1 {
        return Err("pid is 1 or lower: never signalled");
    }
    if pid == self_pid {
        return Err("pid is the reading process itself");
    }
    let start_ticks = ticks.parse().map_err(|_| "start ticks are not a number")?;
    let pgid: i32 = pgid.parse().map_err(|_| "pgid is not a number")?;
    if pgid <= 1 {
        return Err("pgid is 1 or lower: never signalled");
    }
    validate_id("eval", eval).map_err(|_| "invalid eval id")?;
    Ok(LedgerEntry {
        pid,
        start_ticks,
        pgid,
        eval_id: eval.to_owned(),
        comm: comm.to_owned(),
    })
}

/// Writes `bytes` to `path` atomically (temporary file, fsync, rename, fsync of the directory):
/// readers see the old file or the new one, never a torn one, even if the writer dies
/// mid-write. The ledger and every record of `hyoka-eval` are written through it.
///
/// # Errors
/// [`ProcTrackError::Io`] naming the step that failed; the temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ProcTrackError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
            .map_err(|e| ProcTrackError::io("create", &tmp, e))?;
        file.write_all(bytes)
            .map_err(|e| ProcTrackError::io("write", &tmp, e))?;
        file.sync_all()
            .map_err(|e| ProcTrackError::io("fsync", &tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| ProcTrackError::io("rename", path, e))?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| ProcTrackError::io("fsync", dir, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests;
