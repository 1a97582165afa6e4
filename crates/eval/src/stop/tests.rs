//! Tests of stop requests: graceful first, forced after, the first reason kept.

use std::time::{Duration, Instant};

use super::*;

#[track_caller]
fn check(requests: &[StopReason], expected: StopLevel) {
    let (stopper, stop) = Stopper::new();
    for &reason in requests {
        stopper.request(reason);
    }
    assert_eq!(stop.level(), expected, "{requests:?}");
}

#[test]
fn the_first_request_is_graceful_and_the_second_forces_with_the_first_reason() {
    check(&[], StopLevel::Running);
    check(
        &[StopReason::Terminate],
        StopLevel::Graceful(StopReason::Terminate),
    );
    check(
        &[StopReason::Interrupt, StopReason::Hangup],
        StopLevel::Force(StopReason::Interrupt),
    );
    check(
        &[
            StopReason::Cancel,
            StopReason::Cancel,
            StopReason::Interrupt,
        ],
        StopLevel::Force(StopReason::Cancel),
    );
}

#[tokio::test]
async fn waiters_wake_on_the_level_they_wait_for() {
    let (stopper, stop) = Stopper::new();
    let (mut graceful, mut forced) = (stop.clone(), stop.clone());
    let requested = tokio::spawn(async move { graceful.requested().await });
    let force = tokio::spawn(async move { forced.forced().await });
    stopper.request(StopReason::Hangup);
    assert_eq!(requested.await.unwrap(), StopReason::Hangup);
    assert!(!force.is_finished());
    stopper.request(StopReason::Interrupt);
    force.await.unwrap();
    assert_eq!(stop.reason(), Some(StopReason::Hangup));
    assert_eq!(Stop::never().reason(), None);
}

#[track_caller]
fn signals(sent: &[(StopReason, Instant)], expected: StopLevel, taken: &[bool]) {
    let (stopper, stop) = Stopper::new();
    let got: Vec<bool> = sent.iter().map(|&(r, t)| stopper.signal(r, t).1).collect();
    assert_eq!(
        (stop.level(), got.as_slice()),
        (expected, taken),
        "{sent:?}"
    );
}

/// See: issue 27, "`timeout`'s single SIGTERM to hyoka and its process group was sometimes
/// taken as two". The same signal again within its window is the same delivery; after the
/// window, or another signal, it is a second request; repeats do not move the window.
#[test]
fn one_delivery_that_arrives_twice_is_one_request() {
    use StopReason::{Hangup, Interrupt, Terminate};
    #[expect(
        clippy::disallowed_methods,
        reason = "any instant will do as the start of the timeline"
    )]
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    // timeout(1): the process, then its group, microseconds apart.
    signals(
        &[(Terminate, at(0)), (Terminate, at(0))],
        StopLevel::Graceful(Terminate),
        &[true, false],
    );
    signals(
        &[(Terminate, at(0)), (Terminate, at(999))],
        StopLevel::Graceful(Terminate),
        &[true, false],
    );
    // Sent again after the window: the second request forces.
    signals(
        &[(Terminate, at(0)), (Terminate, at(1000))],
        StopLevel::Force(Terminate),
        &[true, true],
    );
    // Repeated every half second: the third is after the first's window.
    signals(
        &[
            (Terminate, at(0)),
            (Terminate, at(500)),
            (Terminate, at(1000)),
        ],
        StopLevel::Force(Terminate),
        &[true, false, true],
    );
    // Ctrl-C twice on purpose, and another signal at once, still escalate.
    signals(
        &[(Interrupt, at(0)), (Interrupt, at(150))],
        StopLevel::Force(Interrupt),
        &[true, true],
    );
    signals(
        &[(Interrupt, at(0)), (Interrupt, at(0))],
        StopLevel::Force(Interrupt),
        &[true, true],
    );
    signals(
        &[(Terminate, at(0)), (Hangup, at(0))],
        StopLevel::Force(Terminate),
        &[true, true],
    );
}
