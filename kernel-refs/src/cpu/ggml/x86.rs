//! The AVX-512 path of [`super`]'s products for the formats it covers ([`covers`]): sixteen rows
//! at once, one `f32` lane each, over the matrix [packed](pack) so that one load gives one byte
//! of every row of a group, and each value computed lane by lane by exactly the operations of
//! [`super::formats`] (the same integer unpacking, the same `f32` multiplies and subtractions,
//! each rounded on its own), then added as a work-item adds it: `acc = acc + w * x`, a multiply
//! and an add, each rounded (no fused multiply-add, as in the kernels' generic products).
//!
//! A quant of four or five bits is converted to its `f32` (with Q4_0's and Q5_0's offsets) by
//! one permute from a table of the exact small integers (`vpermps`, `vpermt2ps`), its fifth bit
//! put in the index by a bitwise select; Q6_K's quant as the sum of its low four bits less 32 and
//! 16 times its high two, each converted by one permute (an exact sum of small integers). A block's `f16` fields are converted by `vcvtph2ps`, exact for every binary16 value as
//! [`crate::cpu::f16_to_f32`] is (a NaN comes back quiet with its payload); integers below 2^24
//! convert to `f32` exactly by `vcvtdq2ps`, as `f32::from` does.

// A column `k` indexes the packed bytes of several rows at once: a range loop says so.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::{
    __m512, __m512i, _mm512_add_ps, _mm512_and_si512, _mm512_cvtepi8_epi32, _mm512_cvtepi32_epi16, _mm512_cvtepi32_ps,
    _mm512_cvtepu8_epi32, _mm512_cvtph_ps, _mm512_mul_ps, _mm512_or_si512, _mm512_permutex2var_ps,
    _mm512_permutexvar_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setr_ps, _mm512_setzero_ps, _mm512_slli_epi32,
    _mm512_sllv_epi32, _mm512_srli_epi32, _mm512_srlv_epi32, _mm512_sub_ps, _mm512_ternarylogic_epi32,
};

use rayon::prelude::*;

use super::BlockFormat;
use super::formats::{Format, Q4_0, Q4K, Q5_0, Q5_1, Q5K, Q6K};
use crate::cpu::simd::{Isa, prefetch};

/// Rows of a group: the `f32` lanes of a 512-bit register.
pub(super) const ROWS: usize = 16;

/// Work-items of a product's work-group.
const LANES: usize = super::LANES;

/// Whether this path computes `format` (the others take [`super`]'s path).
pub(super) fn covers(format: BlockFormat) -> bool {
    matches!(
        format,
        BlockFormat::Q4_0
            | BlockFormat::Q5_0
            | BlockFormat::Q5_1
            | BlockFormat::Q4K
            | BlockFormat::Q5K
            | BlockFormat::Q6K
    )
}

/// Whether this machine has the path.
pub(super) fn available() -> bool {
    Isa::Avx512.available()
}

/// The key under which the address space keeps the packed form of a matrix of `format` with
/// `row_bytes` bytes a row (distinct from every key of the quantised products, which keep bit 63
/// clear).
pub(super) fn key(format: BlockFormat, row_bytes: usize) -> u64 {
    let row_bytes = u64::try_from(row_bytes).unwrap_or(u64::MAX) & ((1 << 40) - 1);
    (1 << 63) | (u64::from(format.ggml_id()) << 40) | row_bytes
}

/// The matrix `w` (whole rows of `row_bytes`, blocks of `block_bytes`) laid out for this path:
/// rows in groups of [`ROWS`], each group keeping its place and its bytes, ordered block by
/// block, and within a block byte `k` of every row of the group (row order), for each `k`. Rows
/// after the last whole group are left as they are. Groups are laid out on the machine's cores.
pub(super) fn pack(w: &[u8], row_bytes: usize, block_bytes: usize) -> Vec<u8> {
    let mut packed = w.to_vec();
    if row_bytes == 0 || block_bytes == 0 {
        return packed;
    }
    let groups = w.par_chunks_exact(ROWS * row_bytes).zip(packed.par_chunks_exact_mut(ROWS * row_bytes));
    groups.for_each(|(from, to)| {
        for (b, to) in to.chunks_exact_mut(ROWS * block_bytes).enumerate() {
            for r in 0..ROWS {
                let block = &from[r * row_bytes + b * block_bytes..][..block_bytes];
                for (k, &byte) in block.iter().enumerate() {
                    to[k * ROWS + r] = byte;
                }
            }
        }
    });
    packed
}

