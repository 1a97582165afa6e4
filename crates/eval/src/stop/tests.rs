//! Tests of stop requests: graceful first, forced after, the first reason kept.

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
