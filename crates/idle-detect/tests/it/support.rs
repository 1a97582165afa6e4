//! Helpers shared by the integration tests: locating `../shared`, building detectors.

use std::path::PathBuf;

/// The shared directory (`<CARGO_MANIFEST_DIR>/../../../shared`, or `HYOKA_SHARED_DIR`), or
/// `None` with a message on stderr when it is absent (a fresh clone has no `../shared`).
pub(crate) fn shared_dir(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("HYOKA_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    if dir.is_dir() {
        Some(dir)
    } else {
        #[expect(clippy::print_stderr, reason = "tests say why they skip")]
        {
            eprintln!(
                "skipping {what}: shared directory {} not found (set HYOKA_SHARED_DIR)",
                dir.display()
            );
        }
        None
    }
}
