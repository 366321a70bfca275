//! The `qwen35` decode step (Qwen 3.5 dense) as launches through the [`Funnel`]: the token's
//! embedding row, then per layer RMSNorm → the layer's block → residual add → RMSNorm → SwiGLU
//! FFN → residual add; the final RMSNorm and the logits matvec (the token embedding when tied).
//! The facts behind each step are in [`params`].
//!
//! A **gated-DeltaNet layer** runs the `attn_qkv`, `attn_gate` (`z`), `ssm_beta` and
//! `ssm_alpha` matvecs, `ssm_conv_silu` (the causal convolution with SiLU, which shifts the
//! layer's convolution state in place), `gated_delta_net` (L2-normalised query and key, decay
//! and beta from the gate projections, the delta rule on the layer's state matrices in place),
//! RMSNorm of each value head by `ssm_norm`, `silu_mul` with `z`, and the `ssm_out` matvec. A
//! **full-attention layer** runs the `attn_q` (query and gate), `attn_k` and `attn_v` matvecs,
//! `split_halves` (queries apart from gates), per-head RMSNorm of queries and keys,
//! `rope_partial` on both, `kv_store` of K and V, attention over every cached position
//! (`attention_window` from key 0), `sigmoid_mul` with the gates and the `attn_output` matvec.
//!
//! **Sequence state.** Two surfaces hold it, one per kind, spanning the DeltaNet layers in
//! order (the `r`-th DeltaNet layer's block at `r` times its size): `conv_state`
//! ([`StateKind::Convolution`], `[layer][channel][conv_kernel - 1]` f32, each channel's last
//! inputs oldest first) and `recurrent_state` ([`StateKind::Recurrent`], `[layer][value
//! head][key i][value j]` f32). Both are rewritten in place by every step, by the work-item
//! that owns the channel or the column, so no launch argument follows the position: the
//! DeltaNet launches are the same bytes at every position. The step's other position-dependent
//! values are `u32` kernargs of the full-attention layers, each declared at its launch:
//! `layer{L}.rope_q.pos0`, `layer{L}.rope_k.pos0`, `layer{L}.kv_store_k.position`,
//! `layer{L}.kv_store_v.position` and `layer{L}.attention.n` (the position plus one).
//!
//! A prompt runs as batched passes of up to [`PREFILL_CHUNK`] tokens ([`Workload::prefill`]):
//! the batched matrix products and the decode kernels over rows; the convolution and the delta
//! rule take the pass's tokens in one launch each and run them in order inside it (the
//! recurrence runs token by token within the batched pass), so a batched prefill leaves the
//! logits, the KV cache and both state surfaces bit for bit as the same prompt step by step.

pub mod params;
mod prefill;

use std::collections::BTreeMap;

use gguf::{GgmlType, Gguf};
use hal::Device;
use kernarg_abi::layout::ArgValue;

pub use params::Qwen35Params;

use super::llama::{LoadError, f32_bytes};
use super::ops::{self, LINEAR_BLOCK};
use super::weights::{self, Typed, Weight};
use crate::funnel::{DeclaredArg, Funnel, Kernel, Launch, Rule, Use};
use crate::workload::{GUARD_BYTES, StateKind, Surface, Workload, WorkloadError, check_position};

/// Work-group size of attention (one work-group per query head).
const ATTENTION_BLOCK: u16 = 64;

/// Prompt tokens per batched prefill pass ([`Workload::prefill_chunk`]).
pub const PREFILL_CHUNK: u32 = 128;

/// The weights of a gated-DeltaNet block.
#[derive(Clone, Copy, Debug)]
pub(super) struct Delta {
    qkv: Weight,
    gate: Weight,
    beta: Weight,
    alpha: Weight,
    conv: Weight,
    dt_bias: Weight,
    ssm_a: Weight,
    norm: Weight,
    out: Weight,
    /// The layer's index among the DeltaNet layers: its block of the state surfaces.
    index: u32,
}

