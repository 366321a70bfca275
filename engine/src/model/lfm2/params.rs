//! An `lfm2` model's hyperparameters and tensor inventory, read from GGUF metadata and checked
//! against what the kernels support before anything is uploaded.
//!
//! # The facts this adapter relies on, and where llama.cpp states them
//!
//! - **Which block is which.** `lfm2.attention.head_count_kv` is an array with one entry per
//!   block: llama.cpp's `load_arch_hparams` for `LLM_ARCH_LFM2` (`src/models/lfm2.cpp`, formerly
//!   `src/llama-model.cpp`) marks block `l` recurrent when `n_head_kv(l) == 0`
//!   (`is_recr_impl[il] = hparams.n_head_kv(il) == 0`), and `convert_hf_to_gguf.py`
//!   (`LFM2Model.set_gguf_parameters`) writes the HF `num_key_value_heads` for blocks whose
//!   `layer_types` entry is not `"conv"` and 0 for the others. gguf-py stores a Python list of
//!   ints as an `i32` array; a scalar (every block attention) is read too.
//! - **The convolution block** (`build_shortconv_block`): `bcx = in_proj · h` with
//!   `in_proj` `{n_embd, 3 n_embd}`; `b`, `c`, `x` are `bcx`'s thirds in that order
//!   (`ggml_view_3d` at offsets 0, 1 and 2 chunks); `bx = b * x`; the per-layer state
//!   (`n_embd_r() = (l_cache - 1) n_embd` values, viewed as `{d_conv, n_embd}`: each channel's
//!   previous `d_conv = l_cache - 1` inputs, oldest first) is concatenated before `bx` and its
//!   last `d_conv` columns become the new state; `ggml_ssm_conv` with the kernel
//!   `shortconv.conv` `{l_cache, n_embd}` computes, per channel, the dot product of the window and
//!   the channel's taps in ascending order from 0 (`ggml_compute_forward_ssm_conv_f32` in
//!   `ggml/src/ggml-cpu/ops.cpp`: `sumf += s[i0 + i1*ncs] * c[i0 + i1*nc]`), so the last tap
//!   multiplies the current input; `y = c * conv`; the block's output is `out_proj · y`. The
//!   converter squeezes HF's `conv.weight` `[n_embd, 1, L]` to `[n_embd, L]` (GGUF `{L, n_embd}`)
//!   and always keeps it F32 (`SHORTCONV_CONV` is in its list of float32 tensors; llama.cpp's
//!   quantizer never quantises `shortconv.conv.weight`). `l_cache` is
//!   `lfm2.shortconv.l_cache` and must exceed 1 (`GGML_ASSERT(n_shortconv_l_cache > 1)`).
//! - **The attention block** (`build_attn_block`): Q, K, V matvecs (`wq` `{n_embd, n_embd}`,
//!   `wk`/`wv` `{n_embd, n_embd_k_gqa}`), Q and K RMS-normalised per head over `n_embd_head`
//!   with `attn_q_norm`/`attn_k_norm` (`{n_embd_head_k}`), then RoPE, then attention with
//!   `kq_scale = 1/sqrt(n_embd_head)` over every earlier position (causal, no window unless
//!   `lfm2.attention.sliding_window` is set: refused here), then `wo`. RoPE is NEOX
//!   (`llama_model_rope_type`: `LLM_ARCH_LFM2` is in the `LLAMA_ROPE_TYPE_NEOX` group: pair
//!   `(i, i + n_rot/2)` of each head) with `n_rot` = the head size (no
//!   `lfm2.rope.dimension_count` is written) and base `lfm2.rope.freq_base` (1e6 in the
//!   published files). The head size is `n_embd / n_head` (no `key_length` is written).
//! - **Every block** (the graph's layer loop): `h = attn_norm(x)` (HF's `operator_norm`),
//!   `x += block(h)`, `x += ffn(ffn_norm(x))` with the SwiGLU feed-forward
//!   `ffn_down · (silu(ffn_gate · h) * (ffn_up · h))` (`build_ffn(..., LLM_FFN_SILU,
//!   LLM_FFN_PAR)`, HF `w1`, `w3`, `w2`); every norm is RMSNorm `x / sqrt(mean(x²) + eps) · w`
//!   with `eps = lfm2.attention.layer_norm_rms_epsilon` and the stored weight as the multiplier.
//!   The token embedding enters unscaled.
//! - **The end.** The final norm is `token_embd_norm.weight` (`LLM_TENSOR_OUTPUT_NORM_LFM2`,
//!   named so in `src/llama-arch.cpp` "fix for wrong tensor name"; HF's `embedding_norm` is
//!   applied after the last block), and the logits are `output.weight` or, when it is absent,
//!   the token embedding (`TENSOR_DUPLICATED`): the published files are tied.
//! - **Published shape** (`LiquidAI/LFM2-350M`): 16 blocks with attention at 2, 5, 8, 10, 12,
//!   14; `n_embd` 1024, 16 heads of 64, 8 KV heads, `n_ff` 4608 (the converter's
//!   `_add_feed_forward_length` turns HF `block_ff_dim` 6656 into `256 ceil(int(2 · 6656 / 3) /
//!   256)`), vocabulary 65536, `l_cache` 3, context 128000; `gguf::shaped_lfm2::LFM2_350M`.

