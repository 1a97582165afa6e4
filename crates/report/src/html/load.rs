//! Reading a run's records for the page, treating every file as untrusted: nothing is read
//! outside the run directory (however a path or a link points), every file has a size cap,
//! and only regular files are opened.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use hyoka_eval::TokenUsage;
use serde::de::DeserializeOwned;

use super::model::{EvalLine, ReportFile, RunFile, TimelineFile};
use crate::error::ReportError;

/// The most bytes of `run.json` read (a run of 100,000 trials writes about 30 MB).
pub(super) const RUN_CAP: u64 = 256 << 20;
/// The most bytes of one `report.json` read.
pub(super) const REPORT_CAP: u64 = 16 << 20;
/// The most bytes of one `action_timeline.json` read (10,000 events with 512-byte inputs
/// take about 8 MB).
pub(super) const TIMELINE_CAP: u64 = 64 << 20;
/// The bytes of `output.log` tails of a whole run, shared out among its trials when the
/// options leave the tail length to the page.
pub(super) const LOG_BUDGET: u64 = 4 << 20;
/// The shortest and the longest automatic tail of one trial's `output.log`.
pub(super) const TAIL_RANGE: (u64, u64) = (512, 16 << 10);

/// How much of each trial a page keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlOptions {
    /// Bytes of the end of each trial's `output.log` on the page (half as many of `build.log`
    /// and `review.log`). `None` shares 4 MiB out among the run's trials, at least 512 bytes
    /// and at most 16 KiB each.
    pub log_tail_bytes: Option<u64>,
    /// The most timeline events of one trial on the page; the rest are counted.
    pub max_events: usize,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        Self {
            log_tail_bytes: None,
            max_events: 2000,
        }
    }
}

/// A run read for a page: its `run.json` and, per trial, what its records hold.
#[derive(Debug)]
pub struct RunRecords {
    /// The input as the caller named it, shown on the page.
    pub(super) source: String,
    /// Where the page goes by default.
    pub(super) default_page: PathBuf,
    pub(super) run: RunFile,
    pub(super) trials: Vec<TrialRecords>,
}

/// One trial's records. Missing or refused files leave their field empty and say why in
/// `problems`.
#[derive(Debug, Default)]
pub(super) struct TrialRecords {
    pub(super) line: EvalLine,
    pub(super) report: Option<ReportFile>,
    pub(super) timeline: Option<TimelineFile>,
    pub(super) output: Option<Tail>,
    pub(super) build_log: Option<Tail>,
    pub(super) review_log: Option<Tail>,
    /// `changes.json`: the files the agent changed, with their diffs.
    pub(super) changes: Option<hyoka_eval::ChangesRecord>,
    /// The ends of `services/<name>.log`, by service name.
    pub(super) service_logs: Vec<(String, Tail)>,
    pub(super) problems: Vec<String>,
}

/// The end of a log: text without terminal escapes, from a line start where the cut allows.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub(super) struct Tail {
    pub(super) text: String,
    /// The file's size in bytes.
    pub(super) size: u64,
    /// Whether the file holds more than `text`.
    pub(super) cut: bool,
}

