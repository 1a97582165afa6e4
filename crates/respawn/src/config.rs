//! The controller's configuration: Codeman's `RespawnConfig` with its defaults, plus hyoka's
//! safety settings (human-presence lock, cycle budget, verified delivery, dry run) and the
//! cycle steps each agent's CLI offers ([`RespawnConfig::for_agent`]).

mod agents;

use std::time::Duration;

use hyoka_idle_detect::{CheckerConfig, IDLE_CONTEXT_CHARS, PLAN_CONTEXT_CHARS};

pub use self::agents::AgentCycle;

/// Codeman's default update prompt (step 1 of a cycle), verbatim: Claude Code's.
pub const DEFAULT_UPDATE_PROMPT: &str = "write a brief progress summary to CLAUDE.md noting what you accomplished, then continue working.";

/// Everything the respawn [`Machine`](crate::Machine) can be told.
///
/// Defaults are Codeman's (`docs/respawn.md` §2.1) except where hyoka decided otherwise;
/// each such field says so. Durations of zero where zero makes no sense fall back to the
/// default in [`RespawnConfig::normalized`], as Codeman's constructor does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespawnConfig {
    /// `start` is refused when `false` (Codeman's `enabled`); turning it off while running
    /// changes nothing until the next start.
    pub enabled: bool,
    /// The text typed as step 1 of a cycle. Newlines become spaces when typed (§5d 115).
    pub update_prompt: String,
    /// Delay before each step is typed (`interStepDelayMs`, 1 s).
    pub inter_step_delay: Duration,
    /// Send the clear step ([`clear_command`](Self::clear_command)) after the update step.
    pub send_clear: bool,
    /// Send the init step ([`init_command`](Self::init_command)) after the clear step.
    pub send_init: bool,
    /// What the clear step types: `/clear` for Claude Code (Codex: `/new`).
    pub clear_command: String,
    /// What the init step types: `/init` for Claude Code.
    pub init_command: String,
    /// Start cycles on its own when the session is idle. Off (`--no-cycle`), the machine
    /// only detects, reports and delivers what it is sent.
    pub cycle: bool,
    /// A prompt typed when `/init` does not start any work; `None` (or empty) skips it.
    pub kickstart_prompt: Option<String>,
    /// Silence that confirms a completion message (`completionConfirmMs`, 10 s). Also the
    /// pre-filter period and the silence and token-stability thresholds.
    pub completion_confirm: Duration,
    /// Silence after which idle is considered without any completion (`noOutputTimeoutMs`,
    /// 30 s).
    pub no_output_timeout: Duration,
    /// Silence a step needs after its completion or prompt before the next step. `None`
    /// uses [`completion_confirm`](Self::completion_confirm), as Codeman does (§5b 84).
    pub step_confirm: Option<Duration>,
    /// Press Enter on a plan-approval menu after a silence (`autoAcceptPrompts`).
    pub auto_accept: bool,
    /// Silence before a plan menu is accepted (`autoAcceptDelayMs`, 8 s; zero allowed).
    pub auto_accept_delay: Duration,
    /// Minimum absence of working output before the pre-filter passes (8 s in Codeman's
    /// code, 3 s in its docs).
    pub working_absence: Duration,
    /// How long a Stop hook waits for contradicting output before it confirms idle (3 s).
    pub hook_confirm: Duration,
    /// How long `/clear` may go without a prompt or completion before the cycle moves on
    /// (10 s).
    pub clear_fallback: Duration,
    /// How long after `/init` the controller watches for work before kickstarting (3 s).
    pub init_monitor: Duration,
    /// The AI idle check.
    pub idle_check: AiCheckConfig,
    /// The AI plan check.
    pub plan_check: AiCheckConfig,
    /// Warn and recover when a state does not change for too long.
    pub stuck_detection: bool,
    /// Time in one state before a `stuck_warning` event (5 min).
    pub stuck_warning: Duration,
    /// Time in one state before a recovery (10 min).
    pub stuck_recovery: Duration,
    /// Recoveries before the controller gives up and waits for a human (3).
    pub max_stuck_recoveries: u32,
    /// Skip `/clear` while the last token count is below this value (and above zero).
    /// Codeman skips below 30 % of 200,000 by default; hyoka defaults to `None` (never
    /// skip), see §5d 114 in the crate docs.
    pub skip_clear_below_tokens: Option<u64>,
    /// Delay between typing a step's text and pressing Enter as a separate write (50 ms,
    /// Codeman's Ink workaround), counted again from the moment the text first shows in the
    /// input box.
    pub enter_delay: Duration,
    /// The longest Enter waits for the typed text to show in the input box (a profile that
    /// cannot see the input is never waited for longer).
    pub text_wait: Duration,
    /// How long a new turn has to visibly start (working output, or the text echoed in the
    /// transcript) after an Enter before the Enter is retried, then given up.
    pub verify_timeout: Duration,
    /// Enter retries before the delivery counts as unconfirmed (`delivery_unconfirmed`).
    pub verify_retries: u32,
    /// How often a queued send looks again whether the session can take it.
    pub queue_poll: Duration,
    /// How long a keystroke from the user pauses automation (human-presence lock).
    pub human_lock: Duration,
    /// Stop after this many completed cycles (`--max-cycles`).
    pub max_cycles: Option<u32>,
    /// Start no more than this many cycles in any hour.
    pub max_cycles_per_hour: Option<u32>,
    /// Decide and report, never type.
    pub dry_run: bool,
}

