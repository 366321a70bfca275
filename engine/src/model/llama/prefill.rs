//! The prefill pass of [`Llama`]: the prompt's tokens through every layer at once, with the
//! batched kernels of the `prefill` module (see the module documentation of [`super`]).

use hal::Device;
use kernarg_abi::layout::ArgValue;

use super::{ATTENTION_BLOCK, GUARD_BYTES, LINEAR_BLOCK, Layer, Llama, LlamaParams, PREFILL_CHUNK, Weight, s};
use crate::funnel::{Funnel, Launch, Use};
use crate::model::ops;
use crate::workload::{Surface, Workload, WorkloadError};

/// The prefill pass's surfaces: [`PREFILL_CHUNK`] rows of each decode activation, the token
/// ids, and the attention scratch (a row of `context` scores per token and head).
pub(super) mod p {
    pub(super) const TOKENS: usize = 0;
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
    pub(super) const COUNT: usize = 12;
}

impl Llama {
    /// `y[t] = w · x[t]` for the `n` rows of a prefill pass: `matmul_q4_1` / `matmul_q8_0`, each
    /// row the bits [`Llama::matvec`] gives for it.
    fn matmul(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (y, w, x): (u64, Weight, u64),
        (rows, cols, n): (u32, u32, u32),
    ) -> Result<(), WorkloadError> {
        let kernel = if w.q8 { &self.kernels.matmul_q8_0 } else { &self.kernels.matmul_q4_1 };
        ops::matmul(device, funnel, kernel, (y, w.tensor(), x), (rows, cols, n))
    }

    fn pva(&self, surface: usize) -> u64 {
        self.prefill_surfaces[surface].va
    }

    /// One layer of a prefill pass over `n` tokens at positions `first..first + n`.
    fn prefill_layer(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (layer, index): (&Layer, u32),
        (first, n): (u32, u32),
    ) -> Result<(), WorkloadError> {
        let pr = self.params;
        let (d, kv, f) = (pr.dim, pr.kv_dim(), pr.ffn);
        let [x, h, q, k, v, att, tmp, gate, up, act, scores] =
            [p::X, p::H, p::Q, p::K, p::V, p::ATT, p::TMP, p::GATE, p::UP, p::ACT, p::SCORES].map(|i| self.pva(i));
        let (table, table_bytes) = (self.va(s::ROPE_TABLE), self.surfaces[s::ROPE_TABLE].bytes);
        let layout = self.kv_cache_layout();
        let k_cache = self.va(s::K_CACHE) + u64::from(index) * layout.layer_stride_bytes;
        let v_cache = self.va(s::V_CACHE) + u64::from(index) * layout.layer_stride_bytes;

        self.rmsnorm(device, funnel, (h, x, n), layer.attn_norm)?;
        self.matmul(device, funnel, (q, layer.q, h), (d, d, n))?;
        self.matmul(device, funnel, (k, layer.k, h), (kv, d, n))?;
        self.matmul(device, funnel, (v, layer.v, h), (kv, d, n))?;
        for (x, heads) in [(q, pr.heads), (k, pr.kv_heads)] {
            let pairs = heads * pr.head_dim / 2 * n;
            let args = [
                ArgValue::Pointer(x),
                ArgValue::Pointer(table),
                ArgValue::U32(first),
                ArgValue::U32(heads),
                ArgValue::U32(pr.head_dim),
                ArgValue::U32(n),
            ];
            let uses = [Use::read_write(x, 8 * u64::from(pairs)), Use::read(table, table_bytes)];
            funnel.launch(device, &Launch::linear(&self.kernels.rope_rows, &args, pairs, LINEAR_BLOCK, &uses))?;
        }
        // The rotated K rows and the V rows into the caches at positions first..first + n.
        let row_offset = u64::from(first) * layout.position_stride_bytes;
        for (cache, src) in [(k_cache, k), (v_cache, v)] {
            let count = kv * n;
            let dst = cache + row_offset;
            let args = [ArgValue::Pointer(dst), ArgValue::Pointer(src), ArgValue::U32(count)];
            let uses = [Use::write(dst, 4 * u64::from(count)), Use::read(src, 4 * u64::from(count))];
            funnel.launch(device, &Launch::linear(&self.kernels.copy, &args, count, LINEAR_BLOCK, &uses))?;
        }
        // CAST: head sizes are at most 64, exact in f64 and f32.
        #[allow(clippy::cast_possible_truncation)]
        let scale = (1.0 / f64::from(pr.head_dim).sqrt()) as f32;
        let args = [
            ArgValue::Pointer(att),
            ArgValue::Pointer(q),
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(v_cache),
            ArgValue::Pointer(scores),
            ArgValue::U32(first),
            ArgValue::U32(n),
            ArgValue::U32(pr.heads),
            ArgValue::U32(pr.kv_heads),
            ArgValue::U32(pr.head_dim),
            ArgValue::U32(self.context),
            ArgValue::F32(scale),
        ];
        let rows_bytes = 4 * u64::from(d) * u64::from(n);
        let uses = [
            Use::write(att, rows_bytes),
            Use::read(q, rows_bytes),
            Use::read(k_cache, layout.layer_stride_bytes),
            Use::read(v_cache, layout.layer_stride_bytes),
            Use::read_write(scores, self.prefill_surfaces[p::SCORES].bytes),
        ];
        let grid = (pr.heads * n).saturating_mul(u32::from(ATTENTION_BLOCK));
        funnel.launch(device, &Launch::linear(&self.kernels.attention_rows, &args, grid, ATTENTION_BLOCK, &uses))?;
        self.matmul(device, funnel, (tmp, layer.out, att), (d, d, n))?;
        self.residual(device, funnel, (x, tmp, n))?;

        self.rmsnorm(device, funnel, (h, x, n), layer.ffn_norm)?;
        self.matmul(device, funnel, (gate, layer.gate, h), (f, d, n))?;
        self.matmul(device, funnel, (up, layer.up, h), (f, d, n))?;
        self.silu_mul(device, funnel, (act, gate, up), f * n)?;
        self.matmul(device, funnel, (tmp, layer.down, act), (d, f, n))?;
        self.residual(device, funnel, (x, tmp, n))
    }