use gguf::{GgmlType, Gguf, Value};

use crate::model::gemma3::GET_ROW_TYPES;
use crate::model::gemma3::params::MATRIX_TYPES;
use crate::model::params::{ParamsError, check_vocab_of, positive_finite, tensor};

/// The most blocks a model may have: the block kinds are a bit mask.
pub const LAYERS_MAX: u32 = 64;
/// The widest embedding the adapter takes (LFM2's are 1024 to 2048): every launch size it
/// derives (`3 × dim` rows of `in_proj`, 64 work-items per head) then fits a `u32`.
pub const DIM_MAX: u32 = 1 << 16;
/// The widest feed-forward the adapter takes, so that a prefill pass's `ffn × 128` elements fit
/// a `u32`.
pub const FFN_MAX: u32 = 1 << 20;
/// The longest convolution the adapter takes (LFM2's is 3): its state is `l_cache - 1` floats
/// per channel and layer, and each step reads all of them.
pub const L_CACHE_MAX: u32 = 16;

/// Hyperparameters of an `lfm2` model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lfm2Params {
    /// `lfm2.block_count`.
    pub layers: u32,
    /// `lfm2.embedding_length`.
    pub dim: u32,
    /// `lfm2.feed_forward_length`.
    pub ffn: u32,
    /// `lfm2.attention.head_count`.
    pub heads: u32,
    /// The KV heads of every attention block (`lfm2.attention.head_count_kv`'s non-zero
    /// entries); 0 when no block attends.
    pub kv_heads: u32,
    /// `dim / heads` (or `lfm2.attention.key_length` when the file states it).
    pub head_dim: u32,
    /// Rows of `token_embd.weight`.
    pub vocab: u32,
    /// `lfm2.context_length`.
    pub context_train: u32,
    /// `lfm2.rope.freq_base`.
    pub rope_base: f32,
    /// `lfm2.attention.layer_norm_rms_epsilon`.
    pub eps: f32,
    /// `lfm2.shortconv.l_cache`: the convolution's taps.
    pub l_cache: u32,
    /// What the attention scores are multiplied by: `1 / sqrt(head_dim)` rounded to f32.
    pub attention_scale: f32,
    /// Bit `l` set when block `l` is an attention block (else a short convolution).
    pub attention_mask: u64,
    /// Whether the output matrix is the token embedding (`output.weight` absent).
    pub tied_output: bool,
}

const PREFIX: &str = "lfm2";
const EMBEDDING: &str = "token_embd.weight";
/// The final norm's tensor (`LLM_TENSOR_OUTPUT_NORM_LFM2`).
pub const OUTPUT_NORM: &str = "token_embd_norm.weight";
const HEAD_COUNT_KV: &str = "lfm2.attention.head_count_kv";

/// The tensors of an attention block, in upload order.
pub const ATTENTION_TENSORS: [&str; 11] = [
    "attn_norm",
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_q_norm",
    "attn_k_norm",
    "attn_output",
    "ffn_norm",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
];
/// The tensors of a convolution block, in upload order.
pub const CONV_TENSORS: [&str; 8] = [
    "attn_norm",
    "shortconv.in_proj",
    "shortconv.conv",
    "shortconv.out_proj",
    "ffn_norm",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
];

impl Lfm2Params {
    /// Whether block `layer` is an attention block (else a short convolution).
    #[must_use]
    pub const fn is_attention(&self, layer: u32) -> bool {
        layer < LAYERS_MAX && self.attention_mask & (1 << layer) != 0
    }

