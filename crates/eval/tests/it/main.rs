//! In-process tests of the harness policy, on `FakeHost` (scripted programs, in-memory
//! workspaces, `hyoka-proctrack`'s teardown against its `FakeSystem`) and tokio's paused
//! clock: pass/fail precedence, phase ordering, limits, timeouts and interruption, the
//! worker pool. Real processes are covered by `hyoka-cli`'s integration tests.
#![allow(
    clippy::too_many_lines,
    clippy::missing_panics_doc,
    reason = "tests favour plain, linear scripts"
)]

mod events;
mod ids;
mod limits;
mod phases;
mod runs;
mod sandbox;
mod stops;
mod support;
mod trials;
