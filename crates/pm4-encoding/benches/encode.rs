//! Encoding throughput (filled in with the packet types).
fn main() {}
