//! Unit tests of the machine's plumbing: the timer table, text shaping, the checker policy.
//! Behaviour scenarios live in the integration tests (`tests/it/`).
#![allow(
    clippy::disallowed_methods,
    reason = "tests need an origin for virtual time"
)]

use std::time::{Duration, Instant};

use super::checker::{After, Policy};
use super::single_line;
use super::timers::{Timer, Timers};
use crate::config::CheckerConfig;
use crate::event::TimerName;

#[track_caller]
fn check(input: &str, expected: &str) {
    assert_eq!(single_line(input), expected);
}

#[test]
fn multi_line_prompts_become_one_line() {
    check("one\ntwo", "one two");
    check("one\r\n\r\ntwo  \n", "one two");
    check("  lead", "  lead");
    check("", "");
}

#[test]
fn timer_table_is_indexed_by_declaration_order() {
    for (i, name) in TimerName::ALL.iter().enumerate() {
        assert_eq!(*name as usize, i, "{name}");
    }
}

#[test]
fn earliest_prefers_the_first_listed_on_ties() {
    let t0 = Instant::now();
    let mut timers = Timers::default();
    let at = |ms| Timer {
        started_at: t0,
        duration: Duration::from_millis(ms),
    };
    timers.set(TimerName::NoOutputFallback, at(10));
    timers.set(TimerName::StepDelay, at(10));
    timers.set(TimerName::StuckState, at(5));
    assert_eq!(
        timers.earliest(),
        Some((TimerName::StuckState, t0 + Duration::from_millis(5)))
    );
    timers.take(TimerName::StuckState);
    assert_eq!(
        timers.earliest().map(|(n, _)| n),
        Some(TimerName::StepDelay)
    );
}

#[test]
fn error_backoff_doubles_then_disables() {
    // §2.1: 60 s, 120 s, then disabled at the third consecutive error.
    let t0 = Instant::now();
    let config = CheckerConfig::idle_defaults();
    let mut policy = Policy::new(&config);
    policy.begin();
    assert_eq!(
        policy.error(&config, t0, "x"),
        After::Cooldown(Duration::from_mins(1))
    );
    policy.begin();
    assert_eq!(
        policy.error(&config, t0, "x"),
        After::Cooldown(Duration::from_mins(2))
    );
    policy.begin();
    assert_eq!(
        policy.error(&config, t0, "boom"),
        After::Disabled("3 consecutive errors: boom".to_owned())
    );
    assert!(!policy.usable());
    // A checker disabled by errors stays disabled across reset (Codeman).
    policy.reset();
    assert!(!policy.usable());
    policy.enable();
    assert!(policy.usable());
}

#[test]
fn backoff_is_capped() {
    let t0 = Instant::now();
    let config = CheckerConfig {
        max_consecutive_errors: 10,
        ..CheckerConfig::idle_defaults()
    };
    let mut policy = Policy::new(&config);
    let mut last = After::Ready;
    for _ in 0..6 {
        policy.begin();
        last = policy.error(&config, t0, "x");
    }
    assert_eq!(last, After::Cooldown(Duration::from_mins(5)));
}

#[test]
fn a_success_resets_the_error_count() {
    let t0 = Instant::now();
    let config = CheckerConfig::idle_defaults();
    let mut policy = Policy::new(&config);
    policy.begin();
    policy.error(&config, t0, "x");
    assert_eq!(policy.consecutive_errors, 1);
    policy.begin();
    policy.positive();
    assert_eq!(policy.consecutive_errors, 0);
}
