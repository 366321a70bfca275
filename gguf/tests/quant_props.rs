//! Property tests of the f16 conversions (against the `half` crate) and every block format:
//! encode/decode pairs, error bounds, idempotence on representable values, and no panic on any
//! input. The bit-exact comparisons with gguf-py are in `quant_gguf_py.rs`.

use gguf::GgmlType;
use gguf::f16::{f16_to_f32, f32_to_f16};
use gguf::quant::{
    self, BLOCK_Q4_1_BYTES, BLOCK_Q6_K_BYTES, BLOCK_Q8_0_BYTES, BlockQ2K, BlockQ3K, BlockQ4_0, BlockQ4_1, BlockQ4K,
    BlockQ5_0, BlockQ5_1, BlockQ5K, BlockQ6K, BlockQ8_0, bf16_to_f32, f32_to_bf16,
};
use proptest::prelude::*;

#[test]
fn f16_to_f32_matches_half_for_every_bit_pattern() {
    for h in 0..=u16::MAX {
        let ours = f16_to_f32(h);
        let theirs = half::f16::from_bits(h).to_f32();
        assert_eq!(ours.to_bits(), theirs.to_bits(), "f16 bits {h:#06x}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn f32_to_f16_matches_half(bits in any::<u32>()) {
        let f = f32::from_bits(bits);
        let theirs = half::f16::from_f32(f).to_bits();
        prop_assert_eq!(f32_to_f16(f), theirs, "f32 bits {:#010x}", bits);
    }

    #[test]
    fn f32_to_f16_round_trips_every_f16(h in any::<u16>()) {
        let f = f16_to_f32(h);
        prop_assume!(!f.is_nan());
        prop_assert_eq!(f32_to_f16(f), h);
    }
}

fn finite_row(len: usize) -> impl Strategy<Value = Vec<f32>> {
    (1e-3f32..1e3).prop_flat_map(move |scale| proptest::collection::vec(-scale..scale, len))
}

proptest! {
    #[test]
    fn q4_1_block_bytes_round_trip(bytes in proptest::array::uniform20(any::<u8>())) {
        prop_assert_eq!(BlockQ4_1::from_bytes(&bytes).to_bytes(), bytes);
    }

    #[test]
    fn q8_0_block_bytes_round_trip(d in any::<u16>(), qs in proptest::array::uniform32(any::<i8>())) {
        let block = BlockQ8_0 { d, qs };
        let bytes: [u8; BLOCK_Q8_0_BYTES] = block.to_bytes();
        prop_assert_eq!(BlockQ8_0::from_bytes(&bytes), block);
    }

    #[test]
    fn q8_0_error_is_within_half_a_step(x in finite_row(64)) {
        let mut bytes = vec![0u8; 2 * BLOCK_Q8_0_BYTES];
        quant::quantize_row_q8_0(&x, &mut bytes).unwrap();
        let mut y = vec![0.0f32; 64];
        quant::dequantize_row(GgmlType::Q8_0, &bytes, &mut y).unwrap();
        for (block_x, block_y) in x.chunks(32).zip(y.chunks(32)) {
            let amax = block_x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
            let d = amax / 127.0;
            let d16 = half::f16::from_f32(d).to_f32();
            // Half a step of the exact scale, plus 127 times the f16 rounding of the scale.
            let bound = 0.5 * d + 127.0 * (d - d16).abs() + 1e-6 * amax;
            for (a, b) in block_x.iter().zip(block_y) {
                prop_assert!((a - b).abs() <= bound, "{} vs {}: bound {}", a, b, bound);
            }
        }
    }

    #[test]
    fn q4_1_error_is_within_half_a_step(x in finite_row(64)) {
        let mut bytes = vec![0u8; 2 * BLOCK_Q4_1_BYTES];
        quant::quantize_row_q4_1(&x, &mut bytes).unwrap();
        let mut y = vec![0.0f32; 64];
        quant::dequantize_row(GgmlType::Q4_1, &bytes, &mut y).unwrap();
        for (block_x, block_y) in x.chunks(32).zip(y.chunks(32)) {
            let min = block_x.iter().copied().fold(f32::MAX, f32::min);
            let max = block_x.iter().copied().fold(-f32::MAX, f32::max);
            let d = (max - min) / 15.0;
            let d16 = half::f16::from_f32(d).to_f32();
            let m16 = half::f16::from_f32(min).to_f32();
            let bound = 0.5 * d + 15.0 * (d - d16).abs() + (min - m16).abs() + 1e-5 * (min.abs() + max.abs());
            for (a, b) in block_x.iter().zip(block_y) {
                prop_assert!((a - b).abs() <= bound, "{} vs {}: bound {}", a, b, bound);
            }
        }
    }

    /// Values a Q8_0 block represents exactly (scale `a·2^-p`, some |q| = 127) quantize back
    /// to the same block.
    #[test]
    fn q8_0_is_idempotent_on_representable_blocks(
        a in 1u16..2048, p in 0i32..20, mut qs in proptest::array::uniform32(-127i8..=127), at in 0usize..32, neg in any::<bool>(),
    ) {
        qs[at] = if neg { -127 } else { 127 };
        let d = f32::from(a) * 2f32.powi(-p);
        let block = BlockQ8_0 { d: f32_to_f16(d), qs };
        prop_assume!(f16_to_f32(block.d) == d);
        let x = block.dequantize();
        let again = BlockQ8_0::quantize(&x);
        prop_assert_eq!(again, block);
        prop_assert_eq!(again.dequantize(), x);
    }

    /// Values a Q4_1 block represents exactly (scale `a·2^-p`, minimum `b·2^-p`, nibbles 0 and
    /// 15 both present) quantize back to the same block.
    #[test]
    fn q4_1_is_idempotent_on_representable_blocks(
        a in 1u16..1024, b in -1024i16..1024, p in 0i32..12,
        mut q in proptest::array::uniform32(0u8..16), lo in 0usize..32, hi in 0usize..32,
    ) {
        prop_assume!(lo != hi);
        q[lo] = 0;
        q[hi] = 15;
        let scale = 2f32.powi(-p);
        let (d, m) = (f32::from(a) * scale, f32::from(b) * scale);
        let qs: [u8; 16] = core::array::from_fn(|j| q[j] | (q[j + 16] << 4));
        let block = BlockQ4_1 { d: f32_to_f16(d), m: f32_to_f16(m), qs };
        prop_assume!(f16_to_f32(block.d) == d && f16_to_f32(block.m) == m);
        let x = block.dequantize();
        let again = BlockQ4_1::quantize(&x);
        prop_assert_eq!(again, block);
        prop_assert_eq!(again.dequantize(), x);
    }

    #[test]
    fn f16_and_f32_rows_round_trip(x in proptest::collection::vec(any::<u16>(), 0..64)) {
        let values: Vec<f32> = x.iter().map(|&h| f16_to_f32(h)).filter(|v| !v.is_nan()).collect();
        for ty in [GgmlType::F16, GgmlType::F32] {
            let bytes = quant::quantize(ty, &values).unwrap();
            let mut out = vec![0.0; values.len()];
            quant::dequantize_row(ty, &bytes, &mut out).unwrap();
            prop_assert_eq!(&out, &values);
        }
    }
}

/// A row of `len` finite values: uniform at a random scale, with a random offset (so that
/// blocks are all positive, all negative or mixed) and each 16-value run scaled by its own
/// factor in [2^-8, 1] (so that sub-block scales differ within a super-block).
fn varied_row(len: usize) -> impl Strategy<Value = Vec<f32>> {
    (1e-3f32..1e3, -1.0f32..1.0, proptest::collection::vec(0i32..=8, len / 16)).prop_flat_map(
        move |(scale, offset, shrink)| {
            proptest::collection::vec(-scale..scale, len).prop_map(move |x| {
                x.iter().enumerate().map(|(i, v)| v * 2f32.powi(-shrink[i / 16]) + offset * scale).collect()
            })
        },
    )
}

/// The next f16 at or above `v ≥ 0`, at most: one f16 step up (relative 2^-10 for normals,
/// 2^-24 for subnormals).
fn f16_up_bound(v: f32) -> f32 {
    v * (1.0 + 2f32.powi(-10)) + 2f32.powi(-24)
}

fn max0(values: impl IntoIterator<Item = f32>) -> f32 {
    values.into_iter().fold(0.0, f32::max)
}

/// The error bound `BlockQ{2,4,5}K::quantize` documents for each sub-block of `sub` values:
/// half of `(hi − lo + dmin)/nmax + d`, with `dmin` and `d` at their largest.
fn affine_bounds(x: &[f32], sub: usize, nmax: f32, smax: f32) -> Vec<f32> {
    let lo: Vec<f32> = x.chunks(sub).map(|s| s.iter().copied().fold(0.0, f32::min)).collect();
    let hi: Vec<f32> = x.chunks(sub).zip(&lo).map(|(s, &lo)| s.iter().copied().fold(lo, f32::max)).collect();
    let dmin = f16_up_bound(max0(lo.iter().map(|l| -l)) / smax);
    let need: Vec<f32> = hi.iter().zip(&lo).map(|(h, l)| (h - l + dmin) / nmax).collect();
    let d = f16_up_bound(max0(need.iter().copied()) / smax);
    need.iter().map(|n| 0.5 * (n + d)).collect()
}

/// The error bound `BlockQ{3,6}K::quantize` documents for each 16-value sub-block: half of
/// `a/(n − ½) + d`, `a` the sub-block's largest magnitude.
fn symmetric_bounds(x: &[f32], n: f32, smax: f32) -> Vec<f32> {
    let need: Vec<f32> = x.chunks(16).map(|s| max0(s.iter().map(|v| v.abs())) / (n - 0.5)).collect();
    let d = f16_up_bound(max0(need.iter().copied()) / smax);
    need.iter().map(|a| 0.5 * (a + d)).collect()
}

/// Encodes and decodes `x` as `ty` and checks every value against its sub-block's bound (plus
/// f32 rounding: a relative 1e-5 of the bound and 1e-6 of the row's largest magnitude).
fn check_k_bound(ty: GgmlType, x: &[f32], sub: usize, bounds: &[f32]) -> Result<(), TestCaseError> {
    let bytes = quant::quantize(ty, x).unwrap();
    let mut y = vec![0.0f32; x.len()];
    quant::dequantize_row(ty, &bytes, &mut y).unwrap();
    let amax = max0(x.iter().map(|v| v.abs()));
    for (j, (a, b)) in x.iter().zip(&y).enumerate() {
        let bound = bounds[j / sub] * (1.0 + 1e-5) + 1e-6 * amax;
        prop_assert!((a - b).abs() <= bound, "{} value {}: {} vs {}: bound {}", ty, j, a, b, bound);
    }
    Ok(())
}

proptest! {
    #[test]
    fn q2_k_error_is_within_its_bound(x in varied_row(512)) {
        check_k_bound(GgmlType::Q2K, &x, 16, &affine_bounds(&x, 16, 3.0, 15.0))?;
    }

    #[test]
    fn q3_k_error_is_within_its_bound(x in varied_row(512)) {
        check_k_bound(GgmlType::Q3K, &x, 16, &symmetric_bounds(&x, 4.0, 31.0))?;
    }

    #[test]
    fn q4_k_error_is_within_its_bound(x in varied_row(512)) {
        check_k_bound(GgmlType::Q4K, &x, 32, &affine_bounds(&x, 32, 15.0, 63.0))?;
    }

    #[test]
    fn q5_k_error_is_within_its_bound(x in varied_row(512)) {
        check_k_bound(GgmlType::Q5K, &x, 32, &affine_bounds(&x, 32, 31.0, 63.0))?;
    }

    #[test]
    fn q6_k_error_is_within_its_bound(x in varied_row(512)) {
        check_k_bound(GgmlType::Q6K, &x, 16, &symmetric_bounds(&x, 32.0, 127.0))?;
    }

    /// Q4_0 and Q5_0 map the value of largest magnitude to level 0; a value of the other sign
    /// and (nearly) the same magnitude lands on the top level, a whole step away, so their bound
    /// is one step `|d|` (plus the f16 rounding of `d` times the largest level magnitude).
    #[test]
    fn q4_0_and_q5_0_error_is_within_a_step(x in finite_row(64)) {
        for (ty, levels) in [(GgmlType::Q4_0, 8.0f32), (GgmlType::Q5_0, 16.0)] {
            let bytes = quant::quantize(ty, &x).unwrap();
            let mut y = vec![0.0f32; 64];
            quant::dequantize_row(ty, &bytes, &mut y).unwrap();
            for (block_x, block_y) in x.chunks(32).zip(y.chunks(32)) {
                let amax = max0(block_x.iter().map(|v| v.abs()));
                let d = amax / levels;
                let d16 = half::f16::from_f32(d).to_f32();
                let bound = d + levels * (d - d16).abs() + 1e-6 * amax;
                for (a, b) in block_x.iter().zip(block_y) {
                    prop_assert!((a - b).abs() <= bound, "{}: {} vs {}: bound {}", ty, a, b, bound);
                }
            }
        }
    }

    #[test]
    fn q5_1_error_is_within_half_a_step(x in finite_row(64)) {
        let bytes = quant::quantize(GgmlType::Q5_1, &x).unwrap();
        let mut y = vec![0.0f32; 64];
        quant::dequantize_row(GgmlType::Q5_1, &bytes, &mut y).unwrap();
        for (block_x, block_y) in x.chunks(32).zip(y.chunks(32)) {
            let min = block_x.iter().copied().fold(f32::MAX, f32::min);
            let max = block_x.iter().copied().fold(-f32::MAX, f32::max);
            let d = (max - min) / 31.0;
            let d16 = half::f16::from_f32(d).to_f32();
            let m16 = half::f16::from_f32(min).to_f32();
            let bound = 0.5 * d + 31.0 * (d - d16).abs() + (min - m16).abs() + 1e-5 * (min.abs() + max.abs());
            for (a, b) in block_x.iter().zip(block_y) {
                prop_assert!((a - b).abs() <= bound, "{} vs {}: bound {}", a, b, bound);
            }
        }
    }

    /// Values a Q4_0 or Q5_0 block represents exactly (scale `a·2^-p`, level 0 present, so the
    /// value of largest magnitude is `−8d` or `−16d`) quantize back to the same block.
    #[test]
    fn q4_0_and_q5_0_are_idempotent_on_representable_blocks(
        a in 1u16..2048, p in 0i32..20, neg in any::<bool>(), mut q in proptest::array::uniform32(0u8..32), at in 0usize..32,
    ) {
        let d = if neg { -1.0 } else { 1.0 } * f32::from(a) * 2f32.powi(-p);
        prop_assume!(f16_to_f32(f32_to_f16(d)) == d);
        q[at] = 0;
        let q4 = q.map(|l| l & 15);
        let b4 = BlockQ4_0 { d: f32_to_f16(d), qs: core::array::from_fn(|j| q4[j] | (q4[j + 16] << 4)) };
        let x = b4.dequantize();
        prop_assert_eq!(BlockQ4_0::quantize(&x), b4);
        let qh = q.iter().enumerate().fold(0u32, |h, (j, &l)| h | (u32::from(l >> 4) << j));
        let b5 = BlockQ5_0 { d: f32_to_f16(d), qh, qs: core::array::from_fn(|j| (q[j] & 15) | ((q[j + 16] & 15) << 4)) };
        let x = b5.dequantize();
        prop_assert_eq!(BlockQ5_0::quantize(&x), b5);
    }

    /// Values a Q5_1 block represents exactly (scale `a·2^-p`, minimum `b·2^-p`, levels 0 and
    /// 31 both present) quantize back to the same block.
    #[test]
    fn q5_1_is_idempotent_on_representable_blocks(
        a in 1u16..1024, b in -1024i16..1024, p in 0i32..12,
        mut q in proptest::array::uniform32(0u8..32), lo in 0usize..32, hi in 0usize..32,
    ) {
        prop_assume!(lo != hi);
        q[lo] = 0;
        q[hi] = 31;
        let scale = 2f32.powi(-p);
        let (d, m) = (f32::from(a) * scale, f32::from(b) * scale);
        let qh = q.iter().enumerate().fold(0u32, |h, (j, &l)| h | (u32::from(l >> 4) << j));
        let qs = core::array::from_fn(|j| (q[j] & 15) | ((q[j + 16] & 15) << 4));
        let block = BlockQ5_1 { d: f32_to_f16(d), m: f32_to_f16(m), qh, qs };
        prop_assume!(f16_to_f32(block.d) == d && f16_to_f32(block.m) == m);
        let x = block.dequantize();
        let again = BlockQ5_1::quantize(&x);
        prop_assert_eq!(again, block);
        prop_assert_eq!(again.dequantize(), x);
    }

    #[test]
    fn bf16_round_trips_every_non_nan_pattern(h in any::<u16>()) {
        let f = bf16_to_f32(h);
        if f.is_nan() {
            // NaNs come back quiet, sign and payload otherwise kept.
            prop_assert_eq!(f32_to_bf16(f), h | 0x0040);
        } else {
            prop_assert_eq!(f32_to_bf16(f), h);
        }
    }

    #[test]
    fn bf16_rows_round_trip(x in proptest::collection::vec(any::<u16>(), 0..64)) {
        let values: Vec<f32> = x.iter().map(|&h| bf16_to_f32(h)).filter(|v| !v.is_nan()).collect();
        let bytes = quant::quantize(GgmlType::Bf16, &values).unwrap();
        let mut out = vec![0.0; values.len()];
        quant::dequantize_row(GgmlType::Bf16, &bytes, &mut out).unwrap();
        prop_assert_eq!(&out, &values);
    }
}

/// Every block type's bytes survive `from_bytes` → `to_bytes`.
#[test]
fn block_bytes_round_trip() {
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::default();
    let bytes = proptest::collection::vec(any::<u8>(), BLOCK_Q6_K_BYTES);
    runner
        .run(&bytes, |b| {
            prop_assert_eq!(&BlockQ4_0::from_bytes(b[..18].try_into().unwrap()).to_bytes()[..], &b[..18]);
            prop_assert_eq!(&BlockQ5_0::from_bytes(b[..22].try_into().unwrap()).to_bytes()[..], &b[..22]);
            prop_assert_eq!(&BlockQ5_1::from_bytes(b[..24].try_into().unwrap()).to_bytes()[..], &b[..24]);
            prop_assert_eq!(&BlockQ2K::from_bytes(b[..84].try_into().unwrap()).to_bytes()[..], &b[..84]);
            prop_assert_eq!(&BlockQ3K::from_bytes(b[..110].try_into().unwrap()).to_bytes()[..], &b[..110]);
            prop_assert_eq!(&BlockQ4K::from_bytes(b[..144].try_into().unwrap()).to_bytes()[..], &b[..144]);
            prop_assert_eq!(&BlockQ5K::from_bytes(b[..176].try_into().unwrap()).to_bytes()[..], &b[..176]);
            prop_assert_eq!(&BlockQ6K::from_bytes(b[..210].try_into().unwrap()).to_bytes()[..], &b[..210]);
            Ok(())
        })
        .unwrap();
}

/// Any type id, any bytes, any lengths, any index, any f32 bits: every entry point returns a
/// value or a typed error, never panics; an encoding that succeeds decodes; the per-element
/// decoder gives the row decoder's bits.
#[test]
fn no_input_makes_the_codecs_panic() {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config::with_cases(4096));
    let case = (
        0u32..48,
        proptest::collection::vec(any::<u8>(), 0..700),
        0usize..700,
        any::<usize>(),
        proptest::collection::vec(any::<u32>(), 0..600),
    );
    runner
        .run(&case, |(id, bytes, out_len, k, bits)| {
            let ty = GgmlType::from_id(id);
            let mut out = vec![0.0f32; out_len];
            let row = quant::dequantize_row(ty, &bytes, &mut out);
            prop_assert_eq!(row.is_ok(), ty.is_supported() && ty.bytes_for(out_len as u64) == Some(bytes.len() as u64));
            let _ = quant::dequantize_value(ty, &bytes, k);
            if row.is_ok() {
                for (i, v) in out.iter().enumerate() {
                    prop_assert_eq!(quant::dequantize_value(ty, &bytes, i).unwrap().to_bits(), v.to_bits());
                }
                let _ = quant::dequantize_value(ty, &bytes, out.len());
            }
            let x: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
            let mut sink = vec![0u8; out_len];
            let _ = quant::quantize_row(ty, &x, &mut sink);
            let block = ty.layout().map_or(1, |l| usize::try_from(l.block_elems).unwrap());
            let whole = &x[..x.len() / block * block];
            match quant::quantize(ty, whole) {
                Ok(encoded) => {
                    prop_assert!(ty.is_supported());
                    let mut back = vec![0.0f32; whole.len()];
                    quant::dequantize_row(ty, &encoded, &mut back).unwrap();
                }
                Err(e) => prop_assert!(!ty.is_supported(), "{}", e),
            }
            Ok(())
        })
        .unwrap();
}
