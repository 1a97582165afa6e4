//! The clock seam, hyoka's one: teardown's waits and deadlines, and the harness's (its
//! phases, timelines and records), read time only through [`Clock`].

use std::time::{Duration, Instant, SystemTime};

/// Time: the monotonic now, the wall-clock now (for records), and a way to wait.
///
/// Implementations: [`SystemClock`] and, behind the `mock` feature, `FakeClock` (time moves
/// only when someone sleeps); `hyoka-eval`'s `FakeClock` follows tokio's paused clock.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Instant;
    /// The current wall-clock time, for records people read.
    fn wall(&self) -> SystemTime;
    /// Blocks the calling thread for `duration` (teardown's waits between scans).
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

    #[expect(
        clippy::disallowed_methods,
        reason = "the one sanctioned reading of the wall clock in this crate"
    )]
    fn wall(&self) -> SystemTime {
        SystemTime::now()
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
    SystemClock
        .wall()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