/// The weights of a full-attention block.
#[derive(Clone, Copy, Debug)]
pub(super) struct Attention {
    q: Weight,
    k: Weight,
    v: Weight,
    q_norm: Weight,
    k_norm: Weight,
    out: Weight,
    /// The layer's index among the full-attention layers: its block of the KV caches.
    index: u32,
}

/// A layer's attention-or-DeltaNet block.
#[derive(Clone, Copy, Debug)]
pub(super) enum Block {
    Delta(Delta),
    Attention(Attention),
}

/// The weights of one layer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Layer {
    attn_norm: Weight,
    block: Block,
    post_norm: Weight,
    ffn_gate: Weight,
    ffn_up: Weight,
    ffn_down: Weight,
}

/// The kernels the step launches.
#[derive(Debug)]
pub(super) struct Kernels {
    /// One matvec per matrix type the file uses, by GGML type id.
    matvec: weights::ByType,
    /// One batched product per matrix type the file uses, by GGML type id.
    matmul: weights::ByType,
    get_row: Kernel,
    get_rows: Kernel,
    rmsnorm: Kernel,
    add: Kernel,
    silu_mul: Kernel,
    kv_store: Kernel,
    copy: Kernel,
    attention: Kernel,
    attention_rows: Kernel,
    conv: Kernel,
    delta: Kernel,
    split: Kernel,
    rope: Kernel,
    sigmoid_mul: Kernel,
}

/// Surface indices, in [`Qwen35::surfaces`] order.
pub(super) mod s {
    pub(super) const TOKEN: usize = 0;
    pub(super) const X: usize = 1;
    pub(super) const H: usize = 2;
    pub(super) const TMP: usize = 3;
    pub(super) const QKV: usize = 4;
    pub(super) const CONV: usize = 5;
    pub(super) const Z: usize = 6;
    pub(super) const BETA: usize = 7;
    pub(super) const ALPHA: usize = 8;
    pub(super) const DELTA: usize = 9;
    pub(super) const NORMED: usize = 10;
    pub(super) const GATED: usize = 11;
    pub(super) const QG: usize = 12;
    pub(super) const Q: usize = 13;
    pub(super) const GATE: usize = 14;
    pub(super) const K: usize = 15;
    pub(super) const V: usize = 16;
    pub(super) const QN: usize = 17;
    pub(super) const KN: usize = 18;
    pub(super) const ATT: usize = 19;
    pub(super) const ATT_GATED: usize = 20;
    pub(super) const SCORES: usize = 21;
    pub(super) const FFN_GATE: usize = 22;
    pub(super) const UP: usize = 23;
    pub(super) const ACT: usize = 24;
    pub(super) const K_CACHE: usize = 25;
    pub(super) const V_CACHE: usize = 26;
    pub(super) const CONV_STATE: usize = 27;
    pub(super) const RECURRENT_STATE: usize = 28;
    pub(super) const LOGITS: usize = 29;
    pub(super) const ROPE: usize = 30;
    pub(super) const COUNT: usize = 31;
}

/// A `qwen35` model on a device, with a KV cache of `context` positions for its full-attention
/// layers and the sequence state of its DeltaNet layers.
#[derive(Debug)]
pub struct Qwen35 {
    params: Qwen35Params,
    context: u32,
    kernels: Kernels,
    embedding: Weight,
    output: Weight,
    output_norm: Weight,
    layers: Vec<Layer>,
    surfaces: Vec<Surface>,
    /// The prefill pass's surfaces (not part of the step's state: a decode step reads none).
    prefill_surfaces: Vec<Surface>,
    token: u32,
}

