//! The vector paths of [`super`] on x86-64: the rows of a matrix in the `f32` lanes of AVX2
//! (eight rows) or AVX-512 (sixteen rows) registers, one register per work-item partial sum,
//! over the matrix in [`super::Layout::pack`]'s layout.
//!
//! A group of rows is read block by block, each block exactly as the kernel's work-item adds it
//! ([`super::super::matvec_q4_1`]): each column (byte `j` of every row) is widened, its quants
//! converted to `f32` (exact: `|q| <= 128`) and fused into the block's chains `lo` and `hi` with
//! the broadcast `x` (`vfmadd`, one rounding, as the scalar path's [`f32::mul_add`]); then the
//! block's scales of every row, converted by `vcvtph2ps` (exact for every binary16 value, as
//! [`super::super::f16_to_f32`] is), fuse `lo + hi` (and for Q4_1 the block's broadcast `sx`,
//! computed once per product) into the work-item's partial sum. On AVX-512 a nibble is converted
//! by one `vpermps` from the table of the floats `0..16` (its index is the low four bits of each
//! lane); on AVX2 by a mask or shift and `vcvtdq2ps`. [`BLOCKS`] consecutive blocks (as many
//! different work-items' partial sums) are interleaved so that their chains overlap.
//!
//! The packed bytes arrive from memory, not from arithmetic: each group's kernel prefetches the
//! blocks [`AHEAD`] of the ones it adds, reading on past its group into the next one of its task.

// A column `j` indexes the packed bytes and the `x` of several blocks at once: a range loop says
// so.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::{
    __m128i, __m256, __m256i, __m512, __m512i, _mm256_add_ps, _mm256_and_si256, _mm256_cvtepi8_epi32,
    _mm256_cvtepi32_ps, _mm256_cvtepu8_epi32, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_setzero_ps, _mm256_srli_epi32, _mm512_add_ps, _mm512_cvtepi8_epi32, _mm512_cvtepi32_ps, _mm512_cvtph_ps,
    _mm512_fmadd_ps, _mm512_permutexvar_ps, _mm512_set1_ps, _mm512_setr_ps, _mm512_setzero_ps, _mm512_srli_epi32,
};

use super::{Kind, LANES};
use crate::cpu::simd::{Isa, prefetch};

/// Rows per register.
pub(super) const fn rows_per_register(isa: Isa) -> usize {
    match isa {
        Isa::Avx2 => 8,
        Isa::Avx512 => 16,
    }
}

/// Computes the leading whole groups of rows of `out` from `packed` (those rows in
/// [`super::Layout::pack`]'s layout for `isa`, which this machine must have; without it nothing is
/// computed) and returns how many rows it computed.
///
/// `sums` holds each block's `sx` ([`super::super::block_x_sum`] of its `x`) for Q4_1.
pub(super) fn rows(
    isa: Isa,
    kind: Kind,
    packed: &[u8],
    xs: &[f32],
    sums: &[f32],
    blocks_per_row: usize,
    out: &mut [f32],
) -> usize {
    if !isa.available() {
        return 0;
    }
    let n = rows_per_register(isa);
    let group_bytes = n * blocks_per_row * kind.block_bytes();
    for (g, y) in out.chunks_exact_mut(n).enumerate() {
        // The group and every byte after it: the kernels read the group's and prefetch ahead.
        let Some(group) = packed.get(g * group_bytes..).filter(|rest| rest.len() >= group_bytes) else { break };
        match (isa, kind) {
            (Isa::Avx2, Kind::Q4_1) => {
                #[allow(unsafe_code)]
                // SAFETY: `rows8_q4_1` requires only the CPU features it is compiled for (AVX2, FMA
                // and F16C), and `isa.available()` detected them on this machine above.
                let sums = unsafe { rows8_q4_1(group, blocks_per_row, xs, sums) };
                y.copy_from_slice(&sums);
            }
            (Isa::Avx2, Kind::Q8_0) => {
                #[allow(unsafe_code)]
                // SAFETY: as for `rows8_q4_1` above.
                let sums = unsafe { rows8_q8_0(group, blocks_per_row, xs) };
                y.copy_from_slice(&sums);
            }
            (Isa::Avx512, Kind::Q4_1) => {
                #[allow(unsafe_code)]
                // SAFETY: `rows16_q4_1` requires only the CPU features it is compiled for
                // (AVX-512F, AVX2, FMA and F16C), and `isa.available()` detected them above.
                let sums = unsafe { rows16_q4_1(group, blocks_per_row, xs, sums) };
                y.copy_from_slice(&sums);
            }
            (Isa::Avx512, Kind::Q8_0) => {
                #[allow(unsafe_code)]
                // SAFETY: as for `rows16_q4_1` above.
                let sums = unsafe { rows16_q8_0(group, blocks_per_row, xs) };
                y.copy_from_slice(&sums);
            }
        }
    }
    out.len() / n * n
}