impl RunRecords {
    /// Reads a run for a page: a run directory (holding `run.json`) or a `run.json` file (a
    /// merged one too), then every trial's `report.json` that `run.json` names (relative to
    /// the file's directory) and the `action_timeline.json`, `output.log`, `build.log` and
    /// `review.log` beside it.
    ///
    /// # Errors
    /// [`ReportError::NotARun`] when the input or its `run.json` cannot be read,
    /// [`ReportError::Parse`] when `run.json` is not a run. A trial's missing or hostile
    /// records are not errors: the page shows why they are absent.
    pub fn load(input: &Path, options: &HtmlOptions) -> Result<Self, ReportError> {
        let not_a_run = |reason: String| ReportError::NotARun {
            path: input.to_owned(),
            reason,
        };
        let (dir, file_name, default_page) = if input.is_dir() {
            (
                input.to_owned(),
                "run.json".to_owned(),
                input.join("report.html"),
            )
        } else {
            let name = input
                .file_name()
                .ok_or_else(|| not_a_run("not a run directory or a run.json".to_owned()))?;
            let dir = match input.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
                _ => PathBuf::from("."),
            };
            let page = if name == "run.json" {
                dir.join("report.html")
            } else {
                input.with_extension("html")
            };
            (dir, name.to_string_lossy().into_owned(), page)
        };
        let root = Root::open(&dir).map_err(|r| not_a_run(r.to_string()))?;
        let run_path = root
            .resolve(Path::new(&file_name))
            .map_err(|r| not_a_run(format!("{file_name}: {r}")))?;
        let bytes = root
            .read(&run_path, RUN_CAP)
            .map_err(|r| not_a_run(format!("{file_name}: {r}")))?;
        let mut run: RunFile =
            serde_json::from_slice(&bytes).map_err(|source| ReportError::Parse {
                path: input.to_owned(),
                source,
            })?;
        // Every field has a default so that old and partial records still draw, so JSON of
        // anything else (`{}`, `[]`, another tool's file) would parse as an empty run: a
        // run.json names its run.
        if run.run_id.is_empty() {
            return Err(ReportError::NotARun {
                path: input.to_owned(),
                reason: "not a run.json: it names no run_id".to_owned(),
            });
        }
        let tail = options
            .log_tail_bytes
            .unwrap_or_else(|| auto_tail(run.evals.len()));
        let lines = std::mem::take(&mut run.evals);
        // Trials are read on every core: each is a few files to open, check and parse.
        let workers = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let per = lines.len().div_ceil(workers).max(1);
        let trials = std::thread::scope(|scope| {
            let parts: Vec<_> = (lines.chunks(per))
                .map(|part| {
                    let root = &root;
                    scope.spawn(move || {
                        (part.iter().cloned())
                            .map(|line| load_trial(root, line, tail, options.max_events))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let mut trials = Vec::with_capacity(lines.len());
            for part in parts {
                trials.extend(
                    part.join()
                        .map_err(|_| not_a_run("a thread reading its trials failed".to_owned()))?,
                );
            }
            Ok(trials)
        })?;
        Ok(Self {
            source: input.display().to_string(),
            default_page,
            run,
            trials,
        })
    }

    /// How many trials the run lists.
    pub fn trials(&self) -> usize {
        self.trials.len()
    }

    /// Where the page of this run goes when the caller names no file: `report.html` in the
    /// run directory (also for its `run.json`); for another file, such as a merged
    /// `merged.json`, the same name with `.html`.
    pub fn default_page(&self) -> &Path {
        &self.default_page
    }
}

/// The automatic `output.log` tail of one of `trials` trials: the run's budget shared out,
/// within [`TAIL_RANGE`].
pub(super) fn auto_tail(trials: usize) -> u64 {
    let share = LOG_BUDGET / u64::try_from(trials.max(1)).unwrap_or(u64::MAX);
    share.clamp(TAIL_RANGE.0, TAIL_RANGE.1)
}

fn load_trial(root: &Root, line: EvalLine, tail: u64, max_events: usize) -> TrialRecords {
    let mut trial = TrialRecords {
        line,
        ..TrialRecords::default()
    };
    if trial.line.report.is_empty() {
        trial
            .problems
            .push("run.json names no report.json".to_owned());
        return trial;
    }
    let report = match root.resolve(Path::new(&trial.line.report)) {
        Ok(path) => path,
        Err(refusal) => {
            trial.problems.push(format!("report.json: {refusal}"));
            return trial;
        }
    };
    trial.report = read_json(
        root,
        &report,
        REPORT_CAP,
        "report.json",
        &mut trial.problems,
    );
    let Some(dir) = report.parent() else {
        return trial;
    };
    // The report's directory is real and inside the run directory, so a file beside it needs
    // no resolving: opening it refuses a link, and the opened file is checked again.
    let mut timeline: Option<TimelineFile> = read_json(
        root,
        &dir.join("action_timeline.json"),
        TIMELINE_CAP,
        "action_timeline.json",
        &mut trial.problems,
    );
    if let Some(timeline) = &mut timeline {
        timeline.events.truncate(max_events);
    }
    trial.timeline = timeline;
    for (name, slot, bytes, required) in [
        ("output.log", &mut trial.output, tail, true),
        ("build.log", &mut trial.build_log, tail / 2, false),
        ("review.log", &mut trial.review_log, tail / 2, false),
    ] {
        match root.tail(&dir.join(name), bytes) {
            Ok(read) => *slot = Some(read),
            Err(Refusal::Missing) if !required => {}
            Err(refusal) => trial.problems.push(format!("{name}: {refusal}")),
        }
    }
    if dir
        .join(hyoka_eval::CHANGES_FILE)
        .symlink_metadata()
        .is_ok()
    {
        trial.changes = read_json(
            root,
            &dir.join(hyoka_eval::CHANGES_FILE),
            CHANGES_CAP,
            hyoka_eval::CHANGES_FILE,
            &mut trial.problems,
        );
    }
    trial.service_logs = service_logs(root, &dir.join("services"), tail / 2, &mut trial.problems);
    trial
}

/// The most bytes of `changes.json` a page reads (the harness writes at most 256 KiB of
/// diffs and 200 names).
pub(super) const CHANGES_CAP: u64 = 2 << 20;

/// The most service logs a trial shows.
const SERVICE_LOGS: usize = 16;

/// The ends of the `*.log` files in a trial's `services` directory (a real directory, not
/// a link), sorted by name, at most [`SERVICE_LOGS`] of them.
fn service_logs(
    root: &Root,
    dir: &Path,
    bytes: u64,
    problems: &mut Vec<String>,
) -> Vec<(String, Tail)> {
    let is_dir = dir.symlink_metadata().is_ok_and(|m| m.file_type().is_dir());
    let Ok(listing) = std::fs::read_dir(dir)
        .map_err(drop)
        .and_then(|l| if is_dir { Ok(l) } else { Err(()) })
    else {
        return Vec::new();
    };
    let mut names: Vec<String> = listing
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| Path::new(n).extension().is_some_and(|e| e == "log"))
        .take(4096)
        .collect();
    names.sort();
    let mut logs = Vec::new();
    for name in names.into_iter().take(SERVICE_LOGS) {
        match root.tail(&dir.join(&name), bytes) {
            Ok(tail) => logs.push((name[..name.len() - ".log".len()].to_owned(), tail)),
            Err(refusal) => problems.push(format!("services/{name}: {refusal}")),
        }
    }
    logs
}

fn read_json<T: DeserializeOwned>(
    root: &Root,
    path: &Path,
    cap: u64,
    name: &str,
    problems: &mut Vec<String>,
) -> Option<T> {
    let bytes = root
        .read(path, cap)
        .map_err(|refusal| problems.push(format!("{name}: {refusal}")))
        .ok()?;
    serde_json::from_slice(&bytes)
        .map_err(|err| problems.push(format!("{name}: not valid: {err}")))
        .ok()
}

/// Why a record was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// It does not exist.
    Missing,
    /// Its path, or a link on the way, leads outside the run directory.
    Outside,
    /// It is not a regular file (a directory, a FIFO, a device).
    NotAFile,
    /// It is larger than the cap.
    TooLarge(u64),
    /// It could not be read.
    Io(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => f.write_str("not found"),
            Self::Outside => f.write_str("refused: it leads outside the run directory"),
            Self::NotAFile => f.write_str("refused: not a regular file"),
            Self::TooLarge(cap) => write!(f, "refused: larger than {cap} bytes"),
            Self::Io(err) => write!(f, "cannot read: {err}"),
        }
    }
}

