//! The k-quants: super-blocks of [`QK_K`] = 256 values in sub-blocks of 16 or 32, each with its
//! own integer scale (and minimum) that an f16 super-scale multiplies (`block_q2_K` …
//! `block_q6_K` in `ggml-common.h`, `dequantize_row_q*_K` in `ggml-quants.c`).
//!
//! Value `j` of a super-block sits in sub-block `j / 16` (Q2_K, Q3_K, Q6_K) or `j / 32` (Q4_K,
//! Q5_K). Its bits are spread the way ggml's SIMD kernels want them; the position helpers below
//! name each field's layout once, and both `value` and `quantize` use them.
//!
//! The encoders here are direct, not ggml's search-based `make_qkx*` ones: each picks the
//! smallest scales that keep every value of a sub-block within half a step of a level (the
//! f16 super-scales and integer sub-scales are rounded *up*), then rounds each value to the
//! nearest level (ties to even, as ggml's `nearest_int`). Each `quantize` states the bound.

use crate::f16::{f16_to_f32, f32_to_f16};

use super::{Format, nearest_level};

/// Values per k-quant super-block (`QK_K`).
pub const QK_K: usize = 256;
/// Bytes of the packed 6-bit scales and minimums of Q4_K and Q5_K, and of Q3_K's 6-bit scales
/// (`K_SCALE_SIZE`).
pub const K_SCALE_SIZE: usize = 12;
/// Bytes per Q2_K block: 16 scale bytes, 64 bytes of 2-bit levels, f16 `d` and `dmin`.
pub const BLOCK_Q2_K_BYTES: usize = QK_K / 16 + QK_K / 4 + 2 + 2;
/// Bytes per Q3_K block: 32 bytes of high bits, 64 of 2-bit levels, 12 of scales, f16 `d`.
pub const BLOCK_Q3_K_BYTES: usize = QK_K / 8 + QK_K / 4 + K_SCALE_SIZE + 2;
/// Bytes per Q4_K block: f16 `d` and `dmin`, 12 bytes of scales, 128 of 4-bit levels.
pub const BLOCK_Q4_K_BYTES: usize = 2 + 2 + K_SCALE_SIZE + QK_K / 2;
/// Bytes per Q5_K block: f16 `d` and `dmin`, 12 bytes of scales, 32 of high bits, 128 of
/// 4-bit levels.
pub const BLOCK_Q5_K_BYTES: usize = 2 + 2 + K_SCALE_SIZE + QK_K / 8 + QK_K / 2;
/// Bytes per Q6_K block: 128 bytes of low 4 bits, 64 of high 2 bits, 16 `i8` scales, f16 `d`.
pub const BLOCK_Q6_K_BYTES: usize = QK_K / 2 + QK_K / 4 + QK_K / 16 + 2;

// The sizes ggml-common.h asserts for its block structs.
const _: () = assert!(
    BLOCK_Q2_K_BYTES == 84
        && BLOCK_Q3_K_BYTES == 110
        && BLOCK_Q4_K_BYTES == 144
        && BLOCK_Q5_K_BYTES == 176
        && BLOCK_Q6_K_BYTES == 210
);

/// `N` bytes of `bytes` from `at` (every caller's range lies inside its fixed-size block).
fn field<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    core::array::from_fn(|i| bytes[at + i])
}

fn half_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(field(bytes, at))
}

/// The 32-value group of value `j` (0..8).
fn group(j: usize) -> usize {
    j / 32
}

/// Q2_K and Q3_K 2-bit levels: byte and bit shift of value `j`. Each 128 values share 32
/// bytes; value `j` is in byte `j mod 32` of its half, at bits `2·(group mod 4)`.
fn crumb(j: usize) -> (usize, u32) {
    (32 * (j / 128) + j % 32, 2 * bit_index(group(j) % 4))
}

/// Q4_K and Q5_K 4-bit levels: byte and shift of value `j`. Each 64 values share 32 bytes:
/// even groups in the low nibbles, odd groups in the high ones.
fn nibble_k(j: usize) -> (usize, u32) {
    (32 * (j / 64) + j % 32, 4 * bit_index(group(j) % 2))
}

