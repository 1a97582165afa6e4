//! The alert clock on exact virtual timelines: once per episode, dated by the evidence.
#![allow(
    clippy::disallowed_methods,
    reason = "tests need an origin for virtual time"
)]

use std::time::{Duration, Instant};

use hyoka_idle_detect::{BlockedKind, Evidence, SessionState, Verdict};

use super::{AlertClock, AlertOptions};
use crate::event::AlertKind;

const fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn verdict(state: SessionState, blocked: Option<BlockedKind>, age_ms: u64) -> Verdict {
    Verdict {
        state,
        blocked,
        evidence: vec![Evidence {
            signal: "screen_rule",
            points_to: state,
            rule: "claude-code/permission-prompt".to_owned(),
            detail: "Do you want to proceed?".to_owned(),
            age_ms,
            source: String::new(),
        }],
    }
}

fn blocked(age_ms: u64) -> Verdict {
    verdict(SessionState::Blocked, Some(BlockedKind::Permission), age_ms)
}

fn clock() -> AlertClock {
    AlertClock::new(&AlertOptions {
        on_blocked: Some("notify".to_owned()),
        blocked_after: s(60),
        on_idle: Some("notify".to_owned()),
        idle_after: s(30),
        ..AlertOptions::default()
    })
}

/// Feeds `(second, verdict)` in order and returns the alerts with the second they fired.
#[track_caller]
fn check(steps: &[(u64, Verdict)], expected: &[(u64, AlertKind)]) {
    let t0 = Instant::now();
    let mut clock = clock();
    let mut fired = Vec::new();
    for (at, verdict) in steps {
        for (kind, _) in clock.observe(verdict, t0 + s(*at)) {
            fired.push((*at, kind));
        }
    }
    assert_eq!(fired, expected);
}

#[test]
fn a_blocked_episode_alerts_once() {
    // Blocked from t=0: the alert at t=60 s, never again while it stays blocked.
    check(
        &[
            (0, blocked(0)),
            (30, blocked(30_000)),
            (60, blocked(60_000)),
            (61, blocked(61_000)),
            (600, blocked(600_000)),
        ],
        &[(60, AlertKind::Blocked)],
    );
}

#[test]
fn a_new_episode_alerts_again() {
    // Answered at t=70 (work), blocked again at t=100: a second alert at t=160.
    let working = verdict(SessionState::Working, None, 0);
    check(
        &[
            (0, blocked(0)),
            (60, blocked(60_000)),
            (70, working),
            (100, blocked(0)),
            (159, blocked(59_000)),
            (160, blocked(60_000)),
        ],
        &[(60, AlertKind::Blocked), (160, AlertKind::Blocked)],
    );
}

#[test]
fn an_episode_is_dated_by_its_evidence() {
    // First looked at when the prompt had been on screen for 50 s: the alert is due 10 s
    // later, not 60 s later.
    check(
        &[
            (100, blocked(50_000)),
            (109, blocked(59_000)),
            (110, blocked(60_000)),
        ],
        &[(110, AlertKind::Blocked)],
    );
    let mut clock = clock();
    let t0 = Instant::now();
    assert!(clock.observe(&blocked(50_000), t0).is_empty());
    assert_eq!(clock.next_deadline(), Some(t0 + s(10)));
}

#[test]
fn an_unknown_verdict_neither_starts_nor_ends_an_episode() {
    let unknown = verdict(SessionState::Unknown, None, 0);
    check(
        &[
            (0, blocked(0)),
            (20, unknown.clone()),
            (60, blocked(60_000)),
            (61, unknown.clone()),
            (62, blocked(0)),
            (200, blocked(138_000)),
        ],
        &[(60, AlertKind::Blocked)],
    );
    check(&[(0, unknown.clone()), (100, unknown)], &[]);
}

#[test]
fn idle_episodes_alert_too_and_blocked_ends_them() {
    let idle = |age| verdict(SessionState::Idle, None, age);
    check(
        &[
            (0, idle(0)),
            (30, idle(30_000)),
            (40, blocked(0)),
            (50, idle(0)),
            (80, idle(30_000)),
        ],
        &[(30, AlertKind::Idle), (80, AlertKind::Idle)],
    );
}

#[test]
fn only_configured_alerts_fire() {
    let t0 = Instant::now();
    let mut clock = AlertClock::new(&AlertOptions {
        on_idle: Some("notify".to_owned()),
        idle_after: s(1),
        ..AlertOptions::default()
    });
    assert!(clock.observe(&blocked(0), t0).is_empty());
    assert!(clock.observe(&blocked(600_000), t0 + s(600)).is_empty());
    assert_eq!(clock.next_deadline(), None);
}
