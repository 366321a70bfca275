//! A deterministic tiny llama model in the fixture's shape: the same metadata keys, tensor
//! names and tensor types as SmolLM2-135M-Instruct Q4_1 (Q8_0 embedding tied to the output,
//! Q4_1 matrices, F32 norms), a byte-level GPT-2 tokenizer vocabulary with a few dozen merges,
//! and ChatML specials. Fast tests run a real forward pass on it.

use std::path::Path;

use crate::quant::quantize;
use crate::types::GgmlType;
use crate::value::Value;
use crate::writer::GgufWriter;

/// Shape and seed of a tiny llama model.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyLlamaConfig {
    /// Transformer blocks (`llama.block_count`).
    pub n_layers: u32,
    /// Embedding width (`llama.embedding_length`); a multiple of 32.
    pub dim: u32,
    /// Feed-forward width (`llama.feed_forward_length`); a multiple of 32.
    pub ffn_dim: u32,
    /// Query heads; divides `dim`.
    pub n_heads: u32,
    /// Key/value heads; divides `n_heads`.
    pub n_kv_heads: u32,
    /// `llama.context_length`.
    pub context_length: u32,
    /// `llama.rope.freq_base`.
    pub rope_freq_base: f32,
    /// `llama.attention.layer_norm_rms_epsilon`.
    pub rms_eps: f32,
    /// Seed of the weight generator.
    pub seed: u64,
}

impl Default for TinyLlamaConfig {
    fn default() -> Self {
        Self {
            n_layers: 2,
            dim: 64,
            ffn_dim: 128,
            n_heads: 4,
            n_kv_heads: 2,
            context_length: 256,
            rope_freq_base: 10_000.0,
            rms_eps: 1e-5,
            seed: 0x5eed_11a3a,
        }
    }
}

/// `<|endoftext|>`, id 0: unknown token.
pub const TOKEN_ENDOFTEXT: u32 = 0;
/// `<|im_start|>`, id 1: begin of sequence.
pub const TOKEN_IM_START: u32 = 1;
/// `<|im_end|>`, id 2: end of sequence and padding.
pub const TOKEN_IM_END: u32 = 2;
/// Id of the token for byte `b` is `BYTE_TOKEN_BASE + b`.
pub const BYTE_TOKEN_BASE: u32 = 3;
/// `token_type` of ordinary tokens (llama.cpp's `LLAMA_TOKEN_TYPE_NORMAL`).
pub const TOKEN_TYPE_NORMAL: i32 = 1;
/// `token_type` of control tokens (`LLAMA_TOKEN_TYPE_CONTROL`).
pub const TOKEN_TYPE_CONTROL: i32 = 3;

/// The ChatML template of the tiny model (the fixture's, without its default system prompt).
pub const CHAT_TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/// Merges in priority order, in GPT-2's byte-level spelling (`Ġ` is a space, `Ċ` a newline).
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
    ("Ġ", "d"),
    ("a", "r"),
    ("a", "l"),
    ("Ġ", "h"),
    ("Ġ", "i"),
    ("l", "e"),
    ("Ġt", "o"),
    ("Ġo", "f"),
    ("n", "d"),
    ("Ġa", "nd"),
    ("Ġ", "l"),
    ("l", "l"),
    ("o", "m"),
    ("Ġ", "n"),
    ("Ġ", "e"),
    ("r", "o"),
    ("Ġ", "g"),
    ("i", "c"),
    ("Ġ", "in"),
    ("Ġ", "y"),
    ("o", "w"),
    ("Ġ", "he"),
    ("Ġw", "h"),
    ("c", "h"),
    ("Ġ", "T"),
    ("Ġ", "I"),
    ("Ġ", "is"),
    ("Ġ", "it"),
    ("t", "h"),
    ("Ġt", "h"),
    ("Ġth", "at"),
    ("Ġy", "ou"),
    ("Ċ", "Ċ"),
    ("Ġ", "re"),
    ("Ġ", "on"),
];

