//! GPT-2's byte-level alphabet: every byte is written as one printable Unicode character, so that
//! BPE vocabularies can be stored as strings. Printable Latin-1 bytes stand for themselves; the
//! other 68 bytes (controls, space, 0x7F-0xA0, 0xAD) take the code points from U+0100 upwards in
//! byte order.

/// Whether `byte` is one of GPT-2's printable bytes that map to the code point of the same value.
fn is_printable(byte: u8) -> bool {
    matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The byte-to-character table and its inverse.
#[derive(Debug, Clone)]
pub(crate) struct ByteLevel {
    to_char: [char; 256],
    /// Inverse of `to_char`, indexed by code point (all alphabet code points are below 0x144).
    to_byte: [Option<u8>; 0x144],
}

impl ByteLevel {
    pub(crate) fn new() -> Self {
        let mut to_char = ['\0'; 256];
        let mut to_byte = [None; 0x144];
        let mut next_shifted = 0x100u32;
        for byte in 0..=u8::MAX {
            let code = if is_printable(byte) {
                u32::from(byte)
            } else {
                let code = next_shifted;
                next_shifted += 1;
                code
            };
            // PANIC: codes are at most 0x100 + 68, all valid scalar values.
            to_char[usize::from(byte)] = char::from_u32(code).expect("byte-level code point is a scalar value");
            // PANIC: code < 0x100 + 68 = 0x144, the table's length.
            to_byte[usize::try_from(code).expect("code point fits usize")] = Some(byte);
        }
        Self { to_char, to_byte }
    }

    /// The character that stands for `byte`.
    pub(crate) fn char_of(&self, byte: u8) -> char {
        self.to_char[usize::from(byte)]
    }

    /// The byte a character stands for, or `None` if it is not in the alphabet.
    pub(crate) fn byte_of(&self, c: char) -> Option<u8> {
        let code = usize::try_from(u32::from(c)).ok()?;
        self.to_byte.get(code).copied().flatten()
    }

    /// Decodes a byte-level token string to its bytes; `None` if a character is outside the alphabet.
    pub(crate) fn decode(&self, token: &str) -> Option<Vec<u8>> {
        token.chars().map(|c| self.byte_of(c)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_symbols() {
        let bl = ByteLevel::new();
        // Values from GPT-2's published vocabulary: space is "Ġ", newline "Ċ", tab "ĉ".
        assert_eq!(bl.char_of(b' '), 'Ġ');
        assert_eq!(bl.char_of(b'\n'), 'Ċ');
        assert_eq!(bl.char_of(b'\t'), 'ĉ');
        assert_eq!(bl.char_of(b'A'), 'A');
        assert_eq!(bl.char_of(0x00), '\u{100}');
        assert_eq!(bl.char_of(0xAD), '\u{143}');
    }

    #[test]
    fn bijective() {
        let bl = ByteLevel::new();
        let mut seen = std::collections::HashSet::new();
        for byte in 0..=u8::MAX {
            let c = bl.char_of(byte);
            assert!(seen.insert(c));
            assert_eq!(bl.byte_of(c), Some(byte));
        }
        assert_eq!(bl.byte_of(' '), None);
        assert_eq!(bl.byte_of('\u{144}'), None);
        assert_eq!(bl.byte_of('中'), None);
    }
}
