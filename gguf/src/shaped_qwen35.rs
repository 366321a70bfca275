//! `qwen35` models in the published shapes, with seeded random weights, written streaming: the
//! metadata keys, tensor names, shapes and orientation of [`crate::tiny_qwen35()`] at a published
//! model's hyperparameters ([`QWEN35_0_8B`], Qwen3.5-0.8B), its matrices quantized as llama.cpp's
//! Q4_K_M files are (Q4_K, with Q6_K for `attn_v` and `ffn_down` on the layers llama.cpp's
//! `use_more_bits` rule picks and for the tied token embedding; Q8_0 for the small `ssm_alpha` and
//! `ssm_beta` projections; F32 for norms, the convolution, `ssm_dt.bias` and `ssm_a`). The quantized
//! blocks are random bytes with their f16 scales set so that a matrix's values are of about
//! `1 / sqrt(fan_in)`; the vocabulary is the tiny model's byte-level GPT-2 vocabulary padded with
//! distinct filler tokens to the published size. The file is written tensor by tensor (hundreds of
//! MB; no more than one chunk of a tensor is in memory), every header field computed up front.
//! The Q4_K_M facts are llama.cpp's `src/llama-quant.cpp` (`use_more_bits`: the first and last
//! eighth of the layers and every third between).

use std::io::{self, Write};
use std::path::Path;

use crate::f16::f32_to_f16;
use crate::parse::{DEFAULT_ALIGNMENT, MAGIC};
use crate::tiny::{SplitMix64, TinyVocab, tiny_vocab};
use crate::tiny_qwen35::{TinyQwen35Config, hyperparameters, tokenizer};
use crate::types::GgmlType;
use crate::value::Value;
use crate::writer::WRITE_VERSION;

/// A published `qwen35` shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Qwen35Shape {
    /// The shape's name (`qwen35-0.8b`).
    pub name: &'static str,
    /// Its hyperparameters (the seed field is unused: the writer takes its own).
    pub model: TinyQwen35Config,
    /// Tokens in the vocabulary (rows of the token embedding).
    pub vocab: u32,
}

/// Qwen3.5-0.8B (`Qwen/Qwen3.5-0.8B`, text model): 24 layers, every fourth a full-attention layer
/// (8 query heads and 2 KV heads of 256, 64 of them rotated, sections `[11, 11, 10, 0]`, RoPE base
/// 10,000,000), the others gated-DeltaNet layers (16 key and 16 value heads of 128, a convolution
/// of 4 taps), embedding 1024, feed-forward 3584, vocabulary 248,320 tied to the output, context
/// 262,144, RMSNorm epsilon 1e-6.
pub const QWEN35_0_8B: Qwen35Shape = Qwen35Shape {
    name: "qwen35-0.8b",
    model: TinyQwen35Config {
        n_layers: 24,
        full_attention_interval: 4,
        dim: 1024,
        ffn_dim: 3584,
        n_heads: 8,
        n_kv_heads: 2,
        head_dim: 256,
        rope_dims: 64,
        rope_sections: [11, 11, 10, 0],
        conv_kernel: 4,
        state_size: 128,
        k_heads: 16,
        v_heads: 16,
        context_length: 262_144,
        rope_freq_base: 10_000_000.0,
        rms_eps: 1e-6,
        seed: 0,
    },
    vocab: 248_320,
};

/// How a tensor's values are drawn.
#[derive(Clone, Copy, Debug)]
enum Fill {
    /// F32 `1 + 0.05 N(0, 1)`: a norm.
    Norm,
    /// F32 `s N(0, 1)`.
    Scaled(f32),
    /// F32 uniform in `[-1, -0.5)`: `ssm_a = -exp(A_log)`.
    Decay,
    /// Random blocks of a quantized type whose values are of about this size.
    Blocks(f32),
}

/// One tensor of the file.
#[derive(Clone, Debug)]
struct Planned {
    name: String,
    dims: Vec<u64>,
    ty: GgmlType,
    fill: Fill,
}

impl Planned {
    fn bytes(&self) -> u64 {
        self.ty.bytes_for(self.dims.iter().product()).unwrap_or(0)
    }
}

