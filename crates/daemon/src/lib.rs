//! The `redline` command's library: argument types, input readers and report rendering. Business
//! logic lives in the workspace's library crates; this crate only turns it into a tool.

pub mod disasm;
