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
    let keys = shape.transpose_keys(&ks);
    drop(ks);
    let mut first = 0usize;
    while first < active {
        let end = shape.batch_end(first, active);
        // Each work-group's scores row, then the batch's `out` rows (contiguous) at once.
        let rows = shape.attend_batch(first..end, &qs, &keys, &vs);
        let mut offset = 0;
        for g in first..end {
            let count = shape.count(g);
            store(memory, &SCORES, scores, widen_usize(g) * stride, &rows.scores[offset..offset + count])?;
            offset += count;
        }
        let groups = (0..end - first).map(|i| i * shape.head_dim..(i + 1) * shape.head_dim);
        store_pieces(memory, &OUT, (out, widen_usize(first * shape.head_dim)), &rows.out, groups)?;
        first = end;
    }
    Ok(())
}

/// The scores rows (`n` each) and `out` rows of every head `h < heads` of one query over the
/// cached positions `j < n` (`n >= 1`): the work-groups of [`crate::cpu::attention`], computed as row 0
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
) -> BatchRows {
    single_query_on(Isa::widest(), qs, ks, vs, n, shape, scale)
}

/// [`single_query`] with its loops compiled for `isa`.
fn single_query_on(
    isa: Option<Isa>,
    qs: &[f32],
    ks: &[f32],
    vs: &[f32],
    n: usize,
    shape: (usize, usize, usize, usize),
    scale: f32,
) -> BatchRows {
    let rows = AttentionRows::single_query(isa, n, shape, scale);
    let keys = rows.transpose_keys(ks);
    rows.attend_batch(0..shape.0, qs, &keys, vs)
}

/// [`single_query`] over the key cache already transposed: `keys` holds at least the
/// [`POSITIONS`]-position blocks covering `j < n`, as [`transpose_rows`] lays them out (what it
/// holds past `n` does not matter).
pub(crate) fn single_query_transposed(
    qs: &[f32],
    keys: &[f32],
    vs: &[f32],
    n: usize,
    shape: (usize, usize, usize, usize),
    scale: f32,
) -> BatchRows {
    let rows = AttentionRows::single_query(Isa::widest(), n, shape, scale);
    rows.attend_batch(0..shape.0, qs, keys.as_chunks::<POSITIONS>().0, vs)
}

/// Brings `keys`, the transposed key cache of `kv_width` floats a position (`[block][kv_width]`
/// of [`POSITIONS`] lanes, a lane a position), up to date for the positions `rows`, whose cache
/// rows are `bytes` (little-endian `f32`): the layout [`single_query_transposed`] reads. The
/// storage grows to the blocks covering `rows.end` and never shrinks.
pub(crate) fn transpose_rows(keys: &mut Vec<f32>, rows: std::ops::Range<usize>, bytes: &[u8], kv_width: usize) {
    let floats = rows.end.div_ceil(POSITIONS) * kv_width * POSITIONS;
    if keys.len() < floats {
        keys.resize(floats, 0.0);
    }
    let blocks = keys.as_chunks_mut::<POSITIONS>().0;
    for (j, row) in rows.zip(bytes.chunks_exact(kv_width * 4)) {
        let block = &mut blocks[j / POSITIONS * kv_width..][..kv_width];
        for (slot, v) in block.iter_mut().zip(row.as_chunks::<4>().0) {
            slot[j % POSITIONS] = f32::from_le_bytes(*v);
        }
    }
}

