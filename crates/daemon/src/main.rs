//! `redline`: the Redline command-line tool.
//!
//! Command-stream and code-object tools, model fetching and text generation on the soft device
//! (or a GPU). Business logic lives in the library crates; this binary parses arguments, reads
//! files and renders reports.

use clap::{Parser, Subcommand};
use daemon::{disasm, inspect, lower, sim, tape};
use std::process::ExitCode;

/// Retained replay of GPU decode steps on AMD GPUs.
#[derive(Debug, Parser)]
#[command(
    name = "redline",
    version,
    about = "Redline: retained replay of LLM decode steps on AMD GPUs (gfx10.3, gfx11, gfx12)",
    long_about = "Redline: retained replay of LLM decode steps on AMD GPUs (gfx10.3, gfx11, gfx12).\n\n\
        Tools for the command streams, code objects and tapes the replay route is built from, \
        model fetching (`pull`), text generation (`generate`), an OpenAI-compatible HTTP server (`serve`), \
        the route-proof A/B bench (`bench`) and the sealed fixtures (`golden`). \
        Exit codes, for every command: 0 success; 1 the input is invalid (any parse, validation or \
        model-file error, structural or semantic, or a file over its format's size limit; the message \
        names the file, the offset or path, and the value); 2 usage or I/O (a bad flag, a missing or \
        unreadable file, a path that is not a regular file).",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Bench(daemon::bench::Args),
    /// One bench arm in its own process (driven by `bench --process fresh`).
    #[command(hide = true)]
    BenchWorker(daemon::bench::WorkerArgs),
    Disasm(disasm::Args),
    Doctor(daemon::doctor::Args),
    Generate(daemon::generate::Args),
    Golden(daemon::golden::Args),
    Inspect(inspect::Args),
    Lower(lower::Args),
    Models(daemon::pull::ModelsArgs),
    Pull(daemon::pull::Args),
    Serve(daemon::serve::Args),
    /// Run IB bundles on the soft device (`sim run`).
    #[command(subcommand)]
    Sim(sim::Command),
    /// Work with stored tapes (`tape show`).
    #[command(subcommand)]
    Tape(tape::Command),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => daemon::bench::run(&args),
        Command::BenchWorker(args) => daemon::bench::worker(&args),
        Command::Golden(args) => daemon::golden::run(&args),
        Command::Disasm(args) => disasm::run(&args),
        Command::Doctor(args) => daemon::doctor::run(&args),
        Command::Generate(args) => daemon::generate::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Lower(args) => lower::run(&args),
        Command::Models(args) => daemon::pull::models(&args),
        Command::Pull(args) => daemon::pull::run(&args),
        Command::Serve(args) => daemon::serve::run(&args),
        Command::Tape(cmd) => tape::run(&cmd),
        Command::Sim(cmd) => sim::run(&cmd),
    };
    result.unwrap_or_else(|err| daemon::exit::report(&err))
}
