//! Shared helpers for hyoka's criterion benchmarks.
