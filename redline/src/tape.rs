//! `redline tape show`: a stored tape's identity, launches, effects, boundaries and bindings
//! (the report is `tape_core::show`'s).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use infile::{EscapedPath, Limit, escape_lines};
use tape_core::show::{document, load, text};

/// The largest tape file `tape show` and `lower --tape` read, JSON or binary: 256 MiB. A real
/// decode step is far smaller (the built-in `tiny` model's tape is about 57 KB of JSON, some
/// 1.6 KB per launch, and a 135M-parameter model's ~500 launches below 1 MB); even a tape at the
/// launch limit of 65 536 such launches stays under half of it. A larger file is refused before
/// it is read (exit 1).
pub const TAPE_FILE_LIMIT: Limit = Limit::new("tape", infile::mib(256));

/// Work with stored tapes.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print a tape: identity, launches with their effects, the waits a single in-order queue
    /// needs, the dependency edges, and the dynamic bindings.
    ///
    /// FILE is a tape in the readable JSON form or the compact binary form (starts with
    /// `RLTAPE`), a regular file of at most 256 MiB; either form is decoded and validated (the
    /// checks recording and `redline lower` apply: geometry, LDS, kernarg, pointers, effects,
    /// external counts, bindings) before anything is printed. Errors name the place: the field
    /// path and byte offset in a binary tape, the line, column and JSON path in a JSON one, the
    /// launch and field for a value that breaks a rule.
    ///
    /// Exit codes: 0 printed; 1 the tape is invalid or larger than 256 MiB; 2 usage or I/O (a
    /// missing or unreadable file, a directory, a device such as /dev/zero, a FIFO).
    Show {
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// The tape file.
        file: PathBuf,
    },
}

/// Runs a `tape` subcommand; `Ok(1)` for a tape that does not load.
///
/// # Errors
/// I/O errors.
pub fn run(command: &Command) -> Result<ExitCode> {
    let Command::Show { json, file } = command;
    let bytes = read(file)?;
    let tape = match load(&bytes) {
        Ok(t) => t,
        Err(msg) => {
            eprintln!("redline: tape show: {}: {}", EscapedPath(file), escape_lines(&msg.to_string()));
            return Ok(ExitCode::from(1));
        }
    };
    let doc = match document(&tape) {
        Ok(d) => d,
        Err(msg) => {
            eprintln!("redline: tape show: {}: {}", EscapedPath(file), escape_lines(&msg.to_string()));
            return Ok(ExitCode::from(1));
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if *json {
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
    } else {
        // The tape's strings (kernel symbols, binding names) are its author's: their control
        // characters are spelled out. (The JSON form escapes them as JSON does.)
        out.write_all(escape_lines(&text(&doc)).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a tape file: a regular file of at most [`TAPE_FILE_LIMIT`] bytes, checked before the
/// first byte is read.
///
/// # Errors
/// [`infile::ReadError`] (in the chain, for the exit code): too large (exit 1), missing,
/// unreadable or not a regular file (exit 2).
pub fn read(file: &Path) -> Result<Vec<u8>> {
    Ok(infile::read(file, TAPE_FILE_LIMIT)?)
}
