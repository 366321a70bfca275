//! The Gemma 3 kernels of module `gemma`: `rope_neox`, `rope_neox_store`, `rope_neox_rows`,
//! `attention_window`, `attention_window_rows`, `gelu_mul`, and the kernels' `tanh`
//! ([`tanhf`], `rl_tanhf` of `kernels/hip/gemma.hip`).
//!
//! The window kernels are `attention` and `attention_rows` over a window of the cache: position
//! `j` of the window `first..end` is what position `j - first` is to `attention` on the caches
//! from row `first` on (the same work-item, the same slot of the scores row, the same place in
//! every sum), so the references run [`crate::cpu::attention`]'s work-groups (`single_query`) on
//! the window's rows of the caches.

use rayon::prelude::*;

use super::elementwise::Map;
use super::exp::expf;
use super::llama::softmax;
use super::prefill::single_query;
use super::{Grid, KernelError, READ_CHUNK_ELEMENTS, load_f32_vec, store, store_pieces, widen, widen_usize};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature::{self, ArgDecl};

/// Below: `tanh` by its odd polynomial.
const TANH_SMALL: f32 = 0.625;
/// Above: `tanh` rounds to 1 (`1 - tanh(a) < 2^-25` from `a > 13 ln 2 = 9.01` on).
const TANH_ONE: f32 = 10.0;
/// The Cephes `tanhf` polynomial `P(z)`, `tanh(a) = a + a^3 P(a^2)` on `|a| < 0.625`, highest
/// degree first.
const TANH_POLY: [f32; 5] = [-0.005_704_988_7, 0.020_639_088, -0.053_739_715, 0.133_314_42, -0.333_332_8];
/// `sqrt(2 / pi)` rounded to `f32`.
const GELU_SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// The cubic coefficient of the tanh approximation of GELU.
const GELU_COEF_A: f32 = 0.044_715;

/// `tanh(x)` exactly as the kernels compute it (`rl_tanhf` in `kernels/hip/gemma.hip`): within
/// 2 ulp of the correctly rounded result over the whole range (tested against `f64::tanh`),
/// `tanh(-x) = -tanh(x)` bit for bit, `tanh(+-0) = +-0`, `tanh(+-inf) = +-1`, NaN returned
/// unchanged.
///
/// On `a = |x|`, the sign put back by a bit operation: `a < 0.625`: `z = a * a`,
/// `p = P(z)` by Horner from the highest coefficient, `(p * z) * a + a`; `a > 10`: 1;
/// otherwise `e = exp(a + a)` ([`crate::cpu::expf`]), `1 - 2 / (e + 1)`.
#[must_use]
pub fn tanhf(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    let sign = x.to_bits() & 0x8000_0000;
    let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let r = if a < TANH_SMALL {
        let z = a * a;
        let mut p = TANH_POLY[0];
        for &c in &TANH_POLY[1..] {
            p = p * z + c;
        }
        p * z * a + a
    } else if a > TANH_ONE {
        1.0
    } else {
        let e = expf(a + a);
        1.0 - 2.0 / (e + 1.0)
    };
    f32::from_bits(r.to_bits() | sign)
}

/// `gelu_mul`'s element on raw `f32` bits, with `g = gate`: `k = (sqrt(2/pi) * g) * (1 +
/// (0.044715 * g) * g)`, `w = 0.5 * (1 + tanh(k))` ([`tanhf`]), `gelu = -0.0` where `w == 0`
/// and `g * w` elsewhere, `gelu * up`.
#[inline(always)]
fn gelu([gate, up]: [u32; 2]) -> u32 {
    let g = f32::from_bits(gate);
    let k = GELU_SQRT_2_OVER_PI * g * (1.0 + GELU_COEF_A * g * g);
    let w = 0.5 * (1.0 + tanhf(k));
    let gelu = if w == 0.0 { -0.0 } else { g * w };
    (gelu * f32::from_bits(up)).to_bits()
}

