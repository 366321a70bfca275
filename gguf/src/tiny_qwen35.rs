//! A deterministic tiny `qwen35` model (Qwen 3.5 dense) in llama.cpp's GGUF conventions for the
//! architecture: gated-DeltaNet layers (`attn_qkv`, `attn_gate`, `ssm_beta`, `ssm_alpha`,
//! `ssm_conv1d`, `ssm_dt.bias`, `ssm_a`, `ssm_norm`, `ssm_out`) interleaved with gated
//! full-attention layers (`attn_q` holding each head's query then its output gate, `attn_k`,
//! `attn_v`, per-head Q/K norms, `attn_output`), a `post_attention_norm` and a SwiGLU FFN in every
//! layer; the `qwen35.ssm.*`, `qwen35.full_attention_interval`,
//! `qwen35.attention.recurrent_layers` and `qwen35.rope.dimension_sections` keys as llama.cpp's
//! converter writes them; a byte-level GPT-2 vocabulary ([`crate::tiny::tiny_vocab`]) with
//! `tokenizer.ggml.pre = "qwen35"`. Values are stored as the converter stores them: norms already
//! `1 + w`, `ssm_a = -exp(A_log)`, the convolution `{kernel, channels}` in F32. Every matrix type
//! the kernels take is in use, the K types where a row is a multiple of 256; the embedding is
//! Q8_0 and tied to the output, as in Qwen3.5-0.8B.

use std::path::Path;

use crate::quant::quantize;
use crate::tiny::{CHAT_TEMPLATE, SplitMix64, TOKEN_ENDOFTEXT, TOKEN_IM_END, TinyVocab, tiny_vocab};
use crate::types::GgmlType;
use crate::value::{Array, Value, ValueType};
use crate::writer::GgufWriter;

/// Shape and seed of a tiny `qwen35` model.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyQwen35Config {
    /// Transformer blocks (`qwen35.block_count`).
    pub n_layers: u32,
    /// `qwen35.full_attention_interval`: layer `l` attends fully when `(l + 1) % interval == 0`,
    /// else it is a gated-DeltaNet layer.
    pub full_attention_interval: u32,
    /// Embedding width; a multiple of 32.
    pub dim: u32,
    /// Feed-forward width; a multiple of 256 (the K-quant `ffn_down` rows).
    pub ffn_dim: u32,
    /// Query heads of the full-attention layers.
    pub n_heads: u32,
    /// Key/value heads; divides `n_heads`.
    pub n_kv_heads: u32,
    /// `qwen35.attention.key_length` (= `value_length`), with `n_heads * head_dim` a multiple of
    /// 256 (the K-quant `attn_output` rows).
    pub head_dim: u32,
    /// `qwen35.rope.dimension_count`: the rotated elements of each head; even, at most `head_dim`.
    pub rope_dims: u32,
    /// `qwen35.rope.dimension_sections`.
    pub rope_sections: [i32; 4],
    /// `qwen35.ssm.conv_kernel`.
    pub conv_kernel: u32,
    /// `qwen35.ssm.state_size`: the DeltaNet head size (keys and values); a multiple of 32.
    pub state_size: u32,
    /// `qwen35.ssm.group_count`: DeltaNet key heads.
    pub k_heads: u32,
    /// `qwen35.ssm.time_step_rank`: DeltaNet value heads; a multiple of `k_heads`, with
    /// `v_heads * state_size` a multiple of 256 (the K-quant `ssm_out` rows).
    pub v_heads: u32,
    /// `qwen35.context_length`.
    pub context_length: u32,
    /// `qwen35.rope.freq_base`.
    pub rope_freq_base: f32,
    /// `qwen35.attention.layer_norm_rms_epsilon`.
    pub rms_eps: f32,
    /// Seed of the weight generator.
    pub seed: u64,
}

impl Default for TinyQwen35Config {
    fn default() -> Self {
        Self {
            n_layers: 6,
            full_attention_interval: 3,
            dim: 128,
            ffn_dim: 256,
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 64,
            rope_dims: 16,
            rope_sections: [3, 3, 2, 0],
            conv_kernel: 4,
            state_size: 64,
            k_heads: 2,
            v_heads: 4,
            context_length: 2048,
            rope_freq_base: 10_000_000.0,
            rms_eps: 1e-6,
            seed: 0x0035_5eed,
        }
    }
}

