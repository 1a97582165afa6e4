//! Integration tests of the `hyoka` binary, driven exactly as users and the acceptance tests
//! drive it: real processes, real directories, exit codes and files.
#![allow(
    clippy::print_stderr,
    clippy::unnecessary_debug_formatting,
    reason = "tests say on stderr why they skip, and quote paths in failures"
)]

mod bad_input;
mod demo;
mod run;
mod support;