/// `gelu_mul(float* out, const float* gate, const float* up, u32 n)`: `out[i] = gelu(gate[i]) *
/// up[i]` for `i < min(n, grid_size_x)`, GELU's tanh approximation `0.5 g (1 + tanh(sqrt(2/pi)
/// (g + 0.044715 g^3)))` in these `f32` operations, with `g = gate[i]`:
/// `k = (sqrt(2/pi) * g) * (1 + (0.044715 * g) * g)`, `w = 0.5 * (1 + tanh(k))` ([`tanhf`]),
/// `gelu = -0.0` where `w == 0` (`tanh` rounded to -1, so `gelu(-inf) = -0.0` rather than
/// `-inf * 0`) and `g * w` elsewhere, `out[i] = gelu * up[i]`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn gelu_mul(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::silu_mul::{GATE, N, OUT, UP};
    Map { sig: &signature::GELU_MUL, out: OUT, inputs: [GATE, UP], n: N }.run(launch, memory, gelu)
}

/// The elements the first `pairs` NEOX pairs of consecutive heads touch, from a head's start:
/// the whole heads `pairs / half`, then, when the grid stops inside a head, the first
/// `pairs % half` elements of its lower and of its upper half.
#[derive(Clone, Copy)]
struct NeoxSpan {
    half: u64,
    whole: u64,
    part: u64,
}

impl NeoxSpan {
    /// `half` is non-zero when `pairs` is.
    fn new(pairs: u64, half: u64) -> Self {
        if half == 0 {
            return Self { half, whole: 0, part: 0 };
        }
        Self { half, whole: pairs / half, part: pairs % half }
    }

    /// The span's elements at element `first` of argument `arg`: the whole heads (one access),
    /// then the partial head's two pieces, in that order.
    fn load(self, memory: &dyn DeviceMemory, arg: &ArgDecl, base: u64, first: u64) -> Result<Vec<f32>, KernelError> {
        let whole = self.whole * 2 * self.half;
        let mut xs = load_f32_vec(memory, arg, base, first, whole)?;
        if self.part > 0 {
            let head = first + whole;
            xs.extend(load_f32_vec(memory, arg, base, head, self.part)?);
            xs.extend(load_f32_vec(memory, arg, base, head + self.half, self.part)?);
        }
        Ok(xs)
    }

    /// Stores `data` (laid out as [`NeoxSpan::load`] returns it) at element `first` of `arg`.
    fn store(
        self,
        memory: &mut dyn DeviceMemory,
        arg: &ArgDecl,
        base: u64,
        first: u64,
        data: &[u32],
    ) -> Result<(), KernelError> {
        let whole = self.whole * 2 * self.half;
        // The span was loaded, so its length fits the host.
        let split = usize::try_from(whole).unwrap_or(usize::MAX).min(data.len());
        let (heads, rest) = data.split_at(split);
        store(memory, arg, base, first, heads)?;
        if self.part > 0 {
            let (low, high) = rest.split_at(rest.len() / 2);
            let head = first + whole;
            store(memory, arg, base, head, low)?;
            store(memory, arg, base, head + self.half, high)?;
        }
        Ok(())
    }

    /// The `(cos, sin)` pairs a row uses: pair `i` of every head takes table pair `i`.
    fn table_pairs(self) -> u64 {
        if self.whole > 0 { self.half } else { self.part }
    }

    /// The span's elements rotated with the row's `(cos, sin)` pairs `cs`: in each head (the
    /// partial one with `part` for `half`), `x0 = x[i]`, `x1 = x[i + half]`, `x0 * c - x1 * s`
    /// and `x0 * s + x1 * c`, each product rounded.
    fn rotate(self, xs: &[f32], cs: &[f32]) -> Vec<u32> {
        let mut out = vec![0u32; xs.len()];
        let half = usize::try_from(self.half).unwrap_or(usize::MAX);
        let whole = usize::try_from(self.whole).unwrap_or(usize::MAX).saturating_mul(2 * half).min(xs.len());
        for (head, dst) in xs[..whole].chunks_exact(2 * half.max(1)).zip(out[..whole].chunks_exact_mut(2 * half.max(1)))
        {
            rotate_head(head, cs, half, dst);
        }
        let part = xs.len() - whole;
        rotate_head(&xs[whole..], cs, part / 2, &mut out[whole..]);
        out
    }
}

