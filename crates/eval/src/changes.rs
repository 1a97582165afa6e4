//! `changes.json`: the files the agent created, changed or deleted, with their diffs from the
//! starter to the end state, bounded.
//!
//! The agent phase's final scan names up to [`MAX_CHANGES_LISTED`] changed paths in the walk
//! it does anyway ([`scan_changes`](hyoka_workspace::scan_changes)); when it names none, no
//! file is read and no record written, so a trial that changed nothing pays nothing. For
//! the named ones, each text file of at most [`MAX_DIFF_FILE_BYTES`] on both sides gets a
//! unified diff (the starter's copy against the workspace's, read without following links
//! and never blocking on a FIFO), until the diffs hold [`MAX_DIFF_BYTES`]; every file left
//! without a diff says why in `note`, and `left_out` counts the changes not listed at all.
//! The cost of a trial that changed files is bounded by these figures: at most
//! 2 × 64 KiB read per listed file and 256 KiB of diff text, one record write.

use std::path::Path;

use serde::{Deserialize, Serialize};

use hyoka_workspace::{BoundedRead, Change, ChangeKind, Usage, read_beneath};

/// The record's file name in the eval's directory.
pub const CHANGES_FILE: &str = "changes.json";

/// The most changed paths a record lists.
pub const MAX_CHANGES_LISTED: usize = 200;

/// The largest file (on either side) that gets a diff.
pub const MAX_DIFF_FILE_BYTES: u64 = 64 << 10;

/// The most diff text one record holds.
pub const MAX_DIFF_BYTES: usize = 256 << 10;

/// `changes.json`: what the agent changed in its workspace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChangesRecord {
    /// The changes listed, in the order the scan found them.
    pub files: Vec<ChangedFile>,
    /// Every change the scan counted: files created, changed and deleted.
    pub total: u64,
    /// Changes counted but not listed (beyond [`MAX_CHANGES_LISTED`]).
    pub left_out: u64,
    /// Bytes of diff text in `files`.
    pub diff_bytes: u64,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChangedFile {
    /// Its path in the workspace.
    pub path: String,
    /// `created`, `changed` or `deleted`.
    pub change: String,
    /// Its size at the end (0 when deleted).
    pub bytes: u64,
    /// The unified diff from the starter's file (none for a created file) to the end state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Why there is no diff (a binary or large file, no starter copy, the budget spent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The record of `changes` (named by the final scan, which counted `usage`) between the
/// `starter` directory (if any) and the `workspace`.
pub(crate) fn record_changes(
    workspace: &Path,
    starter: Option<&Path>,
    usage: &Usage,
    changes: &[Change],
) -> ChangesRecord {
    let total = usage.files + usage.deleted;
    let mut record = ChangesRecord {
        total,
        left_out: total.saturating_sub(changes.len() as u64),
        ..ChangesRecord::default()
    };
    let mut spent = 0usize;
    for change in changes {
        let (diff, note) = match diff_of(workspace, starter, change) {
            Ok(diff) if diff.is_empty() => (
                None,
                Some("the same contents (its times or inode changed)".to_owned()),
            ),
            Ok(diff) if spent + diff.len() > MAX_DIFF_BYTES => (
                None,
                Some(format!(
                    "left out: the record's {} KiB of diffs were spent",
                    MAX_DIFF_BYTES >> 10
                )),
            ),
            Ok(diff) => {
                spent += diff.len();
                (Some(diff), None)
            }
            Err(why) => (None, Some(why)),
        };
        record.files.push(ChangedFile {
            path: change.path.clone(),
            change: change.kind.as_str().to_owned(),
            bytes: change.size,
            diff,
            note,
        });
    }
    record.diff_bytes = spent as u64;
    record
}

/// The diff of one change, or why there is none.
fn diff_of(workspace: &Path, starter: Option<&Path>, change: &Change) -> Result<String, String> {
    let rel = Path::new(&change.path);
    let read = |root: &Path| -> Result<BoundedRead, String> {
        read_beneath(root, rel, MAX_DIFF_FILE_BYTES).map_err(|e| format!("not read: {e}"))
    };
    let after = match change.kind {
        ChangeKind::Deleted => None,
        _ => Some(read(workspace)?),
    };
    let before = match (change.kind, starter) {
        (ChangeKind::Created, _) => None,
        (_, Some(starter)) => Some(read(starter).map_err(|_| {
            "no diff: not in the starter (setup, a service or an injected file wrote it)".to_owned()
        })?),
        (_, None) => {
            return Err("no diff: there is no starter to compare with".to_owned());
        }
    };
    let text = |read: Option<&BoundedRead>| -> Result<String, String> {
        let Some(read) = read else {
            return Ok(String::new());
        };
        if read.is_cut() {
            return Err(format!(
                "no diff: larger than {} KiB ({} bytes)",
                MAX_DIFF_FILE_BYTES >> 10,
                read.size
            ));
        }
        match std::str::from_utf8(&read.bytes) {
            Ok(text) if !text.contains('\0') => Ok(text.to_owned()),
            _ => Err(format!("no diff: binary ({} bytes)", read.size)),
        }
    };
    let (old, new) = (text(before.as_ref())?, text(after.as_ref())?);
    if old == new {
        return Ok(String::new());
    }
    let (a, b) = match change.kind {
        ChangeKind::Created => ("/dev/null".to_owned(), format!("b/{}", change.path)),
        ChangeKind::Deleted => (format!("a/{}", change.path), "/dev/null".to_owned()),
        ChangeKind::Changed => (format!("a/{}", change.path), format!("b/{}", change.path)),
    };
    Ok(similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&a, &b)
        .to_string())
}

#[cfg(test)]
mod tests;