impl From<std::io::Error> for Refusal {
    fn from(err: std::io::Error) -> Self {
        if err.kind() == std::io::ErrorKind::NotFound {
            Self::Missing
        } else {
            Self::Io(err.to_string())
        }
    }
}

/// The run directory every record must lie in, canonical.
#[derive(Debug)]
pub(super) struct Root {
    dir: PathBuf,
}

impl Root {
    pub(super) fn open(dir: &Path) -> Result<Self, Refusal> {
        let dir = std::fs::canonicalize(dir)?;
        if !dir.is_dir() {
            return Err(Refusal::NotAFile);
        }
        Ok(Self { dir })
    }

    /// The real path of a file a record names: relative to the run directory, or absolute (a
    /// merged `run.json` may name its shards' records so), with every link resolved; refused
    /// unless it lies inside the run directory.
    pub(super) fn resolve(&self, named: &Path) -> Result<PathBuf, Refusal> {
        if named.as_os_str().is_empty()
            || named
                .components()
                .any(|c| matches!(c, Component::Prefix(_)))
        {
            return Err(Refusal::Missing);
        }
        let real = std::fs::canonicalize(self.dir.join(named))?;
        if real.starts_with(&self.dir) {
            Ok(real)
        } else {
            Err(Refusal::Outside)
        }
    }

