//! The ggml block formats this crate reads and writes, bit-exact with ggml's reference code
//! (`ggml-common.h` block structs, `dequantize_row_*` and `quantize_row_*_ref` in
//! `ggml-quants.c`).
//!
//! - Q4_1 (`block_q4_1`, 20 bytes per 32 values): f16 scale `d`, f16 minimum `m`, then 16 bytes
//!   of nibbles: byte `j`'s low nibble is value `j`, its high nibble value `j + 16`;
//!   `x = q·d + m`.
//! - Q8_0 (`block_q8_0`, 34 bytes per 32 values): f16 scale `d`, then 32 `i8`; `x = q·d`.

use crate::f16::{f16_to_f32, f32_to_f16};
use crate::types::GgmlType;

/// Values per Q4_1 block (`QK4_1`).
pub const QK4_1: usize = 32;
/// Bytes per Q4_1 block.
pub const BLOCK_Q4_1_BYTES: usize = 2 + 2 + QK4_1 / 2;
/// Values per Q8_0 block (`QK8_0`).
pub const QK8_0: usize = 32;
/// Bytes per Q8_0 block.
pub const BLOCK_Q8_0_BYTES: usize = 2 + QK8_0;

/// Why a row could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantError {
    /// The type has no decoder/encoder here.
    #[error("unsupported type {ty} (F32, F16, Q4_1 and Q8_0 are)")]
    UnsupportedType {
        /// The type.
        ty: GgmlType,
    },
    /// A value count that is not a whole number of blocks.
    #[error("{elements} values are not a whole number of {ty} blocks of {block}")]
    NotBlockMultiple {
        /// The type.
        ty: GgmlType,
        /// The value count.
        elements: usize,
        /// Values per block.
        block: usize,
    },
    /// Encoded bytes whose length does not match the value count.
    #[error("{ty}: {elements} values take {expected} bytes, got {found}")]
    LengthMismatch {
        /// The type.
        ty: GgmlType,
        /// The value count.
        elements: usize,
        /// Bytes those values take.
        expected: usize,
        /// Bytes given.
        found: usize,
    },
    /// A row index past the tensor's last row.
    #[error("row {row} is past the last of {rows} rows")]
    RowOutOfRange {
        /// The row asked for.
        row: u64,
        /// Rows in the tensor.
        rows: u64,
    },
    /// A tensor with more elements than this target can address.
    #[error("{elements} elements do not fit in memory on this target")]
    TooLarge {
        /// The element count.
        elements: u64,
    },
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

    /// The 32 values (`dequantize_row_q4_1`).
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK4_1] {
        let d = f16_to_f32(self.d);
        let m = f16_to_f32(self.m);
        let mut out = [0.0; QK4_1];
        for (j, &q) in self.qs.iter().enumerate() {
            out[j] = f32::from(q & 0x0f) * d + m;
            out[j + QK4_1 / 2] = f32::from(q >> 4) * d + m;
        }
        out
    }

    /// The block for 32 values (`quantize_row_q4_1_ref`).
    #[must_use]
    pub fn quantize(x: &[f32; QK4_1]) -> Self {
        let (min, max) = x.iter().fold((f32::MAX, -f32::MAX), |(lo, hi), &v| {
            // The comparisons mirror ggml's `if (v < min)`, which never takes a NaN.
            (if v < lo { v } else { lo }, if v > hi { v } else { hi })
        });
        let d = (max - min) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0u8; QK4_1 / 2];
        for (j, q) in qs.iter_mut().enumerate() {
            let lo = nibble((x[j] - min) * id);
            let hi = nibble((x[j + QK4_1 / 2] - min) * id);
            *q = lo | (hi << 4);
        }
        Self { d: f32_to_f16(d), m: f32_to_f16(min), qs }
    }
}

