//! The `lfm2` decode step as launches through the [`Funnel`]: the token's embedding row, then
//! per block RMSNorm (`attn_norm`) → the block's mixer → residual add → RMSNorm (`ffn_norm`) →
//! gate/up matvecs → SiLU(gate)·up → down matvec → residual add; the final RMSNorm
//! (`token_embd_norm`) and the logits matvec (the token embedding, tied). The mixer is
//!
//! - on a **convolution block**: the `in_proj` matvec into `bcx` (`[3][dim]`: B, C, x), then
//!   `shortconv` (module `lfm2`), which per channel forms `B * x`, convolves it with the
//!   previous `l_cache - 1` inputs held in the convolution state and the block's taps, rewrites
//!   the state, and gates the sum by C; then the `out_proj` matvec;
//! - on an **attention block**: Q/K/V matvecs → per-head RMSNorm of Q and K → NEOX RoPE (Q in
//!   place, K into the cache) → V into the cache → grouped-query attention over every cached
//!   position → the output matvec.
//!
//! The facts behind each step are in [`params`].
//!
//! # State
//!
//! The convolution state is one surface, `conv_state`, marked [`StateKind::Convolution`]:
//! `[conv block][channel][l_cache - 1]` f32, the convolution blocks counted in order (block `l`
//! is convolution block `l - attention blocks before it`), each channel's inputs oldest first.
//! A step's `shortconv` launch reads and rewrites its block's rows in place, one work-item per
//! channel shifting its own row by one (race-free, and the same launch at every position: the
//! state layout needs no position-dependent argument). A new sequence starts it from zeros
//! ([`Workload::reset_state`]). The KV cache holds the attention blocks only:
//! `[attention block][position][kv_head][head_dim]` f32.
//!
//! Everything that follows the position is a `u32` kernarg declared at its launch, on the
//! attention blocks only: `layer{L}.rope.position`, `layer{L}.rope_store.position`,
//! `layer{L}.kv_store.position` and `layer{L}.attention.n` (the position plus one).
//!
//! A prompt runs as batched passes of up to [`PREFILL_CHUNK`] tokens ([`Workload::prefill`]):
//! the matrix products, row gathers, RoPE and causal attention over rows, and
//! `shortconv_rows`, whose work-item per channel runs the pass's tokens in order through the
//! state (the recurrence is sequential in the tokens and parallel in the channels). Each batched
//! kernel computes row `t` as its decode kernel computes token `t`, so a batched prefill leaves
//! the logits, the KV cache and the convolution state bit for bit as the same prompt run step by
//! step does.

pub mod params;
mod prefill;

use std::collections::BTreeMap;

use gguf::{GgmlType, Gguf};
use hal::Device;
use kernarg_abi::layout::ArgValue;

pub use params::Lfm2Params;

use super::llama::{LoadError, f32_bytes, rope_table_of};
use super::ops::{self, LINEAR_BLOCK};
use super::weights::{self, Typed, Weight};
use crate::funnel::{DeclaredArg, Funnel, Kernel, Launch, Rule, Use};
use crate::workload::{GUARD_BYTES, StateKind, Surface, Workload, WorkloadError, check_position};

/// Work-group size of attention (one work-group per query head).
const ATTENTION_BLOCK: u16 = 64;

/// Prompt tokens per batched prefill pass ([`Workload::prefill_chunk`]).
pub const PREFILL_CHUNK: u32 = 128;

/// A block's sequence mixer and its weights.
#[derive(Clone, Copy, Debug)]
pub(super) enum Mixer {
    /// An attention block, the `index`-th of the model's (its rows of the KV cache).
    Attention { q: Weight, k: Weight, v: Weight, q_norm: Weight, k_norm: Weight, out: Weight, index: u32 },
    /// A convolution block, the `index`-th of the model's (its rows of the convolution state).
    Conv { in_proj: Weight, conv: Weight, out_proj: Weight, index: u32 },
}