impl Qwen35 {
    /// Uploads the model's weights to `device`, loads the kernels and allocates the activations,
    /// a KV cache of `context` positions and the sequence state (zeroed).
    ///
    /// # Errors
    /// [`LoadError::Model`] for a file that is not a `qwen35` model the kernels run (see
    /// [`Qwen35Params::from_gguf`]; every weight is checked finite as it is uploaded),
    /// [`LoadError::Workload`] for the context asked for or the device.
    pub fn load_model(device: &mut dyn Device, file: &Gguf, context: u32) -> Result<Self, LoadError> {
        let params = Qwen35Params::from_gguf(file)?;
        if context == 0 || context > params.context_train {
            return Err(LoadError::Workload(WorkloadError::Init(format!(
                "context {context} is outside 1..={} (qwen35.context_length)",
                params.context_train
            ))));
        }
        let upload = |device: &mut dyn Device, name: &str| weights::upload(device, file, name);
        let embedding = upload(device, "token_embd.weight")?;
        let output = if params.tied_output { embedding } else { upload(device, "output.weight")? };
        let output_norm = upload(device, "output_norm.weight")?;
        let mut layers = Vec::new();
        for l in 0..params.layers {
            let mut w = |part: &str| upload(device, &format!("blk.{l}.{part}"));
            let attn_norm = w("attn_norm.weight")?;
            let block = if params.is_recurrent(l) {
                Block::Delta(Delta {
                    qkv: w("attn_qkv.weight")?,
                    gate: w("attn_gate.weight")?,
                    beta: w("ssm_beta.weight")?,
                    alpha: w("ssm_alpha.weight")?,
                    conv: w("ssm_conv1d.weight")?,
                    dt_bias: w("ssm_dt.bias")?,
                    ssm_a: w("ssm_a")?,
                    norm: w("ssm_norm.weight")?,
                    out: w("ssm_out.weight")?,
                    index: params.recurrent_before(l),
                })
            } else {
                Block::Attention(Attention {
                    q: w("attn_q.weight")?,
                    k: w("attn_k.weight")?,
                    v: w("attn_v.weight")?,
                    q_norm: w("attn_q_norm.weight")?,
                    k_norm: w("attn_k_norm.weight")?,
                    out: w("attn_output.weight")?,
                    index: l - params.recurrent_before(l),
                })
            };
            layers.push(Layer {
                attn_norm,
                block,
                post_norm: w("post_attention_norm.weight")?,
                ffn_gate: w("ffn_gate.weight")?,
                ffn_up: w("ffn_up.weight")?,
                ffn_down: w("ffn_down.weight")?,
            });
        }
        let mut matrix_types: Vec<GgmlType> =
            layers.iter().flat_map(Layer::matrices).chain([output]).map(|w| w.ty).collect();
        matrix_types.sort_unstable_by_key(|t| t.id());
        matrix_types.dedup();
        let kernels = load_kernels(device, &matrix_types, embedding.ty)?;
        let surfaces = allocate_surfaces(device, &params, context)?;
        surfaces[s::ROPE].fill(device, &f32_bytes(&params::rope_table(&params, context)))?;
        let prefill_surfaces = prefill::allocate_surfaces(device, &params, context)?;
        Ok(Self {
            params,
            context,
            kernels,
            embedding,
            output,
            output_norm,
            layers,
            surfaces,
            prefill_surfaces,
            token: 0,
        })
    }

    /// The model's hyperparameters.
    #[must_use]
    pub const fn params(&self) -> &Qwen35Params {
        &self.params
    }

    pub(super) fn va(&self, surface: usize) -> u64 {
        self.surfaces[surface].va
    }

    /// `y[t] = w · x[t]` for `n` rows (`n = 1`: the decode matvec, else the batched product,
    /// whose rows are the matvec's bits).
    pub(super) fn matmul(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (y, w, x): (u64, Weight, u64),
        (rows, cols, n): (u32, u32, u32),
    ) -> Result<(), WorkloadError> {
        if n == 1 {
            weights::matvec(device, funnel, &self.kernels.matvec, (y, w, x), (rows, cols))
        } else {
            weights::matmul(device, funnel, &self.kernels.matmul, (y, w, x), (rows, cols, n))
        }
    }

    /// RMSNorm of `rows` rows of `cols` values (one work-group per row).
    pub(super) fn rmsnorm(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (out, x): (u64, u64),
        (rows, cols): (u32, u32),
        weight: Weight,
    ) -> Result<(), WorkloadError> {
        ops::rmsnorm(device, funnel, &self.kernels.rmsnorm, (out, x), (rows, cols), weight.tensor(), self.params.eps)
    }

