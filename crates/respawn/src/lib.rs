//! The respawn controller: cycle an interactive agent session only when it is really idle.
#![warn(
    clippy::disallowed_methods,
    reason = "decisions are sans-IO: no clock, no environment"
)]

mod checks;
mod config;
mod driver;
mod error;
mod event;
mod gate;
mod hook;
mod machine;
mod model;
mod terminal;

pub use crate::checks::Checks;
#[cfg(feature = "mock")]
pub use crate::checks::MockChecks;
pub use crate::config::{CheckerConfig, DEFAULT_UPDATE_PROMPT, RespawnConfig};
pub use crate::driver::{
    Driver, DriverInputs, DriverOptions, NoObserver, Observer, Outcome, Report,
};
pub use crate::error::RespawnError;
pub use crate::event::{
    AutoAcceptSkip, BlockReason, CheckOutcome, CheckSkip, Checker, Event, IdleVerdict, PlanVerdict,
    Stale, State, Step, TimerName,
};
pub use crate::gate::{FnGate, Gate, GateContext};
pub use crate::hook::{HOOK_EVENT_NAMES, HookListener, HookMessage, is_hook_event_name, send_hook};
pub use crate::machine::{Action, Input, Keys, Machine, Status, TimerInfo};
pub use crate::model::{BasicModel, SessionModel};
pub use crate::terminal::{
    Exit, PtyTerminal, Signal, Size, SpawnOptions, Terminal, TmuxOptions, TmuxTerminal,
};
#[cfg(feature = "mock")]
pub use crate::terminal::{FakeHandle, FakeTerminal, MockTerminal, Written};
