//! A deterministic tiny `gemma3` model in Gemma 3's GGUF conventions (llama.cpp's `gemma3`
//! metadata keys and tensor names: per-head Q/K norms, post-attention and post-feed-forward norms,
//! a sliding window, a SentencePiece-style `llama` vocabulary with byte pieces), with a small
//! window so that fast tests cross it, and every matrix type the kernels take in use: each layer
//! draws its matrices from a rotation of the legacy, K and float types, the token embedding is
//! Q8_0 and tied to the output, as in Gemma 3 270M Q4_K_M.

use std::path::Path;

use crate::quant::quantize;
use crate::tiny::SplitMix64;
use crate::types::GgmlType;
use crate::value::Value;
use crate::writer::GgufWriter;

/// Shape and seed of a tiny `gemma3` model.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyGemma3Config {
    /// Transformer blocks (`gemma3.block_count`); layer `l` slides unless `l % 6 == 5`.
    pub n_layers: u32,
    /// Embedding width; a multiple of 32.
    pub dim: u32,
    /// Feed-forward width; a multiple of 256 (the K-quant `ffn_down` rows).
    pub ffn_dim: u32,
    /// Query heads.
    pub n_heads: u32,
    /// Key/value heads; divides `n_heads`.
    pub n_kv_heads: u32,
    /// `gemma3.attention.key_length` (= `value_length`); a multiple of 64 with
    /// `n_heads * head_dim` a multiple of 256 (the K-quant `attn_output` rows).
    pub head_dim: u32,
    /// `gemma3.attention.sliding_window`.
    pub window: u32,
    /// `gemma3.context_length`.
    pub context_length: u32,
    /// `gemma3.rope.freq_base` (the full-attention layers').
    pub rope_freq_base: f32,
    /// `gemma3.attention.layer_norm_rms_epsilon`.
    pub rms_eps: f32,
    /// Seed of the weight generator.
    pub seed: u64,
}

impl Default for TinyGemma3Config {
    fn default() -> Self {
        Self {
            n_layers: 7,
            dim: 128,
            ffn_dim: 256,
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 64,
            window: 8,
            context_length: 2048,
            rope_freq_base: 1_000_000.0,
            rms_eps: 1e-6,
            seed: 0x9e33_a3a3,
        }
    }
}

/// `<pad>`, id 0.
pub const TOKEN_PAD: u32 = 0;
/// `<eos>`, id 1.
pub const TOKEN_EOS: u32 = 1;
/// `<bos>`, id 2.
pub const TOKEN_BOS: u32 = 2;
/// `<unk>`, id 3.
pub const TOKEN_UNK: u32 = 3;
/// Id of the byte piece `<0xNN>` for byte `b` is `BYTE_PIECE_BASE + b`.
pub const BYTE_PIECE_BASE: u32 = 6;

/// llama.cpp's `LLAMA_TOKEN_TYPE_*`: normal, unknown, control, user-defined, byte.
const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const BYTE: i32 = 6;

/// Whole pieces after the byte pieces, with their scores (higher merges first), `▁` for a space.
const PIECES: &[&str] = &[
    "▁",
    "e",
    "t",
    "a",
    "o",
    "n",
    "i",
    "s",
    "h",
    "r",
    "l",
    "d",
    "c",
    "u",
    "m",
    "▁t",
    "▁a",
    "he",
    "in",
    "er",
    "▁the",
    "on",
    "at",
    "en",
    "▁s",
    "▁w",
    "is",
    "or",
    "an",
    "▁of",
    "▁in",
    "▁and",
    "▁to",
    "ll",
    "▁c",
    "▁f",
    "ar",
    "▁b",
    "▁is",
    "ing",
    "▁p",
    "▁Once",
    "▁upon",
    "▁time",
    "▁capital",
    "▁France",
    "The",
    "▁The",
    ".",
    ",",
];

