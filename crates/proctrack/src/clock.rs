//! The clock seam: teardown waits and deadlines read time only through [`Clock`].

use std::time::{Duration, Instant};

/// Time for the teardown loop: now, and a way to wait.
///
/// Implementations: [`SystemClock`] and, behind the `mock` feature, `FakeClock` (time moves
/// only when someone sleeps) and the `mockall` mock `MockClock`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Instant;
    /// Blocks the calling thread for `duration`.
    fn sleep(&self, duration: Duration);
}

/// The real monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[expect(
        clippy::disallowed_methods,
        reason = "the one sanctioned reading of the real clock in this crate"
    )]
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// `now + period`, or `None` when that instant is beyond what the clock can represent (a
/// period of centuries, such as `--grace` near `u64::MAX` seconds): such a deadline never
/// comes, so a wait until it lasts until what it waits for happens. Every deadline in this
/// crate is made here, so no huge period can panic with an overflow.
pub(crate) fn deadline(now: Instant, period: Duration) -> Option<Instant> {
    now.checked_add(period)
}

/// Seconds since the Unix epoch, for the ledger's `# cleaned` header.
pub(crate) fn unix_now() -> u64 {
    #[expect(
        clippy::disallowed_methods,
        reason = "a wall-clock timestamp for a record, not a decision"
    )]
    let now = std::time::SystemTime::now();
    now.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
