//! The prefill pass of [`Qwen35`]: the prompt's tokens through every layer at once (see the
//! module documentation of [`super`]). Every launch computes row `t` with the operations the
//! decode step's launch performs for token `t`: the batched products and row gathers, causal
//! attention over rows and the copies into the caches are bit for bit their decode kernels per
//! row; the RMSNorms, residual adds and gatings are the decode kernels over more rows; the
//! convolution, the delta rule, the split and the rotary embedding are the decode launches'
//! kernels with the pass's token count, each work-item running the tokens in order on the state
//! it owns.

use hal::Device;
use kernarg_abi::layout::ArgValue;

use super::{ATTENTION_BLOCK, Attention, Block, Delta, LINEAR_BLOCK, Layer, PREFILL_CHUNK, Qwen35, Qwen35Params, s};
use crate::funnel::{Funnel, Launch, Use};
use crate::model::ops;
use crate::workload::{GUARD_BYTES, Surface, Workload, WorkloadError};

/// The prefill pass's surfaces: [`PREFILL_CHUNK`] rows of each decode activation, the token ids,
/// and the attention scratch (a row of `context` scores per token and head).
mod p {
    pub(super) const TOKENS: usize = 0;
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
    pub(super) const COUNT: usize = 25;
}

impl Qwen35 {
    fn pva(&self, surface: usize) -> u64 {
        self.prefill_surfaces[surface].va
    }

    /// A DeltaNet block over `n` rows of `h`, its output in `tmp`.
    fn prefill_delta(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        delta: &Delta,
        n: u32,
    ) -> Result<(), WorkloadError> {
        let pr = self.params;
        let (d, vd) = (pr.dim, pr.value_dim());
        let [h, tmp, qkv, conv, z, beta, alpha, out, normed, gated] =
            [p::H, p::TMP, p::QKV, p::CONV, p::Z, p::BETA, p::ALPHA, p::DELTA, p::NORMED, p::GATED]
                .map(|i| self.pva(i));
        self.matmul(device, funnel, (qkv, delta.qkv, h), (pr.conv_dim(), d, n))?;
        self.matmul(device, funnel, (z, delta.gate, h), (vd, d, n))?;
        self.matmul(device, funnel, (beta, delta.beta, h), (pr.v_heads, d, n))?;
        self.matmul(device, funnel, (alpha, delta.alpha, h), (pr.v_heads, d, n))?;
        self.convolve(device, funnel, (conv, qkv), delta, n)?;
        self.delta_rule(device, funnel, (out, conv, alpha, beta), delta, n)?;
        self.rmsnorm(device, funnel, (normed, out), (pr.v_heads * n, pr.state), delta.norm)?;
        ops::elementwise(device, funnel, &self.kernels.silu_mul, (gated, z, normed), vd * n)?;
        self.matmul(device, funnel, (tmp, delta.out, gated), (d, vd, n))
    }

