//! The prefill pass of [`Gemma3`]: the prompt's tokens through every layer at once (see the
//! module documentation of [`super`]). Every launch computes row `t` with the operations the
//! decode step's launch performs for token `t`: the batched products and row gathers, NEOX RoPE
//! and windowed attention over rows are bit for bit their decode kernels per row, and the
//! RMSNorms (one work-group per row), residual adds, scales and GELU gating are the decode
//! kernels themselves over more rows.

use hal::Device;
use kernarg_abi::layout::ArgValue;

use super::{ATTENTION_BLOCK, Gemma3, Gemma3Params, LINEAR_BLOCK, Layer, PREFILL_CHUNK, Weight, s};
use crate::funnel::{Funnel, Launch, Use};
use crate::model::{ops, weights};
use crate::workload::{GUARD_BYTES, Surface, Workload, WorkloadError};

/// The prefill pass's surfaces: [`PREFILL_CHUNK`] rows of each decode activation, the token
/// ids, and the attention scratch (a row of `context` scores per token and head).
mod p {
    pub(super) const TOKENS: usize = 0;
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
    pub(super) const COUNT: usize = 14;
}

impl Gemma3 {
    fn pva(&self, surface: usize) -> u64 {
        self.prefill_surfaces[surface].va
    }

    /// `y[t] = w · x[t]` for the `n` rows of a pass, each row the bits [`Gemma3::matvec`] gives.
    fn matmul(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        operands: (u64, Weight, u64),
        dims: (u32, u32, u32),
    ) -> Result<(), WorkloadError> {
        weights::matmul(device, funnel, &self.kernels.matmul, operands, dims)
    }

    /// One layer of a pass over `n` tokens at positions `first..first + n`.
    fn prefill_layer(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (layer, index): (&Layer, u32),
        (first, n): (u32, u32),
    ) -> Result<(), WorkloadError> {
        let pr = self.params;
        let (d, qd, kv, hd, f) = (pr.dim, pr.q_dim(), pr.kv_dim(), pr.head_dim, pr.ffn);
        let [x, h, q, k, v, qn, kn, att, tmp, gate, up, act, scores] =
            [p::X, p::H, p::Q, p::K, p::V, p::QN, p::KN, p::ATT, p::TMP, p::GATE, p::UP, p::ACT, p::SCORES]
                .map(|i| self.pva(i));
        let sliding = pr.is_sliding(index);
        let table_surface = if sliding { s::ROPE_LOCAL } else { s::ROPE_GLOBAL };
        let (table, table_bytes) = (self.va(table_surface), self.surfaces[table_surface].bytes);
        let position_bytes = 4 * u64::from(kv);
        let layer_bytes = u64::from(self.context) * position_bytes;
        let k_cache = self.va(s::K_CACHE) + u64::from(index) * layer_bytes;
        let v_cache = self.va(s::V_CACHE) + u64::from(index) * layer_bytes;

        self.rmsnorm(device, funnel, (h, x), (n, d), layer.attn_norm)?;
        self.matmul(device, funnel, (q, layer.q, h), (qd, d, n))?;
        self.matmul(device, funnel, (k, layer.k, h), (kv, d, n))?;
        self.matmul(device, funnel, (v, layer.v, h), (kv, d, n))?;
        self.rmsnorm(device, funnel, (qn, q), (n * pr.heads, hd), layer.q_norm)?;
        self.rmsnorm(device, funnel, (kn, k), (n * pr.kv_heads, hd), layer.k_norm)?;
        for (rows, heads) in [(qn, pr.heads), (kn, pr.kv_heads)] {
            let pairs = heads * hd / 2 * n;
            let args = [
                ArgValue::Pointer(rows),
                ArgValue::Pointer(table),
                ArgValue::U32(first),
                ArgValue::U32(heads),
                ArgValue::U32(hd),
                ArgValue::U32(n),
            ];
            let uses = [Use::read_write(rows, 8 * u64::from(pairs)), Use::read(table, table_bytes)];
            funnel.launch(device, &Launch::linear(&self.kernels.rope_rows, &args, pairs, LINEAR_BLOCK, &uses))?;
        }
        // The rotated K rows and the V rows into the caches at positions first..first + n.
        let row_offset = u64::from(first) * position_bytes;
        for (cache, src) in [(k_cache, kn), (v_cache, v)] {
            let count = kv * n;
            let dst = cache + row_offset;
            let args = [ArgValue::Pointer(dst), ArgValue::Pointer(src), ArgValue::U32(count)];
            let uses = [Use::write(dst, 4 * u64::from(count)), Use::read(src, 4 * u64::from(count))];
            funnel.launch(device, &Launch::linear(&self.kernels.copy, &args, count, LINEAR_BLOCK, &uses))?;
        }
        // A full-attention layer's window is the whole cache: every row's first key is 0.
        let window = if sliding { pr.window } else { self.context };
        let args = [
            ArgValue::Pointer(att),
            ArgValue::Pointer(qn),
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(v_cache),
            ArgValue::Pointer(scores),
            ArgValue::U32(first),
            ArgValue::U32(n),
            ArgValue::U32(window),
            ArgValue::U32(pr.heads),
            ArgValue::U32(pr.kv_heads),
            ArgValue::U32(hd),
            ArgValue::U32(self.context),
            ArgValue::F32(pr.attention_scale),
        ];
        let rows_bytes = 4 * u64::from(qd) * u64::from(n);
        let uses = [
            Use::write(att, rows_bytes),
            Use::read(qn, rows_bytes),
            Use::read(k_cache, layer_bytes),
            Use::read(v_cache, layer_bytes),
            Use::read_write(scores, self.prefill_surfaces[p::SCORES].bytes),
        ];
        let grid = (pr.heads * n).saturating_mul(u32::from(ATTENTION_BLOCK));
        funnel.launch(device, &Launch::linear(&self.kernels.attention_rows, &args, grid, ATTENTION_BLOCK, &uses))?;
        self.matmul(device, funnel, (tmp, layer.out, att), (d, qd, n))?;
        self.rmsnorm(device, funnel, (h, tmp), (n, d), layer.post_attn_norm)?;
        self.residual(device, funnel, (x, h), n)?;

        self.rmsnorm(device, funnel, (h, x), (n, d), layer.ffn_norm)?;
        self.matmul(device, funnel, (gate, layer.gate, h), (f, d, n))?;
        self.matmul(device, funnel, (up, layer.up, h), (f, d, n))?;
        ops::elementwise(device, funnel, &self.kernels.gelu_mul, (act, gate, up), f * n)?;
        self.matmul(device, funnel, (tmp, layer.down, act), (d, f, n))?;
        self.rmsnorm(device, funnel, (h, tmp), (n, d), layer.post_ffn_norm)?;
        self.residual(device, funnel, (x, h), n)
    }

