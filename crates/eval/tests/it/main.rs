//! In-process tests of the harness policy, on fakes and a paused clock.
