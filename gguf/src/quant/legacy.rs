//! The 32-value block formats (`block_q4_0`, `block_q4_1`, `block_q5_0`, `block_q5_1`,
//! `block_q8_0` in `ggml-common.h`). All fields little-endian; scales are f16.
//!
//! - Q4_0 (18 bytes): `d`, then 16 bytes of nibbles: byte `j`'s low nibble is value `j`, its
//!   high nibble value `j + 16`; `x = (q − 8)·d`.
//! - Q4_1 (20 bytes): `d`, minimum `m`, 16 bytes of nibbles as Q4_0; `x = q·d + m`.
//! - Q5_0 (22 bytes): `d`, `qh` (a u32 whose bit `j` is the fifth bit of value `j`), nibbles as
//!   Q4_0; `x = (q − 16)·d`.
//! - Q5_1 (24 bytes): `d`, `m`, `qh`, nibbles; `x = q·d + m`.
//! - Q8_0 (34 bytes): `d`, then 32 `i8`; `x = q·d`.

use crate::f16::{f16_to_f32, f32_to_f16};

use super::{Format, trunc_level};

/// Values per Q4_0 block (`QK4_0`).
pub const QK4_0: usize = 32;
/// Bytes per Q4_0 block.
pub const BLOCK_Q4_0_BYTES: usize = 2 + QK4_0 / 2;
/// Values per Q4_1 block (`QK4_1`).
pub const QK4_1: usize = 32;
/// Bytes per Q4_1 block.
pub const BLOCK_Q4_1_BYTES: usize = 2 + 2 + QK4_1 / 2;
/// Values per Q5_0 block (`QK5_0`).
pub const QK5_0: usize = 32;
/// Bytes per Q5_0 block.
pub const BLOCK_Q5_0_BYTES: usize = 2 + 4 + QK5_0 / 2;
/// Values per Q5_1 block (`QK5_1`).
pub const QK5_1: usize = 32;
/// Bytes per Q5_1 block.
pub const BLOCK_Q5_1_BYTES: usize = 2 + 2 + 4 + QK5_1 / 2;
/// Values per Q8_0 block (`QK8_0`).
pub const QK8_0: usize = 32;
/// Bytes per Q8_0 block.
pub const BLOCK_Q8_0_BYTES: usize = 2 + QK8_0;

/// Half a legacy block: byte `j` of the nibbles holds values `j` and `j + HALF`.
const HALF: usize = 16;

/// The 4-bit part of value `j` (`j < 32`): the low nibble of byte `j` for the first half, the
/// high nibble of byte `j − 16` for the second.
fn nibble(qs: &[u8; HALF], j: usize) -> u8 {
    let byte = qs[j % HALF];
    if j < HALF { byte & 0x0f } else { byte >> 4 }
}

/// Two 4-bit levels packed as `nibble` reads them.
fn pack(lo: u8, hi: u8) -> u8 {
    (lo & 0x0f) | (hi << 4)
}

/// ggml's `amax`/`max` scan of `quantize_row_q4_0_ref` and `quantize_row_q5_0_ref`: the
/// first value of largest magnitude, with its sign (0 when all are zero; NaN never wins).
fn signed_absmax(x: &[f32; 32]) -> f32 {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    max
}

/// ggml's `min`/`max` scan of `quantize_row_q4_1_ref` and `quantize_row_q5_1_ref`: the
/// comparisons mirror `if (v < min)`, which never takes a NaN.
fn min_max(x: &[f32; 32]) -> (f32, f32) {
    x.iter().fold((f32::MAX, -f32::MAX), |(lo, hi), &v| (if v < lo { v } else { lo }, if v > hi { v } else { hi }))
}

/// ggml's `d ? 1.0f/d : 0.0f`.
fn inverse(d: f32) -> f32 {
    if d != 0.0 { 1.0 / d } else { 0.0 }
}

/// One Q4_0 block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ4_0 {
    /// Scale, f16 bits.
    pub d: u16,
    /// Nibbles: low nibble of byte `j` is value `j`, high nibble value `j + 16`.
    pub qs: [u8; QK4_0 / 2],
}

