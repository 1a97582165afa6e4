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
    let cli = hyoka_cli::Cli::parse();
    hyoka_cli::main(cli).into()
}
