//! The `redline` command's library: argument types, input readers and report rendering. Business
//! logic lives in the workspace's library crates; this crate only turns it into a tool.

pub mod admit;
pub mod bench;
pub mod bundle_export;
pub mod disasm;
pub mod doctor;
pub mod exit;
pub mod generate;
pub mod golden;
pub mod inspect;
pub mod lower;
pub mod model_args;
pub mod models;
pub mod pull;
pub mod select;
pub mod serve;
pub mod sim;
pub mod tape;
pub mod zipread;

/// Parses a `--target`/`--arch` value into a supported target.
///
/// # Errors
/// A message listing the supported targets.
pub fn parse_target(s: &str) -> Result<pm4_encoding::Target, String> {
    s.parse::<pm4_encoding::Target>().map_err(|e| format!("{s:?}: {e}"))
}