/// GPT-2's `bytes_to_unicode`: the printable character that stands for byte `b` in byte-level
/// BPE vocabularies. Printable Latin-1 bytes stand for themselves; the 68 others are mapped, in
/// byte order, to U+0100 onwards.
#[must_use]
pub fn gpt2_byte_symbol(b: u8) -> char {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xa1..=0xac | 0xae..=0xff);
    if printable(b) {
        return char::from(b);
    }
    let rank = (0..b).filter(|&x| !printable(x)).count();
    u32::try_from(256 + rank).ok().and_then(char::from_u32).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The tiny model's tokenizer vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TinyVocab {
    /// Token strings by id: the three specials, the 256 byte symbols, then merge results.
    pub tokens: Vec<String>,
    /// `token_type` by id.
    pub token_types: Vec<i32>,
    /// Merges as `"left right"`, highest priority first.
    pub merges: Vec<String>,
}

/// Builds the vocabulary (the same every time).
#[must_use]
pub fn tiny_vocab() -> TinyVocab {
    let mut tokens: Vec<String> = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"].map(String::from).to_vec();
    let mut token_types = vec![TOKEN_TYPE_CONTROL; tokens.len()];
    for b in 0..=u8::MAX {
        tokens.push(gpt2_byte_symbol(b).to_string());
        token_types.push(TOKEN_TYPE_NORMAL);
    }
    let mut merges = Vec::with_capacity(MERGES.len());
    for (left, right) in MERGES {
        let merged = format!("{left}{right}");
        if !tokens.contains(&merged) {
            tokens.push(merged);
            token_types.push(TOKEN_TYPE_NORMAL);
        }
        merges.push(format!("{left} {right}"));
    }
    TinyVocab { tokens, token_types, merges }
}

/// splitmix64: a tiny, well-mixed generator whose output is the same on every platform.
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1), from 23 random mantissa bits (exact, no libm).
    pub(crate) fn uniform(&mut self) -> f32 {
        let man = u32::try_from(self.next_u64() >> 41).unwrap_or(0);
        f32::from_bits(0x3f80_0000 | man) * 2.0 - 3.0
    }

    /// Approximately standard normal: the sum of three uniforms on [-1, 1) has variance 1.
    /// Pure arithmetic, so weights are bit-identical across machines (libm's `ln`/`cos` are not).
    pub(crate) fn normal(&mut self) -> f32 {
        self.uniform() + self.uniform() + self.uniform()
    }
}

/// The tiny model as GGUF bytes.
///
/// # Panics
/// When the configuration is inconsistent: `dim` or `ffn_dim` not a multiple of 32, heads not
/// dividing `dim`, kv heads not dividing heads, or zero layers.
#[must_use]
pub fn tiny_llama(config: &TinyLlamaConfig) -> Vec<u8> {
    tiny_llama_writer(config).to_bytes()
}

/// [`tiny_llama`] before it is written: a writer holding its metadata and tensors, so that a
/// test can change one key ([`GgufWriter::set`], [`GgufWriter::remove`]) or one tensor
/// ([`GgufWriter::tensor_data_mut`], [`GgufWriter::remove_tensor`]) and write the result.
///
/// # Panics
/// As [`tiny_llama`].
#[must_use]
pub fn tiny_llama_writer(config: &TinyLlamaConfig) -> GgufWriter {
    let c = config;
    assert!(c.n_layers > 0, "tiny llama needs at least one layer");
    assert!(c.dim.is_multiple_of(32) && c.dim > 0, "dim {} is not a positive multiple of 32", c.dim);
    assert!(c.ffn_dim.is_multiple_of(32) && c.ffn_dim > 0, "ffn_dim {} is not a positive multiple of 32", c.ffn_dim);
    assert!(c.n_heads > 0 && c.dim.is_multiple_of(c.n_heads), "{} heads do not divide dim {}", c.n_heads, c.dim);
    assert!(
        c.n_kv_heads > 0 && c.n_heads.is_multiple_of(c.n_kv_heads),
        "{} kv heads do not divide {} heads",
        c.n_kv_heads,
        c.n_heads
    );
    let vocab = tiny_vocab();
    let mut w = GgufWriter::new();
    // INVARIANT: the keys below are distinct and none is general.alignment; tensors are
    // well-formed by the asserts above, so the writer cannot refuse them.
    add_metadata(&mut w, c, &vocab).expect("tiny llama metadata is well-formed");
    add_tensors(&mut w, c, &vocab).expect("tiny llama tensors are well-formed");
    w
}

