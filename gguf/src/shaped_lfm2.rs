//! LFM2's published shapes with seeded random weights, in the tensor types of the published
//! Q4_K_M files, written to a file as they are generated.
//!
//! A shape ([`Lfm2Shape`]) is the hyperparameters of a released LFM2 checkpoint as llama.cpp's
//! `convert_hf_to_gguf.py` writes them (the metadata keys, tensor names and orientation of
//! [`crate::tiny_lfm2`]); [`LFM2_350M`] is `LiquidAI/LFM2-350M`. The weights are random: norms
//! near 1, convolution taps of scale `1/sqrt(l_cache)`, and K-quant blocks of random codes under
//! fixed f16 scales chosen so that a row's values have a standard deviation near
//! `1/sqrt(fan_in)` (a matrix keeps its input's scale). The types follow llama.cpp's Q4_K_M
//! rule (`llama_tensor_get_type` in `src/llama-quant.cpp`): the token embedding, which is also
//! the (tied) output, is Q6_K; `attn_v` and `ffn_down` are Q6_K where `use_more_bits(i, n)`
//! (`i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2`, counted over the tensors of that name) and
//! Q4_K elsewhere; every other matrix is Q4_K; norms and the convolution taps stay F32
//! (`shortconv.conv.weight` is never quantised). `general.file_type` is 15
//! (`LLAMA_FTYPE_MOSTLY_Q4_K_M`).
//!
//! The file is written streaming: the header (metadata, tensor infos with their offsets) first,
//! then each tensor's bytes row by row as they are drawn, so writing the ~230 MB of
//! [`LFM2_350M`] holds one row in memory, not the file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::f16::f32_to_f16;
use crate::parse::{DEFAULT_ALIGNMENT, MAGIC};
use crate::tiny::SplitMix64;
use crate::tiny_lfm2::{TOKEN_BOS, TOKEN_EOS, TOKEN_PAD, tiny_lfm2_vocab};
use crate::types::GgmlType;
use crate::value::Value;
use crate::writer::{WRITE_VERSION, put_str, put_value};

/// The hyperparameters of a published LFM2 checkpoint, as its GGUF states them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lfm2Shape {
    /// The shape's name (`lfm2-350m`).
    pub name: &'static str,
    /// `general.name`.
    pub display_name: &'static str,
    /// `lfm2.block_count`.
    pub layers: u32,
    /// The attention blocks (HF's `full_attn_idxs`); the others are short convolutions.
    pub attention_layers: &'static [u32],
    /// `lfm2.embedding_length`.
    pub dim: u32,
    /// `lfm2.feed_forward_length`, after the converter's adjustment of HF's `block_ff_dim`
    /// (`int(2 * ff / 3)`, times `block_ffn_dim_multiplier`, rounded up to `block_multiple_of`).
    pub ffn: u32,
    /// `lfm2.attention.head_count`.
    pub heads: u32,
    /// The KV heads of each attention block.
    pub kv_heads: u32,
    /// Rows of `token_embd.weight` (`lfm2.vocab_size`).
    pub vocab: u32,
    /// `lfm2.shortconv.l_cache`.
    pub l_cache: u32,
    /// `lfm2.context_length`.
    pub context_length: u32,
    /// `lfm2.rope.freq_base`.
    pub rope_freq_base: f32,
    /// `lfm2.attention.layer_norm_rms_epsilon`.
    pub rms_eps: f32,
}

