//! The llama decode step as launches through the [`Funnel`]: embedding row (Q8_0), per layer
//! RMSNorm → Q/K/V matvecs → RoPE (Q in place, K into the cache) → V into the cache → attention
//! over the cache → output matvec → residual add → RMSNorm → gate/up matvecs → SiLU·mul → down
//! matvec → residual add; final RMSNorm and the logits matvec.
//!
//! The token id is written to device memory by [`Workload::prepare_step`] (the named external
//! boundary); everything that follows the position (RoPE's `pos`, the cache row, attention's `n`)
//! is a `u32` kernarg declared at its launch as a binding (`layer{L}.rope.position`,
//! `layer{L}.rope_store.position`, `layer{L}.kv_store.position`, `layer{L}.attention.n`), which
//! calibration confirms.
//!
//! A prompt runs as batched passes of up to [`PREFILL_CHUNK`] tokens ([`Workload::prefill`]):
//! the same sequence over all the pass's tokens at once, with the batched kernels of the
//! `prefill` module (Q4_1/Q8_0 matrix products, embedding rows, RoPE over rows, causal
//! attention) and the element-wise kernels over whole rows. Each batched kernel computes row `t`
//! as its decode kernel computes token `t`, so a batched prefill leaves the KV cache and the
//! logits bit for bit as the same prompt run step by step does.

use gguf::Gguf;

use super::ops::{self, LINEAR_BLOCK};
use super::params::{LlamaParams, ParamsError};
use hal::Device;
use kernarg_abi::layout::ArgValue;

use crate::funnel::{DeclaredArg, Funnel, Kernel, Launch, Rule, Use};
use crate::workload::{GUARD_BYTES, Surface, Workload, WorkloadError, check_position};

mod prefill;

use prefill::allocate_prefill_surfaces;

/// Work-group size of attention (one work-group per query head).
const ATTENTION_BLOCK: u16 = 64;
/// Prompt tokens per batched prefill pass ([`Llama::prefill_chunk`]).
pub const PREFILL_CHUNK: u32 = 128;

/// Why [`Llama::load_model`] failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file is not a llama model this adapter can run, or holds invalid values.
    #[error(transparent)]
    Model(#[from] ParamsError),
    /// The context asked for, or the device.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
}

impl From<LoadError> for WorkloadError {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::Model(e) => Self::Init(e.to_string()),
            LoadError::Workload(e) => e,
        }
    }
}

impl From<hal::AllocateError> for LoadError {
    fn from(error: hal::AllocateError) -> Self {
        Self::Workload(error.into())
    }
}

impl From<hal::TransferError> for LoadError {
    fn from(error: hal::TransferError) -> Self {
        Self::Workload(error.into())
    }
}

/// One weight tensor on the device.
#[derive(Clone, Copy, Debug)]
struct Weight {
    va: u64,
    bytes: u64,
    /// `matvec_q4_1` or `matvec_q8_0` for a matrix.
    q8: bool,
}

impl Weight {
    const fn tensor(self) -> ops::Tensor {
        ops::Tensor { va: self.va, bytes: self.bytes }
    }
}

/// The weights of one layer.
#[derive(Clone, Copy, Debug)]
struct Layer {
    attn_norm: Weight,
    q: Weight,
    k: Weight,
    v: Weight,
    out: Weight,
    ffn_norm: Weight,
    gate: Weight,
    up: Weight,
    down: Weight,
}

/// The kernels the step launches.
#[derive(Debug)]
struct Kernels {
    matvec_q4_1: Kernel,
    matvec_q8_0: Kernel,
    get_row: Kernel,
    rope: Kernel,
    rope_store: Kernel,
    kv_store: Kernel,
    attention: Kernel,
    silu_mul: Kernel,
    rmsnorm: Kernel,
    add: Kernel,
    matmul_q4_1: Kernel,
    matmul_q8_0: Kernel,
    get_rows: Kernel,
    rope_rows: Kernel,
    attention_rows: Kernel,
    copy: Kernel,
}