/// Writes [`tiny_llama`]'s bytes to `path`.
///
/// # Errors
/// The file system's error.
///
/// # Panics
/// As [`tiny_llama`].
pub fn write_tiny_llama(path: impl AsRef<Path>, config: &TinyLlamaConfig) -> std::io::Result<()> {
    std::fs::write(path, tiny_llama(config))
}

fn add_metadata(w: &mut GgufWriter, c: &TinyLlamaConfig, vocab: &TinyVocab) -> Result<(), crate::WriteError> {
    let s = |v: &str| Value::String(v.to_owned());
    let vocab_len = u32::try_from(vocab.tokens.len()).unwrap_or(u32::MAX);
    w.add("general.architecture", s("llama"))?
        .add("general.type", s("model"))?
        .add("general.name", s("Redline Tiny Llama"))?
        .add("general.organization", s("Redline"))?
        .add("general.finetune", s("tiny"))?
        .add("general.basename", s("tiny-llama"))?
        .add("general.size_label", s("tiny"))?
        .add("general.license", s("MIT OR Apache-2.0"))?
        .add("general.languages", Value::string_array(["en"]))?
        .add("llama.block_count", Value::U32(c.n_layers))?
        .add("llama.context_length", Value::U32(c.context_length))?
        .add("llama.embedding_length", Value::U32(c.dim))?
        .add("llama.feed_forward_length", Value::U32(c.ffn_dim))?
        .add("llama.attention.head_count", Value::U32(c.n_heads))?
        .add("llama.attention.head_count_kv", Value::U32(c.n_kv_heads))?
        .add("llama.rope.freq_base", Value::F32(c.rope_freq_base))?
        .add("llama.attention.layer_norm_rms_epsilon", Value::F32(c.rms_eps))?
        // ggml's LLAMA_FTYPE_MOSTLY_Q4_1, as the fixture.
        .add("general.file_type", Value::U32(3))?
        .add("llama.vocab_size", Value::U32(vocab_len))?
        .add("llama.rope.dimension_count", Value::U32(c.dim / c.n_heads))?
        .add("tokenizer.ggml.add_space_prefix", Value::Bool(false))?
        .add("tokenizer.ggml.add_bos_token", Value::Bool(false))?
        .add("tokenizer.ggml.model", s("gpt2"))?
        .add("tokenizer.ggml.pre", s("smollm"))?
        .add("tokenizer.ggml.tokens", Value::string_array(vocab.tokens.iter().cloned()))?
        .add("tokenizer.ggml.token_type", Value::i32_array(vocab.token_types.iter().copied()))?
        .add("tokenizer.ggml.merges", Value::string_array(vocab.merges.iter().cloned()))?
        .add("tokenizer.ggml.bos_token_id", Value::U32(TOKEN_IM_START))?
        .add("tokenizer.ggml.eos_token_id", Value::U32(TOKEN_IM_END))?
        .add("tokenizer.ggml.unknown_token_id", Value::U32(TOKEN_ENDOFTEXT))?
        .add("tokenizer.ggml.padding_token_id", Value::U32(TOKEN_IM_END))?
        .add("tokenizer.chat_template", s(CHAT_TEMPLATE))?
        .add("general.quantization_version", Value::U32(2))?;
    Ok(())
}

