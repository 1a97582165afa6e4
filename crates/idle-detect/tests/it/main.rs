//! Integration tests of `hyoka-idle-detect`, one binary with a module per area.

mod support;

mod accuracy;
mod contract;
mod generated;
mod hostile;
#[cfg(feature = "mock")]
mod mocks;
mod mutations;
mod properties;
mod real;
mod screens;
