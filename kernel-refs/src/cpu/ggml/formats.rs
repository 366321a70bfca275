//! The value of every element of every block format, as `kernels/hip/ggml_formats.h` computes
//! it: the same `f32` operations in the same order (ggml's `dequantize_row_*`), each rounded on
//! its own. `tests/formats_host.rs` compiles that header for the host and compares every
//! element's bits with these functions.
//!
//! Each format writes the 32 values of chunk `c` of a block (`c < VALUES / 32`) into `out`;
//! callers pass a block of exactly `BYTES` bytes (the public functions of [`super`] check).

use crate::cpu::f16_to_f32;

/// A block format: its size and its chunks' values.
pub(crate) trait Format {
    /// Bytes of a block.
    const BYTES: usize;
    /// Values of a block (32 or 256).
    const VALUES: usize;
    /// Chunks of 32 values in a block.
    const CHUNKS: usize = Self::VALUES / 32;
    /// The values of chunk `c` of `block` (`BYTES` long).
    fn chunk(block: &[u8], c: usize, out: &mut [f32; 32]);
}

/// The f16 at byte `at` of `b`.
#[inline(always)]
fn f16(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// The low (`j < 16`) or high nibble of `qs[j % 16]`: the 4-bit quant of value `j` of a 32-value
/// block.
#[inline(always)]
fn nibble(qs: &[u8], j: usize) -> u8 {
    if j < 16 { qs[j] & 15 } else { qs[j - 16] >> 4 }
}

/// The 32-bit little-endian word at byte `at` of `b`.
#[inline(always)]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// `q` (below 2^8 in magnitude) as `f32`, exactly.
#[inline(always)]
fn f(q: i16) -> f32 {
    f32::from(q)
}

/// Q4_0, 18 bytes `{ f16 d; u8 qs[16] }`: `(q - 8) * d`.
pub(crate) struct Q4_0;
impl Format for Q4_0 {
    const BYTES: usize = 18;
    const VALUES: usize = 32;
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, out: &mut [f32; 32]) {
        let d = f16(b, 0);
        let qs = &b[2..18];
        for (j, v) in out.iter_mut().enumerate() {
            *v = f(i16::from(nibble(qs, j)) - 8) * d;
        }
    }
}

/// Q4_1, 20 bytes `{ f16 d; f16 m; u8 qs[16] }`: `q * d + m`.
pub(crate) struct Q4_1;
impl Format for Q4_1 {
    const BYTES: usize = 20;
    const VALUES: usize = 32;
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, out: &mut [f32; 32]) {
        let (d, m) = (f16(b, 0), f16(b, 2));
        let qs = &b[4..20];
        for (j, v) in out.iter_mut().enumerate() {
            *v = f(i16::from(nibble(qs, j))) * d + m;
        }
    }
}

/// Q5_0, 22 bytes `{ f16 d; u8 qh[4]; u8 qs[16] }`: bit `j` of `qh` is the fifth bit of value
/// `j`; `(q - 16) * d`.
pub(crate) struct Q5_0;
impl Format for Q5_0 {
    const BYTES: usize = 22;
    const VALUES: usize = 32;
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, out: &mut [f32; 32]) {
        let (d, qh) = (f16(b, 0), u32_at(b, 2));
        let qs = &b[6..22];
        for (j, v) in out.iter_mut().enumerate() {
            let high = u8::from((qh >> j) & 1 == 1) << 4;
            *v = f(i16::from(nibble(qs, j) | high) - 16) * d;
        }
    }
}

/// Q5_1, 24 bytes `{ f16 d; f16 m; u8 qh[4]; u8 qs[16] }`: `q * d + m`.
pub(crate) struct Q5_1;
impl Format for Q5_1 {
    const BYTES: usize = 24;
    const VALUES: usize = 32;
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, out: &mut [f32; 32]) {
        let (d, m, qh) = (f16(b, 0), f16(b, 2), u32_at(b, 4));
        let qs = &b[8..24];
        for (j, v) in out.iter_mut().enumerate() {
            let high = u8::from((qh >> j) & 1 == 1) << 4;
            *v = f(i16::from(nibble(qs, j) | high)) * d + m;
        }
    }
}

