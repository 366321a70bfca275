//! Descriptor bits every family reserves. What differs between families (the family's own
//! reserved RSRC bits, whether the private-segment buffer may be asked for) is a column of
//! `pm4-encoding`'s family table (`pm4_encoding::family::FamilyFacts`).

use pm4_encoding::family::ZeroBits;

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

use pm4_encoding::bits::mask;
