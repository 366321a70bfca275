//! `attention_rows`: causal grouped-query attention over the rows of a prefill pass, each row
//! the bits of `attention` at its position (the contract of [`super`]).

use rayon::prelude::*;

use super::*;
use crate::cpu::llama::softmax;
use crate::cpu::simd::compiled_for;

// The work-group size of `attention_rows`, as `attention`'s (whose softmax it shares).
const _: () = assert!(signature::attention_rows::BLOCK == 64);
/// The largest count a `j += 64` loop over 32-bit `j` ends for.
const ATTN_COUNT_MAX: u32 = u32::MAX - 63;
/// Multiply-adds below which a batch of work-groups runs on the calling thread only (a decode
/// step's heads at a few hundred positions are worth spreading).
const ATTN_PARALLEL_WORK_MIN: usize = 1 << 16;
/// Positions whose dot products the reference computes together.
const POSITIONS: usize = 16;
/// (row, head) work-groups computed between two rounds of stores, at most.
const ATTN_BATCH: usize = 256;
/// Scores a batch of work-groups holds on the host, at most (a batch has at least one
/// work-group, whose scores the key cache's size bounds).
const ATTN_BATCH_SCORES: usize = 1 << 22;

/// `attention_rows(float* out, const float* q, const float* k_cache, const float* v_cache,
/// float* scores, u32 pos0, u32 n, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride,
/// float scale)`: causal grouped-query attention for `n` query rows. `q` and `out` are
/// `[n][heads][head_dim]`, the caches `[position][kv_heads * head_dim]`; query row `t` sits at
/// position `pos0 + t` and attends positions `0..=pos0 + t`. Work-group `g = t * heads + h` (of
/// exactly 64 work-items) handles row `t`, head `h`, with kv head `h / (heads / kv_heads)` and
/// scores row `g` of `scores_stride` floats.
///
/// Row `t`, head `h` is bit for bit [`crate::cpu::attention`] with `n = pos0 + t + 1` on `q[t][h]`:
/// `s[j] = (sum_d q[d] * k[j][d], d ascending) * scale`, the maximum per work-item over
/// `j = l, l + 64, ...` and by the LDS tree, `p[j] = exp(s[j] - max)` with [`crate::cpu::expf`] summed the
/// same way, `out[d] = (sum_j p[j] * v[j][d], j ascending) / sum`; the scores row ends holding
/// `p[j]`.
///
/// Launch preconditions: work-group size 64, no partial work-group with a (row, head), and, when
/// any is handled, `kv_heads` non-zero dividing `heads`, `pos0 + n <= scores_stride`, and
/// `pos0 + n` and `head_dim` at most `2^32 - 64`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn attention_rows(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::attention_rows::{
        BLOCK, HEAD_DIM, HEADS, K_CACHE, KV_HEADS, N, OUT, POS0, Q, SCALE, SCORES, SCORES_STRIDE, V_CACHE,
    };
    let grid = Grid::new(launch, &signature::ATTENTION_ROWS)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if workgroup_size_x != BLOCK {
        return Err(KernelError::WorkgroupSizeRequired { workgroup_size_x, required: BLOCK });
    }
    let k = launch.kernarg;
    let (out, q, k_cache, v_cache, scores) =
        (OUT.read_ptr(k)?, Q.read_ptr(k)?, K_CACHE.read_ptr(k)?, V_CACHE.read_ptr(k)?, SCORES.read_ptr(k)?);
    let (pos0, n, heads, kv_heads) = (POS0.read_u32(k)?, N.read_u32(k)?, HEADS.read_u32(k)?, KV_HEADS.read_u32(k)?);
    let (head_dim, scores_stride, scale) = (HEAD_DIM.read_u32(k)?, SCORES_STRIDE.read_u32(k)?, SCALE.read_f32(k)?);
    let groups = grid.workgroups();
    let items = u64::from(n) * u64::from(heads);
    if !grid.size_x.is_multiple_of(grid.workgroup_x) && u64::from(groups - 1) < items {
        return Err(KernelError::PartialWorkgroup { grid_size_x: grid.size_x, workgroup_size_x });
    }
    let active = items.min(groups.into());
    if active == 0 {
        return Ok(());
    }
    if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        return Err(KernelError::KvHeadsMismatch { heads, kv_heads });
    }
    let end = u64::from(pos0) + u64::from(n);
    if end > u64::from(scores_stride) {
        let n = u32::try_from(end).unwrap_or(u32::MAX);
        return Err(KernelError::ScoresStrideTooSmall { n, scores_stride });
    }
    // end <= scores_stride fits 32 bits.
    let end = u32::try_from(end).unwrap_or(u32::MAX);
    for (arg, count) in [("pos0 + n", end), (HEAD_DIM.name, head_dim)] {
        if count > ATTN_COUNT_MAX {
            return Err(KernelError::StridedLoopWraps { arg, count, limit: ATTN_COUNT_MAX });
        }
    }
    // The positions the last handled row attends.
    let positions = u64::from(pos0) + (active - 1) / u64::from(heads) + 1;
    let kv_width = u64::from(kv_heads) * u64::from(head_dim);
    let qs = load_f32_vec(memory, &Q, q, 0, active * u64::from(head_dim))?;
    let ks = load_f32_vec(memory, &K_CACHE, k_cache, 0, positions.saturating_mul(kv_width))?;
    let vs = load_f32_vec(memory, &V_CACHE, v_cache, 0, positions.saturating_mul(kv_width))?;
    // Every element of q and the caches was read, so their counts fit the host.
    let shape = AttentionRows {
        isa: Isa::widest(),
        pos0: widen(pos0),
        heads: widen(heads),
        head_dim: widen(head_dim),
        kv_width: narrow(kv_width),
        group: widen(heads / kv_heads),
        blocks: narrow(positions).div_ceil(POSITIONS),
        scale,
    };
    let (active, stride) = (narrow(active), u64::from(scores_stride));
    if head_dim == 0 {
        return shape.store_uniform_scores(memory, scores, stride, active);
    }
    let keys = shape.transpose_keys(&ks, widen(kv_heads));
    drop(ks);
    let mut first = 0usize;
    while first < active {
        let end = shape.batch_end(first, active);
        // Each work-group's scores row, then the batch's `out` rows (contiguous) at once.
        let mut rows = Vec::with_capacity((end - first) * shape.head_dim);
        for (g, (p, row)) in (first..end).zip(shape.attend_batch(first..end, &qs, &keys, &vs)) {
            store(memory, &SCORES, scores, widen_usize(g) * stride, &p)?;
            rows.extend(row);
        }
        store(memory, &OUT, out, widen_usize(first * shape.head_dim), &rows)?;
        first = end;
    }
    Ok(())
}

