//! Unit tests for `patterns`.