/// `LiquidAI/LFM2-350M`: HF `hidden_size` 1024, 16 blocks with `full_attention` at 2, 5, 8, 10,
/// 12 and 14 and `conv` elsewhere, 16 heads and 8 KV heads (head size 64), `block_ff_dim` 6656
/// adjusted to `256 * ceil(int(2 * 6656 / 3) / 256)` = 4608 (llama.cpp's `LLM_TYPE_350M` is the
/// file with `n_ff` 4608), `vocab_size` 65536, `conv_L_cache` 3, `max_position_embeddings`
/// 128000, `rope_theta` 1e6, `norm_eps` 1e-5, tied embeddings.
pub const LFM2_350M: Lfm2Shape = Lfm2Shape {
    name: "lfm2-350m",
    display_name: "LFM2 350M (random weights)",
    layers: 16,
    attention_layers: &[2, 5, 8, 10, 12, 14],
    dim: 1024,
    ffn: 4608,
    heads: 16,
    kv_heads: 8,
    vocab: 65536,
    l_cache: 3,
    context_length: 128_000,
    rope_freq_base: 1_000_000.0,
    rms_eps: 1e-5,
};

/// Every shape this module writes, by name.
pub const SHAPES: &[Lfm2Shape] = &[LFM2_350M];

/// `LLAMA_FTYPE_MOSTLY_Q4_K_M`.
const FILE_TYPE_Q4_K_M: u32 = 15;

/// One tensor of a shape: its name, dimensions (row length first) and type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedTensor {
    /// The GGUF tensor name.
    pub name: String,
    /// ggml's `ne`.
    pub dims: Vec<u64>,
    /// Its type.
    pub ty: GgmlType,
}

