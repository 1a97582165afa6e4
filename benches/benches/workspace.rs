//! Workspace benchmarks.
fn main() {}
