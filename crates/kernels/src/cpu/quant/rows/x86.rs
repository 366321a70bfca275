//! The vector paths of [`super`] on x86-64: the rows of a matrix in the `f32` lanes of AVX2
//! (eight rows) or AVX-512 (sixteen rows) registers, one register per work-item partial sum.
//!
//! A group of rows is read block by block: the block's scales of every row are converted by
//! `vcvtph2ps` (exact for every binary16 value, as [`super::super::f16_to_f32`] is), its bytes are
//! transposed so that one register holds element `j` of every row, and each element is
//! dequantised, multiplied and added exactly as the kernel's work-item does it, one rounded
//! operation at a time. Two consecutive blocks (two different work-items' partial sums) are
//! interleaved so that their chains of adds overlap.

use std::arch::x86_64::{
    __m128i, __m256, __m512, _mm_unpackhi_epi8, _mm_unpackhi_epi16, _mm_unpackhi_epi32, _mm_unpackhi_epi64,
    _mm_unpacklo_epi8, _mm_unpacklo_epi16, _mm_unpacklo_epi32, _mm_unpacklo_epi64, _mm256_add_ps, _mm256_and_si256,
    _mm256_castsi256_si128, _mm256_cvtepi8_epi32, _mm256_cvtepi32_ps, _mm256_cvtepu8_epi32, _mm256_cvtph_ps,
    _mm256_extracti128_si256, _mm256_mul_ps, _mm256_packus_epi32, _mm256_permute4x64_epi64, _mm256_set1_epi32,
    _mm256_set1_ps, _mm256_setzero_ps, _mm256_srli_epi32, _mm512_add_ps, _mm512_and_si512, _mm512_cvtepi8_epi32,
    _mm512_cvtepi32_epi16, _mm512_cvtepi32_ps, _mm512_cvtepu8_epi32, _mm512_cvtph_ps, _mm512_mul_ps, _mm512_set1_epi32,
    _mm512_set1_ps, _mm512_setzero_ps, _mm512_srli_epi32,
};

use super::{Kind, LANES};
use crate::cpu::simd::Isa;

/// Rows per register.
const fn rows_per_register(isa: Isa) -> usize {
    match isa {
        Isa::Avx2 => 8,
        Isa::Avx512 => 16,
    }
}

/// Computes the leading whole groups of rows of `out` with `isa` (which this machine must have;
/// without it nothing is computed) and returns how many rows it computed.
pub(super) fn rows(isa: Isa, kind: Kind, w: &[u8], xs: &[f32], blocks_per_row: usize, out: &mut [f32]) -> usize {
    if !isa.available() {
        return 0;
    }
    let n = rows_per_register(isa);
    let row_bytes = blocks_per_row * kind.block_bytes();
    let group = Group { kind, row_bytes, blocks_per_row };
    for (g, y) in out.chunks_exact_mut(n).enumerate() {
        let rows = &w[g * n * row_bytes..(g + 1) * n * row_bytes];
        match isa {
            Isa::Avx2 => {
                #[allow(unsafe_code)]
                // SAFETY: `rows8` requires only the CPU features it is compiled for, AVX2 and F16C,
                // and `isa.available()` detected both on this machine above.
                let sums = unsafe { rows8(group, rows, xs) };
                y.copy_from_slice(&sums);
            }
            Isa::Avx512 => {
                #[allow(unsafe_code)]
                // SAFETY: `rows16` requires only the CPU features it is compiled for, AVX-512F and
                // F16C, and `isa.available()` detected both (and AVX2) on this machine above.
                let sums = unsafe { rows16(group, rows, xs) };
                y.copy_from_slice(&sums);
            }
        }
    }
    out.len() / n * n
}

/// The shape of the matrix a group of rows comes from.
#[derive(Clone, Copy, Debug)]
struct Group {
    kind: Kind,
    row_bytes: usize,
    blocks_per_row: usize,
}

impl Group {
    /// Byte `at` of block `b` of row `r`, as an index into the group's bytes.
    const fn at(self, r: usize, b: usize, at: usize) -> usize {
        r * self.row_bytes + b * self.kind.block_bytes() + at
    }

