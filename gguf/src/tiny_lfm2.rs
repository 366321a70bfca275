//! A deterministic tiny `lfm2` model in LiquidAI LFM2's GGUF conventions, as llama.cpp's
//! `convert_hf_to_gguf.py` (`LFM2Model`) writes them and `src/models/lfm2.cpp` reads them:
//!
//! - `lfm2.attention.head_count_kv` is an `i32` array with one entry per block, 0 for a
//!   short-convolution block (`layer_types` "conv" in the HF config) and the KV head count for an
//!   attention block; llama.cpp marks block `l` recurrent when its entry is 0;
//! - `lfm2.shortconv.l_cache` is the convolution's length (3 in every published LFM2);
//! - a convolution block holds `blk.N.shortconv.in_proj` (`[dim] -> [3 dim]`, the B, C and x
//!   thirds in that order), `blk.N.shortconv.conv` (F32, `[l_cache, dim]`: channel `c`'s taps
//!   contiguous, oldest first) and `blk.N.shortconv.out_proj`; an attention block `attn_q`,
//!   `attn_k`, `attn_v`, `attn_q_norm`, `attn_k_norm` (per head) and `attn_output`; every block
//!   `attn_norm` (HF's `operator_norm`), `ffn_norm`, `ffn_gate`, `ffn_up`, `ffn_down`;
//! - the final norm is `token_embd_norm.weight` (HF's `embedding_norm`, llama.cpp's
//!   `LLM_TENSOR_OUTPUT_NORM_LFM2`) and there is no `output.weight` (tied to `token_embd`);
//! - the vocabulary is byte-level BPE (`tokenizer.ggml.model = "gpt2"`) with
//!   `tokenizer.ggml.pre = "lfm2"`, `<|startoftext|>` as BOS (added) and `<|im_end|>` as EOS.
//!
//! The blocks are interleaved as [`TinyLfm2Config::attention_layers`] says, and the matrices draw
//! their types from a rotation that uses every type the matvec kernels take (the token embedding
//! is Q6_K, as in the published Q4_K_M files), so one small file exercises every kernel path.

use std::path::Path;

use crate::quant::quantize;
use crate::tiny::{SplitMix64, gpt2_byte_symbol};
use crate::types::GgmlType;
use crate::value::Value;
use crate::writer::GgufWriter;

/// Shape and seed of a tiny `lfm2` model.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyLfm2Config {
    /// Blocks (`lfm2.block_count`).
    pub n_layers: u32,
    /// The attention blocks, ascending (HF's `full_attn_idxs`); every other block is a short
    /// convolution.
    pub attention_layers: Vec<u32>,
    /// Embedding width; a positive multiple of 256 (the K-quant rows of every matrix).
    pub dim: u32,
    /// Feed-forward width; a positive multiple of 256.
    pub ffn_dim: u32,
    /// Query heads; `dim / n_heads` is the head size, even.
    pub n_heads: u32,
    /// Key/value heads of every attention block; divides `n_heads`.
    pub n_kv_heads: u32,
    /// `lfm2.shortconv.l_cache`: taps of the convolution, at least 2.
    pub l_cache: u32,
    /// `lfm2.context_length`.
    pub context_length: u32,
    /// `lfm2.rope.freq_base`.
    pub rope_freq_base: f32,
    /// `lfm2.attention.layer_norm_rms_epsilon`.
    pub rms_eps: f32,
    /// Seed of the weight generator.
    pub seed: u64,
}

impl Default for TinyLfm2Config {
    fn default() -> Self {
        Self {
            n_layers: 6,
            attention_layers: vec![2, 4],
            dim: 256,
            ffn_dim: 512,
            n_heads: 4,
            n_kv_heads: 2,
            l_cache: 3,
            context_length: 256,
            rope_freq_base: 1_000_000.0,
            rms_eps: 1e-5,
            seed: 0x1f3a_2c0f,
        }
    }
}

/// `<|pad|>`, id 0.
pub const TOKEN_PAD: u32 = 0;
/// `<|startoftext|>`, id 1: begin of sequence.
pub const TOKEN_BOS: u32 = 1;
/// `<|endoftext|>`, id 2.
pub const TOKEN_ENDOFTEXT: u32 = 2;
/// `<|im_start|>`, id 6.
pub const TOKEN_IM_START: u32 = 6;
/// `<|im_end|>`, id 7: end of sequence.
pub const TOKEN_EOS: u32 = 7;
/// Id of the token for byte `b` is `BYTE_TOKEN_BASE + b`.
pub const BYTE_TOKEN_BASE: u32 = 8;

/// The specials by id, as LFM2's vocabulary begins.
const SPECIALS: [&str; 8] = [
    "<|pad|>",
    "<|startoftext|>",
    "<|endoftext|>",
    "<|fim_pre|>",
    "<|fim_mid|>",
    "<|fim_suf|>",
    "<|im_start|>",
    "<|im_end|>",
];