    /// `x += delta` over `rows` hidden vectors.
    pub(super) fn residual(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (x, delta): (u64, u64),
        rows: u32,
    ) -> Result<(), WorkloadError> {
        ops::residual(device, funnel, &self.kernels.add, (x, delta), self.params.dim.saturating_mul(rows))
    }

    /// The convolution with SiLU of `n` rows of `qkv` into `conv`, on the DeltaNet layer
    /// `index`'s block of the convolution state.
    pub(super) fn convolve(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (conv, qkv): (u64, u64),
        delta: &Delta,
        n: u32,
    ) -> Result<(), WorkloadError> {
        let p = self.params;
        let (channels, history) = (p.conv_dim(), p.conv_kernel - 1);
        let block = 4 * u64::from(channels) * u64::from(history);
        let state = self.va(s::CONV_STATE) + u64::from(delta.index) * block;
        let rows = 4 * u64::from(channels) * u64::from(n);
        let args = [
            ArgValue::Pointer(conv),
            ArgValue::Pointer(state),
            ArgValue::Pointer(qkv),
            ArgValue::Pointer(delta.conv.va),
            ArgValue::U32(channels),
            ArgValue::U32(history),
            ArgValue::U32(n),
        ];
        let uses = [
            Use::write(conv, rows),
            Use::read_write(state, block),
            Use::read(qkv, rows),
            Use::read(delta.conv.va, delta.conv.bytes),
        ];
        funnel.launch(device, &Launch::linear(&self.kernels.conv, &args, channels, LINEAR_BLOCK, &uses))?;
        Ok(())
    }

    /// The gated delta rule over `n` rows of the convolution's output `conv` (with the `alpha`
    /// and `beta` projections' rows) into `out`, on the DeltaNet layer's block of the recurrent
    /// state.
    pub(super) fn delta_rule(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (out, conv, alpha, beta): (u64, u64, u64, u64),
        delta: &Delta,
        n: u32,
    ) -> Result<(), WorkloadError> {
        let p = self.params;
        let (v_heads, d) = (u64::from(p.v_heads), u64::from(p.state));
        let block = 4 * v_heads * d * d;
        let state = self.va(s::RECURRENT_STATE) + u64::from(delta.index) * block;
        let n64 = u64::from(n);
        let args = [
            ArgValue::Pointer(out),
            ArgValue::Pointer(state),
            ArgValue::Pointer(conv),
            ArgValue::Pointer(alpha),
            ArgValue::Pointer(beta),
            ArgValue::Pointer(delta.dt_bias.va),
            ArgValue::Pointer(delta.ssm_a.va),
            ArgValue::U32(p.v_heads),
            ArgValue::U32(p.k_heads),
            ArgValue::U32(p.state),
            ArgValue::U32(n),
            ArgValue::F32(p.eps),
            ArgValue::F32(p.delta_scale),
        ];
        let uses = [
            Use::write(out, 4 * n64 * v_heads * d),
            Use::read_write(state, block),
            Use::read(conv, 4 * n64 * u64::from(p.conv_dim())),
            Use::read(alpha, 4 * n64 * v_heads),
            Use::read(beta, 4 * n64 * v_heads),
            Use::read(delta.dt_bias.va, delta.dt_bias.bytes),
            Use::read(delta.ssm_a.va, delta.ssm_a.bytes),
        ];
        let grid = p.value_dim();
        funnel.launch(device, &Launch::linear(&self.kernels.delta, &args, grid, LINEAR_BLOCK, &uses))?;
        Ok(())
    }

    /// Splits `n` rows of the query projection `qg` (per head, the query then the gate) into
    /// `q` and `gate`.
    pub(super) fn split(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (q, gate, qg): (u64, u64, u64),
        n: u32,
    ) -> Result<(), WorkloadError> {
        let p = self.params;
        let rows = p.heads * n;
        let bytes = 4 * u64::from(rows) * u64::from(p.head_dim);
        let args = [
            ArgValue::Pointer(q),
            ArgValue::Pointer(gate),
            ArgValue::Pointer(qg),
            ArgValue::U32(p.head_dim),
            ArgValue::U32(rows),
        ];
        let uses = [Use::write(q, bytes), Use::write(gate, bytes), Use::read(qg, 2 * bytes)];
        funnel.launch(device, &Launch::linear(&self.kernels.split, &args, rows * p.head_dim, LINEAR_BLOCK, &uses))?;
        Ok(())
    }

