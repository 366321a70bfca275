//! The llama decode kernels of module `llama`: `rope`, `rope_store`, `kv_store`, `attention`,
//! `silu_mul`.

use super::elementwise::Map;
use super::exp::expf_select;
use super::{Grid, KernelError, lend_f32s, load, load_f32_vec, store, store_pieces, tree_reduce, widen};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature::{self, ArgDecl};

/// The shape of a rope launch, validated.
struct Rope {
    pos: u32,
    half: u32,
    /// Pairs rotated: `min(heads * head_dim / 2, grid_size_x)`.
    active: u32,
}

impl Rope {
    fn new(grid: Grid, pos: u32, heads: u32, head_dim: u32) -> Result<Self, KernelError> {
        if !head_dim.is_multiple_of(2) {
            return Err(KernelError::OddHeadDim { head_dim });
        }
        let elements = heads.checked_mul(head_dim).ok_or(KernelError::HeadElementsOverflow { heads, head_dim })?;
        Ok(Self { pos, half: head_dim / 2, active: (elements / 2).min(grid.size_x) })
    }

    /// Rotates the pairs `src[2p], src[2p + 1]` for `p < active` with the `(cos, sin)` row of
    /// position `pos`: `x0 * c - x1 * s`, `x0 * s + x1 * c`, each product rounded.
    fn rotate(
        &self,
        memory: &dyn DeviceMemory,
        table_arg: &ArgDecl,
        table: u64,
        src: &[u32],
    ) -> Result<Vec<u32>, KernelError> {
        // Work-item p reads (cos, sin) pair p % half; rows are read in full only when some
        // work-item needs each pair.
        let pairs_read = self.half.min(self.active);
        let mut cs = vec![0u32; 2 * widen(pairs_read)];
        load(memory, table_arg, table, 2 * u64::from(self.pos) * u64::from(self.half), &mut cs)?;
        let half = widen(self.half);
        let mut out = Vec::with_capacity(src.len());
        for (p, pair) in src.chunks_exact(2).enumerate() {
            let i = p % half;
            let (c, s) = (f32::from_bits(cs[2 * i]), f32::from_bits(cs[2 * i + 1]));
            let (x0, x1) = (f32::from_bits(pair[0]), f32::from_bits(pair[1]));
            out.push((x0 * c - x1 * s).to_bits());
            out.push((x0 * s + x1 * c).to_bits());
        }
        Ok(out)
    }
}

/// `rope(float* x, const float* table, u32 pos, u32 heads, u32 head_dim)`: in place, GGML
/// "normal" mode: for pair `p = h * head_dim / 2 + i < min(heads * head_dim / 2, grid_size_x)`,
/// with `c, s = table[2 * (pos * head_dim / 2 + i) + {0, 1}]`, `x0, x1 = x[2p], x[2p + 1]`:
/// `x[2p] = x0 * c - x1 * s`, `x[2p + 1] = x0 * s + x1 * c`.
///
/// Launch preconditions: `head_dim` even and `heads * head_dim` below `2^32`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn rope(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::rope::{HEAD_DIM, HEADS, POS, TABLE, X};
    let grid = Grid::new(launch, &signature::ROPE)?;
    let kernarg = launch.kernarg;
    let (x, table) = (X.read_ptr(kernarg)?, TABLE.read_ptr(kernarg)?);
    let rope = Rope::new(grid, POS.read_u32(kernarg)?, HEADS.read_u32(kernarg)?, HEAD_DIM.read_u32(kernarg)?)?;
    if rope.active == 0 {
        return Ok(());
    }
    let mut xs = vec![0u32; 2 * widen(rope.active)];
    load(memory, &X, x, 0, &mut xs)?;
    let rotated = rope.rotate(memory, &TABLE, table, &xs)?;
    store(memory, &X, x, 0, &rotated)
}

