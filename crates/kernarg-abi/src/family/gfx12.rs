//! gfx12 (gfx1200, gfx1201): architected flat scratch and architected SGPRs (reference §6); RSRC1
//! bits 21 and 23 and RSRC2 bits 6 and 31 mean something else than on gfx10.3/gfx11 (§3, §9).

use super::{FamilyFacts, ZeroBits, mask};

/// Reference §3 KD view, gfx12 rows; §9 for RSRC2 bits 6 and 31 (reserved in LLVM 19).
pub(crate) const FACTS: FamilyFacts = FamilyFacts {
    rsrc1_zero: &[
        ZeroBits { names: "WG_RR_EN", mask: mask(21, 21) },
        ZeroBits { names: "DISABLE_PERF", mask: mask(23, 23) },
    ],
    rsrc2_zero: &[
        ZeroBits { names: "ENABLE_DYNAMIC_VGPR", mask: mask(6, 6) },
        ZeroBits { names: "WGP_TAKEOVER", mask: mask(31, 31) },
    ],
    rsrc3_zero: &[
        // INST_PREF_SIZE [11:4] and GLG_EN [13] are the descriptor's to set.
        ZeroBits { names: "RESERVED0", mask: mask(3, 0) },
        ZeroBits { names: "RESERVED", mask: mask(12, 12) },
        ZeroBits { names: "undefined", mask: mask(30, 14) },
        ZeroBits { names: "IMAGE_OP", mask: mask(31, 31) },
    ],
    replays_private_segment_buffer: false,
};