    /// Partial rotary embedding in place on `n` rows of `heads` heads at positions
    /// `pos0..pos0 + n`; `declared` names the position argument when it follows the decode
    /// position.
    pub(super) fn rope(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (x, heads): (u64, u32),
        (pos0, n): (u32, u32),
        declared: Option<&str>,
    ) -> Result<(), WorkloadError> {
        let p = self.params;
        let (table, table_bytes) = (self.va(s::ROPE), self.surfaces[s::ROPE].bytes);
        let args = [
            ArgValue::Pointer(x),
            ArgValue::Pointer(table),
            ArgValue::U32(pos0),
            ArgValue::U32(heads),
            ArgValue::U32(p.head_dim),
            ArgValue::U32(p.rope_dims),
            ArgValue::U32(n),
        ];
        let uses = [
            Use::read_write(x, 4 * u64::from(n) * u64::from(heads) * u64::from(p.head_dim)),
            Use::read(table, table_bytes),
        ];
        let pairs = n * heads * (p.rope_dims / 2);
        let launch = Launch::linear(&self.kernels.rope, &args, pairs, LINEAR_BLOCK, &uses);
        match declared {
            Some(name) => {
                let declared = [DeclaredArg { name, arg: 2, rule: Rule::Offset { addend: 0 } }];
                funnel.launch(device, &launch.declaring(&declared))?;
            }
            None => funnel.launch(device, &launch)?,
        }
        Ok(())
    }

    fn embed(&self, device: &mut dyn Device, funnel: &mut Funnel) -> Result<(), WorkloadError> {
        let d = self.params.dim;
        let (x, token) = (self.va(s::X), self.va(s::TOKEN));
        let e = self.embedding;
        let args = [
            ArgValue::Pointer(x),
            ArgValue::Pointer(e.va),
            ArgValue::Pointer(token),
            ArgValue::U32(d),
            ArgValue::U32(self.params.vocab),
        ];
        let uses = [Use::write(x, 4 * u64::from(d)), Use::read(e.va, e.bytes), Use::read(token, 4)];
        funnel.launch(device, &Launch::linear(&self.kernels.get_row, &args, d, LINEAR_BLOCK, &uses))?;
        Ok(())
    }

    /// The DeltaNet block of the step: `h` in, its output in `tmp`.
    fn delta_block(&self, device: &mut dyn Device, funnel: &mut Funnel, delta: &Delta) -> Result<(), WorkloadError> {
        let p = self.params;
        let (d, vd) = (p.dim, p.value_dim());
        let [h, tmp, qkv, conv, z, beta, alpha, out, normed, gated] =
            [s::H, s::TMP, s::QKV, s::CONV, s::Z, s::BETA, s::ALPHA, s::DELTA, s::NORMED, s::GATED].map(|i| self.va(i));
        self.matmul(device, funnel, (qkv, delta.qkv, h), (p.conv_dim(), d, 1))?;
        self.matmul(device, funnel, (z, delta.gate, h), (vd, d, 1))?;
        self.matmul(device, funnel, (beta, delta.beta, h), (p.v_heads, d, 1))?;
        self.matmul(device, funnel, (alpha, delta.alpha, h), (p.v_heads, d, 1))?;
        self.convolve(device, funnel, (conv, qkv), delta, 1)?;
        self.delta_rule(device, funnel, (out, conv, alpha, beta), delta, 1)?;
        self.rmsnorm(device, funnel, (normed, out), (p.v_heads, p.state), delta.norm)?;
        ops::elementwise(device, funnel, &self.kernels.silu_mul, (gated, z, normed), vd)?;
        self.matmul(device, funnel, (tmp, delta.out, gated), (d, vd, 1))
    }