/// Q3_K's `hmask` and Q5_K's `qh`: value `j`'s bit is bit `group` of byte `j mod 32`.
fn high_bit(j: usize) -> (usize, u32) {
    (j % 32, bit_index(group(j)))
}

/// Q6_K's low 4 bits (`ql`): each 128 values share 64 bytes; groups 0 and 1 of the half take the
/// low nibbles of bytes 0..32 and 32..64, groups 2 and 3 their high nibbles.
fn q6_low(j: usize) -> (usize, u32) {
    let g = group(j) % 4;
    (64 * (j / 128) + 32 * (g % 2) + j % 32, 4 * bit_index(g / 2))
}

/// Q6_K's high 2 bits (`qh`): each 128 values share 32 bytes, group `g` of the half at bits
/// `2g`.
fn q6_high(j: usize) -> (usize, u32) {
    (32 * (j / 128) + j % 32, 2 * bit_index(group(j) % 4))
}

/// A bit position below 8, as a shift amount.
fn bit_index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(0)
}

/// Q3_K's 6-bit scale `i` (0..16), as `dequantize_row_q3_K` unpacks it: the low 4 bits from
/// the low (scales 0..8) or high (8..16) nibble of byte `i mod 8`, the top 2 bits from byte
/// `8 + i mod 4` at bits `2·(i / 4)`.
fn scale6(scales: &[u8; K_SCALE_SIZE], i: usize) -> u8 {
    let low = if i < 8 { scales[i] & 0x0f } else { scales[i - 8] >> 4 };
    let high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
    low | (high << 4)
}

/// Sixteen 6-bit values packed as [`scale6`] reads them.
fn pack_scale6(values: &[u8; 16]) -> [u8; K_SCALE_SIZE] {
    let mut s = [0u8; K_SCALE_SIZE];
    for (i, &v) in values.iter().enumerate() {
        if i < 8 {
            s[i] |= v & 0x0f;
        } else {
            s[i - 8] |= (v & 0x0f) << 4;
        }
        s[8 + i % 4] |= (v >> 4) << (2 * (i / 4));
    }
    s
}

/// Q4_K and Q5_K's 6-bit scale and minimum of sub-block `i` (0..8), as ggml's
/// `get_scale_min_k4`: for `i < 4` the low 6 bits of bytes `i` and `i + 4`; otherwise the
/// nibbles of byte `i + 4` below the top 2 bits of bytes `i − 4` and `i`.
fn scale_min_k4(scales: &[u8; K_SCALE_SIZE], i: usize) -> (u8, u8) {
    if i < 4 {
        (scales[i] & 63, scales[i + 4] & 63)
    } else {
        ((scales[i + 4] & 0x0f) | ((scales[i - 4] >> 6) << 4), (scales[i + 4] >> 4) | ((scales[i] >> 6) << 4))
    }
}

/// Eight 6-bit scales and minimums packed as [`scale_min_k4`] reads them.
fn pack_scale_min_k4(sc: &[u8; 8], m: &[u8; 8]) -> [u8; K_SCALE_SIZE] {
    let mut s = [0u8; K_SCALE_SIZE];
    for i in 0..8 {
        if i < 4 {
            s[i] |= sc[i] & 63;
            s[i + 4] |= m[i] & 63;
        } else {
            s[i + 4] = (sc[i] & 0x0f) | ((m[i] & 0x0f) << 4);
            s[i - 4] |= (sc[i] >> 4) << 6;
            s[i] |= (m[i] >> 4) << 6;
        }
    }
    s
}

/// The smallest f16 not below `v ≥ 0` (`v` itself when it is one): a super-scale rounded up,
/// so that the sub-scales computed against the exact one still fit their bits.
fn f16_up(v: f32) -> u16 {
    let h = f32_to_f16(v);
    // A positive finite f16 below `v` is at most 0x7bff: the next bits are the next f16 up.
    if v > 0.0 && f16_to_f32(h) < v { h + 1 } else { h }
}

