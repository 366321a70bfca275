//! `DISPATCH_INDIRECT` (0x16): launch a grid whose dimensions the CP reads from memory.
//!
//! Body (reference §4 "DISPATCH_INDIRECT"): dw0 `DATA_OFFSET` (bytes added to the base set by
//! `SET_BASE` index 1, where three dwords `dim_x, dim_y, dim_z` sit), dw1 `DISPATCH_INITIATOR`.

use crate::disasm::Visitor;
use crate::family::Family;
use crate::header::{HeaderFlags, Type3Header};
use crate::opcode::Opcode;
use crate::packet::dispatch_direct::DispatchInitiator;
use crate::packet::{Emit, PacketError};

mod field {
    /// Body dwords.
    pub(super) const BODY_DWORDS: usize = 2;
    pub(super) const DATA_OFFSET: usize = 0;
    pub(super) const DISPATCH_INITIATOR: usize = 1;
}

/// A validated `DISPATCH_INDIRECT` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DispatchIndirect {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// Byte offset of the dimensions from the `SET_BASE` (index 1) base.
    pub data_offset: u32,
    /// The dispatch initiator.
    pub initiator: DispatchInitiator,
}

impl DispatchIndirect {
    /// Total dwords of the packet, header included.
    pub const BUFFER_LEN: usize = 1 + field::BODY_DWORDS;

    /// An indirect dispatch reading its dimensions at `data_offset` bytes past the dispatch base,
    /// with `SHADER_TYPE` = compute as Mesa sends it. Every value is encodable.
    #[must_use]
    pub const fn new(data_offset: u32, initiator: DispatchInitiator) -> Self {
        Self { flags: HeaderFlags::COMPUTE, data_offset, initiator }
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] unless the body is 2 dwords.
    pub fn parse(header: Type3Header, body: &[u32]) -> Result<Self, PacketError> {
        let &[data_offset, initiator] = body else {
            return Err(PacketError::BodyLength {
                opcode: Opcode::DispatchIndirect,
                expected: field::BODY_DWORDS,
                found: body.len(),
            });
        };
        Ok(Self { flags: header.flags(), data_offset, initiator: DispatchInitiator::from_raw(initiator) })
    }

    /// Reports the fields; the initiator's bits are named from `family`'s map.
    pub fn visit(&self, family: Family, v: &mut dyn Visitor) {
        v.field("DATA_OFFSET", u64::from(self.data_offset));
        v.word("DISPATCH_INITIATOR", self.initiator.raw(), DispatchInitiator::fields(family));
    }
}

impl Emit for DispatchIndirect {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        Self::BUFFER_LEN
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        let out: &mut [u32; Self::BUFFER_LEN] = out.try_into().expect("DISPATCH_INDIRECT needs exactly 3 dwords");
        out[0] = Type3Header::with_flags(Opcode::DispatchIndirect, field::BODY_DWORDS, self.flags).encode();
        out[1 + field::DATA_OFFSET] = self.data_offset;
        out[1 + field::DISPATCH_INITIATOR] = self.initiator.raw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_util::{Item, Recorder};

    // Header: TYPE 3, COUNT 1, opcode 0x16, SHADER_TYPE 1 = 0xC0011602; wave64 initiator 0x0045.
    const WORDS: [u32; 3] = [0xC001_1602, 0x0000_0018, 0x0000_0045];

    #[test]
    fn literal_words() {
        let p = DispatchIndirect::new(0x18, DispatchInitiator::typical(false));
        let mut out = [0; 3];
        p.emit(&mut out);
        assert_eq!(out, WORDS);
        let parsed = DispatchIndirect::parse(Type3Header::decode(WORDS[0]).unwrap(), &WORDS[1..]).unwrap();
        assert_eq!(parsed, p);
        assert_eq!(parsed.data_offset, 0x18);
        assert_eq!(parsed.initiator.cs_w32_en(), 0);
    }

    #[test]
    fn rejects_wrong_length_and_visits() {
        let header = Type3Header::decode(WORDS[0]).unwrap();
        assert_eq!(
            DispatchIndirect::parse(header, &[0x18]),
            Err(PacketError::BodyLength { opcode: Opcode::DispatchIndirect, expected: 2, found: 1 })
        );
        let mut rec = Recorder::default();
        DispatchIndirect::new(0x18, DispatchInitiator::typical(false)).visit(Family::Gfx12, &mut rec);
        assert_eq!(rec.items, [Item::Field("DATA_OFFSET", 0x18), Item::Word("DISPATCH_INITIATOR", 0x45)]);
    }
}