    /// The work-item order over the blocks of a row: blocks in pairs `(b, b + 1)` (two lanes)
    /// while two remain, then the last one alone.
    fn pairs(self) -> impl Iterator<Item = (usize, bool)> {
        let n = self.blocks_per_row;
        (0..n).step_by(2).map(move |b| (b, b + 1 < n))
    }
}

/// The 32 `x` values of block `b`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn x_of(xs: &[f32], b: usize) -> &[f32; 32] {
    xs[b * 32..b * 32 + 32].try_into().unwrap_or(&[0.0; 32])
}

/// The little-endian `u32` at `bytes[at..at + 4]`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The 16 bytes at `bytes[at..at + 16]` as a register.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn bytes16(bytes: &[u8], at: usize) -> __m128i {
    let b: [u8; 16] = bytes[at..at + 16].try_into().unwrap_or([0; 16]);
    zerocopy::transmute!(b)
}

/// Transposes 16 rows of 16 bytes: afterwards register `j` holds byte `j` of rows 0..16.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn transpose16(r: &[__m128i; 16]) -> [__m128i; 16] {
    // a[p], a[p + 8]: rows 2p, 2p + 1 interleaved, bytes 0..8 and 8..16.
    let mut a = *r;
    for p in 0..8 {
        a[p] = _mm_unpacklo_epi8(r[2 * p], r[2 * p + 1]);
        a[p + 8] = _mm_unpackhi_epi8(r[2 * p], r[2 * p + 1]);
    }
    // b[q + 4 g]: rows 4q..4q + 4 of bytes 4g..4g + 4.
    let mut b = a;
    for q in 0..4 {
        for h in 0..2 {
            let (x, y) = (a[2 * q + 8 * h], a[2 * q + 1 + 8 * h]);
            b[q + 4 * (2 * h)] = _mm_unpacklo_epi16(x, y);
            b[q + 4 * (2 * h + 1)] = _mm_unpackhi_epi16(x, y);
        }
    }
    // c[s + 2 e]: rows 8s..8s + 8 of bytes 2e, 2e + 1.
    let mut c = b;
    for s in 0..2 {
        for g in 0..4 {
            let (x, y) = (b[2 * s + 4 * g], b[2 * s + 1 + 4 * g]);
            c[s + 2 * (2 * g)] = _mm_unpacklo_epi32(x, y);
            c[s + 2 * (2 * g + 1)] = _mm_unpackhi_epi32(x, y);
        }
    }
    // Byte j of rows 0..16.
    let mut d = c;
    for e in 0..8 {
        d[2 * e] = _mm_unpacklo_epi64(c[2 * e], c[2 * e + 1]);
        d[2 * e + 1] = _mm_unpackhi_epi64(c[2 * e], c[2 * e + 1]);
    }
    d
}

/// Transposes 8 rows of 16 bytes: byte `j` of rows 0..8 in the low 64 bits of register `j`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn transpose8(r: &[__m128i; 8]) -> [__m128i; 16] {
    let mut a = *r;
    for p in 0..4 {
        a[p] = _mm_unpacklo_epi8(r[2 * p], r[2 * p + 1]);
        a[p + 4] = _mm_unpackhi_epi8(r[2 * p], r[2 * p + 1]);
    }
    // b[q + 2 g]: rows 4q..4q + 4 of bytes 4g..4g + 4.
    let mut b = a;
    for q in 0..2 {
        for h in 0..2 {
            let (x, y) = (a[2 * q + 4 * h], a[2 * q + 1 + 4 * h]);
            b[q + 2 * (2 * h)] = _mm_unpacklo_epi16(x, y);
            b[q + 2 * (2 * h + 1)] = _mm_unpackhi_epi16(x, y);
        }
    }
    // Byte j of rows 0..8: c[e] holds bytes 2e (low half) and 2e + 1 (high half).
    let mut d = [a[0]; 16];
    for g in 0..4 {
        let (lo, hi) = (_mm_unpacklo_epi32(b[2 * g], b[2 * g + 1]), _mm_unpackhi_epi32(b[2 * g], b[2 * g + 1]));
        d[4 * g] = lo;
        d[4 * g + 1] = _mm_unpackhi_epi64(lo, lo);
        d[4 * g + 2] = hi;
        d[4 * g + 3] = _mm_unpackhi_epi64(hi, hi);
    }
    d
}

