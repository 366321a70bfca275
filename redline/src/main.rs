//! `redline`: the Redline command-line tool.
//!
//! Command-stream and code-object tools, model fetching, text generation, the server, the bench
//! and the sealed fixtures on the soft device (or a GPU). The work is the library crates'; this
//! binary parses arguments, selects the device and renders what they return.

use clap::{Parser, Subcommand};
use redline::{disasm, inspect, lower, sim, tape};
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
        model-file error, structural or semantic, a file over its format's size limit, a file that \
        changed while it was read, or a manifest naming a file by a path no file can have; the \
        message names the file, the offset or path, and the value); 2 usage or I/O (a bad flag, a \
        missing or unreadable file, a path that is not a regular file). Input-controlled text in \
        messages and reports (paths, kernel symbols, a model's strings) is printed with its control \
        characters escaped (\\x1b, \\0, ...).",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Bench(redline::bench::Args),
    /// One bench arm in its own process (driven by `bench --process fresh`).
    #[command(hide = true)]
    BenchWorker(redline::bench::WorkerArgs),
    Census(redline::census::Args),
    Disasm(disasm::Args),
    Doctor(redline::doctor::Args),
    Generate(redline::generate::Args),
    Golden(redline::golden::Args),
    Inspect(inspect::Args),
    Lower(lower::Args),
    Models(redline::pull::ModelsArgs),
    Profile(redline::profile::Args),
    Pull(redline::pull::Args),
    Serve(redline::serve::Args),
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
        Command::Bench(args) => redline::bench::run(&args),
        Command::BenchWorker(args) => redline::bench::worker(&args),
        Command::Golden(args) => redline::golden::run(&args),
        Command::Census(args) => redline::census::run(&args),
        Command::Disasm(args) => disasm::run(&args),
        Command::Doctor(args) => redline::doctor::run(&args),
        Command::Generate(args) => redline::generate::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Lower(args) => lower::run(&args),
        Command::Models(args) => redline::pull::models(&args),
        Command::Profile(args) => redline::profile::run(&args),
        Command::Pull(args) => redline::pull::run(&args),
        Command::Serve(args) => redline::serve::run(&args),
        Command::Tape(cmd) => tape::run(&cmd),
        Command::Sim(cmd) => sim::run(&cmd),
    };
    result.unwrap_or_else(|err| redline::exit::report(&err))
}
