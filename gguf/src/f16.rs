//! IEEE 754 binary16 ↔ binary32, bit-exact: subnormals and infinities kept, NaNs quieted with
//! the top of their payload, f32 → f16 rounded to nearest, ties to even (as ggml's
//! `GGML_FP32_TO_FP16` on hardware with F16C, and as gguf-py's numpy `astype(float16)`).

const F32_EXP_MASK: u32 = 0xff;
const F32_MAN_BITS: u32 = 23;
const F32_MAN_MASK: u32 = (1 << F32_MAN_BITS) - 1;
const F32_QUIET: u32 = 1 << (F32_MAN_BITS - 1);
const F16_MAN_BITS: u32 = 10;
const F16_EXP_MAX: u32 = 0x1f;
const F16_INF: u16 = 0x7c00;
const F16_QUIET: u16 = 0x0200;
/// f32 exponent bias minus f16 exponent bias.
const BIAS_DIFF: u32 = 127 - 15;

/// The f32 value of the binary16 number with bits `h` (exact: every f16 is an f32).
#[must_use]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> F16_MAN_BITS) & F16_EXP_MAX;
    let man = u32::from(h) & ((1 << F16_MAN_BITS) - 1);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: shift the mantissa up until its leading one is the implicit bit.
            let shift = man.leading_zeros() - (32 - F16_MAN_BITS - 1);
            let man = (man << shift) & ((1 << F16_MAN_BITS) - 1);
            let exp = BIAS_DIFF + 1 - shift;
            sign | (exp << F32_MAN_BITS) | (man << (F32_MAN_BITS - F16_MAN_BITS))
        }
        (F16_EXP_MAX, 0) => sign | (F32_EXP_MASK << F32_MAN_BITS),
        // NaN comes out quiet with its payload, as F16C's `vcvtph2ps` and numpy convert it.
        (F16_EXP_MAX, _) => sign | (F32_EXP_MASK << F32_MAN_BITS) | F32_QUIET | (man << (F32_MAN_BITS - F16_MAN_BITS)),
        _ => sign | ((exp + BIAS_DIFF) << F32_MAN_BITS) | (man << (F32_MAN_BITS - F16_MAN_BITS)),
    };
    f32::from_bits(bits)
}

/// The binary16 bits nearest to `f` (ties to even); out-of-range values become ±inf, NaN
/// stays NaN (quieted, with the top of its payload).
#[must_use]
pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = half_bits((x >> 16) & 0x8000);
    let exp = (x >> F32_MAN_BITS) & F32_EXP_MASK;
    let man = x & F32_MAN_MASK;
    if exp == F32_EXP_MASK {
        let payload = half_bits(man >> (F32_MAN_BITS - F16_MAN_BITS));
        return if man == 0 { sign | F16_INF } else { sign | F16_INF | F16_QUIET | payload };
    }
    // Biased f16 exponent, as a signed value: below 1 the result is subnormal or zero.
    let half_exp = i64::from(exp) - i64::from(BIAS_DIFF);
    if half_exp >= i64::from(F16_EXP_MAX) {
        return sign | F16_INF;
    }
    if half_exp <= 0 {
        // Below half the smallest subnormal (2^-25) everything rounds to zero.
        if half_exp < -10 {
            return sign;
        }
        let man = man | (1 << F32_MAN_BITS);
        let shift = u32::try_from(14 - half_exp).unwrap_or(24);
        let mut half_man = man >> shift;
        if round_up(man, 1 << (shift - 1)) {
            half_man += 1;
        }
        return sign | half_bits(half_man);
    }
    let half_exp = u32::try_from(half_exp).unwrap_or(0);
    let mut bits = (half_exp << F16_MAN_BITS) | (man >> (F32_MAN_BITS - F16_MAN_BITS));
    // A carry out of the mantissa correctly bumps the exponent, up to infinity.
    if round_up(man, 1 << (F32_MAN_BITS - F16_MAN_BITS - 1)) {
        bits += 1;
    }
    sign | half_bits(bits)
}

/// Round to nearest, ties to even: the round bit is set and either a lower bit (sticky) or the
/// result's lowest bit (`2 * round_bit`) is set.
fn round_up(man: u32, round_bit: u32) -> bool {
    man & round_bit != 0 && man & (3 * round_bit - 1) != 0
}

/// The low 16 bits; every caller passes a value below `1 << 16`.
fn half_bits(bits: u32) -> u16 {
    u16::try_from(bits & 0xffff).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        // 65520 is halfway between 65504 and 65536 (= inf): ties to even rounds up.
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0x0000);
        assert_eq!(f32_to_f16(2f32.powi(-25) * 1.5), 0x0001);
        assert_eq!(f32_to_f16(-0.0), 0x8000);
        // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: the even mantissa (1.0) wins.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
    }
}