/// Block `b`'s 16 bytes from byte `at` of each of `N` rows.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn block_bytes<const N: usize>(group: Group, rows: &[u8], b: usize, at: usize) -> [__m128i; N] {
    let mut r = [zerocopy::transmute!([0u8; 16]); N];
    for (i, reg) in r.iter_mut().enumerate() {
        *reg = bytes16(rows, group.at(i, b, at));
    }
    r
}

/// Block `b`'s first word of each of `N` rows: d in its low half, (for Q4_1) m in its high half.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn block_words<const N: usize>(group: Group, rows: &[u8], b: usize) -> [u32; N] {
    let mut w = [0u32; N];
    for (i, word_i) in w.iter_mut().enumerate() {
        *word_i = word(rows, group.at(i, b, 0));
    }
    w
}

/// Eight rows (`rows` holds exactly eight rows of the matrix).
#[target_feature(enable = "avx2,f16c")]
fn rows8(group: Group, rows: &[u8], xs: &[f32]) -> [f32; 8] {
    let mut partial = [_mm256_setzero_ps(); LANES];
    for (b, pair) in group.pairs() {
        let lane = b % LANES;
        if pair {
            let [p0, p1] = blocks8(group, rows, xs, [b, b + 1], [partial[lane], partial[(lane + 1) % LANES]]);
            partial[lane] = p0;
            partial[(lane + 1) % LANES] = p1;
        } else {
            let [p0] = blocks8(group, rows, xs, [b], [partial[lane]]);
            partial[lane] = p0;
        }
    }
    // The LDS tree, eight rows at once: for stride 16, ..., 1, slot t adds slot t + stride.
    let mut stride = LANES / 2;
    while stride > 0 {
        for t in 0..stride {
            partial[t] = _mm256_add_ps(partial[t], partial[t + stride]);
        }
        stride /= 2;
    }
    zerocopy::transmute!(partial[0])
}

/// Adds blocks `blocks` of the eight rows into `acc` (one partial sum per block).
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn blocks8<const N: usize>(
    group: Group,
    rows: &[u8],
    xs: &[f32],
    blocks: [usize; N],
    mut acc: [__m256; N],
) -> [__m256; N] {
    // The block's first word of every row: d (low half) and, for Q4_1, m (high half).
    let mut scales = [(_mm256_setzero_ps(), _mm256_setzero_ps()); N];
    for (scale, &b) in scales.iter_mut().zip(&blocks) {
        let v = zerocopy::transmute!(block_words::<8>(group, rows, b));
        let (d, m) = (_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_srli_epi32::<16>(v));
        // Per 128-bit lane [d0..4, m0..4 | d4..8, m4..8] as 16-bit values; then d0..8, m0..8.
        let ordered = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(d, m));
        *scale =
            (_mm256_cvtph_ps(_mm256_castsi256_si128(ordered)), _mm256_cvtph_ps(_mm256_extracti128_si256::<1>(ordered)));
    }
    let x: [&[f32; 32]; N] = std::array::from_fn(|i| x_of(xs, blocks[i]));
    match group.kind {
        Kind::Q4_1 => {
            let columns: [[__m128i; 16]; N] =
                std::array::from_fn(|i| transpose8(&block_bytes::<8>(group, rows, blocks[i], 4)));
            let low = _mm256_set1_epi32(15);
            for j in 0..16 {
                for i in 0..N {
                    let q = _mm256_and_si256(_mm256_cvtepu8_epi32(columns[i][j]), low);
                    let w = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), scales[i].0), scales[i].1);
                    acc[i] = _mm256_add_ps(acc[i], _mm256_mul_ps(w, _mm256_set1_ps(x[i][j])));
                }
            }
            for j in 0..16 {
                for i in 0..N {
                    let q = _mm256_srli_epi32::<4>(_mm256_cvtepu8_epi32(columns[i][j]));
                    let w = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), scales[i].0), scales[i].1);
                    acc[i] = _mm256_add_ps(acc[i], _mm256_mul_ps(w, _mm256_set1_ps(x[i][16 + j])));
                }
            }
        }
        Kind::Q8_0 => {
            for half in [0, 16] {
                let columns: [[__m128i; 16]; N] =
                    std::array::from_fn(|i| transpose8(&block_bytes::<8>(group, rows, blocks[i], 2 + half)));
                for j in 0..16 {
                    for i in 0..N {
                        let q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(columns[i][j]));
                        let w = _mm256_mul_ps(q, scales[i].0);
                        acc[i] = _mm256_add_ps(acc[i], _mm256_mul_ps(w, _mm256_set1_ps(x[i][half + j])));
                    }
                }
            }
        }
    }
    acc
}

