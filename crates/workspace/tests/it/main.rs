//! Integration tests of `hyoka-workspace`, with real directories.
#![allow(
    clippy::print_stderr,
    clippy::unnecessary_debug_formatting,
    clippy::similar_names,
    clippy::needless_raw_string_hashes,
    clippy::format_collect,
    clippy::too_many_lines,
    reason = "tests say on stderr why they skip, quote paths in failures, and favour plain test data"
)]

mod concurrent;
mod containment;
mod inject;
mod lifecycle;
mod removal;
mod starter;
mod stub;
mod support;
mod usage;