/// llama.cpp's `use_more_bits(i, n)`: the layers Q4_K_M gives Q6_K.
const fn use_more_bits(i: u32, n: u32) -> bool {
    // The subtraction is reached only from i >= n / 8 on.
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

fn matrix(name: String, cols: u64, rows: u64, ty: GgmlType) -> Planned {
    // CAST: a u32 width; exact below 2^24.
    #[allow(clippy::cast_precision_loss)]
    let size = 1.0 / (cols as f32).sqrt();
    Planned { name, dims: vec![cols, rows], ty, fill: Fill::Blocks(size) }
}

fn vector(name: String, dims: &[u64], fill: Fill) -> Planned {
    Planned { name, dims: dims.to_vec(), ty: GgmlType::F32, fill }
}

/// Every tensor of the shape, in file order.
fn plan(shape: &Qwen35Shape) -> Vec<Planned> {
    use GgmlType::{Q4K, Q6K, Q8_0};
    let c = &shape.model;
    let (dim, ffn, hd) = (u64::from(c.dim), u64::from(c.ffn_dim), u64::from(c.head_dim));
    let mut out = vec![
        matrix("token_embd.weight".to_owned(), dim, u64::from(shape.vocab), Q6K),
        vector("output_norm.weight".to_owned(), &[dim], Fill::Norm),
    ];
    let attention_layers = (0..c.n_layers).filter(|&l| !c.is_recurrent(l)).count();
    let attention_layers = u32::try_from(attention_layers).unwrap_or(u32::MAX);
    let mut attention = 0;
    for l in 0..c.n_layers {
        let name = |t: &str| format!("blk.{l}.{t}");
        out.push(vector(name("attn_norm.weight"), &[dim], Fill::Norm));
        if c.is_recurrent(l) {
            let (s, vh) = (u64::from(c.state_size), u64::from(c.v_heads));
            let (key_dim, value_dim) = (s * u64::from(c.k_heads), s * vh);
            let conv_dim = 2 * key_dim + value_dim;
            out.extend([
                matrix(name("attn_qkv.weight"), dim, conv_dim, Q4K),
                matrix(name("attn_gate.weight"), dim, value_dim, Q4K),
                vector(name("ssm_conv1d.weight"), &[u64::from(c.conv_kernel), conv_dim], Fill::Scaled(0.5)),
                vector(name("ssm_dt.bias"), &[vh], Fill::Scaled(0.5)),
                vector(name("ssm_a"), &[vh], Fill::Decay),
                matrix(name("ssm_beta.weight"), dim, vh, Q8_0),
                matrix(name("ssm_alpha.weight"), dim, vh, Q8_0),
                vector(name("ssm_norm.weight"), &[s], Fill::Norm),
                matrix(name("ssm_out.weight"), value_dim, dim, Q4K),
            ]);
        } else {
            let (q_dim, kv_dim) = (hd * u64::from(c.n_heads), hd * u64::from(c.n_kv_heads));
            let v = if use_more_bits(attention, attention_layers) { Q6K } else { Q4K };
            out.extend([
                matrix(name("attn_q.weight"), dim, 2 * q_dim, Q4K),
                matrix(name("attn_k.weight"), dim, kv_dim, Q4K),
                matrix(name("attn_v.weight"), dim, kv_dim, v),
                vector(name("attn_q_norm.weight"), &[hd], Fill::Norm),
                vector(name("attn_k_norm.weight"), &[hd], Fill::Norm),
                matrix(name("attn_output.weight"), q_dim, dim, Q4K),
            ]);
            attention += 1;
        }
        let down = if use_more_bits(l, c.n_layers) { Q6K } else { Q4K };
        out.extend([
            vector(name("post_attention_norm.weight"), &[dim], Fill::Norm),
            matrix(name("ffn_gate.weight"), dim, ffn, Q4K),
            matrix(name("ffn_up.weight"), dim, ffn, Q4K),
            matrix(name("ffn_down.weight"), ffn, dim, down),
        ]);
    }
    out
}

/// The tiny model's vocabulary padded with distinct filler tokens (`<|filler_N|>`, normal tokens
/// no merge produces) to `vocab` tokens.
fn vocabulary(vocab: u32) -> TinyVocab {
    let mut v = tiny_vocab();
    let have = u32::try_from(v.tokens.len()).unwrap_or(u32::MAX);
    for i in have..vocab {
        v.tokens.push(format!("<|filler_{i}|>"));
        v.token_types.push(crate::tiny::TOKEN_TYPE_NORMAL);
    }
    v
}

/// The file's metadata, in order.
fn metadata(shape: &Qwen35Shape) -> Vec<(&'static str, Value)> {
    let s = |v: &str| Value::String(v.to_owned());
    let mut out = vec![
        ("general.architecture", s("qwen35")),
        ("general.type", s("model")),
        ("general.name", s(&format!("Redline {} shape, random weights", shape.name))),
        ("general.basename", s(shape.name)),
        ("general.license", s("MIT OR Apache-2.0")),
        // llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_K_M.
        ("general.file_type", Value::U32(15)),
    ];
    out.extend(hyperparameters(&shape.model, shape.vocab));
    out.extend(tokenizer(&vocabulary(shape.vocab)));
    out.push(("general.quantization_version", Value::U32(2)));
    out
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&u64::try_from(s.len()).unwrap_or(u64::MAX).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A metadata value in GGUF's encoding (the types [`metadata`] uses).
fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => put_str(out, s),
        Value::Array(array) => {
            out.extend_from_slice(&array.elem_type().id().to_le_bytes());
            out.extend_from_slice(&u64::try_from(array.len()).unwrap_or(u64::MAX).to_le_bytes());
            for item in array.items() {
                put_value(out, item);
            }
        }
        other => unreachable!("the shaped writer writes no {other:?}"),
    }
}

