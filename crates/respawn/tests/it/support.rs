//! Helpers: `Sim`, a sans-IO harness that drives a `Machine` on exact virtual time, with
//! scripted (mock) AI checkers and Codeman's `MockSession` chunks as detector signals.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use hyoka_idle_detect::{
    BlockedKind, CheckError, CheckReply, ChunkSignals, HookEvent, IdleAnswer, PlanAnswer,
    SessionState, Verdict,
};
use hyoka_respawn::{
    Action, Checker, Event, Input, Keys, Machine, RespawnConfig, State, Step, TimerName,
};

pub(crate) const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A scripted AI checker: each started check takes the next `(delay, outcome)`; with none
/// left, the check never answers (until the machine's time limit).
#[derive(Debug)]
pub(crate) struct MockChecker<V> {
    pub(crate) script: VecDeque<(u64, Result<CheckReply<V>, CheckError>)>,
    /// Checks started, by id.
    pub(crate) started: Vec<u64>,
    /// Checks cancelled, by id.
    pub(crate) cancelled: Vec<u64>,
}

impl<V> Default for MockChecker<V> {
    fn default() -> Self {
        Self {
            script: VecDeque::new(),
            started: Vec::new(),
            cancelled: Vec::new(),
        }
    }
}

impl<V> MockChecker<V> {
    pub(crate) fn answer(&mut self, after_ms: u64, verdict: V, reasoning: &str) {
        self.script.push_back((
            after_ms,
            Ok(CheckReply {
                verdict,
                reasoning: reasoning.to_owned(),
            }),
        ));
    }

    /// A checker whose answer cannot be parsed (`could not parse verdict from: "<output>"`).
    pub(crate) fn fail(&mut self, after_ms: u64, output: &str) {
        self.fail_with(
            after_ms,
            CheckError::Unparsable {
                first: output.to_owned(),
            },
        );
    }

    pub(crate) fn fail_with(&mut self, after_ms: u64, error: CheckError) {
        self.script.push_back((after_ms, Err(error)));
    }
}

enum Scheduled {
    Idle(u64, Result<CheckReply<IdleAnswer>, CheckError>),
    Plan(u64, Result<CheckReply<PlanAnswer>, CheckError>),
}

/// The harness. Every input is recorded with its virtual time in milliseconds since `t0`.
pub(crate) struct Sim {
    pub(crate) m: Machine,
    pub(crate) t0: Instant,
    pub(crate) now: Instant,
    pub(crate) log: Vec<(u64, Action)>,
    pub(crate) idle: MockChecker<IdleAnswer>,
    pub(crate) plan: MockChecker<PlanAnswer>,
    /// When `true`, a cancelled check's scripted answer is still delivered (a late
    /// result, which the machine must ignore).
    pub(crate) deliver_after_cancel: bool,
    /// When `true` (the default), the simulated agent shows what is typed: the text in its
    /// input box (a blocked(draft) verdict while it is there), and, after Enter, in the
    /// transcript with the box empty again, which confirms the delivery. Tests of delivery
    /// verification turn it off and play the agent's reactions themselves.
    pub(crate) auto_echo: bool,
    /// The verdict the test set last.
    current: Verdict,
    scheduled: Vec<(Instant, Scheduled)>,
}

impl Sim {
    /// A stopped machine at t=0 with an idle verdict (Codeman's `MockSession` has
    /// `isWorking=false`).
    pub(crate) fn new(config: RespawnConfig) -> Self {
        let t0 = Instant::now();
        let mut sim = Self {
            m: Machine::new(config),
            t0,
            now: t0,
            log: Vec::new(),
            idle: MockChecker::default(),
            plan: MockChecker::default(),
            deliver_after_cancel: true,
            auto_echo: true,
            current: Verdict::default(),
            scheduled: Vec::new(),
        };
        sim.verdict(SessionState::Idle, None);
        sim
    }

    /// [`Sim::new`] then `start` at t=0.
    pub(crate) fn started(config: RespawnConfig) -> Self {
        let mut sim = Self::new(config);
        sim.send(Input::Start);
        sim
    }

    pub(crate) fn t(&self) -> u64 {
        u64::try_from((self.now - self.t0).as_millis()).unwrap()
    }

