//! `redline disasm`: print PM4 streams and AQL packets one packet per block (the `disasm` crate).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use ::disasm::input::Words;
use ::disasm::{Ended, Form, Naming};
use anyhow::Result;
use infile::EscapedPath;
use pm4_encoding::Target;

/// Disassemble a PM4 command stream (or 64-byte AQL packets with --aql).
///
/// Prints one block per packet: dword offset, header, opcode name and every field, with register
/// names from the family's map. Without --arch, a register is named only where gfx10.3, gfx11 and
/// gfx12 agree on it. Decoding stops at the first undecodable dword, which is reported with its
/// offset; the exit code is then 1. The file is read and decoded a window at a time, so any
/// stream up to the 4 GiB limit is disassembled in bounded memory; a larger file exits with 1, a
/// path that is not a regular file with 2.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// GPU target whose register map names the registers.
    #[arg(long, value_name = "gfxNNNN", value_parser = crate::target_parser())]
    arch: Option<Target>,
    /// Input encoding; default: by extension (.bin/.ib/.pm4/.aql binary, .hex/.txt hex), else by content.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Treat the input as 64-byte AQL packets instead of a PM4 dword stream.
    #[arg(long)]
    aql: bool,
    /// Print one JSON object per packet (JSON Lines) instead of text blocks.
    #[arg(long)]
    json: bool,
    /// The file to disassemble.
    file: PathBuf,
}

/// How the input file encodes its dwords (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Raw little-endian bytes (dwords for PM4, 64-byte packets for AQL).
    Bin,
    /// Whitespace- or comma-separated 32-bit words in hex, `0x` optional, `#` starts a comment.
    Hex,
}

impl From<Format> for ::disasm::input::Format {
    fn from(format: Format) -> Self {
        match format {
            Format::Bin => Self::Bin,
            Format::Hex => Self::Hex,
        }
    }
}

/// Runs the command; `Ok(1)` when the input stops decoding part-way.
///
/// # Errors
/// I/O errors (unreadable file, not a regular file, closed stdout); a file over
/// [`::disasm::input::STREAM_LIMIT`].
pub fn run(args: &Args) -> Result<ExitCode> {
    let naming = args.arch.map_or(Naming::Consensus, |t| Naming::Family(t.family()));
    let mut words = Words::open(&args.file, args.format.map(Into::into))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let form = if args.json { Form::Json } else { Form::Text };
    let ended = ::disasm::disassemble(&mut words, naming, form, args.aql, &mut out)?;
    out.flush()?;
    Ok(match ended {
        Ended::Whole => ExitCode::SUCCESS,
        Ended::Stopped(message) => {
            eprintln!("redline: disasm stopped ({}): {}", EscapedPath(&args.file), infile::escape(&message));
            ExitCode::from(1)
        }
    })
}