impl BlockQ4_0 {
    /// Reads a block from its 18 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q4_0_BYTES]) -> Self {
        let [d0, d1, qs @ ..] = *bytes;
        Self { d: u16::from_le_bytes([d0, d1]), qs }
    }

    /// The block's 18 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q4_0_BYTES] {
        let mut out = [0u8; BLOCK_Q4_0_BYTES];
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..].copy_from_slice(&self.qs);
        out
    }

    /// Value `j` (`dequantize_row_q4_0`): with `q` the nibble of value `j` and
    /// `d = f16_to_f32(self.d)`, the f32 product `((q − 8) as f32) · d` (the integer `q − 8` in
    /// −8..=7 converts exactly).
    ///
    /// # Panics
    /// If `j ≥ 32`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        let q = i16::from(nibble(&self.qs, j)) - 8;
        f32::from(q) * f16_to_f32(self.d)
    }

    /// The 32 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK4_0] {
        core::array::from_fn(|j| self.value(j))
    }

    /// The block for 32 values (`quantize_row_q4_0_ref`): `max` the first value of largest
    /// magnitude, `d = max / −8`, `id = 1/d` (0 when `d` is 0), level
    /// `min(15, trunc(x·id + 8.5))`, scale stored as `f16(d)`.
    #[must_use]
    pub fn quantize(x: &[f32; QK4_0]) -> Self {
        let d = signed_absmax(x) / -8.0;
        let id = inverse(d);
        let level = |v: f32| trunc_level(v * id + 8.5, 15);
        Self { d: f32_to_f16(d), qs: core::array::from_fn(|j| pack(level(x[j]), level(x[j + HALF]))) }
    }
}

/// One Q4_1 block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ4_1 {
    /// Scale, f16 bits.
    pub d: u16,
    /// Minimum, f16 bits.
    pub m: u16,
    /// Nibbles: low nibble of byte `j` is value `j`, high nibble value `j + 16`.
    pub qs: [u8; QK4_1 / 2],
}

impl BlockQ4_1 {
    /// Reads a block from its 20 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q4_1_BYTES]) -> Self {
        let [d0, d1, m0, m1, qs @ ..] = *bytes;
        Self { d: u16::from_le_bytes([d0, d1]), m: u16::from_le_bytes([m0, m1]), qs }
    }

    /// The block's 20 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q4_1_BYTES] {
        let mut out = [0u8; BLOCK_Q4_1_BYTES];
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..4].copy_from_slice(&self.m.to_le_bytes());
        out[4..].copy_from_slice(&self.qs);
        out
    }

    /// Value `j` (`dequantize_row_q4_1`): with `q` the nibble of value `j`,
    /// `d = f16_to_f32(self.d)`, `m = f16_to_f32(self.m)`: `(q as f32) · d`, then `+ m`, each
    /// rounded to f32 (no fused multiply-add).
    ///
    /// # Panics
    /// If `j ≥ 32`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        f32::from(nibble(&self.qs, j)) * f16_to_f32(self.d) + f16_to_f32(self.m)
    }

    /// The 32 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK4_1] {
        core::array::from_fn(|j| self.value(j))
    }

    /// The block for 32 values (`quantize_row_q4_1_ref`): `d = (max − min) / 15`, `id = 1/d`
    /// (0 when `d` is 0), level `min(15, trunc((x − min)·id + 0.5))`; `d` and `min` stored as
    /// f16.
    #[must_use]
    pub fn quantize(x: &[f32; QK4_1]) -> Self {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let id = inverse(d);
        let level = |v: f32| trunc_level((v - min) * id + 0.5, 15);
        let qs = core::array::from_fn(|j| pack(level(x[j]), level(x[j + HALF])));
        Self { d: f32_to_f16(d), m: f32_to_f16(min), qs }
    }
}

/// One Q5_0 block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ5_0 {
    /// Scale, f16 bits.
    pub d: u16,
    /// Fifth bits: bit `j` (of the little-endian u32) belongs to value `j`.
    pub qh: u32,
    /// Low four bits: low nibble of byte `j` is value `j`, high nibble value `j + 16`.
    pub qs: [u8; QK5_0 / 2],
}