    /// Attention blocks.
    #[must_use]
    pub const fn attention_layers(&self) -> u32 {
        self.attention_mask.count_ones()
    }

    /// Convolution blocks.
    #[must_use]
    pub const fn conv_layers(&self) -> u32 {
        self.layers - self.attention_layers()
    }

    /// Attention blocks before block `layer`: an attention block's index in the KV cache, a
    /// convolution block's index in the convolution state is `layer` minus it.
    #[must_use]
    pub const fn attention_before(&self, layer: u32) -> u32 {
        let below = if layer >= LAYERS_MAX { u64::MAX } else { (1u64 << layer) - 1 };
        (self.attention_mask & below).count_ones()
    }

    /// `l_cache - 1`: the previous inputs each channel's state holds.
    #[must_use]
    pub const fn d_conv(&self) -> u32 {
        self.l_cache - 1
    }

    /// `kv_heads * head_dim`: one K (or V) row per position and attention block.
    #[must_use]
    pub const fn kv_dim(&self) -> u32 {
        self.kv_heads * self.head_dim
    }

    /// Reads and checks the hyperparameters and every tensor's type and shape.
    ///
    /// # Errors
    /// [`ParamsError`] naming the key or tensor.
    pub fn from_gguf(file: &Gguf) -> Result<Self, ParamsError> {
        let arch = file.str("general.architecture")?;
        if arch != PREFIX {
            return Err(ParamsError::Architecture { found: arch.to_owned() });
        }
        let key = |k: &str| format!("{PREFIX}.{k}");
        let layers = file.u32(&key("block_count"))?;
        let dim = file.u32(&key("embedding_length"))?;
        let ffn = file.u32(&key("feed_forward_length"))?;
        let heads = file.u32(&key("attention.head_count"))?;
        let unsupported = |key, value: u32, why| ParamsError::Unsupported { key, value: u64::from(value), why };
        if layers == 0 || layers > LAYERS_MAX {
            return Err(unsupported("lfm2.block_count", layers, "must be 1 to 64 (the block kinds are a 64-bit mask)"));
        }
        if heads == 0 {
            return Err(unsupported("lfm2.attention.head_count", heads, "must be at least 1"));
        }
        for (name, value, max) in [("lfm2.embedding_length", dim, DIM_MAX), ("lfm2.feed_forward_length", ffn, FFN_MAX)]
        {
            if value == 0 || value % 32 != 0 {
                return Err(unsupported(name, value, "the quantised matvecs need a non-zero multiple of 32"));
            }
            if value > max {
                return Err(unsupported(name, value, "wider than the adapter's launch sizes allow (DIM_MAX, FFN_MAX)"));
            }
        }
        let kv = head_count_kv(file, layers)?;
        let attention_mask = kv.iter().enumerate().filter(|(_, n)| **n != 0).fold(0u64, |m, (l, _)| m | (1 << l));
        let kv_heads = kv.iter().copied().find(|&n| n != 0).unwrap_or(0);
        if kv.iter().any(|&n| n != 0 && n != kv_heads) {
            return Err(unsupported(HEAD_COUNT_KV, kv_heads, "every attention block must have the same KV head count"));
        }
        if kv_heads != 0 && heads % kv_heads != 0 {
            return Err(unsupported(HEAD_COUNT_KV, kv_heads, "must divide the head count"));
        }
        let head_dim = head_dim(file, dim, heads)?;
        let l_cache = file.u32(&key("shortconv.l_cache"))?;
        if !(2..=L_CACHE_MAX).contains(&l_cache) {
            return Err(unsupported("lfm2.shortconv.l_cache", l_cache, "the short convolution needs 2 to 16 taps"));
        }
        let context_train = file.u32(&key("context_length"))?;
        if context_train == 0 {
            return Err(ParamsError::Invalid {
                key: "lfm2.context_length",
                value: "0".to_owned(),
                rule: "the trained context must be at least 1 position",
            });
        }
        refuse_variants(file)?;
        let rope_base = file.f32(&key("rope.freq_base"))?;
        positive_finite("lfm2.rope.freq_base", rope_base, "the RoPE base must be finite and greater than 0")?;
        let eps = file.f32(&key("attention.layer_norm_rms_epsilon"))?;
        positive_finite(
            "lfm2.attention.layer_norm_rms_epsilon",
            eps,
            "the RMSNorm epsilon must be finite and greater than 0",
        )?;
        let embd = tensor(file, EMBEDDING, GET_ROW_TYPES, &[u64::from(dim)], 2)?;
        let vocab = u32::try_from(embd[1]).map_err(|_| ParamsError::Unsupported {
            key: "token_embd.weight rows",
            value: embd[1],
            why: "more than 2^32 tokens",
        })?;
        check_vocab_of(file, "lfm2.vocab_size", embd[1])?;
        // CAST: rounding the f64 constant to the kernels' f32 is the point.
        #[allow(clippy::cast_possible_truncation)]
        let attention_scale = (1.0 / f64::from(head_dim).sqrt()) as f32;
        let params = Self {
            layers,
            dim,
            ffn,
            heads,
            kv_heads,
            head_dim,
            vocab,
            context_train,
            rope_base,
            eps,
            l_cache,
            attention_scale,
            attention_mask,
            tied_output: file.tensor_info("output.weight").is_none(),
        };
        params.check_tensors(file)?;
        Ok(params)
    }

