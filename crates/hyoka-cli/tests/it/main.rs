//! Integration tests of the `hyoka` binary, driven exactly as users and the acceptance tests
//! drive it: real processes, real directories, exit codes and files.
#![allow(
    clippy::print_stderr,
    clippy::unnecessary_debug_formatting,
    clippy::similar_names,
    clippy::needless_raw_string_hashes,
    clippy::format_collect,
    clippy::too_many_lines,
    reason = "tests say on stderr why they skip, quote paths in failures, and favour plain test data"
)]

mod agents;
mod bad_input;
mod chaos;
mod ci_formats;
mod clean;
mod cluster;
mod codegen;
mod demo;
mod detect;
mod escape;
mod events;
mod kept;
mod limits;
mod live_tui;
mod model_stub;
mod numbers;
mod phases;
mod ps;
mod readme;
mod refusals;
mod report_html;
mod respawn;
mod run;
mod sandbox;
mod side_doors;
mod signals;
mod suite;
mod supervision;
mod support;
mod tasks;
mod trials;
mod trust;
mod ux;
