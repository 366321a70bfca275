//! The matrix products of the fused formats (Q4_1, Q8_0; [`super::Kind::fused`]): per token,
//! each block added as [`crate::cpu::matvec_q4_1`] adds it. A block's quants (as `f32`, exact)
//! and scales are read once per dispatch and row; its `sx` (Q4_1) once per dispatch and token
//! ([`block_sums`]); per (row, token) a block is then two chains of 16 fused multiply-adds
//! (`lo`, `hi`) and one or two more into the work-item's sum.

use super::{HALF_GROUP, LANES, Lanes, QK, ROW_GROUP, Slot, f16_at, place, tree_reduce_tokens};

const Q: usize = QK as usize;

/// A Q4_1 block's quants as `f32` in the element order (`qs[j] & 15` for `j < 16`, then
/// `qs[j] >> 4`) and its `[d, m]`.
#[inline(always)]
pub(super) fn quants_q4_1(block: &[u8], out: &mut [f32; 32]) -> [f32; 2] {
    // Fixed-size arrays, so that each loop is one vector operation per step.
    let Some(qs) = block.get(4..20).and_then(|q| q.first_chunk::<16>()) else { return [0.0; 2] };
    let q: [i32; 32] = std::array::from_fn(|j| i32::from(if j < 16 { qs[j] & 15 } else { qs[j - 16] >> 4 }));
    for (w, q) in out.iter_mut().zip(q) {
        // q < 16: exact as f32.
        *w = q as f32;
    }
    [f16_at(&block[0..2]), f16_at(&block[2..4])]
}

/// A Q8_0 block's quants as `f32` and its `[d, 0.0]` (the `m` is never read).
#[inline(always)]
pub(super) fn quants_q8_0(block: &[u8], out: &mut [f32; 32]) -> [f32; 2] {
    let Some(qs) = block.get(2..34).and_then(|q| q.first_chunk::<32>()) else { return [0.0; 2] };
    let q: [i32; 32] = std::array::from_fn(|j| i32::from(qs[j].cast_signed()));
    for (w, q) in out.iter_mut().zip(q) {
        // |q| <= 128: exact as f32.
        *w = q as f32;
    }
    [f16_at(&block[0..2]), 0.0]
}

/// Each block's `sx` for every token of `tiles` (tiles of `cols` columns, `cols` a multiple of
/// 32): slot `tile * cols / 32 + b` holds, per token, `x[32 b] + ... + x[32 b + 31]` added left
/// to right from `0.0` ([`crate::cpu::matvec_q4_1`]'s `sx`).
pub(super) fn block_sums<const T: usize>(tiles: &[Slot<T>]) -> Vec<Slot<T>> {
    tiles
        .chunks_exact(Q)
        .map(|block| {
            let mut sum = [0.0f32; T];
            for Slot(column) in block {
                for (s, x) in sum.iter_mut().zip(column) {
                    *s += x;
                }
            }
            Slot(sum)
        })
        .collect()
}

/// A group's rows as the fused products read them: `count` rows of `cols` quants, and their
/// blocks' `[d, m]` (`cols / 32` a row).
pub(super) struct Rows<'a> {
    pub(super) quants: &'a [f32],
    pub(super) scales: &'a [[f32; 2]],
    pub(super) count: usize,
    pub(super) cols: usize,
}

impl Rows<'_> {
    /// Rows `first..first + R`'s block `b`: its quants and `[d, m]` for each row.
    #[inline(always)]
    pub(super) fn block<const R: usize>(&self, first: usize, b: usize) -> ([&[f32; Q]; R], [[f32; 2]; R]) {
        const ZEROS: [f32; Q] = [0.0; Q];
        let blocks = self.cols / Q;
        let quants = std::array::from_fn(|r| {
            self.quants.get((first + r) * self.cols + b * Q..).and_then(|q| q.first_chunk::<Q>()).unwrap_or(&ZEROS)
        });
        let scales = std::array::from_fn(|r| self.scales.get((first + r) * blocks + b).copied().unwrap_or([0.0; 2]));
        (quants, scales)
    }

    /// The sums of every row for the `T` tokens of `tile` from token `token` into `out` (as
    /// [`place`] lays them out), a whole group in halves of [`HALF_GROUP`] rows, else row by
    /// row; `sums` is the tile's block sums (Q4_1) or empty (Q8_0).
    #[inline(always)]
    pub(super) fn tile<const T: usize>(
        &self,
        tile: &[Slot<T>],
        sums: &[Slot<T>],
        token: usize,
        half: &mut Lanes<T, HALF_GROUP>,
        single: &mut Lanes<T, 1>,
        out: &mut [f32],
    ) {
        if self.count == ROW_GROUP {
            for first in (0..ROW_GROUP).step_by(HALF_GROUP) {
                let s = self.tile_sums::<T, HALF_GROUP>(first, tile, sums, half);
                place(out, self.count, first, token, &s);
            }
        } else {
            for r in 0..self.count {
                let s = self.tile_sums::<T, 1>(r, tile, sums, single);
                place(out, self.count, r, token, &s);
            }
        }
    }

    /// The sums of rows `first..first + R` for the `T` tokens of one tile: per row, the 32
    /// work-items' partial sums, each token's from `0.0` over the work-item's blocks `l, l + 32,
    /// ...` ascending, each block `lo = fma(q[j], x[j], lo)`, `hi = fma(q[16 + j], x[16 + j],
    /// hi)` for `j < 16` from `0.0`, then `acc = fma(d, lo + hi, acc)` and, with `sums`,
    /// `acc = fma(m, sx, acc)`; then the LDS tree. The `R` rows are `R` different work-groups,
    /// sharing only the loads of the tile; the chains `lo` and `hi` of every (row, token) are
    /// independent, so one work-item at a time gives the loop enough of them.
    #[inline(always)]
    fn tile_sums<const T: usize, const R: usize>(
        &self,
        first: usize,
        tile: &[Slot<T>],
        sums: &[Slot<T>],
        lanes: &mut Lanes<T, R>,
    ) -> [[f32; T]; R] {
        let blocks = self.cols / Q;
        for (lane, slot) in lanes.iter_mut().enumerate() {
            let mut acc = [[0.0f32; T]; R];
            for b in (lane..blocks).step_by(LANES) {
                let x = &tile[b * Q..][..Q];
                let (q, scales) = self.block::<R>(first, b);
                let (mut lo, mut hi) = ([[0.0f32; T]; R], [[0.0f32; T]; R]);
                for j in 0..Q / 2 {
                    let (xl, xh) = (&x[j].0, &x[Q / 2 + j].0);
                    for r in 0..R {
                        let (ql, qh) = (q[r][j], q[r][Q / 2 + j]);
                        for t in 0..T {
                            lo[r][t] = ql.mul_add(xl[t], lo[r][t]);
                            hi[r][t] = qh.mul_add(xh[t], hi[r][t]);
                        }
                    }
                }
                for r in 0..R {
                    let [d, m] = scales[r];
                    for t in 0..T {
                        acc[r][t] = d.mul_add(lo[r][t] + hi[r][t], acc[r][t]);
                    }
                    if let Some(Slot(sx)) = sums.get(b) {
                        for t in 0..T {
                            acc[r][t] = m.mul_add(sx[t], acc[r][t]);
                        }
                    }
                }
            }
            *slot = acc;
        }
        tree_reduce_tokens(lanes);
        lanes[0]
    }
}