/// `ceil(need / step)` clamped into `0..=max`: the smallest sub-scale whose multiple of `step`
/// reaches `need`; 0 when `step` is not positive or either is NaN.
fn scale_up(need: f32, step: f32, max: u8) -> u8 {
    if step.is_nan() || step <= 0.0 {
        return 0;
    }
    let t = (need / step).ceil();
    if t >= f32::from(max) {
        max
    } else if t >= 1.0 {
        // CAST: `t` is an integer in 1..max.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let q = t as u8;
        q
    } else {
        0
    }
}

/// The largest of `values` and 0 (NaN never wins).
fn max_of(values: impl IntoIterator<Item = f32>) -> f32 {
    values.into_iter().fold(0.0, |a, v| if v > a { v } else { a })
}

/// An affine super-block (Q2_K, Q4_K, Q5_K) as [`affine`] chooses it: `x ≈ d·sc·q − dmin·m`.
struct Affine<const SUBS: usize> {
    d: u16,
    dmin: u16,
    sc: [u8; SUBS],
    m: [u8; SUBS],
    levels: [u8; QK_K],
}

/// Chooses an affine super-block with `SUBS` sub-blocks, levels `0..=nmax` and sub-scales and
/// minimums `0..=smax`. For sub-block `s` with `lo = min(0, min x)` and `hi = max x`:
///
/// 1. `dmin = f16_up(max_s(−lo) / smax)`, `m = ceil(−lo / dmin)`: the minimum `dmin·m` is at
///    least `−lo`, by less than `dmin`.
/// 2. the step needed is `need = (hi + dmin·m) / nmax`; `d = f16_up(max_s(need) / smax)`,
///    `sc = ceil(need / d)`: the step `d·sc` is at least `need`, by less than `d`.
/// 3. each value's level is `clamp(round_even((x + dmin·m) / (d·sc)), 0, nmax)` (0 when the
///    step is 0), the expression of ggml's `quantize_row_q*_K_ref` for it.
///
/// The levels then span `[−dmin·m, hi]`, so every value is within half a step `d·sc/2` of its
/// reconstruction (up to f32 rounding).
fn affine<const SUBS: usize>(x: &[f32; QK_K], nmax: i8, smax: u8) -> Affine<SUBS> {
    let len = QK_K / SUBS;
    let sub = |s: usize| &x[s * len..(s + 1) * len];
    let lo: [f32; SUBS] = core::array::from_fn(|s| sub(s).iter().fold(0.0, |a, &v| if v < a { v } else { a }));
    let hi: [f32; SUBS] = core::array::from_fn(|s| sub(s).iter().fold(lo[s], |a, &v| if v > a { v } else { a }));
    let need_m = lo.map(|l| -l);
    let dmin = f16_up(max_of(need_m) / f32::from(smax));
    let m = need_m.map(|need| scale_up(need, f16_to_f32(dmin), smax));
    let min: [f32; SUBS] = core::array::from_fn(|s| f16_to_f32(dmin) * f32::from(m[s]));
    let need_d: [f32; SUBS] = core::array::from_fn(|s| (hi[s] + min[s]) / f32::from(nmax));
    let d = f16_up(max_of(need_d) / f32::from(smax));
    let sc = need_d.map(|need| scale_up(need, f16_to_f32(d), smax));
    let levels = core::array::from_fn(|j| {
        let s = j / len;
        let step = f16_to_f32(d) * f32::from(sc[s]);
        if step == 0.0 { 0 } else { nearest_level((x[j] + min[s]) / step, 0, nmax, 0).unsigned_abs() }
    });
    Affine { d, dmin, sc, m, levels }
}

/// A symmetric super-block (Q3_K, Q6_K) as [`symmetric`] chooses it: `x ≈ d·sc·q`.
struct Symmetric {
    d: u16,
    sc: [i8; 16],
    levels: [i8; QK_K],
}

