//! The `redline` command's library: argument types, input readers and report rendering. Business
//! logic lives in the workspace's library crates; this crate only turns it into a tool.

pub mod bench;
pub mod disasm;
pub mod doctor;
pub mod exit;
pub mod generate;
pub mod golden;
pub mod inspect;
pub mod lower;
pub mod model_args;
pub mod pull;
pub mod select;
pub mod serve;
pub mod sim;
pub mod tape;

/// The `--target`/`--arch` value parser: the target table's names are clap's possible values, so
/// `--help` and the refusal of any other value list them.
#[must_use]
pub fn target_parser() -> impl clap::builder::TypedValueParser<Value = pm4_encoding::Target> {
    use clap::builder::TypedValueParser;
    let names = pm4_encoding::Target::ALL.map(pm4_encoding::Target::name);
    // PANIC: every possible value is a name of the target table, which parses back (tested there).
    clap::builder::PossibleValuesParser::new(names).map(|s| s.parse::<pm4_encoding::Target>().expect("a table name"))
}
