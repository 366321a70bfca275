//! A `qwen35` model's hyperparameters and tensor inventory (Qwen 3.5 dense: gated-DeltaNet
//! layers interleaved with gated full-attention layers), read from GGUF metadata and checked
//! against what the kernels support before anything is uploaded.
//!
//! # llama.cpp's `qwen35`, as this adapter runs it
//! Facts from llama.cpp's `src/models/qwen35.cpp` (`load_arch_hparams`, `load_arch_tensors`, the
//! graph), `src/models/delta-net-base.cpp`, `src/models/models.h`, `src/llama-model.cpp`,
//! `src/llama-graph.cpp`, `ggml/src/ggml-cpu/ops.cpp` and `unary-ops.cpp`, and the converter
//! (`conversion/qwen.py`: `Qwen3NextModel`, `_LinearAttentionVReorderBase`, `Qwen3_5TextModel`):
//!
//! - **Layers.** `qwen35.attention.recurrent_layers` (one bool per block) marks the
//!   gated-DeltaNet layers; without it, layer `l` is a DeltaNet layer unless
//!   `(l + 1) % qwen35.full_attention_interval == 0` (interval 4 when the key is absent). The last
//!   `qwen35.nextn_predict_layers` blocks are a multi-token-prediction head the main pass does
//!   not run; this adapter neither uploads nor checks them.
//! - **Every layer:** `h = RMSNorm(x) * attn_norm`; the layer's attention or DeltaNet block
//!   gives `a`; `x = a + x`; `h = RMSNorm(x) * post_attention_norm`; `x = ffn_down(silu(ffn_gate
//!   h) * ffn_up h) + x` (SwiGLU, `ggml_silu(v) = v / (1 + exp(-v))`). After the last layer
//!   `RMSNorm(x) * output_norm`, then `output.weight` or, absent, the token embedding (tied).
//!   No embedding scale. Norm weights are stored as the converter writes them, HF's `w` already
//!   turned into `1 + w` (all but the DeltaNet `ssm_norm`), so every norm multiplies by the stored
//!   weight.
//! - **Full-attention block.** `attn_q` has `2 * heads * head_dim` rows: per head, `head_dim`
//!   query rows then `head_dim` output-gate rows (the graph views `Qcur_full` with a stride of
//!   `2 * head_dim` per head, the gate at offset `head_dim`). Query heads and `attn_k`'s key heads
//!   are RMS-normed per head (`attn_q_norm`, `attn_k_norm`, `head_dim` wide), then rotated;
//!   attention over every cached position with scale `1 / sqrt(head_dim)` (no
//!   `attention.scale` key), query head `h` reading kv head `h / (heads / kv_heads)`; the result
//!   times `sigmoid(gate)` (`ggml_sigmoid(v) = 1 / (1 + exp(-v))`), then `attn_output`. Only
//!   separate `attn_q`/`attn_k`/`attn_v` are run (a fused `attn_qkv` in a full-attention layer
//!   is refused).
//! - **Rotary embedding.** `ggml_rope_multi` with `LLAMA_ROPE_TYPE_IMROPE`, `n_rot =
//!   qwen35.rope.dimension_count` (64 of 256 in the published models), sections
//!   `qwen35.rope.dimension_sections` (`[11, 11, 10, 0]`). Text tokens get the 4-D position
//!   `(p, p, p, 0)` (`llm_graph_input_pos::set_input`). Pair `i < n_rot / 2` rotates elements `i`
//!   and `i + n_rot / 2` (NEOX pairing, `rotate_pairs` with `n_offset = n_dims / 2`) by
//!   `pos_s * base^(-2i / n_rot)`, where section `s` is chosen from `sector = i % (sum of
//!   sections)`: `t` if `sector % 3 == 0 && sector < 3 * sections[0]`, `h` if `sector % 3 == 1 &&
//!   sector < 3 * sections[1]`, `w` if `sector % 3 == 2 && sector < 3 * sections[2]`, else `e`
//!   (`ggml_mrope_cache_init`, interleaved). With text positions `t`, `h` and `w` are `p` and `e`
//!   is 0, so **for text the rotation is NEOX rope of the first `n_rot` elements by
//!   `p * base^(-2i / n_rot)`, except pairs whose sector falls to `e`, which stay unrotated**
//!   (none with the published `[11, 11, 10]` and 32 pairs). Elements from `n_rot` on pass
//!   unchanged. The table ([`rope_table`]) holds `(cos, sin)` per position and pair, `(1, 0)` for
//!   `e` pairs, computed in f64 and rounded once (ggml multiplies `theta` up in f32: a few ulp).
//! - **DeltaNet block** (`build_layer_attn_linear`): `S = qwen35.ssm.state_size` (key and value
//!   head size), `Hk = qwen35.ssm.group_count` key heads, `Hv = qwen35.ssm.time_step_rank` value
//!   heads, `qwen35.ssm.inner_size = S * Hv`, `K = qwen35.ssm.conv_kernel`. Projections of `h`:
//!   `attn_qkv` (`2 * Hk * S + Hv * S` rows: all query heads, all key heads, all value heads, in
//!   that order), `attn_gate` (`z`, `Hv * S` rows), `ssm_beta` and `ssm_alpha` (`Hv` rows each).
//!   The `qkv` channels go through a causal depthwise convolution: `ssm_conv1d` is `{K,
//!   channels}` (channel `c`'s `K` taps contiguous, oldest input first; the converter squeezes
//!   HF's `[channels, 1, K]`), no bias; the window is the channel's last `K - 1` inputs (the
//!   conv state, `[channel][K - 1]`, oldest first, `build_conv_state`) then the new one;
//!   `ggml_ssm_conv` sums `window[i] * tap[i]` for `i` ascending from 0 in f32; then SiLU; the
//!   state keeps the last `K - 1` inputs. Query and key heads are L2-normalised: llama.cpp
//!   (`build_gdn_l2_norm`) computes `rms_norm(x, eps / S) / sqrt(S)`, which is
//!   `x / sqrt(sum(x^2) + eps)` with `eps = qwen35.attention.layer_norm_rms_epsilon` (newer ggml
//!   spells it `ggml_l2_norm`, `x / max(|x|, eps)`: the same to `eps / (2 |x|^2)`). Value head `h` reads
//!   query and key head `h % Hk` (ggml's tiled broadcast; the converter reorders V heads so that
//!   this is HF's grouping). Gate: `g = softplus(alpha + ssm_dt.bias) * ssm_a` with `ssm_a`
//!   stored as `-exp(A_log)` by the converter and `softplus(v) = v > 20 ? v : log(1 + exp(v))`;
//!   `beta = sigmoid(ssm_beta h)`. The delta rule, `ggml_gated_delta_net` with a scalar gate
//!   (`ops.cpp`, `ggml_compute_forward_gated_delta_net_one_chunk`, the fused path llama.cpp takes
//!   by default, `cparams.fused_gdn_ar`/`_ch`), per value head with state `S[i][j]` (`i` key, `j`
//!   value; llama.cpp stores it transposed, `s[j * S + i]`), for one token: `S *= exp(g)`;
//!   `kv[j] = sum_i S[i][j] k[i]`; `delta[j] = (v[j] - kv[j]) * beta`; `S[i][j] += k[i] * delta[j]`;
//!   `o[j] = (sum_i S[i][j] q[i]) * (1 / sqrt(S))`. A prompt runs the same recurrence token by
//!   token. Output: `RMSNorm(o per head) * ssm_norm` (`S` wide) times `silu(z)`, then `ssm_out`.
//! - **Tokenizer:** `tokenizer.ggml.model = "gpt2"`, `tokenizer.ggml.pre = "qwen35"`.
//!
//! What this adapter does differently in f32 (within the fixtures' tolerance, see
//! `engine/tests/qwen35_fixture.rs`): its sums run in the kernels' documented orders, not ggml's
//! SIMD orders; `exp` and `log` are the kernels' own (`rl_expf`, `rl_logf`); the rope table is
//! f64-rounded.