impl TinyQwen35Config {
    /// Whether layer `layer` is a gated-DeltaNet (recurrent) layer.
    #[must_use]
    pub const fn is_recurrent(&self, layer: u32) -> bool {
        !(layer + 1).is_multiple_of(self.full_attention_interval)
    }
}

/// The feed-forward matrix types `(ffn_gate, ffn_up, ffn_down)` of layer `l`: row `l % 6`.
const FFN_TYPES: [[GgmlType; 3]; 6] = {
    use GgmlType::{Bf16, F16, Q2K, Q3K, Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
    [[Q5_0, Q5_0, Q6K], [Q4_1, Q5_0, Q4K], [Q5_1, Q4_0, Q5K], [F16, Q8_0, Q2K], [Bf16, Q5_1, Q3K], [Q8_0, Q4_0, Q6K]]
};

/// The DeltaNet matrix types `(attn_qkv, attn_gate, ssm_beta, ssm_alpha, ssm_out)` of the
/// `r`-th DeltaNet layer: row `r % 4`.
const DELTA_TYPES: [[GgmlType; 5]; 4] = {
    use GgmlType::{Bf16, F16, Q3K, Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
    [
        [Q5_0, Q8_0, Q8_0, Q8_0, Q4K],
        [Q4_0, Q5_1, F16, Bf16, Q5K],
        [Q8_0, Q4_1, Q4_0, Q5_0, Q6K],
        [Bf16, F16, Q5_1, Q4_1, Q3K],
    ]
};

/// The attention matrix types `(attn_q, attn_k, attn_v, attn_output)` of the `r`-th
/// full-attention layer: row `r % 2`.
const ATTENTION_TYPES: [[GgmlType; 4]; 2] = {
    use GgmlType::{Bf16, F16, Q2K, Q4_1, Q4K, Q5_0, Q8_0};
    [[Q5_0, Q4_1, Q8_0, Q4K], [F16, Bf16, Q5_0, Q2K]]
};

/// The tiny model as GGUF bytes.
///
/// # Panics
/// When the configuration is inconsistent (see [`TinyQwen35Config`]'s fields).
#[must_use]
pub fn tiny_qwen35(config: &TinyQwen35Config) -> Vec<u8> {
    tiny_qwen35_writer(config).to_bytes()
}

/// [`tiny_qwen35`] before it is written, so that a test can change a key or a tensor.
///
/// # Panics
/// As [`tiny_qwen35`].
#[must_use]
pub fn tiny_qwen35_writer(config: &TinyQwen35Config) -> GgufWriter {
    let c = config;
    assert!(c.n_layers > 0 && c.full_attention_interval > 0, "tiny qwen35 needs layers and an interval");
    assert!(c.dim.is_multiple_of(32) && c.dim > 0, "dim {} is not a positive multiple of 32", c.dim);
    assert!(c.ffn_dim.is_multiple_of(256) && c.ffn_dim > 0, "ffn_dim {} is not a positive multiple of 256", c.ffn_dim);
    assert!((c.n_heads * c.head_dim).is_multiple_of(256), "n_heads * head_dim is not a multiple of 256");
    assert!(
        c.n_kv_heads > 0 && c.n_heads.is_multiple_of(c.n_kv_heads),
        "{} kv heads do not divide {} heads",
        c.n_kv_heads,
        c.n_heads
    );
    assert!(
        c.rope_dims.is_multiple_of(2) && c.rope_dims <= c.head_dim,
        "rope_dims {} is odd or too large",
        c.rope_dims
    );
    assert!(c.state_size.is_multiple_of(32) && c.state_size > 0, "state_size {} is not a multiple of 32", c.state_size);
    assert!(c.k_heads > 0 && c.v_heads.is_multiple_of(c.k_heads), "v_heads must be a multiple of k_heads");
    assert!((c.v_heads * c.state_size).is_multiple_of(256), "v_heads * state_size is not a multiple of 256");
    assert!(c.conv_kernel > 0, "the convolution needs a tap");
    let vocab = tiny_vocab();
    let mut w = GgufWriter::new();
    // INVARIANT: distinct keys, none general.alignment; tensors well-formed by the asserts above.
    add_metadata(&mut w, c, &vocab).expect("tiny qwen35 metadata is well-formed");
    add_tensors(&mut w, c, &vocab).expect("tiny qwen35 tensors are well-formed");
    w
}

/// Writes [`tiny_qwen35`]'s bytes to `path`.
///
/// # Errors
/// The file system's error.
///
/// # Panics
/// As [`tiny_qwen35`].
pub fn write_tiny_qwen35(path: impl AsRef<Path>, config: &TinyQwen35Config) -> std::io::Result<()> {
    std::fs::write(path, tiny_qwen35(config))
}

/// The `qwen35.*` hyperparameter keys both the tiny and the real-shape writers emit, from the
/// model's shape (`vocab` tokens), in file order.
pub(crate) fn hyperparameters(c: &TinyQwen35Config, vocab: u32) -> Vec<(&'static str, Value)> {
    let recurrent: Vec<Value> = (0..c.n_layers).map(|l| Value::Bool(c.is_recurrent(l))).collect();
    // INVARIANT: every item is a Bool.
    let recurrent = Array::new(ValueType::Bool, recurrent).expect("a Bool array of Bools");
    vec![
        ("qwen35.block_count", Value::U32(c.n_layers)),
        ("qwen35.context_length", Value::U32(c.context_length)),
        ("qwen35.embedding_length", Value::U32(c.dim)),
        ("qwen35.feed_forward_length", Value::U32(c.ffn_dim)),
        ("qwen35.attention.head_count", Value::U32(c.n_heads)),
        ("qwen35.attention.head_count_kv", Value::U32(c.n_kv_heads)),
        ("qwen35.attention.key_length", Value::U32(c.head_dim)),
        ("qwen35.attention.value_length", Value::U32(c.head_dim)),
        ("qwen35.attention.layer_norm_rms_epsilon", Value::F32(c.rms_eps)),
        ("qwen35.rope.freq_base", Value::F32(c.rope_freq_base)),
        ("qwen35.rope.dimension_count", Value::U32(c.rope_dims)),
        ("qwen35.rope.dimension_sections", Value::i32_array(c.rope_sections)),
        ("qwen35.ssm.conv_kernel", Value::U32(c.conv_kernel)),
        ("qwen35.ssm.state_size", Value::U32(c.state_size)),
        ("qwen35.ssm.group_count", Value::U32(c.k_heads)),
        ("qwen35.ssm.time_step_rank", Value::U32(c.v_heads)),
        ("qwen35.ssm.inner_size", Value::U32(c.state_size * c.v_heads)),
        ("qwen35.attention.recurrent_layers", Value::Array(recurrent)),
        ("qwen35.full_attention_interval", Value::U32(c.full_attention_interval)),
        ("qwen35.vocab_size", Value::U32(vocab)),
    ]
}

/// The tokenizer keys of a model with `vocab`'s tokens (a byte-level GPT-2 vocabulary), in file
/// order.
pub(crate) fn tokenizer(vocab: &TinyVocab) -> Vec<(&'static str, Value)> {
    let s = |v: &str| Value::String(v.to_owned());
    vec![
        ("tokenizer.ggml.model", s("gpt2")),
        ("tokenizer.ggml.pre", s("qwen35")),
        ("tokenizer.ggml.tokens", Value::string_array(vocab.tokens.iter().cloned())),
        ("tokenizer.ggml.token_type", Value::i32_array(vocab.token_types.iter().copied())),
        ("tokenizer.ggml.merges", Value::string_array(vocab.merges.iter().cloned())),
        ("tokenizer.ggml.eos_token_id", Value::U32(TOKEN_IM_END)),
        ("tokenizer.ggml.padding_token_id", Value::U32(TOKEN_ENDOFTEXT)),
        ("tokenizer.ggml.bos_token_id", Value::U32(TOKEN_ENDOFTEXT)),
        ("tokenizer.ggml.add_bos_token", Value::Bool(false)),
        ("tokenizer.chat_template", s(CHAT_TEMPLATE)),
    ]
}

fn add_metadata(w: &mut GgufWriter, c: &TinyQwen35Config, vocab: &TinyVocab) -> Result<(), crate::WriteError> {
    let s = |v: &str| Value::String(v.to_owned());
    w.add("general.architecture", s("qwen35"))?
        .add("general.type", s("model"))?
        .add("general.name", s("Redline Tiny Qwen 3.5"))?
        .add("general.basename", s("tiny-qwen35"))?
        .add("general.size_label", s("tiny"))?
        .add("general.license", s("MIT OR Apache-2.0"))?;
    let n_vocab = u32::try_from(vocab.tokens.len()).unwrap_or(u32::MAX);
    for (key, value) in hyperparameters(c, n_vocab).into_iter().chain(tokenizer(vocab)) {
        w.add(key, value)?;
    }
    w.add("general.quantization_version", Value::U32(2))?;
    Ok(())
}

fn add_tensors(w: &mut GgufWriter, c: &TinyQwen35Config, vocab: &TinyVocab) -> Result<(), crate::WriteError> {
    let mut rng = SplitMix64(c.seed);
    let n_vocab = u64::try_from(vocab.tokens.len()).unwrap_or(u64::MAX);
    let dim = u64::from(c.dim);
    // Embedding entries of std 0.2: logits through the tied output have std 0.2 sqrt(dim), about
    // 2 at dim 128, and the layers' contributions to the residual stream outweigh the token's own
    // row, so that greedy decoding moves on instead of repeating its input.
    add_weight(w, &mut rng, "token_embd.weight", &[dim, n_vocab], GgmlType::Q8_0, Scaled(0.2))?;
    add_weight(w, &mut rng, "output_norm.weight", &[dim], GgmlType::F32, Norm)?;
    let (mut recurrent, mut attention) = (0usize, 0usize);
    for layer in 0..c.n_layers {
        let [gate, up, down] = FFN_TYPES[usize::try_from(layer % 6).unwrap_or(0)];
        let types = LayerTypes {
            delta: DELTA_TYPES[recurrent % 4],
            attention: ATTENTION_TYPES[attention % 2],
            ffn: [gate, up, down],
        };
        add_layer(w, &mut rng, c, layer, &types)?;
        if c.is_recurrent(layer) {
            recurrent += 1;
        } else {
            attention += 1;
        }
    }
    Ok(())
}

/// The matrix types of one layer.
pub(crate) struct LayerTypes {
    /// `(attn_qkv, attn_gate, ssm_beta, ssm_alpha, ssm_out)` of a DeltaNet layer.
    pub(crate) delta: [GgmlType; 5],
    /// `(attn_q, attn_k, attn_v, attn_output)` of a full-attention layer.
    pub(crate) attention: [GgmlType; 4],
    /// `(ffn_gate, ffn_up, ffn_down)`.
    pub(crate) ffn: [GgmlType; 3],
}

/// One layer's tensors, in llama.cpp's names, drawn from `rng` in a fixed order.
pub(crate) fn add_layer(
    w: &mut GgufWriter,
    rng: &mut SplitMix64,
    c: &TinyQwen35Config,
    layer: u32,
    types: &LayerTypes,
) -> Result<(), crate::WriteError> {
    let name = |t: &str| format!("blk.{layer}.{t}.weight");
    let (dim, ffn, hd) = (u64::from(c.dim), u64::from(c.ffn_dim), u64::from(c.head_dim));
    let matrix = |fan_in: u64| {
        // CAST: a u32 width; exact below 2^24.
        #[allow(clippy::cast_precision_loss)]
        Scaled(1.0 / (fan_in as f32).sqrt())
    };
    add_weight(w, rng, &name("attn_norm"), &[dim], GgmlType::F32, Norm)?;
    if c.is_recurrent(layer) {
        let (s, vh) = (u64::from(c.state_size), u64::from(c.v_heads));
        let (key_dim, value_dim) = (s * u64::from(c.k_heads), s * vh);
        let conv_dim = 2 * key_dim + value_dim;
        let [qkv, gate, beta, alpha, out] = types.delta;
        add_weight(w, rng, &name("attn_qkv"), &[dim, conv_dim], qkv, matrix(dim))?;
        add_weight(w, rng, &name("attn_gate"), &[dim, value_dim], gate, matrix(dim))?;
        add_weight(w, rng, &name("ssm_conv1d"), &[u64::from(c.conv_kernel), conv_dim], GgmlType::F32, Scaled(0.5))?;
        add_weight(w, rng, &format!("blk.{layer}.ssm_dt.bias"), &[vh], GgmlType::F32, Scaled(0.5))?;
        add_weight(w, rng, &format!("blk.{layer}.ssm_a"), &[vh], GgmlType::F32, Decay)?;
        add_weight(w, rng, &name("ssm_beta"), &[dim, vh], beta, matrix(dim))?;
        add_weight(w, rng, &name("ssm_alpha"), &[dim, vh], alpha, matrix(dim))?;
        add_weight(w, rng, &name("ssm_norm"), &[s], GgmlType::F32, Norm)?;
        add_weight(w, rng, &name("ssm_out"), &[value_dim, dim], out, matrix(value_dim))?;
    } else {
        let (q_dim, kv_dim) = (hd * u64::from(c.n_heads), hd * u64::from(c.n_kv_heads));
        let [q, k, v, o] = types.attention;
        add_weight(w, rng, &name("attn_q"), &[dim, 2 * q_dim], q, matrix(dim))?;
        add_weight(w, rng, &name("attn_k"), &[dim, kv_dim], k, matrix(dim))?;
        add_weight(w, rng, &name("attn_v"), &[dim, kv_dim], v, matrix(dim))?;
        add_weight(w, rng, &name("attn_q_norm"), &[hd], GgmlType::F32, Norm)?;
        add_weight(w, rng, &name("attn_k_norm"), &[hd], GgmlType::F32, Norm)?;
        add_weight(w, rng, &name("attn_output"), &[q_dim, dim], o, matrix(q_dim))?;
    }
    add_weight(w, rng, &name("post_attention_norm"), &[dim], GgmlType::F32, Norm)?;
    let [gate, up, down] = types.ffn;
    add_weight(w, rng, &name("ffn_gate"), &[dim, ffn], gate, matrix(dim))?;
    add_weight(w, rng, &name("ffn_up"), &[dim, ffn], up, matrix(dim))?;
    add_weight(w, rng, &name("ffn_down"), &[ffn, dim], down, matrix(ffn))
}

/// How a tensor's values are drawn: a norm's `1 + 0.05 N(0, 1)`, `s N(0, 1)`, or a DeltaNet
/// `ssm_a = -exp(A_log)` uniform in `[-1, -0.5)`.
#[derive(Clone, Copy)]
enum Draw {
    Norm,
    Scaled(f32),
    Decay,
}

use Draw::{Decay, Norm, Scaled};

fn add_weight(
    w: &mut GgufWriter,
    rng: &mut SplitMix64,
    name: &str,
    dims: &[u64],
    ty: GgmlType,
    draw: Draw,
) -> Result<(), crate::WriteError> {
    let n = usize::try_from(dims.iter().product::<u64>()).unwrap_or(0);
    let values: Vec<f32> = (0..n)
        .map(|_| match draw {
            Norm => 1.0 + 0.05 * rng.normal(),
            Scaled(s) => rng.normal() * s,
            Decay => -0.75 + 0.25 * rng.uniform(),
        })
        .collect();
    let data = quantize(ty, &values).unwrap_or_default();
    w.add_tensor(name, dims, ty, data)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Gguf;

    #[test]
    fn the_tiny_model_interleaves_its_layers_and_uses_every_matrix_type() {
        let c = TinyQwen35Config::default();
        let file = Gguf::parse(tiny_qwen35(&c)).unwrap();
        assert_eq!(file.str("general.architecture").unwrap(), "qwen35");
        assert_eq!(file.str("tokenizer.ggml.pre").unwrap(), "qwen35");
        // Layers 2 and 5 attend fully, the others are DeltaNet layers, by either key.
        let Some(Value::Array(recurrent)) = file.get("qwen35.attention.recurrent_layers") else { panic!() };
        let flags: Vec<bool> = recurrent.items().iter().map(|v| matches!(v, Value::Bool(true))).collect();
        assert_eq!(flags, [true, true, false, true, true, false]);
        assert!(
            file.tensor_info("blk.2.attn_q.weight").is_some() && file.tensor_info("blk.2.attn_qkv.weight").is_none()
        );
        assert!(file.tensor_info("blk.3.ssm_a").is_some() && file.tensor_info("blk.3.attn_q.weight").is_none());
        assert_eq!(file.tensor_info("blk.0.ssm_conv1d.weight").unwrap().dims(), [4, 512]);
        assert_eq!(file.tensor_info("blk.2.attn_q.weight").unwrap().dims(), [128, 512]);
        let mut used: Vec<u32> = file.tensors().iter().map(|t| t.ty().id()).collect();
        used.sort_unstable();
        used.dedup();
        for ty in FFN_TYPES.iter().flatten().chain(DELTA_TYPES.iter().flatten()).chain(ATTENTION_TYPES.iter().flatten())
        {
            assert!(used.contains(&ty.id()), "{ty} unused");
        }
        // Every ssm_a is negative: a decay below 1.
        let a = file.tensor("blk.0.ssm_a").unwrap().to_f32().unwrap();
        assert!(a.iter().all(|&v| (-1.0..-0.5).contains(&v)), "{a:?}");
    }
}
