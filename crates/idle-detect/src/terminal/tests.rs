//! Unit tests for `terminal`.