/// The validated shape of an `attention_rows` launch, as host counts.
///
/// The work-groups read the key cache transposed, `[block][kv_width]` of [`POSITIONS`] lanes (a
/// lane a position): block `b` of kv head `kvh` is the `head_dim` entries from
/// `b * kv_width + kvh * head_dim`, so that a later position only adds to the last block.
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
    /// The shape of one query over `n` cached positions (row 0 with `pos0 = n - 1`).
    fn single_query(
        isa: Option<Isa>,
        n: usize,
        (heads, kv_heads, head_dim, group): (usize, usize, usize, usize),
        scale: f32,
    ) -> Self {
        Self {
            isa,
            pos0: n.saturating_sub(1),
            heads,
            head_dim,
            kv_width: kv_heads * head_dim,
            group: group.max(1),
            blocks: n.div_ceil(POSITIONS),
            scale,
        }
    }

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

    /// The key cache transposed (see [`AttentionRows`]): a block's dot products then read
    /// contiguous memory. The lanes past the last position hold unspecified values (their
    /// scores are computed and dropped, each lane on its own). The blocks are transposed on the
    /// machine's cores when the cache is large enough to be worth it, into storage each calling
    /// thread keeps ([`KEYS`]: no zero fill, no fresh pages at each call).
    fn transpose_keys(&self, ks: &[f32]) -> Keys {
        let kv_width = self.kv_width;
        let mut keys = KEYS.with(|k| std::mem::take(&mut *k.borrow_mut()));
        keys.resize(self.blocks * kv_width, [0.0; POSITIONS]);
        if kv_width == 0 {
            return Keys(keys);
        }
        let fill = |(b, block): (usize, &mut [[f32; POSITIONS]])| {
            for (j, row) in ks.chunks_exact(kv_width).enumerate().skip(b * POSITIONS).take(POSITIONS) {
                for (slot, &v) in block.iter_mut().zip(row) {
                    slot[j % POSITIONS] = v;
                }
            }
        };
        if ks.len() < ATTN_PARALLEL_WORK_MIN {
            keys.chunks_mut(kv_width).enumerate().for_each(fill);
        } else {
            keys.par_chunks_mut(kv_width).enumerate().with_min_len(TRANSPOSE_BLOCKS_MIN).for_each(fill);
        }
        Keys(keys)
    }

    /// Positions work-group `g` attends.
    fn count(&self, g: usize) -> usize {
        self.pos0 + g / self.heads + 1
    }

    /// The rows of the work-groups `range`, in order.
    fn attend_batch(
        &self,
        range: std::ops::Range<usize>,
        qs: &[f32],
        keys: &[[f32; POSITIONS]],
        vs: &[f32],
    ) -> BatchRows {
        let total: usize = range.clone().map(|g| self.count(g)).sum();
        let mut rows = BatchRows { scores: vec![0; total], out: vec![0; range.len() * self.head_dim] };
        // Each work-group's own rows of the results.
        let mut items = Vec::with_capacity(range.len());
        let (mut scores, mut out) = (&mut rows.scores[..], &mut rows.out[..]);
        for g in range.clone() {
            let (p, scores_rest) = std::mem::take(&mut scores).split_at_mut(self.count(g));
            let (o, out_rest) = std::mem::take(&mut out).split_at_mut(self.head_dim);
            (scores, out) = (scores_rest, out_rest);
            items.push((g, p, o));
        }
        let last_positions = self.count(range.end - 1);
        let work = range.len().saturating_mul(last_positions).saturating_mul(self.head_dim + 1);
        // Each work-group compiled for the machine's widest vector registers (the same bits,
        // see `compiled_for`).
        let attend = |scratch: &mut Scratch, (g, p, o): (usize, &mut [u32], &mut [u32])| {
            compiled_for(
                self.isa,
                #[inline(always)]
                || self.attend(g, qs, keys, vs, scratch, p, o),
            );
        };
        if work < ATTN_PARALLEL_WORK_MIN {
            let mut scratch = Scratch::default();
            items.into_iter().for_each(|item| attend(&mut scratch, item));
        } else {
            items.into_par_iter().for_each_init(Scratch::default, attend);
        }
        rows
    }

    /// Work-group `g` (query row `g / heads`, head `g % heads`) into its scores row `p_bits` and
    /// `out` row.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn attend(
        &self,
        g: usize,
        qs: &[f32],
        keys: &[[f32; POSITIONS]],
        vs: &[f32],
        scratch: &mut Scratch,
        p_bits: &mut [u32],
        out: &mut [u32],
    ) {
        let count = p_bits.len();
        let kv_offset = g % self.heads / self.group * self.head_dim;
        let qh = &qs[g * self.head_dim..][..self.head_dim];
        self.scores(qh, &keys[kv_offset..], count, &mut scratch.s);
        let p = &mut scratch.s[..count];
        let total = softmax(p);
        for (bits, &v) in p_bits.iter_mut().zip(p.iter()) {
            *bits = v.to_bits();
        }
        // `out[d]`, VALUE_DIMS dimensions at a time (their sums in registers across the
        // positions), each summed over `j` ascending.
        for (d0, out) in (0..self.head_dim).step_by(VALUE_DIMS).zip(out.chunks_mut(VALUE_DIMS)) {
            let values = |j: usize| &vs[j * self.kv_width + kv_offset + d0..];
            let mut acc = [0.0f32; VALUE_DIMS];
            if out.len() == VALUE_DIMS {
                // A whole chunk: a fixed width, so the sums stay in registers.
                // (Always a whole chunk: the cache was read for every position attended.)
                for (j, &pj) in p.iter().enumerate() {
                    if let Some(vj) = values(j).first_chunk::<VALUE_DIMS>() {
                        for (a, &v) in acc.iter_mut().zip(vj) {
                            *a += pj * v;
                        }
                    }
                }
            } else {
                for (j, &pj) in p.iter().enumerate() {
                    for (a, &v) in acc.iter_mut().zip(&values(j)[..out.len()]) {
                        *a += pj * v;
                    }
                }
            }
            for (bits, &a) in out.iter_mut().zip(&acc) {
                *bits = (a / total).to_bits();
            }
        }
    }

    /// `s[j] = (sum_d q[d] * k[j][d], d ascending) * scale` for `j < count` (and past it, to a
    /// whole block), from the kv head's transposed keys (block `b` at `b * kv_width`, its
    /// `head_dim` entries in order): [`SCORE_BLOCKS`] blocks' independent sums at a time, then
    /// the rest one by one.
    #[inline(always)]
    fn scores(&self, qh: &[f32], keys: &[[f32; POSITIONS]], count: usize, s: &mut Vec<f32>) {
        let (blocks, head_dim) = (count.div_ceil(POSITIONS), self.head_dim);
        s.clear();
        let mut b = 0;
        while b + SCORE_BLOCKS <= blocks {
            let mut acc = [[0.0f32; POSITIONS]; SCORE_BLOCKS];
            for (d, &qd) in qh.iter().enumerate() {
                for (i, a) in acc.iter_mut().enumerate() {
                    for (x, &kv) in a.iter_mut().zip(&keys[(b + i) * self.kv_width + d]) {
                        *x += qd * kv;
                    }
                }
            }
            for a in acc {
                s.extend(a.map(|dot| dot * self.scale));
            }
            b += SCORE_BLOCKS;
        }
        for b in b..blocks {
            let mut acc = [0.0f32; POSITIONS];
            for (&qd, k) in qh.iter().zip(&keys[b * self.kv_width..][..head_dim]) {
                for (a, &kv) in acc.iter_mut().zip(k) {
                    *a += qd * kv;
                }
            }
            s.extend(acc.map(|dot| dot * self.scale));
        }
    }
}