/// Blocks (work-items) interleaved by the vector paths: their eight chains of fused
/// multiply-adds cover the latency of one.
const BLOCKS: usize = 4;

/// Blocks ahead of the ones being added whose bytes the vector paths prefetch.
const AHEAD: usize = 8;

/// The 32 `x` values of block `b`.
#[inline(always)]
fn x_of(xs: &[f32], b: usize) -> &[f32; 32] {
    xs[b * 32..b * 32 + 32].try_into().unwrap_or(&[0.0; 32])
}

/// The `N` bytes at `bytes[at..at + N]`.
#[inline(always)]
fn array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes[at..at + N].try_into().unwrap_or([0; N])
}

/// The 8 bytes at `at` in the low half of a register.
#[inline(always)]
fn bytes8(bytes: &[u8], at: usize) -> __m128i {
    zerocopy::transmute!([u64::from_le_bytes(array(bytes, at)), 0])
}

/// The 16 bytes at `at` as a register.
#[inline(always)]
fn bytes16(bytes: &[u8], at: usize) -> __m128i {
    zerocopy::transmute!(array::<16>(bytes, at))
}

/// The 32 bytes at `at` as a register.
#[inline(always)]
fn bytes32(bytes: &[u8], at: usize) -> __m256i {
    zerocopy::transmute!(array::<32>(bytes, at))
}

/// Blocks `b..b + N` of a group of `BLOCK`-byte blocks, and the `x` values of each.
#[inline(always)]
fn blocks_at<'a, const BLOCK: usize, const N: usize>(
    group: &'a [u8],
    xs: &'a [f32],
    b: usize,
) -> ([&'a [u8; BLOCK]; N], [&'a [f32; 32]; N]) {
    let blocks = group.as_chunks::<BLOCK>().0;
    (std::array::from_fn(|i| &blocks[b + i]), std::array::from_fn(|i| x_of(xs, b + i)))
}

