//! The sans-IO detector: observations in, each with the current time, and a fused verdict
//! with per-signal evidence out.
//!
//! Per output chunk the detector does only cheap, bounded work (tokenize, classify finished
//! lines, queue bytes for the screen) and returns that chunk's [`ChunkSignals`]. The screen is
//! rendered and classified by the profile only when a verdict is asked for and output arrived
//! since the last one; ticks without new output reuse the cached screen classification.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::profile::{Profile, ScreenVerdict};
use crate::ring::Ring;
use crate::screen::{Screen, ScreenModel};
use crate::signals::{BlockedKind, ChunkSignals, Evidence, HookEvent, SessionState, Verdict};
use crate::stream::{StreamScanner, strip_for_context};

/// Timings and sizes of a [`Detector`]. `Default` gives the values documented on each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectorConfig {
    /// Terminal rows of the screen model (40).
    pub rows: u16,
    /// Terminal columns of the screen model (120).
    pub cols: u16,
    /// Quiet time after the last substantial output before a screen that shows the idle
    /// prompt counts as idle (1.5 s). Output in that time reads as "still working".
    pub settle: Duration,
    /// Silence after a completion message that makes the session idle even when the screen
    /// is not recognised (10 s, Codeman's `completionConfirmMs`); also the token-stability
    /// period.
    pub completion_confirm: Duration,
    /// How long a working indicator seen in the output stream keeps an unrecognised screen
    /// `working` (3 s).
    pub working_hold: Duration,
    /// CPU ticks per second of the agent's tree at or above which it counts as busy (10,
    /// a tenth of a core at 100 Hz).
    pub busy_ticks_per_sec: u64,
    /// How long a process-activity sample stays valid (10 s).
    pub process_sample_ttl: Duration,
    /// How long an AI verdict stays valid when nothing else happens (10 min); any
    /// substantial output or user input after it makes it stale at once.
    pub ai_verdict_ttl: Duration,
    /// How long a `UserPromptSubmit` hook with no `Stop` after it says the agent works (5
    /// min): where it and the screen disagree, the verdict is not idle.
    pub prompt_hook_ttl: Duration,
    /// Bytes of raw output kept (48 KiB): the screen is rebuilt from them when more arrived
    /// between two decisions, and the AI checkers' context is stripped from them.
    pub raw_bytes: usize,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        Self {
            rows: 40,
            cols: 120,
            settle: Duration::from_millis(1500),
            completion_confirm: Duration::from_secs(10),
            working_hold: Duration::from_secs(3),
            busy_ticks_per_sec: 10,
            process_sample_ttl: Duration::from_secs(10),
            ai_verdict_ttl: Duration::from_mins(10),
            prompt_hook_ttl: Duration::from_mins(5),
            raw_bytes: 48 * 1024,
        }
    }
}

/// One sample of the agent's process tree, as the caller measured it (for example from
/// `/proc/<pid>/stat` of every process in the tree).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessActivity {
    /// CPU ticks (utime + stime) the tree used since the previous sample.
    pub cpu_ticks: u64,
    /// The time since the previous sample.
    pub interval: Duration,
    /// Children the caller considers busy (a compiler, a test run), not idle shells.
    pub busy_children: u32,
}

/// An AI checker's answer, fed back with [`Detector::ai_verdict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AiVerdict {
    /// `IDLE` from the idle checker.
    Idle,
    /// `WORKING` from the idle checker.
    Working,
    /// `PLAN_MODE` from the plan checker: a plan-approval menu is waiting.
    PlanMode,
    /// `NOT_PLAN_MODE` from the plan checker.
    NotPlanMode,
}

/// Running totals of the per-chunk signals (what `hyoka detect --stream` prints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StreamCounts {
    /// Bytes of output seen.
    pub bytes: u64,
    /// Output chunks seen.
    pub chunks: u64,
    /// Chunks that completed a completion message.
    pub completions: u64,
    /// Chunks with a working indicator.
    pub working_chunks: u64,
    /// Chunks that drew the prompt with no working indicator.
    pub prompt_chunks: u64,
    /// Chunks with more than two visible characters.
    pub substantial_chunks: u64,
    /// Chunks whose token counter differed from the previous value.
    pub token_changes: u64,
    /// The last token counter value.
    pub last_tokens: Option<u64>,
}

