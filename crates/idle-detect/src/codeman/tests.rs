//! Unit tests for `codeman`.
