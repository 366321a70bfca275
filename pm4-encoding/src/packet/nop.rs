//! `NOP` (0x10): padding whose body the CP skips.
//!
//! Body (reference §4 "NOP"): COUNT = n announces n + 1 ignored body dwords, except COUNT = 0x3FFF,
//! which makes the NOP a header-only, one-dword packet (`0xFFFF1000`, the Linux ring `.nop` and
//! Mesa's `PKT3_NOP_PAD`). A payload of exactly 0x4000 dwords would need that COUNT, so it cannot
//! be encoded; Linux caps multi-dword NOPs at COUNT 0x3FFE for the same reason.

use crate::disasm::Visitor;
use crate::header::{HeaderFlags, NOP_HEADER_ONLY_COUNT, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, NO_FLAGS, PacketError};

mod field {
    /// COUNT of the header-only NOP.
    pub(super) const HEADER_ONLY_COUNT: u16 = super::NOP_HEADER_ONLY_COUNT;
}

/// Longest NOP payload in dwords: COUNT 0x3FFE. (COUNT 0x3FFF is the header-only marker.)
// Widening u16 -> usize in a const item.
pub const MAX_PAYLOAD_DWORDS: usize = field::HEADER_ONLY_COUNT as usize;

/// A validated `NOP` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Nop<'a> {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// The ignored body; empty for the header-only NOP. At most [`MAX_PAYLOAD_DWORDS`].
    pub payload: &'a [u32],
}

impl<'a> Nop<'a> {
    /// The one-dword, header-only NOP (`0xFFFF1000`).
    pub const HEADER_ONLY: Nop<'static> = Nop { flags: NO_FLAGS, payload: &[] };

    /// A NOP carrying `payload` (empty: the header-only NOP), with default header flags.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] when `payload` is longer than [`MAX_PAYLOAD_DWORDS`].
    pub const fn new(payload: &'a [u32]) -> Result<Self, PacketError> {
        if payload.len() > MAX_PAYLOAD_DWORDS {
            return Err(PacketError::BodyLength {
                opcode: Opcode::Nop,
                expected: MAX_PAYLOAD_DWORDS,
                found: payload.len(),
            });
        }
        Ok(Self { flags: NO_FLAGS, payload })
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] when `body` is not as long as `header` announces (0 dwords for
    /// COUNT 0x3FFF, COUNT + 1 otherwise).
    pub fn parse(header: Type3Header, body: &'a [u32]) -> Result<Self, PacketError> {
        let expected = header.body_dwords();
        if body.len() != expected {
            return Err(PacketError::BodyLength { opcode: Opcode::Nop, expected, found: body.len() });
        }
        Ok(Self { flags: header.flags(), payload: body })
    }

    /// Reports the fields.
    pub fn visit(&self, v: &mut dyn Visitor) {
        v.payload("PAYLOAD", self.payload);
    }

    /// The header word.
    ///
    /// PANIC: asserts that the payload fits (a hand-built Repr with a longer payload is a
    /// programmer error).
    #[inline]
    const fn header(&self) -> u32 {
        assert!(self.payload.len() <= MAX_PAYLOAD_DWORDS, "NOP payload longer than 0x3FFF dwords");
        let count = if self.payload.is_empty() {
            field::HEADER_ONLY_COUNT
        } else {
            // CAST: 1 <= len <= 0x3FFF was checked above.
            #[allow(clippy::cast_possible_truncation)]
            let count = (self.payload.len() - 1) as u16;
            count
        };
        Type3Header {
            opcode: Opcode::Nop,
            count,
            shader_type: self.flags.shader_type,
            predicate: self.flags.predicate,
            reset_filter_cam: self.flags.reset_filter_cam,
        }
        .encode()
    }
}

impl Emit for Nop<'_> {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        1 + self.payload.len()
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        assert_eq!(out.len(), self.buffer_len(), "NOP output slice must match the packet length");
        out[0] = self.header();
        super::copy_dwords(&mut out[1..], self.payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    fn parse_words(words: &[u32]) -> Result<Nop<'_>, PacketError> {
        Nop::parse(Type3Header::decode(words[0]).unwrap(), &words[1..])
    }

    // Reference §4 "Header": one-dword NOP = 0xFFFF1000 (NOP with count 0x3FFF).
    #[test]
    fn header_only_literal() {
        let mut out = [0; 1];
        Nop::new(&[]).unwrap().emit(&mut out);
        assert_eq!(out, [0xFFFF_1000]);
        Nop::HEADER_ONLY.emit(&mut out);
        assert_eq!(out, [0xFFFF_1000]);
        let nop = parse_words(&[0xFFFF_1000]).unwrap();
        assert!(nop.payload.is_empty());
        assert_eq!(nop.flags, HeaderFlags::default());
    }

    // COUNT = n carries n + 1 payload dwords: two dwords are COUNT 1 = 0xC0011000.
    #[test]
    fn payload_literal() {
        const WORDS: [u32; 3] = [0xC001_1000, 0xDEAD_BEEF, 0x0000_0000];
        let mut out = [0; 3];
        Nop::new(&WORDS[1..]).unwrap().emit(&mut out);
        assert_eq!(out, WORDS);
        assert_eq!(parse_words(&WORDS).unwrap().payload, &[0xDEAD_BEEF, 0]);
        // One payload dword: COUNT 0, SHADER_TYPE and PREDICATE kept.
        let nop = parse_words(&[0xC000_1003, 7]).unwrap();
        assert_eq!(nop.flags, HeaderFlags { predicate: true, ..HeaderFlags::COMPUTE });
        nop.emit(&mut out[..2]);
        assert_eq!(out[..2], [0xC000_1003, 7]);
    }

    // The longest NOP is COUNT 0x3FFE (0xFFFE1000) with 0x3FFF payload dwords; 0x4000 would need
    // the header-only COUNT.
    #[test]
    fn longest_and_too_long() {
        let payload = vec![0x1234_5678; 0x3FFF];
        let mut out = vec![0; 0x4000];
        Nop::new(&payload).unwrap().emit(&mut out);
        assert_eq!(out[0], 0xFFFE_1000);
        let too_long = vec![0; 0x4000];
        assert_eq!(
            Nop::new(&too_long),
            Err(PacketError::BodyLength { opcode: Opcode::Nop, expected: 0x3FFF, found: 0x4000 })
        );
    }

    #[test]
    fn body_must_match_count() {
        assert_eq!(
            parse_words(&[0xFFFF_1000, 1]),
            Err(PacketError::BodyLength { opcode: Opcode::Nop, expected: 0, found: 1 })
        );
        assert_eq!(
            parse_words(&[0xC002_1000, 1]),
            Err(PacketError::BodyLength { opcode: Opcode::Nop, expected: 3, found: 1 })
        );
    }
}