/// The `(scores row, out row)` bits of every head `h < heads` of one query over the cached
/// positions `j < n` (`n >= 1`): the work-groups of [`crate::cpu::attention`], computed as row 0
/// of `attention_rows` with `pos0 = n - 1`, whose contract makes it those bits. `qs` holds the
/// heads' queries, the caches `n` positions of `kv_heads * head_dim`; head `h` reads kv head
/// `h / group`.
pub(crate) fn single_query(
    qs: &[f32],
    ks: &[f32],
    vs: &[f32],
    n: usize,
    shape: (usize, usize, usize, usize),
    scale: f32,
) -> Vec<(Vec<u32>, Vec<u32>)> {
    single_query_on(Isa::widest(), qs, ks, vs, n, shape, scale)
}

/// [`single_query`] with its loops compiled for `isa`.
fn single_query_on(
    isa: Option<Isa>,
    qs: &[f32],
    ks: &[f32],
    vs: &[f32],
    n: usize,
    (heads, kv_heads, head_dim, group): (usize, usize, usize, usize),
    scale: f32,
) -> Vec<(Vec<u32>, Vec<u32>)> {
    let shape = AttentionRows {
        isa,
        pos0: n.saturating_sub(1),
        heads,
        head_dim,
        kv_width: kv_heads * head_dim,
        group: group.max(1),
        blocks: n.div_ceil(POSITIONS),
        scale,
    };
    let keys = shape.transpose_keys(ks, kv_heads);
    shape.attend_batch(0..heads, qs, &keys, vs)
}

/// The validated shape of an `attention_rows` launch, as host counts.
#[derive(Clone, Copy)]
struct AttentionRows {
    /// The instruction set the work-groups' loops are compiled for.
    isa: Option<Isa>,
    pos0: usize,
    heads: usize,
    head_dim: usize,
    kv_width: usize,
    /// Query heads per kv head.
    group: usize,
    /// Blocks of [`POSITIONS`] positions covering every position attended.
    blocks: usize,
    scale: f32,
}