    /// The full-attention block of the step at `position`: `h` in, its output in `tmp`.
    fn attention_block(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (attention, layer): (&Attention, u32),
        position: u32,
    ) -> Result<(), WorkloadError> {
        let p = self.params;
        let (d, qd, kv, hd) = (p.dim, p.q_dim(), p.kv_dim(), p.head_dim);
        let [h, tmp, qg, q, gate, k, v, qn, kn, att, att_gated, scores] =
            [s::H, s::TMP, s::QG, s::Q, s::GATE, s::K, s::V, s::QN, s::KN, s::ATT, s::ATT_GATED, s::SCORES]
                .map(|i| self.va(i));
        let layer_bytes = u64::from(self.context) * u64::from(kv) * 4;
        let k_cache = self.va(s::K_CACHE) + u64::from(attention.index) * layer_bytes;
        let v_cache = self.va(s::V_CACHE) + u64::from(attention.index) * layer_bytes;

        self.matmul(device, funnel, (qg, attention.q, h), (2 * qd, d, 1))?;
        self.matmul(device, funnel, (k, attention.k, h), (kv, d, 1))?;
        self.matmul(device, funnel, (v, attention.v, h), (kv, d, 1))?;
        self.split(device, funnel, (q, gate, qg), 1)?;
        self.rmsnorm(device, funnel, (qn, q), (p.heads, hd), attention.q_norm)?;
        self.rmsnorm(device, funnel, (kn, k), (p.kv_heads, hd), attention.k_norm)?;
        self.rope(device, funnel, (qn, p.heads), (position, 1), Some(&format!("layer{layer}.rope_q.pos0")))?;
        self.rope(device, funnel, (kn, p.kv_heads), (position, 1), Some(&format!("layer{layer}.rope_k.pos0")))?;
        for (cache, src, which) in [(k_cache, kn, "k"), (v_cache, v, "v")] {
            let args = [ArgValue::Pointer(cache), ArgValue::Pointer(src), ArgValue::U32(position), ArgValue::U32(kv)];
            let uses = [Use::write(cache, layer_bytes), Use::read(src, 4 * u64::from(kv))];
            let name = format!("layer{layer}.kv_store_{which}.position");
            let declared = [DeclaredArg { name: &name, arg: 2, rule: Rule::Offset { addend: 0 } }];
            let launch = Launch::linear(&self.kernels.kv_store, &args, kv, LINEAR_BLOCK, &uses).declaring(&declared);
            funnel.launch(device, &launch)?;
        }
        let args = [
            ArgValue::Pointer(att),
            ArgValue::Pointer(qn),
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(v_cache),
            ArgValue::Pointer(scores),
            ArgValue::U32(0),
            ArgValue::U32(position + 1),
            ArgValue::U32(p.heads),
            ArgValue::U32(p.kv_heads),
            ArgValue::U32(hd),
            ArgValue::U32(self.context),
            ArgValue::F32(p.attention_scale),
        ];
        let uses = [
            Use::write(att, 4 * u64::from(qd)),
            Use::read(qn, 4 * u64::from(qd)),
            Use::read(k_cache, layer_bytes),
            Use::read(v_cache, layer_bytes),
            Use::read_write(scores, self.surfaces[s::SCORES].bytes),
        ];
        let n_name = format!("layer{layer}.attention.n");
        let declared = [DeclaredArg { name: &n_name, arg: 6, rule: Rule::Offset { addend: 1 } }];
        let grid = p.heads * u32::from(ATTENTION_BLOCK);
        let launch = Launch::linear(&self.kernels.attention, &args, grid, ATTENTION_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;
        ops::elementwise(device, funnel, &self.kernels.sigmoid_mul, (att_gated, gate, att), qd)?;
        self.matmul(device, funnel, (tmp, attention.out, att_gated), (d, qd, 1))
    }

    /// The FFN of the step or of a pass of `n` rows: RMSNorm of `x` by `post_norm` into `h`,
    /// SwiGLU into `tmp`, `x += tmp`.
    pub(super) fn ffn(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        layer: &Layer,
        (x, h, tmp, gate, up, act): (u64, u64, u64, u64, u64, u64),
        n: u32,
    ) -> Result<(), WorkloadError> {
        let (d, f) = (self.params.dim, self.params.ffn);
        self.rmsnorm(device, funnel, (h, x), (n, d), layer.post_norm)?;
        self.matmul(device, funnel, (gate, layer.ffn_gate, h), (f, d, n))?;
        self.matmul(device, funnel, (up, layer.ffn_up, h), (f, d, n))?;
        ops::elementwise(device, funnel, &self.kernels.silu_mul, (act, gate, up), f * n)?;
        self.matmul(device, funnel, (tmp, layer.ffn_down, act), (d, f, n))?;
        self.residual(device, funnel, (x, tmp), n)
    }
}

impl Layer {
    /// The layer's matrices (what the matvecs and products read).
    fn matrices(&self) -> Vec<Weight> {
        let mut out = match self.block {
            Block::Delta(w) => vec![w.qkv, w.gate, w.beta, w.alpha, w.out],
            Block::Attention(w) => vec![w.q, w.k, w.v, w.out],
        };
        out.extend([self.ffn_gate, self.ffn_up, self.ffn_down]);
        out
    }
}

impl Workload for Qwen35 {
    fn name(&self) -> &str {
        "qwen35"
    }

