//! PM4 packet headers: type 3 (encode and decode), types 0, 1 and 2 (recognised when decoding).
//!
//! Layout: `reference/amd-reference.md` §4 "Header". Type 3:
//! `[31:30]` TYPE=3, `[29:16]` COUNT = body dwords - 1, `[15:8]` IT_OPCODE, `[7:3]` reserved,
//! `[2]` RESET_FILTER_CAM, `[1]` SHADER_TYPE, `[0]` PREDICATE.

use crate::opcode::Opcode;

mod field {
    /// `[31:30]` packet type.
    pub(super) const TYPE_SHIFT: u32 = 30;
    /// `[29:16]` COUNT (14 bits).
    pub(super) const COUNT_SHIFT: u32 = 16;
    pub(super) const COUNT_MASK: u32 = 0x3FFF;
    /// `[15:8]` IT_OPCODE.
    pub(super) const OPCODE_SHIFT: u32 = 8;
    /// `[7:3]` reserved, must be zero.
    pub(super) const RESERVED_MASK: u32 = 0xF8;
    /// `[2]` RESET_FILTER_CAM.
    pub(super) const RESET_FILTER_CAM: u32 = 1 << 2;
    /// `[1]` SHADER_TYPE (1 = compute).
    pub(super) const SHADER_TYPE: u32 = 1 << 1;
    /// `[0]` PREDICATE.
    pub(super) const PREDICATE: u32 = 1;
    /// Type-0 `[15:0]` register base.
    pub(super) const TYPE0_REG_MASK: u32 = 0xFFFF;
}

/// The largest type-3 body in dwords (COUNT is 14 bits, body = COUNT + 1).
pub const MAX_BODY_DWORDS: usize = field::COUNT_MASK as usize + 1;

/// COUNT value that makes a NOP a header-only, one-dword packet (`0xFFFF1000`).
pub const NOP_HEADER_ONLY_COUNT: u16 = 0x3FFF;

/// The type-2 filler dword (`CP_PACKET2`).
pub const TYPE2_FILLER: u32 = 0x8000_0000;

/// `SHADER_TYPE`, header bit 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ShaderType {
    /// 0: graphics (what ROCr and Linux emit on gfx9+ for most packets).
    #[default]
    Graphics,
    /// 1: compute (`PACKET3_COMPUTE`, Mesa's `PKT3_SHADER_TYPE_S`).
    Compute,
}

/// The header bits a packet carries besides its opcode and length. Every typed packet keeps them,
/// so that re-emitting a decoded packet reproduces its header word exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct HeaderFlags {
    /// `SHADER_TYPE`.
    pub shader_type: ShaderType,
    /// `PREDICATE`.
    pub predicate: bool,
    /// `RESET_FILTER_CAM`.
    pub reset_filter_cam: bool,
}

impl HeaderFlags {
    /// `SHADER_TYPE` = compute, nothing else (what Mesa sets on dispatch packets).
    pub const COMPUTE: Self = Self { shader_type: ShaderType::Compute, predicate: false, reset_filter_cam: false };
}

/// A decoded type-3 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Type3Header {
    /// `IT_OPCODE`.
    pub opcode: Opcode,
    /// `COUNT` (body dwords − 1), 14 bits.
    pub count: u16,
    /// `SHADER_TYPE`.
    pub shader_type: ShaderType,
    /// `PREDICATE`.
    pub predicate: bool,
    /// `RESET_FILTER_CAM` (GFX11+, used by the SET_*_REG_PAIRS packets).
    pub reset_filter_cam: bool,
}

/// Why a header word is not a valid type-3 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Bits `[31:30]` are not 3.
    #[error("packet type {found} where a type-3 header was expected")]
    NotType3 {
        /// The type found in bits `[31:30]`.
        found: u8,
    },
    /// Bits `[7:3]` must be zero.
    #[error("reserved header bits [7:3] are set ({bits:#04x})")]
    ReservedBits {
        /// The offending bits in place.
        bits: u8,
    },
    /// A type-2 word other than the filler `0x80000000` (bits `[29:0]` carry nothing defined).
    #[error("type-2 word {word:#010x} is not the filler 0x80000000")]
    Type2NotFiller {
        /// The word.
        word: u32,
    },
}