/// The vector path over registers of `$rows` `f32` lanes: `$q4_1` and `$q8_0` compute one
/// group of `$rows` rows in [`super::Layout::pack`]'s layout (a block: the `f16` scales of every
/// row, then its quant bytes column by column, `$rows` bytes a column), `N` blocks at a time by
/// `$q4_1_blocks` and `$q8_0_blocks`; `$tree` is the LDS tree over the 32 partial sums;
/// `$q4_1_quants` gives a Q4_1 column in the rows' lanes (its byte in each lane's low byte) and
/// `$nibbles` its low and high nibbles as `f32`. The intrinsics are those of the register width.
macro_rules! vector_path {
    (
        rows: $rows:literal, features: $features:literal, register: $f32s:ty,
        functions: ($q4_1:ident, $q8_0:ident, $q4_1_blocks:ident, $q8_0_blocks:ident, $tree:ident),
        scales: $scales:ident, column: $column:ident, q4_1_quants: $q4_1_quants:ident, convert_f16: $cvtph:ident,
        zero: $zero:ident, add: $add:ident, fmadd: $fmadd:ident, splat: $splat:ident,
        widen_i8: $widen_i8:ident, to_f32: $to_f32:ident, nibbles: $nibbles:ident $(,)?
    ) => {
        #[doc = concat!("The ", stringify!($rows), " rows of one group, Q4_1 (", stringify!($rows), " x 20 bytes a block).")]
        #[target_feature(enable = $features)]
        fn $q4_1(group: &[u8], blocks: usize, xs: &[f32], sums: &[f32]) -> [f32; $rows] {
            let mut partial = [$zero(); LANES];
            let whole = blocks / BLOCKS * BLOCKS;
            for b in (0..whole).step_by(BLOCKS) {
                prefetch(group, (b + AHEAD) * $rows * 20, BLOCKS * $rows * 20);
                $q4_1_blocks::<BLOCKS>(group, xs, sums, b, &mut partial);
            }
            for b in whole..blocks {
                $q4_1_blocks::<1>(group, xs, sums, b, &mut partial);
            }
            zerocopy::transmute!($tree(partial))
        }

        /// Blocks `b..b + N` of a Q4_1 group added into their work-items' partial sums.
        #[inline]
        #[target_feature(enable = $features)]
        fn $q4_1_blocks<const N: usize>(
            group: &[u8],
            xs: &[f32],
            sums: &[f32],
            b: usize,
            partial: &mut [$f32s; LANES],
        ) {
            let (blocks, x) = blocks_at::<{ $rows * 20 }, N>(group, xs, b);
            let (mut lo, mut hi) = ([$zero(); N], [$zero(); N]);
            for j in 0..16 {
                for i in 0..N {
                    let (l, h) = $nibbles($q4_1_quants(group, (b + i) * $rows * 20, j));
                    lo[i] = $fmadd(l, $splat(x[i][j]), lo[i]);
                    hi[i] = $fmadd(h, $splat(x[i][16 + j]), hi[i]);
                }
            }
            for i in 0..N {
                let d = $cvtph($scales(blocks[i], 0));
                let m = $cvtph($scales(blocks[i], 2 * $rows));
                let acc = &mut partial[(b + i) % LANES];
                *acc = $fmadd(m, $splat(sums[b + i]), $fmadd(d, $add(lo[i], hi[i]), *acc));
            }
        }

        #[doc = concat!("The ", stringify!($rows), " rows of one group, Q8_0 (", stringify!($rows), " x 34 bytes a block).")]
        #[target_feature(enable = $features)]
        fn $q8_0(group: &[u8], blocks: usize, xs: &[f32]) -> [f32; $rows] {
            let mut partial = [$zero(); LANES];
            let whole = blocks / BLOCKS * BLOCKS;
            for b in (0..whole).step_by(BLOCKS) {
                prefetch(group, (b + AHEAD) * $rows * 34, BLOCKS * $rows * 34);
                $q8_0_blocks::<BLOCKS>(group, xs, b, &mut partial);
            }
            for b in whole..blocks {
                $q8_0_blocks::<1>(group, xs, b, &mut partial);
            }
            zerocopy::transmute!($tree(partial))
        }

        /// Blocks `b..b + N` of a Q8_0 group added into their work-items' partial sums.
        #[inline]
        #[target_feature(enable = $features)]
        fn $q8_0_blocks<const N: usize>(group: &[u8], xs: &[f32], b: usize, partial: &mut [$f32s; LANES]) {
            let (blocks, x) = blocks_at::<{ $rows * 34 }, N>(group, xs, b);
            let (mut lo, mut hi) = ([$zero(); N], [$zero(); N]);
            for j in 0..16 {
                for i in 0..N {
                    let l = $to_f32($widen_i8($column(blocks[i], 2 * $rows + $rows * j)));
                    let h = $to_f32($widen_i8($column(blocks[i], 2 * $rows + $rows * (16 + j))));
                    lo[i] = $fmadd(l, $splat(x[i][j]), lo[i]);
                    hi[i] = $fmadd(h, $splat(x[i][16 + j]), hi[i]);
                }
            }
            for i in 0..N {
                let d = $cvtph($scales(blocks[i], 0));
                let acc = &mut partial[(b + i) % LANES];
                *acc = $fmadd(d, $add(lo[i], hi[i]), *acc);
            }
        }

        /// The LDS tree, a register of rows at once: for stride 16, ..., 1, slot t adds slot
        /// t + stride.
        #[inline]
        #[target_feature(enable = $features)]
        fn $tree(mut partial: [$f32s; LANES]) -> $f32s {
            let mut stride = LANES / 2;
            while stride > 0 {
                for t in 0..stride {
                    partial[t] = $add(partial[t], partial[t + stride]);
                }
                stride /= 2;
            }
            partial[0]
        }
    };
}

