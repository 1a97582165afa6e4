//! Unit tests of the machine's plumbing: the timer table and text shaping.
//! Behaviour scenarios live in the integration tests (`tests/it/`).
#![allow(
    clippy::disallowed_methods,
    reason = "tests need an origin for virtual time"
)]

use std::time::{Duration, Instant};

use super::single_line;
use super::timers::{Timer, Timers};
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
