//! The AVX-512 path of the matrix products of [`super`]: the tile sums of a whole group of
//! [`GROUP_ROWS`] weight rows and [`super::TOKENS`] tokens, written with intrinsics so that the
//! 16 chains (eight rows, two registers of 16 tokens each) stay in registers.
//!
//! It performs [`super::tile_sums`]'s operations in its order, for every (row, token): each
//! work-item's sum from `+0.0` over its blocks `l, l + 32, ...` ascending, within a block
//! `w * x` then `+`, one rounded `f32` operation at a time (`_mm512_mul_ps`, `_mm512_add_ps`:
//! no fused multiply-add), then the LDS tree. One work-item at a time, and within a block one
//! half of the tile's tokens at a time: the eight rows give that loop eight independent chains,
//! a register of a tile column is shared by eight products, and each weight, broadcast from
//! memory as the multiply's own operand, feeds one multiply (a separate broadcast instruction
//! would take a vector pipe from the multiplies and adds).
//!
//! [`tile_sums_group_fused`] does the same for the fused formats: [`super::fused`]'s operations
//! in its order (`vfmadd`, one rounding, as its [`f32::mul_add`]), one half of the tile's tokens
//! at a time over all the work-item's blocks, the eight rows' chains `lo` and `hi` (sixteen) in
//! registers, each broadcast quant the memory operand of its fused multiply-add.

use std::arch::x86_64::{__m512, _mm512_add_ps, _mm512_fmadd_ps, _mm512_mul_ps, _mm512_set1_ps, _mm512_setzero_ps};

use super::{LANES, Lanes, QK, Slot, TOKENS, fused, tree_reduce_tokens};

/// Weight rows of a group.
pub(super) const GROUP_ROWS: usize = 8;
const _: () = assert!(TOKENS == 32, "a tile column is two 512-bit registers");

/// [`super::tile_sums`] for `GROUP_ROWS` rows and `TOKENS` tokens: `weights` holds the group's
/// rows of `cols` values, dequantised; `tile` the tile's columns.
#[target_feature(enable = "avx512f,avx2,f16c")]
pub(super) fn tile_sums_group(
    weights: &[f32],
    cols: usize,
    tile: &[Slot<TOKENS>],
    lanes: &mut Lanes<TOKENS, GROUP_ROWS>,
) -> [[f32; TOKENS]; GROUP_ROWS] {
    const Q: usize = QK as usize;
    const ZEROS: [f32; Q] = [0.0; Q];
    let blocks = cols / Q;
    let active = blocks.min(LANES);
    if active == 0 {
        return [[0.0; TOKENS]; GROUP_ROWS];
    }
    for slot in &mut lanes[active..] {
        *slot = [[0.0; TOKENS]; GROUP_ROWS];
    }
    for (lane, slot) in lanes.iter_mut().enumerate().take(active) {
        // acc[half][r]: tokens 16 * half.. of row r.
        let mut acc = [[_mm512_setzero_ps(); GROUP_ROWS]; 2];
        for b in (lane..blocks).step_by(LANES) {
            let x = &tile[b * Q..][..Q];
            let w: [&[f32; Q]; GROUP_ROWS] = std::array::from_fn(|r| {
                weights.get(r * cols + b * Q..).and_then(|w| w.first_chunk::<Q>()).unwrap_or(&ZEROS)
            });
            // A half's pass over the block: every broadcast weight has one use, so it is the
            // multiply's memory operand (a separate broadcast would take a vector pipe).
            for (half, acc) in acc.iter_mut().enumerate() {
                for (j, Slot(column)) in x.iter().enumerate() {
                    let halves: [__m512; 2] = zerocopy::transmute!(*column);
                    for (r, sum) in acc.iter_mut().enumerate() {
                        *sum = _mm512_add_ps(*sum, _mm512_mul_ps(_mm512_set1_ps(w[r][j]), halves[half]));
                    }
                }
            }
        }
        for (r, row) in slot.iter_mut().enumerate() {
            *row = zerocopy::transmute!([acc[0][r], acc[1][r]]);
        }
    }
    tree_reduce_tokens(lanes);
    lanes[0]
}

/// [`super::fused`]'s tile sums for a whole group of `GROUP_ROWS` rows and `TOKENS` tokens;
/// `sums` is the tile's block sums (Q4_1) or empty (Q8_0).
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
pub(super) fn tile_sums_group_fused(
    rows: &fused::Rows<'_>,
    tile: &[Slot<TOKENS>],
    sums: &[Slot<TOKENS>],
    lanes: &mut Lanes<TOKENS, GROUP_ROWS>,
) -> [[f32; TOKENS]; GROUP_ROWS] {
    const Q: usize = QK as usize;
    let blocks = rows.cols / Q;
    for (lane, slot) in lanes.iter_mut().enumerate() {
        // acc[half][r]: tokens 16 * half.. of row r.
        let mut acc = [[_mm512_setzero_ps(); GROUP_ROWS]; 2];
        for (half, acc) in acc.iter_mut().enumerate() {
            for b in (lane..blocks).step_by(LANES) {
                let x = &tile[b * Q..][..Q];
                let (q, scales) = rows.block::<GROUP_ROWS>(0, b);
                let (mut lo, mut hi) = ([_mm512_setzero_ps(); GROUP_ROWS], [_mm512_setzero_ps(); GROUP_ROWS]);
                for j in 0..Q / 2 {
                    let xl: [__m512; 2] = zerocopy::transmute!(x[j].0);
                    let xh: [__m512; 2] = zerocopy::transmute!(x[Q / 2 + j].0);
                    for r in 0..GROUP_ROWS {
                        lo[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r][j]), xl[half], lo[r]);
                        hi[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r][Q / 2 + j]), xh[half], hi[r]);
                    }
                }
                let sx: Option<[__m512; 2]> = sums.get(b).map(|Slot(sx)| zerocopy::transmute!(*sx));
                for r in 0..GROUP_ROWS {
                    let [d, m] = scales[r];
                    acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_add_ps(lo[r], hi[r]), acc[r]);
                    if let Some(sx) = sx {
                        acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(m), sx[half], acc[r]);
                    }
                }
            }
        }
        for (r, row) in slot.iter_mut().enumerate() {
            *row = zerocopy::transmute!([acc[0][r], acc[1][r]]);
        }
    }
    tree_reduce_tokens(lanes);
    lanes[0]
}
