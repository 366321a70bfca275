//! `COMPUTE_PGM_RSRC1/2/3` typed with a family's field layout, for code that holds a raw word
//! and a [`Family`] (a kernel descriptor's words, a register file). Part of the family table: the
//! `match` on a family here only picks the family module's word type.

use super::{gfx10_3, gfx11, gfx12};
use crate::family::Family;

/// Declares an enum over the per-family register words of one register.
macro_rules! family_word {
    ($(#[$meta:meta])* $name:ident, $word:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            /// gfx10.3 field layout.
            Gfx10_3(gfx10_3::$word),
            /// gfx11 field layout.
            Gfx11(gfx11::$word),
            /// gfx12 field layout.
            Gfx12(gfx12::$word),
        }

        impl $name {
            /// Types `raw` with `family`'s field layout.
            #[must_use]
            pub const fn new(raw: u32, family: Family) -> Self {
                match family {
                    Family::Gfx10_3 => Self::Gfx10_3(gfx10_3::$word::from_raw(raw)),
                    Family::Gfx11 => Self::Gfx11(gfx11::$word::from_raw(raw)),
                    Family::Gfx12 => Self::Gfx12(gfx12::$word::from_raw(raw)),
                }
            }

            /// The raw word.
            #[must_use]
            pub const fn raw(self) -> u32 {
                match self {
                    Self::Gfx10_3(w) => w.raw(),
                    Self::Gfx11(w) => w.raw(),
                    Self::Gfx12(w) => w.raw(),
                }
            }

            /// The family whose layout types the word.
            #[must_use]
            pub const fn family(self) -> Family {
                match self {
                    Self::Gfx10_3(_) => Family::Gfx10_3,
                    Self::Gfx11(_) => Family::Gfx11,
                    Self::Gfx12(_) => Family::Gfx12,
                }
            }
        }
    };
}

family_word!(
    /// `COMPUTE_PGM_RSRC1` of a descriptor, typed per family.
    Rsrc1,
    ComputePgmRsrc1
);
family_word!(
    /// `COMPUTE_PGM_RSRC2` of a descriptor, typed per family.
    Rsrc2,
    ComputePgmRsrc2
);
family_word!(
    /// `COMPUTE_PGM_RSRC3` of a descriptor, typed per family.
    Rsrc3,
    ComputePgmRsrc3
);

impl Rsrc1 {
    /// `WGP_MODE`: 1 = work-group processor mode, 0 = CU mode.
    #[must_use]
    pub const fn wgp_mode(self) -> bool {
        match self {
            Self::Gfx10_3(w) => w.wgp_mode() != 0,
            Self::Gfx11(w) => w.wgp_mode() != 0,
            Self::Gfx12(w) => w.wgp_mode() != 0,
        }
    }
}

impl Rsrc2 {
    /// `USER_SGPR` (`USER_SGPR_COUNT` in the descriptor).
    #[must_use]
    pub const fn user_sgpr(self) -> u8 {
        let n = match self {
            Self::Gfx10_3(w) => w.user_sgpr(),
            Self::Gfx11(w) => w.user_sgpr(),
            Self::Gfx12(w) => w.user_sgpr(),
        };
        // CAST: a 5-bit field.
        #[allow(clippy::cast_possible_truncation)]
        let n = n as u8;
        n
    }

    /// `SCRATCH_EN` (`ENABLE_PRIVATE_SEGMENT` in the descriptor).
    #[must_use]
    pub const fn scratch_en(self) -> bool {
        match self {
            Self::Gfx10_3(w) => w.scratch_en() != 0,
            Self::Gfx11(w) => w.scratch_en() != 0,
            Self::Gfx12(w) => w.scratch_en() != 0,
        }
    }
}
