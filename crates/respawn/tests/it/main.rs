//! Integration tests of `hyoka-respawn`.
//!
//! - `s5a_*`, `s5b`, `s5c`, `s5d`: the scenarios of `docs/respawn.md` §5 against the
//!   sans-IO machine on exact virtual time, each test named after its scenario id.
//! - `checks`: the AI checks through `hyoka-idle-detect`'s command checker.
//! - `safety`: hyoka's rules beyond Codeman.
//! - `supervision`: verified delivery, sends, drafts, people attached, cycles per agent.
//! - `support`: the virtual-time harness and scripted checkers.

mod checks;
mod command_checker;
mod s5a_checks;
mod s5a_robustness;
mod s5a_states;
mod s5b;
mod s5c;
mod s5d;
mod safety;
mod supervision;
mod support;
