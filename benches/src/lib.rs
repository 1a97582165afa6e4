//! Shared helpers for hyoka's criterion benchmarks.
//!
//! - [`reference_stream`]: the 50 MiB Claude-Code-like terminal stream of
//!   `shared/bench/gen-stream.js`, ported to Rust (same bytes, same SHA-256), on which idle
//!   detection is compared with Codeman's figures.

mod reference_stream;

pub use crate::reference_stream::{
    REFERENCE_BYTES, REFERENCE_SEED, REFERENCE_SHA256, generate_stream, reference_stream,
};
