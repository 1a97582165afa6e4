//! The crash-safe ledger `reports/<run_id>/pids.txt`: what a run started, for `clean`.
//!
//! ```text
//! # hyoka-pids v1
//! # run <run_id>
//! # owner <pid> <start_ticks> <boot_id>
//! # instance <token>
//! # workspace <eval_id> <absolute path>
//! # kept <eval_id> <absolute path>
//! # cgroup <eval_id> <absolute path>
//! # cgroup-v1 <eval_id> <absolute path>
//! # cleaned <unix seconds>
//! <pid>\t<start_ticks>\t<pgid>\t<eval_id>\t<comm>
//! # -workspace <eval_id> <absolute path>
//! # -kept <eval_id> <absolute path>
//! # -cgroup <eval_id> <absolute path>
//! # -cgroup-v1 <eval_id> <absolute path>
//! # -process <pid> <start_ticks>
//! ```
//!
//! The file is a log read from the top: a `# -…` line drops what the same line without the
//! dash recorded earlier (a workspace removed, a process gone), a process line recorded again
//! replaces the earlier one, the last `# cleaned` counts. The run's owner appends each change
//! as whole lines in one `write` to the file opened `O_APPEND` (synced before the change it
//! records happens when the line must survive a crash of the machine: a workspace, a kept
//! workspace, the cleaned mark), and rewrites it atomically (temporary file, fsync, rename,
//! fsync of the directory) only to compact it, rarely, or after an append failed; `clean`
//! rewrites it too. A rewrite keeps the replaced file's owner and mode and says only what is
//! live (no `# -…` lines). So a crash loses at most lines that name what a reboot ends, or
//! leaves a stale line that `clean` verifies anyway (a removed workspace's, an exited
//! process's); it never drops a record of something that still exists. The parser is
//! tolerant: it reports garbage, dangerous pids and torn lines (an append cut short, or read
//! while it is written) as [`LedgerProblem`]s and never returns them as entries. It reads in one pass, in time linear in the file (a set
//! finds duplicate lines), and a file larger than
//! [`MAX_LEDGER_BYTES`](crate::MAX_LEDGER_BYTES) is not read at all: hyoka never writes one
//! that large, so it is reported as hostile.
//!
//! The `# instance` header (the run instance, see [`Instance`]) is what `clean` keys the
//! process marker, the cgroup leaves and the workspaces on; a ledger written before it
//! existed is still read, with the marker scan left out.
//!
//! The ledger is also the record of trust for the run's workspaces: a `# workspace` header is
//! what lets `clean` remove one (the marker on the directory must agree, but a marker alone,
//! which a process of the user may rewrite, proves nothing), and a `# kept` header keeps one
//! for the user whatever its marker says. The reports directory is where no eval's process
//! can write (the sandbox shows it read-only).
//!
//! `# cgroup` names the run's cgroup v2 leaves (one per eval); `# cgroup-v1` the leaves it
//! made in cgroup v1 hierarchies for resource limits (several per eval, one per hierarchy),
//! recorded before they exist, so `clean` removes what a killed run left.
//!
//! Entries for processes that have exited are dropped (`# -process`) once they are
//! confirmed gone (absent, a zombie, or their pid reused); an entry that is still listed when
//! the owner dies costs `clean` one identity check, nothing more, because `clean` verifies
//! every identity before it signals.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};
use serde::Serialize;

use crate::ProcTrackError;
use crate::evidence::read_bounded_at;
use crate::identity::{Identity, ProcInfo, ProcRef, validate_id};
use crate::instance::Instance;

/// The ledger's file name inside a run directory.
pub const LEDGER_FILE: &str = "pids.txt";

/// At most this many problems are listed one by one; the rest are counted in one more.
const MAX_PROBLEMS: usize = 100;

const MAGIC: &str = "# hyoka-pids v1";