/// Chooses a symmetric super-block of 16 sub-blocks with levels `−n..=n−1` and signed
/// sub-scales of magnitude at most `smax`. For sub-block `s` with `lo = min(0, min x)` and
/// `hi = max(0, max x)`:
///
/// 1. the step magnitude needed keeps `x / step` within `[−n − ½, n − ½]`: with a positive
///    step `max(hi / (n − ½), −lo / (n + ½))`, with a negative one (which maps `hi` to the
///    longer negative side) `max(hi / (n + ½), −lo / (n − ½))`; the smaller wins (positive on a
///    tie).
/// 2. `d = f16_up(max_s(need) / smax)`, `|sc| = ceil(need / d)`, with the sign from step 1.
/// 3. each level is `clamp(round_even(x / (d·sc)), −n, n − 1)` (0 when the step is 0).
///
/// Every value is then within half a step `|d·sc|/2` of its reconstruction (up to f32
/// rounding).
fn symmetric(x: &[f32; QK_K], n: i8, smax: u8) -> Symmetric {
    let sub = |s: usize| &x[s * 16..(s + 1) * 16];
    let (n_lo, n_hi) = (f32::from(n) - 0.5, f32::from(n) + 0.5);
    let need: [(bool, f32); 16] = core::array::from_fn(|s| {
        let lo = sub(s).iter().fold(0.0f32, |a, &v| if v < a { v } else { a });
        let hi = sub(s).iter().fold(0.0f32, |a, &v| if v > a { v } else { a });
        let positive = max_of([hi / n_lo, -lo / n_hi]);
        let negative = max_of([hi / n_hi, -lo / n_lo]);
        if negative < positive { (true, negative) } else { (false, positive) }
    });
    let d = f16_up(max_of(need.map(|(_, need)| need)) / f32::from(smax));
    let sc = need.map(|(negative, need)| {
        let magnitude = i8::try_from(scale_up(need, f16_to_f32(d), smax)).unwrap_or(i8::MAX);
        if negative { -magnitude } else { magnitude }
    });
    let levels = core::array::from_fn(|j| {
        let step = f16_to_f32(d) * f32::from(sc[j / 16]);
        if step == 0.0 { 0 } else { nearest_level(x[j] / step, -n, n - 1, 0) }
    });
    Symmetric { d, sc, levels }
}

/// One Q2_K super-block: 16 sub-blocks of 16 values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ2K {
    /// Per sub-block: scale in the low nibble, minimum in the high nibble.
    pub scales: [u8; QK_K / 16],
    /// 2-bit levels: value `j` at bits `2·((j / 32) mod 4)` of byte `32·(j / 128) + j mod 32`.
    pub qs: [u8; QK_K / 4],
    /// Super-scale of the scales, f16 bits.
    pub d: u16,
    /// Super-scale of the minimums, f16 bits.
    pub dmin: u16,
}

impl BlockQ2K {
    /// Reads a block from its 84 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q2_K_BYTES]) -> Self {
        Self { scales: field(bytes, 0), qs: field(bytes, 16), d: half_at(bytes, 80), dmin: half_at(bytes, 82) }
    }

    /// The block's 84 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q2_K_BYTES] {
        let mut out = [0u8; BLOCK_Q2_K_BYTES];
        out[..16].copy_from_slice(&self.scales);
        out[16..80].copy_from_slice(&self.qs);
        out[80..82].copy_from_slice(&self.d.to_le_bytes());
        out[82..].copy_from_slice(&self.dmin.to_le_bytes());
        out
    }

    /// Value `j` (`dequantize_row_q2_K`): with `sc = scales[j / 16]`, `q` the 2-bit level of
    /// value `j`, `d = f16_to_f32(self.d)`, `dmin = f16_to_f32(self.dmin)`, in f32 and in this
    /// order: `dl = d · (sc & 15)`, `ml = dmin · (sc >> 4)`, then `dl · q − ml` (the product
    /// rounded before the subtraction). Integers convert to f32 exactly.
    ///
    /// # Panics
    /// If `j ≥ 256`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        let sc = self.scales[j / 16];
        let dl = f16_to_f32(self.d) * f32::from(sc & 0x0f);
        let ml = f16_to_f32(self.dmin) * f32::from(sc >> 4);
        let (byte, shift) = crumb(j);
        let q = (self.qs[byte] >> shift) & 3;
        dl * f32::from(q) - ml
    }

    /// The 256 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK_K] {
        core::array::from_fn(|j| self.value(j))
    }

    /// A block for 256 values: the direct affine method of this module (levels 0..=3, 4-bit
    /// scales and minimums). For sub-block `s` (16 values) with `lo = min(0, min x)`,
    /// `hi = max x`: every value is within half the sub-block's step `d·sc` of its input, and
    /// that step is at most `(hi − lo + dmin)/3 + d`, where `dmin ≤ f16_up(max_s(−lo)/15)` and
    /// `d ≤ f16_up(max_s((hi − lo + dmin)/3)/15)` (f16_up: the next f16 at or above). Not
    /// ggml's `quantize_row_q2_K_ref`, whose search gives other (often closer) blocks.
    #[must_use]
    pub fn quantize(x: &[f32; QK_K]) -> Self {
        let a = affine::<16>(x, 3, 15);
        let mut qs = [0u8; QK_K / 4];
        for (j, &l) in a.levels.iter().enumerate() {
            let (byte, shift) = crumb(j);
            qs[byte] |= l << shift;
        }
        Self { scales: core::array::from_fn(|s| a.sc[s] | (a.m[s] << 4)), qs, d: a.d, dmin: a.dmin }
    }
}

