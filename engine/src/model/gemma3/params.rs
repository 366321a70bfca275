//! A `gemma3` model's hyperparameters and tensor inventory, read from GGUF metadata and checked
//! against what the kernels support before anything is uploaded.
//!
//! The facts the metadata does not carry are llama.cpp's for `LLM_ARCH_GEMMA3` (its hparams and
//! `src/models/gemma3.cpp`): sliding-window attention on every layer `l` with `l % 6 < 5` and
//! full attention on the others (`set_swa_pattern(6)`), RoPE base 10,000 on the sliding layers
//! and `gemma3.rope.freq_base` on the full ones, NEOX RoPE (pairs `i` and `i + head_dim / 2`),
//! queries scaled by `1 / sqrt(key_length)` (by `1 / sqrt(embedding / heads)` for the 62-layer
//! model), the embedding scaled by `sqrt(embedding_length)`, and no final logit soft-capping (the
//! sliding-window builder applies none).

use gguf::{GgmlType, Gguf};

use crate::model::params::{ParamsError, check_vocab_of, positive_finite, tensor};

/// Layers per period of the attention pattern: the last of each period attends globally.
pub const SWA_PERIOD: u32 = 6;
/// RoPE base of the sliding-window layers (llama.cpp's `rope_freq_base_train_swa` for gemma3).
pub const ROPE_BASE_LOCAL: f32 = 10_000.0;
/// Largest key/value head the attention kernel takes (one 64-wide work-group per head, each
/// work-item holding `head_dim / 64` outputs).
pub const HEAD_DIM_MAX: u32 = 256;

/// Hyperparameters of a `gemma3` model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemma3Params {
    /// `gemma3.block_count`.
    pub layers: u32,
    /// `gemma3.embedding_length`.
    pub dim: u32,
    /// `gemma3.feed_forward_length`.
    pub ffn: u32,
    /// `gemma3.attention.head_count`.
    pub heads: u32,
    /// `gemma3.attention.head_count_kv`.
    pub kv_heads: u32,
    /// `gemma3.attention.key_length` (= `value_length`).
    pub head_dim: u32,
    /// Rows of `token_embd.weight`.
    pub vocab: u32,
    /// `gemma3.context_length`.
    pub context_train: u32,
    /// `gemma3.rope.freq_base`: the full-attention layers' RoPE base.
    pub rope_base_global: f32,
    /// The sliding layers' RoPE base ([`ROPE_BASE_LOCAL`]).
    pub rope_base_local: f32,
    /// `gemma3.attention.sliding_window`: keys a sliding layer attends, its own included.
    pub window: u32,
    /// `gemma3.attention.layer_norm_rms_epsilon`.
    pub eps: f32,
    /// What the queries are multiplied by before the dot products.
    pub attention_scale: f32,
    /// What the token embedding is multiplied by: `sqrt(dim)` rounded to f32.
    pub embedding_scale: f32,
    /// Whether the output matrix is the token embedding (`output.weight` absent).
    pub tied_output: bool,
}

const PREFIX: &str = "gemma3";
const EMBEDDING: &str = "token_embd.weight";

/// The matrix types the quantised matvecs take, with the values per block a row length must be a
/// multiple of.
pub const MATRIX_TYPES: &[(GgmlType, u32)] = &[
    (GgmlType::Q4_0, 32),
    (GgmlType::Q4_1, 32),
    (GgmlType::Q5_0, 32),
    (GgmlType::Q5_1, 32),
    (GgmlType::Q8_0, 32),
    (GgmlType::Q2K, 256),
    (GgmlType::Q3K, 256),
    (GgmlType::Q4K, 256),
    (GgmlType::Q5K, 256),
    (GgmlType::Q6K, 256),
    (GgmlType::F16, 32),
    (GgmlType::Bf16, 32),
];

/// The tensors of one layer, in upload order.
pub const LAYER_TENSORS: [&str; 13] = [
    "attn_norm",
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_q_norm",
    "attn_k_norm",
    "attn_output",
    "post_attention_norm",
    "ffn_norm",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
    "post_ffw_norm",
];

impl Gemma3Params {
    /// `kv_heads * head_dim`: one K (or V) row per position and layer.
    #[must_use]
    pub const fn kv_dim(&self) -> u32 {
        self.kv_heads * self.head_dim
    }

    /// `heads * head_dim`: the query (and attention output) width.
    #[must_use]
    pub const fn q_dim(&self) -> u32 {
        self.heads * self.head_dim
    }