/// Q8_0, 34 bytes `{ f16 d; i8 qs[32] }`: `q * d`.
pub(crate) struct Q8_0;
impl Format for Q8_0 {
    const BYTES: usize = 34;
    const VALUES: usize = 32;
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, out: &mut [f32; 32]) {
        let d = f16(b, 0);
        for (v, &q) in out.iter_mut().zip(&b[2..34]) {
            *v = f(i16::from(q.cast_signed())) * d;
        }
    }
}

/// Q2_K, 84 bytes `{ u8 scales[16]; u8 qs[64]; f16 d; f16 dmin }`: sub-block `s` of 16 values has
/// `dl = d * (scales[s] & 15)`, `ml = dmin * (scales[s] >> 4)`; value `dl * q - ml`. Chunk `c`
/// takes bits `2 (c % 4)` of `qs[32 (c / 4) + j]`, sub-blocks `2c` and `2c + 1`.
pub(crate) struct Q2K;
impl Format for Q2K {
    const BYTES: usize = 84;
    const VALUES: usize = 256;
    #[inline(always)]
    fn chunk(b: &[u8], c: usize, out: &mut [f32; 32]) {
        let (d, dmin) = (f16(b, 80), f16(b, 82));
        let (s0, s1) = (b[2 * c], b[2 * c + 1]);
        let dl = [d * f(i16::from(s0 & 15)), d * f(i16::from(s1 & 15))];
        let ml = [dmin * f(i16::from(s0 >> 4)), dmin * f(i16::from(s1 >> 4))];
        let shift = 2 * (c % 4);
        let qs = &b[16 + 32 * (c / 4)..][..32];
        for (j, (v, &q)) in out.iter_mut().zip(qs).enumerate() {
            *v = dl[j / 16] * f(i16::from((q >> shift) & 3)) - ml[j / 16];
        }
    }
}

/// Q3_K, 110 bytes `{ u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d }`: sub-block `s` has the
/// 6-bit scale [`q3_k_scale`], `dl = d * (scale - 32)`; value `dl * (q - (hmask bit ? 0 : 4))`.
/// Chunk `c` takes bits `2 (c % 4)` of `qs[32 (c / 4) + j]`, bit `c` of `hmask[j]`, sub-blocks `2c`
/// and `2c + 1`.
pub(crate) struct Q3K;
impl Format for Q3K {
    const BYTES: usize = 110;
    const VALUES: usize = 256;
    #[inline(always)]
    fn chunk(b: &[u8], c: usize, out: &mut [f32; 32]) {
        let d = f16(b, 108);
        let scales = &b[96..108];
        let dl = [d * f(q3_k_scale(scales, 2 * c) - 32), d * f(q3_k_scale(scales, 2 * c + 1) - 32)];
        let shift = 2 * (c % 4);
        let (hm, qs) = (&b[0..32], &b[32 + 32 * (c / 4)..][..32]);
        for (j, v) in out.iter_mut().enumerate() {
            let low = i16::from((qs[j] >> shift) & 3);
            let q = if (hm[j] >> c) & 1 == 1 { low } else { low - 4 };
            *v = dl[j / 16] * f(q);
        }
    }
}

/// The 6-bit scale of Q3_K sub-block `s < 16` from the 12 scale bytes: the low four bits from
/// `scales[s % 8]` (low nibble for `s < 8`, high for the rest), the top two from
/// `scales[8 + s % 4]` at bit `2 (s / 4)` (ggml's `kmask` unpacking).
#[inline(always)]
fn q3_k_scale(scales: &[u8], s: usize) -> i16 {
    let low = if s < 8 { scales[s] & 15 } else { scales[s - 8] >> 4 };
    let high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
    i16::from(low | (high << 4))
}

/// The 6-bit scale and min of Q4_K/Q5_K sub-block `s < 8` from the 12 scale bytes (ggml's
/// `get_scale_min_k4`).
#[inline(always)]
fn scale_min_k4(q: &[u8], s: usize) -> (u8, u8) {
    if s < 4 {
        (q[s] & 63, q[s + 4] & 63)
    } else {
        ((q[s + 4] & 15) | ((q[s - 4] >> 6) << 4), (q[s + 4] >> 4) | ((q[s] >> 6) << 4))
    }
}

