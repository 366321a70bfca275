//! The kernels' `exp`: `rl_expf` of `hip/device.h`, operation for operation.
//!
//! The device library's `expf` is not reproducible on the host, so the kernels use their own,
//! built only from `+`, `-`, `*`, comparisons and bit operations, each of which rounds the same
//! on the GPU (built with `-ffp-contract=off`) and on the host.

/// Adding `1.5 * 2^23` to an `f32` of magnitude below `2^22` rounds it to an integer (ties to
/// even), which then sits in the low mantissa bits.
const ROUND: f32 = 12_582_912.0;
/// `log2(e)` rounded to `f32`.
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// `ln 2` split (Cody–Waite): `LN2_HI` has 9 significant bits, so `n * LN2_HI` is exact for
/// `|n| < 2^15`; `LN2_HI + LN2_LO` is `ln 2` to about 2^-33.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// Above: `e^x` exceeds `f32::MAX`. Below: `e^x < 2^-150` rounds to 0.
const HI: f32 = 89.0;
const LO: f32 = -104.0;
/// The Cephes `expf` polynomial for `(e^r - 1 - r) / r^2` on `|r| <= ln2 / 2`, highest degree
/// first.
const POLY: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 5.0e-1];

/// `2^k` for `-126 <= k <= 127`, from its exponent bits.
fn pow2i(k: i32) -> f32 {
    debug_assert!((-126..=127).contains(&k));
    f32::from_bits((k + 127).cast_unsigned() << 23)
}

/// `e^x` exactly as the kernels compute it (`rl_expf` in `hip/device.h`): at most 2 ulp from the
/// correctly rounded result for normal results (tested against `f64::exp`), `+inf` above 89,
/// `0.0` below -104, NaN returned unchanged.
#[must_use]
pub fn expf(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x > HI {
        return f32::INFINITY;
    }
    if x < LO {
        return 0.0;
    }
    let t = x * LOG2E + ROUND;
    // |x * LOG2E| <= 151 < 2^22: t's low mantissa bits hold n, so the bit difference is n.
    let n = t.to_bits().cast_signed() - ROUND.to_bits().cast_signed();
    let nf = t - ROUND;
    let r = x - nf * LN2_HI;
    let r = r - nf * LN2_LO;
    let mut p = POLY[0];
    for &c in &POLY[1..] {
        p = p * r + c;
    }
    let y = p * (r * r) + r + 1.0;
    // n lies in [-150, 128]: 2^n is applied in two exact steps where it is not a normal f32,
    // so that only the last multiply rounds.
    if n > 127 {
        y * pow2i(127) * pow2i(n - 127)
    } else if n < -126 {
        y * pow2i(n + 100) * pow2i(-100)
    } else {
        y * pow2i(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `f32` literals of `rl_expf` in `hip/device.h`, in source order.
    fn header_literals() -> Vec<f32> {
        let header = include_str!("../../hip/device.h");
        let body = &header[header.find("#define EXP_ROUND").unwrap()..];
        let body = &body[..body.find("if (n > 127)").unwrap()];
        let mut out = Vec::new();
        for token in body.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ';') {
            if let Some(number) = token.strip_suffix('f')
                && number.contains('.')
                && let Ok(v) = number.parse::<f32>()
            {
                out.push(v);
            }
        }
        out
    }

    #[test]
    fn constants_are_the_device_header_literals() {
        // Parsed with round-to-nearest, as clang parses them: the defines, the `return 0.0f` of
        // the underflow branch, the polynomial, and the final `+ 1.0f`.
        let mut expected = vec![ROUND, LOG2E, LN2_HI, LN2_LO, HI, LO, 0.0];
        expected.extend(POLY);
        expected.push(1.0);
        let got = header_literals();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn special_values() {
        assert_eq!(expf(0.0), 1.0);
        assert_eq!(expf(-0.0), 1.0);
        assert_eq!(expf(f32::INFINITY), f32::INFINITY);
        assert_eq!(expf(f32::NEG_INFINITY), 0.0);
        assert_eq!(expf(89.5), f32::INFINITY);
        assert_eq!(expf(-104.5), 0.0);
        let nan = f32::from_bits(0x7fc0_1234);
        assert_eq!(expf(nan).to_bits(), nan.to_bits());
        // e^88.7 is finite, e^88.73 overflows (ln f32::MAX = 88.72284).
        assert!(expf(88.7).is_finite());
        assert_eq!(expf(88.73), f32::INFINITY);
        // e^-103.9 is the smallest subnormal's neighbourhood, not 0.
        assert!(expf(-103.0) > 0.0 && expf(-103.0) < f32::MIN_POSITIVE);
    }
}