impl Type3Header {
    /// A header for `opcode` with `body_dwords` dwords after it.
    ///
    /// PANIC: asserts `1 <= body_dwords <= MAX_BODY_DWORDS` (a type-3 packet always has a body).
    #[must_use]
    #[inline(always)]
    pub const fn new(opcode: Opcode, body_dwords: usize, shader_type: ShaderType) -> Self {
        assert!(body_dwords >= 1 && body_dwords <= MAX_BODY_DWORDS, "type-3 body size out of range");
        // CAST: body_dwords - 1 <= 0x3FFF was asserted above.
        #[allow(clippy::cast_possible_truncation)]
        let count = (body_dwords - 1) as u16;
        Self { opcode, count, shader_type, predicate: false, reset_filter_cam: false }
    }

    /// A header for `opcode` with `body_dwords` dwords after it and the given flags.
    ///
    /// PANIC: asserts `1 <= body_dwords <= MAX_BODY_DWORDS`.
    #[must_use]
    #[inline(always)]
    pub const fn with_flags(opcode: Opcode, body_dwords: usize, flags: HeaderFlags) -> Self {
        let mut h = Self::new(opcode, body_dwords, flags.shader_type);
        h.predicate = flags.predicate;
        h.reset_filter_cam = flags.reset_filter_cam;
        h
    }

    /// The flag bits of this header.
    #[must_use]
    pub const fn flags(self) -> HeaderFlags {
        HeaderFlags {
            shader_type: self.shader_type,
            predicate: self.predicate,
            reset_filter_cam: self.reset_filter_cam,
        }
    }

    /// Number of body dwords this header announces (`COUNT + 1`), except for the header-only NOP.
    #[must_use]
    pub const fn body_dwords(self) -> usize {
        if matches!(self.opcode, Opcode::Nop) && self.count == NOP_HEADER_ONLY_COUNT {
            0
        } else {
            self.count as usize + 1
        }
    }

    /// Encodes the header word.
    #[must_use]
    #[inline(always)]
    pub const fn encode(self) -> u32 {
        let mut word = (3 << field::TYPE_SHIFT)
            | ((self.count as u32 & field::COUNT_MASK) << field::COUNT_SHIFT)
            | ((self.opcode.to_u8() as u32) << field::OPCODE_SHIFT);
        if self.reset_filter_cam {
            word |= field::RESET_FILTER_CAM;
        }
        if matches!(self.shader_type, ShaderType::Compute) {
            word |= field::SHADER_TYPE;
        }
        if self.predicate {
            word |= field::PREDICATE;
        }
        word
    }

    /// Decodes a type-3 header word.
    ///
    /// # Errors
    /// [`HeaderError`] when the word is not type 3 or has reserved bits set.
    pub const fn decode(word: u32) -> Result<Self, HeaderError> {
        let ty = word >> field::TYPE_SHIFT;
        if ty != 3 {
            // CAST: two bits.
            #[allow(clippy::cast_possible_truncation)]
            return Err(HeaderError::NotType3 { found: ty as u8 });
        }
        if word & field::RESERVED_MASK != 0 {
            // CAST: masked to bits `[7:3]`.
            #[allow(clippy::cast_possible_truncation)]
            return Err(HeaderError::ReservedBits { bits: (word & field::RESERVED_MASK) as u8 });
        }
        // CAST: masked to 14 and 8 bits.
        #[allow(clippy::cast_possible_truncation)]
        let count = ((word >> field::COUNT_SHIFT) & field::COUNT_MASK) as u16;
        #[allow(clippy::cast_possible_truncation)]
        let opcode = Opcode::from_u8((word >> field::OPCODE_SHIFT) as u8);
        Ok(Self {
            opcode,
            count,
            shader_type: if word & field::SHADER_TYPE != 0 { ShaderType::Compute } else { ShaderType::Graphics },
            predicate: word & field::PREDICATE != 0,
            reset_filter_cam: word & field::RESET_FILTER_CAM != 0,
        })
    }

