//! Unit tests for `profile`.