/// The header, metadata, tensor infos and padding up to the data section, and each tensor's
/// offset in it.
fn head(tensors: &[Planned], metadata: &[(&str, Value)]) -> (Vec<u8>, Vec<u64>) {
    let align = u64::from(DEFAULT_ALIGNMENT);
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&WRITE_VERSION.to_le_bytes());
    out.extend_from_slice(&u64::try_from(tensors.len()).unwrap_or(u64::MAX).to_le_bytes());
    out.extend_from_slice(&u64::try_from(metadata.len()).unwrap_or(u64::MAX).to_le_bytes());
    for (key, value) in metadata {
        put_str(&mut out, key);
        out.extend_from_slice(&value.value_type().id().to_le_bytes());
        put_value(&mut out, value);
    }
    let (mut offsets, mut offset) = (Vec::with_capacity(tensors.len()), 0u64);
    for t in tensors {
        offset = offset.next_multiple_of(align);
        put_str(&mut out, &t.name);
        out.extend_from_slice(&u32::try_from(t.dims.len()).unwrap_or(u32::MAX).to_le_bytes());
        for d in &t.dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&t.ty.id().to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offsets.push(offset);
        offset += t.bytes();
    }
    let start = u64::try_from(out.len()).unwrap_or(u64::MAX).next_multiple_of(align);
    out.resize(usize::try_from(start).unwrap_or(usize::MAX), 0);
    (out, offsets)
}

/// Blocks per chunk a tensor is generated and written in.
const CHUNK_BLOCKS: u64 = 4096;

/// Appends `blocks` random blocks of `ty` whose values are of about `size`: random bytes, then
/// the f16 scales set (Q4_K: `d`, `dmin = 7.5 d`, values `d sc q - dmin m` with 6-bit `sc`, `m`
/// and 4-bit `q`; Q6_K: `d`, values `d scale (q - 32)` with int8 scales and 6-bit `q`; Q8_0: `d`,
/// values `d q` with int8 `q`), each scale `size` over the typical product it multiplies, times a
/// random factor in `[0.75, 1.25)`.
fn random_blocks(out: &mut Vec<u8>, rng: &mut SplitMix64, ty: GgmlType, blocks: u64, size: f32) {
    let layout = ty.layout().unwrap_or(crate::types::BlockLayout { block_elems: 1, block_bytes: 1 });
    let block_bytes = usize::try_from(layout.block_bytes).unwrap_or(0);
    for _ in 0..blocks {
        let start = out.len();
        out.resize(start + block_bytes, 0);
        for chunk in out[start..].chunks_mut(8) {
            let bits = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bits[..chunk.len()]);
        }
        let jitter = 1.0 + 0.25 * rng.uniform();
        let block = &mut out[start..];
        let put = |block: &mut [u8], at: usize, v: f32| block[at..at + 2].copy_from_slice(&f32_to_f16(v).to_le_bytes());
        match ty {
            GgmlType::Q4K => {
                let d = size / 150.0 * jitter;
                put(block, 0, d);
                put(block, 2, 7.5 * d);
            }
            GgmlType::Q6K => put(block, 208, size / 1300.0 * jitter),
            _ => put(block, 0, size / 74.0 * jitter),
        }
    }
}