impl AttentionRows {
    /// The end of the batch of work-groups from `first`: at most [`ATTN_BATCH`] of them and
    /// [`ATTN_BATCH_SCORES`] scores, at least one.
    fn batch_end(&self, first: usize, active: usize) -> usize {
        let mut scores = 0usize;
        let mut end = first;
        while end < active && end - first < ATTN_BATCH {
            scores += self.pos0 + end / self.heads + 1;
            if end > first && scores > ATTN_BATCH_SCORES {
                break;
            }
            end += 1;
        }
        end
    }

    /// Every work-group's scores when `head_dim` is 0: no products, so every score is
    /// `0.0 * scale` and every `p[j]` the same value (the maximum is that score, or `-inf` when
    /// it is NaN); `out` rows are empty. Nothing bounds the positions by a cache read here, so
    /// each row is stored in chunks.
    fn store_uniform_scores(
        &self,
        memory: &mut dyn DeviceMemory,
        scores: u64,
        stride: u64,
        active: usize,
    ) -> Result<(), KernelError> {
        use signature::attention_rows::SCORES;
        let mut p = [0.0f32 * self.scale];
        softmax(&mut p);
        let chunk = vec![p[0].to_bits(); READ_CHUNK_ELEMENTS];
        for g in 0..active {
            let count = self.pos0 + g / self.heads + 1;
            let mut done = 0usize;
            while done < count {
                let len = (count - done).min(chunk.len());
                let index = widen_usize(g) * stride + widen_usize(done);
                store(memory, &SCORES, scores, index, &chunk[..len])?;
                done += len;
            }
        }
        Ok(())
    }

    /// The key cache as `[kv head][block][d]` of [`POSITIONS`] positions each, zero past the last
    /// position: a block's dot products then read contiguous memory.
    fn transpose_keys(&self, ks: &[f32], kv_heads: usize) -> Vec<[f32; POSITIONS]> {
        let head_dim = self.head_dim;
        let mut keys = vec![[0.0f32; POSITIONS]; kv_heads * self.blocks * head_dim];
        if head_dim == 0 {
            return keys;
        }
        for (j, row) in ks.chunks_exact(self.kv_width).enumerate() {
            for (kvh, key) in row.chunks_exact(head_dim).enumerate() {
                let block = &mut keys[(kvh * self.blocks + j / POSITIONS) * head_dim..][..head_dim];
                for (slot, &v) in block.iter_mut().zip(key) {
                    slot[j % POSITIONS] = v;
                }
            }
        }
        keys
    }

    /// `(scores row, out row)` bits of the work-groups `range`, in order.
    fn attend_batch(
        &self,
        range: std::ops::Range<usize>,
        qs: &[f32],
        keys: &[[f32; POSITIONS]],
        vs: &[f32],
    ) -> Vec<(Vec<u32>, Vec<u32>)> {
        let last_positions = self.pos0 + (range.end - 1) / self.heads + 1;
        let work = range.len().saturating_mul(last_positions).saturating_mul(self.head_dim + 1);
        // Each work-group compiled for the machine's widest vector registers (the same bits,
        // see `compiled_for`).
        let attend = |g: usize| {
            compiled_for(
                self.isa,
                #[inline(always)]
                || self.attend(g, qs, keys, vs),
            )
        };
        if work < ATTN_PARALLEL_WORK_MIN {
            range.map(attend).collect()
        } else {
            range.into_par_iter().map(attend).collect()
        }
    }

    /// Work-group `g`: query row `g / heads`, head `g % heads`.
    #[inline(always)]
    fn attend(&self, g: usize, qs: &[f32], keys: &[[f32; POSITIONS]], vs: &[f32]) -> (Vec<u32>, Vec<u32>) {
        let count = self.pos0 + g / self.heads + 1;
        let kv_offset = g % self.heads / self.group * self.head_dim;
        let qh = &qs[g * self.head_dim..][..self.head_dim];
        let mut p = self.scores(qh, &keys[kv_offset * self.blocks..], count);
        let total = softmax(&mut p);
        let mut acc = vec![0.0f32; self.head_dim];
        for (j, &pj) in p.iter().enumerate() {
            let vj = &vs[j * self.kv_width + kv_offset..][..self.head_dim];
            for (a, &v) in acc.iter_mut().zip(vj) {
                *a += pj * v;
            }
        }
        (p.iter().map(|v| v.to_bits()).collect(), acc.iter().map(|&a| (a / total).to_bits()).collect())
    }

