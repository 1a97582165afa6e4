//! The changes record: diffs of text files, notes for the rest, within its bounds.

use std::path::Path;

use hyoka_workspace::{Snapshot, copy_tree, scan_changes};

use super::{MAX_DIFF_FILE_BYTES, record_changes};

/// A starter, a workspace copied from it, `edit` applied to the workspace, and the record.
fn check(starter: &[(&str, &[u8])], edit: impl FnOnce(&Path), expected: &[(&str, &str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let (from, ws) = (dir.path().join("starter"), dir.path().join("ws"));
    std::fs::create_dir_all(&from).unwrap();
    for (rel, bytes) in starter {
        std::fs::write(from.join(rel), bytes).unwrap();
    }
    std::fs::create_dir_all(&ws).unwrap();
    copy_tree(&from, &ws).unwrap();
    let snapshot = Snapshot::take(&ws).unwrap();
    edit(&ws);
    let (usage, changes) = scan_changes(&ws, &snapshot, 100).unwrap();
    let record = record_changes(&ws, Some(&from), &usage, &changes);
    let mut got: Vec<(String, String, String)> = record
        .files
        .iter()
        .map(|f| {
            (
                f.path.clone(),
                f.change.clone(),
                f.diff
                    .clone()
                    .or_else(|| f.note.clone())
                    .unwrap_or_default(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String, String)> = expected
        .iter()
        .map(|(p, c, d)| ((*p).to_owned(), (*c).to_owned(), (*d).to_owned()))
        .collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(record.total, usage.files + usage.deleted);
}

#[test]
fn text_files_get_unified_diffs_from_the_starter() {
    check(
        &[("a.txt", b"one\ntwo\n"), ("gone.txt", b"bye\n")],
        |ws| {
            std::fs::write(ws.join("a.txt"), "one\n2\n").unwrap();
            std::fs::write(ws.join("new.txt"), "hi\n").unwrap();
            std::fs::remove_file(ws.join("gone.txt")).unwrap();
        },
        &[
            (
                "a.txt",
                "changed",
                "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n",
            ),
            (
                "new.txt",
                "created",
                "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n",
            ),
            (
                "gone.txt",
                "deleted",
                "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
            ),
        ],
    );
}

#[test]
fn binary_large_and_unknown_files_say_why_they_have_no_diff() {
    let big = vec![b'x'; usize::try_from(MAX_DIFF_FILE_BYTES).unwrap() + 1];
    check(
        &[("bin", b"\0\x01"), ("big", b"small\n")],
        |ws| {
            std::fs::write(ws.join("bin"), b"\0\x02").unwrap();
            std::fs::write(ws.join("big"), &big).unwrap();
            std::os::unix::fs::symlink("/etc/passwd", ws.join("link")).unwrap();
        },
        &[
            ("bin", "changed", "no diff: binary (2 bytes)"),
            (
                "big",
                "changed",
                "no diff: larger than 64 KiB (65537 bytes)",
            ),
            (
                "link",
                "created",
                "not read: path \"link\" escapes the workspace",
            ),
        ],
    );
}
