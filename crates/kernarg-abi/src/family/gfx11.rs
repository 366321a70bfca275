//! gfx11 (gfx1100, gfx1151): architected flat scratch, packed work-item ids (reference §6). The
//! replay still writes a private-segment buffer when a descriptor asks for one (DESIGN §3).

use super::{FamilyFacts, ZeroBits, mask};

/// Reference §3 KD view, gfx11 rows.
pub(crate) const FACTS: FamilyFacts = FamilyFacts {
    rsrc1_zero: &[],
    rsrc2_zero: &[
        ZeroBits { names: "ENABLE_TRAP_HANDLER", mask: mask(6, 6) },
        ZeroBits { names: "RESERVED0", mask: mask(31, 31) },
    ],
    rsrc3_zero: &[
        // SHARED_VGPR_COUNT [3:0] and INST_PREF_SIZE [9:4] are the descriptor's to set.
        ZeroBits { names: "TRAP_ON_START", mask: mask(10, 10) },
        ZeroBits { names: "TRAP_ON_END", mask: mask(11, 11) },
        ZeroBits { names: "RESERVED", mask: mask(12, 12) },
        ZeroBits { names: "undefined", mask: mask(30, 13) },
        ZeroBits { names: "IMAGE_OP", mask: mask(31, 31) },
    ],
    replays_private_segment_buffer: true,
};
