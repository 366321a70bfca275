//! The kernels' `tanh` (`cpu::tanhf`, the mirror of `rl_tanhf` in `hip/gemma.hip`) against
//! `f64::tanh` over a dense sweep of every representable input and random inputs: at most 2 ulp
//! of the result (measured: 1.30 ulp, in the `exp` branch just above 0.625), odd to the bit,
//! exact at 0 and at the limits.
//!
//! `f64::tanh` is accurate to about 1 ulp of f64, 2^-29 of an f32 ulp: it serves as exact here.

mod common;

use common::Rng;
use kernel_refs::cpu::tanhf;

/// The error of `got` against `exact` in units of the f32 spacing at `|exact|` (2^-149 below the
/// normal range).
fn ulp_error(got: f32, exact: f64) -> f64 {
    let magnitude = exact.abs();
    let spacing = if magnitude < f64::from(f32::MIN_POSITIVE) {
        2f64.powi(-149)
    } else {
        // CAST: log2 of a finite f32 value in (0, 1] lies in [-126, 0].
        #[allow(clippy::cast_possible_truncation)]
        let exponent = magnitude.log2().floor() as i32;
        2f64.powi(exponent - 23)
    };
    (f64::from(got) - exact).abs() / spacing
}

#[derive(Default)]
struct Worst {
    error: f64,
    at: f32,
    count: u64,
}

impl Worst {
    /// Checks `x` and `-x`: the error of `tanh(x)`, and `tanh(-x) = -tanh(x)` bit for bit.
    fn check(&mut self, x: f32) {
        let got = tanhf(x);
        let err = ulp_error(got, f64::from(x).tanh());
        if err > self.error {
            (self.error, self.at) = (err, x);
        }
        assert_eq!(tanhf(-x).to_bits(), (-got).to_bits(), "tanh(-{x:e}) is -tanh({x:e})");
        assert!(got.abs() <= 1.0, "tanh({x:e}) = {got:e}");
        self.count += 1;
    }
}

#[test]
fn within_two_ulp_of_f64_over_a_dense_sweep_and_random_inputs() {
    let mut worst = Worst::default();
    // Every 61st bit pattern from +0 to +inf (about 35 million inputs, with their negations):
    // every binade, subnormals included, both branches, the saturated range.
    for bits in (0..=f32::INFINITY.to_bits()).step_by(61) {
        worst.check(f32::from_bits(bits));
    }
    // Every input within 4096 ulp of the branch points (0.625, 10) and of 13 ln 2 = 9.011, from
    // where tanh rounds to 1.
    for edge in [0.625f32, 10.0, 9.010_913] {
        let bits = edge.to_bits();
        for b in bits - 4096..=bits + 4096 {
            worst.check(f32::from_bits(b));
        }
    }
    let mut rng = Rng(0x7a4f);
    for _ in 0..1_000_000 {
        worst.check(rng.f32_in(0.0, 10.0));
    }
    for _ in 0..200_000 {
        worst.check(rng.f32_in(0.0, 1.0));
    }
    eprintln!(
        "tanhf: {} inputs and their negations, max error {:.3} ulp at x = {:e}",
        worst.count, worst.error, worst.at
    );
    assert!(worst.error <= 2.0, "max {} ulp at {:e}", worst.error, worst.at);
}

#[test]
fn exact_points_signs_and_limits() {
    assert_eq!(tanhf(0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(tanhf(-0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(tanhf(f32::INFINITY), 1.0);
    assert_eq!(tanhf(f32::NEG_INFINITY), -1.0);
    assert_eq!(tanhf(f32::MAX), 1.0);
    assert_eq!(tanhf(-f32::MAX), -1.0);
    // tanh(x) = x - x^3 / 3 + ...: x itself where x^3 / 3 is below half an ulp of x.
    for x in [f32::from_bits(1), f32::MIN_POSITIVE, 1e-30, 1e-6, -1e-6, 2e-4] {
        assert_eq!(tanhf(x), x, "tanh({x:e})");
    }
    // 1 - tanh(a) < 2^-25 (rounds to 1) from 13 ln 2 = 9.0109... on; below, 1 - 2^-24.
    assert_eq!(tanhf(9.02), 1.0);
    assert_eq!(tanhf(9.0), 1.0 - f32::EPSILON / 2.0);
    let nan = f32::from_bits(0x7fc0_1234);
    assert_eq!(tanhf(nan).to_bits(), nan.to_bits());
    assert_eq!(tanhf(-nan).to_bits(), (-nan).to_bits());
}

#[test]
fn increasing_across_the_branch_points() {
    // The polynomial and the exp branch meet at 0.625 without a step back, and the exp branch
    // meets the saturated 1 at 10.
    for edge in [0.625f32, 10.0] {
        let bits = edge.to_bits();
        let values: Vec<f32> = (bits - 64..=bits + 64).map(|b| tanhf(f32::from_bits(b))).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "around {edge}: {values:?}");
    }
}
