//! Integration tests of `hyoka-workspace`, with real directories.
#![allow(
    clippy::print_stderr,
    clippy::unnecessary_debug_formatting,
    reason = "tests say on stderr why they skip, and quote paths in failures"
)]

mod concurrent;
mod containment;
mod lifecycle;
mod removal;
mod starter;
mod stub;
mod support;
mod usage;
