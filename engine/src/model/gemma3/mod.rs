//! The `gemma3` decode step as launches through the [`Funnel`]: the token's embedding row scaled
//! by `sqrt(dim)`, then per layer RMSNorm → Q/K/V matvecs → per-head RMSNorm of Q and K → NEOX
//! RoPE (Q in place, K into the cache; base 10,000 on sliding layers, the file's base on full
//! ones) → V into the cache → attention over the layer's window (the last `window` positions on
//! sliding layers, every position on full ones) → output matvec → RMSNorm → residual add →
//! RMSNorm → gate/up matvecs → GELU(gate)·up → down matvec → RMSNorm → residual add; the final
//! RMSNorm and the logits matvec (the token embedding, tied). The facts behind each step are in
//! [`params`].
//!
//! Every matrix is launched with the matvec of its own GGUF type (a file mixes Q5_0, Q4_K, Q6_K
//! and Q8_0). The token id is written to device memory by [`Workload::prepare_step`]; everything
//! that follows the position is a `u32` kernarg declared at its launch: `layer{L}.rope.position`,
//! `layer{L}.rope_store.position`, `layer{L}.kv_store.position`, `layer{L}.attention.n` (the
//! position plus one) and, on sliding layers, `layer{L}.attention.first`, the window's first key
//! `max(0, position + 1 - window)`. That key is 0 through position `window - 1`: no early
//! recording shows it moving, only its declaration keeps it bound.
//!
//! A prompt runs as batched passes of up to [`PREFILL_CHUNK`] tokens ([`Workload::prefill`]):
//! the same sequence over all the pass's tokens at once, with the batched kernels (each type's
//! matrix product, the embedding rows, NEOX RoPE over rows, causal sliding-window attention over
//! rows) and the element-wise kernels over whole rows. Each batched kernel computes row `t` as
//! its decode kernel computes token `t`, so a batched prefill leaves the KV cache and the logits
//! bit for bit as the same prompt run step by step does.

pub mod params;
mod prefill;

use std::collections::BTreeMap;

use gguf::{GgmlType, Gguf};
use hal::Device;
use kernarg_abi::layout::ArgValue;

pub use params::Gemma3Params;

use super::llama::{LoadError, f32_bytes, rope_table_of};
use super::ops::{self, LINEAR_BLOCK};
use super::weights::{self, Typed, Weight};
use crate::funnel::{DeclaredArg, Funnel, Kernel, Launch, Rule, Use};
use crate::workload::{GUARD_BYTES, Surface, Workload, WorkloadError, check_position};

/// Work-group size of attention (one work-group per query head).
const ATTENTION_BLOCK: u16 = 64;

/// The embedding types a row-gather kernel takes.
pub const GET_ROW_TYPES: &[GgmlType] = &[
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2K,
    GgmlType::Q3K,
    GgmlType::Q4K,
    GgmlType::Q5K,
    GgmlType::Q6K,
    GgmlType::F16,
    GgmlType::Bf16,
];

/// Prompt tokens per batched prefill pass ([`Workload::prefill_chunk`]).
pub const PREFILL_CHUNK: u32 = 128;

/// The weights of one layer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Layer {
    attn_norm: Weight,
    q: Weight,
    k: Weight,
    v: Weight,
    q_norm: Weight,
    k_norm: Weight,
    out: Weight,
    post_attn_norm: Weight,
    ffn_norm: Weight,
    gate: Weight,
    up: Weight,
    down: Weight,
    post_ffn_norm: Weight,
}

/// The kernels the step launches.
#[derive(Debug)]
pub(super) struct Kernels {
    /// One matvec per matrix type the file uses, by GGML type id.
    matvec: weights::ByType,
    get_row: Kernel,
    scale: Kernel,
    rmsnorm: Kernel,
    add: Kernel,
    rope: Kernel,
    rope_store: Kernel,
    kv_store: Kernel,
    attention: Kernel,
    gelu_mul: Kernel,
    /// One batched product per matrix type the file uses, by GGML type id.
    matmul: weights::ByType,
    get_rows: Kernel,
    rope_rows: Kernel,
    attention_rows: Kernel,
    copy: Kernel,
}