    /// Returns a copy with `SHADER_TYPE` = compute.
    #[must_use]
    pub const fn compute(mut self) -> Self {
        self.shader_type = ShaderType::Compute;
        self
    }
}

/// Any PM4 header, as recognised by the decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Header {
    /// Type 0: `count + 1` consecutive register writes starting at `base_reg` (absolute dword).
    Type0 {
        /// `[15:0]` first register (absolute dword offset).
        base_reg: u16,
        /// `[29:16]` COUNT (body dwords − 1).
        count: u16,
    },
    /// Type 1 (obsolete two-register packet); recognised, not supported.
    Type1,
    /// Type 2: one-dword filler.
    Type2,
    /// Type 3.
    Type3(Type3Header),
}

impl Header {
    /// Classifies a header word by bits `[31:30]`.
    ///
    /// # Errors
    /// [`HeaderError::ReservedBits`] for a type-3 word with reserved bits set.
    pub const fn decode(word: u32) -> Result<Self, HeaderError> {
        match word >> field::TYPE_SHIFT {
            0 => {
                // CAST: masked to 14 and 16 bits.
                #[allow(clippy::cast_possible_truncation)]
                let count = ((word >> field::COUNT_SHIFT) & field::COUNT_MASK) as u16;
                #[allow(clippy::cast_possible_truncation)]
                let base_reg = (word & field::TYPE0_REG_MASK) as u16;
                Ok(Header::Type0 { base_reg, count })
            }
            1 => Ok(Header::Type1),
            2 if word == TYPE2_FILLER => Ok(Header::Type2),
            2 => Err(HeaderError::Type2NotFiller { word }),
            _ => match Type3Header::decode(word) {
                Ok(h) => Ok(Header::Type3(h)),
                Err(e) => Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Literal headers from reference §4 "Header" (derived examples).
    #[test]
    fn reference_examples() {
        let set_sh = Type3Header::new(Opcode::SetShReg, 2, ShaderType::Graphics);
        assert_eq!(set_sh.encode(), 0xC001_7600);
        let dispatch = Type3Header::new(Opcode::DispatchDirect, 4, ShaderType::Compute);
        assert_eq!(dispatch.encode(), 0xC003_1502);
        assert_eq!(Type3Header::new(Opcode::ReleaseMem, 7, ShaderType::Graphics).encode(), 0xC006_4900);
        assert_eq!(Type3Header::new(Opcode::AcquireMem, 7, ShaderType::Graphics).encode(), 0xC006_5800);
        assert_eq!(Type3Header::new(Opcode::IndirectBuffer, 3, ShaderType::Graphics).encode(), 0xC002_3F00);
        let nop = Type3Header::decode(0xFFFF_1000).unwrap();
        assert_eq!(nop.opcode, Opcode::Nop);
        assert_eq!(nop.body_dwords(), 0);
    }

    #[test]
    fn decode_fields() {
        let h = Type3Header::decode(0xC003_1503).unwrap();
        assert_eq!(h.opcode, Opcode::DispatchDirect);
        assert_eq!(h.count, 3);
        assert_eq!(h.shader_type, ShaderType::Compute);
        assert!(h.predicate);
        assert_eq!(h.encode(), 0xC003_1503);
        assert_eq!(Type3Header::decode(0xC001_7608), Err(HeaderError::ReservedBits { bits: 0x08 }));
        assert_eq!(Type3Header::decode(0x8000_0000), Err(HeaderError::NotType3 { found: 2 }));
    }

    #[test]
    fn other_types() {
        assert_eq!(Header::decode(TYPE2_FILLER), Ok(Header::Type2));
        assert_eq!(Header::decode(0xB37E_002B), Err(HeaderError::Type2NotFiller { word: 0xB37E_002B }));
        assert_eq!(Header::decode(0x4000_0000), Ok(Header::Type1));
        assert_eq!(Header::decode(0x0002_2E40), Ok(Header::Type0 { base_reg: 0x2E40, count: 2 }));
    }
}