    fn prepare_step(
        &mut self,
        device: &mut dyn Device,
        _funnel: &mut Funnel,
        position: u32,
    ) -> Result<(), WorkloadError> {
        check_position(position, self.max_position())?;
        self.surfaces[s::TOKEN].fill(device, &self.token.to_le_bytes())
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        check_position(position, self.max_position())?;
        self.embed(device, funnel)?;
        let d = self.params.dim;
        let [x, h, tmp, gate, up, act] = [s::X, s::H, s::TMP, s::FFN_GATE, s::UP, s::ACT].map(|i| self.va(i));
        for (index, layer) in self.layers.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            self.rmsnorm(device, funnel, (h, x), (1, d), layer.attn_norm)?;
            match &layer.block {
                Block::Delta(delta) => self.delta_block(device, funnel, delta)?,
                Block::Attention(attention) => self.attention_block(device, funnel, (attention, index), position)?,
            }
            self.residual(device, funnel, (x, tmp), 1)?;
            self.ffn(device, funnel, layer, (x, h, tmp, gate, up, act), 1)?;
        }
        self.rmsnorm(device, funnel, (h, x), (1, d), self.output_norm)?;
        self.matmul(device, funnel, (self.va(s::LOGITS), self.output, h), (self.params.vocab, d, 1))
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn max_position(&self) -> u32 {
        self.context - 1
    }

    fn prefill_chunk(&self) -> u32 {
        PREFILL_CHUNK
    }

    /// The prompt tokens `tokens` as one pass: the embedding rows, every layer over all of them
    /// (the K and V rows of positions `first..first + n` into the cache, the DeltaNet layers'
    /// state advanced through every token in order), and the logits of the last token, each row
    /// the bits of the decode step's.
    fn prefill(
        &mut self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        first: u32,
        tokens: &[u32],
    ) -> Result<(), WorkloadError> {
        self.prefill_pass(device, funnel, first, tokens)
    }
}

impl super::language::LanguageModel for Qwen35 {
    fn architecture(&self) -> &'static str {
        "qwen35"
    }

    fn vocab(&self) -> u32 {
        self.params.vocab
    }

    fn context(&self) -> u32 {
        self.context
    }

    fn set_token(&mut self, token: u32) -> Result<(), WorkloadError> {
        ops::check_token(token, self.params.vocab)?;
        self.token = token;
        Ok(())
    }

    fn logits(&self, device: &mut dyn Device) -> Result<Vec<f32>, WorkloadError> {
        ops::read_f32s(device, &self.surfaces[s::LOGITS])
    }
}