/// One head of [`NeoxSpan::rotate`]: pairs `(i, i + width)` of `x` with `(cos, sin)` pair `i`.
fn rotate_head(x: &[f32], cs: &[f32], width: usize, out: &mut [u32]) {
    for (i, cs) in cs.chunks_exact(2).take(width).enumerate() {
        let (c, s, x0, x1) = (cs[0], cs[1], x[i], x[i + width]);
        out[i] = (x0 * c - x1 * s).to_bits();
        out[i + width] = (x0 * s + x1 * c).to_bits();
    }
}

/// The validated shape of a NEOX rope launch: `(half, heads * head_dim)`.
fn neox_shape(heads: u32, head_dim: u32) -> Result<(u32, u32), KernelError> {
    if !head_dim.is_multiple_of(2) {
        return Err(KernelError::OddHeadDim { head_dim });
    }
    let elements = heads.checked_mul(head_dim).ok_or(KernelError::HeadElementsOverflow { heads, head_dim })?;
    Ok((head_dim / 2, elements))
}

/// Rotates the first `pairs` pairs of the heads at element `src_first` of `src` with the table
/// row of `pos` into element `dst_first` of `dst`: every load, then the stores.
#[allow(clippy::too_many_arguments)]
fn neox(
    memory: &mut dyn DeviceMemory,
    (src_arg, src, src_first): (&ArgDecl, u64, u64),
    (dst_arg, dst, dst_first): (&ArgDecl, u64, u64),
    (table_arg, table): (&ArgDecl, u64),
    pos: u32,
    half: u32,
    pairs: u64,
) -> Result<(), KernelError> {
    let span = NeoxSpan::new(pairs, half.into());
    let xs = span.load(&*memory, src_arg, src, src_first)?;
    let cs = load_f32_vec(&*memory, table_arg, table, 2 * u64::from(pos) * u64::from(half), 2 * span.table_pairs())?;
    let rotated = span.rotate(&xs, &cs);
    span.store(memory, dst_arg, dst, dst_first, &rotated)
}

/// `rope_neox(float* x, const float* table, u32 pos, u32 heads, u32 head_dim)`: in place, GGML
/// "neox" mode: for pair `p = h * head_dim / 2 + i < min(heads * head_dim / 2, grid_size_x)`,
/// with `half = head_dim / 2`, `c, s = table[2 * (pos * half + i) + {0, 1}]`,
/// `e = h * head_dim + i`, `x0, x1 = x[e], x[e + half]`: `x[e] = x0 * c - x1 * s`,
/// `x[e + half] = x0 * s + x1 * c`.
///
/// Launch preconditions: `head_dim` even and `heads * head_dim` below `2^32`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn rope_neox(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::rope::{HEAD_DIM, HEADS, POS, TABLE, X};
    let grid = Grid::new(launch, &signature::ROPE_NEOX)?;
    let k = launch.kernarg;
    let (x, table) = (X.read_ptr(k)?, TABLE.read_ptr(k)?);
    let (pos, heads, head_dim) = (POS.read_u32(k)?, HEADS.read_u32(k)?, HEAD_DIM.read_u32(k)?);
    let (half, elements) = neox_shape(heads, head_dim)?;
    let pairs = (elements / 2).min(grid.size_x);
    if pairs == 0 {
        return Ok(());
    }
    neox(memory, (&X, x, 0), (&X, x, 0), (&TABLE, table), pos, half, pairs.into())
}

