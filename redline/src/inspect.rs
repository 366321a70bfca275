//! `redline inspect`: what a code object says about its kernels, and whether each can be replayed
//! (the report is `kernarg_abi::inspect`'s).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use kernarg_abi::inspect::{document, text};
use kernarg_abi::read_any;
use pm4_encoding::Target;

/// The largest code object or offload bundle `inspect` reads: 256 MiB. The code objects of a
/// model's kernels are kilobytes to a few megabytes; a bundle of every target stays far below
/// this.
pub const CODE_OBJECT_MAX_BYTES: u64 = infile::mib(256);

/// Inspect an AMDGPU code object (or clang offload bundle).
///
/// Prints the target, the code-object version and, for each kernel, its metadata, kernel
/// descriptor fields, user-SGPR layout, kernarg layout and retained-replay verdict.
///
/// FILE must be a regular file of at most 256 MiB (the code-object size limit). Exit status: 0
/// when it reads; 1 when it is not a valid code object (the message names the field, its value
/// and its byte offset) or is over the limit; 2 when it cannot be read or is not a regular file
/// (missing, a directory, a device such as /dev/zero, a FIFO).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Target to pick from an offload bundle, or to require of a code object.
    #[arg(long, value_name = "gfxNNNN", value_parser = crate::target_parser())]
    target: Option<Target>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// The code object or bundle: a regular file of at most 256 MiB.
    file: PathBuf,
}

/// Runs the command; `Ok(1)` when the file is not a valid code object for the request.
///
/// # Errors
/// [`infile::ReadError`] when the file cannot be read, is not a regular file or is over
/// [`CODE_OBJECT_MAX_BYTES`]; I/O errors writing the report.
pub fn run(args: &Args) -> Result<ExitCode> {
    let bytes = infile::read(&args.file, infile::Limit::new("code object", CODE_OBJECT_MAX_BYTES))?;
    let co = match read_any(&bytes, args.target) {
        Ok(co) => co,
        Err(err) => {
            eprintln!(
                "redline: inspect: {}: {}",
                infile::EscapedPath(&args.file),
                infile::escape_lines(&err.to_string())
            );
            return Ok(ExitCode::from(1));
        }
    };
    let doc = document(&co);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
    } else {
        // Kernel names and symbols are the code object's: their control characters are spelled
        // out. (The JSON form escapes them as JSON does.)
        out.write_all(infile::escape_lines(&text(&doc)).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}
