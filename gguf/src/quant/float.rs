//! The plain float types, each value a "block" of one: F32, F16 and BF16.

use crate::f16::{f16_to_f32, f32_to_f16};

use super::Format;

/// The f32 value of the bfloat16 number with bits `h`: its bits become the top half of an f32
/// (exact, NaN payloads kept; ggml's `GGML_BF16_TO_FP32`, gguf-py's `BF16.dequantize_blocks`).
#[must_use]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// The bfloat16 bits for `f`, as ggml's `ggml_compute_fp32_to_bf16` and gguf-py's
/// `BF16.quantize_blocks` compute them: a NaN keeps its sign and the top of its payload and is
/// made quiet (bit 6 of the result set); every other value is rounded to nearest, ties to even,
/// on its bits (so values past the largest bfloat16 become ±inf, and subnormals are kept).
#[must_use]
pub fn f32_to_bf16(f: f32) -> u16 {
    let u = f.to_bits();
    let top = if u & 0x7fff_ffff > 0x7f80_0000 {
        (u >> 16) | 0x40
    } else {
        // INVARIANT: `u ≤ 0xff80_0000` here (the largest non-NaN bits, −inf), so adding at most
        // 0x8000 cannot overflow.
        (u + 0x7fff + ((u >> 16) & 1)) >> 16
    };
    u16::try_from(top).unwrap_or(u16::MAX)
}

/// One F32 value.
#[derive(Debug, Clone, Copy)]
pub(super) struct F32Value(f32);

impl Format<1, 4> for F32Value {
    fn read(bytes: &[u8; 4]) -> Self {
        Self(f32::from_le_bytes(*bytes))
    }

    fn write(&self) -> [u8; 4] {
        self.0.to_le_bytes()
    }

    fn value(&self, _j: usize) -> f32 {
        self.0
    }

    fn encode(x: &[f32; 1]) -> Self {
        Self(x[0])
    }

    fn non_finite(bytes: &[u8; 4]) -> Option<(&'static str, usize, f32)> {
        let v = f32::from_le_bytes(*bytes);
        (!v.is_finite()).then_some(("value", 0, v))
    }
}

/// One F16 value (binary16 bits).
#[derive(Debug, Clone, Copy)]
pub(super) struct F16Value(u16);

impl Format<1, 2> for F16Value {
    const HALF_FIELDS: &'static [(&'static str, usize)] = &[("value", 0)];

    fn read(bytes: &[u8; 2]) -> Self {
        Self(u16::from_le_bytes(*bytes))
    }

    fn write(&self) -> [u8; 2] {
        self.0.to_le_bytes()
    }

    fn value(&self, _j: usize) -> f32 {
        f16_to_f32(self.0)
    }

    fn encode(x: &[f32; 1]) -> Self {
        Self(f32_to_f16(x[0]))
    }
}

/// One BF16 value (bfloat16 bits).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bf16Value(u16);

impl Format<1, 2> for Bf16Value {
    fn read(bytes: &[u8; 2]) -> Self {
        Self(u16::from_le_bytes(*bytes))
    }

    fn write(&self) -> [u8; 2] {
        self.0.to_le_bytes()
    }

    fn value(&self, _j: usize) -> f32 {
        bf16_to_f32(self.0)
    }

    fn encode(x: &[f32; 1]) -> Self {
        Self(f32_to_bf16(x[0]))
    }

    fn non_finite(bytes: &[u8; 2]) -> Option<(&'static str, usize, f32)> {
        let v = bf16_to_f32(u16::from_le_bytes(*bytes));
        (!v.is_finite()).then_some(("value", 0, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_known_values() {
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(bf16_to_f32(0xc000), -2.0);
        assert_eq!(bf16_to_f32(0x7f80), f32::INFINITY);
        assert_eq!(bf16_to_f32(0x0001).to_bits(), 0x0001_0000);
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even keeps 1.
        assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8)), 0x3f80);
        // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even rounds up.
        assert_eq!(f32_to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 0x3f81);
        // The largest f32 rounds up to infinity; a subnormal stays subnormal.
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x0001_8000)), 0x0002);
        // A signalling NaN is quieted with the top of its payload: 0x7f81_0000 → 0x7fc1.
        assert_eq!(f32_to_bf16(f32::from_bits(0x7f81_0000)), 0x7fc1);
        assert_eq!(f32_to_bf16(f32::from_bits(0xff80_0001)), 0xffc0);
        assert_eq!(f32_to_bf16(-0.0), 0x8000);
    }
}