/// Why a last line without its newline is refused.
pub(crate) const TORN: &str = "torn line (no trailing newline)";

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
    /// The run instance (`# instance`); `None` in a ledger written before instances existed.
    pub instance: Option<Instance>,
    /// The run's workspaces (`# workspace`).
    pub workspaces: Vec<EvalPath>,
    /// The workspaces kept for the user (`# kept`, per `--keep-workspace`).
    pub kept: Vec<EvalPath>,
    /// The run's cgroup v2 leaves (`# cgroup`).
    pub cgroups: Vec<EvalPath>,
    /// The run's cgroup v1 leaves (`# cgroup-v1`), several per eval.
    pub cgroups_v1: Vec<EvalPath>,
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

    /// Records that eval `eval_id`'s workspace at `path` is kept for the user (replacing an
    /// earlier record for the same eval).
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`] or [`ProcTrackError::InvalidPath`].
    pub fn set_kept(&mut self, eval_id: &str, path: &Path) -> Result<(), ProcTrackError> {
        set_eval_path(&mut self.kept, eval_id, path)
    }

    /// Records a cgroup header (replacing an earlier one for the same eval).
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`] or [`ProcTrackError::InvalidPath`].
    pub fn set_cgroup(&mut self, eval_id: &str, path: &Path) -> Result<(), ProcTrackError> {
        set_eval_path(&mut self.cgroups, eval_id, path)
    }

    /// Records a cgroup v1 leaf of eval `eval_id` (an eval has one per hierarchy it is
    /// limited through; recording the same path twice records it once).
    ///
    /// # Errors
    /// [`ProcTrackError::InvalidId`] or [`ProcTrackError::InvalidPath`].
    pub fn add_cgroup_v1(&mut self, eval_id: &str, path: &Path) -> Result<(), ProcTrackError> {
        validate_id("eval", eval_id)?;
        check_path(path)?;
        if !self.cgroups_v1.iter().any(|c| c.path == path) {
            self.cgroups_v1.push(EvalPath {
                eval_id: eval_id.to_owned(),
                path: path.to_owned(),
            });
        }
        Ok(())
    }

    /// The file's bytes.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + 48 * self.entries.len());
        let _ = writeln!(out, "{MAGIC}");
        let _ = writeln!(out, "# run {}", self.run_id);
        if let Some(owner) = &self.owner {
            let _ = writeln!(out, "# owner {owner}");
        }
        if let Some(instance) = &self.instance {
            let _ = writeln!(out, "# instance {instance}");
        }
        for (kind, list) in [
            ("workspace", &self.workspaces),
            ("kept", &self.kept),
            ("cgroup", &self.cgroups),
            ("cgroup-v1", &self.cgroups_v1),
        ] {
            for item in list {
                render_eval_path(&mut out, kind, item);
            }
        }
        if let Some(at) = self.cleaned {
            let _ = writeln!(out, "# cleaned {at}");
        }
        for e in &self.entries {
            render_entry(&mut out, e);
        }
        out
    }

    /// The lines to append to a ledger file that says `self` so that it says `new`: the
    /// records `new` dropped (`# -workspace`, `# -kept`, `# -cgroup`, `# -cgroup-v1`,
    /// `# -process`) first, then those it added or changed, and whether one of the added
    /// lines must survive a crash of the machine (a workspace, a kept workspace, the cleaned
    /// mark: directories on disk outlive a reboot; process lines and cgroup leaves name what
    /// a reboot ends). `None` when appending cannot say it (another run, owner or instance, a
    /// cleaned mark withdrawn): the file must be rewritten.
    pub(crate) fn delta(&self, new: &Self) -> Option<Delta> {
        if (&self.run_id, &self.owner, &self.instance) != (&new.run_id, &new.owner, &new.instance)
            || (self.cleaned.is_some() && new.cleaned.is_none())
        {
            return None;
        }
        let mut delta = Delta::default();
        let out = &mut delta.bytes;
        let lists = [
            ("workspace", &self.workspaces, &new.workspaces, true),
            ("kept", &self.kept, &new.kept, true),
            ("cgroup", &self.cgroups, &new.cgroups, false),
            ("cgroup-v1", &self.cgroups_v1, &new.cgroups_v1, false),
        ];
        let key = |e: &'_ EvalPath| (e.eval_id.clone(), e.path.clone());
        let mut added: Vec<(&str, &EvalPath, bool)> = Vec::new();
        for (kind, old, now, durable) in lists {
            if old == now {
                continue;
            }
            let before: HashSet<(String, PathBuf)> = old.iter().map(key).collect();
            let after: HashSet<(String, PathBuf)> = now.iter().map(key).collect();
            for item in old.iter().filter(|e| !after.contains(&key(e))) {
                render_eval_path(out, &format!("-{kind}"), item);
            }
            added.extend(
                now.iter()
                    .filter(|e| !before.contains(&key(e)))
                    .map(|e| (kind, e, durable)),
            );
        }
        let mut changed: Vec<&LedgerEntry> = Vec::new();
        if self.entries != new.entries {
            let after: HashMap<ProcRef, &LedgerEntry> =
                new.entries.iter().map(|e| (e.proc_ref(), e)).collect();
            let before: HashMap<ProcRef, &LedgerEntry> =
                self.entries.iter().map(|e| (e.proc_ref(), e)).collect();
            for e in self
                .entries
                .iter()
                .filter(|e| !after.contains_key(&e.proc_ref()))
            {
                let _ = writeln!(out, "# -process {} {}", e.pid, e.start_ticks);
            }
            changed.extend(
                new.entries
                    .iter()
                    .filter(|e| before.get(&e.proc_ref()).is_none_or(|old| old != e)),
            );
        }
        for (kind, item, durable) in added {
            render_eval_path(out, kind, item);
            delta.durable |= durable;
        }
        if new.cleaned != self.cleaned
            && let Some(at) = new.cleaned
        {
            let _ = writeln!(out, "# cleaned {at}");
            delta.durable = true;
        }
        for e in changed {
            render_entry(out, e);
        }
        Some(delta)
    }

    /// Parses a ledger, refusing every line that is malformed or names a pid that must never be
    /// signalled (≤ 1, or `self_pid`, the process that reads it).
    ///
    /// One pass, linear in the size of `bytes`; at most 100 problems are listed one by one.
    pub fn parse(bytes: &[u8], self_pid: i32) -> ParsedLedger {
        let mut parsed = ParsedLedger::default();
        let mut problems = Problems::default();
        let mut lines = bytes.split(|&b| b == b'\n').enumerate().peekable();
        if lines.peek().map(|(_, l)| *l) != Some(MAGIC.as_bytes()) {
            let first = lines.next().map(|(_, l)| l).unwrap_or_default();
            problems.push(
                1,
                first,
                "missing `# hyoka-pids v1` header: not a ledger this version can act on",
            );
            parsed.problems = problems.finish();
            return parsed;
        }
        lines.next();
        if lines.peek().is_none() {
            problems.push(1, MAGIC.as_bytes(), TORN);
        }
        let ledger = &mut parsed.ledger;
        // The process lines in the order they were first recorded, `None` once a `# -process`
        // line dropped one; an entry recorded again replaces the earlier one in place.
        let mut entries: Vec<Option<LedgerEntry>> = Vec::new();
        let mut index_of: HashMap<ProcRef, usize> = HashMap::new();
        while let Some((index, raw)) = lines.next() {
            let n = index + 1;
            if lines.peek().is_none() {
                // A well-formed file ends with a newline, so the last split piece is empty.
                if !raw.is_empty() {
                    problems.push(n, raw, TORN);
                }
                break;
            }
            if raw.is_empty() {
                continue;
            }
            let result = if let Some(gone) = raw.strip_prefix(b"# -process ") {
                parse_gone(gone).map(|r| {
                    if let Some(i) = index_of.remove(&r) {
                        entries[i] = None;
                    }
                })
            } else if raw.starts_with(b"#") {
                parse_header(ledger, raw)
            } else {
                parse_entry(raw, self_pid).map(|entry| {
                    if let Some(&i) = index_of.get(&entry.proc_ref()) {
                        entries[i] = Some(entry);
                    } else {
                        index_of.insert(entry.proc_ref(), entries.len());
                        entries.push(Some(entry));
                    }
                })
            };
            if let Err(reason) = result {
                problems.push(n, raw, reason);
            }
        }
        ledger.entries = entries.into_iter().flatten().collect();
        if ledger.run_id.is_empty() {
            problems.push(0, b"", "no valid `# run` header");
        }
        parsed.problems = problems.finish();
        parsed
    }

    /// Reads and parses the ledger at `path`, without following a link at `path`, refusing
    /// anything but a regular file and anything larger than [`MAX_LEDGER_BYTES`](crate::MAX_LEDGER_BYTES).
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] when the file cannot be read, [`ProcTrackError::Untrusted`]
    /// when it is a link, not a regular file, or too large.
    pub fn read(path: &Path, self_pid: i32) -> Result<ParsedLedger, ProcTrackError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path.file_name().unwrap_or_default();
        let dir = rustix::fs::open(
            if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            },
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| ProcTrackError::io("open", dir, e.into()))?;
        let bytes = read_bounded_at(dir.as_fd(), Path::new(name), path, None)?;
        Ok(Self::parse(&bytes, self_pid))
    }

    /// Writes the ledger to `path` atomically: a temporary file in the same directory,
    /// fsync, rename over `path`, fsync of the directory. A ledger it replaces keeps its
    /// owner and mode.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] naming the step that failed; `path` is then unchanged.
    pub fn write_atomic(&self, path: &Path) -> Result<(), ProcTrackError> {
        write_atomic(path, &self.render())
    }
}