/// The sums of the 16 rows of one packed group (the first `ROWS * row_bytes` bytes of `group`;
/// the bytes after it are only prefetched) times `xs`,
/// each as its work-group computes it, into `out` (16 values). `format` is one [`covers`] names
/// and this machine has the path ([`available`]); nothing is computed otherwise.
pub(super) fn group(format: BlockFormat, group: &[u8], xs: &[f32], out: &mut [f32; ROWS]) {
    if !available() {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: `sums` requires only the CPU features it is compiled for (AVX-512F, AVX2, FMA and
    // F16C), and `available()` detected them on this machine above.
    let sums = unsafe {
        match format {
            BlockFormat::Q4_0 => sums::<Q4_0>(group, xs),
            BlockFormat::Q5_0 => sums::<Q5_0>(group, xs),
            BlockFormat::Q5_1 => sums::<Q5_1>(group, xs),
            BlockFormat::Q4K => sums::<Q4K>(group, xs),
            BlockFormat::Q5K => sums::<Q5K>(group, xs),
            BlockFormat::Q6K => sums::<Q6K>(group, xs),
            _ => return,
        }
    };
    *out = zerocopy::transmute!(sums);
}

/// A format's values lane by lane: chunk `c` of a packed block (`ROWS * BYTES` bytes), value by
/// value, each handed to `add` with its index `j` (`0..32`, ascending).
trait Lanes: Format {
    /// Calls `add(j, w)` for `j = 0..32` in order, `w` value `j` of chunk `c` of each row.
    fn chunk(block: &[u8], c: usize, add: &mut impl FnMut(usize, __m512));
}

/// Byte `k` of every row of a packed block, widened to `u32` lanes.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn column(block: &[u8], k: usize) -> __m512i {
    let bytes: [u8; ROWS] = block[k * ROWS..k * ROWS + ROWS].try_into().unwrap_or([0; ROWS]);
    _mm512_cvtepu8_epi32(zerocopy::transmute!(bytes))
}

/// Byte `k` of every row, as a signed byte widened to `i32` lanes.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn signed_column(block: &[u8], k: usize) -> __m512i {
    let bytes: [u8; ROWS] = block[k * ROWS..k * ROWS + ROWS].try_into().unwrap_or([0; ROWS]);
    _mm512_cvtepi8_epi32(zerocopy::transmute!(bytes))
}

/// The little-endian `f16` at bytes `k, k + 1` of every row, as `f32`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn half(block: &[u8], k: usize) -> __m512 {
    let bits = _mm512_or_si512(column(block, k), _mm512_slli_epi32::<8>(column(block, k + 1)));
    _mm512_cvtph_ps(_mm512_cvtepi32_epi16(bits))
}

/// The little-endian `u32` at bytes `k..k + 4` of every row.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn word(block: &[u8], k: usize) -> __m512i {
    let low = _mm512_or_si512(column(block, k), _mm512_slli_epi32::<8>(column(block, k + 1)));
    let high =
        _mm512_or_si512(_mm512_slli_epi32::<16>(column(block, k + 2)), _mm512_slli_epi32::<24>(column(block, k + 3)));
    _mm512_or_si512(low, high)
}

/// `v` as `f32`, exactly (`|v| < 2^24`).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn float(v: __m512i) -> __m512 {
    _mm512_cvtepi32_ps(v)
}

/// The floats `first, first + 1, ..., first + 31` (exact: small integers) as two registers, the
/// table of [`lookup16`] (the first) and [`lookup32`] (both).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn table(first: f32) -> (__m512, __m512) {
    let low = _mm512_add_ps(
        _mm512_set1_ps(first),
        _mm512_setr_ps(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0),
    );
    (low, _mm512_add_ps(low, _mm512_set1_ps(16.0)))
}

/// Entry `i & 15` of `table` in each lane (`vpermps`: only the low four bits of `i` count):
/// `first + (i & 15)` as `f32` for a [`table`] of `first`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn lookup16(i: __m512i, table: (__m512, __m512)) -> __m512 {
    _mm512_permutexvar_ps(i, table.0)
}

