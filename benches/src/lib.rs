//! Shared helpers for hyoka's criterion benchmarks: input builders used by several suites.

use std::path::Path;

/// Builds a tree of `dirs` directories with `files_per_dir` small files each under `root`
/// (which must exist): the "10,000-file tree" of the workspace benchmarks is `tree(root,
/// 100, 100)`.
///
/// # Panics
/// If the tree cannot be written (benchmark setup, not library code).
pub fn tree(root: &Path, dirs: usize, files_per_dir: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("dir-{d:03}"));
        std::fs::create_dir(&dir).expect("create bench dir");
        for f in 0..files_per_dir {
            std::fs::write(dir.join(format!("file-{f:03}.txt")), b"bench payload\n")
                .expect("write bench file");
        }
    }
}
