//! The `hyoka` binary: parse arguments, run the command, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = hyoka_cli::Cli::parse();
    hyoka_cli::main(cli).into()
}