/// How much memory a detector holds, split as the performance target counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StateSize {
    /// Everything but the terminal grid: the tokenizer, the stripped-text window, the line
    /// buffer, the screen's pending-output ring, and the detector struct itself.
    pub bounded_bytes: usize,
    /// The terminal grid of the screen model (rows × columns cells).
    pub screen_bytes: usize,
}

/// The detector: see the crate docs for the theory of operation.
#[derive(Debug)]
pub struct Detector {
    profile: Profile,
    config: DetectorConfig,
    scanner: StreamScanner,
    raw: Ring,
    screen: ScreenModel,
    screen_verdict: ScreenVerdict,
    screen_since: Option<Instant>,
    /// Raw-output position and title at the last classification of the screen.
    classified: Option<(u64, String)>,
    first_seen: Option<Instant>,
    last_output: Option<Instant>,
    last_substantial: Option<Instant>,
    last_working: Option<Instant>,
    last_completion: Option<Instant>,
    last_prompt: Option<Instant>,
    tokens: Option<u64>,
    tokens_changed: Option<Instant>,
    hook: Option<(HookEvent, Instant)>,
    user_input: Option<Instant>,
    process: Option<(ProcessActivity, Instant)>,
    ai: Option<(AiVerdict, Instant)>,
    counts: StreamCounts,
    verdict: Verdict,
    /// The terminal changed size and the program has not drawn since: the model's screen
    /// (cut or extended by the resize) may not be what the terminal shows.
    redraw_pending: bool,
}

impl Detector {
    /// A detector that classifies screens with `profile`.
    pub fn new(profile: Profile, config: DetectorConfig) -> Self {
        let screen = ScreenModel::new(config.rows, config.cols);
        Self {
            profile,
            scanner: StreamScanner::new(),
            raw: Ring::new(config.raw_bytes),
            screen,
            screen_verdict: ScreenVerdict {
                state: SessionState::Unknown,
                blocked: None,
                rule: None,
                detail: "no output yet".to_owned(),
                source: String::new(),
                hits: Vec::new(),
            },
            screen_since: None,
            classified: None,
            first_seen: None,
            last_output: None,
            last_substantial: None,
            last_working: None,
            last_completion: None,
            last_prompt: None,
            tokens: None,
            tokens_changed: None,
            hook: None,
            user_input: None,
            process: None,
            ai: None,
            counts: StreamCounts::default(),
            verdict: Verdict::default(),
            redraw_pending: false,
            config,
        }
    }

    /// The profile in use.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The configuration in use.
    pub fn config(&self) -> &DetectorConfig {
        &self.config
    }

    /// Observes one chunk of terminal output at `now` and returns what it says.
    ///
    /// Chunks may split escape sequences and UTF-8 characters anywhere. Empty chunks are
    /// ignored (they are not output). The work is proportional to the chunk; nothing is
    /// rendered here.
    pub fn output(&mut self, now: Instant, bytes: &[u8]) -> ChunkSignals {
        self.output_kept(now, bytes, true)
    }

    /// [`Detector::output`], keeping the bytes for the screen only when `keep` is set: a caller
    /// that knows more output follows (a stream read ahead in blocks) keeps only the last
    /// [`DetectorConfig::raw_bytes`] of what it feeds, which is all the ring would hold.
    pub(crate) fn output_kept(&mut self, now: Instant, bytes: &[u8], keep: bool) -> ChunkSignals {
        if bytes.is_empty() {
            return ChunkSignals::default();
        }
        self.first_seen.get_or_insert(now);
        let signals = self.scanner.feed(bytes);
        if keep {
            self.raw.push(bytes);
        }
        self.screen.mark_stale();
        self.redraw_pending = false;
        self.last_output = Some(now);
        let c = &mut self.counts;
        c.bytes += bytes.len() as u64;
        c.chunks += 1;
        if signals.substantial {
            self.last_substantial = Some(now);
            c.substantial_chunks += 1;
        }
        if signals.working {
            self.last_working = Some(now);
            c.working_chunks += 1;
        }
        if signals.completion {
            self.last_completion = Some(now);
            c.completions += 1;
        }
        if signals.prompt {
            c.prompt_chunks += 1;
        }
        if self.scanner.drew_prompt() {
            self.last_prompt = Some(now);
        }
        if let Some(t) = signals.tokens {
            if self.tokens != Some(t) {
                self.tokens = Some(t);
                self.tokens_changed = Some(now);
                c.token_changes += 1;
            }
            c.last_tokens = Some(t);
        }
        signals
    }