    fn check_tensors(&self, file: &Gguf) -> Result<(), ParamsError> {
        let (d, f, kv, hd) =
            (u64::from(self.dim), u64::from(self.ffn), u64::from(self.kv_dim()), u64::from(self.head_dim));
        let f32_only = [GgmlType::F32];
        for l in 0..self.layers {
            let name = |part: &str| format!("blk.{l}.{part}.weight");
            for norm in ["attn_norm", "ffn_norm"] {
                tensor(file, &name(norm), &f32_only, &[d], 1)?;
            }
            for (part, cols, rows) in [("ffn_gate", d, f), ("ffn_up", d, f), ("ffn_down", f, d)] {
                matrix(file, &name(part), cols, rows)?;
            }
            if self.is_attention(l) {
                for norm in ["attn_q_norm", "attn_k_norm"] {
                    tensor(file, &name(norm), &f32_only, &[hd], 1)?;
                }
                for (part, rows) in [("attn_q", d), ("attn_k", kv), ("attn_v", kv), ("attn_output", d)] {
                    matrix(file, &name(part), d, rows)?;
                }
            } else {
                matrix(file, &name("shortconv.in_proj"), d, 3 * d)?;
                tensor(file, &name("shortconv.conv"), &f32_only, &[u64::from(self.l_cache), d], 2)?;
                matrix(file, &name("shortconv.out_proj"), d, d)?;
            }
        }
        tensor(file, OUTPUT_NORM, &f32_only, &[d], 1)?;
        if !self.tied_output {
            matrix(file, "output.weight", d, u64::from(self.vocab))?;
        }
        Ok(())
    }

    /// Every tensor the model uses, in upload order: the embedding, the output matrix when it is
    /// not tied, the final norm, then each block's ([`ATTENTION_TENSORS`] or [`CONV_TENSORS`]).
    #[must_use]
    pub fn tensor_names(&self) -> Vec<String> {
        let mut names = vec![EMBEDDING.to_owned()];
        if !self.tied_output {
            names.push("output.weight".to_owned());
        }
        names.push(OUTPUT_NORM.to_owned());
        for l in 0..self.layers {
            let parts: &[&str] = if self.is_attention(l) { &ATTENTION_TENSORS } else { &CONV_TENSORS };
            for part in parts {
                names.push(format!("blk.{l}.{part}.weight"));
            }
        }
        names
    }
}

/// `lfm2.attention.head_count_kv`, one entry per block: an array of `i32` or `u32` of
/// `layers` entries, or one `u32` for every block.
fn head_count_kv(file: &Gguf, layers: u32) -> Result<Vec<u32>, ParamsError> {
    let invalid = |value: String, rule| ParamsError::Invalid { key: HEAD_COUNT_KV, value, rule };
    let Some(value) = file.get(HEAD_COUNT_KV) else {
        return Err(gguf::GgufError::MissingKey { key: HEAD_COUNT_KV.to_owned() }.into());
    };
    let layers = usize::try_from(layers).unwrap_or(usize::MAX);
    match value {
        Value::U32(n) => Ok(vec![*n; layers]),
        Value::Array(array) if array.len() != layers => {
            Err(invalid(format!("{} entries", array.len()), "must have one entry per block (lfm2.block_count)"))
        }
        Value::Array(array) => array
            .items()
            .iter()
            .map(|item| match item {
                Value::U32(n) => Ok(*n),
                Value::I32(n) => {
                    u32::try_from(*n).map_err(|_| invalid(n.to_string(), "a KV head count is not negative"))
                }
                other => Err(invalid(other.type_description(), "entries must be i32 or u32")),
            })
            .collect(),
        other => Err(invalid(other.type_description(), "must be a u32 or an array of one i32 or u32 per block")),
    }
}

