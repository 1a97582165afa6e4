//! The respawn controller: cycle an interactive agent session only when it is really idle.
#![warn(
    clippy::disallowed_methods,
    reason = "decisions are sans-IO: no clock, no environment"
)]

mod config;
mod error;
mod event;
mod gate;
mod machine;
mod model;
mod terminal;

pub use crate::config::{CheckerConfig, DEFAULT_UPDATE_PROMPT, RespawnConfig};
pub use crate::error::RespawnError;
pub use crate::event::{
    AutoAcceptSkip, BlockReason, CheckOutcome, CheckSkip, Checker, Event, IdleVerdict, PlanVerdict,
    Stale, State, Step, TimerName,
};
pub use crate::gate::{FnGate, Gate, GateContext};
pub use crate::machine::{Action, Input, Keys, Machine, Status, TimerInfo};
pub use crate::model::{BasicModel, SessionModel};
pub use crate::terminal::{
    Exit, PtyTerminal, Signal, Size, SpawnOptions, Terminal, TmuxOptions, TmuxTerminal,
};
#[cfg(feature = "mock")]
pub use crate::terminal::{FakeHandle, FakeTerminal, MockTerminal, Written};
