//! The machine's own state beside its timers and checks: the input being delivered
//! ([`Delivery`], its [`Purpose`] and [`Phase`]) and the sends waiting for the session
//! ([`SendQueue`]). `delivery.rs` and `send.rs` hold what the machine does with them.

use std::collections::VecDeque;
use std::time::Instant;

use crate::event::Step;

/// What a delivery is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    /// A step of a cycle, or the plan auto-accept's Enter.
    Step(Step),
    /// A send request.
    Send(u64),
}

impl Purpose {
    pub(super) fn step(self) -> Step {
        match self {
            Self::Step(step) => step,
            Self::Send(_) => Step::Send,
        }
    }
}

/// Where a delivery is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The text is typed; Enter waits for it to show in the box (or for `text_wait`).
    Typed {
        /// When the text was typed.
        at: Instant,
    },
    /// Enter is pressed; a new turn must start within `verify_timeout`.
    Submitted {
        /// Enter retries so far.
        retries: u32,
    },
}

/// The input being delivered.
#[derive(Debug, Clone)]
pub(super) struct Delivery {
    pub(super) purpose: Purpose,
    /// The text typed (empty for a bare Enter).
    pub(super) text: String,
    pub(super) phase: Phase,
    /// The text was seen in the input box (the verdict said blocked(draft) while it was
    /// there), so its leaving the box is evidence.
    pub(super) saw_in_box: bool,
    /// Retries allowed (none for a bare Enter on a menu: a second one could confirm
    /// something else).
    pub(super) max_retries: u32,
    /// Since when Enter after the typed text waits for a verdict that allows it.
    pub(super) held_since: Option<Instant>,
}

/// Sends waiting for the session, oldest first.
#[derive(Debug, Default)]
pub(super) struct SendQueue {
    pub(super) waiting: VecDeque<(u64, String)>,
}
