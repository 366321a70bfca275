//! The vector paths of [`super`] on x86-64: the rows of a matrix in the `f32` lanes of AVX2
//! (eight rows) or AVX-512 (sixteen rows) registers, one register per work-item partial sum,
//! over the matrix in [`super::Layout::pack`]'s layout.
//!
//! A group of rows is read block by block: the block's scales of every row are converted by
//! `vcvtph2ps` (exact for every binary16 value, as [`super::super::f16_to_f32`] is), and each
//! column (byte `j` of every row) is widened, dequantised, multiplied and added exactly as the
//! kernel's work-item does it, one rounded operation at a time, with one exception that gives
//! the same bits: Q4_1's `q * d + m` is one fused multiply-add, because `q * d` is exact in
//! `f32` (`q < 16` has 4 significant bits and a binary16 `d` 11, and their product lies far
//! inside `f32`'s range), so rounding `q * d + m` once is rounding the kernel's `m` added to
//! its exact product, infinities, NaNs and signed zeros included. Two consecutive blocks (two
//! different work-items' partial sums) are interleaved so that their chains of adds overlap.

// A column `j` indexes the packed bytes and the `x` of two blocks at once: a range loop says so.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::{
    __m128i, __m256, __m256i, __m512, _mm256_add_ps, _mm256_and_si256, _mm256_cvtepi8_epi32, _mm256_cvtepi32_ps,
    _mm256_cvtepu8_epi32, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_mul_ps, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_setzero_ps, _mm256_srli_epi32, _mm512_add_ps, _mm512_and_si512, _mm512_cvtepi8_epi32, _mm512_cvtepi32_ps,
    _mm512_cvtepu8_epi32, _mm512_cvtph_ps, _mm512_fmadd_ps, _mm512_mul_ps, _mm512_set1_epi32, _mm512_set1_ps,
    _mm512_setzero_ps, _mm512_srli_epi32,
};

use super::{Kind, LANES};
use crate::cpu::simd::Isa;

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
pub(super) fn rows(isa: Isa, kind: Kind, packed: &[u8], xs: &[f32], blocks_per_row: usize, out: &mut [f32]) -> usize {
    if !isa.available() {
        return 0;
    }
    let n = rows_per_register(isa);
    let group_bytes = n * blocks_per_row * kind.block_bytes();
    for (y, group) in out.chunks_exact_mut(n).zip(packed.chunks_exact(group_bytes)) {
        match (isa, kind) {
            (Isa::Avx2, Kind::Q4_1) => {
                #[allow(unsafe_code)]
                // SAFETY: `rows8_q4_1` requires only the CPU features it is compiled for (AVX2, FMA
                // and F16C), and `isa.available()` detected them on this machine above.
                let sums = unsafe { rows8_q4_1(group, xs) };
                y.copy_from_slice(&sums);
            }
            (Isa::Avx2, Kind::Q8_0) => {
                #[allow(unsafe_code)]
                // SAFETY: as for `rows8_q4_1` above.
                let sums = unsafe { rows8_q8_0(group, xs) };
                y.copy_from_slice(&sums);
            }
            (Isa::Avx512, Kind::Q4_1) => {
                #[allow(unsafe_code)]
                // SAFETY: `rows16_q4_1` requires only the CPU features it is compiled for
                // (AVX-512F, AVX2, FMA and F16C), and `isa.available()` detected them above.
                let sums = unsafe { rows16_q4_1(group, xs) };
                y.copy_from_slice(&sums);
            }
            (Isa::Avx512, Kind::Q8_0) => {
                #[allow(unsafe_code)]
                // SAFETY: as for `rows16_q4_1` above.
                let sums = unsafe { rows16_q8_0(group, xs) };
                y.copy_from_slice(&sums);
            }
        }
    }
    out.len() / n * n
}

/// The work-item order over the blocks of a row: blocks in pairs `(b, b + 1)` (two lanes)
/// while two remain, then the last one alone.
fn pairs(blocks: usize) -> impl Iterator<Item = (usize, bool)> {
    (0..blocks).step_by(2).map(move |b| (b, b + 1 < blocks))
}

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

