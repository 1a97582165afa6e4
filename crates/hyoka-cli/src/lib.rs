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
pub use hyoka_sim_agent::SimAgentArgs;

use crate::exit::Fail;

use crate::args::Command;

impl Cli {
    /// Parses the process's arguments, exiting as clap does on bad input (exit 2), except
    /// that an agent command given to `hyoka run` without `--` gets a hint where it goes.
    pub fn parse_args() -> Self {
        use clap::Parser as _;
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        Self::try_parse_from(&args).unwrap_or_else(|err| {
            if let Some(hint) = command_without_dashes(&err, &args) {
                report_error(&Fail::usage(hint));
                std::process::exit(ExitStatus::Error.code().into());
            }
            err.exit()
        })
    }
}

/// `hyoka run … echo hi`: clap refuses `echo` as an unexpected argument; say to put the
/// command after `--`.
fn command_without_dashes(err: &clap::Error, args: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let subcommand = args
        .iter()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'));
    if err.kind() != ErrorKind::UnknownArgument || subcommand.is_none_or(|s| s != "run") {
        return None;
    }
    let Some(ContextValue::String(word)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    if word.starts_with('-') {
        return None;
    }
    let at = args
        .iter()
        .rposition(|a| a.to_string_lossy() == word.as_str())?;
    let command: Vec<_> = args[at..].iter().map(|a| a.to_string_lossy()).collect();
    Some(format!(
        "put the agent command after `--`: hyoka run [OPTIONS] -- {}",
        command.join(" ")
    ))
}

/// Runs the parsed command line and returns its exit status. Errors are printed to stderr as
/// one `error:` line.
pub fn main(cli: Cli) -> ExitStatus {
    init_logging(cli.verbose, cli.quiet);
    let verbose = cli.verbose > 0;
    let result = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(dispatch(cli.command, verbose)),
        Err(err) => Err(Fail::failure(format!("cannot start the runtime: {err}"))),
    };
    finish(result)
}

/// Runs the simulated agent (`hyoka sim-agent`), synchronously: it must not start a runtime
/// it does not need.
pub fn sim_agent(args: &SimAgentArgs) -> ExitStatus {
    finish(match hyoka_sim_agent::run(args) {
        Ok(0) => Ok(ExitStatus::Success),
        Ok(code) => Ok(ExitStatus::Code(code)),
        Err(hyoka_sim_agent::SimError::Usage(message)) => Err(Fail::usage(message)),
        Err(err) => Err(Fail::failure(err.to_string())),
    })
}

fn finish(result: Result<ExitStatus, Fail>) -> ExitStatus {
    match result {
        Ok(status) => status,
        Err(fail) => {
            report_error(&fail);
            fail.status
        }
    }
}

async fn dispatch(command: Command, verbose: bool) -> Result<ExitStatus, Fail> {
    match command {
        Command::Run(args) => cmd::run::exec(args).await,
        Command::Clean(args) => cmd::cleanup::exec(args, verbose).await,
        Command::Ps(args) => cmd::ps::exec(&args).await,
        Command::Detect(args) => cmd::detect::exec(&args),
        Command::Demo(args) => cmd::demo::exec(args).await,
        Command::Doctor(args) => cmd::doctor::exec(&args).await,
        Command::Report(args::ReportCommand::Merge(args)) => cmd::report::merge(&args),
        Command::Report(args::ReportCommand::Compare(args)) => cmd::report::compare(&args),
        Command::Report(args::ReportCommand::Html(args)) => cmd::report::html(&args),
        Command::Report(args::ReportCommand::Junit(args)) => cmd::report::junit(&args),
        Command::Report(args::ReportCommand::Markdown(args)) => cmd::report::markdown(&args),
        Command::Respawn(args) => cmd::respawn::exec(args).await,
        Command::Hook(args) => cmd::hook::exec(args).await,
        Command::Sessions(args) => cmd::sessions::list(&args).await,
        Command::Wait(args) => cmd::sessions::wait(&args).await,
        Command::Send(args) => cmd::sessions::send(&args).await,
        Command::Tasks(args::TasksCommand::Check(args)) => cmd::tasks::check(args).await,
        Command::ModelStub(args::ModelStubCommand::Serve(args)) => {
            cmd::model_stub::serve(&args).await
        }
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
    // Colour only where the summary gets it too: a terminal, unless NO_COLOR and the like.
    let colour = anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
