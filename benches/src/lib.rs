//! Shared helpers for hyoka's criterion benchmarks: input builders used by several suites.
//!
//! - [`reference_stream`]: the 50 MiB Claude-Code-like terminal stream of
//!   `shared/bench/gen-stream.js`, ported to Rust (same bytes, same SHA-256), on which idle
//!   detection is compared with Codeman's figures.
//! - [`tree`]: the 10,000-file tree of the workspace benchmarks.
//! - [`synthetic_run`]: the records of a run of 10,000 trials, for the HTML report's
//!   benchmark.
//! - [`Chromium`]: headless Chromium driven through its command line and never left
//!   running, for the HTML report's browser test and time-to-interactive figure.

mod browser;
mod reference_stream;
mod synthetic;

use std::path::Path;

pub use crate::browser::{BrowserOutput, Chromium, MARKER, file_url, marked};
pub use crate::reference_stream::{
    REFERENCE_BYTES, REFERENCE_SEED, REFERENCE_SHA256, generate_stream, reference_stream,
};
pub use crate::synthetic::synthetic_run;

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
