//! Integration tests of `hyoka-workspace`, with real directories.

mod concurrent;
mod containment;
mod lifecycle;
mod removal;
mod starter;
mod stub;
mod support;
mod usage;
