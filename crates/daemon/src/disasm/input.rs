//! Reading command streams from files: little-endian binary or hex text.

use std::fmt;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// How the input file encodes its dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Raw little-endian bytes (dwords for PM4, 64-byte packets for AQL).
    Bin,
    /// Whitespace- or comma-separated 32-bit words in hex, `0x` optional, `#` starts a comment.
    Hex,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Bin => "bin",
            Format::Hex => "hex",
        })
    }
}

/// Picks a format for a file when none was given: by extension (`.bin`, `.hex`/`.txt`), else
/// `hex` when the content is printable ASCII text and `bin` otherwise.
pub fn detect(path: &Path, bytes: &[u8]) -> Format {
    match path.extension().and_then(|e| e.to_str()) {
        Some("bin" | "ib" | "pm4" | "aql") => Format::Bin,
        Some("hex" | "txt") => Format::Hex,
        _ if bytes.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) => Format::Hex,
        _ => Format::Bin,
    }
}

/// Why input bytes could not be read as the requested format; reported as undecodable input.
#[derive(Debug)]
pub struct InputError(pub String);

/// Reads a file: `Err(outer)` for I/O errors, `Ok(Err(InputError))` for content that is not valid
/// in its format, else the bytes (hex words become little-endian bytes).
pub fn load(path: &Path, format: Option<Format>) -> Result<std::result::Result<Vec<u8>, InputError>> {
    let raw = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let format = format.unwrap_or_else(|| detect(path, &raw));
    Ok(match format {
        Format::Bin => Ok(raw),
        Format::Hex => match std::str::from_utf8(&raw) {
            Err(e) => Err(InputError(format!("not UTF-8 text at byte {} (use --format bin?)", e.valid_up_to()))),
            Ok(text) => parse_hex(text)
                .map(|words| words.iter().flat_map(|w| w.to_le_bytes()).collect())
                .map_err(|e| InputError(format!("invalid hex input: {e}"))),
        },
    })
}

/// Parses hex words: tokens split on whitespace and commas, optional `0x`/`0X`, at most 8 digits,
/// `#` to end of line is a comment.
pub fn parse_hex(text: &str) -> Result<Vec<u32>> {
    let mut words = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("");
        let mut column = 0;
        for token in code.split(|c: char| c.is_whitespace() || c == ',') {
            let at = column;
            column += token.len() + 1;
            if token.is_empty() {
                continue;
            }
            let digits = token.strip_prefix("0x").or_else(|| token.strip_prefix("0X")).unwrap_or(token);
            if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!("line {}, column {}: {token:?} is not a 32-bit hex word", line_no + 1, at + 1);
            }
            // PANIC: at most 8 hex digits were checked above, so the value fits in u32.
            words.push(u32::from_str_radix(digits, 16).expect("checked hex digits"));
        }
    }
    Ok(words)
}

/// Splits bytes into little-endian dwords and the count of trailing bytes that do not fill one.
pub fn dwords(bytes: &[u8]) -> (Vec<u32>, usize) {
    let (chunks, rest) = bytes.as_chunks::<4>();
    (chunks.iter().map(|c| u32::from_le_bytes(*c)).collect(), rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_tokens() {
        let words = parse_hex("# header\n0xC0017600 204, 0X0000000a\n\tdeadBEEF # tail\n").unwrap();
        assert_eq!(words, vec![0xC001_7600, 0x204, 0xA, 0xDEAD_BEEF]);
    }

    #[test]
    fn hex_errors_name_the_place() {
        let err = parse_hex("0x1 0x2\n0x3 0xZZ\n").unwrap_err().to_string();
        assert!(err.contains("line 2, column 5"), "{err}");
        assert!(parse_hex("123456789").is_err());
        assert!(parse_hex("0x").is_err());
    }

    #[test]
    fn dwords_need_whole_words() {
        assert_eq!(dwords(&[1, 0, 0, 0, 2, 0, 0, 0]), (vec![1, 2], 0));
        assert_eq!(dwords(&[1, 0, 0, 0, 9, 9, 9]), (vec![1], 3));
    }

    #[test]
    fn detection() {
        assert_eq!(detect(Path::new("a.bin"), b"text"), Format::Bin);
        assert_eq!(detect(Path::new("a.dat"), b"0xc0017600\n"), Format::Hex);
        assert_eq!(detect(Path::new("a.dat"), &[0, 0x76, 1, 0xC0]), Format::Bin);
    }
}
