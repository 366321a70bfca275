//! Any bytes as a GGUF file: a validated file or a typed error, never a panic; every value of
//! an accepted file can be walked, every tensor of a supported type (every encoding
//! `gguf::quant` decodes) checked for finite weights and dequantized.
#![no_main]

use gguf::{Gguf, Value};
use libfuzzer_sys::fuzz_target;

fn walk(value: &Value) -> usize {
    match value {
        Value::Array(array) => array.items().iter().map(walk).sum::<usize>() + 1,
        Value::String(s) => s.len(),
        _ => 1,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(g) = Gguf::parse(data) else { return };
    for (key, value) in g.metadata() {
        assert!(g.get(key).is_some());
        let _ = walk(value);
        let _ = (g.u32(key), g.str(key), g.string_array(key), g.i32_array(key));
    }
    for info in g.tensors() {
        match g.tensor(info.name()) {
            Ok(view) => {
                // Finite or a NonFinite error naming a value that is not.
                if let Err(gguf::GgufError::NonFinite { value, .. }) = view.check_finite() {
                    assert!(!value.is_finite());
                }
                // Bound the work per input: dequantize at most a few rows of large tensors.
                for row in 0..view.row_count().min(4) {
                    let mut out = vec![0.0f32; usize::try_from(view.row_len()).unwrap_or(0).min(1 << 16)];
                    let _ = view.dequantize_row(row, &mut out);
                }
                if view.bytes().len() <= 1 << 16 {
                    let _ = view.to_f32();
                }
            }
            Err(_) => assert!(!info.ty().is_supported()),
        }
    }
});