    /// Whether layer `layer` attends through the sliding window (else over every position).
    #[must_use]
    pub const fn is_sliding(&self, layer: u32) -> bool {
        layer % SWA_PERIOD < SWA_PERIOD - 1
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
        let kv_heads = file.u32(&key("attention.head_count_kv"))?;
        let head_dim = file.u32(&key("attention.key_length"))?;
        let value_dim = file.u32(&key("attention.value_length"))?;
        let unsupported = |key, value: u32, why| ParamsError::Unsupported { key, value: u64::from(value), why };
        for (name, value) in [("gemma3.block_count", layers), ("gemma3.attention.head_count", heads)] {
            if value == 0 {
                return Err(unsupported(name, value, "must be at least 1"));
            }
        }
        for (name, value) in [("gemma3.embedding_length", dim), ("gemma3.feed_forward_length", ffn)] {
            if value == 0 || value % 32 != 0 {
                return Err(unsupported(name, value, "the quantised matvecs need a non-zero multiple of 32"));
            }
        }
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(unsupported("gemma3.attention.head_count_kv", kv_heads, "must divide the head count"));
        }
        if head_dim == 0 || head_dim % 64 != 0 || head_dim > HEAD_DIM_MAX {
            return Err(unsupported(
                "gemma3.attention.key_length",
                head_dim,
                "the kernels need a head size that is a multiple of 64 of at most 256",
            ));
        }
        if value_dim != head_dim {
            return Err(unsupported("gemma3.attention.value_length", value_dim, "must equal the key length"));
        }
        let context_train = file.u32(&key("context_length"))?;
        if context_train == 0 {
            return Err(ParamsError::Invalid {
                key: "gemma3.context_length",
                value: "0".to_owned(),
                rule: "the trained context must be at least 1 position",
            });
        }
        let window = file.u32(&key("attention.sliding_window"))?;
        if window == 0 {
            return Err(ParamsError::Invalid {
                key: "gemma3.attention.sliding_window",
                value: "0".to_owned(),
                rule: "the sliding window must hold at least the query's own position",
            });
        }
        let rope_base_global = file.f32(&key("rope.freq_base"))?;
        positive_finite("gemma3.rope.freq_base", rope_base_global, "the RoPE base must be finite and greater than 0")?;
        if file.get(&key("rope.scaling.type")).is_some() || file.get(&key("rope.scaling.factor")).is_some() {
            return Err(ParamsError::Unsupported {
                key: "gemma3.rope.scaling",
                value: 1,
                why: "scaled RoPE (the larger Gemma 3 models) is not implemented",
            });
        }
        let eps = file.f32(&key("attention.layer_norm_rms_epsilon"))?;
        positive_finite(
            "gemma3.attention.layer_norm_rms_epsilon",
            eps,
            "the RMSNorm epsilon must be finite and greater than 0",
        )?;
        let embd = tensor(file, EMBEDDING, super::GET_ROW_TYPES, &[u64::from(dim)], 2)?;
        let vocab = u32::try_from(embd[1]).map_err(|_| ParamsError::Unsupported {
            key: "token_embd.weight rows",
            value: embd[1],
            why: "more than 2^32 tokens",
        })?;
        check_vocab_of(file, "gemma3.vocab_size", embd[1])?;
        // llama.cpp's gemma3 hparams: the 62-layer (27B) model scales by the head width the
        // embedding implies, every other size by the key length.
        let scale_width = if layers == 62 { dim / heads } else { head_dim };
        // CAST: rounding the f64 constants to the kernels' f32 is the point.
        #[allow(clippy::cast_possible_truncation)]
        let (attention_scale, embedding_scale) =
            ((1.0 / f64::from(scale_width).sqrt()) as f32, f64::from(dim).sqrt() as f32);
        let params = Self {
            layers,
            dim,
            ffn,
            heads,
            kv_heads,
            head_dim,
            vocab,
            context_train,
            rope_base_global,
            rope_base_local: ROPE_BASE_LOCAL,
            window,
            eps,
            attention_scale,
            embedding_scale,
            tied_output: file.tensor_info("output.weight").is_none(),
        };
        params.check_tensors(file)?;
        Ok(params)
    }

    fn check_tensors(&self, file: &Gguf) -> Result<(), ParamsError> {
        let (d, f, kv, q, hd) = (
            u64::from(self.dim),
            u64::from(self.ffn),
            u64::from(self.kv_dim()),
            u64::from(self.q_dim()),
            u64::from(self.head_dim),
        );
        let f32_only = [GgmlType::F32];
        for l in 0..self.layers {
            let name = |part: &str| format!("blk.{l}.{part}.weight");
            for norm in ["attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"] {
                tensor(file, &name(norm), &f32_only, &[d], 1)?;
            }
            for norm in ["attn_q_norm", "attn_k_norm"] {
                tensor(file, &name(norm), &f32_only, &[hd], 1)?;
            }
            for (part, cols, rows) in [
                ("attn_q", d, q),
                ("attn_k", d, kv),
                ("attn_v", d, kv),
                ("attn_output", q, d),
                ("ffn_gate", d, f),
                ("ffn_up", d, f),
                ("ffn_down", f, d),
            ] {
                matrix(file, &name(part), cols, rows)?;
            }
        }
        tensor(file, "output_norm.weight", &f32_only, &[d], 1)?;
        if !self.tied_output {
            matrix(file, "output.weight", d, u64::from(self.vocab))?;
        }
        Ok(())
    }

    /// Every tensor the model uses, in upload order: the embedding, the output matrix when it is
    /// not tied, the output norm, then each layer's ([`LAYER_TENSORS`]).
    #[must_use]
    pub fn tensor_names(&self) -> Vec<String> {
        let mut names = vec![EMBEDDING.to_owned()];
        if !self.tied_output {
            names.push("output.weight".to_owned());
        }
        names.push("output_norm.weight".to_owned());
        for l in 0..self.layers {
            for part in LAYER_TENSORS {
                names.push(format!("blk.{l}.{part}.weight"));
            }
        }
        names
    }
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