/// The vector path over registers of `$rows` `f32` lanes: `$q4_1` and `$q8_0` compute one
/// group of `$rows` rows in [`super::Layout::pack`]'s layout (a block: the `f16` scales of every
/// row, then its quant bytes column by column, `$rows` bytes a column); `$tree` is the LDS tree
/// over the 32 partial sums. The intrinsics are those of the register width.
macro_rules! vector_path {
    (
        rows: $rows:literal, features: $features:literal, register: $f32s:ty,
        functions: ($q4_1:ident, $q8_0:ident, $tree:ident),
        scales: $scales:ident, column: $column:ident, convert_f16: $cvtph:ident,
        zero: $zero:ident, add: $add:ident, mul: $mul:ident, fmadd: $fmadd:ident, splat: $splat:ident,
        widen_u8: $widen_u8:ident, widen_i8: $widen_i8:ident, to_f32: $to_f32:ident,
        splat_i32: $splat_i32:ident, and: $and:ident, shift_right: $srli:ident $(,)?
    ) => {
        #[doc = concat!("The ", stringify!($rows), " rows of one group, Q4_1 (", stringify!($rows), " x 20 bytes a block).")]
        #[target_feature(enable = $features)]
        fn $q4_1(group: &[u8], xs: &[f32]) -> [f32; $rows] {
            const BLOCK: usize = $rows * 20;
            let mut partial = [$zero(); LANES];
            let low = $splat_i32(15);
            for (b, pair) in pairs(group.len() / BLOCK) {
                let n = if pair { 2 } else { 1 };
                let mut acc = [partial[b % LANES], partial[(b + 1) % LANES]];
                let mut blocks = [&[0u8; BLOCK]; 2];
                let mut d = [$zero(); 2];
                let mut m = [$zero(); 2];
                let mut x = [&[0.0f32; 32]; 2];
                for i in 0..n {
                    blocks[i] = group[(b + i) * BLOCK..(b + i + 1) * BLOCK].try_into().unwrap_or(&[0; BLOCK]);
                    d[i] = $cvtph($scales(blocks[i], 0));
                    m[i] = $cvtph($scales(blocks[i], 2 * $rows));
                    x[i] = x_of(xs, b + i);
                }
                for j in 0..16 {
                    for i in 0..n {
                        let q = $and($widen_u8($column(blocks[i], 4 * $rows + $rows * j)), low);
                        let w = $fmadd($to_f32(q), d[i], m[i]);
                        acc[i] = $add(acc[i], $mul(w, $splat(x[i][j])));
                    }
                }
                for j in 0..16 {
                    for i in 0..n {
                        let q = $srli::<4>($widen_u8($column(blocks[i], 4 * $rows + $rows * j)));
                        let w = $fmadd($to_f32(q), d[i], m[i]);
                        acc[i] = $add(acc[i], $mul(w, $splat(x[i][16 + j])));
                    }
                }
                for i in 0..n {
                    partial[(b + i) % LANES] = acc[i];
                }
            }
            zerocopy::transmute!($tree(partial))
        }

        #[doc = concat!("The ", stringify!($rows), " rows of one group, Q8_0 (", stringify!($rows), " x 34 bytes a block).")]
        #[target_feature(enable = $features)]
        fn $q8_0(group: &[u8], xs: &[f32]) -> [f32; $rows] {
            const BLOCK: usize = $rows * 34;
            let mut partial = [$zero(); LANES];
            for (b, pair) in pairs(group.len() / BLOCK) {
                let n = if pair { 2 } else { 1 };
                let mut acc = [partial[b % LANES], partial[(b + 1) % LANES]];
                let mut blocks = [&[0u8; BLOCK]; 2];
                let mut d = [$zero(); 2];
                let mut x = [&[0.0f32; 32]; 2];
                for i in 0..n {
                    blocks[i] = group[(b + i) * BLOCK..(b + i + 1) * BLOCK].try_into().unwrap_or(&[0; BLOCK]);
                    d[i] = $cvtph($scales(blocks[i], 0));
                    x[i] = x_of(xs, b + i);
                }
                for j in 0..32 {
                    for i in 0..n {
                        let q = $to_f32($widen_i8($column(blocks[i], 2 * $rows + $rows * j)));
                        let w = $mul(q, d[i]);
                        acc[i] = $add(acc[i], $mul(w, $splat(x[i][j])));
                    }
                }
                for i in 0..n {
                    partial[(b + i) % LANES] = acc[i];
                }
            }
            zerocopy::transmute!($tree(partial))
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

vector_path! {
    rows: 16, features: "avx512f,avx2,fma,f16c", register: __m512,
    functions: (rows16_q4_1, rows16_q8_0, tree16),
    scales: bytes32, column: bytes16, convert_f16: _mm512_cvtph_ps,
    zero: _mm512_setzero_ps, add: _mm512_add_ps, mul: _mm512_mul_ps, fmadd: _mm512_fmadd_ps, splat: _mm512_set1_ps,
    widen_u8: _mm512_cvtepu8_epi32, widen_i8: _mm512_cvtepi8_epi32, to_f32: _mm512_cvtepi32_ps,
    splat_i32: _mm512_set1_epi32, and: _mm512_and_si512, shift_right: _mm512_srli_epi32,
}

vector_path! {
    rows: 8, features: "avx2,fma,f16c", register: __m256,
    functions: (rows8_q4_1, rows8_q8_0, tree8),
    scales: bytes16, column: bytes8, convert_f16: _mm256_cvtph_ps,
    zero: _mm256_setzero_ps, add: _mm256_add_ps, mul: _mm256_mul_ps, fmadd: _mm256_fmadd_ps, splat: _mm256_set1_ps,
    widen_u8: _mm256_cvtepu8_epi32, widen_i8: _mm256_cvtepi8_epi32, to_f32: _mm256_cvtepi32_ps,
    splat_i32: _mm256_set1_epi32, and: _mm256_and_si256, shift_right: _mm256_srli_epi32,
}
