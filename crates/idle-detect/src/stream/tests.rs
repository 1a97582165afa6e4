//! Unit tests for `stream`.