/// Blocks of [`AttentionRows::transpose_keys`] a thread takes at least.
const TRANSPOSE_BLOCKS_MIN: usize = 4;

thread_local! {
    /// The storage of the transposed keys of the calling thread's last attention, kept for its
    /// next one ([`Keys`] gives it back).
    static KEYS: std::cell::RefCell<Vec<[f32; POSITIONS]>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The transposed keys of one attention (see [`AttentionRows`]); dropped, their storage goes
/// back to the thread's [`KEYS`].
struct Keys(Vec<[f32; POSITIONS]>);

impl std::ops::Deref for Keys {
    type Target = [[f32; POSITIONS]];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let keys = std::mem::take(&mut self.0);
        if size_of_val(keys.as_slice()) > KEYS_KEPT_BYTES_MAX {
            return;
        }
        // A thread being torn down keeps nothing.
        let _ = KEYS.try_with(|k| *k.borrow_mut() = keys);
    }
}

/// The largest transposed keys a thread keeps for its next attention (a layer's key cache of
/// 16 MiB: 4,096 positions of 1,024 floats).
const KEYS_KEPT_BYTES_MAX: usize = 16 << 20;

/// Blocks of [`POSITIONS`] whose dot products [`AttentionRows::scores`] computes together.
const SCORE_BLOCKS: usize = 4;

/// Dimensions of `out` whose sums [`AttentionRows::attend`] keeps in registers together.
const VALUE_DIMS: usize = 64;

/// A work-group's working row, kept across the work-groups of a thread.
#[derive(Default)]
struct Scratch {
    /// Scores, then `p`.
    s: Vec<f32>,
}

/// The results of a batch of work-groups: their scores rows one after another (work-group
/// `g`'s [`AttentionRows::count`] long), and their `out` rows.
pub(crate) struct BatchRows {
    pub(crate) scores: Vec<u32>,
    pub(crate) out: Vec<u32>,
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
        // A cache of 700 positions is transposed on several threads; the shapes after it reuse
        // its storage, whose lanes past their last position hold its values (NaN among them).
        for (n, heads, kv_heads, head_dim) in [
            (1, 1, 1, 1),
            (700, 9, 3, 64),
            (15, 3, 1, 8),
            (16, 9, 3, 64),
            (17, 4, 2, 5),
            (300, 9, 3, 64),
            (70, 6, 6, 0),
            (33, 2, 1, 64),
        ] {
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
                assert_eq!((got.scores.len(), got.out.len()), (heads * n, heads * head_dim));
                for (h, (wp, wo)) in want.iter().enumerate() {
                    let (gp, go) = (&got.scores[h * n..][..n], &got.out[h * head_dim..][..head_dim]);
                    assert!(
                        same(gp, wp) && same(go, wo),
                        "{isa:?}, n {n} heads {heads} kv_heads {kv_heads} head_dim {head_dim}: head {h}"
                    );
                }
            }
        }
    }
}