/// Below this size the ledger file is only ever appended to.
const COMPACT_MIN_BYTES: u64 = 64 << 10;

/// The ledger file of a live run as its owner writes it: changes are appended (one `write`
/// of whole lines to a file opened `O_APPEND`, synced when a line must survive a crash of the
/// machine), and the file is rewritten atomically and synced, as a whole, only when it grew
/// to more than twice what it says (and past [`COMPACT_MIN_BYTES`]), when appending cannot
/// say the change, or after an append failed (a torn line is never appended to).
pub(crate) struct LedgerLog {
    path: PathBuf,
    file: std::fs::File,
    /// What the file says.
    state: Ledger,
    /// The file's length.
    len: u64,
    /// The length past which a compaction is considered.
    compact_at: u64,
    /// An append or a sync failed: the file's tail is unknown, so rewrite it.
    broken: bool,
}

impl LedgerLog {
    /// Writes `ledger` to `path` atomically and durably, and opens it for appending.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`] naming the step that failed.
    pub(crate) fn create(path: &Path, ledger: &Ledger) -> Result<Self, ProcTrackError> {
        let bytes = ledger.render();
        write_atomic(path, &bytes)?;
        Ok(Self {
            path: path.to_owned(),
            file: open_append(path)?,
            state: ledger.clone(),
            len: bytes.len() as u64,
            compact_at: COMPACT_MIN_BYTES.max(2 * bytes.len() as u64),
            broken: false,
        })
    }