/// `rope_neox_store(float* cache, const float* src, const float* table, u32 pos, u32 heads,
/// u32 head_dim)`: as [`rope_neox`] from `src` (unchanged) into `cache + pos * heads * head_dim`.
///
/// # Errors
/// As [`rope_neox`].
pub fn rope_neox_store(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::rope_store::{CACHE, HEAD_DIM, HEADS, POS, SRC, TABLE};
    let grid = Grid::new(launch, &signature::ROPE_NEOX_STORE)?;
    let k = launch.kernarg;
    let (cache, src, table) = (CACHE.read_ptr(k)?, SRC.read_ptr(k)?, TABLE.read_ptr(k)?);
    let (pos, heads, head_dim) = (POS.read_u32(k)?, HEADS.read_u32(k)?, HEAD_DIM.read_u32(k)?);
    let (half, elements) = neox_shape(heads, head_dim)?;
    let pairs = (elements / 2).min(grid.size_x);
    if pairs == 0 {
        return Ok(());
    }
    // heads * head_dim < 2^32 (checked), pos < 2^32: the row offset fits 64 bits.
    let row = u64::from(pos) * u64::from(elements);
    neox(memory, (&SRC, src, 0), (&CACHE, cache, row), (&TABLE, table), pos, half, pairs.into())
}

/// `rope_neox_rows(float* x, const float* table, u32 pos0, u32 heads, u32 head_dim, u32 n)`: in
/// place on `x[t][heads][head_dim]` for `t < n`, one work-item per pair, pair `p = t * heads *
/// head_dim / 2 + q < min(n * heads * head_dim / 2, grid_size_x)`. Row `t` is bit for bit
/// [`rope_neox`] at position `pos0 + t` (a 32-bit sum that wraps, as the kernel's does). Rows are
/// rotated one after another, each loaded before it is stored.
///
/// Launch preconditions: `head_dim` even and `heads * head_dim` below `2^32`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn rope_neox_rows(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::rope_rows::{HEAD_DIM, HEADS, N, POS0, TABLE, X};
    let grid = Grid::new(launch, &signature::ROPE_NEOX_ROWS)?;
    let k = launch.kernarg;
    let (x, table) = (X.read_ptr(k)?, TABLE.read_ptr(k)?);
    let (pos0, heads, head_dim, n) = (POS0.read_u32(k)?, HEADS.read_u32(k)?, HEAD_DIM.read_u32(k)?, N.read_u32(k)?);
    let (half, elements) = neox_shape(heads, head_dim)?;
    let row_pairs = u64::from(elements / 2);
    let active = (u64::from(n) * row_pairs).min(grid.size_x.into());
    if active == 0 {
        return Ok(());
    }
    for t in 0..active.div_ceil(row_pairs) {
        // t < n fits 32 bits.
        let pos = pos0.wrapping_add(u32::try_from(t).unwrap_or(u32::MAX));
        let pairs = (active - t * row_pairs).min(row_pairs);
        let first = t * u64::from(elements);
        neox(memory, (&X, x, first), (&X, x, first), (&TABLE, table), pos, half, pairs)?;
    }
    Ok(())
}

// The work-group size of the window kernels, as `attention`'s (whose work-groups they run).
const _: () = assert!(signature::attention_window::BLOCK == 64 && signature::attention_window_rows::BLOCK == 64);
/// The largest count a `j += 64` loop over 32-bit `j` ends for.
const ATTN_COUNT_MAX: u32 = u32::MAX - 63;
/// Scores a batch of `attention_window_rows` rows holds on the host, at most (a batch has at
/// least one row).
const WINDOW_BATCH_SCORES: usize = 1 << 22;