    /// A full-attention block over `n` rows of `h` at positions `first..first + n`, its output in
    /// `tmp`.
    fn prefill_attention(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        attention: &Attention,
        (first, n): (u32, u32),
    ) -> Result<(), WorkloadError> {
        let pr = self.params;
        let (d, qd, kv, hd) = (pr.dim, pr.q_dim(), pr.kv_dim(), pr.head_dim);
        let [h, tmp, qg, q, gate, k, v, qn, kn, att, att_gated, scores] =
            [p::H, p::TMP, p::QG, p::Q, p::GATE, p::K, p::V, p::QN, p::KN, p::ATT, p::ATT_GATED, p::SCORES]
                .map(|i| self.pva(i));
        let position_bytes = 4 * u64::from(kv);
        let layer_bytes = u64::from(self.context) * position_bytes;
        let k_cache = self.va(s::K_CACHE) + u64::from(attention.index) * layer_bytes;
        let v_cache = self.va(s::V_CACHE) + u64::from(attention.index) * layer_bytes;

        self.matmul(device, funnel, (qg, attention.q, h), (2 * qd, d, n))?;
        self.matmul(device, funnel, (k, attention.k, h), (kv, d, n))?;
        self.matmul(device, funnel, (v, attention.v, h), (kv, d, n))?;
        self.split(device, funnel, (q, gate, qg), n)?;
        self.rmsnorm(device, funnel, (qn, q), (n * pr.heads, hd), attention.q_norm)?;
        self.rmsnorm(device, funnel, (kn, k), (n * pr.kv_heads, hd), attention.k_norm)?;
        self.rope(device, funnel, (qn, pr.heads), (first, n), None)?;
        self.rope(device, funnel, (kn, pr.kv_heads), (first, n), None)?;
        // The rotated K rows and the V rows into the caches at positions first..first + n.
        let row_offset = u64::from(first) * position_bytes;
        for (cache, src) in [(k_cache, kn), (v_cache, v)] {
            let count = kv * n;
            let dst = cache + row_offset;
            let args = [ArgValue::Pointer(dst), ArgValue::Pointer(src), ArgValue::U32(count)];
            let uses = [Use::write(dst, 4 * u64::from(count)), Use::read(src, 4 * u64::from(count))];
            funnel.launch(device, &Launch::linear(&self.kernels.copy, &args, count, LINEAR_BLOCK, &uses))?;
        }
        // Every key up to the row's own: a window as long as the cache.
        let args = [
            ArgValue::Pointer(att),
            ArgValue::Pointer(qn),
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(v_cache),
            ArgValue::Pointer(scores),
            ArgValue::U32(first),
            ArgValue::U32(n),
            ArgValue::U32(self.context),
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
        ops::elementwise(device, funnel, &self.kernels.sigmoid_mul, (att_gated, gate, att), qd * n)?;
        self.matmul(device, funnel, (tmp, attention.out, att_gated), (d, qd, n))
    }

    /// One layer of a pass over `n` tokens at positions `first..first + n`.
    fn prefill_layer(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        layer: &Layer,
        (first, n): (u32, u32),
    ) -> Result<(), WorkloadError> {
        let [x, h, tmp, gate, up, act] = [p::X, p::H, p::TMP, p::FFN_GATE, p::UP, p::ACT].map(|i| self.pva(i));
        self.rmsnorm(device, funnel, (h, x), (n, self.params.dim), layer.attn_norm)?;
        match &layer.block {
            Block::Delta(delta) => self.prefill_delta(device, funnel, delta, n)?,
            Block::Attention(attention) => self.prefill_attention(device, funnel, attention, (first, n))?,
        }
        self.residual(device, funnel, (x, tmp), n)?;
        self.ffn(device, funnel, layer, (x, h, tmp, gate, up, act), n)
    }

    /// [`Workload::prefill`] of [`Qwen35`].
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
        for layer in &self.layers {
            self.prefill_layer(device, funnel, layer, (first, n))?;
        }
        // The last token's hidden vector through the final norm into the step's `h`, then the
        // logits, exactly as the step ends.
        let h = self.va(s::H);
        let last_row = x + 4 * u64::from(d) * u64::from(n - 1);
        self.rmsnorm(device, funnel, (h, last_row), (1, d), self.output_norm)?;
        self.matmul(device, funnel, (self.va(s::LOGITS), self.output, h), (self.params.vocab, d, 1))
    }
}

/// The prefill pass's surfaces for a model of `pr` with a cache of `context` positions.
pub(super) fn allocate_surfaces(
    device: &mut dyn Device,
    pr: &Qwen35Params,
    context: u32,
) -> Result<Vec<Surface>, WorkloadError> {
    let rows = |n: u32| 4 * u64::from(n.max(1)) * u64::from(PREFILL_CHUNK);
    let (d, f, kv, qd) = (pr.dim, pr.ffn, pr.kv_dim(), pr.q_dim());
    let (conv, vd, vh) = (pr.conv_dim(), pr.value_dim(), pr.v_heads);
    let shapes: [(&str, u64); p::COUNT] = [
        ("prefill_tokens", rows(1)),
        ("prefill_x", rows(d)),
        ("prefill_h", rows(d)),
        ("prefill_tmp", rows(d)),
        ("prefill_qkv", rows(conv)),
        ("prefill_conv", rows(conv)),
        ("prefill_z", rows(vd)),
        ("prefill_beta", rows(vh)),
        ("prefill_alpha", rows(vh)),
        ("prefill_delta", rows(vd)),
        ("prefill_normed", rows(vd)),
        ("prefill_gated", rows(vd)),
        ("prefill_qg", rows(2 * qd)),
        ("prefill_q", rows(qd)),
        ("prefill_gate", rows(qd)),
        ("prefill_k", rows(kv)),
        ("prefill_v", rows(kv)),
        ("prefill_q_normed", rows(qd)),
        ("prefill_k_normed", rows(kv)),
        ("prefill_att", rows(qd)),
        ("prefill_att_gated", rows(qd)),
        ("prefill_scores", rows(pr.heads) * u64::from(context)),
        ("prefill_ffn_gate", rows(f)),
        ("prefill_up", rows(f)),
        ("prefill_act", rows(f)),
    ];
    shapes.iter().map(|&(name, bytes)| Surface::allocate(device, name, bytes, GUARD_BYTES)).collect()
}
