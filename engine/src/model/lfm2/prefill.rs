//! The prefill pass of [`Lfm2`]: the prompt's tokens through every block at once (see the module
//! documentation of [`super`]). Every launch computes row `t` with the operations the decode
//! step's launch performs for token `t`: the batched products and row gathers, NEOX RoPE and
//! causal attention over rows are bit for bit their decode kernels per row, `shortconv_rows`
//! runs each channel's tokens in order through the convolution state exactly as `shortconv`
//! does one token, and the RMSNorms (one work-group per row), residual adds and SiLU gating are
//! the decode kernels themselves over more rows. The convolution is the one recurrence of the
//! pass: it runs token by token inside the one launch, each channel on its own work-item.

use hal::Device;
use kernarg_abi::layout::ArgValue;

use super::{ATTENTION_BLOCK, LINEAR_BLOCK, Layer, Lfm2, Lfm2Params, Mixer, PREFILL_CHUNK, Weight, s};
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
    pub(super) const BCX: usize = 13;
    pub(super) const CONV: usize = 14;
    pub(super) const SCORES: usize = 15;
    pub(super) const COUNT: usize = 16;
}

impl Lfm2 {
    fn pva(&self, surface: usize) -> u64 {
        self.prefill_surfaces[surface].va
    }

    /// `y[t] = w · x[t]` for the `n` rows of a pass, each row the bits [`Lfm2::matvec`] gives.
    fn matmul(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        operands: (u64, Weight, u64),
        dims: (u32, u32, u32),
    ) -> Result<(), WorkloadError> {
        weights::matmul(device, funnel, &self.kernels.matmul, operands, dims)
    }

    /// The convolution mixer over the `n` rows of `h`, into `tmp`.
    fn prefill_conv(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        (in_proj, conv, out_proj): (Weight, Weight, Weight),
        (index, n): (u32, u32),
    ) -> Result<(), WorkloadError> {
        let pr = self.params;
        let d = pr.dim;
        let [h, bcx, y, tmp] = [p::H, p::BCX, p::CONV, p::TMP].map(|i| self.pva(i));
        let state_bytes = self.block_bytes().1;
        let state = self.va(s::CONV_STATE) + u64::from(index) * state_bytes;
        self.matmul(device, funnel, (bcx, in_proj, h), (3 * d, d, n))?;
        let args = [
            ArgValue::Pointer(y),
            ArgValue::Pointer(state),
            ArgValue::Pointer(bcx),
            ArgValue::Pointer(conv.va),
            ArgValue::U32(d),
            ArgValue::U32(pr.d_conv()),
            ArgValue::U32(n),
        ];
        let rows = u64::from(d) * u64::from(n);
        let uses = [
            Use::write(y, 4 * rows),
            Use::read_write(state, state_bytes),
            Use::read(bcx, 12 * rows),
            Use::read(conv.va, conv.bytes),
        ];
        funnel.launch(device, &Launch::linear(&self.kernels.shortconv_rows, &args, d, LINEAR_BLOCK, &uses))?;
        self.matmul(device, funnel, (tmp, out_proj, y), (d, d, n))
    }