/// llama.cpp's `LLAMA_TOKEN_TYPE_NORMAL` and `LLAMA_TOKEN_TYPE_CONTROL`.
const NORMAL: i32 = 1;
const CONTROL: i32 = 3;

/// Merges in priority order, in GPT-2's byte-level spelling (`Ġ` is a space).
const MERGES: &[(&str, &str)] = &[
    ("Ġ", "t"),
    ("Ġ", "a"),
    ("h", "e"),
    ("i", "n"),
    ("r", "e"),
    ("o", "n"),
    ("Ġt", "he"),
    ("e", "r"),
    ("Ġ", "s"),
    ("a", "t"),
    ("Ġ", "w"),
    ("Ġ", "o"),
    ("e", "n"),
    ("Ġ", "c"),
    ("i", "t"),
    ("i", "s"),
    ("a", "n"),
    ("o", "r"),
    ("e", "s"),
    ("Ġ", "b"),
    ("e", "d"),
    ("Ġ", "f"),
    ("in", "g"),
    ("Ġ", "p"),
    ("o", "u"),
    ("Ġ", "m"),
    ("Ġt", "o"),
    ("Ġo", "f"),
    ("n", "d"),
    ("Ġa", "nd"),
    ("Ġ", "in"),
    ("Ġ", "is"),
    ("Ġ", "T"),
    ("Ġ", "I"),
    ("l", "l"),
    ("Ġc", "on"),
];

/// The tiny model's tokenizer vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TinyLfm2Vocab {
    /// Token strings by id: the eight specials, the 256 byte symbols, then merge results.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.token_type` by id.
    pub token_types: Vec<i32>,
    /// Merges as `"left right"`, highest priority first.
    pub merges: Vec<String>,
}

/// Builds the vocabulary (the same every time).
#[must_use]
pub fn tiny_lfm2_vocab() -> TinyLfm2Vocab {
    let mut tokens: Vec<String> = SPECIALS.map(String::from).to_vec();
    let mut token_types = vec![CONTROL; tokens.len()];
    for b in 0..=u8::MAX {
        tokens.push(gpt2_byte_symbol(b).to_string());
        token_types.push(NORMAL);
    }
    let mut merges = Vec::with_capacity(MERGES.len());
    for (left, right) in MERGES {
        let merged = format!("{left}{right}");
        if !tokens.contains(&merged) {
            tokens.push(merged);
            token_types.push(NORMAL);
        }
        merges.push(format!("{left} {right}"));
    }
    TinyLfm2Vocab { tokens, token_types, merges }
}

