//! SIGINT, SIGTERM and SIGHUP: stop every eval cleanly, and escalate on a second signal.
//!
//! The first signal asks each running eval to stop its agent with the usual grace period
//! (`termination: interrupted`) and skips evals that have not started; records are still
//! written and workspaces removed. A second signal turns every stop into an immediate
//! SIGKILL, and still writes the records. The command then exits 130 (SIGINT) or 143
//! (SIGTERM, SIGHUP).

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::ExitStatus;

/// How hard hyoka has been asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Not interrupted.
    Running,
    /// Stop with the grace period.
    Graceful(Sig),
    /// Stop now: SIGKILL.
    Force(Sig),
}

/// The signal that started the interruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sig {
    Int,
    Term,
    Hup,
}

impl Sig {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Int => "SIGINT",
            Self::Term => "SIGTERM",
            Self::Hup => "SIGHUP",
        }
    }

    pub(crate) fn exit_status(self) -> ExitStatus {
        match self {
            Self::Int => ExitStatus::Interrupted,
            Self::Term | Self::Hup => ExitStatus::Terminated,
        }
    }
}

/// A handle every eval watches.
#[derive(Debug, Clone)]
pub(crate) struct Interrupt {
    rx: watch::Receiver<Level>,
    /// Keeps a sender alive for handles that no signal task feeds.
    _idle: Option<std::sync::Arc<watch::Sender<Level>>>,
}

impl Interrupt {
    /// A handle that is never interrupted.
    pub(crate) fn never() -> Self {
        let (tx, rx) = watch::channel(Level::Running);
        Self {
            rx,
            _idle: Some(std::sync::Arc::new(tx)),
        }
    }

    /// The level now.
    pub(crate) fn level(&self) -> Level {
        *self.rx.borrow()
    }

    /// Resolves once the level is at least graceful; returns the signal.
    pub(crate) async fn requested(&mut self) -> Sig {
        loop {
            match *self.rx.borrow_and_update() {
                Level::Graceful(sig) | Level::Force(sig) => return sig,
                Level::Running => {}
            }
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// Resolves once a forced stop is requested.
    pub(crate) async fn forced(&mut self) {
        loop {
            if matches!(*self.rx.borrow_and_update(), Level::Force(_)) {
                return;
            }
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}

/// Installs the handlers. The returned task must be kept alive for the command's duration.
pub(crate) fn install() -> std::io::Result<(Interrupt, tokio::task::JoinHandle<()>)> {
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let (tx, rx) = watch::channel(Level::Running);
    let task = tokio::spawn(async move {
        loop {
            let sig = tokio::select! {
                Some(()) = int.recv() => Sig::Int,
                Some(()) = term.recv() => Sig::Term,
                Some(()) = hup.recv() => Sig::Hup,
                else => return,
            };
            let next = match *tx.borrow() {
                Level::Running => {
                    tracing::warn!(
                        "{}: stopping every eval (again to kill at once)",
                        sig.name()
                    );
                    Level::Graceful(sig)
                }
                Level::Graceful(first) | Level::Force(first) => {
                    tracing::warn!("{}: killing every process now", sig.name());
                    Level::Force(first)
                }
            };
            if tx.send(next).is_err() {
                return;
            }
        }
    });
    Ok((Interrupt { rx, _idle: None }, task))
}