/// llama.cpp's `use_more_bits` (`src/llama-quant.cpp`): the `i`-th of `n` tensors of a name
/// gets the Q4_K_M file's larger type.
const fn use_more_bits(i: u32, n: u32) -> bool {
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

impl Lfm2Shape {
    /// Whether block `layer` is an attention block.
    #[must_use]
    pub fn is_attention(&self, layer: u32) -> bool {
        self.attention_layers.contains(&layer)
    }

    /// The head size, `dim / heads`.
    #[must_use]
    pub const fn head_dim(&self) -> u32 {
        self.dim / self.heads
    }

    /// Every tensor, in file order: the embedding and the final norm, then each block's.
    #[must_use]
    pub fn tensors(&self) -> Vec<PlannedTensor> {
        use GgmlType::{F32, Q4K, Q6K};
        let (d, f, hd) = (u64::from(self.dim), u64::from(self.ffn), u64::from(self.head_dim()));
        let kv = hd * u64::from(self.kv_heads);
        let attention_count = u32::try_from(self.attention_layers.len()).unwrap_or(u32::MAX);
        let mut out = Vec::new();
        let mut push = |name: String, dims: &[u64], ty| out.push(PlannedTensor { name, dims: dims.to_vec(), ty });
        push("token_embd.weight".to_owned(), &[d, u64::from(self.vocab)], Q6K);
        push("token_embd_norm.weight".to_owned(), &[d], F32);
        let mut attention = 0;
        for l in 0..self.layers {
            let name = |part: &str| format!("blk.{l}.{part}.weight");
            push(name("attn_norm"), &[d], F32);
            if self.is_attention(l) {
                let v = if use_more_bits(attention, attention_count) { Q6K } else { Q4K };
                attention += 1;
                push(name("attn_q"), &[d, d], Q4K);
                push(name("attn_k"), &[d, kv], Q4K);
                push(name("attn_v"), &[d, kv], v);
                push(name("attn_q_norm"), &[hd], F32);
                push(name("attn_k_norm"), &[hd], F32);
                push(name("attn_output"), &[d, d], Q4K);
            } else {
                push(name("shortconv.in_proj"), &[d, 3 * d], Q4K);
                push(name("shortconv.conv"), &[u64::from(self.l_cache), d], F32);
                push(name("shortconv.out_proj"), &[d, d], Q4K);
            }
            push(name("ffn_norm"), &[d], F32);
            push(name("ffn_gate"), &[d, f], Q4K);
            push(name("ffn_up"), &[d, f], Q4K);
            push(name("ffn_down"), &[f, d], if use_more_bits(l, self.layers) { Q6K } else { Q4K });
        }
        out
    }

    /// The metadata, in the order the converter writes it. The vocabulary is the tiny model's
    /// (specials, byte symbols, merges) filled up to [`Lfm2Shape::vocab`] with tokens `tok<N>`.
    #[must_use]
    pub fn metadata(&self) -> Vec<(String, Value)> {
        let s = |v: &str| Value::String(v.to_owned());
        let tiny = tiny_lfm2_vocab();
        let mut tokens = tiny.tokens;
        let mut types = tiny.token_types;
        let vocab = usize::try_from(self.vocab).unwrap_or(usize::MAX);
        for i in tokens.len()..vocab {
            tokens.push(format!("tok{i}"));
            types.push(1);
        }
        let kv = i32::try_from(self.kv_heads).unwrap_or(i32::MAX);
        let head_count_kv = (0..self.layers).map(|l| if self.is_attention(l) { kv } else { 0 });
        [
            ("general.architecture", s("lfm2")),
            ("general.type", s("model")),
            ("general.name", s(self.display_name)),
            ("general.basename", s(self.name)),
            ("general.license", s("MIT OR Apache-2.0")),
            ("lfm2.block_count", Value::U32(self.layers)),
            ("lfm2.context_length", Value::U32(self.context_length)),
            ("lfm2.embedding_length", Value::U32(self.dim)),
            ("lfm2.feed_forward_length", Value::U32(self.ffn)),
            ("lfm2.attention.head_count", Value::U32(self.heads)),
            ("lfm2.attention.head_count_kv", Value::i32_array(head_count_kv)),
            ("lfm2.rope.freq_base", Value::F32(self.rope_freq_base)),
            ("lfm2.attention.layer_norm_rms_epsilon", Value::F32(self.rms_eps)),
            ("general.file_type", Value::U32(FILE_TYPE_Q4_K_M)),
            ("lfm2.vocab_size", Value::U32(self.vocab)),
            ("lfm2.shortconv.l_cache", Value::U32(self.l_cache)),
            ("general.quantization_version", Value::U32(2)),
            ("tokenizer.ggml.model", s("gpt2")),
            ("tokenizer.ggml.pre", s("lfm2")),
            ("tokenizer.ggml.tokens", Value::string_array(tokens)),
            ("tokenizer.ggml.token_type", Value::i32_array(types)),
            ("tokenizer.ggml.merges", Value::string_array(tiny.merges)),
            ("tokenizer.ggml.bos_token_id", Value::U32(TOKEN_BOS)),
            ("tokenizer.ggml.eos_token_id", Value::U32(TOKEN_EOS)),
            ("tokenizer.ggml.padding_token_id", Value::U32(TOKEN_PAD)),
            ("tokenizer.ggml.add_bos_token", Value::Bool(true)),
            ("tokenizer.ggml.add_eos_token", Value::Bool(false)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

/// Writes [`LFM2_350M`] with weights drawn from `seed` to `path`; the bytes written.
///
/// # Errors
/// The file system's error.
pub fn write_lfm2_350m(path: impl AsRef<Path>, seed: u64) -> io::Result<u64> {
    write_lfm2(path, &LFM2_350M, seed)
}

/// Writes `shape` with weights drawn from `seed` to `path` (see the module documentation); the
/// bytes written.
///
/// # Errors
/// The file system's error; [`io::ErrorKind::InvalidInput`] for a shape whose rows are not
/// whole blocks of their type.
pub fn write_lfm2(path: impl AsRef<Path>, shape: &Lfm2Shape, seed: u64) -> io::Result<u64> {
    let tensors = shape.tensors();
    let invalid =
        |name: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: rows are not whole blocks"));
    let mut sizes = Vec::with_capacity(tensors.len());
    for t in &tensors {
        let elements = t.dims.iter().product::<u64>();
        sizes.push(t.ty.bytes_for(elements).ok_or_else(|| invalid(&t.name))?);
        t.ty.bytes_for(t.dims[0]).ok_or_else(|| invalid(&t.name))?;
    }
    let (head, offsets) = head(&shape.metadata(), &tensors, &sizes);
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    out.write_all(&head)?;
    let mut position = 0u64;
    let mut row = Vec::new();
    for (index, ((tensor, &offset), &size)) in tensors.iter().zip(&offsets).zip(&sizes).enumerate() {
        write_zeros(&mut out, offset - position)?;
        let index = u64::try_from(index).unwrap_or(u64::MAX);
        let mut rng = SplitMix64(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let fan_in = if tensor.name.ends_with("ffn_down.weight") { u64::from(shape.ffn) } else { u64::from(shape.dim) };
        let rows = tensor.dims.iter().skip(1).product::<u64>();
        for _ in 0..rows {
            draw_row(&mut row, tensor, fan_in, shape.l_cache, &mut rng);
            out.write_all(&row)?;
        }
        position = offset + size;
    }
    out.flush()?;
    Ok(u64::try_from(head.len()).unwrap_or(u64::MAX) + position)
}

/// The header: magic, version, counts, metadata, tensor infos, padded to the alignment; and
/// each tensor's offset in the data section.
fn head(metadata: &[(String, Value)], tensors: &[PlannedTensor], sizes: &[u64]) -> (Vec<u8>, Vec<u64>) {
    let len = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let align = u64::from(DEFAULT_ALIGNMENT);
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&WRITE_VERSION.to_le_bytes());
    out.extend_from_slice(&len(tensors.len()).to_le_bytes());
    out.extend_from_slice(&len(metadata.len()).to_le_bytes());
    for (key, value) in metadata {
        put_str(&mut out, key);
        out.extend_from_slice(&value.value_type().id().to_le_bytes());
        put_value(&mut out, value);
    }
    let mut offsets = Vec::with_capacity(tensors.len());
    let mut offset = 0u64;
    for (tensor, size) in tensors.iter().zip(sizes) {
        offset = offset.next_multiple_of(align);
        put_str(&mut out, &tensor.name);
        out.extend_from_slice(&u32::try_from(tensor.dims.len()).unwrap_or(u32::MAX).to_le_bytes());
        for dim in &tensor.dims {
            out.extend_from_slice(&dim.to_le_bytes());
        }
        out.extend_from_slice(&tensor.ty.id().to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offsets.push(offset);
        offset += size;
    }
    let padded = len(out.len()).next_multiple_of(align);
    out.resize(usize::try_from(padded).unwrap_or(usize::MAX), 0);
    (out, offsets)
}

fn write_zeros(out: &mut impl Write, n: u64) -> io::Result<()> {
    let zeros = [0u8; 64];
    let mut left = n;
    while left > 0 {
        let k = left.min(64);
        out.write_all(&zeros[..usize::try_from(k).unwrap_or(64)])?;
        left -= k;
    }
    Ok(())
}

/// Q4_K's block (`block_q4_K`: f16 `d`, f16 `dmin`, 12 bytes of 6-bit scales and mins, 128
/// bytes of 4-bit codes): `y = d * sc * q - dmin * m` with `sc, m` in 0..63 and `q` in 0..15.
/// With uniform random codes `E[sc q] = 236.25` and `E[m] = 31.5`, so `dmin = 7.5 d` centres
/// the values, whose standard deviation is then about `255 d`.
const Q4K_BYTES: usize = 144;
/// Q6_K's block (`block_q6_K`: 128 bytes of low and 64 of high code bits, 16 `i8` scales, f16
/// `d`): `y = d * sc * (q - 32)` with `q` in 0..63 (mean 31.5, mean square about 341) and the
/// scales drawn in -64..63 (mean square about 1365): standard deviation about `682 d`.
const Q6K_BYTES: usize = 210;

/// One row of `tensor` into `row`.
fn draw_row(row: &mut Vec<u8>, tensor: &PlannedTensor, fan_in: u64, l_cache: u32, rng: &mut SplitMix64) {
    row.clear();
    let cols = usize::try_from(tensor.dims[0]).unwrap_or(0);
    // CAST: widths below 2^24, exact in f32.
    #[allow(clippy::cast_precision_loss)]
    let spread = 1.0 / (fan_in as f32).sqrt();
    match tensor.ty {
        GgmlType::Q4K => {
            let d = spread / 255.0;
            for _ in 0..cols / 256 {
                row.extend_from_slice(&f32_to_f16(d).to_le_bytes());
                row.extend_from_slice(&f32_to_f16(7.5 * d).to_le_bytes());
                random_bytes(row, Q4K_BYTES - 4, rng);
            }
        }
        GgmlType::Q6K => {
            for _ in 0..cols / 256 {
                random_bytes(row, 192, rng);
                for _ in 0..16 {
                    let scale = i8::try_from(rng.next_u64() % 128).unwrap_or(0) - 64;
                    row.extend_from_slice(&scale.to_le_bytes());
                }
                row.extend_from_slice(&f32_to_f16(spread / 682.0).to_le_bytes());
            }
            debug_assert_eq!(row.len(), cols / 256 * Q6K_BYTES);
        }
        _ => {
            let is_conv = tensor.name.ends_with("shortconv.conv.weight");
            // CAST: a small tap count, exact in f32.
            #[allow(clippy::cast_precision_loss)]
            let taps = 1.0 / (l_cache as f32).sqrt();
            for _ in 0..cols {
                let v = if is_conv { rng.normal() * taps } else { 1.0 + 0.05 * rng.normal() };
                row.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
}

fn random_bytes(row: &mut Vec<u8>, n: usize, rng: &mut SplitMix64) {
    let mut left = n;
    while left > 0 {
        let word = rng.next_u64().to_le_bytes();
        let k = left.min(8);
        row.extend_from_slice(&word[..k]);
        left -= k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_more_bits_is_llama_cpps_rule() {
        // n = 16 (ffn_down of LFM2-350M): i < 2, i >= 14, and (i - 2) % 3 == 2: 4, 7, 10, 13.
        let more: Vec<u32> = (0..16).filter(|&i| use_more_bits(i, 16)).collect();
        assert_eq!(more, [0, 1, 4, 7, 10, 13, 14, 15]);
        // n = 6 (attn_v): n / 8 = 0, 7n / 8 = 5: i % 3 == 2, and i >= 5.
        let more: Vec<u32> = (0..6).filter(|&i| use_more_bits(i, 6)).collect();
        assert_eq!(more, [2, 5]);
    }

    #[test]
    fn the_350m_shape_has_llama_cpps_tensor_inventory() {
        let tensors = LFM2_350M.tensors();
        // 2 + 10 conv blocks of 8 tensors + 6 attention blocks of 11.
        assert_eq!(tensors.len(), 2 + 10 * 8 + 6 * 11);
        let find = |n: &str| tensors.iter().find(|t| t.name == n).unwrap();
        assert_eq!(find("blk.0.shortconv.in_proj.weight").dims, [1024, 3072]);
        assert_eq!(find("blk.2.attn_k.weight").dims, [1024, 512]);
        assert_eq!(find("blk.2.attn_q_norm.weight").dims, [64]);
        assert_eq!(find("blk.3.shortconv.conv.weight").dims, [3, 1024]);
        assert_eq!(find("blk.15.ffn_down.weight").dims, [4608, 1024]);
        assert_eq!(find("token_embd.weight").dims, [1024, 65536]);
        assert_eq!(find("blk.8.attn_v.weight").ty, GgmlType::Q6K);
        assert_eq!(find("blk.5.attn_v.weight").ty, GgmlType::Q4K);
        assert!(tensors.iter().all(|t| t.name != "output.weight"));
    }
}