/// `attention_window(float* out, const float* q, const float* k_cache, const float* v_cache,
/// float* scores, u32 first, u32 n, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride,
/// float scale)`: single-query grouped-query attention over the cached positions
/// `first <= j < n`, one work-group of 64 per query head `h < heads`, which reads kv head
/// `h / (heads / kv_heads)` of the `[position][kv_heads * head_dim]` caches.
///
/// Bit for bit [`crate::cpu::attention`] over `n - first` positions on the caches from row
/// `first` on (so with `first = 0`, `attention` itself): work-item `t` takes the positions
/// `first + t, first + t + 64, ...`; `s[j] = (sum_d q[h][d] * k[j][d], d ascending) * scale`,
/// the maximum per work-item by `s > m ? s : m` from `-inf` and by the LDS tree,
/// `p[j] = exp(s[j] - max)` ([`crate::cpu::expf`]) summed per work-item in the same order and by
/// the LDS tree, `out[h][d] = (sum_j p[j] * v[j][d], j = first..n ascending) / sum`.
/// `scores[h * scores_stride + j - first]` ends holding `p[j]`.
///
/// Launch preconditions: work-group size 64, no partial work-group with a head, and, when any
/// head is handled, `kv_heads` non-zero dividing `heads`, `first < n`,
/// `n - first <= scores_stride`, and `n` and `head_dim` at most `2^32 - 64`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn attention_window(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::attention_window::{
        BLOCK, FIRST, HEAD_DIM, HEADS, K_CACHE, KV_HEADS, N, OUT, Q, SCALE, SCORES, SCORES_STRIDE, V_CACHE,
    };
    let grid = Grid::new(launch, &signature::ATTENTION_WINDOW)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if workgroup_size_x != BLOCK {
        return Err(KernelError::WorkgroupSizeRequired { workgroup_size_x, required: BLOCK });
    }
    let k = launch.kernarg;
    let (out, q, k_cache, v_cache, scores) =
        (OUT.read_ptr(k)?, Q.read_ptr(k)?, K_CACHE.read_ptr(k)?, V_CACHE.read_ptr(k)?, SCORES.read_ptr(k)?);
    let (first, n, heads, kv_heads) = (FIRST.read_u32(k)?, N.read_u32(k)?, HEADS.read_u32(k)?, KV_HEADS.read_u32(k)?);
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
    if first >= n {
        return Err(KernelError::EmptyWindow { first, n });
    }
    let count = n - first;
    if count > scores_stride {
        return Err(KernelError::ScoresStrideTooSmall { n: count, scores_stride });
    }
    for (arg, value) in [(N.name, n), (HEAD_DIM.name, head_dim)] {
        if value > ATTN_COUNT_MAX {
            return Err(KernelError::StridedLoopWraps { arg, count: value, limit: ATTN_COUNT_MAX });
        }
    }
    let window = Window { kv_heads, head_dim, group: heads / kv_heads, scale };
    if head_dim == 0 {
        return window.store_uniform_scores(memory, scores, scores_stride, (0..active_heads).map(|_| count));
    }
    let qs = load_f32_vec(memory, &Q, q, 0, u64::from(active_heads) * u64::from(head_dim))?;
    let caches = super::llama::Caches { k: (&K_CACHE, k_cache), v: (&V_CACHE, v_cache), first: u64::from(first) };
    let rows = window.attend_cached(memory, &caches, &qs, widen(active_heads), widen(count))?;
    for (h, p_bits) in (0u64..).zip(rows.0.chunks_exact(widen(count))) {
        store(memory, &SCORES, scores, h * u64::from(scores_stride), p_bits)?;
    }
    let head_dim = widen(head_dim);
    store_pieces(memory, &OUT, (out, 0), &rows.1, (0..widen(active_heads)).map(|h| h * head_dim..(h + 1) * head_dim))
}

/// The shape shared by a window launch's work-groups.
#[derive(Clone, Copy)]
struct Window {
    kv_heads: u32,
    head_dim: u32,
    /// Query heads per kv head.
    group: u32,
    scale: f32,
}

impl Window {
    /// The scores rows (`count` each) and `out` rows of query heads `0..heads` of one query
    /// (`qs`) over `count` positions of the caches `ks`, `vs`: `attention`'s work-groups.
    fn attend(&self, qs: &[f32], ks: &[f32], vs: &[f32], heads: usize, count: usize) -> (Vec<u32>, Vec<u32>) {
        let shape = (heads, widen(self.kv_heads), widen(self.head_dim), widen(self.group));
        let rows = single_query(qs, ks, vs, count, shape, self.scale);
        (rows.scores, rows.out)
    }