impl BlockQ5_0 {
    /// Reads a block from its 22 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q5_0_BYTES]) -> Self {
        let [d0, d1, h0, h1, h2, h3, qs @ ..] = *bytes;
        Self { d: u16::from_le_bytes([d0, d1]), qh: u32::from_le_bytes([h0, h1, h2, h3]), qs }
    }

    /// The block's 22 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q5_0_BYTES] {
        let mut out = [0u8; BLOCK_Q5_0_BYTES];
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..6].copy_from_slice(&self.qh.to_le_bytes());
        out[6..].copy_from_slice(&self.qs);
        out
    }

    /// Value `j` (`dequantize_row_q5_0`): with `q = nibble | (bit j of qh) << 4` in 0..=31 and
    /// `d = f16_to_f32(self.d)`, the f32 product `((q − 16) as f32) · d`.
    ///
    /// # Panics
    /// If `j ≥ 32`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        let q = i16::from(five_bits(&self.qs, self.qh, j)) - 16;
        f32::from(q) * f16_to_f32(self.d)
    }

    /// The 32 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK5_0] {
        core::array::from_fn(|j| self.value(j))
    }

    /// The block for 32 values (`quantize_row_q5_0_ref`): `max` the first value of largest
    /// magnitude, `d = max / −16`, `id = 1/d` (0 when `d` is 0), level
    /// `min(31, trunc(x·id + 16.5))`, scale stored as `f16(d)`.
    #[must_use]
    pub fn quantize(x: &[f32; QK5_0]) -> Self {
        let d = signed_absmax(x) / -16.0;
        let id = inverse(d);
        let (qh, qs) = pack5(&x.map(|v| trunc_level(v * id + 16.5, 31)));
        Self { d: f32_to_f16(d), qh, qs }
    }
}

/// One Q5_1 block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ5_1 {
    /// Scale, f16 bits.
    pub d: u16,
    /// Minimum, f16 bits.
    pub m: u16,
    /// Fifth bits: bit `j` (of the little-endian u32) belongs to value `j`.
    pub qh: u32,
    /// Low four bits: low nibble of byte `j` is value `j`, high nibble value `j + 16`.
    pub qs: [u8; QK5_1 / 2],
}

impl BlockQ5_1 {
    /// Reads a block from its 24 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q5_1_BYTES]) -> Self {
        let [d0, d1, m0, m1, h0, h1, h2, h3, qs @ ..] = *bytes;
        Self {
            d: u16::from_le_bytes([d0, d1]),
            m: u16::from_le_bytes([m0, m1]),
            qh: u32::from_le_bytes([h0, h1, h2, h3]),
            qs,
        }
    }

    /// The block's 24 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q5_1_BYTES] {
        let mut out = [0u8; BLOCK_Q5_1_BYTES];
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..4].copy_from_slice(&self.m.to_le_bytes());
        out[4..8].copy_from_slice(&self.qh.to_le_bytes());
        out[8..].copy_from_slice(&self.qs);
        out
    }

    /// Value `j` (`dequantize_row_q5_1`): with `q = nibble | (bit j of qh) << 4` in 0..=31,
    /// `d = f16_to_f32(self.d)`, `m = f16_to_f32(self.m)`: `(q as f32) · d`, then `+ m`, each
    /// rounded to f32.
    ///
    /// # Panics
    /// If `j ≥ 32`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        f32::from(five_bits(&self.qs, self.qh, j)) * f16_to_f32(self.d) + f16_to_f32(self.m)
    }

    /// The 32 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK5_1] {
        core::array::from_fn(|j| self.value(j))
    }

    /// The block for 32 values (`quantize_row_q5_1_ref`): `d = (max − min) / 31`, `id = 1/d`
    /// (0 when `d` is 0), level `trunc((x − min)·id + 0.5)` (at most 31); `d` and `min` stored
    /// as f16.
    #[must_use]
    pub fn quantize(x: &[f32; QK5_1]) -> Self {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let id = inverse(d);
        let (qh, qs) = pack5(&x.map(|v| trunc_level((v - min) * id + 0.5, 31)));
        Self { d: f32_to_f16(d), m: f32_to_f16(min), qh, qs }
    }
}

/// The 5-bit level of value `j`: its nibble and bit `j` of `qh` as the fifth bit.
fn five_bits(qs: &[u8; HALF], qh: u32, j: usize) -> u8 {
    let high = u8::from((qh >> j) & 1 != 0);
    nibble(qs, j) | (high << 4)
}

/// 32 five-bit levels as `qh` and the nibbles, as [`five_bits`] reads them.
fn pack5(levels: &[u8; 32]) -> (u32, [u8; HALF]) {
    let qh = levels.iter().enumerate().fold(0u32, |qh, (j, &l)| qh | (u32::from((l >> 4) & 1) << j));
    (qh, core::array::from_fn(|j| pack(levels[j], levels[j + HALF])))
}

/// One Q8_0 block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ8_0 {
    /// Scale, f16 bits.
    pub d: u16,
    /// Quantized values.
    pub qs: [i8; QK8_0],
}

