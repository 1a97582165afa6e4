//! Unit tests of safe removal live in the integration suite (`tests/it/remove.rs`).