    /// Makes the file say `ledger`.
    ///
    /// # Errors
    /// [`ProcTrackError::Io`]; the next call then rewrites the whole file.
    pub(crate) fn write(&mut self, ledger: &Ledger) -> Result<(), ProcTrackError> {
        let delta = match self.state.delta(ledger) {
            Some(delta) if !self.broken => delta,
            _ => return self.compact(ledger, &ledger.render()),
        };
        if delta.bytes.is_empty() {
            return Ok(());
        }
        let grown = self.len + delta.bytes.len() as u64;
        if grown > self.compact_at {
            let rendered = ledger.render();
            if 2 * rendered.len() as u64 <= grown {
                return self.compact(ledger, &rendered);
            }
            // Mostly live lines (a run that keeps many workspaces): appending stays cheaper.
            self.compact_at = 2 * grown;
        }
        self.broken = true;
        (&self.file)
            .write_all(&delta.bytes)
            .map_err(|e| ProcTrackError::io("append to", &self.path, e))?;
        self.len = grown;
        if delta.durable {
            self.file
                .sync_data()
                .map_err(|e| ProcTrackError::io("fsync", &self.path, e))?;
        }
        self.broken = false;
        ledger.clone_into(&mut self.state);
        Ok(())
    }

    fn compact(&mut self, ledger: &Ledger, bytes: &[u8]) -> Result<(), ProcTrackError> {
        self.broken = true;
        write_atomic(&self.path, bytes)?;
        self.file = open_append(&self.path)?;
        self.len = bytes.len() as u64;
        self.compact_at = COMPACT_MIN_BYTES.max(2 * self.len);
        self.broken = false;
        ledger.clone_into(&mut self.state);
        Ok(())
    }
}

fn open_append(path: &Path) -> Result<std::fs::File, ProcTrackError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| ProcTrackError::io("open", path, e))
}

/// What [`Ledger::delta`] appends.
#[derive(Debug, Default)]
pub(crate) struct Delta {
    /// The lines.
    pub(crate) bytes: Vec<u8>,
    /// Whether they must be synced before the change they record happens.
    pub(crate) durable: bool,
}

