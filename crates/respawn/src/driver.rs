//! The tokio driver: a thin loop around the [`Machine`] that feeds it the session's output
//! (through a [`SessionModel`]), hooks, the user's keys and check results, sleeps until its
//! next deadline, and performs its actions on a [`Terminal`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    CheckError, CheckReply, HookEvent, IdleAnswer, IdleChecker, PlanAnswer, PlanChecker,
    ProcessActivity,
};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use crate::error::RespawnError;
use crate::event::{Checker, Event};
use crate::machine::{Action, Input, Keys, Machine};
use crate::model::SessionModel;
use crate::terminal::{Exit, Size, Terminal};

/// Receives what the driver sees and decides, as it happens. Called inline: keep it quick.
pub trait Observer: Send {
    /// A chunk of the session's output (for mirroring it to the user's terminal).
    fn output(&mut self, bytes: &[u8]) {
        let _ = bytes;
    }

    /// An event of the machine, at the time it was decided.
    fn event(&mut self, at: Instant, event: &Event) {
        let _ = (at, event);
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// Optional input streams besides the session's own output.
#[derive(Debug, Default)]
pub struct DriverInputs {
    /// Claude Code hooks (from a [`HookListener`](crate::HookListener)).
    pub hooks: Option<mpsc::Receiver<HookEvent>>,
    /// Bytes the user typed (mirror mode); forwarded to the session, and each chunk sets
    /// the human-presence lock.
    pub keys: Option<mpsc::Receiver<Vec<u8>>>,
    /// Size changes of the user's terminal.
    pub resize: Option<mpsc::Receiver<Size>>,
    /// Samples of the agent's process tree (for example one per half second from
    /// `hyoka-proctrack`): a tree that burns CPU or has busy children keeps the verdict
    /// `working`, so nothing is typed while the agent runs a build behind an idle prompt.
    pub activity: Option<mpsc::Receiver<ProcessActivity>>,
}

/// Why a driven session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEnd {
    /// The shutdown future completed (SIGINT, SIGTERM).
    Interrupted,
    /// `max_cycles` cycles completed.
    BudgetExhausted {
        /// Cycles completed.
        cycles: u32,
    },
    /// The session ended by itself.
    SessionEnded,
    /// Talking to the session failed.
    SessionLost {
        /// What failed.
        error: String,
    },
}

impl SessionEnd {
    /// The snake_case name (`interrupted`, `budget_exhausted`, `session_ended`,
    /// `session_lost`), as `hyoka respawn` records it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Interrupted => "interrupted",
            Self::BudgetExhausted { .. } => "budget_exhausted",
            Self::SessionEnded => "session_ended",
            Self::SessionLost { .. } => "session_lost",
        }
    }
}

/// Settings of the driver itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverOptions {
    /// SIGTERM → SIGKILL grace when the session is stopped.
    pub grace: Duration,
}

impl Default for DriverOptions {
    fn default() -> Self {
        Self {
            grace: Duration::from_secs(5),
        }
    }
}

/// The report of [`Driver::run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Why the loop ended.
    pub end: SessionEnd,
    /// How the session's process ended (after it was stopped, if it had to be).
    pub exit: Exit,
    /// Cycles started.
    pub cycles: u32,
}

/// The AI checkers a driver runs checks with (`hyoka-idle-detect`'s traits; its
/// `CommandChecker` implements both). A check the machine starts without a checker fails.
#[derive(Clone, Default)]
pub struct AiCheckers {
    /// The idle checker (IDLE / WORKING).
    pub idle: Option<Arc<dyn IdleChecker>>,
    /// The plan checker (PLAN_MODE / NOT_PLAN_MODE).
    pub plan: Option<Arc<dyn PlanChecker>>,
}

impl std::fmt::Debug for AiCheckers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AiCheckers")
            .field("idle", &self.idle.is_some())
            .field("plan", &self.plan.is_some())
            .finish()
    }
}