/// Writes `t`'s data to `sink`, drawn from `rng`, a chunk at a time.
fn write_tensor(sink: &mut impl Write, rng: &mut SplitMix64, t: &Planned) -> io::Result<()> {
    let elems: u64 = t.dims.iter().product();
    match t.fill {
        Fill::Blocks(size) => {
            let per_block = t.ty.layout().map_or(1, |l| l.block_elems);
            let mut left = elems / per_block;
            let mut buf = Vec::new();
            while left > 0 {
                let n = left.min(CHUNK_BLOCKS);
                buf.clear();
                random_blocks(&mut buf, rng, t.ty, n, size);
                sink.write_all(&buf)?;
                left -= n;
            }
        }
        fill => {
            let mut buf = Vec::with_capacity(usize::try_from(elems * 4).unwrap_or(0));
            for _ in 0..elems {
                let v = match fill {
                    Fill::Norm => 1.0 + 0.05 * rng.normal(),
                    Fill::Scaled(s) => s * rng.normal(),
                    Fill::Decay | Fill::Blocks(_) => -0.75 + 0.25 * rng.uniform(),
                };
                buf.extend_from_slice(&v.to_le_bytes());
            }
            sink.write_all(&buf)?;
        }
    }
    Ok(())
}

/// Writes the model of `shape` with weights drawn from `seed` to `sink`, streaming; returns the
/// bytes written.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] naming the tensor when the shape gives a matrix row that is
/// not a whole number of its type's blocks (nothing is written then); the sink's error.
pub fn write_shaped_qwen35(mut sink: impl Write, shape: &Qwen35Shape, seed: u64) -> io::Result<u64> {
    let tensors = plan(shape);
    for t in &tensors {
        let block = t.ty.layout().map_or(1, |l| l.block_elems);
        if t.dims.contains(&0) || !t.dims[0].is_multiple_of(block) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: {:?} is not whole {}-value {} blocks per row", t.name, t.dims, block, t.ty),
            ));
        }
    }
    let (head, offsets) = head(&tensors, &metadata(shape));
    sink.write_all(&head)?;
    let data_start = u64::try_from(head.len()).unwrap_or(u64::MAX);
    let (mut rng, mut pos) = (SplitMix64(seed), data_start);
    for (t, offset) in tensors.iter().zip(offsets) {
        let pad = (data_start + offset).saturating_sub(pos);
        sink.write_all(&vec![0u8; usize::try_from(pad).unwrap_or(0)])?;
        write_tensor(&mut sink, &mut rng, t)?;
        pos = data_start + offset + t.bytes();
    }
    sink.flush()?;
    Ok(pos)
}

