//! The tokio driver: a thin loop around the [`Machine`] that feeds it the session's output
//! (through a [`SessionModel`]), hooks, the user's keys, people attached, check results and
//! control requests, sleeps until its next deadline, and performs its actions on a
//! [`Terminal`]. It also watches the verdict between decisions (a change is reported as
//! `verdict_changed`, and alerts fall due from it) and answers status requests.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    CheckError, CheckReply, HookEvent, IdleAnswer, IdleChecker, PlanAnswer, PlanChecker,
    ProcessActivity, SessionState, Verdict,
};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{AbortHandle, JoinSet};

use crate::alert::{AlertClock, AlertOptions, AlertRun, run_alert};
use crate::error::RespawnError;
use crate::event::{Checker, Event, SendOutcome};
use crate::machine::{Action, Input, Keys, Machine, Status};
use crate::model::SessionModel;
use crate::narrate::narrate;
use crate::terminal::{Exit, ReadEvent, Size, Terminal};

/// After output, the verdict is looked at again this much later (once per period while
/// output streams), so a change is reported and dated promptly.
const RECHECK: Duration = Duration::from_millis(300);

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
    /// How many people are attached to the session (tmux clients other than the
    /// controller's own); while any is, automation waits (human-presence lock).
    pub presence: Option<mpsc::Receiver<u32>>,
    /// Requests from the control socket (`hyoka sessions`, `wait`, `send`, `--stop`).
    pub control: Option<mpsc::Receiver<Control>>,
    /// Completes when the user detaches (Ctrl-] in the mirror): a session that can outlive
    /// the controller (tmux) is left running; any other is stopped.
    pub detach: Option<oneshot::Receiver<()>>,
}

/// A request to a running driver.
#[derive(Debug)]
#[non_exhaustive]
pub enum Control {
    /// The session's state now.
    Status(oneshot::Sender<LiveStatus>),
    /// Deliver `text` (verified delivery), or refuse it; answered when it ends.
    Send {
        /// The text.
        text: String,
        /// Wait for the session to be idle instead of refusing.
        queue: bool,
        /// Where the outcome goes.
        reply: oneshot::Sender<SendOutcome>,
    },
    /// Stop the session (as SIGINT would).
    Stop,
}

/// What a running driver says about its session.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LiveStatus {
    /// The verdict now, with its evidence. While a cycle runs it says `working` (the
    /// controller is working the session), whatever the screen shows between steps.
    pub verdict: Verdict,
    /// How long the verdict's state has lasted.
    pub state_for: Duration,
    /// The machine.
    pub machine: Status,
    /// A person is at the session (typed recently, or attached).
    pub human_present: bool,
    /// People attached now (tmux clients other than the controller's own).
    pub attached: u32,
    /// The last line [`narrate`](crate::narrate) gave.
    pub last_event: Option<String>,
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
    /// The user detached; the session keeps running (tmux).
    Detached,
    /// Talking to the session failed.
    SessionLost {
        /// What failed.
        error: String,
    },
}

impl SessionEnd {
    /// The snake_case name (`interrupted`, `budget_exhausted`, `session_ended`, `detached`,
    /// `session_lost`), as `hyoka respawn` records it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Interrupted => "interrupted",
            Self::BudgetExhausted { .. } => "budget_exhausted",
            Self::SessionEnded => "session_ended",
            Self::Detached => "detached",
            Self::SessionLost { .. } => "session_lost",
        }
    }
}

/// Settings of the driver itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverOptions {
    /// SIGTERM → SIGKILL grace when the session is stopped.
    pub grace: Duration,
    /// The alerts (`--on-blocked`, `--on-idle`).
    pub alerts: AlertOptions,
}

