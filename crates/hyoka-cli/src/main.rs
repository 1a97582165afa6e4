//! The `hyoka` binary: parse arguments, run the command, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The subreaper shim (`hyoka __shim …`, started by hyoka itself) must run before any
    // thread or runtime exists: it owns every wait of its process.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == "__shim")
    {
        return hyoka_proctrack::shim_main(std::env::args_os().skip(2));
    }
    one_malloc_arena();
    // The simulated agent (`hyoka sim-agent …`, hidden) is parsed apart from the commands
    // people use, so no help page, man page or completion offers it.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == "sim-agent")
    {
        let args = hyoka_cli::SimAgentArgs::parse_from(std::env::args_os().skip(1));
        return hyoka_cli::sim_agent(&args).into();
    }
    let cli = hyoka_cli::Cli::parse_args();
    hyoka_cli::main(cli).into()
}

/// Makes glibc's allocator keep one arena for the process, not one per thread. hyoka's
/// threads allocate little and seldom at once, and with an arena each, what a trial frees on
/// one thread is not reused by the next trial on another: a 2,000-trial run ended 1.3 MiB
/// larger than with one (BENCHMARKS.md, issue 29). Called before any thread exists.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_malloc_arena() {
    // SAFETY: `mallopt` sets one of the allocator's tunables; no thread allocates meanwhile.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Other allocators have no such tunable, or need none.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}