use gguf::{GgmlType, Gguf, Value};

use crate::model::gemma3::params::MATRIX_TYPES;
use crate::model::params::{ParamsError, check_vocab_of, positive_finite, tensor};

/// Layers a model may have: the DeltaNet layers are a bit set of this width.
pub const LAYERS_MAX: u32 = 128;
/// The full-attention interval when `qwen35.full_attention_interval` is absent (llama.cpp's).
pub const FULL_ATTENTION_INTERVAL_DEFAULT: u32 = 4;

/// Hyperparameters of a `qwen35` model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Qwen35Params {
    /// The layers the main pass runs: `qwen35.block_count` minus `qwen35.nextn_predict_layers`.
    pub layers: u32,
    /// `qwen35.embedding_length`.
    pub dim: u32,
    /// `qwen35.feed_forward_length`.
    pub ffn: u32,
    /// `qwen35.attention.head_count`.
    pub heads: u32,
    /// `qwen35.attention.head_count_kv`.
    pub kv_heads: u32,
    /// `qwen35.attention.key_length` (= `value_length`).
    pub head_dim: u32,
    /// `qwen35.rope.dimension_count`: the rotated elements of each head.
    pub rope_dims: u32,
    /// `qwen35.rope.dimension_sections`.
    pub rope_sections: [u32; 4],
    /// `qwen35.rope.freq_base`.
    pub rope_base: f32,
    /// `qwen35.ssm.conv_kernel`: taps of the DeltaNet convolution.
    pub conv_kernel: u32,
    /// `qwen35.ssm.state_size`: the DeltaNet key and value head size.
    pub state: u32,
    /// `qwen35.ssm.group_count`: DeltaNet key heads.
    pub k_heads: u32,
    /// `qwen35.ssm.time_step_rank`: DeltaNet value heads.
    pub v_heads: u32,
    /// Bit `l` set: layer `l` is a gated-DeltaNet layer, else a full-attention layer.
    pub recurrent: u128,
    /// Rows of `token_embd.weight`.
    pub vocab: u32,
    /// `qwen35.context_length`.
    pub context_train: u32,
    /// `qwen35.attention.layer_norm_rms_epsilon` (the RMSNorms' and the L2 norms' epsilon).
    pub eps: f32,
    /// What the attention scores are multiplied by: `1 / sqrt(head_dim)` rounded to f32.
    pub attention_scale: f32,
    /// What the delta rule's outputs are multiplied by: `1 / sqrt(state)` in f32 (ggml's
    /// `1.0f / sqrtf(S_v)`).
    pub delta_scale: f32,
    /// Whether the output matrix is the token embedding (`output.weight` absent).
    pub tied_output: bool,
}