/// The head size: `lfm2.attention.key_length` when present (equal to `value_length`), else
/// `dim / heads`; `heads` heads of it must make `dim` (`wq` and `wo` are `{n_embd, n_embd}`),
/// and it must be even (RoPE rotates pairs).
fn head_dim(file: &Gguf, dim: u32, heads: u32) -> Result<u32, ParamsError> {
    let unsupported = |key, value: u32, why| ParamsError::Unsupported { key, value: u64::from(value), why };
    let head_dim = match file.get("lfm2.attention.key_length") {
        Some(_) => file.u32("lfm2.attention.key_length")?,
        None => dim / heads,
    };
    if head_dim == 0 || head_dim % 2 != 0 || head_dim.checked_mul(heads) != Some(dim) {
        return Err(unsupported(
            "lfm2.attention.key_length",
            head_dim,
            "the heads must split the embedding into even head sizes",
        ));
    }
    for key in ["lfm2.attention.value_length", "lfm2.rope.dimension_count"] {
        if file.get(key).is_some() && file.u32(key)? != head_dim {
            return Err(unsupported(key, file.u32(key)?, "must equal the head size (partial RoPE is not implemented)"));
        }
    }
    Ok(head_dim)
}

/// Refuses the LFM2 variants llama.cpp builds differently: a sliding window on the attention
/// blocks (LFM2.5's audio tokenizer), non-causal attention (a centred convolution window),
/// scaled RoPE, and the ColBERT embedding head.
fn refuse_variants(file: &Gguf) -> Result<(), ParamsError> {
    if let Some(window) = file.get("lfm2.attention.sliding_window").map(|_| file.u32("lfm2.attention.sliding_window")) {
        let window = window?;
        if window > 0 {
            return Err(ParamsError::Unsupported {
                key: "lfm2.attention.sliding_window",
                value: u64::from(window),
                why: "sliding-window attention blocks are not implemented",
            });
        }
    }
    if file.get("lfm2.attention.causal").is_some() && !file.bool("lfm2.attention.causal")? {
        return Err(ParamsError::Unsupported {
            key: "lfm2.attention.causal",
            value: 0,
            why: "only causal models (the convolution over past inputs) are implemented",
        });
    }
    if file.get("lfm2.rope.scaling.type").is_some() || file.get("lfm2.rope.scaling.factor").is_some() {
        return Err(ParamsError::Unsupported {
            key: "lfm2.rope.scaling",
            value: 1,
            why: "scaled RoPE is not implemented",
        });
    }
    if file.tensor_info("dense_2_out.weight").is_some() {
        return Err(ParamsError::Unsupported {
            key: "dense_2_out.weight",
            value: 1,
            why: "an embedding model (LFM2-ColBert) has no language-model head",
        });
    }
    Ok(())
}

/// A matrix of `rows` rows of `cols` values in a type the matvecs take, its row a whole number of
/// the type's blocks.
fn matrix(file: &Gguf, name: &str, cols: u64, rows: u64) -> Result<(), ParamsError> {
    let types: Vec<GgmlType> = MATRIX_TYPES.iter().map(|&(t, _)| t).collect();
    let dims = tensor(file, name, &types, &[cols, rows], 2)?;
    let info = file.tensor_info(name).ok_or_else(|| ParamsError::MissingTensor { name: name.to_owned() })?;
    let block = MATRIX_TYPES.iter().find(|&&(t, _)| t == info.ty()).map_or(32, |&(_, b)| b);
    if dims[0] % u64::from(block) != 0 {
        return Err(ParamsError::Tensor {
            name: name.to_owned(),
            found_type: info.ty().to_string(),
            found_dims: dims,
            expected: format!("rows of a whole number of {}-value {} blocks", block, info.ty()),
        });
    }
    Ok(())
}