    /// [`Workload::prefill`] of [`Gemma3`].
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
        let args = [
            ArgValue::Pointer(x),
            ArgValue::Pointer(x),
            ArgValue::F32(self.params.embedding_scale),
            ArgValue::U32(count),
        ];
        let uses = [Use::read_write(x, 4 * u64::from(count))];
        funnel.launch(device, &Launch::linear(&self.kernels.scale, &args, count, LINEAR_BLOCK, &uses))?;
        for (index, layer) in self.layers.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            self.prefill_layer(device, funnel, (layer, index), (first, n))?;
        }
        // The last token's hidden vector through the final norm into the step's `h`, then the
        // logits, exactly as the step ends.
        let h = self.va(s::H);
        let last_row = x + 4 * u64::from(d) * u64::from(n - 1);
        self.rmsnorm(device, funnel, (h, last_row), (1, d), self.output_norm)?;
        self.matvec(device, funnel, (self.va(s::LOGITS), self.output, h), (self.params.vocab, d))
    }
}

/// The prefill pass's surfaces for a model of `p` with a cache of `context` positions.
pub(super) fn allocate_surfaces(
    device: &mut dyn Device,
    p: &Gemma3Params,
    context: u32,
) -> Result<Vec<Surface>, WorkloadError> {
    let rows = |n: u32| 4 * u64::from(n) * u64::from(PREFILL_CHUNK);
    let (d, f, kv, qd) = (p.dim, p.ffn, p.kv_dim(), p.q_dim());
    let shapes: [(&str, u64); p::COUNT] = [
        ("prefill_tokens", rows(1)),
        ("prefill_x", rows(d)),
        ("prefill_h", rows(d)),
        ("prefill_q", rows(qd)),
        ("prefill_k", rows(kv)),
        ("prefill_v", rows(kv)),
        ("prefill_q_normed", rows(qd)),
        ("prefill_k_normed", rows(kv)),
        ("prefill_att", rows(qd)),
        ("prefill_tmp", rows(d)),
        ("prefill_gate", rows(f)),
        ("prefill_up", rows(f)),
        ("prefill_act", rows(f)),
        ("prefill_scores", rows(p.heads) * u64::from(context)),
    ];
    shapes.iter().map(|&(name, bytes)| Surface::allocate(device, name, bytes, GUARD_BYTES)).collect()
}