const PREFIX: &str = "qwen35";
const EMBEDDING: &str = "token_embd.weight";

/// The tensors of a DeltaNet layer before its FFN, in upload order (`ssm_dt.bias` and `ssm_a`
/// have no `.weight` suffix).
pub const DELTA_TENSORS: [&str; 11] = [
    "attn_norm.weight",
    "attn_qkv.weight",
    "attn_gate.weight",
    "ssm_beta.weight",
    "ssm_alpha.weight",
    "ssm_conv1d.weight",
    "ssm_dt.bias",
    "ssm_a",
    "ssm_norm.weight",
    "ssm_out.weight",
    "post_attention_norm.weight",
];

/// The tensors of a full-attention layer before its FFN, in upload order.
pub const ATTENTION_TENSORS: [&str; 8] = [
    "attn_norm.weight",
    "attn_q.weight",
    "attn_k.weight",
    "attn_v.weight",
    "attn_q_norm.weight",
    "attn_k_norm.weight",
    "attn_output.weight",
    "post_attention_norm.weight",
];

/// The FFN tensors every layer ends with.
pub const FFN_TENSORS: [&str; 3] = ["ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"];

impl Qwen35Params {
    /// Whether layer `layer` is a gated-DeltaNet layer (else a full-attention layer).
    #[must_use]
    pub const fn is_recurrent(&self, layer: u32) -> bool {
        layer < LAYERS_MAX && (self.recurrent >> layer) & 1 == 1
    }

    /// DeltaNet layers before layer `layer`: a DeltaNet layer's index into the state surfaces.
    #[must_use]
    pub const fn recurrent_before(&self, layer: u32) -> u32 {
        if layer == 0 {
            return 0;
        }
        let below = if layer >= LAYERS_MAX { u128::MAX } else { (1u128 << layer) - 1 };
        (self.recurrent & below).count_ones()
    }

