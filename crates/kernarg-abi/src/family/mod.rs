//! Per-family facts about kernel descriptors: which RSRC bits a descriptor must leave zero, and
//! which user SGPRs a retained replay can provide.
//!
//! Shared code reaches a family's facts through [`facts`], the one `match` on [`Family`]; each
//! family module holds its own table (reference §3 "Kernel-descriptor view of RSRC1/2/3" and §6).

pub(crate) mod gfx10_3;
pub(crate) mod gfx11;
pub(crate) mod gfx12;

use pm4_encoding::Family;

/// A named group of bits a kernel descriptor must leave zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZeroBits {
    /// LLVM's field names, joined (`PRIV, DEBUG_MODE`).
    pub(crate) names: &'static str,
    /// The bits.
    pub(crate) mask: u32,
}

/// What differs between families for descriptor validation.
#[derive(Debug)]
pub(crate) struct FamilyFacts {
    /// RSRC1 bits that must be zero in a descriptor, beyond [`RSRC1_ZERO_COMMON`].
    pub(crate) rsrc1_zero: &'static [ZeroBits],
    /// RSRC2 bits that must be zero in a descriptor, beyond [`RSRC2_ZERO_COMMON`].
    pub(crate) rsrc2_zero: &'static [ZeroBits],
    /// RSRC3 bits that must be zero in a descriptor (every bit outside the family's fields too).
    pub(crate) rsrc3_zero: &'static [ZeroBits],
    /// Whether a retained replay provides the 4-SGPR private-segment buffer (DESIGN §3: written on
    /// gfx10.3 and gfx11 when the descriptor asks for it).
    pub(crate) replays_private_segment_buffer: bool,
}

/// The facts of `family`.
pub(crate) const fn facts(family: Family) -> &'static FamilyFacts {
    match family {
        Family::Gfx10_3 => &gfx10_3::FACTS,
        Family::Gfx11 => &gfx11::FACTS,
        Family::Gfx12 => &gfx12::FACTS,
    }
}

/// RSRC1 bits that every family's descriptor must leave zero (reference §3 KD view: PRIORITY,
/// PRIV, DEBUG_MODE, BULKY, CDBG_USER, RESERVED [28:27]).
///
/// `GRANULATED_WAVEFRONT_SGPR_COUNT` [9:6] is documented "reserved, must be 0" on GFX10+, but
/// clang-19 writes a non-zero value into it for gfx1030, gfx1100 and gfx1151 kernels (see
/// `tests/data/README.md`); the hardware allocates 128 SGPRs regardless, so it is not listed.
pub(crate) const RSRC1_ZERO_COMMON: [ZeroBits; 6] = [
    ZeroBits { names: "PRIORITY", mask: mask(11, 10) },
    ZeroBits { names: "PRIV", mask: mask(20, 20) },
    ZeroBits { names: "DEBUG_MODE", mask: mask(22, 22) },
    ZeroBits { names: "BULKY", mask: mask(24, 24) },
    ZeroBits { names: "CDBG_USER", mask: mask(25, 25) },
    ZeroBits { names: "RESERVED", mask: mask(28, 27) },
];

/// RSRC2 bits that every family's descriptor must leave zero (reference §3 KD view:
/// ENABLE_EXCEPTION_ADDRESS_WATCH, ENABLE_EXCEPTION_MEMORY, GRANULATED_LDS_SIZE).
pub(crate) const RSRC2_ZERO_COMMON: [ZeroBits; 3] = [
    ZeroBits { names: "ENABLE_EXCEPTION_ADDRESS_WATCH", mask: mask(13, 13) },
    ZeroBits { names: "ENABLE_EXCEPTION_MEMORY", mask: mask(14, 14) },
    ZeroBits { names: "GRANULATED_LDS_SIZE", mask: mask(23, 15) },
];

pub(crate) use pm4_encoding::bits::mask;