fn render_eval_path(out: &mut Vec<u8>, kind: &str, item: &EvalPath) {
    let _ = write!(out, "# {kind} {} ", item.eval_id);
    out.extend_from_slice(item.path.as_os_str().as_bytes());
    out.push(b'\n');
}

fn render_entry(out: &mut Vec<u8>, e: &LedgerEntry) {
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
        b"instance" => {
            ledger.instance = Some(text()?.parse().map_err(|_| "invalid instance token")?);
        }
        b"-workspace" | b"-kept" | b"-cgroup" | b"-cgroup-v1" => {
            let (eval, path) = eval_path(value)?;
            let list = match key {
                b"-workspace" => &mut ledger.workspaces,
                b"-kept" => &mut ledger.kept,
                b"-cgroup" => &mut ledger.cgroups,
                _ => &mut ledger.cgroups_v1,
            };
            list.retain(|e| !(e.eval_id == eval && e.path == path));
        }
        b"workspace" | b"kept" | b"cgroup" | b"cgroup-v1" => {
            let (eval, path) = eval_path(value)?;
            let result = match key {
                b"workspace" => set_eval_path(&mut ledger.workspaces, eval, path),
                b"kept" => set_eval_path(&mut ledger.kept, eval, path),
                b"cgroup" => set_eval_path(&mut ledger.cgroups, eval, path),
                _ => ledger.add_cgroup_v1(eval, path),
            };
            result.map_err(|_| "invalid eval id or path")?;
        }
        b"cleaned" => {
            ledger.cleaned = Some(text()?.trim().parse().map_err(|_| "invalid cleaned time")?);
        }
        _ => return Err("unknown header"),
    }
    Ok(())
}

/// The `<eval_id> <path>` of an `EvalPath` header.
fn eval_path(value: &[u8]) -> Result<(&str, &Path), &'static str> {
    let split = value
        .iter()
        .position(|&b| b == b' ')
        .ok_or("expected <eval_id> <path>")?;
    let eval = std::str::from_utf8(&value[..split]).map_err(|_| "invalid eval id")?;
    Ok((eval, Path::new(OsStr::from_bytes(&value[split + 1..]))))
}

/// The `<pid> <start_ticks>` of a `# -process` line.
fn parse_gone(value: &[u8]) -> Result<ProcRef, &'static str> {
    let text = std::str::from_utf8(value).map_err(|_| "header is not UTF-8")?;
    let (pid, ticks) = text
        .split_once(' ')
        .ok_or("expected # -process <pid> <start_ticks>")?;
    Ok(ProcRef {
        pid: pid.parse().map_err(|_| "pid is not a number")?,
        start_ticks: ticks.parse().map_err(|_| "start ticks are not a number")?,
    })
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

/// The problems of one parse: the first [`MAX_PROBLEMS`] in full, the rest counted.
#[derive(Default)]
struct Problems {
    listed: Vec<LedgerProblem>,
    more: usize,
}

impl Problems {
    fn push(&mut self, line: usize, raw: &[u8], reason: &'static str) {
        if self.listed.len() < MAX_PROBLEMS {
            self.listed.push(LedgerProblem {
                line,
                text: String::from_utf8_lossy(&raw[..raw.len().min(480)])
                    .chars()
                    .take(120)
                    .collect(),
                reason,
            });
        } else {
            self.more += 1;
        }
    }

    fn finish(mut self) -> Vec<LedgerProblem> {
        if self.more > 0 {
            self.listed.push(LedgerProblem {
                line: 0,
                text: format!("{} more", self.more),
                reason: "too many problems to list: the file is not a ledger hyoka wrote",
            });
        }
        self.listed
    }
}

/// Writes `bytes` to `path` atomically (temporary file, fsync, rename, fsync of the
/// directory): readers see the old file or the new one, never a torn one, even if the writer
/// dies mid-write. A file it replaces keeps its owner, group and mode; a new one gets mode
/// 0644 (less the umask). A bare file name is resolved in the current directory. The ledger
/// and every record of `hyoka-eval` are written through it.
///
/// # Errors
/// [`ProcTrackError::Io`] naming the step that failed; `path` is then unchanged and the
/// temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ProcTrackError> {
    write_atomic_path(path, |file| file.write_all(bytes), Durability::Synced)
}

