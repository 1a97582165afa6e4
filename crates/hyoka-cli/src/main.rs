//! The `hyoka` binary.
fn main() {}