/// One Q3_K super-block: 16 sub-blocks of 16 values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ3K {
    /// High bits: value `j`'s at bit `j / 32` of byte `j mod 32`; a *clear* bit subtracts 4.
    pub hmask: [u8; QK_K / 8],
    /// Low 2 bits of the levels, laid out as [`BlockQ2K::qs`].
    pub qs: [u8; QK_K / 4],
    /// Sixteen 6-bit scales (offset by 32), packed: see [`value`](Self::value).
    pub scales: [u8; K_SCALE_SIZE],
    /// Super-scale, f16 bits.
    pub d: u16,
}

impl BlockQ3K {
    /// Reads a block from its 110 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q3_K_BYTES]) -> Self {
        Self { hmask: field(bytes, 0), qs: field(bytes, 32), scales: field(bytes, 96), d: half_at(bytes, 108) }
    }

    /// The block's 110 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q3_K_BYTES] {
        let mut out = [0u8; BLOCK_Q3_K_BYTES];
        out[..32].copy_from_slice(&self.hmask);
        out[32..96].copy_from_slice(&self.qs);
        out[96..108].copy_from_slice(&self.scales);
        out[108..].copy_from_slice(&self.d.to_le_bytes());
        out
    }

    /// Value `j` (`dequantize_row_q3_K`): with `i = j / 16`, the 6-bit scale
    /// `s = (low nibble of scales[i] for i < 8, high nibble of scales[i − 8] otherwise)
    /// | ((scales[8 + i mod 4] >> 2·(i / 4)) & 3) << 4`, the level
    /// `q = (2-bit level) − (4 if value j's hmask bit is clear, else 0)` in −4..=3 and
    /// `d = f16_to_f32(self.d)`, in f32 and in this order: `dl = d · (s − 32)`, then `dl · q`.
    ///
    /// # Panics
    /// If `j ≥ 256`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        let sc = i16::from(scale6(&self.scales, j / 16)) - 32;
        let dl = f16_to_f32(self.d) * f32::from(sc);
        let (byte, shift) = crumb(j);
        let (hbyte, hshift) = high_bit(j);
        let low = i16::from((self.qs[byte] >> shift) & 3);
        let q = if (self.hmask[hbyte] >> hshift) & 1 == 0 { low - 4 } else { low };
        dl * f32::from(q)
    }

    /// The 256 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK_K] {
        core::array::from_fn(|j| self.value(j))
    }

    /// A block for 256 values: the direct symmetric method of this module (levels −4..=3,
    /// sub-scales −31..=31). For sub-block `s` (16 values) with `a = max |x|`: every value is
    /// within half the sub-block's step `|d·sc|` of its input, and that step is at most
    /// `a/3.5 + d` with `d ≤ f16_up(max_s(a)/3.5/31)`. Not ggml's `quantize_row_q3_K_ref`.
    #[must_use]
    pub fn quantize(x: &[f32; QK_K]) -> Self {
        let s = symmetric(x, 4, 31);
        let mut qs = [0u8; QK_K / 4];
        let mut hmask = [0u8; QK_K / 8];
        for (j, &q) in s.levels.iter().enumerate() {
            // Stored level q + 4 in 0..=7: its bit 2 goes to hmask, its low 2 bits to qs.
            let l = (q + 4).unsigned_abs();
            let (byte, shift) = crumb(j);
            qs[byte] |= (l & 3) << shift;
            let (hbyte, hshift) = high_bit(j);
            hmask[hbyte] |= (l >> 2) << hshift;
        }
        let scales = pack_scale6(&s.sc.map(|sc| (sc + 32).unsigned_abs()));
        Self { hmask, qs, scales, d: s.d }
    }
}

