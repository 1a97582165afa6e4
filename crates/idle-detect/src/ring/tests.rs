//! Unit tests for `ring`.
