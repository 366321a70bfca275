//! The kernels' dequantisation (`kernel_refs::cpu::dequantize_row`, which the host-compiled
//! formula header is checked against in `formats_host.rs`) equals the `gguf` crate's, which its
//! own tests hold to gguf-py's `gguf.quants.dequantize` bit for bit: so the kernels read every
//! GGUF block format as llama.cpp's Python reader does. Random bytes, special f16 scales
//! included; NaNs compared by quietness only (a NaN's payload is not part of either contract).

use gguf::GgmlType;
use kernel_refs::cpu::{BlockFormat, dequantize_row};
use proptest::prelude::*;

/// f16 scales worth every block: ±0, the smallest subnormal, the largest finite, ±inf, NaNs.
const SPECIAL_F16: [u16; 8] = [0x0000, 0x8000, 0x0001, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x7c01];

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn compare(format: BlockFormat, row: &[u8]) -> Result<(), String> {
    let ty = GgmlType::from_id(format.ggml_id());
    let values = row.len() / format.block_bytes() * format.block_values();
    let (mut kernels, mut reader) = (vec![0f32; values], vec![0f32; values]);
    dequantize_row(format, row, &mut kernels).map_err(|e| e.to_string())?;
    gguf::quant::dequantize_row(ty, row, &mut reader).map_err(|e| e.to_string())?;
    match kernels.iter().zip(&reader).position(|(&a, &b)| !same(a, b)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{format:?} value {i}: kernels {:#010x}, gguf {:#010x}",
            kernels[i].to_bits(),
            reader[i].to_bits()
        )),
    }
}

#[test]
fn every_format_maps_to_the_gguf_type_of_its_name() {
    for format in BlockFormat::ALL {
        let ty = GgmlType::from_id(format.ggml_id());
        assert_eq!(ty.to_string().to_ascii_lowercase(), format.name().to_ascii_lowercase(), "{format:?}");
        assert!(ty.is_supported(), "{ty}");
    }
}

#[test]
fn special_scales_in_every_scale_field_agree() {
    // Every f16 at every even offset of a block (so every scale field, wherever the format keeps
    // it) in blocks of zeros and of ones.
    for format in BlockFormat::ALL {
        for fill in [0x00u8, 0xff, 0x5a] {
            for offset in (0..format.block_bytes() - 1).step_by(2) {
                for special in SPECIAL_F16 {
                    let mut block = vec![fill; format.block_bytes()];
                    block[offset..offset + 2].copy_from_slice(&special.to_le_bytes());
                    compare(format, &block).unwrap();
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random rows of one to four blocks of every format agree bit for bit.
    #[test]
    fn random_rows_agree(seed in any::<u64>(), blocks in 1usize..5) {
        for format in BlockFormat::ALL {
            let mut state = seed ^ u64::from(format.ggml_id()).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let row: Vec<u8> = (0..blocks * format.block_bytes())
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state.to_le_bytes()[3]
                })
                .collect();
            prop_assert_eq!(compare(format, &row), Ok(()));
        }
    }
}
