//! Unit tests for `screen`.