/// Entry `(i & 15) + 16 * bit 4 of high` of the 32-entry `table` in each lane: bits 0-3 of `i`
/// and bit 4 of `high` make the index (one `vpternlogd` select, then `vpermt2ps`, which reads
/// only the low five bits).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn lookup32(i: __m512i, high: __m512i, table: (__m512, __m512)) -> __m512 {
    // Bit by bit `bit 4 ? high : i` (truth table 0xD8: c ? b : a).
    let index = _mm512_ternarylogic_epi32::<0xD8>(i, high, _mm512_set1_epi32(16));
    _mm512_permutex2var_ps(table.0, index, table.1)
}

/// `v` with its bit `bit` moved to bit 4 (the other bits moved alike).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn bit_to_4(v: __m512i, bit: usize) -> __m512i {
    if bit >= 4 {
        _mm512_srlv_epi32(v, _mm512_set1_epi32(i32::try_from(bit - 4).unwrap_or(0)))
    } else {
        _mm512_sllv_epi32(v, _mm512_set1_epi32(i32::try_from(4 - bit).unwrap_or(0)))
    }
}

/// The byte holding the 4-bit quant of value `j` of a 32-value block (16 quant bytes at `qs`),
/// shifted so that the quant is its low four bits (the bits above are not cleared).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn nibble(block: &[u8], qs: usize, j: usize) -> __m512i {
    if j < 16 { column(block, qs + j) } else { _mm512_srli_epi32::<4>(column(block, qs + j - 16)) }
}

impl Lanes for Q4_0 {
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, add: &mut impl FnMut(usize, __m512)) {
        #[allow(unsafe_code)]
        // SAFETY: called only from `sums`, compiled for the features these intrinsics need.
        unsafe {
            let (d, values) = (half(b, 0), table(-8.0));
            for j in 0..32 {
                // f(q - 8), exactly.
                add(j, _mm512_mul_ps(lookup16(nibble(b, 2, j), values), d));
            }
        }
    }
}

impl Lanes for Q5_0 {
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, add: &mut impl FnMut(usize, __m512)) {
        #[allow(unsafe_code)]
        // SAFETY: as for `Q4_0`.
        unsafe {
            let (d, qh, values) = (half(b, 0), word(b, 2), table(-16.0));
            for j in 0..32 {
                // f(q - 16), exactly: the nibble and bit j of qh as its fifth bit.
                add(j, _mm512_mul_ps(lookup32(nibble(b, 6, j), bit_to_4(qh, j), values), d));
            }
        }
    }
}

impl Lanes for Q5_1 {
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, add: &mut impl FnMut(usize, __m512)) {
        #[allow(unsafe_code)]
        // SAFETY: as for `Q4_0`.
        unsafe {
            let (d, m, qh, values) = (half(b, 0), half(b, 2), word(b, 4), table(0.0));
            for j in 0..32 {
                let q = lookup32(nibble(b, 8, j), bit_to_4(qh, j), values);
                add(j, _mm512_add_ps(_mm512_mul_ps(q, d), m));
            }
        }
    }
}

/// The 6-bit scale and min of Q4_K/Q5_K sub-block `s < 8` of every row, from the 12 scale bytes
/// at byte 4 (ggml's `get_scale_min_k4`, as [`super::formats`] reads it).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn scale_min_k4(b: &[u8], s: usize) -> (__m512i, __m512i) {
    let q = |i: usize| column(b, 4 + i);
    let six = _mm512_set1_epi32(63);
    let low4 = _mm512_set1_epi32(15);
    if s < 4 {
        (_mm512_and_si512(q(s), six), _mm512_and_si512(q(s + 4), six))
    } else {
        let top = |i: usize| _mm512_slli_epi32::<4>(_mm512_srli_epi32::<6>(q(i)));
        let sc = _mm512_or_si512(_mm512_and_si512(q(s + 4), low4), top(s - 4));
        let m = _mm512_or_si512(_mm512_srli_epi32::<4>(q(s + 4)), top(s));
        (sc, m)
    }
}

/// Sub-block `c`'s `d1 = d * sc` and `m1 = dmin * m` of every row of a Q4_K or Q5_K block.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn k4_scales(b: &[u8], c: usize) -> (__m512, __m512) {
    let (sc, m) = scale_min_k4(b, c);
    (_mm512_mul_ps(half(b, 0), float(sc)), _mm512_mul_ps(half(b, 2), float(m)))
}