/// Surface indices, in [`Llama::surfaces`] order.
mod s {
    pub(super) const TOKEN: usize = 0;
    pub(super) const X: usize = 1;
    pub(super) const H: usize = 2;
    pub(super) const Q: usize = 3;
    pub(super) const K: usize = 4;
    pub(super) const V: usize = 5;
    pub(super) const ATT: usize = 6;
    pub(super) const TMP: usize = 7;
    pub(super) const GATE: usize = 8;
    pub(super) const UP: usize = 9;
    pub(super) const ACT: usize = 10;
    pub(super) const SCORES: usize = 11;
    pub(super) const K_CACHE: usize = 12;
    pub(super) const V_CACHE: usize = 13;
    pub(super) const LOGITS: usize = 14;
    pub(super) const ROPE_TABLE: usize = 15;
    pub(super) const COUNT: usize = 16;
}

/// How the KV cache lies in device memory: one K and one V surface (`k_cache`, `v_cache`), each
/// `[layer][position][kv_head][head_dim]` of little-endian f32, row-major. `rope_store` writes
/// the rotated K row and `kv_store` the V row of a position, `attention` reads positions
/// `0..=pos` of its layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct KvCacheLayout {
    /// Layers, each with its own K and V block.
    pub layers: u32,
    /// Positions per layer (the session's context).
    pub positions: u32,
    /// Key/value heads per position.
    pub kv_heads: u32,
    /// Elements per head.
    pub head_dim: u32,
    /// The element type.
    pub element: &'static str,
    /// Bytes per element.
    pub element_bytes: u32,
    /// Bytes from one position's row to the next (`kv_heads × head_dim × element_bytes`).
    pub position_stride_bytes: u64,
    /// Bytes from one layer's block to the next (`positions × position_stride_bytes`).
    pub layer_stride_bytes: u64,
    /// Bytes of the K surface, and of the V surface (`layers × layer_stride_bytes`).
    pub surface_bytes: u64,
}

impl KvCacheLayout {
    /// The layout's scheme, without its sizes: the element type and the index order
    /// outermost first (`f32:layer,position,kv_head,head_dim`), as admission rows name it.
    #[must_use]
    pub fn scheme(&self) -> String {
        format!("{}:layer,position,kv_head,head_dim", self.element)
    }

    /// The layout of a cache of `context` positions for a model of `p`.
    #[must_use]
    pub fn of(p: &LlamaParams, context: u32) -> Self {
        let element_bytes = 4;
        let position_stride_bytes = u64::from(element_bytes) * u64::from(p.kv_dim());
        let layer_stride_bytes = position_stride_bytes * u64::from(context);
        Self {
            layers: p.layers,
            positions: context,
            kv_heads: p.kv_heads,
            head_dim: p.head_dim,
            element: "f32",
            element_bytes,
            position_stride_bytes,
            layer_stride_bytes,
            surface_bytes: layer_stride_bytes * u64::from(p.layers),
        }
    }
}

/// A llama model on a device, with a KV cache of `context` positions.
#[derive(Debug)]
pub struct Llama {
    params: LlamaParams,
    context: u32,
    kernels: Kernels,
    embedding: Weight,
    output: Weight,
    output_norm: Weight,
    layers: Vec<Layer>,
    surfaces: Vec<Surface>,
    /// The prefill pass's surfaces, in [`p`] order (not part of the step's state: a decode step
    /// reads none of them).
    prefill_surfaces: Vec<Surface>,
    /// The token of the next step, set by [`Llama::set_token`].
    token: u32,
}

impl Llama {
    /// Uploads the model's weights to `device`, loads the kernels and allocates the activations
    /// and a KV cache of `context` positions ([`Llama::load_model`], its errors as
    /// [`WorkloadError`]s).
    ///
    /// # Errors
    /// [`WorkloadError::Init`] for an unsupported or invalid model or context; device errors.
    pub fn load(device: &mut dyn Device, file: &Gguf, context: u32) -> Result<Self, WorkloadError> {
        Self::load_model(device, file, context).map_err(WorkloadError::from)
    }