fn load_kernels(
    device: &mut dyn Device,
    matrix_types: &[GgmlType],
    embedding: GgmlType,
) -> Result<Kernels, WorkloadError> {
    let one = weights::load_kernel;
    let (mut matvec, mut matmul) = (BTreeMap::new(), BTreeMap::new());
    for &ty in matrix_types {
        matvec.insert(ty.id(), weights::load_typed(device, Typed::Matvec, ty)?);
        matmul.insert(ty.id(), weights::load_typed(device, Typed::Matmul, ty)?);
    }
    Ok(Kernels {
        matvec,
        matmul,
        get_row: weights::load_typed(device, Typed::GetRow, embedding)?,
        get_rows: weights::load_typed(device, Typed::GetRows, embedding)?,
        rmsnorm: one(device, "rmsnorm", "rmsnorm")?,
        add: one(device, "elementwise", "add")?,
        silu_mul: one(device, "llama", "silu_mul")?,
        kv_store: one(device, "llama", "kv_store")?,
        copy: one(device, "copy", "copy")?,
        attention: one(device, "gemma", "attention_window")?,
        attention_rows: one(device, "gemma", "attention_window_rows")?,
        conv: one(device, "qwen35", "ssm_conv_silu")?,
        delta: one(device, "qwen35", "gated_delta_net")?,
        split: one(device, "qwen35", "split_halves")?,
        rope: one(device, "qwen35", "rope_partial")?,
        sigmoid_mul: one(device, "qwen35", "sigmoid_mul")?,
    })
}

fn allocate_surfaces(device: &mut dyn Device, p: &Qwen35Params, context: u32) -> Result<Vec<Surface>, WorkloadError> {
    // Every surface holds at least one float, whatever the shape leaves empty (a model without
    // full-attention layers has no KV rows, a kernel of one tap no convolution state).
    let floats = |n: u64| 4 * n.max(1);
    let ctx = u64::from(context);
    let (d, f, kv, qd) = (u64::from(p.dim), u64::from(p.ffn), u64::from(p.kv_dim()), u64::from(p.q_dim()));
    let (conv, vd, vh, st) =
        (u64::from(p.conv_dim()), u64::from(p.value_dim()), u64::from(p.v_heads), u64::from(p.state));
    let (deltas, attentions) = (u64::from(p.recurrent_layers()), u64::from(p.attention_layers()));
    let cache = floats(attentions * ctx * kv);
    let shapes: [(&str, u64); s::COUNT] = [
        ("token", 4),
        ("x", floats(d)),
        ("h", floats(d)),
        ("tmp", floats(d)),
        ("qkv", floats(conv)),
        ("conv", floats(conv)),
        ("z", floats(vd)),
        ("beta", floats(vh)),
        ("alpha", floats(vh)),
        ("delta", floats(vd)),
        ("normed", floats(vd)),
        ("gated", floats(vd)),
        ("qg", floats(2 * qd)),
        ("q", floats(qd)),
        ("gate", floats(qd)),
        ("k", floats(kv)),
        ("v", floats(kv)),
        ("q_normed", floats(qd)),
        ("k_normed", floats(kv)),
        ("att", floats(qd)),
        ("att_gated", floats(qd)),
        ("scores", floats(u64::from(p.heads) * ctx)),
        ("ffn_gate", floats(f)),
        ("up", floats(f)),
        ("act", floats(f)),
        ("k_cache", cache),
        ("v_cache", cache),
        ("conv_state", floats(deltas * conv * u64::from(p.conv_kernel - 1))),
        ("recurrent_state", floats(deltas * vh * st * st)),
        ("logits", floats(u64::from(p.vocab))),
        ("rope", floats(ctx * u64::from(p.rope_dims))),
    ];
    shapes
        .iter()
        .enumerate()
        .map(|(i, &(name, bytes))| {
            let surface = Surface::allocate(device, name, bytes, GUARD_BYTES)?;
            Ok(match i {
                s::CONV_STATE => surface.holding(StateKind::Convolution),
                s::RECURRENT_STATE => surface.holding(StateKind::Recurrent),
                _ => surface,
            })
        })
        .collect()
}