impl Lanes for Q4K {
    #[inline(always)]
    fn chunk(b: &[u8], c: usize, add: &mut impl FnMut(usize, __m512)) {
        #[allow(unsafe_code)]
        // SAFETY: as for `Q4_0`.
        unsafe {
            let (d1, m1) = k4_scales(b, c);
            let (qs, values) = (16 + 32 * (c / 2), table(0.0));
            for j in 0..32 {
                let byte = column(b, qs + j);
                let q = if c.is_multiple_of(2) { byte } else { _mm512_srli_epi32::<4>(byte) };
                add(j, _mm512_sub_ps(_mm512_mul_ps(d1, lookup16(q, values)), m1));
            }
        }
    }
}

impl Lanes for Q5K {
    #[inline(always)]
    fn chunk(b: &[u8], c: usize, add: &mut impl FnMut(usize, __m512)) {
        #[allow(unsafe_code)]
        // SAFETY: as for `Q4_0`.
        unsafe {
            let (d1, m1) = k4_scales(b, c);
            let (qs, values) = (48 + 32 * (c / 2), table(0.0));
            for j in 0..32 {
                let byte = column(b, qs + j);
                let low = if c.is_multiple_of(2) { byte } else { _mm512_srli_epi32::<4>(byte) };
                // Bit c of qh[j] adds 16: it is the index's fifth bit.
                let q = lookup32(low, bit_to_4(column(b, 16 + j), c), values);
                add(j, _mm512_sub_ps(_mm512_mul_ps(d1, q), m1));
            }
        }
    }
}

impl Lanes for Q6K {
    #[inline(always)]
    fn chunk(b: &[u8], c: usize, add: &mut impl FnMut(usize, __m512)) {
        #[allow(unsafe_code)]
        // SAFETY: as for `Q4_0`.
        unsafe {
            let (g, s) = (c / 4, c % 4);
            let d = half(b, 208);
            let sc = 192 + 8 * g + 2 * s;
            let ds = [_mm512_mul_ps(d, float(signed_column(b, sc))), _mm512_mul_ps(d, float(signed_column(b, sc + 1)))];
            let (shift_l, shift_h) =
                (_mm512_set1_epi32(i32::from(s >= 2) * 4), _mm512_set1_epi32(2 * i32::try_from(s).unwrap_or(0)));
            let (ql, qh) = (64 * g + 32 * (s % 2), 128 + 32 * g);
            // `(low - 32)` and `16 * high` as `f32` by one `vpermps` each (only the low four
            // bits of an index count: `high`'s table repeats every four entries).
            let lows = table(-32.0);
            let highs = _mm512_setr_ps(
                0.0, 16.0, 32.0, 48.0, 0.0, 16.0, 32.0, 48.0, 0.0, 16.0, 32.0, 48.0, 0.0, 16.0, 32.0, 48.0,
            );
            for j in 0..32 {
                let low = lookup16(_mm512_srlv_epi32(column(b, ql + j), shift_l), lows);
                let high = _mm512_permutexvar_ps(_mm512_srlv_epi32(column(b, qh + j), shift_h), highs);
                // f(q - 32) exactly: a sum of small integers.
                add(j, _mm512_mul_ps(ds[j / 16], _mm512_add_ps(low, high)));
            }
        }
    }
}

/// Bytes ahead of the block being added that are prefetched.
const AHEAD: usize = 4096;

