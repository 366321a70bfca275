//! Access to the fields of the words a dispatch needs, for code that works on any family
//! (encoders, decoders, verifiers): each reads the field positions of the family's row of the
//! family table ([`crate::family::ComputeRegisters`]).

use crate::bits::{self, FieldDesc};
use crate::family::Family;

/// The fields of one `COMPUTE_NUM_THREAD_{X,Y,Z}` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumThread {
    /// `NUM_THREAD_FULL`: the work-group size on the axis.
    pub full: u32,
    /// `NUM_THREAD_PARTIAL`: the size of the partial last work-group (0 if none).
    pub partial: u32,
    /// Every other bit of the word (gfx12 `INTERLEAVE_BITS_*`, reserved bits).
    pub other_bits: u32,
}

/// `(NUM_THREAD_FULL, NUM_THREAD_PARTIAL)` of axis `axis` on `family`; `None` above 2.
fn num_thread_fields(family: Family, axis: usize) -> Option<(FieldDesc, FieldDesc)> {
    let compute = &family.facts().compute;
    Some((*compute.num_thread_full.get(axis)?, *compute.num_thread_partial.get(axis)?))
}

/// `value` placed in `field`; `None` when it does not fit.
fn placed(field: FieldDesc, value: u32) -> Option<u32> {
    bits::fits(value, field.hi, field.lo).then(|| value << field.lo)
}

/// Splits `COMPUTE_NUM_THREAD_{axis}` (axis 0, 1, 2 = X, Y, Z) with `family`'s field layout;
/// `None` for an axis above 2.
#[must_use]
pub fn num_thread_split(family: Family, axis: usize, word: u32) -> Option<NumThread> {
    let (full, partial) = num_thread_fields(family, axis)?;
    let other_bits = word & !(full.mask() | partial.mask());
    Some(NumThread { full: full.get(word), partial: partial.get(word), other_bits })
}

/// `COMPUTE_NUM_THREAD_{axis}` with `NUM_THREAD_FULL = full` and `NUM_THREAD_PARTIAL = partial`;
/// `None` when either does not fit `family`'s field (gfx12's FULL is 13 bits on X and Y) or the
/// axis is above 2.
#[must_use]
pub fn num_thread_word(family: Family, axis: usize, full: u32, partial: u32) -> Option<u32> {
    let (full_field, partial_field) = num_thread_fields(family, axis)?;
    Some(placed(full_field, full)? | placed(partial_field, partial)?)
}

/// `rsrc2` with `COMPUTE_PGM_RSRC2.LDS_SIZE = granules`; `None` when it does not fit the field.
#[must_use]
pub fn rsrc2_with_lds_size(family: Family, rsrc2: u32, granules: u32) -> Option<u32> {
    let field = family.facts().compute.rsrc2_lds_size;
    Some((rsrc2 & !field.mask()) | placed(field, granules)?)
}

/// `(USER_SGPR, LDS_SIZE, the word with both fields cleared)` of a `COMPUTE_PGM_RSRC2` word on
/// `family`.
#[must_use]
pub fn rsrc2_split(family: Family, rsrc2: u32) -> (u32, u32, u32) {
    let compute = &family.facts().compute;
    let (user_sgpr, lds_size) = (compute.rsrc2_user_sgpr, compute.rsrc2_lds_size);
    (user_sgpr.get(rsrc2), lds_size.get(rsrc2), rsrc2 & !(user_sgpr.mask() | lds_size.mask()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Bit positions from reference §3: NUM_THREAD_FULL [15:0] on gfx10.3/gfx11 and [12:0] on gfx12
    // X/Y (INTERLEAVE_BITS [15:13]), NUM_THREAD_PARTIAL [31:16]; RSRC2.LDS_SIZE [23:15].
    #[test]
    fn num_thread_literal_words() {
        assert_eq!(num_thread_word(Family::Gfx11, 0, 64, 8), Some(0x0008_0040));
        assert_eq!(num_thread_word(Family::Gfx10_3, 0, 0x9000, 0), Some(0x0000_9000));
        assert_eq!(num_thread_word(Family::Gfx12, 0, 0x2000, 0), None);
        assert_eq!(num_thread_word(Family::Gfx12, 2, 0x9000, 0), Some(0x0000_9000));
        assert_eq!(num_thread_word(Family::Gfx12, 3, 1, 0), None);
        let split = num_thread_split(Family::Gfx12, 1, 0x0003_E040).unwrap();
        assert_eq!(split, NumThread { full: 0x40, partial: 3, other_bits: 0xE000 });
        let split = num_thread_split(Family::Gfx11, 1, 0x0003_E040).unwrap();
        assert_eq!(split, NumThread { full: 0xE040, partial: 3, other_bits: 0 });
    }

    #[test]
    fn rsrc2_lds_size_literal_words() {
        assert_eq!(rsrc2_with_lds_size(Family::Gfx10_3, 0x0000_0084, 3), Some(0x0001_8084));
        assert_eq!(rsrc2_with_lds_size(Family::Gfx12, 0x00FF_8084, 0), Some(0x0000_0084));
        assert_eq!(rsrc2_with_lds_size(Family::Gfx11, 0, 0x200), None);
    }

    // RSRC2.USER_SGPR [5:1] and LDS_SIZE [23:15] on every family (reference §3).
    #[test]
    fn rsrc2_split_literal_words() {
        for family in Family::ALL {
            assert_eq!(rsrc2_split(family, 0x8001_809E), (15, 3, 0x8000_0080), "{family}");
        }
    }
}