    /// `s[j] = (sum_d q[d] * k[j][d], d ascending) * scale` for `j < count`, from the kv head's
    /// transposed keys (`[block][d]`).
    #[inline(always)]
    fn scores(&self, qh: &[f32], keys: &[[f32; POSITIONS]], count: usize) -> Vec<f32> {
        let blocks = count.div_ceil(POSITIONS);
        let mut s = Vec::with_capacity(blocks * POSITIONS);
        for b in 0..blocks {
            let mut acc = [0.0f32; POSITIONS];
            for (&qd, k) in qh.iter().zip(&keys[b * self.head_dim..][..self.head_dim]) {
                for (a, &kv) in acc.iter_mut().zip(k) {
                    *a += qd * kv;
                }
            }
            s.extend(acc.map(|dot| dot * self.scale));
        }
        s.truncate(count);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's work-group `h` written plainly: `s[j] = (sum_d q[d] * k[j][d], d ascending) *
    /// scale`, the softmax of `attention`, `out[d] = (sum_j p[j] * v[j][d], j ascending) / sum`.
    fn plain(
        qs: &[f32],
        ks: &[f32],
        vs: &[f32],
        n: usize,
        shape: (usize, usize, usize, usize),
        scale: f32,
    ) -> Vec<(Vec<u32>, Vec<u32>)> {
        let (heads, kv_heads, head_dim, group) = shape;
        let kv_width = kv_heads * head_dim;
        (0..heads)
            .map(|h| {
                let kv_offset = h / group * head_dim;
                let qh = &qs[h * head_dim..][..head_dim];
                let mut p: Vec<f32> = (0..n)
                    .map(|j| {
                        let mut dot = 0.0f32;
                        for (&a, &b) in qh.iter().zip(&ks[j * kv_width + kv_offset..][..head_dim]) {
                            dot += a * b;
                        }
                        dot * scale
                    })
                    .collect();
                let total = softmax(&mut p);
                let mut acc = vec![0.0f32; head_dim];
                for (j, &pj) in p.iter().enumerate() {
                    for (a, &v) in acc.iter_mut().zip(&vs[j * kv_width + kv_offset..][..head_dim]) {
                        *a += pj * v;
                    }
                }
                (p.iter().map(|v| v.to_bits()).collect(), acc.iter().map(|&a| (a / total).to_bits()).collect())
            })
            .collect()
    }

    #[test]
    fn a_single_query_is_the_kernel_written_plainly() {
        let mut state = 0x9e37_79b9u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            // Now and then any bit pattern (NaN, infinities, subnormals, signed zeros).
            if state.is_multiple_of(64) {
                f32::from_bits(state.rotate_left(9))
            } else {
                f32::from(u16::try_from(state % 4001).unwrap_or(0)) / 1000.0 - 2.0
            }
        };
        for (n, heads, kv_heads, head_dim) in
            [(1, 1, 1, 1), (15, 3, 1, 8), (16, 9, 3, 64), (17, 4, 2, 5), (300, 9, 3, 64), (70, 6, 6, 0)]
        {
            let kv_width = kv_heads * head_dim;
            let qs: Vec<f32> = (0..heads * head_dim).map(|_| next()).collect();
            let ks: Vec<f32> = (0..n * kv_width).map(|_| next()).collect();
            let vs: Vec<f32> = (0..n * kv_width).map(|_| next()).collect();
            let shape = (heads, kv_heads, head_dim, heads / kv_heads);
            let want = plain(&qs, &ks, &vs, n, shape, 0.125);
            let isas = crate::cpu::simd::available_for_tests().into_iter().map(Some).chain([None]);
            for isa in isas {
                let got = single_query_on(isa, &qs, &ks, &vs, n, shape, 0.125);
                let same = |a: &[u32], b: &[u32]| {
                    a.len() == b.len()
                        && a.iter()
                            .zip(b)
                            .all(|(&a, &b)| a == b || (f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan()))
                };
                for (h, ((gp, go), (wp, wo))) in got.iter().zip(&want).enumerate() {
                    assert!(
                        same(gp, wp) && same(go, wo),
                        "{isa:?}, n {n} heads {heads} kv_heads {kv_heads} head_dim {head_dim}: head {h}"
                    );
                }
                assert_eq!(got.len(), heads);
            }
        }
    }
}