/// Settings of one AI check (idle or plan): whether it runs, how much output it sees, and
/// the timings of `hyoka-idle-detect`'s [`CheckerMachine`](hyoka_idle_detect::CheckerMachine)
/// that decides when it may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AiCheckConfig {
    /// Whether checks run at all. A disabled idle check confirms idle directly; a disabled
    /// plan check accepts a plan menu directly.
    pub enabled: bool,
    /// How many characters of stripped output the check sees (16,000 idle, 8,000 plan).
    pub max_context: usize,
    /// Timeout, cooldown after the negative verdict, error back-off and the error limit.
    pub timing: CheckerConfig,
}

impl AiCheckConfig {
    /// Codeman's idle-checker defaults: 16,000 characters, timeout 90 s, cooldown 180 s
    /// after WORKING, error back-off 60 s doubling to 5 min, disabled after 3 errors.
    pub fn idle_defaults() -> Self {
        Self {
            enabled: true,
            max_context: IDLE_CONTEXT_CHARS,
            timing: CheckerConfig::idle(),
        }
    }

    /// Codeman's plan-checker defaults: 8,000 characters, timeout 60 s, cooldown 30 s after
    /// NOT_PLAN_MODE, error back-off 30 s doubling to 5 min, disabled after 3 errors.
    pub fn plan_defaults() -> Self {
        Self {
            enabled: true,
            max_context: PLAN_CONTEXT_CHARS,
            timing: CheckerConfig::plan(),
        }
    }
}

impl Default for RespawnConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            update_prompt: DEFAULT_UPDATE_PROMPT.to_owned(),
            inter_step_delay: Duration::from_secs(1),
            send_clear: true,
            send_init: true,
            clear_command: "/clear".to_owned(),
            init_command: "/init".to_owned(),
            cycle: true,
            kickstart_prompt: None,
            completion_confirm: Duration::from_secs(10),
            no_output_timeout: Duration::from_secs(30),
            step_confirm: None,
            auto_accept: true,
            auto_accept_delay: Duration::from_secs(8),
            working_absence: Duration::from_secs(8),
            hook_confirm: Duration::from_secs(3),
            clear_fallback: Duration::from_secs(10),
            init_monitor: Duration::from_secs(3),
            idle_check: AiCheckConfig::idle_defaults(),
            plan_check: AiCheckConfig::plan_defaults(),
            stuck_detection: true,
            stuck_warning: Duration::from_mins(5),
            stuck_recovery: Duration::from_mins(10),
            max_stuck_recoveries: 3,
            skip_clear_below_tokens: None,
            enter_delay: Duration::from_millis(50),
            text_wait: Duration::from_secs(1),
            verify_timeout: Duration::from_secs(3),
            verify_retries: 1,
            queue_poll: Duration::from_millis(250),
            human_lock: Duration::from_secs(30),
            max_cycles: None,
            max_cycles_per_hour: None,
            dry_run: false,
        }
    }
}