    /// Opens a resolved file without following a link at its end, without blocking on a
    /// FIFO, and proves through `/proc/self/fd` that what was opened lies inside the run
    /// directory (a link swapped in on the way after [`Root::resolve`] is caught here).
    fn open_file(&self, path: &Path) -> Result<(File, u64), Refusal> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|err| {
                if err.raw_os_error() == Some(libc::ELOOP) {
                    Refusal::Outside
                } else {
                    Refusal::from(err)
                }
            })?;
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
        if !opened.starts_with(&self.dir) {
            return Err(Refusal::Outside);
        }
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(Refusal::NotAFile);
        }
        Ok((file, meta.len()))
    }

    /// Reads a whole file of at most `cap` bytes.
    pub(super) fn read(&self, path: &Path, cap: u64) -> Result<Vec<u8>, Refusal> {
        let (file, len) = self.open_file(path)?;
        if len > cap {
            return Err(Refusal::TooLarge(cap));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        file.take(cap + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > cap {
            return Err(Refusal::TooLarge(cap));
        }
        Ok(bytes)
    }

    /// Reads the last `bytes` bytes of a file of any size, from the first line start within
    /// them when the cut falls inside a line, as text without terminal escapes.
    pub(super) fn tail(&self, path: &Path, bytes: u64) -> Result<Tail, Refusal> {
        let (mut file, size) = self.open_file(path)?;
        let start = size.saturating_sub(bytes);
        file.seek(SeekFrom::Start(start))?;
        let mut raw = Vec::new();
        file.take(bytes).read_to_end(&mut raw)?;
        let mut from = 0;
        if start > 0
            && let Some(newline) = memchr_newline(&raw)
        {
            from = newline + 1;
        }
        let cut = start > 0;
        let text = String::from_utf8_lossy(&strip_ansi_escapes::strip(&raw[from..])).into_owned();
        Ok(Tail { text, size, cut })
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    // A line start is worth a short search only; a log of one long line keeps its cut.
    bytes.iter().take(1024).position(|&b| b == b'\n')
}

pub(super) fn agent_of(trial: &TrialRecords) -> Option<String> {
    (trial.line.agent.clone()).or_else(|| trial.report.as_ref().and_then(|r| r.agent.clone()))
}

pub(super) fn status(trial: &TrialRecords) -> &str {
    match &trial.report {
        Some(r) if !r.status.is_empty() => &r.status,
        _ if !trial.line.status.is_empty() => &trial.line.status,
        _ => "unknown",
    }
}

pub(super) fn termination(trial: &TrialRecords) -> &str {
    match &trial.report {
        Some(r) if !r.termination.is_empty() => &r.termination,
        _ => &trial.line.termination,
    }
}

pub(super) fn usage(trial: &TrialRecords) -> Option<TokenUsage> {
    trial
        .report
        .as_ref()
        .and_then(|r| r.usage)
        .or(trial.line.usage)
}