/// Sixteen rows (`rows` holds exactly sixteen rows of the matrix).
#[target_feature(enable = "avx512f,avx2,f16c")]
fn rows16(group: Group, rows: &[u8], xs: &[f32]) -> [f32; 16] {
    let mut partial = [_mm512_setzero_ps(); LANES];
    for (b, pair) in group.pairs() {
        let lane = b % LANES;
        if pair {
            let [p0, p1] = blocks16(group, rows, xs, [b, b + 1], [partial[lane], partial[(lane + 1) % LANES]]);
            partial[lane] = p0;
            partial[(lane + 1) % LANES] = p1;
        } else {
            let [p0] = blocks16(group, rows, xs, [b], [partial[lane]]);
            partial[lane] = p0;
        }
    }
    let mut stride = LANES / 2;
    while stride > 0 {
        for t in 0..stride {
            partial[t] = _mm512_add_ps(partial[t], partial[t + stride]);
        }
        stride /= 2;
    }
    zerocopy::transmute!(partial[0])
}

/// Adds blocks `blocks` of the sixteen rows into `acc` (one partial sum per block).
#[inline]
#[target_feature(enable = "avx512f,avx2,f16c")]
fn blocks16<const N: usize>(
    group: Group,
    rows: &[u8],
    xs: &[f32],
    blocks: [usize; N],
    mut acc: [__m512; N],
) -> [__m512; N] {
    let mut scales = [(_mm512_setzero_ps(), _mm512_setzero_ps()); N];
    for (scale, &b) in scales.iter_mut().zip(&blocks) {
        let v = zerocopy::transmute!(block_words::<16>(group, rows, b));
        // Truncating each word to its low half gives d, to its high half m.
        let (d, m) = (_mm512_cvtepi32_epi16(v), _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(v)));
        *scale = (_mm512_cvtph_ps(d), _mm512_cvtph_ps(m));
    }
    let x: [&[f32; 32]; N] = std::array::from_fn(|i| x_of(xs, blocks[i]));
    match group.kind {
        Kind::Q4_1 => {
            let columns: [[__m128i; 16]; N] =
                std::array::from_fn(|i| transpose16(&block_bytes::<16>(group, rows, blocks[i], 4)));
            let low = _mm512_set1_epi32(15);
            for j in 0..16 {
                for i in 0..N {
                    let q = _mm512_and_si512(_mm512_cvtepu8_epi32(columns[i][j]), low);
                    let w = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(q), scales[i].0), scales[i].1);
                    acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(w, _mm512_set1_ps(x[i][j])));
                }
            }
            for j in 0..16 {
                for i in 0..N {
                    let q = _mm512_srli_epi32::<4>(_mm512_cvtepu8_epi32(columns[i][j]));
                    let w = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(q), scales[i].0), scales[i].1);
                    acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(w, _mm512_set1_ps(x[i][16 + j])));
                }
            }
        }
        Kind::Q8_0 => {
            for half in [0, 16] {
                let columns: [[__m128i; 16]; N] =
                    std::array::from_fn(|i| transpose16(&block_bytes::<16>(group, rows, blocks[i], 2 + half)));
                for j in 0..16 {
                    for i in 0..N {
                        let q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(columns[i][j]));
                        let w = _mm512_mul_ps(q, scales[i].0);
                        acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(w, _mm512_set1_ps(x[i][half + j])));
                    }
                }
            }
        }
    }
    acc
}
