//! Unit tests for `replay`.
