//! SIGINT, SIGTERM and SIGHUP become stop requests of `hyoka-eval`'s [`Stopper`]: the first
//! stops every eval (or session) cleanly, a second escalates to SIGKILL. One delivery that
//! arrives twice (`timeout -s TERM` signals hyoka and then its process group) is one request
//! ([`Stopper::signal`]). The command then exits 130 (SIGINT) or 143 (SIGTERM, SIGHUP).

use hyoka_eval::{Stop, StopLevel, StopReason, Stopper};
use tokio::signal::unix::{SignalKind, signal};

use crate::exit::ExitStatus;

/// The exit status of a command stopped for `reason`.
pub(crate) fn exit_status(reason: StopReason) -> ExitStatus {
    match reason {
        StopReason::Interrupt => ExitStatus::Interrupted,
        _ => ExitStatus::Terminated,
    }
}

/// Installs the handlers; `what` names what a first signal stops in the log line (`every
/// eval`, `the session`). The returned task must be kept alive for the command's duration.
pub(crate) fn install(what: &'static str) -> std::io::Result<(Stop, tokio::task::JoinHandle<()>)> {
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let (stopper, stop) = Stopper::new();
    let task = tokio::spawn(async move {
        loop {
            let reason = tokio::select! {
                Some(()) = int.recv() => StopReason::Interrupt,
                Some(()) = term.recv() => StopReason::Terminate,
                Some(()) = hup.recv() => StopReason::Hangup,
                else => return,
            };
            let (level, new) = stopper.signal(reason, std::time::Instant::now());
            if !new {
                tracing::debug!("{}: the same delivery again, ignored", reason.name());
            } else if let StopLevel::Graceful(_) = level {
                tracing::warn!("{}: stopping {what} (again to kill at once)", reason.name());
            } else {
                tracing::warn!("{}: killing every process now", reason.name());
            }
        }
    });
    Ok((stop, task))
}