/// `rope_store(float* cache, const float* src, const float* table, u32 pos, u32 heads,
/// u32 head_dim)`: as [`rope`] from `src` (unchanged) into `cache + pos * heads * head_dim`.
///
/// # Errors
/// As [`rope`].
pub fn rope_store(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::rope_store::{CACHE, HEAD_DIM, HEADS, POS, SRC, TABLE};
    let grid = Grid::new(launch, &signature::ROPE_STORE)?;
    let kernarg = launch.kernarg;
    let (cache, src, table) = (CACHE.read_ptr(kernarg)?, SRC.read_ptr(kernarg)?, TABLE.read_ptr(kernarg)?);
    let (heads, head_dim) = (HEADS.read_u32(kernarg)?, HEAD_DIM.read_u32(kernarg)?);
    let rope = Rope::new(grid, POS.read_u32(kernarg)?, heads, head_dim)?;
    if rope.active == 0 {
        return Ok(());
    }
    let mut xs = vec![0u32; 2 * widen(rope.active)];
    load(memory, &SRC, src, 0, &mut xs)?;
    let rotated = rope.rotate(memory, &TABLE, table, &xs)?;
    // heads * head_dim < 2^32 (checked), pos < 2^32: the row offset fits 64 bits.
    store(memory, &CACHE, cache, u64::from(rope.pos) * u64::from(heads * head_dim), &rotated)
}

/// `kv_store(float* cache, const float* src, u32 pos, u32 width)`:
/// `cache[pos * width + i] = src[i]` (the exact bits) for `i < min(width, grid_size_x)`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn kv_store(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::kv_store::{CACHE, POS, SRC, WIDTH};
    let grid = Grid::new(launch, &signature::KV_STORE)?;
    let kernarg = launch.kernarg;
    let (cache, src) = (CACHE.read_ptr(kernarg)?, SRC.read_ptr(kernarg)?);
    let (pos, width) = (POS.read_u32(kernarg)?, WIDTH.read_u32(kernarg)?);
    let row = u64::from(pos) * u64::from(width);
    for (first, end) in grid.chunks_below(width) {
        let mut values = vec![0u32; widen(end - first)];
        load(memory, &SRC, src, first.into(), &mut values)?;
        store(memory, &CACHE, cache, row + u64::from(first), &values)?;
    }
    Ok(())
}

/// Work-items of an attention work-group, as a host count.
pub(super) const ATTN_LANES: usize = 64;
const _: () = assert!(signature::attention::BLOCK == 64);
/// The largest count a `j += 64` loop over 32-bit `j` ends for.
const ATTN_COUNT_MAX: u32 = u32::MAX - 63;