    /// DeltaNet layers.
    #[must_use]
    pub const fn recurrent_layers(&self) -> u32 {
        self.recurrent_before(self.layers)
    }

    /// Full-attention layers (the layers with a KV cache).
    #[must_use]
    pub const fn attention_layers(&self) -> u32 {
        self.layers - self.recurrent_layers()
    }

    /// `heads * head_dim`: the query (and attention output) width.
    #[must_use]
    pub const fn q_dim(&self) -> u32 {
        self.heads * self.head_dim
    }

    /// `kv_heads * head_dim`: one K (or V) row per position and layer.
    #[must_use]
    pub const fn kv_dim(&self) -> u32 {
        self.kv_heads * self.head_dim
    }

    /// `k_heads * state`: the DeltaNet query (and key) width.
    #[must_use]
    pub const fn key_dim(&self) -> u32 {
        self.k_heads * self.state
    }

    /// `v_heads * state`: the DeltaNet value (and output) width.
    #[must_use]
    pub const fn value_dim(&self) -> u32 {
        self.v_heads * self.state
    }

    /// `2 * key_dim + value_dim`: the convolution's channels.
    #[must_use]
    pub const fn conv_dim(&self) -> u32 {
        2 * self.key_dim() + self.value_dim()
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
        let blocks = file.u32(&key("block_count"))?;
        let nextn =
            if file.get(&key("nextn_predict_layers")).is_some() { file.u32(&key("nextn_predict_layers"))? } else { 0 };
        let unsupported = |key, value: u32, why| ParamsError::Unsupported { key, value: u64::from(value), why };
        if nextn >= blocks {
            return Err(unsupported("qwen35.nextn_predict_layers", nextn, "must leave at least one layer"));
        }
        let layers = blocks - nextn;
        if layers > LAYERS_MAX {
            return Err(unsupported("qwen35.block_count", layers, "at most 128 layers"));
        }
        let mut p = Self::read_shape(file, layers)?;
        p.recurrent = recurrent_layers(file, blocks, layers)?;
        p.check_tensors(file)?;
        Ok(p)
    }