impl Default for DriverOptions {
    fn default() -> Self {
        Self {
            grace: Duration::from_secs(5),
            alerts: AlertOptions::default(),
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

impl Report {
    /// Why the session counts as failed, in words, if it does: the agent exited non-zero
    /// or was killed, or the session was lost.
    pub fn failure(&self) -> Option<String> {
        match &self.end {
            SessionEnd::SessionEnded => match (self.exit.code, self.exit.signal) {
                (Some(0), _) => None,
                (Some(code), _) => Some(format!("the agent exited with code {code}")),
                (None, Some(signal)) => Some(format!("the agent was killed by signal {signal}")),
                (None, None) => Some("the agent's session ended".to_owned()),
            },
            SessionEnd::SessionLost { error } => Some(format!("lost the session: {error}")),
            _ => None,
        }
    }
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
    /// Answers to send requests in flight, by id.
    sends: HashMap<u64, oneshot::Sender<SendOutcome>>,
    next_send: u64,
    /// The last verdict observed, and since when its state lasts.
    verdict: Verdict,
    verdict_since: Instant,
    /// When to look at the verdict again without a decision.
    recheck_at: Option<Instant>,
    alerts: AlertClock,
    alert_tasks: JoinSet<AlertRun>,
    alert_cancel: watch::Sender<bool>,
    alert_serial: u64,
    attached: u32,
    last_event: Option<String>,
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
            running: JoinSet::new(),
            aborts: HashMap::new(),
            end: None,
            sends: HashMap::new(),
            next_send: 1,
            verdict: Verdict::default(),
            verdict_since: now(),
            recheck_at: None,
            alerts: AlertClock::new(&options.alerts),
            alert_tasks: JoinSet::new(),
            alert_cancel: watch::channel(false).0,
            alert_serial: 0,
            attached: 0,
            last_event: None,
            options,
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
            let deadline = [
                self.machine.next_deadline(),
                self.recheck_at,
                self.alerts.next_deadline(),
            ]
            .into_iter()
            .flatten()
            .min()
            .map(tokio::time::Instant::from_std);
            tokio::select! {
                biased;
                () = &mut shutdown => self.end = Some(SessionEnd::Interrupted),
                () = detached(&mut inputs.detach) => self.end = Some(SessionEnd::Detached),
                Some(result) = self.running.join_next(), if !self.running.is_empty() => {
                    self.check_done(result).await;
                }
                Some(Ok(run)) = self.alert_tasks.join_next(), if !self.alert_tasks.is_empty() => {
                    self.alert_finished(run);
                }
                control = recv(&mut inputs.control) => self.control(control).await,
                hook = recv(&mut inputs.hooks) => {
                    let at = now();
                    self.model.hook(at, hook);
                    self.decide(Input::Hook(hook), at).await;
                }
                keys = recv(&mut inputs.keys) => {
                    let at = now();
                    // The person's terminal answering the mirrored queries is not a person
                    // typing; a tmux server has answered the agent already.
                    let split = crate::replies::split(&keys);
                    let forward = if self.terminal.answers_queries() { &split.keys } else { &keys };
                    if !forward.is_empty()
                        && let Err(err) = self.terminal.send_raw(forward).await
                    {
                        self.lost(&err);
                    }
                    if !split.keys.is_empty() {
                        self.model.user_input(at);
                        self.step(Input::UserTyped, at).await;
                    }
                }
                attached = recv(&mut inputs.presence) => {
                    self.attached = attached;
                    if attached > 0 {
                        self.step(Input::PersonAttached, now()).await;
                    }
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
                read = self.terminal.read_event(&mut buf) => match read {
                    Ok(ReadEvent::Output(0)) => self.session_ended().await,
                    Ok(ReadEvent::Output(n)) => self.output(&buf[..n]).await,
                    // The output after this was drawn at the new size: the model takes it
                    // before any of it, and before the next verdict.
                    Ok(ReadEvent::Resized(size)) => self.model.resize(size.rows, size.cols),
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
        if self.recheck_at.is_none_or(|t| t > at + RECHECK) {
            self.recheck_at = Some(at + RECHECK);
        }
        // The text being delivered: in the input box before Enter, in the transcript after.
        if let Some(text) = self.machine.delivery_text().map(str::to_owned)
            && self.model.shows(at, &text)
        {
            self.decide(Input::TextShown, at).await;
        }
    }

    /// Delivers `input` after a fresh verdict: everything that can lead to typing goes
    /// through here.
    async fn decide(&mut self, input: Input, at: Instant) {
        let verdict = self.model.verdict(at);
        self.observe(&verdict, at);
        self.step(Input::Verdict(verdict), at).await;
        if !matches!(input, Input::Tick) {
            self.step(input, at).await;
        }
    }

    /// Notes the verdict: a change is reported, alerts that fall due start, and the next
    /// look is when the model says the verdict can change on its own.
    fn observe(&mut self, verdict: &Verdict, at: Instant) {
        for (alert, blocked) in self.alerts.observe(verdict, at) {
            self.start_alert(alert, blocked, at);
        }
        self.recheck_at = self.model.next_deadline(at);
        // The controller's own text in the input box is not a person's draft: not news.
        if verdict.blocked == Some(hyoka_idle_detect::BlockedKind::Draft)
            && self.machine.delivery_text().is_some()
        {
            return;
        }
        if !verdict.same_state(&self.verdict) {
            self.verdict_since = at;
            let top = verdict.deciding();
            self.emit(
                at,
                &Event::VerdictChanged {
                    state: verdict.state,
                    blocked: verdict.blocked,
                    rule: top.map(|e| e.rule.clone()).unwrap_or_default(),
                    detail: top.map(|e| e.detail.clone()).unwrap_or_default(),
                },
            );
        }
        self.verdict.clone_from(verdict);
    }

    fn emit(&mut self, at: Instant, event: &Event) {
        if let Some(line) = narrate(event) {
            self.last_event = Some(line);
        }
        self.observer.event(at, event);
    }

    fn start_alert(
        &mut self,
        alert: crate::event::AlertKind,
        blocked: Option<hyoka_idle_detect::BlockedKind>,
        at: Instant,
    ) {
        self.emit(at, &Event::AlertStarted { alert, blocked });
        self.alert_serial += 1;
        let serial = self.alert_serial;
        let options = self.options.alerts.clone();
        let screen = self.model.screen_text();
        let mut cancel = self.alert_cancel.subscribe();
        self.alert_tasks.spawn(async move {
            let cancelled = async move {
                while !*cancel.borrow_and_update() {
                    if cancel.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
            };
            run_alert(&options, alert, blocked, screen, serial, cancelled).await
        });
    }

    fn alert_finished(&mut self, run: AlertRun) {
        self.emit(
            now(),
            &Event::AlertFinished {
                alert: run.alert,
                code: run.code,
                timed_out: run.timed_out,
                error: run.error,
            },
        );
    }

    async fn control(&mut self, request: Control) {
        let at = now();
        match request {
            Control::Status(reply) => {
                let verdict = self.model.verdict(at);
                self.observe(&verdict, at);
                let _ = reply.send(self.status(at));
            }
            Control::Send { text, queue, reply } => {
                let id = self.next_send;
                self.next_send += 1;
                self.sends.insert(id, reply);
                self.decide(Input::Send { id, text, queue }, at).await;
            }
            Control::Stop => self.end = Some(SessionEnd::Interrupted),
        }
    }

    fn status(&mut self, at: Instant) -> LiveStatus {
        let machine = self.machine.status(at);
        let mut verdict = self.verdict.clone();
        if machine.state.in_cycle() && verdict.state != SessionState::Blocked {
            verdict.state = SessionState::Working;
            verdict.blocked = None;
            verdict.evidence.insert(
                0,
                hyoka_idle_detect::Evidence {
                    signal: "respawn",
                    points_to: SessionState::Working,
                    rule: "respawn/cycle".to_owned(),
                    detail: format!("cycle {} runs ({})", machine.cycles, machine.state),
                    age_ms: 0,
                    source: String::new(),
                },
            );
        }
        LiveStatus {
            verdict,
            state_for: at.saturating_duration_since(self.verdict_since),
            human_present: machine.human_lock.is_some() || self.attached > 0,
            machine,
            attached: self.attached,
            last_event: self.last_event.clone(),
        }
    }

    async fn step(&mut self, input: Input, at: Instant) {
        let mut inputs = vec![input];
        while let Some(input) = inputs.pop() {
            let actions = self.machine.handle(input, at);
            for action in actions {
                if let Some(next) = self.act(action, at).await {
                    inputs.push(next);
                }
            }
        }
    }

    /// Sends `keys` if a verdict taken now allows them ([`Machine::may_type`]); otherwise
    /// says so to the machine. Every keystroke the machine decides on passes here.
    async fn type_keys(&mut self, keys: Keys, at: Instant) -> Option<Input> {
        let verdict = self.model.verdict(at);
        let shown = match self.machine.delivery_text().map(str::to_owned) {
            Some(text) => self.model.shows(at, &text),
            None => false,
        };
        if !self.machine.may_type(&keys, &verdict, shown) {
            self.observe(&verdict, at);
            return Some(Input::KeysWithheld { keys, verdict });
        }
        let sent = match &keys {
            Keys::Text(text) => self.terminal.send_text(text).await,
            Keys::Enter => self.terminal.send_enter().await,
        };
        if let Err(err) = sent {
            self.lost(&err);
        }
        None
    }

    async fn act(&mut self, action: Action, at: Instant) -> Option<Input> {
        match action {
            Action::Emit(event) => self.emit(at, &event),
            Action::SendDone { id, outcome } => {
                if let Some(reply) = self.sends.remove(&id) {
                    let _ = reply.send(outcome);
                }
            }
            Action::Type(keys) => return self.type_keys(keys, at).await,
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
        None
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
        // Alert commands are stopped with the controller.
        let _ = self.alert_cancel.send(true);
        while let Some(run) = self.alert_tasks.join_next().await {
            if let Ok(run) = run {
                self.alert_finished(run);
            }
        }
        let detach = self.end == Some(SessionEnd::Detached);
        let exit = if detach && self.terminal.detach().await? {
            self.emit(now(), &Event::Detached);
            Exit::default()
        } else {
            if detach {
                // This terminal cannot outlive the controller: detaching stops it.
                self.end = Some(SessionEnd::Interrupted);
            }
            self.terminal.stop(self.options.grace).await?
        };
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

/// Completes when the detach channel fires; pending forever without one (or once its
/// sender is gone without firing).
async fn detached(rx: &mut Option<oneshot::Receiver<()>>) {
    if let Some(receiver) = rx
        && receiver.await.is_ok()
    {
        return;
    }
    *rx = None;
    std::future::pending::<()>().await;
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
