//! Family-dispatched access to the typed words a dispatch needs, for code that works on any
//! family (encoders, decoders, verifiers): the one `match` on [`Family`] lives here.

use super::{gfx10_3, gfx11, gfx12};
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

macro_rules! per_axis {
    ($family:expr, $axis:expr, $body:ident) => {
        match ($family, $axis) {
            (Family::Gfx10_3, 0) => Some($body!(gfx10_3::ComputeNumThreadX)),
            (Family::Gfx10_3, 1) => Some($body!(gfx10_3::ComputeNumThreadY)),
            (Family::Gfx10_3, 2) => Some($body!(gfx10_3::ComputeNumThreadZ)),
            (Family::Gfx11, 0) => Some($body!(gfx11::ComputeNumThreadX)),
            (Family::Gfx11, 1) => Some($body!(gfx11::ComputeNumThreadY)),
            (Family::Gfx11, 2) => Some($body!(gfx11::ComputeNumThreadZ)),
            (Family::Gfx12, 0) => Some($body!(gfx12::ComputeNumThreadX)),
            (Family::Gfx12, 1) => Some($body!(gfx12::ComputeNumThreadY)),
            (Family::Gfx12, 2) => Some($body!(gfx12::ComputeNumThreadZ)),
            _ => None,
        }
    };
}

/// Splits `COMPUTE_NUM_THREAD_{axis}` (axis 0, 1, 2 = X, Y, Z) with `family`'s field layout;
/// `None` for an axis above 2.
#[must_use]
pub fn num_thread_split(family: Family, axis: usize, word: u32) -> Option<NumThread> {
    macro_rules! split {
        ($ty:ty) => {{
            let w = <$ty>::from_raw(word);
            let other_bits = w.with_num_thread_full(0).with_num_thread_partial(0).raw();
            NumThread { full: w.num_thread_full(), partial: w.num_thread_partial(), other_bits }
        }};
    }
    per_axis!(family, axis, split)
}

/// `COMPUTE_NUM_THREAD_{axis}` with `NUM_THREAD_FULL = full` and `NUM_THREAD_PARTIAL = partial`;
/// `None` when either does not fit `family`'s field (gfx12's FULL is 13 bits on X and Y) or the
/// axis is above 2.
#[must_use]
pub fn num_thread_word(family: Family, axis: usize, full: u32, partial: u32) -> Option<u32> {
    macro_rules! word {
        ($ty:ty) => {{
            let max = <$ty>::from_raw(u32::MAX);
            (full <= max.num_thread_full() && partial <= max.num_thread_partial())
                .then(|| <$ty>::from_raw(0).with_num_thread_full(full).with_num_thread_partial(partial).raw())
        }};
    }
    per_axis!(family, axis, word).flatten()
}

/// `rsrc2` with `COMPUTE_PGM_RSRC2.LDS_SIZE = granules`; `None` when it does not fit the field.
#[must_use]
pub fn rsrc2_with_lds_size(family: Family, rsrc2: u32, granules: u32) -> Option<u32> {
    macro_rules! with {
        ($ty:ty) => {{
            let fits = granules <= <$ty>::from_raw(u32::MAX).lds_size();
            fits.then(|| <$ty>::from_raw(rsrc2).with_lds_size(granules).raw())
        }};
    }
    match family {
        Family::Gfx10_3 => with!(gfx10_3::ComputePgmRsrc2),
        Family::Gfx11 => with!(gfx11::ComputePgmRsrc2),
        Family::Gfx12 => with!(gfx12::ComputePgmRsrc2),
    }
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
}