    /// [`Window::attend`] over `count` positions of the caches in memory
    /// ([`super::llama::Caches::attend`]).
    fn attend_cached(
        &self,
        memory: &dyn DeviceMemory,
        caches: &super::llama::Caches<'_>,
        qs: &[f32],
        heads: usize,
        count: usize,
    ) -> Result<(Vec<u32>, Vec<u32>), KernelError> {
        let shape = (heads, widen(self.kv_heads), widen(self.head_dim), widen(self.group));
        let rows = caches.attend(memory, qs, count, shape, self.scale)?;
        Ok((rows.scores, rows.out))
    }

    /// Every work-group's scores when `head_dim` is 0: no products, so every score is
    /// `0.0 * scale` and every `p[j]` the same value; `out` rows are empty. Nothing bounds the
    /// positions by a cache read here, so each row (work-group `g` of `counts[g]` positions, at
    /// `g * stride`) is stored in chunks.
    fn store_uniform_scores(
        &self,
        memory: &mut dyn DeviceMemory,
        scores: u64,
        stride: u32,
        counts: impl Iterator<Item = u32>,
    ) -> Result<(), KernelError> {
        use signature::attention_window::SCORES;
        let mut p = [0.0f32 * self.scale];
        softmax(&mut p);
        let chunk = vec![p[0].to_bits(); READ_CHUNK_ELEMENTS];
        for (g, count) in (0u64..).zip(counts) {
            let mut done = 0usize;
            while done < widen(count) {
                let len = (widen(count) - done).min(chunk.len());
                store(memory, &SCORES, scores, g * u64::from(stride) + widen_usize(done), &chunk[..len])?;
                done += len;
            }
        }
        Ok(())
    }
}

