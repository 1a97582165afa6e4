//! Runs the harness really recorded (on `hyoka-eval`'s fake host and tokio's paused clock),
//! read back: merged from shards, compared, summarised and drawn on the page.
#![allow(
    clippy::too_many_lines,
    clippy::missing_panics_doc,
    reason = "tests favour plain, linear scripts"
)]

mod figures;
mod html;
mod merge;
mod support;
