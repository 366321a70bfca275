//! Hand-built blocks with values worked out from ggml's `dequantize_row_q*_K` by hand.

use super::*;

/// A block of `N` zero bytes with `(offset, byte)` pairs set.
fn block<const N: usize>(set: &[(usize, u8)]) -> [u8; N] {
    let mut b = [0u8; N];
    for &(at, v) in set {
        b[at] = v;
    }
    b
}

#[test]
fn q2_k_known_block() {
    // d = 1.0 at 80, dmin = 0.5 at 82. scales at 0..16, qs at 16..80.
    let bytes: [u8; BLOCK_Q2_K_BYTES] = block(&[
        (80, 0x00),
        (81, 0x3c),
        (82, 0x00),
        (83, 0x38),
        (0, 0x21),       // sub-block 0: scale 1, min 2
        (2, 0x13),       // sub-block 2: scale 3, min 1
        (6, 0xf1),       // sub-block 6: scale 1, min 15
        (9, 0x04),       // sub-block 9: scale 4, min 0
        (16, 0xe7),      // qs[0] = 0b11_10_01_11: values 0, 32, 64, 96 have 3, 1, 2, 3
        (16 + 49, 0x02), // qs[49]: value 128 + 17 = 145 (shift 0) has 2
    ]);
    let b = BlockQ2K::from_bytes(&bytes);
    assert_eq!(b.to_bytes(), bytes);
    let v = b.dequantize();
    assert_eq!(v[0], 1.0 * 3.0 - 0.5 * 2.0);
    assert_eq!(v[32], 3.0 * 1.0 - 0.5);
    assert_eq!(v[64], 0.0);
    assert_eq!(v[96], 3.0 - 7.5);
    assert_eq!(v[145], 8.0);
    assert_eq!(v[1], -1.0); // level 0 of sub-block 0: −dmin·2
}

#[test]
fn q3_k_known_block() {
    // hmask at 0..32, qs at 32..96, scales at 96..108, d = 0.5 at 108.
    let bytes: [u8; BLOCK_Q3_K_BYTES] = block(&[
        (108, 0x00),
        (109, 0x38),
        (96, 0x08),      // scale 0: low nibble 8 …
        (96 + 8, 0x02),  // … top bits 2: 40 − 32 = 8
        (96 + 5, 0x50),  // scale 13: low nibble (high nibble of byte 5) 5, top bits (byte 9, bits 6..8) 0: −27
        (32, 0x01),      // value 0: low bits 1 …
        (0, 0x01),       // … hmask bit set: q = 1
        (33, 0x02),      // value 1: low bits 2, hmask clear: q = −2
        (32 + 50, 0x30), // value 210 (half 1, group 2, byte 18): low bits 3 …
        (18, 0x40),      // … hmask bit 6 set: q = 3
    ]);
    let b = BlockQ3K::from_bytes(&bytes);
    assert_eq!(b.to_bytes(), bytes);
    let v = b.dequantize();
    assert_eq!(v[0], 0.5 * 8.0 * 1.0);
    assert_eq!(v[1], 0.5 * 8.0 * -2.0);
    assert_eq!(v[210], 0.5 * -27.0 * 3.0);
    // Scale 1 is all zero bits (−32), level 0 with its hmask bit clear (−4).
    assert_eq!(v[16], 0.5 * -32.0 * -4.0);
}

/// The scales of the Q4_K and Q5_K tests: sub-block 0 has scale 2 and minimum 4; sub-block 5
/// scale 49 (low nibble 1 in byte 9, top bits 3 in byte 1) and minimum 35 (high nibble 3 in
/// byte 9, top bits 2 in byte 5); sub-block 1 is all zero.
const K4_SCALES: [(usize, u8); 5] = [(0, 2), (4, 4), (9, 0x31), (1, 0xc0), (5, 0x80)];

#[test]
fn q4_k_known_block() {
    // d = 1.0 at 0, dmin = 0.25 at 2, scales at 4..16, qs at 16..144.
    let mut set = vec![(0, 0x00), (1, 0x3c), (2, 0x00), (3, 0x34), (16, 0x07), (16 + 67, 0xa0)];
    set.extend(K4_SCALES.map(|(at, v)| (4 + at, v)));
    let bytes: [u8; BLOCK_Q4_K_BYTES] = block(&set);
    let b = BlockQ4K::from_bytes(&bytes);
    assert_eq!(b.to_bytes(), bytes);
    let v = b.dequantize();
    assert_eq!(v[0], 2.0 * 7.0 - 0.25 * 4.0);
    assert_eq!(v[32], 0.0);
    // Value 163: sub-block 5, byte 32·2 + 3 = 67, high nibble 10.
    assert_eq!(v[163], 49.0 * 10.0 - 0.25 * 35.0);
}

