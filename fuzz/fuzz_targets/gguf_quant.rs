//! Any bytes through the gguf crate's tensor codecs: the first byte picks a ggml type id (every
//! supported type and some that are not), the second a value count; the rest is decoded as a row
//! of that type and, read as f32s, encoded. Every call gives a value or a typed error, never a
//! panic; the per-element decoder gives the row decoder's bits; an encoding decodes.
#![no_main]

use gguf::{GgmlType, quant};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [id, count, rest @ ..] = data else { return };
    let ty = GgmlType::from_id(u32::from(id % 48));
    let block = ty.layout().map_or(1, |l| l.block_elems as usize);
    // Mostly whole blocks, sometimes not.
    let elems = if count & 0x80 != 0 { usize::from(*count) } else { block * usize::from(count % 4) };

    let mut out = vec![0f32; elems];
    if quant::dequantize_row(ty, rest, &mut out).is_ok() {
        for (k, v) in out.iter().enumerate() {
            assert_eq!(quant::dequantize_value(ty, rest, k).unwrap().to_bits(), v.to_bits(), "element {k}");
        }
    }
    let _ = quant::dequantize_value(ty, rest, usize::from(*count));

    let x: Vec<f32> = rest.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let whole = &x[..x.len() / block * block];
    if let Ok(encoded) = quant::quantize(ty, whole) {
        let mut back = vec![0f32; whole.len()];
        quant::dequantize_row(ty, &encoded, &mut back).unwrap();
    }
    let mut sink = vec![0u8; rest.len()];
    let _ = quant::quantize_row(ty, &x, &mut sink);
});
