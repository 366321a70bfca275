//! The generated tiny llama: parses, is deterministic, has the configured shapes, and its
//! weights have the scales that keep activations O(1).

use gguf::tiny::{TOKEN_IM_END, TOKEN_IM_START, tiny_vocab};
use gguf::{GgmlType, Gguf, TinyLlamaConfig, tiny_llama, write_tiny_llama};

fn stats(values: &[f32]) -> (f32, f32) {
    let n = values.len() as f32;
    let mean = values.iter().sum::<f32>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / n;
    (mean, var.sqrt())
}

#[test]
fn tiny_llama_is_deterministic_and_seeded() {
    let config = TinyLlamaConfig::default();
    assert_eq!(tiny_llama(&config), tiny_llama(&config));
    let other = TinyLlamaConfig { seed: config.seed + 1, ..config.clone() };
    assert_ne!(tiny_llama(&config), tiny_llama(&other));
}

#[test]
fn tiny_llama_has_the_configured_shape() {
    let config = TinyLlamaConfig::default();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tiny_shape.gguf");
    write_tiny_llama(&path, &config).unwrap();
    let g = Gguf::open(&path).unwrap();
    let vocab = tiny_vocab();
    assert_eq!(g.u32("llama.block_count").unwrap(), 2);
    assert_eq!(g.u32("llama.embedding_length").unwrap(), 64);
    assert_eq!(g.u32("llama.rope.dimension_count").unwrap(), 16);
    assert_eq!(g.u32("llama.vocab_size").unwrap() as usize, vocab.tokens.len());
    assert_eq!(g.str("tokenizer.ggml.pre").unwrap(), "smollm");
    assert_eq!(g.u32("tokenizer.ggml.bos_token_id").unwrap(), TOKEN_IM_START);
    assert_eq!(g.u32("tokenizer.ggml.eos_token_id").unwrap(), TOKEN_IM_END);
    let types = g.i32_array("tokenizer.ggml.token_type").unwrap();
    assert_eq!(&types[..4], [3, 3, 3, 1]);
    assert!(g.str("tokenizer.chat_template").unwrap().contains("<|im_start|>"));
    assert_eq!(g.tensors().len(), 1 + 2 * 9 + 1);
    let embd = g.tensor("token_embd.weight").unwrap();
    assert_eq!((embd.ty(), embd.dims()), (GgmlType::Q8_0, &[64, vocab.tokens.len() as u64][..]));
    let k = g.tensor("blk.1.attn_k.weight").unwrap();
    assert_eq!((k.ty(), k.dims()), (GgmlType::Q4_1, &[64, 32][..]));
    let down = g.tensor("blk.0.ffn_down.weight").unwrap();
    assert_eq!(down.dims(), &[128, 64]);
    assert!(g.tensor_info("output.weight").is_none(), "the output is tied to the embedding");
}

#[test]
fn tiny_llama_weight_scales() {
    let g = Gguf::parse(tiny_llama(&TinyLlamaConfig::default())).unwrap();
    for info in g.tensors() {
        let values = g.tensor(info.name()).unwrap().to_f32().unwrap();
        let (mean, std) = stats(&values);
        let (want_mean, want_std) = match info.ty() {
            GgmlType::F32 => (1.0, 0.05),
            GgmlType::Q8_0 => (0.0, 0.5),
            _ => (0.0, 1.0 / (info.dims()[0] as f32).sqrt()),
        };
        assert!((mean - want_mean).abs() < 0.1 * want_std.max(0.1), "{}: mean {mean}", info.name());
        // Four standard errors of a sample standard deviation (≈ σ/√(2n)), plus 2% for the
        // quantization noise.
        let tolerance = 4.0 / (2.0 * values.len() as f32).sqrt() + 0.02;
        assert!((std / want_std - 1.0).abs() < tolerance, "{}: std {std}, want {want_std}", info.name());
    }
}
