//! Integration tests of `hyoka-idle-detect`, one binary with a module per area.

mod support;

mod accuracy;