/// `attention(float* out, const float* q, const float* k_cache, const float* v_cache,
/// float* scores, u32 n, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride, float scale)`:
/// single-query grouped-query attention over cached positions `j < n`, one work-group of 64 per
/// query head `h < heads`, which reads kv head `h / (heads / kv_heads)` of the
/// `[position][kv_heads * head_dim]` caches.
///
/// In `f32`, as the kernel does: `s[j] = (sum_d q[h][d] * k[j][d], d ascending) * scale`;
/// work-item `t` takes the maximum over `j = t, t + 64, ...` by `s > m ? s : m` from `-inf`, then
/// the LDS tree takes `o > m ? o : m` (`stride = 32, ..., 1`); `p[j] = exp(s[j] - max)` with
/// [`crate::cpu::expf`], summed per work-item in the same `j` order and by the LDS tree;
/// `out[h][d] = (sum_j p[j] * v[j][d], j ascending) / sum`. `scores[h * scores_stride + j]`
/// ends holding `p[j]`.
///
/// Launch preconditions: work-group size 64, no partial work-group with a head, and, when any
/// head is handled, `kv_heads` non-zero dividing `heads`, `1 <= n <= scores_stride`, and `n` and
/// `head_dim` at most `2^32 - 64`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn attention(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::attention::{
        BLOCK, HEAD_DIM, HEADS, K_CACHE, KV_HEADS, N, OUT, Q, SCALE, SCORES, SCORES_STRIDE, V_CACHE,
    };
    let grid = Grid::new(launch, &signature::ATTENTION)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if workgroup_size_x != BLOCK {
        return Err(KernelError::WorkgroupSizeRequired { workgroup_size_x, required: BLOCK });
    }
    let k = launch.kernarg;
    let (out, q, k_cache, v_cache, scores) =
        (OUT.read_ptr(k)?, Q.read_ptr(k)?, K_CACHE.read_ptr(k)?, V_CACHE.read_ptr(k)?, SCORES.read_ptr(k)?);
    let (n, heads, kv_heads) = (N.read_u32(k)?, HEADS.read_u32(k)?, KV_HEADS.read_u32(k)?);
    let (head_dim, scores_stride, scale) = (HEAD_DIM.read_u32(k)?, SCORES_STRIDE.read_u32(k)?, SCALE.read_f32(k)?);
    let groups = grid.workgroups();
    if !grid.size_x.is_multiple_of(grid.workgroup_x) && groups - 1 < heads {
        return Err(KernelError::PartialWorkgroup { grid_size_x: grid.size_x, workgroup_size_x });
    }
    let active_heads = heads.min(groups);
    if active_heads == 0 {
        return Ok(());
    }
    if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        return Err(KernelError::KvHeadsMismatch { heads, kv_heads });
    }
    if n == 0 {
        return Err(KernelError::NoPositions);
    }
    if n > scores_stride {
        return Err(KernelError::ScoresStrideTooSmall { n, scores_stride });
    }
    for (arg, count) in [("n", n), ("head_dim", head_dim)] {
        if count > ATTN_COUNT_MAX {
            return Err(KernelError::StridedLoopWraps { arg, count, limit: ATTN_COUNT_MAX });
        }
    }
    let qs = load_f32_vec(memory, &Q, q, 0, u64::from(active_heads) * u64::from(head_dim))?;
    // The heads are computed as the batched kernel's last row (the same operations in the same
    // order: see `prefill::attention_rows`), 16 positions' dot products at a time.
    let shape = (widen(active_heads), widen(kv_heads), widen(head_dim), widen(heads / kv_heads));
    let caches = Caches { k: (&K_CACHE, k_cache), v: (&V_CACHE, v_cache), first: 0 };
    let rows = caches.attend(memory, &qs, widen(n), shape, scale)?;
    for (h, p_bits) in (0u64..).zip(rows.scores.chunks_exact(widen(n))) {
        store(memory, &SCORES, scores, h * u64::from(scores_stride), p_bits)?;
    }
    // The heads' out rows are contiguous.
    let heads = (0..widen(active_heads)).map(|h| h * widen(head_dim)..(h + 1) * widen(head_dim));
    store_pieces(memory, &OUT, (out, 0), &rows.out, heads)
}

/// The key of the transposed key cache the attention kernels keep with the cache
/// ([`DeviceMemory::with_row_form`]; the layout is `prefill::transpose_rows`', whose width is
/// the row's).
const TRANSPOSED_KEYS_FORM: u64 = 0x6b65_7973_5f74_0001;