    /// Every hyperparameter but the layer kinds.
    fn read_shape(file: &Gguf, layers: u32) -> Result<Self, ParamsError> {
        let key = |k: &str| format!("{PREFIX}.{k}");
        let u = |k: &str| file.u32(&key(k));
        let unsupported = |key, value: u32, why| ParamsError::Unsupported { key, value: u64::from(value), why };
        let (dim, ffn, heads, kv_heads) = (
            u("embedding_length")?,
            u("feed_forward_length")?,
            u("attention.head_count")?,
            u("attention.head_count_kv")?,
        );
        let (head_dim, value_dim) = (u("attention.key_length")?, u("attention.value_length")?);
        for (name, value) in [("qwen35.embedding_length", dim), ("qwen35.feed_forward_length", ffn)] {
            if value == 0 || value % 32 != 0 {
                return Err(unsupported(name, value, "the quantised matvecs need a non-zero multiple of 32"));
            }
        }
        if heads == 0 {
            return Err(unsupported("qwen35.attention.head_count", heads, "must be at least 1"));
        }
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(unsupported("qwen35.attention.head_count_kv", kv_heads, "must divide the head count"));
        }
        if head_dim == 0 || head_dim % 2 != 0 {
            return Err(unsupported("qwen35.attention.key_length", head_dim, "must be a non-zero even number"));
        }
        if value_dim != head_dim {
            return Err(unsupported("qwen35.attention.value_length", value_dim, "must equal the key length"));
        }
        let rope_dims = u("rope.dimension_count")?;
        if rope_dims < 2 || rope_dims % 2 != 0 || rope_dims > head_dim {
            return Err(unsupported(
                "qwen35.rope.dimension_count",
                rope_dims,
                "must be even, from 2 to the key length",
            ));
        }
        let rope_sections = rope_sections(file)?;
        let rope_base = file.f32(&key("rope.freq_base"))?;
        positive_finite("qwen35.rope.freq_base", rope_base, "the RoPE base must be finite and greater than 0")?;
        if file.get(&key("rope.scaling.type")).is_some() || file.get(&key("rope.scaling.factor")).is_some() {
            return Err(unsupported("qwen35.rope.scaling", 1, "scaled RoPE is not implemented"));
        }
        let eps = file.f32(&key("attention.layer_norm_rms_epsilon"))?;
        positive_finite(
            "qwen35.attention.layer_norm_rms_epsilon",
            eps,
            "the epsilon must be finite and greater than 0",
        )?;
        let context_train = u("context_length")?;
        if context_train == 0 {
            return Err(ParamsError::Invalid {
                key: "qwen35.context_length",
                value: "0".to_owned(),
                rule: "the trained context must be at least 1 position",
            });
        }
        let (conv_kernel, state, k_heads, v_heads, inner) = (
            u("ssm.conv_kernel")?,
            u("ssm.state_size")?,
            u("ssm.group_count")?,
            u("ssm.time_step_rank")?,
            u("ssm.inner_size")?,
        );
        if conv_kernel < 2 {
            return Err(unsupported(
                "qwen35.ssm.conv_kernel",
                conv_kernel,
                "the convolution state holds kernel - 1 inputs: at least 2 taps",
            ));
        }
        for (name, value) in [("qwen35.ssm.state_size", state), ("qwen35.ssm.group_count", k_heads)] {
            if value == 0 {
                return Err(unsupported(name, value, "must be at least 1"));
            }
        }
        if v_heads == 0 || v_heads % k_heads != 0 {
            return Err(unsupported(
                "qwen35.ssm.time_step_rank",
                v_heads,
                "must be a non-zero multiple of the group count",
            ));
        }
        if u64::from(inner) != u64::from(state) * u64::from(v_heads) {
            return Err(unsupported("qwen35.ssm.inner_size", inner, "must be the state size times the time-step rank"));
        }
        let embd = tensor(file, EMBEDDING, crate::model::gemma3::GET_ROW_TYPES, &[u64::from(dim)], 2)?;
        let vocab = u32::try_from(embd[1]).map_err(|_| ParamsError::Unsupported {
            key: "token_embd.weight rows",
            value: embd[1],
            why: "more than 2^32 tokens",
        })?;
        check_vocab_of(file, "qwen35.vocab_size", embd[1])?;
        // CAST: rounding the f64 constant to the kernels' f32 is the point; the delta scale is
        // ggml's f32 expression.
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        let (attention_scale, delta_scale) = ((1.0 / f64::from(head_dim).sqrt()) as f32, 1.0 / (state as f32).sqrt());
        Ok(Self {
            layers,
            dim,
            ffn,
            heads,
            kv_heads,
            head_dim,
            rope_dims,
            rope_sections,
            rope_base,
            conv_kernel,
            state,
            k_heads,
            v_heads,
            recurrent: 0,
            vocab,
            context_train,
            eps,
            attention_scale,
            delta_scale,
            tied_output: file.tensor_info("output.weight").is_none(),
        })
    }

    fn check_tensors(&self, file: &Gguf) -> Result<(), ParamsError> {
        let (d, f, hd) = (u64::from(self.dim), u64::from(self.ffn), u64::from(self.head_dim));
        let f32_only = [GgmlType::F32];
        for l in 0..self.layers {
            let name = |part: &str| format!("blk.{l}.{part}");
            for norm in ["attn_norm.weight", "post_attention_norm.weight"] {
                tensor(file, &name(norm), &f32_only, &[d], 1)?;
            }
            if self.is_recurrent(l) {
                let (s, vh) = (u64::from(self.state), u64::from(self.v_heads));
                let (conv, value) = (u64::from(self.conv_dim()), u64::from(self.value_dim()));
                tensor(file, &name("ssm_conv1d.weight"), &f32_only, &[u64::from(self.conv_kernel), conv], 2)?;
                for part in ["ssm_dt.bias", "ssm_a"] {
                    tensor(file, &name(part), &f32_only, &[vh], 1)?;
                }
                tensor(file, &name("ssm_norm.weight"), &f32_only, &[s], 1)?;
                for (part, cols, rows) in [
                    ("attn_qkv.weight", d, conv),
                    ("attn_gate.weight", d, value),
                    ("ssm_beta.weight", d, vh),
                    ("ssm_alpha.weight", d, vh),
                    ("ssm_out.weight", value, d),
                ] {
                    matrix(file, &name(part), cols, rows)?;
                }
            } else {
                if file.tensor_info(&name("attn_qkv.weight")).is_some() {
                    return Err(ParamsError::Tensor {
                        name: name("attn_qkv.weight"),
                        found_type: "fused".to_owned(),
                        found_dims: Vec::new(),
                        expected: "separate attn_q, attn_k and attn_v in a full-attention layer".to_owned(),
                    });
                }
                let (q, kv) = (u64::from(self.q_dim()), u64::from(self.kv_dim()));
                for norm in ["attn_q_norm.weight", "attn_k_norm.weight"] {
                    tensor(file, &name(norm), &f32_only, &[hd], 1)?;
                }
                for (part, cols, rows) in [
                    ("attn_q.weight", d, 2 * q),
                    ("attn_k.weight", d, kv),
                    ("attn_v.weight", d, kv),
                    ("attn_output.weight", q, d),
                ] {
                    matrix(file, &name(part), cols, rows)?;
                }
            }
            for (part, cols, rows) in [("ffn_gate.weight", d, f), ("ffn_up.weight", d, f), ("ffn_down.weight", f, d)] {
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
    /// not tied, the output norm, then each layer's ([`DELTA_TENSORS`] or [`ATTENTION_TENSORS`],
    /// then [`FFN_TENSORS`]).
    #[must_use]
    pub fn tensor_names(&self) -> Vec<String> {
        let mut names = vec![EMBEDDING.to_owned()];
        if !self.tied_output {
            names.push("output.weight".to_owned());
        }
        names.push("output_norm.weight".to_owned());
        for l in 0..self.layers {
            let parts: &[&str] = if self.is_recurrent(l) { &DELTA_TENSORS } else { &ATTENTION_TENSORS };
            for part in parts.iter().chain(&FFN_TENSORS) {
                names.push(format!("blk.{l}.{part}"));
            }
        }
        names
    }
}

/// `qwen35.rope.dimension_sections`: four non-negative integers, not all 0.
fn rope_sections(file: &Gguf) -> Result<[u32; 4], ParamsError> {
    const KEY: &str = "qwen35.rope.dimension_sections";
    let values = file.i32_array(KEY)?;
    let invalid = || ParamsError::Invalid {
        key: KEY,
        value: format!("{values:?}"),
        rule: "four non-negative section sizes, not all 0",
    };
    let [a, b, c, d] = values[..] else { return Err(invalid()) };
    let sections = [a, b, c, d].map(|v| u32::try_from(v).ok());
    let [Some(a), Some(b), Some(c), Some(d)] = sections else { return Err(invalid()) };
    if a == 0 && b == 0 && c == 0 && d == 0 {
        return Err(invalid());
    }
    Ok([a, b, c, d])
}

/// Which of the `layers` main layers are DeltaNet layers: `qwen35.attention.recurrent_layers`
/// (one bool per block, the `blocks - layers` prediction blocks last and not recurrent), else
/// every layer but each `qwen35.full_attention_interval`-th.
fn recurrent_layers(file: &Gguf, blocks: u32, layers: u32) -> Result<u128, ParamsError> {
    const FLAGS: &str = "qwen35.attention.recurrent_layers";
    const INTERVAL: &str = "qwen35.full_attention_interval";
    if let Some(value) = file.get(FLAGS) {
        let invalid = |value: String| ParamsError::Invalid { key: FLAGS, value, rule: "one bool per block" };
        let Value::Array(array) = value else { return Err(invalid(value.type_description())) };
        if u64::try_from(array.len()).unwrap_or(u64::MAX) != u64::from(blocks) {
            return Err(invalid(format!("an array of {}", array.len())));
        }
        let mut mask = 0u128;
        for (l, item) in (0u32..).zip(array.items()) {
            let Value::Bool(recurrent) = *item else { return Err(invalid(item.type_description())) };
            if recurrent && l < layers {
                mask |= 1 << l;
            }
        }
        return Ok(mask);
    }
    let interval = if file.get(INTERVAL).is_some() { file.u32(INTERVAL)? } else { FULL_ATTENTION_INTERVAL_DEFAULT };
    if interval == 0 {
        return Err(ParamsError::Invalid {
            key: INTERVAL,
            value: "0".to_owned(),
            rule: "the interval must be at least 1",
        });
    }
    Ok((0..layers).filter(|l| (l + 1) % interval != 0).fold(0u128, |mask, l| mask | 1 << l))
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

/// The rotation table of the full-attention layers for text positions below `context`:
/// `table[pos][i] = (cos, sin)` of `pos * base^(-2i / rope_dims)` for pair `i < rope_dims / 2`,
/// `(1, 0)` for a pair whose interleaved-M-RoPE sector takes the fourth section (position 0 for
/// text); computed in f64 and rounded once to f32.
#[must_use]
pub fn rope_table(p: &Qwen35Params, context: u32) -> Vec<f32> {
    let half = p.rope_dims / 2;
    let [t, h, w, _] = p.rope_sections.map(u64::from);
    let sectors = p.rope_sections.iter().map(|&s| u64::from(s)).sum::<u64>().max(1);
    let moves = |i: u32| {
        let sector = u64::from(i) % sectors;
        match sector % 3 {
            0 => sector < 3 * t,
            1 => sector < 3 * h,
            _ => sector < 3 * w,
        }
    };
    let mut table = Vec::with_capacity(usize::try_from(u64::from(context) * u64::from(p.rope_dims)).unwrap_or(0));
    for pos in 0..context {
        for i in 0..half {
            let position = if moves(i) { f64::from(pos) } else { 0.0 };
            let angle = position * f64::from(p.rope_base).powf(-2.0 * f64::from(i) / f64::from(p.rope_dims));
            // CAST: rounding to the kernels' f32 is the point.
            #[allow(clippy::cast_possible_truncation)]
            table.extend([angle.cos() as f32, angle.sin() as f32]);
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(sections: [u32; 4], rope_dims: u32) -> Qwen35Params {
        Qwen35Params {
            layers: 24,
            dim: 1024,
            ffn: 3584,
            heads: 8,
            kv_heads: 2,
            head_dim: 256,
            rope_dims,
            rope_sections: sections,
            rope_base: 10_000_000.0,
            conv_kernel: 4,
            state: 128,
            k_heads: 16,
            v_heads: 16,
            recurrent: (0..24u32).filter(|l| (l + 1) % 4 != 0).fold(0, |m, l| m | 1 << l),
            vocab: 248_320,
            context_train: 262_144,
            eps: 1e-6,
            attention_scale: 0.0625,
            delta_scale: 0.088_388_35,
            tied_output: true,
        }
    }

    #[test]
    fn the_published_sections_rotate_every_pair_of_the_first_64_elements() {
        // [11, 11, 10] over 32 pairs: sectors 0..32 all fall to t (0, 3, .., 30), h (1, .., 31)
        // or w (2, .., 29): for text, plain NEOX rope of the first 64 elements.
        let p = params([11, 11, 10, 0], 64);
        let table = rope_table(&p, 3);
        assert_eq!(table.len(), 3 * 64);
        for i in 0..32usize {
            let angle = 2.0 * 1e7f64.powf(-2.0 * i as f64 / 64.0);
            #[allow(clippy::cast_possible_truncation)]
            let cos = angle.cos() as f32;
            assert_eq!(table[2 * (2 * 32 + i)], cos, "pair {i}");
        }
        assert_eq!(&table[..64], &[1.0f32, 0.0].repeat(32)[..], "position 0 does not rotate");
    }

    #[test]
    fn a_pair_in_the_fourth_section_stays_unrotated() {
        // [1, 1, 1, 1] over 4 pairs (rope_dims 8): sector 3 is t only below 3 * 1: falls to e.
        let p = params([1, 1, 1, 1], 8);
        let table = rope_table(&p, 6);
        let row = &table[5 * 8..6 * 8];
        assert_ne!(row[0..2], [1.0, 0.0]);
        assert_eq!(row[6..8], [1.0, 0.0], "pair 3 takes the position-0 section");
        assert_eq!(p.recurrent_layers(), 18);
        assert_eq!(p.attention_layers(), 6);
        assert_eq!(p.recurrent_before(3), 3);
        assert_eq!(p.recurrent_before(8), 6);
        assert_eq!(p.conv_dim(), 6144);
    }
}