/// The weights of one block.
#[derive(Clone, Copy, Debug)]
pub(super) struct Layer {
    attn_norm: Weight,
    mixer: Mixer,
    ffn_norm: Weight,
    gate: Weight,
    up: Weight,
    down: Weight,
}

/// The kernels the step launches.
#[derive(Debug)]
pub(super) struct Kernels {
    /// One matvec per matrix type the file uses, by GGML type id.
    matvec: weights::ByType,
    get_row: Kernel,
    rmsnorm: Kernel,
    add: Kernel,
    rope: Kernel,
    rope_store: Kernel,
    kv_store: Kernel,
    attention: Kernel,
    silu_mul: Kernel,
    shortconv: Kernel,
    /// One batched product per matrix type the file uses, by GGML type id.
    matmul: weights::ByType,
    get_rows: Kernel,
    rope_rows: Kernel,
    attention_rows: Kernel,
    shortconv_rows: Kernel,
    copy: Kernel,
}

/// Surface indices, in [`Lfm2::surfaces`] order.
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
    pub(super) const BCX: usize = 13;
    pub(super) const CONV: usize = 14;
    pub(super) const SCORES: usize = 15;
    pub(super) const K_CACHE: usize = 16;
    pub(super) const V_CACHE: usize = 17;
    pub(super) const CONV_STATE: usize = 18;
    pub(super) const LOGITS: usize = 19;
    pub(super) const ROPE: usize = 20;
    pub(super) const COUNT: usize = 21;
}

/// The name of the convolution-state surface.
pub const CONV_STATE: &str = "conv_state";

