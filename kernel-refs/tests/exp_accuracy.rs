//! The kernels' `exp` (`cpu::expf`, the mirror of `rl_expf` in `hip/device.h`) against `f64::exp`
//! over a dense sweep of every representable input range and random inputs: at most 2 ulp for
//! normal results, at most 1 unit of 2^-149 for subnormal ones.
//!
//! `f64::exp` is accurate to about 1 ulp of f64, 2^-29 of an f32 ulp: it serves as exact here.

mod common;

use common::Rng;
use kernel_refs::cpu::expf;

/// The error of `got` against `exact` in units of the f32 spacing at `exact` (2^-149 below the
/// normal range).
fn ulp_error(got: f32, exact: f64) -> f64 {
    let spacing = if exact < f64::from(f32::MIN_POSITIVE) {
        2f64.powi(-149)
    } else {
        // CAST: log2 of a finite f32 value lies in [-150, 129].
        #[allow(clippy::cast_possible_truncation)]
        let exponent = exact.log2().floor() as i32;
        2f64.powi(exponent - 23)
    };
    (f64::from(got) - exact).abs() / spacing
}

#[derive(Default)]
struct Worst {
    normal: f64,
    normal_at: f32,
    subnormal: f64,
    count: u64,
}

impl Worst {
    fn check(&mut self, x: f32) {
        let exact = f64::from(x).exp();
        let got = expf(x);
        if exact > f64::from(f32::MAX) {
            assert_eq!(got, f32::INFINITY, "exp({x:e}) overflows");
            return;
        }
        let err = ulp_error(got, exact);
        if exact >= f64::from(f32::MIN_POSITIVE) {
            if err > self.normal {
                (self.normal, self.normal_at) = (err, x);
            }
        } else {
            self.subnormal = self.subnormal.max(err);
        }
        self.count += 1;
    }
}

#[test]
fn within_two_ulp_of_f64_over_a_dense_sweep_and_random_inputs() {
    let mut worst = Worst::default();
    // Every 257th bit pattern of both signs up to |x| = 104 (about 8.7 million inputs), which
    // visits every binade and every range-reduction interval.
    let top = 104.0f32.to_bits();
    for bits in (0..=top).step_by(257) {
        worst.check(f32::from_bits(bits));
        worst.check(-f32::from_bits(bits));
    }
    // Around every reduction boundary (x = (k + 1/2) ln 2, where n changes) and near the
    // overflow and underflow thresholds.
    for k in -151..=129 {
        // CAST: rounding to the nearest f32 is the point.
        #[allow(clippy::cast_possible_truncation)]
        let centre = ((f64::from(k) + 0.5) * std::f64::consts::LN_2) as f32;
        let mut x = centre;
        for _ in 0..64 {
            worst.check(x);
            worst.check(f32::from_bits(centre.to_bits().wrapping_sub(64) + (x.to_bits() - centre.to_bits())));
            x = f32::from_bits(x.to_bits() + 1);
        }
    }
    let mut rng = Rng(0x5eed);
    for _ in 0..1_000_000 {
        worst.check(rng.f32_in(-104.0, 89.0));
    }
    for _ in 0..200_000 {
        worst.check(rng.f32_in(-1.0, 1.0));
    }
    eprintln!(
        "expf: {} inputs, max error {:.3} ulp (normal results, at x = {:e}), {:.3} units of 2^-149 (subnormal results)",
        worst.count, worst.normal, worst.normal_at, worst.subnormal
    );
    assert!(worst.normal <= 2.0, "max {} ulp at {:e}", worst.normal, worst.normal_at);
    assert!(worst.subnormal <= 1.0, "subnormal max {}", worst.subnormal);
}

#[test]
fn exact_points_and_limits() {
    assert_eq!(expf(0.0), 1.0);
    assert_eq!(expf(1.0), std::f32::consts::E);
    assert_eq!(expf(std::f32::consts::LN_2), 2.0);
    // Overflow threshold: ln(f32::MAX) = 88.7228391...
    assert!(expf(88.722_83).is_finite());
    assert_eq!(expf(88.722_84), f32::INFINITY);
    // Largest subnormal neighbourhood and total underflow.
    assert_eq!(expf(-103.98), 0.0);
    assert_eq!(expf(-103.97).to_bits(), 1, "e^-103.97 rounds to the smallest subnormal");
}
