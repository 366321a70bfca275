//! A command stream decoded a window at a time: the dwords of a [`Words`] reader go through
//! pm4-encoding's decoder (or, for AQL, the 64-byte packet decoder) [`WINDOW`] dwords at a time,
//! and each packet is written as it is decoded, so a stream of any length takes bounded memory.

use std::io::Write;

use pm4_encoding::{DecodeError, Decoded, Decoder};

use crate::input::Words;
use crate::model::{self, Naming};
use crate::render;
use crate::window::{Ended, Form, WINDOW, WriteError, fill};

/// Disassembles the whole of `words` into `out`: PM4 dwords, or 64-byte AQL packets with `aql`.
///
/// # Errors
/// [`WriteError`] when reading the input or writing `out` fails; input that stops decoding is
/// not an error but [`Ended::Stopped`], after the packets before it.
pub fn disassemble(
    words: &mut Words,
    naming: Naming,
    form: Form,
    aql: bool,
    out: &mut impl Write,
) -> Result<Ended, WriteError> {
    let as_json = form == Form::Json;
    if aql { crate::aql::run(words, naming, as_json, out) } else { pm4(words, naming, as_json, out) }
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

fn pm4(words: &mut Words, naming: Naming, as_json: bool, out: &mut impl Write) -> Result<Ended, WriteError> {
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
                    let decoded = Decoded { offset: decoded.offset + base, ..decoded };
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
