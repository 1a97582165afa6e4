//! Many workspaces at once: unique paths, no interference, everything removed.

use std::collections::HashSet;
use std::path::Path;

use hyoka_workspace::{RunVerdict, Workspace};

use crate::support::{create, entries, scratch};

#[test]
fn a_hundred_concurrent_workspaces_have_unique_paths_and_all_go() {
    let root = scratch();
    // All hundred exist at the same moment before any is closed.
    let barrier = std::sync::Barrier::new(100);
    let paths: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..100)
            .map(|i| {
                let root = root.path();
                let barrier = &barrier;
                scope.spawn(move || {
                    // The same run id for all: uniqueness comes from the random suffix.
                    let ws = create(root, "same-run");
                    ws.write_file(Path::new("id.txt"), i.to_string().as_bytes())
                        .unwrap();
                    assert_eq!(
                        ws.read_file(Path::new("id.txt")).unwrap(),
                        i.to_string().as_bytes()
                    );
                    assert_eq!(ws.usage().unwrap().files, 1);
                    barrier.wait();
                    let path = ws.path().to_owned();
                    ws.close(RunVerdict::Success).unwrap();
                    path
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let unique: HashSet<_> = paths.iter().collect();
    assert_eq!(unique.len(), 100);
    assert!(
        entries(root.path()).is_empty(),
        "{:?}",
        entries(root.path())
    );
}