impl BlockQ8_0 {
    /// Reads a block from its 34 bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; BLOCK_Q8_0_BYTES]) -> Self {
        let [d0, d1, qs @ ..] = *bytes;
        Self { d: u16::from_le_bytes([d0, d1]), qs: qs.map(|b| i8::from_le_bytes([b])) }
    }

    /// The block's 34 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; BLOCK_Q8_0_BYTES] {
        let mut out = [0u8; BLOCK_Q8_0_BYTES];
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        for (o, q) in out[2..].iter_mut().zip(self.qs) {
            *o = q.to_le_bytes()[0];
        }
        out
    }

    /// Value `j` (`dequantize_row_q8_0`): the f32 product `(qs[j] as f32) · f16_to_f32(d)`.
    ///
    /// # Panics
    /// If `j ≥ 32`.
    #[must_use]
    pub fn value(&self, j: usize) -> f32 {
        f32::from(self.qs[j]) * f16_to_f32(self.d)
    }

    /// The 32 values, each as [`value`](Self::value) gives it.
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK8_0] {
        core::array::from_fn(|j| self.value(j))
    }

    /// The block for 32 values (`quantize_row_q8_0_ref`): `d = amax / 127`, `id = 1/d` (0 when
    /// `d` is 0), `q = round(x·id)` (half away from zero), scale stored as `f16(d)`.
    #[must_use]
    pub fn quantize(x: &[f32; QK8_0]) -> Self {
        let amax = x.iter().fold(0.0f32, |a, &v| if a < v.abs() { v.abs() } else { a });
        let d = amax / 127.0;
        let id = inverse(d);
        Self { d: f32_to_f16(d), qs: x.map(|v| byte((v * id).round())) }
    }
}

/// ggml stores `roundf(x·id)` into an `int8_t`; `|x·id| ≤ 127` for finite input, other values
/// (NaN, infinities, undefined in C) are clamped.
fn byte(r: f32) -> i8 {
    if r >= 127.0 {
        127
    } else if r <= -127.0 {
        -127
    } else if r.is_nan() {
        0
    } else {
        // CAST: `r` is an integer in -126..=126.
        #[allow(clippy::cast_possible_truncation)]
        let q = r as i8;
        q
    }
}

macro_rules! legacy_format {
    ($block:ty, $elems:expr, $bytes:expr, $fields:expr) => {
        impl Format<$elems, $bytes> for $block {
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

            fn encode(x: &[f32; $elems]) -> Self {
                Self::quantize(x)
            }
        }
    };
}

