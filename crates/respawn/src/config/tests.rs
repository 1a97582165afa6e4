//! Validation of the configuration (Codeman §2.2, scenarios TC-004 and §5c 103).

use std::time::Duration;

use super::RespawnConfig;

#[track_caller]
fn check(input: RespawnConfig, expected: impl Fn(&RespawnConfig) -> bool) {
    let normalized = input.normalized();
    assert!(expected(&normalized), "{normalized:#?}");
}

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn zero_durations_fall_back_to_defaults() {
    // TC-004: completionConfirmMs 0 → 10000, interStepDelayMs 0 → 1000, autoAcceptDelayMs 0
    // stays 0.
    check(
        RespawnConfig {
            completion_confirm: Duration::ZERO,
            inter_step_delay: Duration::ZERO,
            auto_accept_delay: Duration::ZERO,
            no_output_timeout: Duration::ZERO,
            ..RespawnConfig::default()
        },
        |c| {
            c.completion_confirm == ms(10_000)
                && c.inter_step_delay == ms(1_000)
                && c.auto_accept_delay.is_zero()
                && c.no_output_timeout == ms(30_000)
        },
    );
}

#[test]
fn checker_zeros_fall_back() {
    let mut config = RespawnConfig::default();
    config.idle_check.timing.timeout = Duration::ZERO;
    config.idle_check.max_context = 0;
    config.plan_check.timing.timeout = Duration::ZERO;
    config.idle_check.timing.cooldown = Duration::ZERO;
    check(config, |c| {
        c.idle_check.timing.timeout == ms(90_000)
            && c.idle_check.max_context == 16_000
            && c.plan_check.timing.timeout == ms(60_000)
            && c.idle_check.timing.cooldown.is_zero()
    });
}

#[test]
fn completion_confirm_is_capped_at_no_output_timeout() {
    check(
        RespawnConfig {
            completion_confirm: ms(60_000),
            no_output_timeout: ms(30_000),
            ..RespawnConfig::default()
        },
        |c| c.completion_confirm == ms(30_000) && c.no_output_timeout == ms(30_000),
    );
    check(
        RespawnConfig {
            completion_confirm: ms(30_000),
            no_output_timeout: ms(30_000),
            ..RespawnConfig::default()
        },
        |c| c.completion_confirm == ms(30_000),
    );
}

#[test]
fn large_values_are_kept_and_empty_kickstart_is_none() {
    check(
        RespawnConfig {
            no_output_timeout: ms(86_400_000),
            kickstart_prompt: Some(String::new()),
            ..RespawnConfig::default()
        },
        |c| c.no_output_timeout == ms(86_400_000) && c.kickstart_prompt.is_none(),
    );
}

#[test]
fn defaults_match_codeman() {
    // §5c 85: the default update prompt, exactly.
    check(RespawnConfig::default(), |c| {
        c.update_prompt
            == "write a brief progress summary to CLAUDE.md noting what you accomplished, then continue working."
            && c.completion_confirm == ms(10_000)
            && c.no_output_timeout == ms(30_000)
            && c.auto_accept_delay == ms(8_000)
            && c.idle_check.timing.cooldown == ms(180_000)
            && c.plan_check.timing.cooldown == ms(30_000)
            && c.step_confirm() == ms(10_000)
    });
}