/// ggml's `MIN(15, (int8_t)(x + 0.5f))` for `x ≥ 0`: truncation toward zero after adding one
/// half. Values outside `0..=15` (only possible from NaN or infinite input, undefined in C) are
/// clamped.
fn nibble(x: f32) -> u8 {
    let t = (x + 0.5).trunc();
    if t >= 15.0 {
        15
    } else if t >= 1.0 {
        // CAST: `t` is an integer in 1..15, exactly representable in u8.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let q = t as u8;
        q
    } else {
        0
    }
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

    /// The 32 values (`dequantize_row_q8_0`).
    #[must_use]
    pub fn dequantize(&self) -> [f32; QK8_0] {
        let d = f16_to_f32(self.d);
        self.qs.map(|q| f32::from(q) * d)
    }

    /// The block for 32 values (`quantize_row_q8_0_ref`).
    #[must_use]
    pub fn quantize(x: &[f32; QK8_0]) -> Self {
        let amax = x.iter().fold(0.0f32, |a, &v| if a < v.abs() { v.abs() } else { a });
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
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

fn check_len(ty: GgmlType, elements: usize, found: usize) -> Result<(), QuantError> {
    let (block, block_bytes) = match ty {
        GgmlType::F32 => (1, 4),
        GgmlType::F16 => (1, 2),
        GgmlType::Q4_1 => (QK4_1, BLOCK_Q4_1_BYTES),
        GgmlType::Q8_0 => (QK8_0, BLOCK_Q8_0_BYTES),
        ty => return Err(QuantError::UnsupportedType { ty }),
    };
    if !elements.is_multiple_of(block) {
        return Err(QuantError::NotBlockMultiple { ty, elements, block });
    }
    let expected = (elements / block).saturating_mul(block_bytes);
    if expected != found {
        return Err(QuantError::LengthMismatch { ty, elements, expected, found });
    }
    Ok(())
}

/// Decodes `bytes` of type `ty` into `out` (as many values as `out` holds).
///
/// # Errors
/// [`QuantError`] for another type, a partial block, or a length mismatch.
pub fn dequantize_row(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<(), QuantError> {
    check_len(ty, out.len(), bytes.len())?;
    match ty {
        GgmlType::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        GgmlType::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
            }
        }
        GgmlType::Q4_1 => {
            for (o, b) in out.as_chunks_mut::<QK4_1>().0.iter_mut().zip(bytes.as_chunks::<BLOCK_Q4_1_BYTES>().0) {
                *o = BlockQ4_1::from_bytes(b).dequantize();
            }
        }
        GgmlType::Q8_0 => {
            for (o, b) in out.as_chunks_mut::<QK8_0>().0.iter_mut().zip(bytes.as_chunks::<BLOCK_Q8_0_BYTES>().0) {
                *o = BlockQ8_0::from_bytes(b).dequantize();
            }
        }
        ty => return Err(QuantError::UnsupportedType { ty }),
    }
    Ok(())
}

/// Encodes `x` as type `ty` into `out`, which must be exactly the encoded size.
///
/// # Errors
/// [`QuantError`] for another type, a partial block, or a length mismatch.
pub fn quantize_row(ty: GgmlType, x: &[f32], out: &mut [u8]) -> Result<(), QuantError> {
    check_len(ty, x.len(), out.len())?;
    match ty {
        GgmlType::F32 => {
            for (o, v) in out.chunks_exact_mut(4).zip(x) {
                o.copy_from_slice(&v.to_le_bytes());
            }
        }
        GgmlType::F16 => {
            for (o, v) in out.chunks_exact_mut(2).zip(x) {
                o.copy_from_slice(&f32_to_f16(*v).to_le_bytes());
            }
        }
        GgmlType::Q4_1 => {
            for (o, v) in out.as_chunks_mut::<BLOCK_Q4_1_BYTES>().0.iter_mut().zip(x.as_chunks::<QK4_1>().0) {
                *o = BlockQ4_1::quantize(v).to_bytes();
            }
        }
        GgmlType::Q8_0 => {
            for (o, v) in out.as_chunks_mut::<BLOCK_Q8_0_BYTES>().0.iter_mut().zip(x.as_chunks::<QK8_0>().0) {
                *o = BlockQ8_0::quantize(v).to_bytes();
            }
        }
        ty => return Err(QuantError::UnsupportedType { ty }),
    }
    Ok(())
}

/// Encodes `x` as Q4_1 (`quantize_row_q4_1_ref`) into `out` (`x.len() / 32 * 20` bytes).
///
/// # Errors
/// [`QuantError`] for a partial block or a length mismatch.
pub fn quantize_row_q4_1(x: &[f32], out: &mut [u8]) -> Result<(), QuantError> {
    quantize_row(GgmlType::Q4_1, x, out)
}

/// Encodes `x` as Q8_0 (`quantize_row_q8_0_ref`) into `out` (`x.len() / 32 * 34` bytes).
///
/// # Errors
/// [`QuantError`] for a partial block or a length mismatch.
pub fn quantize_row_q8_0(x: &[f32], out: &mut [u8]) -> Result<(), QuantError> {
    quantize_row(GgmlType::Q8_0, x, out)
}

/// Encodes `x` as type `ty` into a new vector.
///
/// # Errors
/// [`QuantError`] for another type or a partial block.
pub fn quantize(ty: GgmlType, x: &[f32]) -> Result<Vec<u8>, QuantError> {
    let elements = x.len();
    let len = u64::try_from(elements).ok().and_then(|n| ty.bytes_for(n)).and_then(|n| usize::try_from(n).ok());
    let Some(len) = len.filter(|_| ty.is_supported()) else {
        return Err(match ty.layout() {
            Some(layout) if ty.is_supported() => QuantError::NotBlockMultiple {
                ty,
                elements,
                block: usize::try_from(layout.block_elems).unwrap_or(usize::MAX),
            },
            _ => QuantError::UnsupportedType { ty },
        });
    };
    let mut out = vec![0u8; len];
    quantize_row(ty, x, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn lengths_are_checked() {
        let mut out = [0.0f32; 32];
        assert_eq!(
            dequantize_row(GgmlType::Q8_0, &[0; 33], &mut out),
            Err(QuantError::LengthMismatch { ty: GgmlType::Q8_0, elements: 32, expected: 34, found: 33 })
        );
        assert_eq!(
            dequantize_row(GgmlType::Q4_0, &[0; 18], &mut out),
            Err(QuantError::UnsupportedType { ty: GgmlType::Q4_0 })
        );
        assert!(matches!(quantize(GgmlType::Q4_1, &[0.0; 31]), Err(QuantError::NotBlockMultiple { .. })));
    }
}
