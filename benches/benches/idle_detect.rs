//! Idle-detection benchmarks (filled in below).
fn main() {}