/// One Q4_K super-block: 8 sub-blocks of 32 values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ4K {
    /// Super-scale of the scales, f16 bits.
    pub d: u16,
    /// Super-scale of the minimums, f16 bits.
    pub dmin: u16,
    /// Eight 6-bit scales and minimums, packed: see [`value`](Self::value).
    pub scales: [u8; K_SCALE_SIZE],
    /// 4-bit levels: value `j` in byte `32·(j / 64) + j mod 32`, low nibble for even `j / 32`,
    /// high nibble for odd.
    pub qs: [u8; QK_K / 2],
}

impl BlockQ4K {
    /// Reads a block from its 144 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q4_K_BYTES]) -> Self {
        Self { d: half_at(bytes, 0), dmin: half_at(bytes, 2), scales: field(bytes, 4), qs: field(bytes, 16) }
    }

    /// The block's 144 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q4_K_BYTES] {
        let mut out = [0u8; BLOCK_Q4_K_BYTES];
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..4].copy_from_slice(&self.dmin.to_le_bytes());
        out[4..16].copy_from_slice(&self.scales);
        out[16..].copy_from_slice(&self.qs);
        out
    }

    /// Value `j` (`dequantize_row_q4_K`): with `(sc, m)` sub-block `j / 32`'s 6-bit scale and
    /// minimum (ggml's `get_scale_min_k4`: for `i < 4` `scales[i] & 63` and
    /// `scales[i + 4] & 63`, else `(scales[i + 4] & 15) | (scales[i − 4] >> 6) << 4` and
    /// `(scales[i + 4] >> 4) | (scales[i] >> 6) << 4`), `q` the 4-bit level,
    /// `d = f16_to_f32(self.d)`, `dmin = f16_to_f32(self.dmin)`, in f32 and in this order:
    /// `d1 = d · sc`, `m1 = dmin · m`, then `d1 · q − m1`.
    ///
    /// # Panics
    /// If `j ≥ 256`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        let (sc, m) = scale_min_k4(&self.scales, group(j));
        let d1 = f16_to_f32(self.d) * f32::from(sc);
        let m1 = f16_to_f32(self.dmin) * f32::from(m);
        let (byte, shift) = nibble_k(j);
        let q = (self.qs[byte] >> shift) & 0x0f;
        d1 * f32::from(q) - m1
    }

    /// The 256 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK_K] {
        core::array::from_fn(|j| self.value(j))
    }

    /// A block for 256 values: the direct affine method of this module (levels 0..=15, 6-bit
    /// scales and minimums). For sub-block `s` (32 values) with `lo = min(0, min x)`,
    /// `hi = max x`: every value is within half the sub-block's step `d·sc` of its input, and
    /// that step is at most `(hi − lo + dmin)/15 + d`, where `dmin ≤ f16_up(max_s(−lo)/63)`
    /// and `d ≤ f16_up(max_s((hi − lo + dmin)/15)/63)`. Not ggml's `quantize_row_q4_K_ref`.
    #[must_use]
    pub fn quantize(x: &[f32; QK_K]) -> Self {
        let a = affine::<8>(x, 15, 63);
        let mut qs = [0u8; QK_K / 2];
        for (j, &l) in a.levels.iter().enumerate() {
            let (byte, shift) = nibble_k(j);
            qs[byte] |= l << shift;
        }
        Self { d: a.d, dmin: a.dmin, scales: pack_scale_min_k4(&a.sc, &a.m), qs }
    }
}