#[test]
fn q5_k_known_block() {
    // d = 1.0 at 0, dmin = 0.25 at 2, scales at 4..16, qh at 16..48, qs at 48..176.
    let mut set =
        vec![(0, 0x00), (1, 0x3c), (2, 0x00), (3, 0x34), (48, 0x07), (16, 0x01), (48 + 67, 0xa0), (16 + 3, 0x20)];
    set.extend(K4_SCALES.map(|(at, v)| (4 + at, v)));
    let bytes: [u8; BLOCK_Q5_K_BYTES] = block(&set);
    let b = BlockQ5K::from_bytes(&bytes);
    assert_eq!(b.to_bytes(), bytes);
    let v = b.dequantize();
    assert_eq!(v[0], 2.0 * 23.0 - 0.25 * 4.0);
    // Value 163: nibble 10 and bit 5 of qh[3]: 26.
    assert_eq!(v[163], 49.0 * 26.0 - 0.25 * 35.0);
    assert_eq!(v[1], -1.0);
}

#[test]
fn q6_k_known_block() {
    // ql at 0..128, qh at 128..192, scales at 192..208, d = 0.5 at 208.
    let bytes: [u8; BLOCK_Q6_K_BYTES] = block(&[
        (208, 0x00),
        (209, 0x38),
        (192, (-3i8).to_le_bytes()[0]),
        (192 + 4, 2),
        (192 + 10, (-1i8).to_le_bytes()[0]),
        (192 + 15, 1),
        (0, 0x05),
        (128, 0x02), // value 0: 5 | 2 << 4 = 37 → 5
        (1, 0xf0),
        (129, 0x30), // value 65 (group 2: high nibble of ql[1], qh[1] bits 4..6): 63 → 31
        (116, 0x30), // value 244 (half 1, group 3, l 20: ql[64 + 32 + 20] high nibble, qh[32 + 20] bits 6..8)
        (100, 0x0a),
        (128 + 36, 0x04), // value 164 (half 1, group 1, l 4: ql[64 + 32 + 4] low, qh[32 + 4] bits 2..4): 26 → −6
    ]);
    let b = BlockQ6K::from_bytes(&bytes);
    assert_eq!(b.to_bytes(), bytes);
    let v = b.dequantize();
    assert_eq!(v[0], 0.5 * -3.0 * 5.0);
    assert_eq!(v[65], 0.5 * 2.0 * 31.0);
    assert_eq!(v[244], 0.5 * 1.0 * -29.0);
    assert_eq!(v[164], 3.0); // 0.5 · −1 · −6
}

#[test]
fn scale_packings_invert() {
    let six: [u8; 16] = core::array::from_fn(|i| u8::try_from(i * 4 + 3).unwrap_or(0));
    let packed = pack_scale6(&six);
    assert_eq!(core::array::from_fn::<u8, 16, _>(|i| scale6(&packed, i)), six);
    let (sc, m): ([u8; 8], [u8; 8]) = (
        core::array::from_fn(|i| 63 - u8::try_from(i).unwrap_or(0)),
        core::array::from_fn(|i| 17 * (1 + u8::try_from(i).unwrap_or(0)) % 64),
    );
    let packed = pack_scale_min_k4(&sc, &m);
    for i in 0..8 {
        assert_eq!(scale_min_k4(&packed, i), (sc[i], m[i]), "sub-block {i}");
    }
}

#[test]
fn f16_up_rounds_up() {
    assert_eq!(f16_up(1.0), 0x3c00);
    assert_eq!(f16_up(1.0 + 2f32.powi(-12)), 0x3c01);
    assert_eq!(f16_up(0.0), 0);
    assert_eq!(f16_up(1e-9), 0x0001);
    assert_eq!(f16_up(65504.5), 0x7c00);
}

#[test]
fn zero_blocks_are_exact() {
    let zero = [0.0f32; QK_K];
    assert_eq!(BlockQ2K::quantize(&zero).dequantize(), zero);
    assert_eq!(BlockQ3K::quantize(&zero).dequantize(), zero);
    assert_eq!(BlockQ4K::quantize(&zero).dequantize(), zero);
    assert_eq!(BlockQ5K::quantize(&zero).dequantize(), zero);
    assert_eq!(BlockQ6K::quantize(&zero).dequantize(), zero);
}
