//! Integration tests of `hyoka-proctrack` with real processes.
//!
//! This binary has its own small test runner (`harness = false`) because it is also the
//! helper: started as `it --hyoka-role <role> …` it plays a process of an agent's tree, and
//! started as `it __shim …` it is the subreaper shim, exactly as `hyoka __shim` will be.
//! Arguments: substring filters, `--exact`, `--list`, `--test-threads N`; other flags are
//! accepted and ignored, so `cargo test -p hyoka-proctrack` works unchanged.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the test runner reports results on the terminal"
)]
#![allow(
    clippy::similar_names,
    reason = "pid, ppid and pgid are the kernel's names"
)]

use std::ffi::OsString;
use std::process::ExitCode;

mod clean;
mod concurrency;
mod containment;
mod roles;
mod runner;
mod sandbox;
mod shim;
mod support;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("__shim") => hyoka_proctrack::shim_main(args.into_iter().skip(2)),
        Some("--hyoka-role") => {
            roles::sandbox(&args[2..]).unwrap_or_else(|| roles::run(&args[2..]))
        }
        _ => {
            let caps = hyoka_proctrack::Capabilities::detect();
            if !args.iter().any(|a| a == "--list") {
                println!(
                    "layers on this machine: cgroup v2 {}, pidfd {}, subreaper {}; \
                     containment tests run under: {}",
                    caps.cgroup.as_ref().map_or_else(
                        || format!(
                            "unavailable ({})",
                            caps.cgroup_unavailable.as_deref().unwrap_or("?")
                        ),
                        |c| format!("at {} (cgroup.kill: {})", c.base.display(), c.has_kill),
                    ),
                    caps.pidfd,
                    caps.subreaper,
                    support::configs()
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                );
            }
            runner::run(&args[1..], &all_tests())
        }
    }
}

fn all_tests() -> Vec<runner::Test> {
    [
        containment::TESTS,
        shim::TESTS,
        clean::TESTS,
        concurrency::TESTS,
        sandbox::TESTS,
    ]
    .concat()
}
