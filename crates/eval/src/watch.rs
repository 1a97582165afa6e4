//! Watching the workspace while the agent runs: usage and file events, as they happen.
//!
//! An inotify watcher (through `notify`) reports each changed path; a [`UsageTracker`] turns
//! that into current usage in O(1) per file event. Removed or renamed directories and lost
//! events trigger a full rescan. Where no watcher can be placed (inotify limits), a poller
//! rescans twice a second instead. Either way the run ends with a final scan.
//!
//! One watcher (one inotify instance and its thread) serves every workspace of the process:
//! each workspace adds its root to it and routes the events below that root to its own
//! tracker, so a trial starts no thread and opens no instance of its own.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
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
    /// The root watched through the shared watcher.
    watched: Option<PathBuf>,
    poller: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for WorkspaceWatcher {
    fn drop(&mut self) {
        if let Some(poller) = self.poller.take() {
            poller.abort();
        }
        if let Some(root) = self.watched.take() {
            shared_remove(&root);
        }
    }
}

/// What a workspace does with the events below its root.
type Handler = Box<dyn FnMut(notify::Result<notify::Event>) + Send>;

/// The process's one watcher, and the workspaces it routes events to.
struct Shared {
    watcher: Mutex<RecommendedWatcher>,
    routes: Arc<Mutex<Vec<(PathBuf, Handler)>>>,
}

/// The shared watcher, started on first use; `None` when no inotify instance can be had.
fn shared() -> Option<&'static Shared> {
    static SHARED: OnceLock<Option<Shared>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let routes: Arc<Mutex<Vec<(PathBuf, Handler)>>> = Arc::default();
            let to_route = Arc::clone(&routes);
            let watcher =
                notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                    route(&to_route, event);
                });
            match watcher {
                Ok(watcher) => Some(Shared {
                    watcher: Mutex::new(watcher),
                    routes,
                }),
                Err(err) => {
                    tracing::warn!(error = %err, "cannot start a workspace watcher");
                    None
                }
            }
        })
        .as_ref()
}

/// Hands `event` to the workspace whose root holds its first path; an event with no path
/// (lost events: the queue overflowed) goes to every workspace, which rescans.
fn route(routes: &Mutex<Vec<(PathBuf, Handler)>>, event: notify::Result<notify::Event>) {
    let mut routes = routes.lock().unwrap_or_else(PoisonError::into_inner);
    let path = event.as_ref().ok().and_then(|e| e.paths.first()).cloned();
    match path {
        Some(path) => {
            if let Some((_, handler)) = routes.iter_mut().find(|(root, _)| path.starts_with(root)) {
                handler(event);
            }
        }
        None => {
            for (_, handler) in routes.iter_mut() {
                handler(Err(notify::Error::generic("events were lost")));
            }
        }
    }
}

/// Watches `root` through the shared watcher, its events going to `handler`.
fn shared_add(root: &Path, handler: Handler) -> notify::Result<()> {
    let Some(shared) = shared() else {
        return Err(notify::Error::generic("no workspace watcher"));
    };
    shared
        .routes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((root.to_owned(), handler));
    let watched = shared
        .watcher
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .watch(root, RecursiveMode::Recursive);
    if watched.is_err() {
        drop_route(shared, root);
    }
    watched
}

/// Stops watching `root`. The route goes first, so no event of it is handled once this
/// returns (the watcher's thread takes the routes' lock for each event, never this one).
fn shared_remove(root: &Path) {
    let Some(shared) = shared() else {
        return;
    };
    drop_route(shared, root);
    let _ = shared
        .watcher
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .unwatch(root);
}

fn drop_route(shared: &Shared, root: &Path) {
    shared
        .routes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|(r, _)| r != root);
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
    match shared_add(root, Box::new(handler)) {
        Ok(()) => WorkspaceWatcher {
            watched: Some(root.to_owned()),
            poller: None,
        },
        Err(err) => {
            tracing::warn!(error = %err, "cannot watch the workspace; polling instead");
            WorkspaceWatcher {
                watched: None,
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