/// One Q5_K super-block: 8 sub-blocks of 32 values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ5K {
    /// Super-scale of the scales, f16 bits.
    pub d: u16,
    /// Super-scale of the minimums, f16 bits.
    pub dmin: u16,
    /// Eight 6-bit scales and minimums, packed as [`BlockQ4K::scales`].
    pub scales: [u8; K_SCALE_SIZE],
    /// Fifth bits: value `j`'s at bit `j / 32` of byte `j mod 32`.
    pub qh: [u8; QK_K / 8],
    /// Low 4 bits of the levels, laid out as [`BlockQ4K::qs`].
    pub qs: [u8; QK_K / 2],
}

impl BlockQ5K {
    /// Reads a block from its 176 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q5_K_BYTES]) -> Self {
        Self {
            d: half_at(bytes, 0),
            dmin: half_at(bytes, 2),
            scales: field(bytes, 4),
            qh: field(bytes, 16),
            qs: field(bytes, 48),
        }
    }

    /// The block's 176 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q5_K_BYTES] {
        let mut out = [0u8; BLOCK_Q5_K_BYTES];
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..4].copy_from_slice(&self.dmin.to_le_bytes());
        out[4..16].copy_from_slice(&self.scales);
        out[16..48].copy_from_slice(&self.qh);
        out[48..].copy_from_slice(&self.qs);
        out
    }

    /// Value `j` (`dequantize_row_q5_K`): as [`BlockQ4K::value`] with the 5-bit level
    /// `q = nibble + 16·(value j's qh bit)`: in f32 and in this order `d1 = d · sc`,
    /// `m1 = dmin · m`, then `d1 · q − m1`.
    ///
    /// # Panics
    /// If `j ≥ 256`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        let (sc, m) = scale_min_k4(&self.scales, group(j));
        let d1 = f16_to_f32(self.d) * f32::from(sc);
        let m1 = f16_to_f32(self.dmin) * f32::from(m);
        let (byte, shift) = nibble_k(j);
        let (hbyte, hshift) = high_bit(j);
        let q = ((self.qs[byte] >> shift) & 0x0f) | (((self.qh[hbyte] >> hshift) & 1) << 4);
        d1 * f32::from(q) - m1
    }

    /// The 256 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK_K] {
        core::array::from_fn(|j| self.value(j))
    }

    /// A block for 256 values: the direct affine method of this module (levels 0..=31, 6-bit
    /// scales and minimums). For sub-block `s` (32 values) with `lo = min(0, min x)`,
    /// `hi = max x`: every value is within half the sub-block's step `d·sc` of its input, and
    /// that step is at most `(hi − lo + dmin)/31 + d`, where `dmin ≤ f16_up(max_s(−lo)/63)`
    /// and `d ≤ f16_up(max_s((hi − lo + dmin)/31)/63)`. Not ggml's `quantize_row_q5_K_ref`.
    #[must_use]
    pub fn quantize(x: &[f32; QK_K]) -> Self {
        let a = affine::<8>(x, 31, 63);
        let mut qs = [0u8; QK_K / 2];
        let mut qh = [0u8; QK_K / 8];
        for (j, &l) in a.levels.iter().enumerate() {
            let (byte, shift) = nibble_k(j);
            qs[byte] |= (l & 0x0f) << shift;
            let (hbyte, hshift) = high_bit(j);
            qh[hbyte] |= (l >> 4) << hshift;
        }
        Self { d: a.d, dmin: a.dmin, scales: pack_scale_min_k4(&a.sc, &a.m), qh, qs }
    }
}

/// One Q6_K super-block: 16 sub-blocks of 16 values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ6K {
    /// Low 4 bits of the levels: see [`value`](Self::value).
    pub ql: [u8; QK_K / 2],
    /// High 2 bits of the levels: see [`value`](Self::value).
    pub qh: [u8; QK_K / 4],
    /// Per sub-block scales.
    pub scales: [i8; QK_K / 16],
    /// Super-scale, f16 bits.
    pub d: u16,
}