/// [`write_shaped_qwen35`] into the file `path` (created or truncated), buffered.
///
/// # Errors
/// The file system's error.
pub fn write_shaped_qwen35_file(path: impl AsRef<Path>, shape: &Qwen35Shape, seed: u64) -> io::Result<u64> {
    let file = std::fs::File::create(path)?;
    write_shaped_qwen35(io::BufWriter::with_capacity(1 << 20, file), shape, seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Gguf;
    use proptest::prelude::*;

    /// A shape of the 0.8B's layout at the tiny model's widths, so that the test is fast.
    fn small() -> Qwen35Shape {
        let model = TinyQwen35Config {
            n_layers: 8,
            full_attention_interval: 4,
            dim: 256,
            ffn_dim: 512,
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 128,
            rope_dims: 32,
            rope_sections: [6, 5, 5, 0],
            state_size: 64,
            k_heads: 2,
            v_heads: 4,
            ..TinyQwen35Config::default()
        };
        Qwen35Shape { name: "qwen35-small", model, vocab: 1000 }
    }

    #[test]
    fn a_streamed_file_parses_with_the_planned_tensors_and_finite_weights() {
        let shape = small();
        let mut bytes = Vec::new();
        let written = write_shaped_qwen35(&mut bytes, &shape, 7).unwrap();
        assert_eq!(written, u64::try_from(bytes.len()).unwrap());
        let file = Gguf::parse(bytes).unwrap();
        assert_eq!(file.str("general.architecture").unwrap(), "qwen35");
        assert_eq!(file.u32("qwen35.block_count").unwrap(), 8);
        assert_eq!(file.string_array("tokenizer.ggml.tokens").unwrap().len(), 1000);
        let planned = plan(&shape);
        assert_eq!(file.tensors().len(), planned.len());
        for p in &planned {
            let info = file.tensor_info(&p.name).unwrap_or_else(|| panic!("{} missing", p.name));
            assert_eq!((info.dims(), info.ty()), (&p.dims[..], p.ty), "{}", p.name);
            let view = file.tensor(&p.name).unwrap();
            view.check_finite().unwrap();
        }
        // Q4_K_M's choices: Q6_K for ffn_down on layers 0 and 7 (the first and last eighth) and
        // every third between (3, 6), Q4_K elsewhere; of the two attention layers (3 and 7) the
        // last eighth's, layer 7, gets a Q6_K V.
        let down: Vec<GgmlType> =
            (0..8).map(|l| file.tensor_info(&format!("blk.{l}.ffn_down.weight")).unwrap().ty()).collect();
        use GgmlType::{Q4K, Q6K};
        assert_eq!(down, [Q6K, Q4K, Q4K, Q6K, Q4K, Q4K, Q6K, Q6K]);
        let v = |l: u32| file.tensor_info(&format!("blk.{l}.attn_v.weight")).unwrap().ty();
        assert_eq!((v(3), v(7)), (Q4K, Q6K));
        // The values are of about 1 / sqrt(fan_in).
        let w = file.tensor("blk.0.ffn_gate.weight").unwrap().to_f32().unwrap();
        let rms = (w.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>() / w.len() as f64).sqrt();
        assert!((0.2..5.0).contains(&(rms * 16.0)), "rms {rms}");
    }

    #[test]
    fn a_shape_the_types_cannot_hold_is_refused_before_anything_is_written() {
        let mut shape = small();
        shape.model.state_size = 32;
        let mut bytes = Vec::new();
        let err = write_shaped_qwen35(&mut bytes, &shape, 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("blk.0.ssm_out.weight"), "{err}");
        assert!(bytes.is_empty());
    }

    #[test]
    fn the_published_shape_is_qwen35_0_8b() {
        let c = &QWEN35_0_8B.model;
        let recurrent = (0..c.n_layers).filter(|&l| c.is_recurrent(l)).count();
        assert_eq!((c.n_layers, recurrent, c.dim, c.ffn_dim, QWEN35_0_8B.vocab), (24, 18, 1024, 3584, 248_320));
        let bytes: u64 = plan(&QWEN35_0_8B).iter().map(Planned::bytes).sum();
        assert!((400_000_000..600_000_000).contains(&bytes), "{bytes} bytes of tensors");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Any small shape written streaming reads back as planned: every metadata value the
        /// writer encoded, every tensor's name, dimensions, type and bytes where the header says.
        #[test]
        fn streamed_shapes_read_back_as_written(
            layers in 1u32..6, interval in 1u32..4, heads in 1u32..3, kv in 1u32..3, k_heads in 1u32..3,
            v_per_k in 1u32..3, vocab in 320u32..700, seed in any::<u64>(),
        ) {
            prop_assume!(heads % kv == 0);
            let model = TinyQwen35Config {
                n_layers: layers,
                full_attention_interval: interval,
                dim: 256,
                ffn_dim: 256,
                n_heads: heads * 2,
                n_kv_heads: kv,
                head_dim: 128,
                rope_dims: 32,
                rope_sections: [6, 5, 5, 0],
                state_size: 256,
                k_heads,
                v_heads: k_heads * v_per_k,
                ..TinyQwen35Config::default()
            };
            let shape = Qwen35Shape { name: "qwen35-prop", model, vocab };
            let mut bytes = Vec::new();
            let written = write_shaped_qwen35(&mut bytes, &shape, seed).unwrap();
            prop_assert_eq!(written, u64::try_from(bytes.len()).unwrap());
            let file = Gguf::parse(bytes).unwrap();
            let meta = metadata(&shape);
            prop_assert_eq!(file.metadata().len(), meta.len());
            for ((key, value), (k, v)) in file.metadata().zip(&meta) {
                prop_assert_eq!(key, *k);
                prop_assert_eq!(value, v);
            }
            let planned = plan(&shape);
            prop_assert_eq!(file.tensors().len(), planned.len());
            for p in &planned {
                let view = file.tensor(&p.name).unwrap();
                prop_assert_eq!((view.dims(), view.ty()), (&p.dims[..], p.ty));
                prop_assert_eq!(u64::try_from(view.bytes().len()).unwrap(), p.bytes());
            }
        }
    }
}