/// `attention_window_rows(float* out, const float* q, const float* k_cache,
/// const float* v_cache, float* scores, u32 pos0, u32 n, u32 window, u32 heads, u32 kv_heads,
/// u32 head_dim, u32 scores_stride, float scale)`: causal sliding-window grouped-query attention
/// for `n` query rows. `q` and `out` are `[n][heads][head_dim]`, the caches
/// `[position][kv_heads * head_dim]`; query row `t` sits at position `pos0 + t` and attends the
/// positions `first_t = max(0, pos0 + t + 1 - window) ..= pos0 + t`. Work-group
/// `g = t * heads + h` (of exactly 64 work-items) handles row `t`, head `h`, with kv head
/// `h / (heads / kv_heads)` and scores row `g` of `scores_stride` floats.
///
/// Row `t`, head `h` is bit for bit [`attention_window`] with `first = first_t`,
/// `n = pos0 + t + 1` on `q[t][h]`; its scores row ends holding `p[j]` at column `j - first_t`.
///
/// Launch preconditions: work-group size 64, no partial work-group with a (row, head), and, when
/// any is handled, `kv_heads` non-zero dividing `heads`, `pos0 + n` and `head_dim` at most
/// `2^32 - 64`, `window >= 1`, and `min(window, pos0 + n) <= scores_stride`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn attention_window_rows(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::attention_window_rows::{
        BLOCK, HEAD_DIM, HEADS, K_CACHE, KV_HEADS, N, OUT, POS0, Q, SCALE, SCORES, SCORES_STRIDE, V_CACHE, WINDOW,
    };
    let grid = Grid::new(launch, &signature::ATTENTION_WINDOW_ROWS)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if workgroup_size_x != BLOCK {
        return Err(KernelError::WorkgroupSizeRequired { workgroup_size_x, required: BLOCK });
    }
    let k = launch.kernarg;
    let (out, q, k_cache, v_cache, scores) =
        (OUT.read_ptr(k)?, Q.read_ptr(k)?, K_CACHE.read_ptr(k)?, V_CACHE.read_ptr(k)?, SCORES.read_ptr(k)?);
    let (pos0, n, window, heads) = (POS0.read_u32(k)?, N.read_u32(k)?, WINDOW.read_u32(k)?, HEADS.read_u32(k)?);
    let (kv_heads, head_dim) = (KV_HEADS.read_u32(k)?, HEAD_DIM.read_u32(k)?);
    let (scores_stride, scale) = (SCORES_STRIDE.read_u32(k)?, SCALE.read_f32(k)?);
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
    let end = u32::try_from(end).ok().filter(|&e| e <= ATTN_COUNT_MAX).ok_or(KernelError::StridedLoopWraps {
        arg: "pos0 + n",
        count: u32::try_from(end).unwrap_or(u32::MAX),
        limit: ATTN_COUNT_MAX,
    })?;
    if head_dim > ATTN_COUNT_MAX {
        return Err(KernelError::StridedLoopWraps { arg: HEAD_DIM.name, count: head_dim, limit: ATTN_COUNT_MAX });
    }
    if window == 0 {
        return Err(KernelError::EmptyWindow { first: pos0 + 1, n: pos0 + 1 });
    }
    if window.min(end) > scores_stride {
        return Err(KernelError::ScoresStrideTooSmall { n: window.min(end), scores_stride });
    }
    let rows =
        Rows { pos0, window, heads, active, shape: Window { kv_heads, head_dim, group: heads / kv_heads, scale } };
    if head_dim == 0 {
        let counts = (0..active).map(|g| rows.span(g / u64::from(heads)).1);
        return rows.shape.store_uniform_scores(memory, scores, scores_stride, counts);
    }
    // The positions the handled rows attend: from the first row's window to the last row.
    let last = (active - 1) / u64::from(heads);
    let (from, _) = rows.span(0);
    let to = u64::from(pos0) + last + 1;
    let kv_width = u64::from(kv_heads) * u64::from(head_dim);
    let qs = load_f32_vec(memory, &Q, q, 0, active * u64::from(head_dim))?;
    let ks = load_f32_vec(memory, &K_CACHE, k_cache, u64::from(from) * kv_width, (to - u64::from(from)) * kv_width)?;
    let vs = load_f32_vec(memory, &V_CACHE, v_cache, u64::from(from) * kv_width, (to - u64::from(from)) * kv_width)?;
    // Every element of q and of the attended positions was read, so their counts fit the host.
    let caches = (&ks[..], &vs[..], widen(from));
    let mut t = 0u64;
    while t <= last {
        let batch_end = rows.batch_end(t, last);
        let results: Vec<(Vec<u32>, Vec<u32>)> =
            (t..batch_end).into_par_iter().map(|row| rows.attend(row, &qs, caches)).collect();
        for (row, (p, _)) in (t..).zip(&results) {
            let count = widen(rows.span(row).1);
            for (g, p_bits) in (row * u64::from(heads)..).zip(p.chunks_exact(count.max(1))) {
                store(memory, &SCORES, scores, g * u64::from(scores_stride), p_bits)?;
            }
        }
        let out_rows: Vec<u32> = results.into_iter().flat_map(|(_, o)| o).collect();
        let head_dim = widen(head_dim);
        let groups = (0..out_rows.len() / head_dim).map(|i| i * head_dim..(i + 1) * head_dim);
        let first_group = t * u64::from(heads);
        store_pieces(memory, &OUT, (out, first_group * widen_usize(head_dim)), &out_rows, groups)?;
        t = batch_end;
    }
    Ok(())
}

/// A validated `attention_window_rows` launch.
struct Rows {
    pos0: u32,
    window: u32,
    heads: u32,
    /// Work-groups handled.
    active: u64,
    shape: Window,
}

impl Rows {
    /// Row `t`'s window: its first position `max(0, pos0 + t + 1 - window)` and its length
    /// `min(window, pos0 + t + 1)` (`pos0 + t + 1 < 2^32`, checked).
    fn span(&self, t: u64) -> (u32, u32) {
        let end = u32::try_from(u64::from(self.pos0) + t + 1).unwrap_or(u32::MAX);
        let first = end.saturating_sub(self.window);
        (first, end - first)
    }

