//! `hyoka-shim`: the subreaper shim every agent starts through, as a binary of its own.
//!
//! It is `hyoka __shim` without the rest of hyoka: hyoka starts one per agent, service and
//! scorer process, and a program this small starts in a fraction of the time the whole CLI
//! takes to load. hyoka falls back to `hyoka __shim` when it finds no `hyoka-shim` beside
//! itself. The protocol is [`hyoka_proctrack::shim_args`]'s; people never run it.

use std::process::ExitCode;

fn main() -> ExitCode {
    hyoka_proctrack::shim_main(std::env::args_os().skip(1))
}
