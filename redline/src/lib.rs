//! The `redline` command: argument parsing, device selection and rendering. Every command's
//! work is a library's (`engine`, `daemon`, `bundle-export`, `model-files`, `disasm`, the
//! format crates); each module here parses a command's flags, reads its input files, calls the
//! library and prints what it returns. Device selection ([`select`]) is the one place in the
//! workspace that names the backends.

pub mod bench;
pub mod census;
pub mod disasm;
pub mod doctor;
pub mod exit;
pub mod generate;
pub mod golden;
pub mod inspect;
pub mod lower;
pub mod model_args;
pub mod profile;
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