/// The rotation of matrix types: `(attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up,
/// ffn_down)` of layer `l` is row `l % 5`.
const TYPES: [[GgmlType; 7]; 5] = {
    use GgmlType::{Bf16, F16, Q2K, Q3K, Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
    [
        [Q5_0, Q5_0, Q8_0, Q4K, Q5_0, Q5_0, Q6K],
        [Q4_0, Q5_1, Q8_0, Q5K, Q4_1, Q5_0, Q4K],
        [Q8_0, Q4_1, F16, Q6K, Q5_1, Q4_0, Q5K],
        [Q5_0, Bf16, Q5_0, Q3K, F16, Q8_0, Q2K],
        [Q4_1, Q5_0, Q4_0, Q2K, Bf16, Q5_1, Q3K],
    ]
};

/// The tiny vocabulary: specials, byte pieces, whole pieces; token types and scores by id.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyGemma3Vocab {
    /// Pieces by id.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.token_type` by id.
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.scores` by id.
    pub scores: Vec<f32>,
}

/// Builds the vocabulary (the same every time): `<pad>`, `<eos>`, `<bos>`, `<unk>`,
/// `<start_of_turn>` and `<end_of_turn>` (user-defined, as Gemma's), 256 byte pieces, then
/// [`PIECES`] with descending scores.
#[must_use]
pub fn tiny_gemma3_vocab() -> TinyGemma3Vocab {
    let mut tokens: Vec<String> =
        ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"].map(String::from).to_vec();
    let mut token_types = vec![CONTROL, CONTROL, CONTROL, UNKNOWN, USER_DEFINED, USER_DEFINED];
    let mut scores = vec![0.0; tokens.len()];
    for b in 0..=u8::MAX {
        tokens.push(format!("<0x{b:02X}>"));
        token_types.push(BYTE);
        scores.push(0.0);
    }
    for (rank, piece) in PIECES.iter().enumerate() {
        tokens.push((*piece).to_owned());
        token_types.push(NORMAL);
        // CAST: a small rank, exact in f32.
        #[allow(clippy::cast_precision_loss)]
        scores.push(-(rank as f32));
    }
    TinyGemma3Vocab { tokens, token_types, scores }
}

/// The tiny model as GGUF bytes.
///
/// # Panics
/// When the configuration is inconsistent (see [`TinyGemma3Config`]'s fields).
#[must_use]
pub fn tiny_gemma3(config: &TinyGemma3Config) -> Vec<u8> {
    tiny_gemma3_writer(config).to_bytes()
}

/// [`tiny_gemma3`] before it is written, so that a test can change a key or a tensor.
///
/// # Panics
/// As [`tiny_gemma3`].
#[must_use]
pub fn tiny_gemma3_writer(config: &TinyGemma3Config) -> GgufWriter {
    let c = config;
    assert!(c.n_layers > 0, "tiny gemma3 needs at least one layer");
    assert!(c.dim.is_multiple_of(32) && c.dim > 0, "dim {} is not a positive multiple of 32", c.dim);
    assert!(c.ffn_dim.is_multiple_of(256) && c.ffn_dim > 0, "ffn_dim {} is not a positive multiple of 256", c.ffn_dim);
    assert!(
        c.head_dim.is_multiple_of(64) && c.head_dim > 0,
        "head_dim {} is not a positive multiple of 64",
        c.head_dim
    );
    assert!((c.n_heads * c.head_dim).is_multiple_of(256), "n_heads * head_dim is not a multiple of 256");
    assert!(
        c.n_kv_heads > 0 && c.n_heads.is_multiple_of(c.n_kv_heads),
        "{} kv heads do not divide {} heads",
        c.n_kv_heads,
        c.n_heads
    );
    let vocab = tiny_gemma3_vocab();
    let mut w = GgufWriter::new();
    // INVARIANT: distinct keys, none general.alignment; tensors well-formed by the asserts above.
    add_metadata(&mut w, c, &vocab).expect("tiny gemma3 metadata is well-formed");
    add_tensors(&mut w, c, &vocab).expect("tiny gemma3 tensors are well-formed");
    w
}

/// Writes [`tiny_gemma3`]'s bytes to `path`.
///
/// # Errors
/// The file system's error.
///
/// # Panics
/// As [`tiny_gemma3`].
pub fn write_tiny_gemma3(path: impl AsRef<Path>, config: &TinyGemma3Config) -> std::io::Result<()> {
    std::fs::write(path, tiny_gemma3(config))
}

fn add_metadata(w: &mut GgufWriter, c: &TinyGemma3Config, vocab: &TinyGemma3Vocab) -> Result<(), crate::WriteError> {
    let s = |v: &str| Value::String(v.to_owned());
    w.add("general.architecture", s("gemma3"))?
        .add("general.type", s("model"))?
        .add("general.name", s("Redline Tiny Gemma 3"))?
        .add("general.basename", s("tiny-gemma3"))?
        .add("general.size_label", s("tiny"))?
        .add("general.license", s("MIT OR Apache-2.0"))?
        .add("gemma3.context_length", Value::U32(c.context_length))?
        .add("gemma3.embedding_length", Value::U32(c.dim))?
        .add("gemma3.block_count", Value::U32(c.n_layers))?
        .add("gemma3.feed_forward_length", Value::U32(c.ffn_dim))?
        .add("gemma3.attention.head_count", Value::U32(c.n_heads))?
        .add("gemma3.attention.layer_norm_rms_epsilon", Value::F32(c.rms_eps))?
        .add("gemma3.attention.key_length", Value::U32(c.head_dim))?
        .add("gemma3.attention.value_length", Value::U32(c.head_dim))?
        .add("gemma3.rope.freq_base", Value::F32(c.rope_freq_base))?
        .add("gemma3.attention.sliding_window", Value::U32(c.window))?
        .add("gemma3.attention.head_count_kv", Value::U32(c.n_kv_heads))?
        .add("tokenizer.ggml.model", s("llama"))?
        .add("tokenizer.ggml.pre", s("default"))?
        .add("tokenizer.ggml.tokens", Value::string_array(vocab.tokens.iter().cloned()))?
        .add("tokenizer.ggml.scores", Value::f32_array(vocab.scores.iter().copied()))?
        .add("tokenizer.ggml.token_type", Value::i32_array(vocab.token_types.iter().copied()))?
        .add("tokenizer.ggml.bos_token_id", Value::U32(TOKEN_BOS))?
        .add("tokenizer.ggml.eos_token_id", Value::U32(TOKEN_EOS))?
        .add("tokenizer.ggml.unknown_token_id", Value::U32(TOKEN_UNK))?
        .add("tokenizer.ggml.padding_token_id", Value::U32(TOKEN_PAD))?
        .add("tokenizer.ggml.add_bos_token", Value::Bool(true))?
        .add("tokenizer.ggml.add_eos_token", Value::Bool(false))?
        .add("tokenizer.ggml.add_space_prefix", Value::Bool(false))?
        .add("general.quantization_version", Value::U32(2))?;
    Ok(())
}

fn add_tensors(w: &mut GgufWriter, c: &TinyGemma3Config, vocab: &TinyGemma3Vocab) -> Result<(), crate::WriteError> {
    let mut rng = SplitMix64(c.seed);
    let (dim, ffn, hd) = (u64::from(c.dim), u64::from(c.ffn_dim), u64::from(c.head_dim));
    let (q_dim, kv_dim) = (hd * u64::from(c.n_heads), hd * u64::from(c.n_kv_heads));
    let n_vocab = u64::try_from(vocab.tokens.len()).unwrap_or(u64::MAX);
    add_weight(w, &mut rng, "output_norm.weight", &[dim], GgmlType::F32, Norm)?;
    // Embedding entries of std 0.05: scaled by sqrt(dim) ≈ 11 they are of unit size.
    add_weight(w, &mut rng, "token_embd.weight", &[dim, n_vocab], GgmlType::Q8_0, Scaled(0.05))?;
    for layer in 0..c.n_layers {
        let name = |t: &str| format!("blk.{layer}.{t}.weight");
        let [q, k, v, o, gate, up, down] = TYPES[usize::try_from(layer % 5).unwrap_or(0)];
        let matrix = |fan_in: u64| {
            // CAST: a u32 width; exact below 2^24.
            #[allow(clippy::cast_precision_loss)]
            Scaled(1.0 / (fan_in as f32).sqrt())
        };
        add_weight(w, &mut rng, &name("attn_norm"), &[dim], GgmlType::F32, Norm)?;
        add_weight(w, &mut rng, &name("attn_q"), &[dim, q_dim], q, matrix(dim))?;
        add_weight(w, &mut rng, &name("attn_k"), &[dim, kv_dim], k, matrix(dim))?;
        add_weight(w, &mut rng, &name("attn_v"), &[dim, kv_dim], v, matrix(dim))?;
        add_weight(w, &mut rng, &name("attn_q_norm"), &[hd], GgmlType::F32, Norm)?;
        add_weight(w, &mut rng, &name("attn_k_norm"), &[hd], GgmlType::F32, Norm)?;
        add_weight(w, &mut rng, &name("attn_output"), &[q_dim, dim], o, matrix(q_dim))?;
        add_weight(w, &mut rng, &name("post_attention_norm"), &[dim], GgmlType::F32, Norm)?;
        add_weight(w, &mut rng, &name("ffn_norm"), &[dim], GgmlType::F32, Norm)?;
        add_weight(w, &mut rng, &name("ffn_gate"), &[dim, ffn], gate, matrix(dim))?;
        add_weight(w, &mut rng, &name("ffn_up"), &[dim, ffn], up, matrix(dim))?;
        add_weight(w, &mut rng, &name("ffn_down"), &[ffn, dim], down, matrix(ffn))?;
        add_weight(w, &mut rng, &name("post_ffw_norm"), &[dim], GgmlType::F32, Norm)?;
    }
    Ok(())
}

/// How a tensor's values are drawn: a norm's `1 + 0.05 N(0, 1)`, or `s N(0, 1)`.
#[derive(Clone, Copy)]
enum Draw {
    Norm,
    Scaled(f32),
}

use Draw::{Norm, Scaled};

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
    fn the_tiny_model_parses_with_every_matrix_type_in_use() {
        let file = Gguf::parse(tiny_gemma3(&TinyGemma3Config::default())).unwrap();
        assert_eq!(file.str("general.architecture").unwrap(), "gemma3");
        assert_eq!(file.u32("gemma3.attention.sliding_window").unwrap(), 8);
        let mut used: Vec<u32> = file.tensors().iter().map(|t| t.ty().id()).collect();
        used.sort_unstable();
        used.dedup();
        for ty in TYPES.iter().flatten() {
            assert!(used.contains(&ty.id()), "{ty} unused");
        }
        let vocab = tiny_gemma3_vocab();
        assert_eq!(vocab.tokens[usize::try_from(BYTE_PIECE_BASE).unwrap() + 0x41], "<0x41>");
        assert_eq!(vocab.tokens.len(), vocab.scores.len());
    }
}