    /// [`Llama::load`], telling a fault of the file ([`LoadError::Model`]: its hyperparameters,
    /// tensors or weights, see [`LlamaParams::from_gguf`]; every weight is checked finite as it
    /// is uploaded) from the rest ([`LoadError::Workload`]: the context asked for, the device).
    ///
    /// # Errors
    /// [`LoadError`].
    pub fn load_model(device: &mut dyn Device, file: &Gguf, context: u32) -> Result<Self, LoadError> {
        let params = LlamaParams::from_gguf(file)?;
        if context == 0 || context > params.context_train {
            return Err(LoadError::Workload(WorkloadError::Init(format!(
                "context {context} is outside 1..={} (llama.context_length)",
                params.context_train
            ))));
        }
        let kernels = load_kernels(device)?;
        let upload = |device: &mut dyn Device, name: &str| -> Result<Weight, LoadError> {
            let view = file.tensor(name).map_err(ParamsError::Metadata)?;
            view.check_finite().map_err(ParamsError::Weights)?;
            let bytes = view.bytes();
            let allocation = device.allocate(u64::try_from(bytes.len()).unwrap_or(u64::MAX))?;
            device.write(allocation.va, bytes)?;
            Ok(Weight { va: allocation.va, bytes: allocation.size, q8: view.ty() == gguf::GgmlType::Q8_0 })
        };
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
                out: w("attn_output")?,
                ffn_norm: w("ffn_norm")?,
                gate: w("ffn_gate")?,
                up: w("ffn_up")?,
                down: w("ffn_down")?,
            });
        }
        let surfaces = allocate_surfaces(device, &params, context)?;
        surfaces[s::ROPE_TABLE].fill(device, &f32_bytes(&rope_table(&params, context)))?;
        let prefill_surfaces = allocate_prefill_surfaces(device, &params, context)?;
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
    pub const fn params(&self) -> &LlamaParams {
        &self.params
    }

    /// Positions the KV cache holds.
    #[must_use]
    pub const fn context(&self) -> u32 {
        self.context
    }

    /// How the KV cache is laid out.
    #[must_use]
    pub fn kv_cache_layout(&self) -> KvCacheLayout {
        KvCacheLayout::of(&self.params, self.context)
    }

    /// The token the next step embeds.
    ///
    /// # Errors
    /// [`WorkloadError::Init`] for an id outside the vocabulary.
    pub fn set_token(&mut self, token: u32) -> Result<(), WorkloadError> {
        ops::check_token(token, self.params.vocab)?;
        self.token = token;
        Ok(())
    }

    /// Reads the logits of the last step.
    ///
    /// # Errors
    /// The device's read error.
    pub fn logits(&self, device: &mut dyn Device) -> Result<Vec<f32>, WorkloadError> {
        ops::read_f32s(device, &self.surfaces[s::LOGITS])
    }

    fn va(&self, surface: usize) -> u64 {
        self.surfaces[surface].va
    }

    fn matvec(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (y, w, x): (u64, Weight, u64),
        (rows, cols): (u32, u32),
    ) -> Result<(), WorkloadError> {
        let kernel = if w.q8 { &self.kernels.matvec_q8_0 } else { &self.kernels.matvec_q4_1 };
        ops::matvec(device, funnel, kernel, (y, w.tensor(), x), (rows, cols))
    }

    /// RMSNorm of `rows` hidden vectors (one work-group per row).
    fn rmsnorm(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (out, x, rows): (u64, u64, u32),
        weight: Weight,
    ) -> Result<(), WorkloadError> {
        let (kernel, cols, eps) = (&self.kernels.rmsnorm, self.params.dim, self.params.eps);
        ops::rmsnorm(device, funnel, kernel, (out, x), (rows, cols), weight.tensor(), eps)
    }

    /// `x += delta` over `rows` hidden vectors.
    fn residual(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (x, delta, rows): (u64, u64, u32),
    ) -> Result<(), WorkloadError> {
        ops::residual(device, funnel, &self.kernels.add, (x, delta), self.params.dim.saturating_mul(rows))
    }

    /// `out[i] = silu(gate[i]) * up[i]` over `n` elements.
    fn silu_mul(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (out, gate, up): (u64, u64, u64),
        n: u32,
    ) -> Result<(), WorkloadError> {
        ops::elementwise(device, funnel, &self.kernels.silu_mul, (out, gate, up), n)
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
        let (d, kv) = (p.dim, p.kv_dim());
        let [x, h, q, k, v, att, tmp, scores, table] =
            [s::X, s::H, s::Q, s::K, s::V, s::ATT, s::TMP, s::SCORES, s::ROPE_TABLE].map(|i| self.va(i));
        let cache_row_bytes = self.kv_cache_layout().layer_stride_bytes;
        let k_cache = self.va(s::K_CACHE) + u64::from(index) * cache_row_bytes;
        let v_cache = self.va(s::V_CACHE) + u64::from(index) * cache_row_bytes;
        let table_bytes = self.surfaces[s::ROPE_TABLE].bytes;

        self.rmsnorm(device, funnel, (h, x, 1), layer.attn_norm)?;
        self.matvec(device, funnel, (q, layer.q, h), (d, d))?;
        self.matvec(device, funnel, (k, layer.k, h), (kv, d))?;
        self.matvec(device, funnel, (v, layer.v, h), (kv, d))?;

        let pairs = p.heads * p.head_dim / 2;
        let args = [
            ArgValue::Pointer(q),
            ArgValue::Pointer(table),
            ArgValue::U32(position),
            ArgValue::U32(p.heads),
            ArgValue::U32(p.head_dim),
        ];
        let uses = [Use::read_write(q, 4 * u64::from(d)), Use::read(table, table_bytes)];
        let name = format!("layer{index}.rope.position");
        let declared = [DeclaredArg { name: &name, arg: 2, rule: Rule::Offset { addend: 0 } }];
        let launch = Launch::linear(&self.kernels.rope, &args, pairs, LINEAR_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;

        let kv_pairs = p.kv_heads * p.head_dim / 2;
        let args = [
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(k),
            ArgValue::Pointer(table),
            ArgValue::U32(position),
            ArgValue::U32(p.kv_heads),
            ArgValue::U32(p.head_dim),
        ];
        let uses =
            [Use::write(k_cache, cache_row_bytes), Use::read(k, 4 * u64::from(kv)), Use::read(table, table_bytes)];
        let name = format!("layer{index}.rope_store.position");
        let declared = [DeclaredArg { name: &name, arg: 3, rule: Rule::Offset { addend: 0 } }];
        let launch =
            Launch::linear(&self.kernels.rope_store, &args, kv_pairs, LINEAR_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;

        let args = [ArgValue::Pointer(v_cache), ArgValue::Pointer(v), ArgValue::U32(position), ArgValue::U32(kv)];
        let uses = [Use::write(v_cache, cache_row_bytes), Use::read(v, 4 * u64::from(kv))];
        let name = format!("layer{index}.kv_store.position");
        let declared = [DeclaredArg { name: &name, arg: 2, rule: Rule::Offset { addend: 0 } }];
        funnel.launch(
            device,
            &Launch::linear(&self.kernels.kv_store, &args, kv, LINEAR_BLOCK, &uses).declaring(&declared),
        )?;

        // CAST: head sizes are at most 64, exact in f64 and f32.
        #[allow(clippy::cast_possible_truncation)]
        let scale = (1.0 / f64::from(p.head_dim).sqrt()) as f32;
        let args = [
            ArgValue::Pointer(att),
            ArgValue::Pointer(q),
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(v_cache),
            ArgValue::Pointer(scores),
            ArgValue::U32(position + 1),
            ArgValue::U32(p.heads),
            ArgValue::U32(p.kv_heads),
            ArgValue::U32(p.head_dim),
            ArgValue::U32(self.context),
            ArgValue::F32(scale),
        ];
        let uses = [
            Use::write(att, 4 * u64::from(d)),
            Use::read(q, 4 * u64::from(d)),
            Use::read(k_cache, cache_row_bytes),
            Use::read(v_cache, cache_row_bytes),
            Use::read_write(scores, self.surfaces[s::SCORES].bytes),
        ];
        let grid = p.heads * u32::from(ATTENTION_BLOCK);
        let name = format!("layer{index}.attention.n");
        let declared = [DeclaredArg { name: &name, arg: 5, rule: Rule::Offset { addend: 1 } }];
        let launch = Launch::linear(&self.kernels.attention, &args, grid, ATTENTION_BLOCK, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;

        self.matvec(device, funnel, (tmp, layer.out, att), (d, d))?;
        self.residual(device, funnel, (x, tmp, 1))
    }

    fn ffn_block(&self, device: &mut dyn Device, funnel: &mut Funnel, layer: &Layer) -> Result<(), WorkloadError> {
        let (d, f) = (self.params.dim, self.params.ffn);
        let [x, h, gate, up, act, tmp] = [s::X, s::H, s::GATE, s::UP, s::ACT, s::TMP].map(|i| self.va(i));
        self.rmsnorm(device, funnel, (h, x, 1), layer.ffn_norm)?;
        self.matvec(device, funnel, (gate, layer.gate, h), (f, d))?;
        self.matvec(device, funnel, (up, layer.up, h), (f, d))?;
        self.silu_mul(device, funnel, (act, gate, up), f)?;
        self.matvec(device, funnel, (tmp, layer.down, act), (d, f))?;
        self.residual(device, funnel, (x, tmp, 1))
    }
}

impl Workload for Llama {
    fn name(&self) -> &str {
        "llama"
    }

    fn prepare_step(
        &mut self,
        device: &mut dyn Device,
        _funnel: &mut Funnel,
        position: u32,
    ) -> Result<(), WorkloadError> {
        check_position(position, self.max_position())?;
        device.write(self.va(s::TOKEN), &self.token.to_le_bytes())?;
        Ok(())
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        check_position(position, self.max_position())?;
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
        for (index, layer) in self.layers.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            self.attention_block(device, funnel, layer, index, position)?;
            self.ffn_block(device, funnel, layer)?;
        }
        let h = self.va(s::H);
        self.rmsnorm(device, funnel, (h, x, 1), self.output_norm)?;
        self.matvec(device, funnel, (self.va(s::LOGITS), self.output, h), (self.params.vocab, d))
    }

    fn prefill_chunk(&self) -> u32 {
        PREFILL_CHUNK
    }

    /// The prompt tokens `tokens` as one pass: the embedding rows, every layer over all of them
    /// (the K and V rows of positions `first..first + n` into the cache, causal attention), and
    /// the logits of the last token. Every kernel of the pass computes row `t` exactly as the
    /// decode step's kernel computes it for token `t`, so the KV cache and the logits are the
    /// bits of `n` steps at `first..first + n` (the step's other surfaces are not written).
    fn prefill(
        &mut self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        first: u32,
        tokens: &[u32],
    ) -> Result<(), WorkloadError> {
        self.prefill_pass(device, funnel, first, tokens)
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn max_position(&self) -> u32 {
        self.context - 1
    }
}

impl super::language::LanguageModel for Llama {
    fn architecture(&self) -> &'static str {
        "llama"
    }

    fn vocab(&self) -> u32 {
        self.params.vocab
    }

    fn context(&self) -> u32 {
        self.context
    }

    fn set_token(&mut self, token: u32) -> Result<(), WorkloadError> {
        Llama::set_token(self, token)
    }

    fn logits(&self, device: &mut dyn Device) -> Result<Vec<f32>, WorkloadError> {
        Llama::logits(self, device)
    }
}

fn load_kernels(device: &mut dyn Device) -> Result<Kernels, WorkloadError> {
    let module = |device: &mut dyn Device, module: &str, names: &[&str]| -> Result<Vec<Kernel>, WorkloadError> {
        let path = format!("{}/{module}.co", device.target());
        let artifact = kernels::artifact(&path)
            .ok_or_else(|| WorkloadError::Init(format!("no built code object {path} in the kernels crate")))?;
        Ok(Kernel::load_all(device, artifact.bytes, names)?)
    };
    let mut quant = module(device, "quant", &["matvec_q4_1", "matvec_q8_0", "get_row_q8_0"])?.into_iter();
    let mut llama = module(device, "llama", &["rope", "rope_store", "kv_store", "attention", "silu_mul"])?.into_iter();
    let mut rmsnorm = module(device, "rmsnorm", &["rmsnorm"])?.into_iter();
    let mut elementwise = module(device, "elementwise", &["add"])?.into_iter();
    let mut prefill =
        module(device, "prefill", &["matmul_q4_1", "matmul_q8_0", "get_rows_q8_0", "rope_rows", "attention_rows"])?
            .into_iter();
    let mut copy = module(device, "copy", &["copy"])?.into_iter();
    let missing = || WorkloadError::Init("a kernel the loader returned is missing".into());
    Ok(Kernels {
        matvec_q4_1: quant.next().ok_or_else(missing)?,
        matvec_q8_0: quant.next().ok_or_else(missing)?,
        get_row: quant.next().ok_or_else(missing)?,
        rope: llama.next().ok_or_else(missing)?,
        rope_store: llama.next().ok_or_else(missing)?,
        kv_store: llama.next().ok_or_else(missing)?,
        attention: llama.next().ok_or_else(missing)?,
        silu_mul: llama.next().ok_or_else(missing)?,
        rmsnorm: rmsnorm.next().ok_or_else(missing)?,
        add: elementwise.next().ok_or_else(missing)?,
        matmul_q4_1: prefill.next().ok_or_else(missing)?,
        matmul_q8_0: prefill.next().ok_or_else(missing)?,
        get_rows: prefill.next().ok_or_else(missing)?,
        rope_rows: prefill.next().ok_or_else(missing)?,
        attention_rows: prefill.next().ok_or_else(missing)?,
        copy: copy.next().ok_or_else(missing)?,
    })
}

fn allocate_surfaces(device: &mut dyn Device, p: &LlamaParams, context: u32) -> Result<Vec<Surface>, WorkloadError> {
    let floats = |n: u64| 4 * n;
    let (d, f, kv, ctx) = (u64::from(p.dim), u64::from(p.ffn), u64::from(p.kv_dim()), u64::from(context));
    let cache = KvCacheLayout::of(p, context).surface_bytes;
    let shapes: [(&str, u64); s::COUNT] = [
        ("token", 4),
        ("x", floats(d)),
        ("h", floats(d)),
        ("q", floats(d)),
        ("k", floats(kv)),
        ("v", floats(kv)),
        ("att", floats(d)),
        ("tmp", floats(d)),
        ("gate", floats(f)),
        ("up", floats(f)),
        ("act", floats(f)),
        ("scores", floats(u64::from(p.heads) * ctx)),
        ("k_cache", cache),
        ("v_cache", cache),
        ("logits", floats(u64::from(p.vocab))),
        ("rope_table", floats(ctx * u64::from(p.head_dim))),
    ];
    shapes.iter().map(|&(name, bytes)| Surface::allocate(device, name, bytes, GUARD_BYTES)).collect()
}

/// `(cos, sin)` of `pos * base^(-2i / head_dim)` for every position below `context` and pair
/// `i`, computed in f64 and rounded once to f32 (the kernels read it; no transcendental function
/// runs on the device).
#[must_use]
pub fn rope_table(p: &LlamaParams, context: u32) -> Vec<f32> {
    rope_table_of(p.rope_base, p.head_dim, context)
}

/// [`rope_table`] for any RoPE base and head size: `(cos, sin)` of `pos * base^(-2i / head_dim)`
/// for every position below `context` and pair `i < head_dim / 2`, computed in f64 and rounded
/// once to f32.
#[must_use]
pub fn rope_table_of(base: f32, head_dim: u32, context: u32) -> Vec<f32> {
    let half = head_dim / 2;
    let mut table = Vec::with_capacity(usize::try_from(u64::from(context) * u64::from(head_dim)).unwrap_or(0));
    for pos in 0..context {
        for i in 0..half {
            let theta = f64::from(base).powf(-2.0 * f64::from(i) / f64::from(head_dim));
            let angle = f64::from(pos) * theta;
            // CAST: rounding to the kernels' f32 is the point.
            #[allow(clippy::cast_possible_truncation)]
            table.extend([angle.cos() as f32, angle.sin() as f32]);
        }
    }
    table
}

pub(super) fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::{KvCacheLayout, LlamaParams};

    #[test]
    fn the_kv_layout_is_layer_then_position_then_head_of_f32() {
        // SmolLM2-135M's shape: 30 layers, 9 heads of 64, 3 KV heads.
        let p = LlamaParams {
            layers: 30,
            dim: 576,
            ffn: 1536,
            heads: 9,
            kv_heads: 3,
            head_dim: 64,
            vocab: 49_152,
            context_train: 8192,
            rope_base: 100_000.0,
            eps: 1e-5,
            tied_output: true,
        };
        let layout = KvCacheLayout::of(&p, 256);
        assert_eq!(layout.position_stride_bytes, 3 * 64 * 4);
        assert_eq!(layout.layer_stride_bytes, 256 * 768);
        assert_eq!(layout.surface_bytes, 30 * 196_608);
        assert_eq!((layout.element, layout.element_bytes), ("f32", 4));
    }
}
