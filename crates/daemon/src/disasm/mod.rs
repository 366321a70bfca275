//! `redline disasm`: print PM4 streams and AQL packets one packet per block.

mod aql;
pub mod input;
mod model;
mod render;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use pm4_encoding::{Decoder, Target};

use input::Format;
use model::Naming;

/// Disassemble a PM4 command stream (or 64-byte AQL packets with --aql).
///
/// Prints one block per packet: dword offset, header, opcode name and every field, with register
/// names from the family's map. Without --arch, a register is named only where gfx10.3, gfx11 and
/// gfx12 agree on it. Decoding stops at the first undecodable dword, which is reported with its
/// offset; the exit code is then 1.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// GPU target whose register map names the registers (gfx1030, gfx1100, gfx1151, gfx1200, gfx1201).
    #[arg(long, value_name = "gfxNNNN", value_parser = crate::parse_target)]
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

/// Runs the command; `Ok(1)` when the input stops decoding part-way.
///
/// # Errors
/// I/O errors (unreadable file, closed stdout).
pub fn run(args: &Args) -> Result<ExitCode> {
    let naming = args.arch.map_or(Naming::Consensus, |t| Naming::Family(t.family()));
    let bytes = match input::load(&args.file, args.format)? {
        Ok(bytes) => bytes,
        Err(input::InputError(msg)) => {
            eprintln!("redline: disasm: {}: {msg}", args.file.display());
            return Ok(ExitCode::from(1));
        }
    };
    if args.aql {
        return aql::run(&bytes, naming, args.json);
    }
    let (words, trailing) = input::dwords(&bytes);
    pm4(&words, trailing, naming, args.json)
}

fn pm4(words: &[u32], trailing: usize, naming: Naming, as_json: bool) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut text = String::new();
    for item in Decoder::new(words) {
        match item {
            Ok(decoded) => {
                let block = model::describe(&decoded, naming);
                if as_json {
                    serde_json::to_writer(&mut out, &render::json(&block))?;
                    out.write_all(b"\n")?;
                } else {
                    text.clear();
                    render::text(&block, &mut text);
                    out.write_all(text.as_bytes())?;
                }
            }
            Err(err) => {
                let offset = err.offset();
                if as_json {
                    let obj =
                        serde_json::json!({ "error": err.to_string(), "offset": offset, "byte_offset": offset * 4 });
                    serde_json::to_writer(&mut out, &obj)?;
                    out.write_all(b"\n")?;
                }
                out.flush()?;
                eprintln!("redline: disasm stopped (byte offset {:#x}): {err}", offset * 4);
                return Ok(ExitCode::from(1));
            }
        }
    }
    if trailing != 0 {
        let byte = words.len() * 4;
        let msg = format!("{trailing} trailing bytes do not form a dword");
        if as_json {
            serde_json::to_writer(
                &mut out,
                &serde_json::json!({ "error": msg, "offset": words.len(), "byte_offset": byte }),
            )?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
        eprintln!("redline: disasm stopped (byte offset {byte:#x}): {msg}");
        return Ok(ExitCode::from(1));
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