impl BlockQ6K {
    /// Reads a block from its 210 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q6_K_BYTES]) -> Self {
        Self {
            ql: field(bytes, 0),
            qh: field(bytes, 128),
            scales: field::<16>(bytes, 192).map(|b| i8::from_le_bytes([b])),
            d: half_at(bytes, 208),
        }
    }

    /// The block's 210 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q6_K_BYTES] {
        let mut out = [0u8; BLOCK_Q6_K_BYTES];
        out[..128].copy_from_slice(&self.ql);
        out[128..192].copy_from_slice(&self.qh);
        for (o, s) in out[192..208].iter_mut().zip(self.scales) {
            *o = s.to_le_bytes()[0];
        }
        out[208..].copy_from_slice(&self.d.to_le_bytes());
        out
    }

    /// Value `j` (`dequantize_row_q6_K`): with `h = j / 128`, `g = (j / 32) mod 4`,
    /// `l = j mod 32`, the level `q = (nibble g / 2 of ql[64h + 32·(g mod 2) + l])
    /// | ((qh[32h + l] >> 2g) & 3) << 4` minus 32 (in −32..=31), the scale
    /// `sc = scales[j / 16]` and `d = f16_to_f32(self.d)`, in f32 and in this order:
    /// `(d · sc) · q`.
    ///
    /// # Panics
    /// If `j ≥ 256`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        let (lbyte, lshift) = q6_low(j);
        let (hbyte, hshift) = q6_high(j);
        let level = ((self.ql[lbyte] >> lshift) & 0x0f) | (((self.qh[hbyte] >> hshift) & 3) << 4);
        let q = i16::from(level) - 32;
        f16_to_f32(self.d) * f32::from(self.scales[j / 16]) * f32::from(q)
    }

    /// The 256 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK_K] {
        core::array::from_fn(|j| self.value(j))
    }

    /// A block for 256 values: the direct symmetric method of this module (levels −32..=31,
    /// scales −127..=127). For sub-block `s` (16 values) with `a = max |x|`: every value is
    /// within half the sub-block's step `|d·sc|` of its input, and that step is at most
    /// `a/31.5 + d` with `d ≤ f16_up(max_s(a)/31.5/127)`. Not ggml's `quantize_row_q6_K_ref`.
    #[must_use]
    pub fn quantize(x: &[f32; QK_K]) -> Self {
        let s = symmetric(x, 32, 127);
        let mut ql = [0u8; QK_K / 2];
        let mut qh = [0u8; QK_K / 4];
        for (j, &q) in s.levels.iter().enumerate() {
            let l = (q + 32).unsigned_abs();
            let (lbyte, lshift) = q6_low(j);
            ql[lbyte] |= (l & 0x0f) << lshift;
            let (hbyte, hshift) = q6_high(j);
            qh[hbyte] |= (l >> 4) << hshift;
        }
        Self { ql, qh, scales: s.sc, d: s.d }
    }
}

macro_rules! k_format {
    ($block:ty, $bytes:expr, $fields:expr) => {
        impl Format<QK_K, $bytes> for $block {
            const HALF_FIELDS: &'static [(&'static str, usize)] = $fields;

            fn read(bytes: &[u8; $bytes]) -> Self {
                Self::from_bytes(bytes)
            }

            fn write(&self) -> [u8; $bytes] {
                self.to_bytes()
            }

            fn value(&self, j: usize) -> f32 {
                Self::value(self, j)
            }

            fn encode(x: &[f32; QK_K]) -> Self {
                Self::quantize(x)
            }
        }
    };
}

k_format!(BlockQ2K, BLOCK_Q2_K_BYTES, &[("scale d", 80), ("minimum scale dmin", 82)]);
k_format!(BlockQ3K, BLOCK_Q3_K_BYTES, &[("scale d", 108)]);
k_format!(BlockQ4K, BLOCK_Q4_K_BYTES, &[("scale d", 0), ("minimum scale dmin", 2)]);
k_format!(BlockQ5K, BLOCK_Q5_K_BYTES, &[("scale d", 0), ("minimum scale dmin", 2)]);
k_format!(BlockQ6K, BLOCK_Q6_K_BYTES, &[("scale d", 208)]);

#[cfg(test)]
mod tests;