    /// [`Workload::prefill`] of [`Llama`].
    pub(super) fn prefill_pass(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        first: u32,
        tokens: &[u32],
    ) -> Result<(), WorkloadError> {
        let n = ops::check_prefill(tokens, first, PREFILL_CHUNK, self.max_position(), self.params.vocab)?;
        let d = self.params.dim;
        let (x, ids) = (self.pva(p::X), self.pva(p::TOKENS));
        let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        device.write(ids, &bytes)?;
        let e = self.embedding;
        let count = d * n;
        let args = [
            ArgValue::Pointer(x),
            ArgValue::Pointer(e.va),
            ArgValue::Pointer(ids),
            ArgValue::U32(d),
            ArgValue::U32(self.params.vocab),
            ArgValue::U32(n),
        ];
        let uses = [Use::write(x, 4 * u64::from(count)), Use::read(e.va, e.bytes), Use::read(ids, 4 * u64::from(n))];
        funnel.launch(device, &Launch::linear(&self.kernels.get_rows, &args, count, LINEAR_BLOCK, &uses))?;
        for (index, layer) in self.layers.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            self.prefill_layer(device, funnel, (layer, index), (first, n))?;
        }
        // The last token's hidden vector through the final norm into the step's `h`, then the
        // logits, exactly as the step ends.
        let h = self.va(s::H);
        let last_row = x + 4 * u64::from(d) * u64::from(n - 1);
        self.rmsnorm(device, funnel, (h, last_row, 1), self.output_norm)?;
        self.matvec(device, funnel, (self.va(s::LOGITS), self.output, h), (self.params.vocab, d))
    }
}

pub(super) fn allocate_prefill_surfaces(
    device: &mut dyn Device,
    p: &LlamaParams,
    context: u32,
) -> Result<Vec<Surface>, WorkloadError> {
    let rows = |n: u32| 4 * u64::from(n) * u64::from(PREFILL_CHUNK);
    let (d, f, kv) = (p.dim, p.ffn, p.kv_dim());
    let shapes: [(&str, u64); p::COUNT] = [
        ("prefill_tokens", rows(1)),
        ("prefill_x", rows(d)),
        ("prefill_h", rows(d)),
        ("prefill_q", rows(d)),
        ("prefill_k", rows(kv)),
        ("prefill_v", rows(kv)),
        ("prefill_att", rows(d)),
        ("prefill_tmp", rows(d)),
        ("prefill_gate", rows(f)),
        ("prefill_up", rows(f)),
        ("prefill_act", rows(f)),
        ("prefill_scores", rows(p.heads) * u64::from(context)),
    ];
    shapes.iter().map(|&(name, bytes)| Surface::allocate(device, name, bytes, GUARD_BYTES)).collect()
}
