//! `redline`: the Redline command-line tool.
fn main() {}