/// The matrix types of the convolution blocks, `(in_proj, out_proj, ffn_gate, ffn_up,
/// ffn_down)`: conv block `k` (counting conv blocks only) takes row `k % 4`.
const CONV_TYPES: [[GgmlType; 5]; 4] = {
    use GgmlType::{Bf16, F16, Q2K, Q3K, Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
    [[Q4K, Q4K, Q4K, Q4K, Q6K], [Q5_0, Q8_0, Q4_0, Q5_1, Q4_1], [Q3K, Q5K, Q2K, F16, Bf16], [Q8_0, Q6K, Q5K, Q4K, Q3K]]
};

/// The matrix types of the attention blocks, `(attn_q, attn_k, attn_v, attn_output, ffn_gate,
/// ffn_up, ffn_down)`: attention block `k` takes row `k % 2`.
const ATTENTION_TYPES: [[GgmlType; 7]; 2] = {
    use GgmlType::{Bf16, F16, Q2K, Q4_0, Q4K, Q5_0, Q5_1, Q6K, Q8_0};
    [[Q4K, Q4K, Q6K, Q4K, Q4K, Q4K, Q6K], [Q5_0, Q8_0, F16, Q2K, Q5_1, Bf16, Q4_0]]
};

impl TinyLfm2Config {
    /// Whether block `layer` is an attention block.
    #[must_use]
    pub fn is_attention(&self, layer: u32) -> bool {
        self.attention_layers.contains(&layer)
    }

    /// `lfm2.attention.head_count_kv`: the KV heads of each block, 0 for a convolution.
    #[must_use]
    pub fn head_count_kv(&self) -> Vec<i32> {
        let kv = i32::try_from(self.n_kv_heads).unwrap_or(i32::MAX);
        (0..self.n_layers).map(|l| if self.is_attention(l) { kv } else { 0 }).collect()
    }

    fn check(&self) {
        assert!(self.n_layers > 0, "tiny lfm2 needs at least one block");
        assert!(
            self.attention_layers.windows(2).all(|w| w[0] < w[1])
                && self.attention_layers.last().is_none_or(|&l| l < self.n_layers),
            "attention layers {:?} are not ascending blocks below {}",
            self.attention_layers,
            self.n_layers
        );
        assert!(self.dim > 0 && self.dim.is_multiple_of(256), "dim {} is not a positive multiple of 256", self.dim);
        assert!(
            self.ffn_dim > 0 && self.ffn_dim.is_multiple_of(256),
            "ffn_dim {} is not a positive multiple of 256",
            self.ffn_dim
        );
        assert!(
            self.n_heads > 0 && self.dim.is_multiple_of(self.n_heads) && (self.dim / self.n_heads).is_multiple_of(2),
            "{} heads do not split dim {} into even heads",
            self.n_heads,
            self.dim
        );
        assert!(
            self.n_kv_heads > 0 && self.n_heads.is_multiple_of(self.n_kv_heads),
            "{} kv heads do not divide {} heads",
            self.n_kv_heads,
            self.n_heads
        );
        assert!(self.l_cache >= 2, "l_cache {} is below 2", self.l_cache);
    }
}

/// The tiny model as GGUF bytes.
///
/// # Panics
/// When the configuration is inconsistent (see [`TinyLfm2Config`]'s fields).
#[must_use]
pub fn tiny_lfm2(config: &TinyLfm2Config) -> Vec<u8> {
    tiny_lfm2_writer(config).to_bytes()
}

/// [`tiny_lfm2`] before it is written, so that a test can change a key or a tensor.
///
/// # Panics
/// As [`tiny_lfm2`].
#[must_use]
pub fn tiny_lfm2_writer(config: &TinyLfm2Config) -> GgufWriter {
    config.check();
    let vocab = tiny_lfm2_vocab();
    let mut w = GgufWriter::new();
    // INVARIANT: distinct keys, none general.alignment; tensors well-formed by `check`.
    add_metadata(&mut w, config, &vocab).expect("tiny lfm2 metadata is well-formed");
    add_tensors(&mut w, config, &vocab).expect("tiny lfm2 tensors are well-formed");
    w
}

/// Writes [`tiny_lfm2`]'s bytes to `path`.
///
/// # Errors
/// The file system's error.
///
/// # Panics
/// As [`tiny_lfm2`].
pub fn write_tiny_lfm2(path: impl AsRef<Path>, config: &TinyLfm2Config) -> std::io::Result<()> {
    std::fs::write(path, tiny_lfm2(config))
}

fn add_metadata(w: &mut GgufWriter, c: &TinyLfm2Config, vocab: &TinyLfm2Vocab) -> Result<(), crate::WriteError> {
    let s = |v: &str| Value::String(v.to_owned());
    let n_vocab = u32::try_from(vocab.tokens.len()).unwrap_or(u32::MAX);
    w.add("general.architecture", s("lfm2"))?
        .add("general.type", s("model"))?
        .add("general.name", s("Redline Tiny LFM2"))?
        .add("general.basename", s("tiny-lfm2"))?
        .add("general.size_label", s("tiny"))?
        .add("general.license", s("MIT OR Apache-2.0"))?
        .add("lfm2.block_count", Value::U32(c.n_layers))?
        .add("lfm2.context_length", Value::U32(c.context_length))?
        .add("lfm2.embedding_length", Value::U32(c.dim))?
        .add("lfm2.feed_forward_length", Value::U32(c.ffn_dim))?
        .add("lfm2.attention.head_count", Value::U32(c.n_heads))?
        .add("lfm2.attention.head_count_kv", Value::i32_array(c.head_count_kv()))?
        .add("lfm2.rope.freq_base", Value::F32(c.rope_freq_base))?
        .add("lfm2.attention.layer_norm_rms_epsilon", Value::F32(c.rms_eps))?
        .add("lfm2.vocab_size", Value::U32(n_vocab))?
        .add("lfm2.shortconv.l_cache", Value::U32(c.l_cache))?
        .add("general.quantization_version", Value::U32(2))?
        .add("tokenizer.ggml.model", s("gpt2"))?
        .add("tokenizer.ggml.pre", s("lfm2"))?
        .add("tokenizer.ggml.tokens", Value::string_array(vocab.tokens.iter().cloned()))?
        .add("tokenizer.ggml.token_type", Value::i32_array(vocab.token_types.iter().copied()))?
        .add("tokenizer.ggml.merges", Value::string_array(vocab.merges.iter().cloned()))?
        .add("tokenizer.ggml.bos_token_id", Value::U32(TOKEN_BOS))?
        .add("tokenizer.ggml.eos_token_id", Value::U32(TOKEN_EOS))?
        .add("tokenizer.ggml.padding_token_id", Value::U32(TOKEN_PAD))?
        .add("tokenizer.ggml.add_bos_token", Value::Bool(true))?
        .add("tokenizer.ggml.add_eos_token", Value::Bool(false))?;
    Ok(())
}

fn add_tensors(w: &mut GgufWriter, c: &TinyLfm2Config, vocab: &TinyLfm2Vocab) -> Result<(), crate::WriteError> {
    let mut rng = SplitMix64(c.seed);
    let (dim, ffn, taps) = (u64::from(c.dim), u64::from(c.ffn_dim), u64::from(c.l_cache));
    let head_dim = dim / u64::from(c.n_heads);
    let kv_dim = head_dim * u64::from(c.n_kv_heads);
    let n_vocab = u64::try_from(vocab.tokens.len()).unwrap_or(u64::MAX);
    // Embedding entries of std 0.5: the first block normalises them, and the tied logits
    // (normalised hidden state against these rows) come out a few units apart.
    add_weight(w, &mut rng, "token_embd.weight", &[dim, n_vocab], GgmlType::Q6K, Scaled(0.5))?;
    add_weight(w, &mut rng, "token_embd_norm.weight", &[dim], GgmlType::F32, Norm)?;
    let matrix = |fan_in: u64| {
        // CAST: a u32 width; exact below 2^24.
        #[allow(clippy::cast_precision_loss)]
        Scaled(1.0 / (fan_in as f32).sqrt())
    };
    let (mut convs, mut attentions) = (0usize, 0usize);
    for layer in 0..c.n_layers {
        let name = |t: &str| format!("blk.{layer}.{t}.weight");
        add_weight(w, &mut rng, &name("attn_norm"), &[dim], GgmlType::F32, Norm)?;
        let [gate, up, down] = if c.is_attention(layer) {
            let [q, k, v, o, gate, up, down] = ATTENTION_TYPES[attentions % ATTENTION_TYPES.len()];
            attentions += 1;
            add_weight(w, &mut rng, &name("attn_q"), &[dim, dim], q, matrix(dim))?;
            add_weight(w, &mut rng, &name("attn_k"), &[dim, kv_dim], k, matrix(dim))?;
            add_weight(w, &mut rng, &name("attn_v"), &[dim, kv_dim], v, matrix(dim))?;
            add_weight(w, &mut rng, &name("attn_q_norm"), &[head_dim], GgmlType::F32, Norm)?;
            add_weight(w, &mut rng, &name("attn_k_norm"), &[head_dim], GgmlType::F32, Norm)?;
            add_weight(w, &mut rng, &name("attn_output"), &[dim, dim], o, matrix(dim))?;
            [gate, up, down]
        } else {
            let [in_proj, out_proj, gate, up, down] = CONV_TYPES[convs % CONV_TYPES.len()];
            convs += 1;
            add_weight(w, &mut rng, &name("shortconv.in_proj"), &[dim, 3 * dim], in_proj, matrix(dim))?;
            // Taps of std 1/sqrt(l_cache): the convolution keeps its input's scale.
            add_weight(w, &mut rng, &name("shortconv.conv"), &[taps, dim], GgmlType::F32, matrix(taps))?;
            add_weight(w, &mut rng, &name("shortconv.out_proj"), &[dim, dim], out_proj, matrix(dim))?;
            [gate, up, down]
        };
        add_weight(w, &mut rng, &name("ffn_norm"), &[dim], GgmlType::F32, Norm)?;
        add_weight(w, &mut rng, &name("ffn_gate"), &[dim, ffn], gate, matrix(dim))?;
        add_weight(w, &mut rng, &name("ffn_up"), &[dim, ffn], up, matrix(dim))?;
        add_weight(w, &mut rng, &name("ffn_down"), &[ffn, dim], down, matrix(ffn))?;
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
        let file = Gguf::parse(tiny_lfm2(&TinyLfm2Config::default())).unwrap();
        assert_eq!(file.str("general.architecture").unwrap(), "lfm2");
        assert_eq!(file.i32_array("lfm2.attention.head_count_kv").unwrap(), [0, 0, 2, 0, 2, 0]);
        let mut used: Vec<u32> = file.tensors().iter().map(|t| t.ty().id()).collect();
        used.sort_unstable();
        used.dedup();
        for ty in CONV_TYPES.iter().flatten().chain(ATTENTION_TYPES.iter().flatten()) {
            assert!(used.contains(&ty.id()), "{ty} unused");
        }
        assert!(file.tensor_info("output.weight").is_none(), "the output is tied");
        let conv = file.tensor_info("blk.0.shortconv.conv.weight").unwrap();
        assert_eq!((conv.ty(), conv.dims()), (GgmlType::F32, &[3u64, 256][..]));
        let vocab = tiny_lfm2_vocab();
        assert_eq!(vocab.tokens[usize::try_from(BYTE_TOKEN_BASE).unwrap() + 0x41], "A");
        assert_eq!(vocab.tokens[usize::try_from(TOKEN_EOS).unwrap()], "<|im_end|>");
    }
}
