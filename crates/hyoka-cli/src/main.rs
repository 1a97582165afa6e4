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