enum CheckResult {
    Idle(u64, Result<CheckReply<IdleAnswer>, CheckError>),
    Plan(u64, Result<CheckReply<PlanAnswer>, CheckError>),
}

/// One controlled session: the machine, the terminal, the model of its screen, and the
/// checks in flight.
pub struct Driver<T, M, O> {
    machine: Machine,
    terminal: T,
    model: M,
    observer: O,
    checkers: AiCheckers,
    options: DriverOptions,
    running: JoinSet<CheckResult>,
    aborts: HashMap<(Checker, u64), AbortHandle>,
    end: Option<SessionEnd>,
}

impl<T, M, O> std::fmt::Debug for Driver<T, M, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("machine", &self.machine)
            .finish_non_exhaustive()
    }
}

/// The current time, from tokio's clock (so a paused test clock drives the machine too).
#[expect(
    clippy::disallowed_methods,
    reason = "the driver is where time is read; the machine only receives it"
)]
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl<T: Terminal, M: SessionModel, O: Observer> Driver<T, M, O> {
    /// A driver for `terminal`. Enable in the machine's configuration only the checks
    /// `checkers` can run (a check without a checker fails at once and counts as an error).
    pub fn new(
        machine: Machine,
        terminal: T,
        model: M,
        observer: O,
        checkers: AiCheckers,
        options: DriverOptions,
    ) -> Self {
        Self {
            machine,
            terminal,
            model,
            observer,
            checkers,
            options,
            running: JoinSet::new(),
            aborts: HashMap::new(),
            end: None,
        }
    }

    /// The machine (for status displays).
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// Starts the machine and drives the session until `shutdown` completes, the cycle
    /// budget is spent, or the session ends; then stops everything: the checks in flight
    /// and the session's whole process group (SIGTERM, `grace`, SIGKILL).
    ///
    /// # Errors
    /// Never for the session's own failures (those end the loop with an [`SessionEnd`]); only
    /// when stopping the session fails.
    pub async fn run(
        mut self,
        mut inputs: DriverInputs,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Report, RespawnError> {
        tokio::pin!(shutdown);
        self.step(Input::Start, now()).await;
        let mut buf = vec![0u8; 64 * 1024].into_boxed_slice();
        while self.end.is_none() {
            let deadline = self
                .machine
                .next_deadline()
                .map(tokio::time::Instant::from_std);
            tokio::select! {
                biased;
                () = &mut shutdown => self.end = Some(SessionEnd::Interrupted),
                Some(result) = self.running.join_next(), if !self.running.is_empty() => {
                    self.check_done(result).await;
                }
                hook = recv(&mut inputs.hooks) => {
                    let at = now();
                    self.model.hook(at, hook);
                    self.decide(Input::Hook(hook), at).await;
                }
                keys = recv(&mut inputs.keys) => {
                    let at = now();
                    if let Err(err) = self.terminal.send_raw(&keys).await {
                        self.lost(&err);
                    }
                    self.model.user_input(at);
                    self.step(Input::UserTyped, at).await;
                }
                activity = recv(&mut inputs.activity) => {
                    self.model.process_activity(now(), activity);
                }
                size = recv(&mut inputs.resize) => {
                    self.model.resize(size.rows, size.cols);
                    if let Err(err) = self.terminal.resize(size).await {
                        self.lost(&err);
                    }
                }
                () = sleep_until(deadline) => self.decide(Input::Tick, now()).await,
                read = self.terminal.read(&mut buf) => match read {
                    Ok(0) => self.session_ended().await,
                    Ok(n) => self.output(&buf[..n]).await,
                    Err(err) => self.lost(&err),
                },
            }
        }
        self.finish().await
    }

    async fn output(&mut self, bytes: &[u8]) {
        let at = now();
        self.observer.output(bytes);
        let signals = self.model.output(at, bytes);
        if self.machine.next_deadline().is_some_and(|d| d <= at) {
            // Timers due before this chunk fire first, with a fresh verdict.
            self.decide(Input::Tick, at).await;
        }
        self.step(Input::Output(signals), at).await;
    }

    /// Delivers `input` after a fresh verdict: everything that can lead to typing goes
    /// through here.
    async fn decide(&mut self, input: Input, at: Instant) {
        let verdict = self.model.verdict(at);
        self.step(Input::Verdict(verdict), at).await;
        if !matches!(input, Input::Tick) {
            self.step(input, at).await;
        }
    }

    async fn step(&mut self, input: Input, at: Instant) {
        let actions = self.machine.handle(input, at);
        for action in actions {
            self.act(action, at).await;
        }
    }

    async fn act(&mut self, action: Action, at: Instant) {
        match action {
            Action::Emit(event) => self.observer.event(at, &event),
            Action::Type(keys) => {
                let sent = match &keys {
                    Keys::Text(text) => self.terminal.send_text(text).await,
                    Keys::Enter => self.terminal.send_enter().await,
                };
                if let Err(err) = sent {
                    self.lost(&err);
                }
            }
            Action::StartCheck {
                checker,
                id,
                max_context,
            } => {
                let context = self.model.context(max_context);
                let checkers = self.checkers.clone();
                let abort = self.running.spawn(async move {
                    match checker {
                        Checker::Idle => CheckResult::Idle(
                            id,
                            match checkers.idle {
                                Some(checker) => checker.check_idle(&context).await,
                                None => Err(no_checker()),
                            },
                        ),
                        Checker::Plan => CheckResult::Plan(
                            id,
                            match checkers.plan {
                                Some(checker) => checker.check_plan(&context).await,
                                None => Err(no_checker()),
                            },
                        ),
                    }
                });
                self.aborts.insert((checker, id), abort);
            }
            Action::CancelCheck { checker, id } => {
                if let Some(abort) = self.aborts.remove(&(checker, id)) {
                    abort.abort();
                }
            }
            Action::ResetContext => self.model.reset_context(),
            Action::StopSession => {
                self.end = Some(SessionEnd::BudgetExhausted {
                    cycles: self.machine.cycles(),
                });
            }
        }
    }

    async fn check_done(&mut self, result: Result<CheckResult, tokio::task::JoinError>) {
        let input = match result {
            Ok(CheckResult::Idle(id, result)) => {
                self.aborts.remove(&(Checker::Idle, id));
                Input::IdleCheckDone { id, result }
            }
            Ok(CheckResult::Plan(id, result)) => {
                self.aborts.remove(&(Checker::Plan, id));
                Input::PlanCheckDone { id, result }
            }
            // Cancelled by the machine: nothing to report. A panicking checker times out
            // in the machine like a hanging one.
            Err(_) => return,
        };
        self.decide(input, now()).await;
    }

    async fn session_ended(&mut self) {
        let code = self.terminal.exit().and_then(|e| e.code);
        self.step(Input::SessionExited { code }, now()).await;
        self.end = Some(SessionEnd::SessionEnded);
    }

    fn lost(&mut self, err: &RespawnError) {
        if self.end.is_none() {
            self.end = Some(SessionEnd::SessionLost {
                error: err.to_string(),
            });
        }
    }

    async fn finish(mut self) -> Result<Report, RespawnError> {
        self.step(Input::Stop, now()).await;
        self.running.shutdown().await;
        let exit = self.terminal.stop(self.options.grace).await?;
        Ok(Report {
            end: self.end.unwrap_or(SessionEnd::Interrupted),
            exit,
            cycles: self.machine.cycles(),
        })
    }
}

fn no_checker() -> CheckError {
    CheckError::Spawn {
        program: "(none)".to_owned(),
        source: std::io::Error::other("no AI checker is configured"),
    }
}

/// Receives from an optional channel; pending forever when there is none or it closed.
async fn recv<V>(rx: &mut Option<mpsc::Receiver<V>>) -> V {
    if let Some(receiver) = rx {
        if let Some(value) = receiver.recv().await {
            return value;
        }
        *rx = None;
    }
    std::future::pending().await
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