fn add_tensors(w: &mut GgufWriter, c: &TinyLlamaConfig, vocab: &TinyVocab) -> Result<(), crate::WriteError> {
    let mut rng = SplitMix64(c.seed);
    let dim = u64::from(c.dim);
    let ffn = u64::from(c.ffn_dim);
    let kv_dim = dim / u64::from(c.n_heads) * u64::from(c.n_kv_heads);
    let n_vocab = u64::try_from(vocab.tokens.len()).unwrap_or(u64::MAX);
    // Embedding entries of std 0.5: after the final norm, tied-output logits have std
    // 0.5·sqrt(dim) = 4 at dim 64, peaked enough to sample from, far from overflow.
    add_weight(w, &mut rng, "token_embd.weight", [dim, n_vocab], GgmlType::Q8_0, 0.5)?;
    for layer in 0..c.n_layers {
        let name = |t: &str| format!("blk.{layer}.{t}.weight");
        add_norm(w, &mut rng, &name("attn_norm"), dim)?;
        // Matrices N(0, 1/fan_in): each output of x·W keeps the variance of x's elements.
        add_matrix(w, &mut rng, &name("ffn_down"), ffn, dim)?;
        add_matrix(w, &mut rng, &name("ffn_gate"), dim, ffn)?;
        add_matrix(w, &mut rng, &name("ffn_up"), dim, ffn)?;
        add_norm(w, &mut rng, &name("ffn_norm"), dim)?;
        add_matrix(w, &mut rng, &name("attn_k"), dim, kv_dim)?;
        add_matrix(w, &mut rng, &name("attn_output"), dim, dim)?;
        add_matrix(w, &mut rng, &name("attn_q"), dim, dim)?;
        add_matrix(w, &mut rng, &name("attn_v"), dim, kv_dim)?;
    }
    add_norm(w, &mut rng, "output_norm.weight", dim)
}

fn add_matrix(
    w: &mut GgufWriter,
    rng: &mut SplitMix64,
    name: &str,
    fan_in: u64,
    rows: u64,
) -> Result<(), crate::WriteError> {
    // CAST: fan_in is a u32 config width; u64 → f32 only rounds (exact below 2^24), never
    // truncates.
    #[allow(clippy::cast_precision_loss)]
    let scale = 1.0 / (fan_in as f32).sqrt();
    add_weight(w, rng, name, [fan_in, rows], GgmlType::Q4_1, scale)
}

fn add_weight(
    w: &mut GgufWriter,
    rng: &mut SplitMix64,
    name: &str,
    dims: [u64; 2],
    ty: GgmlType,
    scale: f32,
) -> Result<(), crate::WriteError> {
    let n = usize::try_from(dims[0] * dims[1]).unwrap_or(0);
    let values: Vec<f32> = (0..n).map(|_| rng.normal() * scale).collect();
    let data = quantize(ty, &values).unwrap_or_default();
    w.add_tensor(name, &dims, ty, data)?;
    Ok(())
}

fn add_norm(w: &mut GgufWriter, rng: &mut SplitMix64, name: &str, dim: u64) -> Result<(), crate::WriteError> {
    let n = usize::try_from(dim).unwrap_or(0);
    let data: Vec<u8> = (0..n).flat_map(|_| (1.0 + 0.05 * rng.normal()).to_le_bytes()).collect();
    w.add_tensor(name, &[dim], GgmlType::F32, data)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_symbols_match_gpt2() {
        // Values from GPT-2's bytes_to_unicode: space → 'Ġ' (U+0120), newline → 'Ċ' (U+010A),
        // byte 0 → U+0100, 0xad (soft hyphen) → U+0143.
        assert_eq!(gpt2_byte_symbol(b' '), 'Ġ');
        assert_eq!(gpt2_byte_symbol(b'\n'), 'Ċ');
        assert_eq!(gpt2_byte_symbol(0), '\u{100}');
        assert_eq!(gpt2_byte_symbol(0xad), '\u{143}');
        assert_eq!(gpt2_byte_symbol(b'a'), 'a');
        let mut all: Vec<char> = (0..=255u8).map(gpt2_byte_symbol).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 256);
    }

    #[test]
    fn merges_build_from_existing_tokens() {
        let vocab = tiny_vocab();
        assert_eq!(vocab.tokens.len(), vocab.token_types.len());
        assert_eq!(&vocab.tokens[..3], ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]);
        assert_eq!(vocab.tokens[3 + usize::from(b' ')], "Ġ");
        for (rank, merge) in vocab.merges.iter().enumerate() {
            let (left, right) = merge.split_once(' ').unwrap();
            let pos = |t: &str| vocab.tokens.iter().position(|x| x == t);
            let merged = pos(&format!("{left}{right}")).unwrap();
            // Both parts exist, and exist before the merge result.
            assert!(pos(left).unwrap() < merged, "merge {rank} {merge:?}");
            assert!(pos(right).unwrap() < merged, "merge {rank} {merge:?}");
        }
        assert!(vocab.tokens.contains(&"Ġthe".to_owned()));
        assert!(vocab.merges.len() >= 40);
    }
}
