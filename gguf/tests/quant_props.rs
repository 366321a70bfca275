//! Property tests of the f16 conversions (against the `half` crate) and the Q4_1/Q8_0 block
//! formats (encode/decode pairs, error bounds, idempotence on representable values).

use gguf::GgmlType;
use gguf::f16::{f16_to_f32, f32_to_f16};
use gguf::quant::{self, BLOCK_Q4_1_BYTES, BLOCK_Q8_0_BYTES, BlockQ4_1, BlockQ8_0};
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