    /// The end of the batch of rows from `t`: at most [`WINDOW_BATCH_SCORES`] scores, at least
    /// one row, at most `last + 1`.
    fn batch_end(&self, t: u64, last: u64) -> u64 {
        let mut scores = 0usize;
        let mut end = t;
        while end <= last {
            scores = scores.saturating_add(widen(self.span(end).1).saturating_mul(widen(self.heads)));
            if end > t && scores > WINDOW_BATCH_SCORES {
                break;
            }
            end += 1;
        }
        end
    }

    /// Row `t`'s handled heads: their scores rows and `out` rows, from `q` and the caches `ks`,
    /// `vs` holding the positions from `from` on.
    fn attend(&self, t: u64, qs: &[f32], (ks, vs, from): (&[f32], &[f32], usize)) -> (Vec<u32>, Vec<u32>) {
        let heads = u64::from(self.heads);
        let handled = widen_count((self.active - t * heads).min(heads));
        let (first, count) = self.span(t);
        let head_dim = widen(self.shape.head_dim);
        let kv_width = widen(self.shape.kv_heads) * head_dim;
        let row_q = &qs[widen_count(t * heads) * head_dim..][..handled * head_dim];
        let window = (widen(first) - from) * kv_width..(widen(first) - from + widen(count)) * kv_width;
        self.shape.attend(row_q, &ks[window.clone()], &vs[window], handled, widen(count))
    }
}

/// A count of work-groups the host has materialised results for, as `usize`.
fn widen_count(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `f32` literals of `hip/gemma.hip` from `TANH_SMALL` to the end (`rl_tanhf`, the GELU
    /// constants and `gelu_mul`), comments left out, in source order.
    fn source_literals() -> Vec<f32> {
        let source = include_str!("../../../kernels/hip/gemma.hip");
        let body = &source[source.find("#define TANH_SMALL").unwrap()..];
        let mut out = Vec::new();
        for line in body.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for token in line.split(|c: char| c.is_whitespace() || "();,".contains(c)) {
                if let Some(number) = token.strip_suffix('f')
                    && number.contains('.')
                    && let Ok(v) = number.parse::<f32>()
                {
                    out.push(v);
                }
            }
        }
        out
    }

    #[test]
    fn constants_are_the_kernel_source_literals() {
        // Parsed with round-to-nearest, as clang parses them: the tanh thresholds and
        // polynomial, `r = 1.0f`, `1.0f - 2.0f / (e + 1.0f)`, the GELU constants, then
        // `gelu_mul`'s `1.0f`, `0.5f * (1.0f + ...)` and `w == 0.0f ? -0.0f`.
        let mut expected = vec![TANH_SMALL, TANH_ONE];
        expected.extend(TANH_POLY);
        expected.extend([1.0, 1.0, 2.0, 1.0, GELU_SQRT_2_OVER_PI, GELU_COEF_A, 1.0, 0.5, 1.0, 0.0, -0.0]);
        let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&source_literals()), bits(&expected));
    }

    #[test]
    fn gelu_special_values() {
        let gelu = |g: f32, up: f32| f32::from_bits(gelu([g.to_bits(), up.to_bits()]));
        assert_eq!(gelu(0.0, 1.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(gelu(-0.0, 1.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(gelu(f32::INFINITY, 1.0), f32::INFINITY);
        assert_eq!(gelu(f32::NEG_INFINITY, 1.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(gelu(f32::NEG_INFINITY, -2.0).to_bits(), 0.0f32.to_bits());
        assert!(gelu(f32::NAN, 1.0).is_nan() && gelu(1.0, f32::NAN).is_nan());
        // tanh(k) rounds to 1 for g > 5.2 or so: gelu(g) = g exactly; to -1 below -5.2: -0.
        for g in [6.0f32, 1e3, 1e19, 1e30, f32::MAX] {
            assert_eq!(gelu(g, 1.0), g, "gelu({g:e})");
            assert_eq!(gelu(-g, 1.0).to_bits(), (-0.0f32).to_bits(), "gelu(-{g:e})");
        }
        // sqrt(2/pi) * g overflows for |g| near f32::MAX, and (0.044715 * g) * g much earlier:
        // the saturated tanh hides both.
        assert_eq!(gelu(3e38, 0.5), 1.5e38);
    }
}
