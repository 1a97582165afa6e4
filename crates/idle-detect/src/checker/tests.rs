//! Unit tests for `checker`.