impl RespawnConfig {
    /// The defaults with the cycle steps of the agent that `profile` (a detector profile
    /// name: `claude-code`, `codex`, `gemini`, `copilot`, `aider`, `generic`) describes.
    pub fn for_agent(profile: &str) -> Self {
        let mut config = Self::default();
        AgentCycle::for_profile(profile).apply(&mut config);
        config
    }

    /// Applies Codeman's constructor validation (§2.2): zero durations that cannot be zero
    /// fall back to their defaults, and `completion_confirm` is capped at
    /// `no_output_timeout`. `auto_accept_delay` and the cooldowns may be zero.
    #[must_use]
    pub fn normalized(mut self) -> Self {
        let defaults = Self::default();
        let fix = |value: &mut Duration, default: Duration| {
            if value.is_zero() {
                *value = default;
            }
        };
        fix(&mut self.completion_confirm, defaults.completion_confirm);
        fix(&mut self.no_output_timeout, defaults.no_output_timeout);
        fix(&mut self.inter_step_delay, defaults.inter_step_delay);
        fix(&mut self.queue_poll, defaults.queue_poll);
        if self.clear_command.trim().is_empty() {
            self.send_clear = false;
        }
        if self.init_command.trim().is_empty() {
            self.send_init = false;
        }
        fix(
            &mut self.idle_check.timing.timeout,
            defaults.idle_check.timing.timeout,
        );
        fix(
            &mut self.plan_check.timing.timeout,
            defaults.plan_check.timing.timeout,
        );
        if self.idle_check.max_context == 0 {
            self.idle_check.max_context = defaults.idle_check.max_context;
        }
        if self.plan_check.max_context == 0 {
            self.plan_check.max_context = defaults.plan_check.max_context;
        }
        if self.step_confirm.is_some_and(|d| d.is_zero()) {
            self.step_confirm = None;
        }
        if self.completion_confirm > self.no_output_timeout {
            self.completion_confirm = self.no_output_timeout;
        }
        if self.kickstart_prompt.as_deref() == Some("") {
            self.kickstart_prompt = None;
        }
        self
    }

    /// The silence a step needs before the next one.
    pub fn step_confirm(&self) -> Duration {
        self.step_confirm.unwrap_or(self.completion_confirm)
    }

    /// Codeman's test configuration `FAST_TEST_CONFIG` (§5 conventions): 20 ms steps, 50 ms
    /// confirmation, 300 ms no-output fallback, 100 ms auto-accept, both AI checks off.
    pub fn fast_test() -> Self {
        let mut config = Self {
            inter_step_delay: Duration::from_millis(20),
            completion_confirm: Duration::from_millis(50),
            no_output_timeout: Duration::from_millis(300),
            auto_accept_delay: Duration::from_millis(100),
            ..Self::default()
        };
        config.idle_check.enabled = false;
        config.plan_check.enabled = false;
        config
    }

    /// Codeman's `AI_ENABLED_TEST_CONFIG`: [`fast_test`](Self::fast_test) with both checks
    /// on, 500 ms timeouts and 200 ms cooldowns.
    pub fn fast_test_with_ai() -> Self {
        let mut config = Self::fast_test();
        for checker in [&mut config.idle_check, &mut config.plan_check] {
            checker.enabled = true;
            checker.timing.timeout = Duration::from_millis(500);
            checker.timing.cooldown = Duration::from_millis(200);
        }
        config
    }
}

#[cfg(test)]
mod tests;
