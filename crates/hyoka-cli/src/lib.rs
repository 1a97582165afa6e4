//! The `hyoka` command line: the composition root of the hyoka crates.
//!
//! `main.rs` parses [`Cli`] and calls [`main`]; this crate turns arguments into the plain
//! option structs of the library crates, picks the concrete implementations, prints, writes
//! the records, and maps every outcome to an [`ExitStatus`].

mod args;
mod cmd;
mod exit;
mod harness;
mod hooks;
mod input;
mod interrupt;
mod out;
mod tty;

use tracing_subscriber::EnvFilter;

pub use crate::args::Cli;
pub use crate::exit::ExitStatus;

use crate::exit::Fail;

use crate::args::Command;

/// Runs the parsed command line and returns its exit status. Errors are printed to stderr as
/// one `error:` line.
pub fn main(cli: Cli) -> ExitStatus {
    init_logging(cli.verbose, cli.quiet);
    let result = match cli.command {
        // The simulated agent is synchronous and must not start a runtime it does not need.
        Command::SimAgent(args) => cmd::sim_agent::exec(&args),
        command => match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(dispatch(command)),
            Err(err) => Err(Fail::failure(format!("cannot start the runtime: {err}"))),
        },
    };
    match result {
        Ok(status) => status,
        Err(fail) => {
            report_error(&fail);
            fail.status
        }
    }
}

async fn dispatch(command: Command) -> Result<ExitStatus, Fail> {
    match command {
        Command::Run(args) => cmd::run::exec(args).await,
        Command::Clean(args) => cmd::cleanup::exec(args).await,
        Command::Ps(args) => cmd::ps::exec(&args),
        Command::Detect(args) => cmd::detect::exec(&args),
        Command::Demo(args) => cmd::demo::exec(args).await,
        Command::Doctor(args) => cmd::doctor::exec(&args).await,
        Command::Report(args::ReportCommand::Merge(args)) => cmd::report::merge(&args),
        Command::Report(args::ReportCommand::Html(args)) => cmd::report::html(&args),
        Command::SimAgent(args) => cmd::sim_agent::exec(&args),
        Command::Respawn(args) => cmd::respawn::exec(args).await,
        Command::Hook(args) => cmd::hook::exec(args).await,
    }
}

#[expect(clippy::print_stderr, reason = "the one place errors reach the user")]
fn report_error(fail: &Fail) {
    eprintln!("error: {fail}");
}

fn init_logging(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
