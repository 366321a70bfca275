//! gfx10.3 (gfx1030): absolute flat scratch, so the private-segment buffer and flat-scratch-init
//! user SGPRs are legitimate (reference §6 target properties).

use super::{FamilyFacts, ZeroBits, mask};

/// Reference §3 KD view, gfx10_3 rows.
pub(crate) const FACTS: FamilyFacts = FamilyFacts {
    rsrc1_zero: &[],
    rsrc2_zero: &[
        ZeroBits { names: "ENABLE_TRAP_HANDLER", mask: mask(6, 6) },
        ZeroBits { names: "RESERVED0", mask: mask(31, 31) },
    ],
    rsrc3_zero: &[
        // Only SHARED_VGPR_COUNT [3:0] is defined.
        ZeroBits { names: "RESERVED1", mask: mask(11, 4) },
        ZeroBits { names: "RESERVED", mask: mask(12, 12) },
        ZeroBits { names: "undefined", mask: mask(31, 13) },
    ],
    replays_private_segment_buffer: true,
};