/// [`write_atomic`] without the two fsyncs: readers still see the old file or the new one,
/// never a torn one, and a writer that dies (however it dies) leaves one or the other, but
/// a crash of the machine may lose the latest version. For files whose content is worth
/// nothing after a reboot (a live eval's `status.json`, the ledger's process lines, which
/// name processes of a boot that is over), where an fsync costs a journal commit for
/// nothing.
///
/// # Errors
/// As [`write_atomic`].
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> Result<(), ProcTrackError> {
    write_atomic_path(path, |file| file.write_all(bytes), Durability::Unsynced)
}

/// [`write_atomic`] with the file synced but not its directory: the new version's data is on
/// disk before its name appears, and the name becomes durable with the directory's next
/// sync. For a file that a later [`write_atomic`] in the same directory makes count (a
/// trial's records before its `report.json`): one directory sync covers them all.
///
/// # Errors
/// As [`write_atomic`].
pub fn write_atomic_file_synced(path: &Path, bytes: &[u8]) -> Result<(), ProcTrackError> {
    write_atomic_path(path, |file| file.write_all(bytes), Durability::FileSynced)
}

/// Whether an atomic write is also made durable (fsync of the file and of its directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Synced: the new version survives a crash of the machine once the call returns.
    Synced,
    /// The file's data synced before the rename, the directory left to a later sync.
    FileSynced,
    /// Atomic only.
    Unsynced,
}

/// [`write_atomic`] of what `write` writes into the new file, through a buffer: a large
/// record (a long run's `run.json`) is serialized straight into the file instead of into
/// memory first. `write`'s error is reported as a failed write, and the temporary file is
/// removed.
///
/// # Errors
/// As [`write_atomic`].
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), ProcTrackError> {
    write_atomic_path(
        path,
        |file| {
            let mut buffered = std::io::BufWriter::new(file);
            write(&mut buffered)?;
            buffered.flush()
        },
        Durability::Synced,
    )
}

fn write_atomic_path(
    path: &Path,
    content: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
    durability: Durability,
) -> Result<(), ProcTrackError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let name = path.file_name().unwrap_or_default();
    let dir_fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| ProcTrackError::io("open", dir, e.into()))?;
    write_atomic_at(dir_fd.as_fd(), dir, Path::new(name), content, durability)
}

/// [`write_atomic`] relative to an open directory: nothing is resolved through a path that
/// could have changed since the directory was opened and checked.
pub(crate) fn write_atomic_at(
    dir: BorrowedFd<'_>,
    dir_path: &Path,
    name: &Path,
    content: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
    durability: Durability,
) -> Result<(), ProcTrackError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let path = dir_path.join(name);
    let tmp_name = format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let tmp = dir_path.join(&tmp_name);
    // The file being replaced, if it is a regular file: its owner and mode carry over.
    let keep = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .filter(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file());
    let result = (|| {
        let fd = rustix::fs::openat(
            dir,
            tmp_name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| ProcTrackError::io("create", &tmp, e.into()))?;
        let mut file = std::fs::File::from(fd);
        content(&mut file).map_err(|e| ProcTrackError::io("write", &tmp, e))?;
        if let Some(old) = &keep {
            let (uid, gid) = (
                rustix::fs::Uid::from_raw(old.st_uid),
                rustix::fs::Gid::from_raw(old.st_gid),
            );
            let mine = rustix::fs::fstat(&file)
                .map_err(|e| ProcTrackError::io("inspect", &tmp, e.into()))?;
            if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid) {
                rustix::fs::fchown(&file, Some(uid), Some(gid))
                    .map_err(|e| ProcTrackError::io("keep the owner of", &path, e.into()))?;
            }
            rustix::fs::fchmod(&file, Mode::from_raw_mode(old.st_mode & 0o7777))
                .map_err(|e| ProcTrackError::io("keep the mode of", &path, e.into()))?;
        }
        if durability != Durability::Unsynced {
            file.sync_all()
                .map_err(|e| ProcTrackError::io("fsync", &tmp, e))?;
        }
        rustix::fs::renameat(dir, tmp_name.as_str(), dir, name)
            .map_err(|e| ProcTrackError::io("rename", &path, e.into()))?;
        if durability != Durability::Synced {
            return Ok(());
        }
        rustix::fs::fsync(dir).map_err(|e| ProcTrackError::io("fsync", dir_path, e.into()))
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(dir, tmp_name.as_str(), AtFlags::empty());
    }
    result
}

#[cfg(test)]
mod tests;