/// Surface indices, in [`Gemma3::surfaces`] order.
pub(super) mod s {
    pub(super) const TOKEN: usize = 0;
    pub(super) const X: usize = 1;
    pub(super) const H: usize = 2;
    pub(super) const Q: usize = 3;
    pub(super) const K: usize = 4;
    pub(super) const V: usize = 5;
    pub(super) const QN: usize = 6;
    pub(super) const KN: usize = 7;
    pub(super) const ATT: usize = 8;
    pub(super) const TMP: usize = 9;
    pub(super) const GATE: usize = 10;
    pub(super) const UP: usize = 11;
    pub(super) const ACT: usize = 12;
    pub(super) const SCORES: usize = 13;
    pub(super) const K_CACHE: usize = 14;
    pub(super) const V_CACHE: usize = 15;
    pub(super) const LOGITS: usize = 16;
    pub(super) const ROPE_LOCAL: usize = 17;
    pub(super) const ROPE_GLOBAL: usize = 18;
    pub(super) const COUNT: usize = 19;
}

/// A `gemma3` model on a device, with a KV cache of `context` positions.
#[derive(Debug)]
pub struct Gemma3 {
    params: Gemma3Params,
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

impl Gemma3 {
    /// Uploads the model's weights to `device`, loads the kernels and allocates the activations
    /// and a KV cache of `context` positions.
    ///
    /// # Errors
    /// [`LoadError::Model`] for a file that is not a `gemma3` model the kernels run (see
    /// [`Gemma3Params::from_gguf`]; every weight is checked finite as it is uploaded),
    /// [`LoadError::Workload`] for the context asked for or the device.
    pub fn load_model(device: &mut dyn Device, file: &Gguf, context: u32) -> Result<Self, LoadError> {
        let params = Gemma3Params::from_gguf(file)?;
        if context == 0 || context > params.context_train {
            return Err(LoadError::Workload(WorkloadError::Init(format!(
                "context {context} is outside 1..={} (gemma3.context_length)",
                params.context_train
            ))));
        }
        let upload = |device: &mut dyn Device, name: &str| weights::upload(device, file, name);
        let embedding = upload(device, "token_embd.weight")?;
        let output = if params.tied_output { embedding } else { upload(device, "output.weight")? };
        let output_norm = upload(device, "output_norm.weight")?;
        let mut layers = Vec::new();
        for l in 0..params.layers {
            let mut w = |part: &str| upload(device, &format!("blk.{l}.{part}.weight"));
            layers.push(Layer {
                attn_norm: w("attn_norm")?,
                q: w("attn_q")?,
                k: w("attn_k")?,
                v: w("attn_v")?,
                q_norm: w("attn_q_norm")?,
                k_norm: w("attn_k_norm")?,
                out: w("attn_output")?,
                post_attn_norm: w("post_attention_norm")?,
                ffn_norm: w("ffn_norm")?,
                gate: w("ffn_gate")?,
                up: w("ffn_up")?,
                down: w("ffn_down")?,
                post_ffn_norm: w("post_ffw_norm")?,
            });
        }
        let mut matrix_types: Vec<GgmlType> = layers
            .iter()
            .flat_map(|l| [l.q, l.k, l.v, l.out, l.gate, l.up, l.down])
            .chain([output])
            .map(|w| w.ty)
            .collect();
        matrix_types.sort_unstable_by_key(|t| t.id());
        matrix_types.dedup();
        let kernels = load_kernels(device, &matrix_types, embedding.ty)?;
        let surfaces = allocate_surfaces(device, &params, context)?;
        let table = |base| f32_bytes(&rope_table_of(base, params.head_dim, context));
        surfaces[s::ROPE_LOCAL].fill(device, &table(params.rope_base_local))?;
        surfaces[s::ROPE_GLOBAL].fill(device, &table(params.rope_base_global))?;
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
    pub const fn params(&self) -> &Gemma3Params {
        &self.params
    }

    pub(super) fn va(&self, surface: usize) -> u64 {
        self.surfaces[surface].va
    }

    pub(super) fn matvec(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        operands: (u64, Weight, u64),
        dims: (u32, u32),
    ) -> Result<(), WorkloadError> {
        weights::matvec(device, funnel, &self.kernels.matvec, operands, dims)
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
        let args =
            [ArgValue::Pointer(x), ArgValue::Pointer(x), ArgValue::F32(self.params.embedding_scale), ArgValue::U32(d)];
        let uses = [Use::read_write(x, 4 * u64::from(d))];
        funnel.launch(device, &Launch::linear(&self.kernels.scale, &args, d, LINEAR_BLOCK, &uses))?;
        Ok(())
    }

    fn attention_block(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        layer: &Layer,
        index: u32,
        position: u32,
    ) -> Result<(), WorkloadError> {
        let p = self.params;
        let (d, qd, kv, hd) = (p.dim, p.q_dim(), p.kv_dim(), p.head_dim);
        let [x, h, q, k, v, qn, kn, att, tmp, scores] =
            [s::X, s::H, s::Q, s::K, s::V, s::QN, s::KN, s::ATT, s::TMP, s::SCORES].map(|i| self.va(i));
        let sliding = p.is_sliding(index);
        let table_surface = if sliding { s::ROPE_LOCAL } else { s::ROPE_GLOBAL };
        let (table, table_bytes) = (self.va(table_surface), self.surfaces[table_surface].bytes);
        let layer_bytes = u64::from(self.context) * u64::from(kv) * 4;
        let k_cache = self.va(s::K_CACHE) + u64::from(index) * layer_bytes;
        let v_cache = self.va(s::V_CACHE) + u64::from(index) * layer_bytes;

        self.rmsnorm(device, funnel, (h, x), (1, d), layer.attn_norm)?;
        self.matvec(device, funnel, (q, layer.q, h), (qd, d))?;
        self.matvec(device, funnel, (k, layer.k, h), (kv, d))?;
        self.matvec(device, funnel, (v, layer.v, h), (kv, d))?;
        self.rmsnorm(device, funnel, (qn, q), (p.heads, hd), layer.q_norm)?;
        self.rmsnorm(device, funnel, (kn, k), (p.kv_heads, hd), layer.k_norm)?;

        let args = [
            ArgValue::Pointer(qn),
            ArgValue::Pointer(table),
            ArgValue::U32(position),
            ArgValue::U32(p.heads),
            ArgValue::U32(hd),
        ];
        let uses = [Use::read_write(qn, 4 * u64::from(qd)), Use::read(table, table_bytes)];
        let name = format!("layer{index}.rope.position");
        let declared = [DeclaredArg { name: &name, arg: 2, rule: Rule::Offset { addend: 0 } }];
        let pairs = qd / 2;
        funnel.launch(
            device,
            &Launch::linear(&self.kernels.rope, &args, pairs, LINEAR_BLOCK, &uses).declaring(&declared),
        )?;

        let args = [
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(kn),
            ArgValue::Pointer(table),
            ArgValue::U32(position),
            ArgValue::U32(p.kv_heads),
            ArgValue::U32(hd),
        ];
        let uses = [Use::write(k_cache, layer_bytes), Use::read(kn, 4 * u64::from(kv)), Use::read(table, table_bytes)];
        let name = format!("layer{index}.rope_store.position");
        let declared = [DeclaredArg { name: &name, arg: 3, rule: Rule::Offset { addend: 0 } }];
        let launch = Launch::linear(&self.kernels.rope_store, &args, kv / 2, LINEAR_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;

        let args = [ArgValue::Pointer(v_cache), ArgValue::Pointer(v), ArgValue::U32(position), ArgValue::U32(kv)];
        let uses = [Use::write(v_cache, layer_bytes), Use::read(v, 4 * u64::from(kv))];
        let name = format!("layer{index}.kv_store.position");
        let declared = [DeclaredArg { name: &name, arg: 2, rule: Rule::Offset { addend: 0 } }];
        funnel.launch(
            device,
            &Launch::linear(&self.kernels.kv_store, &args, kv, LINEAR_BLOCK, &uses).declaring(&declared),
        )?;

        // The window's first key: sliding layers attend max(0, position + 1 - window) ..= position.
        let window = i64::from(p.window);
        let first = if sliding { (position + 1).saturating_sub(p.window) } else { 0 };
        let args = [
            ArgValue::Pointer(att),
            ArgValue::Pointer(qn),
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(v_cache),
            ArgValue::Pointer(scores),
            ArgValue::U32(first),
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
        let (n_name, first_name) = (format!("layer{index}.attention.n"), format!("layer{index}.attention.first"));
        let n_arg = DeclaredArg { name: &n_name, arg: 6, rule: Rule::Offset { addend: 1 } };
        let first_arg = DeclaredArg { name: &first_name, arg: 5, rule: Rule::Clamped { addend: 1 - window } };
        let both = [first_arg, n_arg];
        let declared = if sliding { &both[..] } else { &both[1..] };
        let grid = p.heads * u32::from(ATTENTION_BLOCK);
        let launch = Launch::linear(&self.kernels.attention, &args, grid, ATTENTION_BLOCK, &uses).declaring(declared);
        funnel.launch(device, &launch)?;

        self.matvec(device, funnel, (tmp, layer.out, att), (d, qd))?;
        self.rmsnorm(device, funnel, (h, tmp), (1, d), layer.post_attn_norm)?;
        self.residual(device, funnel, (x, h), 1)
    }

    fn ffn_block(&self, device: &mut dyn Device, funnel: &mut Funnel, layer: &Layer) -> Result<(), WorkloadError> {
        let (d, f) = (self.params.dim, self.params.ffn);
        let [x, h, gate, up, act, tmp] = [s::X, s::H, s::GATE, s::UP, s::ACT, s::TMP].map(|i| self.va(i));
        self.rmsnorm(device, funnel, (h, x), (1, d), layer.ffn_norm)?;
        self.matvec(device, funnel, (gate, layer.gate, h), (f, d))?;
        self.matvec(device, funnel, (up, layer.up, h), (f, d))?;
        ops::elementwise(device, funnel, &self.kernels.gelu_mul, (act, gate, up), f)?;
        self.matvec(device, funnel, (tmp, layer.down, act), (d, f))?;
        self.rmsnorm(device, funnel, (h, tmp), (1, d), layer.post_ffn_norm)?;
        self.residual(device, funnel, (x, h), 1)
    }
}

impl Workload for Gemma3 {
    fn name(&self) -> &str {
        "gemma3"
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
        for (index, layer) in self.layers.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            self.attention_block(device, funnel, layer, index, position)?;
            self.ffn_block(device, funnel, layer)?;
        }
        let (x, h, d) = (self.va(s::X), self.va(s::H), self.params.dim);
        self.rmsnorm(device, funnel, (h, x), (1, d), self.output_norm)?;
        self.matvec(device, funnel, (self.va(s::LOGITS), self.output, h), (self.params.vocab, d))
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
    /// (the K and V rows of positions `first..first + n` into the cache, causal windowed
    /// attention), and the logits of the last token, each row the bits of the decode step's.
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

impl super::language::LanguageModel for Gemma3 {
    fn architecture(&self) -> &'static str {
        "gemma3"
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
        rope_rows: one(device, "gemma", "rope_neox_rows")?,
        attention_rows: one(device, "gemma", "attention_window_rows")?,
        copy: one(device, "copy", "copy")?,
        scale: one(device, "scale", "scale")?,
        rmsnorm: one(device, "rmsnorm", "rmsnorm")?,
        add: one(device, "elementwise", "add")?,
        rope: one(device, "gemma", "rope_neox")?,
        rope_store: one(device, "gemma", "rope_neox_store")?,
        kv_store: one(device, "llama", "kv_store")?,
        attention: one(device, "gemma", "attention_window")?,
        gelu_mul: one(device, "gemma", "gelu_mul")?,
    })
}

fn allocate_surfaces(device: &mut dyn Device, p: &Gemma3Params, context: u32) -> Result<Vec<Surface>, WorkloadError> {
    let floats = |n: u64| 4 * n;
    let (d, f, kv, qd, ctx) =
        (u64::from(p.dim), u64::from(p.ffn), u64::from(p.kv_dim()), u64::from(p.q_dim()), u64::from(context));
    let cache = floats(u64::from(p.layers) * ctx * kv);
    let shapes: [(&str, u64); s::COUNT] = [
        ("token", 4),
        ("x", floats(d)),
        ("h", floats(d)),
        ("q", floats(qd)),
        ("k", floats(kv)),
        ("v", floats(kv)),
        ("q_normed", floats(qd)),
        ("k_normed", floats(kv)),
        ("att", floats(qd)),
        ("tmp", floats(d)),
        ("gate", floats(f)),
        ("up", floats(f)),
        ("act", floats(f)),
        ("scores", floats(u64::from(p.heads) * ctx)),
        ("k_cache", cache),
        ("v_cache", cache),
        ("logits", floats(u64::from(p.vocab))),
        ("rope_local", floats(ctx * u64::from(p.head_dim))),
        ("rope_global", floats(ctx * u64::from(p.head_dim))),
    ];
    shapes.iter().map(|&(name, bytes)| Surface::allocate(device, name, bytes, GUARD_BYTES)).collect()
}
