//! `redline disasm`: print PM4 streams and AQL packets one packet per block.

mod aql;
pub mod input;
mod model;
mod render;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use pm4_encoding::{DecodeError, Decoder, Target};

use input::Format;
use model::Naming;

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

/// Dwords decoded at a time: more than the longest PM4 packet (a 14-bit count: 16,386 dwords
/// with the header), so a packet that runs past the window's end runs past the stream's end once
/// the window is full.
const WINDOW: usize = 1 << 16;

/// Runs the command; `Ok(1)` when the input stops decoding part-way.
///
/// # Errors
/// I/O errors (unreadable file, not a regular file, closed stdout); a file over
/// [`input::STREAM_LIMIT`].
pub fn run(args: &Args) -> Result<ExitCode> {
    let naming = args.arch.map_or(Naming::Consensus, |t| Naming::Family(t.family()));
    let mut words = input::Words::open(&args.file, args.format)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let ended = if args.aql {
        aql::run(&mut words, naming, args.json, &mut out)?
    } else {
        pm4(&mut words, naming, args.json, &mut out)?
    };
    out.flush()?;
    Ok(match ended {
        Ended::Whole => ExitCode::SUCCESS,
        Ended::Stopped(message) => {
            eprintln!("redline: disasm stopped ({}): {message}", args.file.display());
            ExitCode::from(1)
        }
    })
}

/// How a stream ended.
#[derive(Debug)]
enum Ended {
    /// Every byte decoded.
    Whole,
    /// Decoding stopped; the message says where and why.
    Stopped(String),
}

/// Fills `window` to [`WINDOW`] dwords or the end of the stream; returns whether the stream
/// ended, and the input error that ended it, if one did.
fn fill(words: &mut input::Words, window: &mut Vec<u32>) -> Result<(bool, Option<String>)> {
    while window.len() < WINDOW {
        match words.read(window, WINDOW - window.len()) {
            Ok(0) => return Ok((true, None)),
            Ok(_) => {}
            Err(input::StreamError::Input(message)) => return Ok((true, Some(message))),
            Err(input::StreamError::Io(e)) => return Err(e.into()),
        }
    }
    Ok((false, None))
}

/// `error` with its offset moved by `base` dwords (the window's place in the stream).
fn shifted(error: DecodeError, base: usize) -> DecodeError {
    match error {
        DecodeError::Header { offset, word, source } => DecodeError::Header { offset: offset + base, word, source },
        DecodeError::CountPastEnd { offset, word, body_dwords, available } => {
            DecodeError::CountPastEnd { offset: offset + base, word, body_dwords, available }
        }
        DecodeError::Type1 { offset, word } => DecodeError::Type1 { offset: offset + base, word },
        DecodeError::Packet { offset, opcode, source } => DecodeError::Packet { offset: offset + base, opcode, source },
    }
}

fn pm4(words: &mut input::Words, naming: Naming, as_json: bool, out: &mut impl Write) -> Result<Ended> {
    let mut text = String::new();
    let mut window = Vec::with_capacity(WINDOW);
    let mut base = 0;
    loop {
        let (ended, input_error) = fill(words, &mut window)?;
        let mut consumed = 0;
        let mut stop = None;
        for item in Decoder::new(&window) {
            match item {
                Ok(decoded) => {
                    consumed = decoded.offset + decoded.words.len();
                    let decoded = pm4_encoding::Decoded { offset: decoded.offset + base, ..decoded };
                    let block = model::describe(&decoded, naming);
                    if as_json {
                        serde_json::to_writer(&mut *out, &render::json(&block))?;
                        out.write_all(b"\n")?;
                    } else {
                        text.clear();
                        render::text(&block, &mut text);
                        out.write_all(text.as_bytes())?;
                    }
                }
                // The rest of this packet is in the next window.
                Err(DecodeError::CountPastEnd { offset, .. }) if !ended && offset > 0 => break,
                Err(err) => {
                    stop = Some(shifted(err, base));
                    break;
                }
            }
        }
        if let Some(message) = input_error {
            // The text stopped being hex: that, not a packet it cut short, is the fault.
            return Ok(Ended::Stopped(message));
        }
        if let Some(err) = stop {
            let offset = err.offset();
            if as_json {
                let obj = serde_json::json!({ "error": err.to_string(), "offset": offset, "byte_offset": offset * 4 });
                serde_json::to_writer(&mut *out, &obj)?;
                out.write_all(b"\n")?;
            }
            return Ok(Ended::Stopped(format!("byte offset {:#x}: {err}", offset * 4)));
        }
        window.drain(..consumed);
        base += consumed;
        if ended {
            break;
        }
    }
    let trailing = words.trailing_bytes();
    if trailing != 0 {
        let byte = base * 4;
        let msg = format!("{trailing} trailing bytes do not form a dword");
        if as_json {
            serde_json::to_writer(
                &mut *out,
                &serde_json::json!({ "error": msg, "offset": base, "byte_offset": byte }),
            )?;
            out.write_all(b"\n")?;
        }
        return Ok(Ended::Stopped(format!("byte offset {byte:#x}: {msg}")));
    }
    Ok(Ended::Whole)
}