/// The key and value caches of a single-query attention launch: each argument's declaration and
/// address, and the first position (row) the launch reads.
pub(super) struct Caches<'a> {
    pub(super) k: (&'a ArgDecl, u64),
    pub(super) v: (&'a ArgDecl, u64),
    pub(super) first: u64,
}

impl Caches<'_> {
    /// The work-groups of one query (`qs`, `shape` as `prefill::single_query`'s) over the `n`
    /// positions from `first`. A launch from position 0 reads the key cache transposed as the
    /// address space keeps it when it can ([`DeviceMemory::with_row_form`]): a decode step then
    /// transposes only the rows written since the last one, its own. Else, and when the address
    /// space keeps no forms, both caches are read and the keys transposed here. The bits are the
    /// same either way; the key cache is read before the value cache either way, so a fault is
    /// reported on the same argument.
    pub(super) fn attend(
        &self,
        memory: &dyn DeviceMemory,
        qs: &[f32],
        n: usize,
        shape: (usize, usize, usize, usize),
        scale: f32,
    ) -> Result<super::prefill::BatchRows, KernelError> {
        let kv_width = shape.1 * shape.2;
        let (first, count) = (self.first * len_u64(kv_width), len_u64(n) * len_u64(kv_width));
        let mut formed = None;
        let kept = self.first == 0
            && kv_width.checked_mul(4).is_some_and(|row_bytes| {
                memory.with_row_form(
                    self.k.1,
                    row_bytes,
                    n,
                    TRANSPOSED_KEYS_FORM,
                    &|keys, rows, bytes| super::prefill::transpose_rows(keys, rows, bytes, kv_width),
                    &mut |keys| {
                        formed = Some(
                            lend_f32s(memory, self.v.0, self.v.1, first, count)
                                .map(|vs| super::prefill::single_query_transposed(qs, keys, &vs, n, shape, scale)),
                        );
                    },
                )
            });
        if let (true, Some(rows)) = (kept, formed) {
            return rows;
        }
        let ks = lend_f32s(memory, self.k.0, self.k.1, first, count)?;
        let vs = lend_f32s(memory, self.v.0, self.v.1, first, count)?;
        // Every element of the caches was read, so their counts fit the host.
        Ok(super::prefill::single_query(qs, &ks, &vs, n, shape, scale))
    }
}

/// `v` as a `u64` (a `usize` has at most 64 bits).
fn len_u64(v: usize) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// Replaces `s` by `p[j] = exp(s[j] - max)` as `attention` computes it (per-work-item maxima
/// and sums over `j = l, l + 64, ...`, then the LDS trees) and returns the sum.
pub(super) fn softmax(s: &mut [f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; ATTN_LANES];
    for chunk in s.chunks(ATTN_LANES) {
        for (m, &v) in lanes.iter_mut().zip(chunk) {
            *m = if v > *m { v } else { *m };
        }
    }
    let max = tree_max(&mut lanes);
    // The exponentials first (vectorised, the bits of `expf`), then each work-item's sum over
    // its `j` in ascending order, a chunk of one `j` per work-item at a time.
    super::exp::exp_shifted(super::simd::Isa::widest(), s, max);
    let mut sums = [0.0f32; ATTN_LANES];
    for chunk in s.chunks(ATTN_LANES) {
        for (sum, &v) in sums.iter_mut().zip(chunk) {
            *sum += v;
        }
    }
    tree_reduce(&mut sums)
}

/// The LDS tree maximum of `attention`: slot `t < stride` takes `o > m ? o : m` with
/// `o = lds[t + stride]`, `m = lds[t]`.
pub(super) fn tree_max(lds: &mut [f32; ATTN_LANES]) -> f32 {
    let mut stride = ATTN_LANES / 2;
    while stride > 0 {
        for t in 0..stride {
            let o = lds[t + stride];
            lds[t] = if o > lds[t] { o } else { lds[t] };
        }
        stride /= 2;
    }
    lds[0]
}

/// `silu_mul(float* out, const float* gate, const float* up, u32 n)`: with `g = gate[i]`,
/// `out[i] = (g / (1 + exp(-g))) * up[i]` for `i < min(n, grid_size_x)`, [`crate::cpu::expf`] for `exp`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn silu_mul(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::silu_mul::{GATE, N, OUT, UP};
    Map { sig: &signature::SILU_MUL, out: OUT, inputs: [GATE, UP], n: N }.run(launch, memory, silu)
}

/// `silu_mul`'s element: `(g / (1 + exp(-g))) * up` on raw `f32` bits.
#[inline(always)]
pub(super) fn silu([gate, up]: [u32; 2]) -> u32 {
    let g = f32::from_bits(gate);
    (g / (1.0 + expf_select(-g)) * f32::from_bits(up)).to_bits()
}