    /// The attention mixer over the `n` rows of `h` at positions `first..first + n`, into `tmp`.
    fn prefill_attention(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        mixer: &Mixer,
        (first, n): (u32, u32),
    ) -> Result<(), WorkloadError> {
        let Mixer::Attention { q: wq, k: wk, v: wv, q_norm, k_norm, out, index } = *mixer else {
            return Ok(());
        };
        let pr = self.params;
        let (d, kv, hd) = (pr.dim, pr.kv_dim(), pr.head_dim);
        let [h, q, k, v, qn, kn, att, tmp, scores] =
            [p::H, p::Q, p::K, p::V, p::QN, p::KN, p::ATT, p::TMP, p::SCORES].map(|i| self.pva(i));
        let (table, table_bytes) = (self.va(s::ROPE), self.surfaces[s::ROPE].bytes);
        let layer_bytes = self.block_bytes().0;
        let k_cache = self.va(s::K_CACHE) + u64::from(index) * layer_bytes;
        let v_cache = self.va(s::V_CACHE) + u64::from(index) * layer_bytes;

        self.matmul(device, funnel, (q, wq, h), (d, d, n))?;
        self.matmul(device, funnel, (k, wk, h), (kv, d, n))?;
        self.matmul(device, funnel, (v, wv, h), (kv, d, n))?;
        self.rmsnorm(device, funnel, (qn, q), (n * pr.heads, hd), q_norm)?;
        self.rmsnorm(device, funnel, (kn, k), (n * pr.kv_heads, hd), k_norm)?;
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
        let row_offset = u64::from(first) * 4 * u64::from(kv);
        for (cache, src) in [(k_cache, kn), (v_cache, v)] {
            let count = kv * n;
            let dst = cache + row_offset;
            let args = [ArgValue::Pointer(dst), ArgValue::Pointer(src), ArgValue::U32(count)];
            let uses = [Use::write(dst, 4 * u64::from(count)), Use::read(src, 4 * u64::from(count))];
            funnel.launch(device, &Launch::linear(&self.kernels.copy, &args, count, LINEAR_BLOCK, &uses))?;
        }
        let args = [
            ArgValue::Pointer(att),
            ArgValue::Pointer(qn),
            ArgValue::Pointer(k_cache),
            ArgValue::Pointer(v_cache),
            ArgValue::Pointer(scores),
            ArgValue::U32(first),
            ArgValue::U32(n),
            ArgValue::U32(pr.heads),
            ArgValue::U32(pr.kv_heads),
            ArgValue::U32(hd),
            ArgValue::U32(self.context),
            ArgValue::F32(pr.attention_scale),
        ];
        let rows_bytes = 4 * u64::from(d) * u64::from(n);
        let uses = [
            Use::write(att, rows_bytes),
            Use::read(qn, rows_bytes),
            Use::read(k_cache, layer_bytes),
            Use::read(v_cache, layer_bytes),
            Use::read_write(scores, self.prefill_surfaces[p::SCORES].bytes),
        ];
        let grid = (pr.heads * n).saturating_mul(u32::from(ATTENTION_BLOCK));
        funnel.launch(device, &Launch::linear(&self.kernels.attention_rows, &args, grid, ATTENTION_BLOCK, &uses))?;
        self.matmul(device, funnel, (tmp, out, att), (d, d, n))
    }

    /// One block of a pass over `n` tokens at positions `first..first + n`.
    fn prefill_layer(
        &self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        layer: &Layer,
        (first, n): (u32, u32),
    ) -> Result<(), WorkloadError> {
        let pr = self.params;
        let (d, f) = (pr.dim, pr.ffn);
        let [x, h, gate, up, act, tmp] = [p::X, p::H, p::GATE, p::UP, p::ACT, p::TMP].map(|i| self.pva(i));
        self.rmsnorm(device, funnel, (h, x), (n, d), layer.attn_norm)?;
        match layer.mixer {
            Mixer::Conv { in_proj, conv, out_proj, index } => {
                self.prefill_conv(device, funnel, (in_proj, conv, out_proj), (index, n))?;
            }
            attention @ Mixer::Attention { .. } => self.prefill_attention(device, funnel, &attention, (first, n))?,
        }
        self.residual(device, funnel, (x, tmp), n)?;

        self.rmsnorm(device, funnel, (h, x), (n, d), layer.ffn_norm)?;
        self.matmul(device, funnel, (gate, layer.gate, h), (f, d, n))?;
        self.matmul(device, funnel, (up, layer.up, h), (f, d, n))?;
        ops::elementwise(device, funnel, &self.kernels.silu_mul, (act, gate, up), f * n)?;
        self.matmul(device, funnel, (tmp, layer.down, act), (d, f, n))?;
        self.residual(device, funnel, (x, tmp), n)
    }

    /// [`Workload::prefill`] of [`Lfm2`].
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
        self.matvec(device, funnel, (self.va(s::LOGITS), self.output, h), (self.params.vocab, d))
    }
}

/// The prefill pass's surfaces for a model of `p` with a cache of `context` positions.
pub(super) fn allocate_surfaces(
    device: &mut dyn Device,
    p: &Lfm2Params,
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
        ("prefill_q_normed", rows(d)),
        ("prefill_k_normed", rows(kv)),
        ("prefill_att", rows(d)),
        ("prefill_tmp", rows(d)),
        ("prefill_gate", rows(f)),
        ("prefill_up", rows(f)),
        ("prefill_act", rows(f)),
        ("prefill_bcx", rows(3 * d)),
        ("prefill_conv", rows(d)),
        ("prefill_scores", rows(p.heads) * u64::from(context)),
    ];
    shapes.iter().map(|&(name, bytes)| Surface::allocate(device, name, bytes, GUARD_BYTES)).collect()
}