/// An `lfm2` model on a device, with a KV cache of `context` positions for its attention blocks
/// and the convolution state of its convolution blocks.
#[derive(Debug)]
pub struct Lfm2 {
    params: Lfm2Params,
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

impl Lfm2 {
    /// Uploads the model's weights to `device`, loads the kernels and allocates the activations,
    /// a KV cache of `context` positions and the convolution state (zeros).
    ///
    /// # Errors
    /// [`LoadError::Model`] for a file that is not an `lfm2` model the kernels run (see
    /// [`Lfm2Params::from_gguf`]; every weight is checked finite as it is uploaded),
    /// [`LoadError::Workload`] for the context asked for or the device.
    pub fn load_model(device: &mut dyn Device, file: &Gguf, context: u32) -> Result<Self, LoadError> {
        let params = Lfm2Params::from_gguf(file)?;
        if context == 0 || context > params.context_train {
            return Err(LoadError::Workload(WorkloadError::Init(format!(
                "context {context} is outside 1..={} (lfm2.context_length)",
                params.context_train
            ))));
        }
        let upload = |device: &mut dyn Device, name: &str| weights::upload(device, file, name);
        let embedding = upload(device, "token_embd.weight")?;
        let output = if params.tied_output { embedding } else { upload(device, "output.weight")? };
        let output_norm = upload(device, params::OUTPUT_NORM)?;
        let mut layers = Vec::new();
        for l in 0..params.layers {
            let mut w = |part: &str| upload(device, &format!("blk.{l}.{part}.weight"));
            let attn_norm = w("attn_norm")?;
            let before = params.attention_before(l);
            let mixer = if params.is_attention(l) {
                Mixer::Attention {
                    q: w("attn_q")?,
                    k: w("attn_k")?,
                    v: w("attn_v")?,
                    q_norm: w("attn_q_norm")?,
                    k_norm: w("attn_k_norm")?,
                    out: w("attn_output")?,
                    index: before,
                }
            } else {
                Mixer::Conv {
                    in_proj: w("shortconv.in_proj")?,
                    conv: w("shortconv.conv")?,
                    out_proj: w("shortconv.out_proj")?,
                    index: l - before,
                }
            };
            layers.push(Layer {
                attn_norm,
                mixer,
                ffn_norm: w("ffn_norm")?,
                gate: w("ffn_gate")?,
                up: w("ffn_up")?,
                down: w("ffn_down")?,
            });
        }
        let kernels = load_kernels(device, &matrix_types(&layers, output), embedding.ty)?;
        let surfaces = allocate_surfaces(device, &params, context)?;
        surfaces[s::ROPE].fill(device, &f32_bytes(&rope_table_of(params.rope_base, params.head_dim, context)))?;
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
    pub const fn params(&self) -> &Lfm2Params {
        &self.params
    }

    pub(super) fn va(&self, surface: usize) -> u64 {
        self.surfaces[surface].va
    }

    /// The bytes of one attention block's K (or V) cache, and of one convolution block's state.
    const fn block_bytes(&self) -> (u64, u64) {
        let p = &self.params;
        let kv = self.context as u64 * p.kv_dim() as u64 * 4;
        (kv, p.dim as u64 * p.d_conv() as u64 * 4)
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
        Ok(())
    }

    /// The convolution mixer of block `layer` on `h`, into `tmp`.
    fn conv_mixer(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (in_proj, conv, out_proj): (Weight, Weight, Weight),
        index: u32,
    ) -> Result<(), WorkloadError> {
        let p = self.params;
        let d = p.dim;
        let [h, bcx, y, tmp] = [s::H, s::BCX, s::CONV, s::TMP].map(|i| self.va(i));
        let state_bytes = self.block_bytes().1;
        let state = self.va(s::CONV_STATE) + u64::from(index) * state_bytes;
        self.matvec(device, funnel, (bcx, in_proj, h), (3 * d, d))?;
        let args = [
            ArgValue::Pointer(y),
            ArgValue::Pointer(state),
            ArgValue::Pointer(bcx),
            ArgValue::Pointer(conv.va),
            ArgValue::U32(d),
            ArgValue::U32(p.d_conv()),
        ];
        let uses = [
            Use::write(y, 4 * u64::from(d)),
            Use::read_write(state, state_bytes),
            Use::read(bcx, 12 * u64::from(d)),
            Use::read(conv.va, conv.bytes),
        ];
        funnel.launch(device, &Launch::linear(&self.kernels.shortconv, &args, d, LINEAR_BLOCK, &uses))?;
        self.matvec(device, funnel, (tmp, out_proj, y), (d, d))
    }

    /// The attention mixer of block `block` (the `index`-th attention block) on `h`, into
    /// `tmp`, at `position`.
    fn attention_mixer(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        mixer: &Mixer,
        block: u32,
        position: u32,
    ) -> Result<(), WorkloadError> {
        let Mixer::Attention { q: wq, k: wk, v: wv, q_norm, k_norm, out, index } = *mixer else {
            return Ok(());
        };
        let p = self.params;
        let (d, kv, hd) = (p.dim, p.kv_dim(), p.head_dim);
        let [h, q, k, v, qn, kn, att, tmp, scores] =
            [s::H, s::Q, s::K, s::V, s::QN, s::KN, s::ATT, s::TMP, s::SCORES].map(|i| self.va(i));
        let (table, table_bytes) = (self.va(s::ROPE), self.surfaces[s::ROPE].bytes);
        let layer_bytes = self.block_bytes().0;
        let k_cache = self.va(s::K_CACHE) + u64::from(index) * layer_bytes;
        let v_cache = self.va(s::V_CACHE) + u64::from(index) * layer_bytes;

        self.matvec(device, funnel, (q, wq, h), (d, d))?;
        self.matvec(device, funnel, (k, wk, h), (kv, d))?;
        self.matvec(device, funnel, (v, wv, h), (kv, d))?;
        self.rmsnorm(device, funnel, (qn, q), (p.heads, hd), q_norm)?;
        self.rmsnorm(device, funnel, (kn, k), (p.kv_heads, hd), k_norm)?;

        let args = [
            ArgValue::Pointer(qn),
            ArgValue::Pointer(table),
            ArgValue::U32(position),
            ArgValue::U32(p.heads),
            ArgValue::U32(hd),
        ];
        let uses = [Use::read_write(qn, 4 * u64::from(d)), Use::read(table, table_bytes)];
        let name = format!("layer{block}.rope.position");
        let declared = [DeclaredArg { name: &name, arg: 2, rule: Rule::Offset { addend: 0 } }];
        let launch = Launch::linear(&self.kernels.rope, &args, d / 2, LINEAR_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;

        let args = [
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(kn),
            ArgValue::Pointer(table),
            ArgValue::U32(position),
            ArgValue::U32(p.kv_heads),
            ArgValue::U32(hd),
        ];
        let uses = [Use::write(k_cache, layer_bytes), Use::read(kn, 4 * u64::from(kv)), Use::read(table, table_bytes)];
        let name = format!("layer{block}.rope_store.position");
        let declared = [DeclaredArg { name: &name, arg: 3, rule: Rule::Offset { addend: 0 } }];
        let launch = Launch::linear(&self.kernels.rope_store, &args, kv / 2, LINEAR_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;

        let args = [ArgValue::Pointer(v_cache), ArgValue::Pointer(v), ArgValue::U32(position), ArgValue::U32(kv)];
        let uses = [Use::write(v_cache, layer_bytes), Use::read(v, 4 * u64::from(kv))];
        let name = format!("layer{block}.kv_store.position");
        let declared = [DeclaredArg { name: &name, arg: 2, rule: Rule::Offset { addend: 0 } }];
        let launch = Launch::linear(&self.kernels.kv_store, &args, kv, LINEAR_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;

        let args = [
            ArgValue::Pointer(att),
            ArgValue::Pointer(qn),
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(v_cache),
            ArgValue::Pointer(scores),
            ArgValue::U32(position + 1),
            ArgValue::U32(p.heads),
            ArgValue::U32(p.kv_heads),
            ArgValue::U32(hd),
            ArgValue::U32(self.context),
            ArgValue::F32(p.attention_scale),
        ];
        let uses = [
            Use::write(att, 4 * u64::from(d)),
            Use::read(qn, 4 * u64::from(d)),
            Use::read(k_cache, layer_bytes),
            Use::read(v_cache, layer_bytes),
            Use::read_write(scores, self.surfaces[s::SCORES].bytes),
        ];
        let name = format!("layer{block}.attention.n");
        let declared = [DeclaredArg { name: &name, arg: 5, rule: Rule::Offset { addend: 1 } }];
        let grid = p.heads * u32::from(ATTENTION_BLOCK);
        let launch = Launch::linear(&self.kernels.attention, &args, grid, ATTENTION_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;

        self.matvec(device, funnel, (tmp, out, att), (d, d))
    }

    fn ffn_block(&self, device: &mut dyn Device, funnel: &mut Funnel, layer: &Layer) -> Result<(), WorkloadError> {
        let (d, f) = (self.params.dim, self.params.ffn);
        let [x, h, gate, up, act, tmp] = [s::X, s::H, s::GATE, s::UP, s::ACT, s::TMP].map(|i| self.va(i));
        self.rmsnorm(device, funnel, (h, x), (1, d), layer.ffn_norm)?;
        self.matvec(device, funnel, (gate, layer.gate, h), (f, d))?;
        self.matvec(device, funnel, (up, layer.up, h), (f, d))?;
        ops::elementwise(device, funnel, &self.kernels.silu_mul, (act, gate, up), f)?;
        self.matvec(device, funnel, (tmp, layer.down, act), (d, f))?;
        self.residual(device, funnel, (x, tmp), 1)
    }
}

impl Workload for Lfm2 {
    fn name(&self) -> &str {
        "lfm2"
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
        let (x, h, tmp, d) = (self.va(s::X), self.va(s::H), self.va(s::TMP), self.params.dim);
        for (block, layer) in (0u32..).zip(&self.layers) {
            self.rmsnorm(device, funnel, (h, x), (1, d), layer.attn_norm)?;
            match layer.mixer {
                Mixer::Conv { in_proj, conv, out_proj, index } => {
                    self.conv_mixer(device, funnel, (in_proj, conv, out_proj), index)?;
                }
                attention @ Mixer::Attention { .. } => {
                    self.attention_mixer(device, funnel, &attention, block, position)?;
                }
            }
            self.residual(device, funnel, (x, tmp), 1)?;
            self.ffn_block(device, funnel, layer)?;
        }
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

    /// The prompt tokens `tokens` as one pass: the embedding rows, every block over all of them
    /// (the K and V rows of positions `first..first + n` into the cache and causal attention on
    /// attention blocks, the tokens in order through the convolution state on convolution
    /// blocks), and the logits of the last token, each row the bits of the decode step's.
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

impl super::language::LanguageModel for Lfm2 {
    fn architecture(&self) -> &'static str {
        "lfm2"
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

/// The matrix types the blocks and the output use, each once, by id.
fn matrix_types(layers: &[Layer], output: Weight) -> Vec<GgmlType> {
    let mut types: Vec<GgmlType> = layers
        .iter()
        .flat_map(|l| {
            let mixer = match l.mixer {
                Mixer::Attention { q, k, v, out, .. } => vec![q, k, v, out],
                Mixer::Conv { in_proj, out_proj, .. } => vec![in_proj, out_proj],
            };
            mixer.into_iter().chain([l.gate, l.up, l.down])
        })
        .chain([output])
        .map(|w| w.ty)
        .collect();
    types.sort_unstable_by_key(|t| t.id());
    types.dedup();
    types
}

fn load_kernels(
    device: &mut dyn Device,
    matrix_types: &[GgmlType],
    embedding: GgmlType,
) -> Result<Kernels, WorkloadError> {
    let one = |device: &mut dyn Device, (module, name): (&str, &str)| weights::load_kernel(device, module, name);
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
        rmsnorm: one(device, ("rmsnorm", "rmsnorm"))?,
        add: one(device, ("elementwise", "add"))?,
        rope: one(device, ("gemma", "rope_neox"))?,
        rope_store: one(device, ("gemma", "rope_neox_store"))?,
        rope_rows: one(device, ("gemma", "rope_neox_rows"))?,
        kv_store: one(device, ("llama", "kv_store"))?,
        attention: one(device, ("llama", "attention"))?,
        attention_rows: one(device, ("prefill", "attention_rows"))?,
        silu_mul: one(device, ("llama", "silu_mul"))?,
        shortconv: one(device, ("lfm2", "shortconv"))?,
        shortconv_rows: one(device, ("lfm2", "shortconv_rows"))?,
        copy: one(device, ("copy", "copy"))?,
    })
}

fn allocate_surfaces(device: &mut dyn Device, p: &Lfm2Params, context: u32) -> Result<Vec<Surface>, WorkloadError> {
    let floats = |n: u64| 4 * n;
    let (d, f, kv, ctx) = (u64::from(p.dim), u64::from(p.ffn), u64::from(p.kv_dim()), u64::from(context));
    let cache = floats(u64::from(p.attention_layers()) * ctx * kv);
    let state = floats(u64::from(p.conv_layers()) * d * u64::from(p.d_conv()));
    let shapes: [(&str, u64); s::COUNT] = [
        ("token", 4),
        ("x", floats(d)),
        ("h", floats(d)),
        ("q", floats(d)),
        ("k", floats(kv)),
        ("v", floats(kv)),
        ("q_normed", floats(d)),
        ("k_normed", floats(kv)),
        ("att", floats(d)),
        ("tmp", floats(d)),
        ("gate", floats(f)),
        ("up", floats(f)),
        ("act", floats(f)),
        ("bcx", floats(3 * d)),
        ("conv", floats(d)),
        ("scores", floats(u64::from(p.heads) * ctx)),
        ("k_cache", cache),
        ("v_cache", cache),
        (CONV_STATE, state),
        ("logits", floats(u64::from(p.vocab))),
        ("rope", floats(ctx * u64::from(p.head_dim))),
    ];
    let mut surfaces: Vec<Surface> = shapes
        .iter()
        .map(|&(name, bytes)| Surface::allocate(device, name, bytes, GUARD_BYTES))
        .collect::<Result<_, _>>()?;
    let conv_state = surfaces.remove(s::CONV_STATE).holding(StateKind::Convolution);
    surfaces.insert(s::CONV_STATE, conv_state);
    Ok(surfaces)
}
