//! Unit tests for `detector`.