/// Q4_K, 144 bytes `{ f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }`: chunk `c` is sub-block `c`,
/// `d1 = d * sc`, `m1 = dmin * m`; value `d1 * q - m1`, `q` the low (even `c`) or high nibble of
/// `qs[32 (c / 2) + j]`.
pub(crate) struct Q4K;
impl Format for Q4K {
    const BYTES: usize = 144;
    const VALUES: usize = 256;
    #[inline(always)]
    fn chunk(b: &[u8], c: usize, out: &mut [f32; 32]) {
        let (sc, m) = scale_min_k4(&b[4..16], c);
        let (d1, m1) = (f16(b, 0) * f(i16::from(sc)), f16(b, 2) * f(i16::from(m)));
        let shift = 4 * (c % 2);
        let qs = &b[16 + 32 * (c / 2)..][..32];
        for (v, &q) in out.iter_mut().zip(qs) {
            *v = d1 * f(i16::from((q >> shift) & 15)) - m1;
        }
    }
}

/// Q5_K, 176 bytes `{ f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }`: as [`Q4K`], bit
/// `c` of `qh[j]` adding 16 to `q`.
pub(crate) struct Q5K;
impl Format for Q5K {
    const BYTES: usize = 176;
    const VALUES: usize = 256;
    #[inline(always)]
    fn chunk(b: &[u8], c: usize, out: &mut [f32; 32]) {
        let (sc, m) = scale_min_k4(&b[4..16], c);
        let (d1, m1) = (f16(b, 0) * f(i16::from(sc)), f16(b, 2) * f(i16::from(m)));
        let shift = 4 * (c % 2);
        let (qh, qs) = (&b[16..48], &b[48 + 32 * (c / 2)..][..32]);
        for (j, v) in out.iter_mut().enumerate() {
            let high = if (qh[j] >> c) & 1 == 1 { 16 } else { 0 };
            *v = d1 * f(i16::from((qs[j] >> shift) & 15) + high) - m1;
        }
    }
}

/// Q6_K, 210 bytes `{ u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }`: chunk `c = 4 g + s` takes
/// the low (`s < 2`) or high nibble of `ql[64 g + 32 (s % 2) + j]`, bits `2 s` of `qh[32 g + j]`
/// as bits 4 and 5, and `scales[8 g + 2 s + j / 16]`; value `(d * scale) * (q - 32)`.
pub(crate) struct Q6K;
impl Format for Q6K {
    const BYTES: usize = 210;
    const VALUES: usize = 256;
    #[inline(always)]
    fn chunk(b: &[u8], c: usize, out: &mut [f32; 32]) {
        let (g, s) = (c / 4, c % 4);
        let d = f16(b, 208);
        let sc = &b[192 + 8 * g + 2 * s..][..2];
        let ds = [d * f(i16::from(sc[0].cast_signed())), d * f(i16::from(sc[1].cast_signed()))];
        let (shift_l, shift_h) = (4 * (s / 2), 2 * s);
        let (ql, qh) = (&b[64 * g + 32 * (s % 2)..][..32], &b[128 + 32 * g..][..32]);
        for (j, v) in out.iter_mut().enumerate() {
            let q = ((ql[j] >> shift_l) & 15) | (((qh[j] >> shift_h) & 3) << 4);
            *v = ds[j / 16] * f(i16::from(q) - 32);
        }
    }
}

/// F16, blocks of 32 binary16 values, converted exactly ([`f16_to_f32`]).
pub(crate) struct F16;
impl Format for F16 {
    const BYTES: usize = 64;
    const VALUES: usize = 32;
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, out: &mut [f32; 32]) {
        for (j, v) in out.iter_mut().enumerate() {
            *v = f16(b, 2 * j);
        }
    }
}

/// BF16, blocks of 32 bfloat16 values: the top halves of `f32`s, every bit kept.
pub(crate) struct BF16;
impl Format for BF16 {
    const BYTES: usize = 64;
    const VALUES: usize = 32;
    #[inline(always)]
    fn chunk(b: &[u8], _: usize, out: &mut [f32; 32]) {
        for (j, v) in out.iter_mut().enumerate() {
            *v = f32::from_bits(u32::from(u16::from_le_bytes([b[2 * j], b[2 * j + 1]])) << 16);
        }
    }
}