/// Quant byte `j` of each of the 16 rows of the Q4_1 block at byte `at` of `group`, in the low
/// byte of its row's lane: one unaligned load from the block's quants in
/// [`super::Layout::pack`]'s 16-row layout (four bytes of a row a lane, four columns at a time),
/// at an offset of `j % 4` bytes, so that no shuffle widens it. The lane's other bytes are
/// later columns (or, past a block's last column, the bytes after it, which the layout pads):
/// [`nibbles16`] reads only the low byte.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn quads16(group: &[u8], at: usize, j: usize) -> __m512i {
    zerocopy::transmute!(array::<64>(group, at + 64 + 64 * (j / 4) + j % 4))
}

/// Quant byte `j` of each of the 8 rows of the Q4_1 block at byte `at` of `group`, widened to
/// `u32` lanes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn column8(group: &[u8], at: usize, j: usize) -> __m256i {
    _mm256_cvtepu8_epi32(bytes8(group, at + 32 + 8 * j))
}

/// The low and high nibbles of 16 bytes widened to `i32` lanes, as `f32`: each by one `vpermps`
/// from the table of `0.0..=15.0`, whose index is the low four bits of the lane.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn nibbles16(bytes: __m512i) -> (__m512, __m512) {
    let table = _mm512_setr_ps(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0);
    (_mm512_permutexvar_ps(bytes, table), _mm512_permutexvar_ps(_mm512_srli_epi32::<4>(bytes), table))
}

/// The low and high nibbles of 8 bytes widened to `i32` lanes, as `f32` (mask or shift, then
/// convert).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn nibbles8(bytes: __m256i) -> (__m256, __m256) {
    let low = _mm256_and_si256(bytes, _mm256_set1_epi32(15));
    (_mm256_cvtepi32_ps(low), _mm256_cvtepi32_ps(_mm256_srli_epi32::<4>(bytes)))
}

vector_path! {
    rows: 16, features: "avx512f,avx2,fma,f16c", register: __m512,
    functions: (rows16_q4_1, rows16_q8_0, blocks16_q4_1, blocks16_q8_0, tree16),
    scales: bytes32, column: bytes16, q4_1_quants: quads16, convert_f16: _mm512_cvtph_ps,
    zero: _mm512_setzero_ps, add: _mm512_add_ps, fmadd: _mm512_fmadd_ps, splat: _mm512_set1_ps,
    widen_i8: _mm512_cvtepi8_epi32, to_f32: _mm512_cvtepi32_ps, nibbles: nibbles16,
}

vector_path! {
    rows: 8, features: "avx2,fma,f16c", register: __m256,
    functions: (rows8_q4_1, rows8_q8_0, blocks8_q4_1, blocks8_q8_0, tree8),
    scales: bytes16, column: bytes8, q4_1_quants: column8, convert_f16: _mm256_cvtph_ps,
    zero: _mm256_setzero_ps, add: _mm256_add_ps, fmadd: _mm256_fmadd_ps, splat: _mm256_set1_ps,
    widen_i8: _mm256_cvtepi8_epi32, to_f32: _mm256_cvtepi32_ps, nibbles: nibbles8,
}