legacy_format!(BlockQ4_0, QK4_0, BLOCK_Q4_0_BYTES, &[("scale d", 0)]);
legacy_format!(BlockQ4_1, QK4_1, BLOCK_Q4_1_BYTES, &[("scale d", 0), ("minimum m", 2)]);
legacy_format!(BlockQ5_0, QK5_0, BLOCK_Q5_0_BYTES, &[("scale d", 0)]);
legacy_format!(BlockQ5_1, QK5_1, BLOCK_Q5_1_BYTES, &[("scale d", 0), ("minimum m", 2)]);
legacy_format!(BlockQ8_0, QK8_0, BLOCK_Q8_0_BYTES, &[("scale d", 0)]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_0_known_block() {
        // d = 0.5 (0x3800); byte 0 = 0xf0: value 0 is (0 − 8)·0.5, value 16 is (15 − 8)·0.5.
        let mut bytes = [0u8; BLOCK_Q4_0_BYTES];
        bytes[..2].copy_from_slice(&0x3800u16.to_le_bytes());
        bytes[2] = 0xf0;
        bytes[17] = 0x9a;
        let b = BlockQ4_0::from_bytes(&bytes);
        assert_eq!(b.to_bytes(), bytes);
        let v = b.dequantize();
        assert_eq!((v[0], v[16], v[1]), (-4.0, 3.5, -4.0));
        assert_eq!((v[15], v[31]), (1.0, 0.5));
    }

    #[test]
    fn q4_1_nibble_order() {
        // d = 1.0 (0x3c00), m = -8.0 (0xc800); byte 0 = 0x21: value 0 is 1, value 16 is 2.
        let mut bytes = [0u8; BLOCK_Q4_1_BYTES];
        bytes[..4].copy_from_slice(&[0x00, 0x3c, 0x00, 0xc8]);
        bytes[4] = 0x21;
        let v = BlockQ4_1::from_bytes(&bytes).dequantize();
        assert_eq!(v[0], -7.0);
        assert_eq!(v[16], -6.0);
        assert_eq!(v[1], -8.0);
    }

    #[test]
    fn q5_known_blocks() {
        // d = 1.0; qh has bits 0 and 31 set; byte 0 = 0x3f, byte 15 = 0xe0.
        let mut bytes = [0u8; BLOCK_Q5_0_BYTES];
        bytes[..2].copy_from_slice(&0x3c00u16.to_le_bytes());
        bytes[2..6].copy_from_slice(&0x8000_0001u32.to_le_bytes());
        bytes[6] = 0x3f;
        bytes[21] = 0xe0;
        let b = BlockQ5_0::from_bytes(&bytes);
        assert_eq!(b.to_bytes(), bytes);
        let v = b.dequantize();
        // Value 0: 0xf | 0x10 = 31 → 15; value 16: 3 → −13; value 31: 14 | 16 = 30 → 14; value 1: −16.
        assert_eq!((v[0], v[16], v[31], v[1]), (15.0, -13.0, 14.0, -16.0));
        // Q5_1 with d = 0.5 and m = −1 (0xbc00) and the same nibbles and high bits.
        let mut bytes = [0u8; BLOCK_Q5_1_BYTES];
        bytes[..4].copy_from_slice(&[0x00, 0x38, 0x00, 0xbc]);
        bytes[4..8].copy_from_slice(&0x8000_0001u32.to_le_bytes());
        bytes[8] = 0x3f;
        bytes[23] = 0xe0;
        let b = BlockQ5_1::from_bytes(&bytes);
        assert_eq!(b.to_bytes(), bytes);
        let v = b.dequantize();
        assert_eq!((v[0], v[16], v[31], v[1]), (14.5, 0.5, 14.0, -1.0));
    }

    #[test]
    fn q8_0_known_block() {
        let mut bytes = [0u8; BLOCK_Q8_0_BYTES];
        bytes[..2].copy_from_slice(&0x3800u16.to_le_bytes()); // 0.5
        bytes[2] = 0x81; // -127
        bytes[33] = 4;
        let v = BlockQ8_0::from_bytes(&bytes).dequantize();
        assert_eq!(v[0], -63.5);
        assert_eq!(v[31], 2.0);
        assert_eq!(BlockQ8_0::from_bytes(&bytes).to_bytes(), bytes);
    }

    #[test]
    fn quantize_matches_hand_computed_blocks() {
        let x: [f32; 32] = core::array::from_fn(|i| f32::from(u8::try_from(i).unwrap_or(0)) - 8.0);
        // Q4_1: min -8, max 23, d = 31/15.
        let b = BlockQ4_1::quantize(&x);
        assert_eq!(f16_to_f32(b.m), -8.0);
        assert_eq!(b.d, f32_to_f16(31.0 / 15.0));
        assert_eq!(b.qs[0] & 0x0f, 0);
        assert_eq!(b.qs[15] >> 4, 15);
        // Q8_0: amax 23, value 23 → 127, value -8 → round(-8·127/23) = -44.
        let b = BlockQ8_0::quantize(&x);
        assert_eq!(b.qs[31], 127);
        assert_eq!(b.qs[0], -44);
        // Q4_0: max 23, d = −23/8; value 23 → trunc(−8 + 8.5) = 0, value −8 → trunc(8·8/23 + 8.5)
        // = trunc(11.28) = 11, value 0 → 8.
        let b = BlockQ4_0::quantize(&x);
        assert_eq!(f16_to_f32(b.d), f16_to_f32(f32_to_f16(-23.0 / 8.0)));
        assert_eq!((b.qs[15] >> 4, b.qs[0] & 0x0f, b.qs[8] & 0x0f), (0, 11, 8));
        // Q5_0: d = −23/16; value 23 → 0, value −8 → trunc(8·16/23 + 16.5) = trunc(22.07) = 22.
        let b = BlockQ5_0::quantize(&x);
        assert_eq!(b.qh & 1, 1);
        assert_eq!(b.qs[0] & 0x0f, 22 - 16);
        assert_eq!((b.qs[15] >> 4, b.qh >> 31), (0, 0));
        // Q5_1: d = 31/31 = 1, m = −8: value i is level i exactly.
        let b = BlockQ5_1::quantize(&x);
        assert_eq!((f16_to_f32(b.d), f16_to_f32(b.m)), (1.0, -8.0));
        assert_eq!(b.dequantize(), x);
    }
}