    /// Observes a Claude Code hook event at `now`. Hooks are authoritative until output
    /// contradicts them: a working indicator after a `Stop` starts a new turn, and a working
    /// indicator or user input after a permission prompt means it was answered.
    pub fn hook(&mut self, now: Instant, event: HookEvent) {
        self.first_seen.get_or_insert(now);
        self.hook = Some((event, now));
    }

    /// Observes a sample of the agent's process tree at `now`.
    pub fn process_activity(&mut self, now: Instant, activity: ProcessActivity) {
        self.first_seen.get_or_insert(now);
        self.process = Some((activity, now));
    }

    /// Observes that the user typed into the session at `now`. It makes earlier hooks and AI
    /// verdicts stale (the user may have answered a prompt or started a turn).
    pub fn user_input(&mut self, now: Instant) {
        self.first_seen.get_or_insert(now);
        self.user_input = Some(now);
    }

    /// Observes an AI checker's verdict, received at `now` (pass the time the check
    /// started when output may have arrived while it ran, so that output makes it stale).
    pub fn ai_verdict(&mut self, now: Instant, verdict: AiVerdict) {
        self.first_seen.get_or_insert(now);
        self.ai = Some((verdict, now));
    }

    /// Changes the terminal size of the screen model, from the next byte of output on: the
    /// output seen so far is drawn at the old size first. Until the program draws again,
    /// the screen may not be what the terminal shows (a resize cuts or extends rows the
    /// program has not redrawn), so no verdict is idle; the settle period then runs from
    /// that output as from any other. A resize to the current size changes nothing.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let (rows, cols) = (rows.max(1), cols.max(1));
        if self.screen.size() == (rows, cols) {
            return;
        }
        let title = self.scanner.title();
        self.screen.sync(&self.raw, &title);
        self.screen.resize(rows, cols);
        self.classified = None;
        self.redraw_pending = true;
    }

    /// The screen model's size (rows, columns).
    pub fn size(&self) -> (u16, u16) {
        self.screen.size()
    }

    /// Classifies screens with `profile` from the next decision on (the per-chunk path does
    /// not use the profile, so a caller may start with any profile and set the real one once
    /// it is known or compiled).
    pub fn set_profile(&mut self, profile: Profile) {
        self.profile = profile;
        self.classified = None;
    }

    /// Re-evaluates at `now`; returns the new verdict if its state or blocked kind changed
    /// since the last evaluation.
    pub fn tick(&mut self, now: Instant) -> Option<&Verdict> {
        let next = self.arbitrate(now);
        let changed = !next.same_state(&self.verdict);
        self.verdict = next;
        changed.then_some(&self.verdict)
    }

    /// The verdict at `now`, with its evidence.
    pub fn verdict(&mut self, now: Instant) -> &Verdict {
        self.verdict = self.arbitrate(now);
        &self.verdict
    }

    /// The verdict computed by the last [`Detector::tick`] or [`Detector::verdict`].
    pub fn last_verdict(&self) -> &Verdict {
        &self.verdict
    }

    /// The earliest time after `now` at which the verdict may change with no new
    /// observation (a settle period, a confirmation or a hold running out), if any. A driver
    /// can sleep until then instead of ticking on a fixed period.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let c = &self.config;
        let candidates = [
            self.last_substantial.map(|t| t + c.settle),
            self.last_working.map(|t| t + c.working_hold),
            self.last_substantial.map(|t| t + c.completion_confirm),
            self.process.map(|(_, t)| t + c.process_sample_ttl),
            self.ai.map(|(_, t)| t + c.ai_verdict_ttl),
        ];
        candidates.into_iter().flatten().filter(|&t| t > now).min()
    }

    /// The current screen, rendered from the output seen so far.
    pub fn screen(&mut self) -> &Screen {
        let title = self.scanner.title();
        self.screen.sync(&self.raw, &title)
    }

    /// The newest `max_chars` characters of ANSI-stripped output (carriage-return redraws
    /// collapsed), for an AI checker's prompt. Built on demand from the raw-output ring, so
    /// it holds at most what [`DetectorConfig::raw_bytes`] of output strips to.
    pub fn stripped_tail(&self, max_chars: usize) -> String {
        let bytes = self.raw.tail(self.raw.len());
        strip_for_context(&bytes, max_chars)
    }

    /// Running totals of the per-chunk signals.
    pub fn counts(&self) -> &StreamCounts {
        &self.counts
    }

    /// The memory this detector holds.
    pub fn state_size(&self) -> StateSize {
        StateSize {
            bounded_bytes: size_of::<Self>() + self.scanner.heap_bytes() + self.raw.capacity(),
            screen_bytes: self.screen.grid_bytes(),
        }
    }

    fn refresh_screen(&mut self) {
        let title = self.scanner.title();
        let end = self.raw.end();
        if self
            .classified
            .as_ref()
            .is_some_and(|(e, t)| *e == end && *t == title)
        {
            return;
        }
        let screen = self.screen.sync(&self.raw, &title);
        let next = self.profile.classify(screen);
        if next.state != self.screen_verdict.state
            || next.rule != self.screen_verdict.rule
            || self.screen_since.is_none()
        {
            self.screen_since = self.last_output.or(self.first_seen);
        }
        self.screen_verdict = next;
        self.classified = Some((end, title));
    }

    fn age(now: Instant, since: Option<Instant>) -> u64 {
        since.map_or(0, |t| {
            u64::try_from(now.saturating_duration_since(t).as_millis()).unwrap_or(u64::MAX)
        })
    }

    /// The terminal changed size and the program has not redrawn yet: the model of the
    /// screen may not match the pane.
    fn resized_evidence(&self) -> Evidence {
        let (rows, cols) = self.screen.size();
        Evidence {
            signal: "screen",
            points_to: SessionState::Unknown,
            rule: "screen/resized".to_owned(),
            detail: format!("the terminal is now {cols}x{rows} and the program has not redrawn"),
            age_ms: 0,
            source: String::new(),
        }
    }

    fn since_ms(&self, now: Instant, at: Instant) -> u64 {
        let _ = self;
        Self::age(now, Some(at))
    }

    /// Fuses every signal into one verdict. The order of the checks is the precedence:
    /// blocked (screen, hook, AI plan check) beats an idle hook, which beats working
    /// evidence (a `UserPromptSubmit` hook with no `Stop` since, process tree, screen,
    /// stream, AI), which beats idle evidence (screen after
    /// settling, AI, completion plus silence).
    fn arbitrate(&mut self, now: Instant) -> Verdict {
        self.refresh_screen();
        let cfg = &self.config;
        let sv = &self.screen_verdict;
        let after = |a: Option<Instant>, b: Instant| a.is_some_and(|a| a > b);

        // Freshness of the non-output observations.
        let hook = self.hook.filter(|&(_, t)| !after(self.user_input, t));
        let hook_blocked = hook.filter(|&(e, t)| {
            matches!(
                e,
                HookEvent::PermissionPrompt | HookEvent::ElicitationDialog
            ) && !after(self.last_working, t)
        });
        let hook_idle = hook.filter(|&(e, t)| {
            matches!(e, HookEvent::Stop | HookEvent::IdlePrompt) && !after(self.last_working, t)
        });
        let hook_working = self.prompt_hook(hook, now);
        let ai = self.ai.filter(|&(_, t)| {
            !after(self.last_substantial, t)
                && !after(self.user_input, t)
                && now.saturating_duration_since(t) < cfg.ai_verdict_ttl
        });
        let process = self
            .process
            .filter(|&(_, t)| now.saturating_duration_since(t) < cfg.process_sample_ttl);
        let busy = process.is_some_and(|(a, _)| is_busy(&a, cfg.busy_ticks_per_sec));
        let quiet = self
            .last_substantial
            .or(self.first_seen)
            .map_or(Duration::MAX, |t| now.saturating_duration_since(t));
        let settled = quiet >= cfg.settle;
        let stream_working = self
            .last_working
            .is_some_and(|t| now.saturating_duration_since(t) < cfg.working_hold);
        let completed = self
            .last_completion
            .is_some_and(|c| !after(self.last_working, c));

        let mut evidence = Vec::new();
        let draft = sv.blocked == Some(BlockedKind::Draft);
        let decision: (SessionState, Option<BlockedKind>) =
            if sv.state == SessionState::Blocked && !draft {
                evidence.push(self.screen_evidence(now));
                (SessionState::Blocked, sv.blocked)
            } else if let Some((e, t)) = hook_blocked {
                evidence.push(self.hook_evidence(now, e, t));
                (SessionState::Blocked, Some(hook_blocked_kind(e)))
            } else if let Some((AiVerdict::PlanMode, t)) = ai {
                evidence.push(self.ai_evidence(now, AiVerdict::PlanMode, t));
                (SessionState::Blocked, Some(BlockedKind::Plan))
            } else if self.redraw_pending {
                evidence.push(self.resized_evidence());
                (SessionState::Unknown, None)
            } else if draft {
                // A person's draft in the input: whatever else says the turn is over, typing now
                // would mangle it.
                evidence.push(self.screen_evidence(now));
                (SessionState::Blocked, Some(BlockedKind::Draft))
            } else if let Some((e, t)) =
                hook_idle.filter(|_| !busy && sv.state != SessionState::Working)
            {
                // A hook that says the turn ended counts only where the screen does not
                // show work: where the two disagree, the verdict is not idle.
                evidence.push(self.hook_evidence(now, e, t));
                (SessionState::Idle, None)
            } else if let Some((e, t)) = hook_working {
                evidence.push(self.hook_evidence(now, e, t));
                (SessionState::Working, None)
            } else if busy {
                evidence.push(self.process_evidence(now));
                (SessionState::Working, None)
            } else if sv.state == SessionState::Working {
                evidence.push(self.screen_evidence(now));
                (SessionState::Working, None)
            } else if stream_working && sv.state != SessionState::Idle {
                evidence.push(self.working_evidence(now));
                (SessionState::Working, None)
            } else if let Some((AiVerdict::Working, t)) = ai {
                evidence.push(self.ai_evidence(now, AiVerdict::Working, t));
                (SessionState::Working, None)
            } else if sv.state == SessionState::Idle {
                evidence.push(self.screen_evidence(now));
                if settled {
                    (SessionState::Idle, None)
                } else {
                    evidence.push(self.silence_evidence(now, quiet));
                    (SessionState::Working, None)
                }
            } else if let Some((AiVerdict::Idle, t)) = ai {
                evidence.push(self.ai_evidence(now, AiVerdict::Idle, t));
                (SessionState::Idle, None)
            } else if completed && quiet >= cfg.completion_confirm {
                evidence.push(self.completion_evidence(now));
                evidence.push(self.silence_evidence(now, quiet));
                (SessionState::Idle, None)
            } else if !settled && self.last_substantial.is_some() {
                evidence.push(self.silence_evidence(now, quiet));
                (SessionState::Working, None)
            } else {
                (SessionState::Unknown, None)
            };

        // Then everything else that fired, strongest first, so `--explain` shows it all.
        self.add_supporting_evidence(&mut evidence, now, quiet);
        Verdict {
            state: decision.0,
            blocked: decision.1,
            evidence,
        }
    }

    /// Every signal that fired, strongest first (the decisive ones are listed again only once).
    fn supporting_evidence(&self, now: Instant, quiet: Duration) -> Vec<Evidence> {
        let cfg = &self.config;
        let mut rest = vec![self.screen_evidence(now)];
        if let Some((e, t)) = self.hook {
            rest.push(self.hook_evidence(now, e, t));
        }
        if self.process.is_some() {
            rest.push(self.process_evidence(now));
        }
        if let Some((v, t)) = self.ai {
            rest.push(self.ai_evidence(now, v, t));
        }
        if self.last_completion.is_some() {
            rest.push(self.completion_evidence(now));
        }
        if self.last_working.is_some() {
            rest.push(self.working_evidence(now));
        }
        if let Some(t) = self.last_prompt {
            rest.push(Evidence {
                signal: "prompt",
                points_to: SessionState::Idle,
                rule: "stream/prompt".to_owned(),
                detail: "input prompt drawn".to_owned(),
                age_ms: self.since_ms(now, t),
                source: String::new(),
            });
        }
        if let Some(tokens) = self.tokens {
            let stable = self
                .tokens_changed
                .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
            rest.push(Evidence {
                signal: "tokens",
                points_to: if stable >= cfg.completion_confirm {
                    SessionState::Idle
                } else {
                    SessionState::Working
                },
                rule: "stream/token-counter".to_owned(),
                detail: format!(
                    "{tokens} tokens, unchanged for {:.1} s",
                    stable.as_secs_f64()
                ),
                age_ms: Self::age(now, self.tokens_changed),
                source: String::new(),
            });
        }
        if self.last_output.is_some() || self.first_seen.is_some() {
            rest.push(self.silence_evidence(now, quiet));
        }
        if let Some(t) = self.user_input {
            rest.push(Evidence {
                signal: "user_input",
                points_to: SessionState::Unknown,
                rule: "input/user".to_owned(),
                detail: "the user typed into the session".to_owned(),
                age_ms: self.since_ms(now, t),
                source: String::new(),
            });
        }
        rest
    }

    /// Adds every other signal that fired (each once) and every other screen rule that fired.
    fn add_supporting_evidence(&self, evidence: &mut Vec<Evidence>, now: Instant, quiet: Duration) {
        for e in self.supporting_evidence(now, quiet) {
            if !evidence.iter().any(|x| x.signal == e.signal) {
                evidence.push(e);
            }
        }
        evidence.extend(self.other_screen_hits(now));
    }

    /// Every screen rule that fired besides the deciding one, so `--explain` shows the whole
    /// picture.
    fn other_screen_hits(&self, now: Instant) -> impl Iterator<Item = Evidence> + '_ {
        let age_ms = Self::age(now, self.screen_since);
        self.screen_verdict
            .hits
            .iter()
            .skip(1)
            .map(move |hit| Evidence {
                signal: "screen_rule",
                points_to: hit.state,
                rule: hit.rule.clone(),
                detail: hit.line.clone(),
                age_ms,
                source: hit.source.clone(),
            })
    }

    fn screen_evidence(&self, now: Instant) -> Evidence {
        let sv = &self.screen_verdict;
        Evidence {
            signal: "screen_rule",
            points_to: sv.state,
            rule: sv
                .rule
                .clone()
                .unwrap_or_else(|| format!("{}/(none)", self.profile.name())),
            detail: sv.detail.clone(),
            age_ms: Self::age(now, self.screen_since),
            source: sv.source.clone(),
        }
    }

    /// A turn that started by the agent's own word (`UserPromptSubmit`) and has not ended by
    /// it (`hook` is the latest hook, still fresh): the screen alone may look idle (a quiet
    /// tool, a redraw the profile does not know).
    fn prompt_hook(
        &self,
        hook: Option<(HookEvent, Instant)>,
        now: Instant,
    ) -> Option<(HookEvent, Instant)> {
        hook.filter(|&(e, t)| {
            e == HookEvent::PromptSubmitted
                && now.saturating_duration_since(t) < self.config.prompt_hook_ttl
        })
    }

    fn hook_evidence(&self, now: Instant, event: HookEvent, at: Instant) -> Evidence {
        let (points_to, name) = match event {
            HookEvent::Stop => (SessionState::Idle, "Stop"),
            HookEvent::PromptSubmitted => (SessionState::Working, "UserPromptSubmit"),
            HookEvent::IdlePrompt => (SessionState::Idle, "Notification idle_prompt"),
            HookEvent::PermissionPrompt => {
                (SessionState::Blocked, "Notification permission_prompt")
            }
            HookEvent::ElicitationDialog => {
                (SessionState::Blocked, "Notification elicitation_dialog")
            }
        };
        let superseded =
            self.last_working.is_some_and(|w| w > at) || self.user_input.is_some_and(|u| u > at);
        Evidence {
            signal: "hook",
            points_to,
            rule: format!(
                "hook/{}",
                serde_json::to_value(event)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ),
            detail: if superseded {
                format!("{name} (superseded by later activity)")
            } else {
                name.to_owned()
            },
            age_ms: self.since_ms(now, at),
            source: String::new(),
        }
    }

    fn process_evidence(&self, now: Instant) -> Evidence {
        let Some((a, t)) = self.process else {
            return Evidence {
                signal: "process_activity",
                points_to: SessionState::Unknown,
                rule: "process/tree".to_owned(),
                detail: "no sample".to_owned(),
                age_ms: 0,
                source: String::new(),
            };
        };
        let busy = is_busy(&a, self.config.busy_ticks_per_sec);
        Evidence {
            signal: "process_activity",
            points_to: if busy {
                SessionState::Working
            } else {
                SessionState::Idle
            },
            rule: if a.busy_children > 0 {
                "process/busy-children"
            } else {
                "process/cpu"
            }
            .to_owned(),
            detail: format!(
                "{} CPU ticks in {:.1} s, {} busy children",
                a.cpu_ticks,
                a.interval.as_secs_f64(),
                a.busy_children
            ),
            age_ms: self.since_ms(now, t),
            source: String::new(),
        }
    }

    fn ai_evidence(&self, now: Instant, verdict: AiVerdict, at: Instant) -> Evidence {
        let (points_to, name) = match verdict {
            AiVerdict::Idle => (SessionState::Idle, "IDLE"),
            AiVerdict::Working => (SessionState::Working, "WORKING"),
            AiVerdict::PlanMode => (SessionState::Blocked, "PLAN_MODE"),
            AiVerdict::NotPlanMode => (SessionState::Unknown, "NOT_PLAN_MODE"),
        };
        let stale = self.last_substantial.is_some_and(|o| o > at)
            || self.user_input.is_some_and(|u| u > at);
        Evidence {
            signal: "ai_verdict",
            points_to,
            rule: format!("ai/{}", name.to_ascii_lowercase()),
            detail: if stale {
                format!("{name} (stale: output or input since)")
            } else {
                name.to_owned()
            },
            age_ms: self.since_ms(now, at),
            source: String::new(),
        }
    }

    fn completion_evidence(&self, now: Instant) -> Evidence {
        Evidence {
            signal: "completion",
            points_to: SessionState::Idle,
            rule: "stream/completion-message".to_owned(),
            detail: "turn completion message (`<Verb>ed for <duration>`)".to_owned(),
            age_ms: Self::age(now, self.last_completion),
            source: String::new(),
        }
    }

    fn working_evidence(&self, now: Instant) -> Evidence {
        Evidence {
            signal: "working_pattern",
            points_to: SessionState::Working,
            rule: if self.scanner.title_working() {
                "stream/title-spinner"
            } else {
                "stream/status-line"
            }
            .to_owned(),
            detail: "spinner status line or interrupt hint in the output".to_owned(),
            age_ms: Self::age(now, self.last_working),
            source: String::new(),
        }
    }

    fn silence_evidence(&self, now: Instant, quiet: Duration) -> Evidence {
        let _ = now;
        let c = &self.config;
        Evidence {
            signal: "silence",
            points_to: if quiet >= c.settle {
                SessionState::Idle
            } else {
                SessionState::Working
            },
            rule: "stream/silence".to_owned(),
            detail: if quiet == Duration::MAX {
                "no output yet".to_owned()
            } else {
                format!(
                    "{:.1} s since the last substantial output",
                    quiet.as_secs_f64()
                )
            },
            age_ms: u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX),
            source: String::new(),
        }
    }
}

fn is_busy(a: &ProcessActivity, ticks_per_sec: u64) -> bool {
    if a.busy_children > 0 {
        return true;
    }
    let ms = u64::try_from(a.interval.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    a.cpu_ticks.saturating_mul(1000) / ms >= ticks_per_sec.max(1)
}

/// The dialog a blocking hook event announces.
fn hook_blocked_kind(e: HookEvent) -> BlockedKind {
    if e == HookEvent::PermissionPrompt {
        BlockedKind::Permission
    } else {
        BlockedKind::Question
    }
}

#[cfg(test)]
mod tests;
