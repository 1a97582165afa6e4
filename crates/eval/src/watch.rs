//! Watching the workspace while the agent runs: usage and file events, as they happen.
//!
//! An inotify watcher (through `notify`) reports each changed path; a [`UsageTracker`] turns
//! that into current usage in O(1) per file event. Removed or renamed directories and lost
//! events trigger a full rescan. Where no watcher can be placed (inotify limits), a poller
//! rescans twice a second instead. Either way the run ends with a final scan.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyoka_workspace::{Snapshot, Usage, UsageTracker};
use notify::event::{EventKind, ModifyKind, RemoveKind, RenameMode};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc::UnboundedSender;

/// What happened to a file, for the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChange {
    /// It appeared.
    Created,
    /// It was written.
    Changed,
    /// It was removed.
    Deleted,
}

/// A message from a workspace watcher: the usage now, and the file event that changed it.
#[derive(Debug, Clone)]
pub struct WatchUpdate {
    /// The workspace's usage after the change.
    pub usage: Usage,
    /// The file event (its path relative to the workspace), when one file changed; `None`
    /// after a rescan.
    pub change: Option<(FileChange, String)>,
}

/// A running watcher; dropping it stops watching.
pub(crate) struct WorkspaceWatcher {
    _watcher: Option<RecommendedWatcher>,
    poller: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for WorkspaceWatcher {
    fn drop(&mut self) {
        if let Some(poller) = self.poller.take() {
            poller.abort();
        }
    }
}

/// Starts watching `root`, sending every usage change to `tx`.
pub(crate) fn watch(
    root: &Path,
    snapshot: Snapshot,
    tx: UnboundedSender<WatchUpdate>,
) -> WorkspaceWatcher {
    let mut tracker = UsageTracker::new(root, snapshot.clone());
    let baseline = snapshot.clone();
    let root_buf = root.to_owned();
    let handler_tx = tx.clone();
    let handler = move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else {
            let _ = tracker.rescan();
            let _ = handler_tx.send(WatchUpdate {
                usage: tracker.usage(),
                change: None,
            });
            return;
        };
        if !event.need_rescan()
            && renamed_file(&mut tracker, (&root_buf, &baseline), &event, &handler_tx)
        {
            return;
        }
        if event.need_rescan() || needs_rescan(event.kind) {
            if let Ok(usage) = tracker.rescan() {
                let _ = handler_tx.send(WatchUpdate {
                    usage,
                    change: None,
                });
            }
            return;
        }
        let Some(change) = change_of(event.kind) else {
            return;
        };
        for path in &event.paths {
            if path == &root_buf {
                continue;
            }
            let before = tracker.usage();
            let usage = tracker.update(path);
            if usage != before {
                let rel = path
                    .strip_prefix(&root_buf)
                    .unwrap_or(path)
                    .display()
                    .to_string();
                let _ = handler_tx.send(WatchUpdate {
                    usage,
                    change: Some((change, rel)),
                });
            }
        }
    };
    match notify::recommended_watcher(handler).and_then(|mut watcher| {
        watcher.watch(root, RecursiveMode::Recursive)?;
        Ok(watcher)
    }) {
        Ok(watcher) => WorkspaceWatcher {
            _watcher: Some(watcher),
            poller: None,
        },
        Err(err) => {
            tracing::warn!(error = %err, "cannot watch the workspace; polling instead");
            WorkspaceWatcher {
                _watcher: None,
                poller: Some(tokio::spawn(poll(root.to_owned(), snapshot, tx))),
            }
        }
    }
}

async fn poll(root: PathBuf, snapshot: Snapshot, tx: UnboundedSender<WatchUpdate>) {
    let mut tracker = UsageTracker::new(&root, snapshot);
    let mut last = None;
    loop {
        if let Ok(usage) = tracker.rescan()
            && last != Some(usage)
        {
            last = Some(usage);
            if tx
                .send(WatchUpdate {
                    usage,
                    change: None,
                })
                .is_err()
            {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A file renamed into place: many programs write a temp name and rename it (Claude Code
/// 2.1 writes `g.txt.tmp.<pid>.<hex>`, then renames it to `g.txt`), so the final name is
/// the file the agent wrote, recorded as created (or changed, for a file of the `baseline`,
/// the workspace before the agent: the counts may already hold the file when the events of
/// the temp name come late, so they cannot tell).
/// The source of a file rename just leaves the count; a directory's rename moves many paths
/// and is rescanned. Returns whether the event was handled.
fn renamed_file(
    tracker: &mut UsageTracker,
    (root, baseline): (&Path, &Snapshot),
    event: &notify::Event,
    tx: &UnboundedSender<WatchUpdate>,
) -> bool {
    let EventKind::Modify(ModifyKind::Name(mode)) = event.kind else {
        return false;
    };
    match mode {
        RenameMode::From => {
            // A file the tracker counted leaves the count at once; anything else (a
            // directory, a file it never saw) needs the rescan.
            let Some(path) = event.paths.first() else {
                return false;
            };
            let before = tracker.usage();
            let usage = tracker.update(path);
            if usage == before {
                return false;
            }
            let _ = tx.send(WatchUpdate {
                usage,
                change: None,
            });
            true
        }
        RenameMode::To => {
            let Some(path) = event.paths.first().filter(|p| !p.is_dir()) else {
                return false;
            };
            if path == root {
                return false;
            }
            let usage = tracker.update(path);
            let rel = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            let change = if baseline.get(&rel).is_some() {
                FileChange::Changed
            } else {
                FileChange::Created
            };
            let _ = tx.send(WatchUpdate {
                usage,
                change: Some((change, rel)),
            });
            true
        }
        // The `To` event already recorded the destination of a file.
        RenameMode::Both => event.paths.get(1).is_some_and(|p| !p.is_dir()),
        _ => false,
    }
}

/// Directory removals and renames move many paths at once: rescan instead of guessing.
fn needs_rescan(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::Remove(RemoveKind::Folder)
            | EventKind::Modify(ModifyKind::Name(
                RenameMode::From | RenameMode::Both | RenameMode::Any
            ))
    )
}

fn change_of(kind: EventKind) -> Option<FileChange> {
    match kind {
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(RenameMode::To)) => {
            Some(FileChange::Created)
        }
        EventKind::Modify(
            ModifyKind::Data(_) | ModifyKind::Any | ModifyKind::Other | ModifyKind::Metadata(_),
        ) => Some(FileChange::Changed),
        EventKind::Remove(_) => Some(FileChange::Deleted),
        _ => None,
    }
}

/// This machine's inotify limits (`max_user_watches`, `max_user_instances`), where they can
/// be read. Without enough watches a workspace is polled instead of watched.
pub fn inotify_limits() -> (Option<u64>, Option<u64>) {
    let read = |name: &str| {
        std::fs::read_to_string(Path::new("/proc/sys/fs/inotify").join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    (read("max_user_watches"), read("max_user_instances"))
}
