//! The kernels' `exp`: `rl_expf` of `kernels/hip/device.h`, operation for operation.
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

/// `e^x` exactly as the kernels compute it (`rl_expf` in `kernels/hip/device.h`): at most 2 ulp from the
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
    let (y, n) = reduced(x);
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

/// `(y, n)` with `e^x = y * 2^n` for `LO <= x <= HI`, as `rl_expf` computes them: `n` the nearest
/// integer to `x * log2(e)`, `y = e^r` by the polynomial on `r = x - n * ln 2` (Cody–Waite).
#[inline(always)]
fn reduced(x: f32) -> (f32, i32) {
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
    (p * (r * r) + r + 1.0, n)
}

/// [`expf`] without branches, for loops that vectorise: every input's result has [`expf`]'s
/// bits (tested over every input range). The polynomial and scaling run on `x` where [`expf`]
/// computes them and on `0.0` otherwise, and the result is chosen by the same comparisons; the
/// power of two is applied as `(y * 2^a) * 2^b` with `b = 0` where [`expf`] multiplies once, and
/// multiplying by `1.0` is exact.
#[inline(always)]
#[must_use]
pub(crate) fn expf_select(x: f32) -> f32 {
    let computed = (LO..=HI).contains(&x);
    let (y, n) = reduced(if computed { x } else { 0.0 });
    let (a, b) = if n > 127 {
        (127, n - 127)
    } else if n < -126 {
        (n + 100, -100)
    } else {
        (n, 0)
    };
    let v = y * pow2i(a) * pow2i(b);
    if x.is_nan() {
        x
    } else if x > HI {
        f32::INFINITY
    } else if x < LO {
        0.0
    } else {
        v
    }
}

/// `xs[i] = expf(xs[i] - shift)` for every `i`, compiled for `isa` (see
/// [`super::simd::compiled_for`]): the bits of [`expf`] on each `xs[i] - shift`.
pub(crate) fn exp_shifted(isa: Option<super::simd::Isa>, xs: &mut [f32], shift: f32) {
    super::simd::compiled_for(
        isa,
        #[inline(always)]
        || {
            for x in xs.iter_mut() {
                *x = expf_select(*x - shift);
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input class: both signs of each exponent with random mantissas, the bounds `LO` and
    /// `HI` and their neighbours, the ranges where `2^n` is applied in two steps, zeros,
    /// infinities and NaNs with payloads.
    fn inputs() -> Vec<f32> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut xs = Vec::new();
        for sign in [0u32, 1 << 31] {
            for exponent in 0u32..=255 {
                for _ in 0..64 {
                    let mantissa = u32::try_from(next() & 0x7f_ffff).unwrap_or(0);
                    xs.push(f32::from_bits(sign | exponent << 23 | mantissa));
                }
            }
        }
        for edge in [LO, HI, 88.0, -87.0, -87.5, -88.0, -100.0, 0.0, -0.0] {
            let bits = edge.to_bits();
            xs.extend((bits.saturating_sub(300)..=bits.saturating_add(300)).map(f32::from_bits));
        }
        // Uniform over the computed range and a little past it, in steps of 2^-8.
        for _ in 0..20_000 {
            let step = u16::try_from(next() % 50_000).unwrap_or(0);
            xs.push(f32::from(step) / 256.0 - 105.0);
        }
        xs.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::from_bits(0xffc0_0001),
            f32::from_bits(0x7f80_0001),
        ]);
        xs
    }

    #[test]
    fn the_select_form_gives_expf_bits_on_every_input_class() {
        for x in inputs() {
            assert_eq!(expf_select(x).to_bits(), expf(x).to_bits(), "exp({x:e}), bits {:#010x}", x.to_bits());
        }
    }

    #[test]
    fn exp_shifted_gives_expf_bits_on_every_instruction_set() {
        let xs = inputs();
        for shift in [0.0f32, 3.5, -2.25, f32::INFINITY, f32::NAN] {
            let expected: Vec<u32> = xs.iter().map(|&x| expf(x - shift).to_bits()).collect();
            let isas = super::super::simd::available_for_tests().into_iter().map(Some).chain([None]);
            for isa in isas {
                let mut got = xs.clone();
                exp_shifted(isa, &mut got, shift);
                let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                assert!(got == expected, "{isa:?}, shift {shift}: a result differs from expf's bits");
            }
        }
    }

    /// The `f32` literals of `rl_expf` in `kernels/hip/device.h`, in source order.
    fn header_literals() -> Vec<f32> {
        let header = include_str!("../../../kernels/hip/device.h");
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