    pub(crate) fn send(&mut self, input: Input) {
        if let Input::Verdict(verdict) = &input {
            self.current = verdict.clone();
        }
        let actions = self.m.handle(input, self.now);
        let typed: Vec<Keys> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Type(keys) => Some(keys.clone()),
                _ => None,
            })
            .collect();
        self.record(actions);
        if self.auto_echo {
            for keys in typed {
                self.echo(&keys);
            }
        }
    }

    /// The simulated agent shows `keys`: typed text in its input box, then (on Enter) in
    /// the transcript.
    fn echo(&mut self, keys: &Keys) {
        let shown = |sim: &mut Self| {
            let actions = sim.m.handle(Input::TextShown, sim.now);
            sim.record(actions);
        };
        match keys {
            Keys::Text(_) => {
                let before = self.current.clone();
                let draft = Verdict {
                    state: SessionState::Blocked,
                    blocked: Some(BlockedKind::Draft),
                    evidence: Vec::new(),
                };
                let actions = self.m.handle(Input::Verdict(draft), self.now);
                self.record(actions);
                shown(self);
                let actions = self.m.handle(Input::Verdict(before), self.now);
                self.record(actions);
            }
            Keys::Enter => shown(self),
        }
    }

    fn record(&mut self, actions: Vec<Action>) {
        let t = self.t();
        for action in actions {
            match &action {
                Action::StartCheck {
                    checker: Checker::Idle,
                    id,
                    ..
                } => {
                    self.idle.started.push(*id);
                    if let Some((delay, outcome)) = self.idle.script.pop_front() {
                        self.scheduled
                            .push((self.now + ms(delay), Scheduled::Idle(*id, outcome)));
                    }
                }
                Action::StartCheck {
                    checker: Checker::Plan,
                    id,
                    ..
                } => {
                    self.plan.started.push(*id);
                    if let Some((delay, outcome)) = self.plan.script.pop_front() {
                        self.scheduled
                            .push((self.now + ms(delay), Scheduled::Plan(*id, outcome)));
                    }
                }
                Action::CancelCheck {
                    checker: Checker::Idle,
                    id,
                } => {
                    self.idle.cancelled.push(*id);
                    if !self.deliver_after_cancel {
                        let id = *id;
                        self.scheduled
                            .retain(|(_, s)| !matches!(s, Scheduled::Idle(i, _) if *i == id));
                    }
                }
                Action::CancelCheck {
                    checker: Checker::Plan,
                    id,
                } => {
                    self.plan.cancelled.push(*id);
                    if !self.deliver_after_cancel {
                        let id = *id;
                        self.scheduled
                            .retain(|(_, s)| !matches!(s, Scheduled::Plan(i, _) if *i == id));
                    }
                }
                _ => {}
            }
            self.log.push((t, action));
        }
    }

    /// Advances virtual time by `delta`, delivering every timer and scripted check result
    /// at its exact instant, in time order.
    pub(crate) fn advance(&mut self, delta: u64) {
        let target = self.now + ms(delta);
        loop {
            let timer = self.m.next_deadline();
            let result = self.scheduled.iter().map(|(at, _)| *at).min();
            let next = match (timer, result) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(x) => x,
                    None => break,
                },
            };
            if next > target {
                break;
            }
            self.now = self.now.max(next);
            if result == Some(next) {
                let index = self
                    .scheduled
                    .iter()
                    .position(|(at, _)| *at == next)
                    .unwrap();
                let (_, scheduled) = self.scheduled.remove(index);
                match scheduled {
                    Scheduled::Idle(id, result) => self.send(Input::IdleCheckDone { id, result }),
                    Scheduled::Plan(id, result) => self.send(Input::PlanCheckDone { id, result }),
                }
            } else {
                self.send(Input::Tick);
            }
        }
        self.now = target;
    }

    /// Advances to `t` ms after t0.
    pub(crate) fn advance_to(&mut self, t: u64) {
        let now = self.t();
        assert!(t >= now, "cannot go back from {now} to {t}");
        self.advance(t - now);
    }

    pub(crate) fn out(&mut self, signals: ChunkSignals) {
        self.send(Input::Output(signals));
    }

    /// `✻ Worked for 2m 46s` (Codeman's `simulateCompletionMessage`).
    pub(crate) fn completion(&mut self) {
        self.out(ChunkSignals {
            completion: true,
            substantial: true,
            ..ChunkSignals::default()
        });
    }

    /// `Thinking... ⠋` (Codeman's `simulateWorking`).
    pub(crate) fn working(&mut self) {
        self.out(ChunkSignals {
            working: true,
            substantial: true,
            ..ChunkSignals::default()
        });
    }

    /// `❯ ` (Codeman's `simulatePrompt`): a prompt, not substantial.
    pub(crate) fn prompt(&mut self) {
        self.out(ChunkSignals {
            prompt: true,
            ..ChunkSignals::default()
        });
    }

    /// Plain text with no pattern in it; substantial when it has more than two characters.
    pub(crate) fn text(&mut self, text: &str) {
        self.out(ChunkSignals {
            substantial: text.trim().chars().count() > 2,
            ..ChunkSignals::default()
        });
    }

    /// A token counter.
    pub(crate) fn tokens(&mut self, tokens: u64) {
        self.out(ChunkSignals {
            tokens: Some(tokens),
            substantial: true,
            ..ChunkSignals::default()
        });
    }

    /// The plan-approval menu (`Would you like to proceed with this plan?\n❯ 1. Yes …`):
    /// a prompt chunk, and the detector's verdict becomes blocked(plan).
    pub(crate) fn plan_menu(&mut self) {
        self.verdict(SessionState::Blocked, Some(BlockedKind::Plan));
        self.out(ChunkSignals {
            prompt: true,
            substantial: true,
            ..ChunkSignals::default()
        });
    }

    /// A permission prompt (`Do you want to proceed? ❯ 1. Yes …`).
    pub(crate) fn permission_prompt(&mut self) {
        self.verdict(SessionState::Blocked, Some(BlockedKind::Permission));
        self.out(ChunkSignals {
            prompt: true,
            substantial: true,
            ..ChunkSignals::default()
        });
    }

    pub(crate) fn verdict(&mut self, state: SessionState, blocked: Option<BlockedKind>) {
        self.send(Input::Verdict(Verdict {
            state,
            blocked,
            evidence: Vec::new(),
        }));
    }

    pub(crate) fn hook(&mut self, hook: HookEvent) {
        self.send(Input::Hook(hook));
    }

    pub(crate) fn user_types(&mut self) {
        self.send(Input::UserTyped);
    }

    /// Every event so far.
    pub(crate) fn events(&self) -> Vec<Event> {
        self.log
            .iter()
            .filter_map(|(_, a)| match a {
                Action::Emit(e) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    /// Events with their times.
    pub(crate) fn timed_events(&self) -> Vec<(u64, Event)> {
        self.log
            .iter()
            .filter_map(|(t, a)| match a {
                Action::Emit(e) => Some((*t, e.clone())),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn count(&self, pred: impl Fn(&Event) -> bool) -> usize {
        self.events().iter().filter(|e| pred(e)).count()
    }

    pub(crate) fn has(&self, pred: impl Fn(&Event) -> bool) -> bool {
        self.count(pred) > 0
    }

    /// The first time an event matching `pred` was emitted.
    pub(crate) fn when(&self, pred: impl Fn(&Event) -> bool) -> Option<u64> {
        self.timed_events()
            .into_iter()
            .find(|(_, e)| pred(e))
            .map(|(t, _)| t)
    }

    /// The states entered, in order, starting with the state at the first event.
    pub(crate) fn states(&self) -> Vec<State> {
        let mut states = Vec::new();
        for event in self.events() {
            if let Event::StateChanged { from, to } = event {
                if states.is_empty() {
                    states.push(from);
                }
                states.push(to);
            }
        }
        states
    }

    /// Everything typed, in order.
    pub(crate) fn typed(&self) -> Vec<Keys> {
        self.log
            .iter()
            .filter_map(|(_, a)| match a {
                Action::Type(k) => Some(k.clone()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn enters(&self) -> usize {
        self.typed().iter().filter(|k| **k == Keys::Enter).count()
    }

    pub(crate) fn steps_sent(&self) -> Vec<Step> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::StepSent { step, .. } => Some(step),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn steps_completed(&self) -> Vec<Step> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::StepCompleted { step, .. } => Some(step),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn cycles_started(&self) -> usize {
        self.count(|e| matches!(e, Event::CycleStarted { .. }))
    }

    pub(crate) fn timer_armed(&self, name: TimerName) -> bool {
        self.m
            .active_timers(self.now)
            .iter()
            .any(|t| t.name == name)
    }

    pub(crate) fn state(&self) -> State {
        self.m.state()
    }

    /// Forgets the log so far (keeps the machine).
    pub(crate) fn clear_log(&mut self) {
        self.log.clear();
    }
}