/// The 16 rows of one packed group of format `F` times `xs`: work-item `c % 32` adds chunk `c`
/// (value by value, `acc = acc + w * x`), then the LDS tree.
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn sums<F: Lanes>(group: &[u8], xs: &[f32]) -> __m512 {
    let mut partial = [_mm512_setzero_ps(); LANES];
    let block_bytes = ROWS * F::BYTES;
    for (c, x) in xs.as_chunks::<32>().0.iter().enumerate() {
        let Some(block) = group.get(c / F::CHUNKS * block_bytes..(c / F::CHUNKS + 1) * block_bytes) else { break };
        if c % F::CHUNKS == 0 {
            prefetch(group, c / F::CHUNKS * block_bytes + AHEAD, block_bytes);
        }
        let mut acc = partial[c % LANES];
        <F as Lanes>::chunk(block, c % F::CHUNKS, &mut |j, w| {
            acc = _mm512_add_ps(acc, _mm512_mul_ps(w, _mm512_set1_ps(x[j])));
        });
        partial[c % LANES] = acc;
    }
    let mut stride = LANES / 2;
    while stride > 0 {
        for t in 0..stride {
            partial[t] = _mm512_add_ps(partial[t], partial[t + stride]);
        }
        stride /= 2;
    }
    partial[0]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{BlockFormat, matvec_rows};
    use super::*;

    /// Byte offsets of each covered format's `f16` fields.
    fn halves(format: BlockFormat) -> &'static [usize] {
        match format {
            BlockFormat::Q4_0 | BlockFormat::Q5_0 => &[0],
            BlockFormat::Q5_1 | BlockFormat::Q4K | BlockFormat::Q5K => &[0, 2],
            BlockFormat::Q6K => &[208],
            _ => &[],
        }
    }

    const COVERED: [BlockFormat; 6] =
        [BlockFormat::Q4_0, BlockFormat::Q5_0, BlockFormat::Q5_1, BlockFormat::Q4K, BlockFormat::Q5K, BlockFormat::Q6K];

    /// The rows x `blocks` matrix of `format` made of `bytes` (repeated), with every `f16` field
    /// made finite unless `special`.
    fn matrix(format: BlockFormat, rows: usize, blocks: usize, bytes: &[u8], special: bool) -> Vec<u8> {
        let mut w: Vec<u8> = bytes.iter().cycle().take(rows * blocks * format.block_bytes()).copied().collect();
        if !special {
            for block in w.chunks_exact_mut(format.block_bytes()) {
                for &at in halves(format) {
                    block[at + 1] &= 0x3f;
                }
            }
        }
        w
    }

    /// The products of every row by the 16-row path (whole groups) and by the scalar path, as
    /// bits (`None` for a NaN: its payload is unspecified).
    fn both(format: BlockFormat, w: &[u8], rows: usize, xs: &[f32]) -> (Vec<Option<u32>>, Vec<Option<u32>>) {
        let row_bytes = format.row_bytes(xs.len());
        let key = |v: &f32| if v.is_nan() { None } else { Some(v.to_bits()) };
        let packed = pack(w, row_bytes, format.block_bytes());
        let mut fast = vec![0.0f32; rows];
        matvec_rows(format, w, Some(&packed), xs, &mut fast);
        let scalar: Vec<f32> = w.chunks_exact(row_bytes).map(|row| super::super::row_sum_of(format, row, xs)).collect();
        (fast.iter().map(key).collect(), scalar.iter().map(key).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn the_sixteen_row_path_gives_the_work_groups_bits(
            which in 0usize..COVERED.len(),
            rows in 1usize..50,
            blocks in 1usize..5,
            special in any::<bool>(),
            bytes in proptest::collection::vec(any::<u8>(), 1..600),
            xs in proptest::collection::vec(crate::cpu::simd::test_value(), 1..300),
        ) {
            if !available() {
                return Ok(());
            }
            let format = COVERED[which];
            // K formats hold 256 values a block: up to 4 blocks (32 chunks) a row, and up to 40
            // blocks of the 32-value formats, so that work-items add more than one chunk.
            let blocks = if format.block_values() == 256 { blocks } else { blocks * 10 };
            let cols = blocks * format.block_values();
            let xs: Vec<f32> = xs.iter().cycle().take(cols).copied().collect();
            let w = matrix(format, rows, blocks, &bytes, special);
            let (fast, scalar) = both(format, &w, rows, &xs);
            prop_assert_eq!(fast, scalar, "{} {} rows x {} blocks", format.name(), rows, blocks);
        }
    }

    #[test]
    fn every_covered_format_runs_the_sixteen_row_path_on_this_machine() {
        // The property above returns early without AVX-512; where CI has it, this holds it to
        // running (a path that silently fell back would pass the comparison trivially).
        if std::env::var_os("CI").is_some() && std::arch::is_x86_feature_detected!("avx512f") {
            assert!(available());
        }
        for format in COVERED {
            assert!(covers(format));
            let w = matrix(format, 16, 2, &[0x5a, 0x13, 0xc7, 0x3e, 0x81, 0x27, 0xf4], false);
            let xs: Vec<f32> = (0..2 * format.block_values()).map(|i| (i % 7) as f32 - 3.0).collect();
            let (fast, scalar) = both(format, &w, 16, &xs);
            assert_eq!(fast, scalar, "{}", format.name());
            assert!(fast.iter().all(Option::is_some), "{}: finite scales give numbers", format.name());
        }
    }
}
