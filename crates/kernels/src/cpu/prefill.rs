//! Batched prefill (module `prefill`): `matmul_q4_1`, `matmul_q8_0`, `get_rows_q8_0`,
//! `rope_rows`, `attention_rows`.
//!
//! # Numerical contract
//! Each kernel processes the `n` tokens of a prompt chunk ("rows" `t < n`), and **row `t` of its
//! output is bit for bit what the single-token kernel computes for token `t`**:
//! - `matmul_q4_1`/`matmul_q8_0` row `t` is [`crate::cpu::matvec_q4_1`]/[`crate::cpu::matvec_q8_0`] on
//!   `x[t]`;
//! - `get_rows_q8_0` row `t` is [`crate::cpu::get_row_q8_0`] with token `tokens[t]`;
//! - `rope_rows` row `t` is [`crate::cpu::rope`] at position `pos0 + t`;
//! - `attention_rows` row `t`, head `h` is [`crate::cpu::attention`] with `n = pos0 + t + 1` on
//!   `q[t][h]`.
//!
//! So prefilling a prompt chunk by chunk gives the bits of prefilling it token by token. The
//! kernels get this by construction: per token they perform the single-token kernel's `f32`
//! operations in its order (the same per-work-item partial sums, the same LDS trees); batching
//! only shares loads. The references here do the same operations in the same order per token,
//! and share the work that is exact to share: a weight's dequantised value `(q & 15) * d + m` is
//! the same `f32` for every token, so it is computed once per dispatch and row.
//!
//! Against exact arithmetic, every row carries the single-token kernel's error: a sum of `k`
//! rounded `f32` terms is within about `k * 2^-24` of the exact sum, relative to the sum of the
//! terms' magnitudes (`tests/prefill.rs` states the bound per kernel).
//!
//! # Speed
//! The soft device runs prefill through these references, so they are written to be fast without
//! changing a bit. The matrix products keep one `[f32; 32]` of partial sums per work-item and
//! multiply a dequantised weight into 32 tokens at once: the tokens' activations are transposed
//! once per dispatch, so the update is one vectorisable loop of eight independent 4-wide sums
//! (the tokens after the last whole tile go in tiles of 8). Attention computes 16 positions' dot
//! products together from a transposed key cache (independent sums, so the loop is not bound by
//! one chain's latency) and accumulates values over contiguous `d`. Weight rows and (row, head)
//! work-groups are spread over the cores with `rayon` when a dispatch is large; results are
//! stored in work-group order afterwards, from the calling thread. The code is plain safe Rust:
//! it vectorises to the baseline instruction set the crate is built for.

use rayon::prelude::*;

use super::simd::Isa;
use super::{
    Grid, KernelError, READ_CHUNK_BYTES, READ_CHUNK_ELEMENTS, f16_to_f32, load, load_bytes, load_f32_vec, store, widen,
    widen_usize,
};
use crate::launch::Launch;
use crate::memory::DeviceMemory;
use crate::signature::{self, ArgDecl, Signature};

mod attention;
pub use attention::attention_rows;

/// Elements per quantisation block.
const QK: u32 = super::QK;
/// Work-items of a matmul work-group, as a host count.
const LANES: usize = 32;
const _: () = assert!(signature::matmul_q::BLOCK == 32);
/// Tokens the matmul reference updates per pass of its inner loop: eight independent sums in
/// SSE registers, four in AVX2 and two in AVX-512 ones (measured at the model's 1536 x 576
/// shape; 64 spills registers).
const TOKENS: usize = 32;
/// Tokens per pass for the tokens after the last whole [`TOKENS`] tile, so that a short chunk
/// does not pay for a whole tile (they are padded to a multiple of it; the padding's sums are
/// dropped).
const TAIL_TOKENS: usize = 8;
/// Weight rows a [`TOKENS`] pass computes together, sharing each load of the token tile.
const ROW_GROUP: usize = 4;
/// The largest `n` for which the kernel's `t0 += MATMUL_TILE` token loop ends.
const MATMUL_N_MAX: u32 = u32::MAX - (signature::matmul_q::TILE - 1);
/// Multiply-adds below which a dispatch runs on the calling thread only.
const PARALLEL_WORK_MIN: usize = 1 << 18;

/// A `u64` count the host has already materialised (or bounds by one) as `usize`.
fn narrow(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// The f16 at the start of `bytes` (at least 2 long).
fn f16_at(bytes: &[u8]) -> f32 {
    f16_to_f32(u16::from_le_bytes([bytes[0], bytes[1]]))
}

/// The `len` bytes at byte `offset` of argument `arg`: in place where the address space can lend
/// them, else copied into `buffer` (one access, which faults as the kernel's loads would).
fn bytes_at<'a>(
    memory: &'a dyn DeviceMemory,
    arg: &ArgDecl,
    base: u64,
    offset: u64,
    len: usize,
    buffer: &'a mut Vec<u8>,
) -> Result<&'a [u8], KernelError> {
    if len > 0 {
        let address =
            base.checked_add(offset).ok_or(KernelError::ByteAddressOverflow { arg: arg.name, base, offset })?;
        if let Some(bytes) = memory.view(address, len) {
            return Ok(bytes);
        }
    }
    buffer.clear();
    buffer.resize(len, 0);
    load_bytes(memory, arg, base, offset, buffer)?;
    Ok(buffer)
}

/// A block format: its size and how the kernel dequantises a block's 32 weights.
#[derive(Clone, Copy)]
struct Format {
    sig: &'static Signature,
    block_bytes: usize,
    /// Writes the block's 32 weights, each as the kernel rounds it before the product.
    dequantise: fn(&[u8], &mut [f32]),
}

/// `(q & 15) * d + m` for the low nibbles (elements `0..16`), then the high (`16..32`).
fn dequantise_q4_1(block: &[u8], out: &mut [f32]) {
    let (d, m) = (f16_at(&block[0..2]), f16_at(&block[2..4]));
    let (lo, hi) = out.split_at_mut(16);
    for ((&q, lo), hi) in block[4..20].iter().zip(lo).zip(hi) {
        *lo = f32::from(q & 15) * d + m;
        *hi = f32::from(q >> 4) * d + m;
    }
}

/// `q * d` for elements `0..32`.
fn dequantise_q8_0(block: &[u8], out: &mut [f32]) {
    let d = f16_at(&block[0..2]);
    for (&q, w) in block[2..34].iter().zip(out) {
        *w = f32::from(q.cast_signed()) * d;
    }
}

const Q4_1: Format =
    Format { sig: &signature::MATMUL_Q4_1, block_bytes: super::Q4_1_BLOCK_BYTES, dequantise: dequantise_q4_1 };
const Q8_0: Format =
    Format { sig: &signature::MATMUL_Q8_0, block_bytes: super::Q8_0_BLOCK_BYTES, dequantise: dequantise_q8_0 };

/// `matmul_q4_1(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols, u32 n)`:
/// `y[t * rows + r] = sum_c w[r][c] * x[t * cols + c]` for `t < n`, `r < rows`, `w` in Q4_1.
///
/// Row `t` is bit for bit [`crate::cpu::matvec_q4_1`] on `x[t]`: work-group `r` (of exactly 32
/// work-items) handles weight row `r`; for every token, work-item `l` accumulates from `0.0` over
/// blocks `b = l, l + 32, ...` ascending, within a block `((q & 15) * d + m) * x[t][32 b + j]`
/// for `j < 16`, then the high nibbles, each operation rounded; the token's 32 partial sums are
/// added by the LDS tree (`stride = 16, ..., 1`).
///
/// Launch preconditions: work-group size 32, no partial work-group with a row, and, when any row
/// and token is handled, `cols` a multiple of 32 and `n <= 2^32 - 8`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn matmul_q4_1(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    matmul(launch, memory, Q4_1)
}

/// `matmul_q8_0(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols, u32 n)`: as
/// [`matmul_q4_1`] with Q8_0 blocks; row `t` is bit for bit [`crate::cpu::matvec_q8_0`] on `x[t]`,
/// each product `(q * d) * x[t][32 b + j]`, `j` ascending.
///
/// # Errors
/// As [`matmul_q4_1`].
pub fn matmul_q8_0(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    matmul(launch, memory, Q8_0)
}

/// The validated shape of a matmul launch.
#[derive(Clone, Copy)]
struct Matmul {
    y: u64,
    rows: u32,
    cols: usize,
    n: u32,
    /// `n` rounded up to whole tiles: [`TOKENS`], then [`TAIL_TOKENS`] for the rest.
    tokens_padded: usize,
}

/// The tokens' activations transposed into tiles: whole [`TOKENS`] tiles, then the remaining
/// tokens in [`TAIL_TOKENS`] tiles.
struct Tiles {
    main: Vec<[f32; TOKENS]>,
    tail: Vec<[f32; TAIL_TOKENS]>,
}

fn matmul(launch: &Launch<'_>, memory: &mut dyn DeviceMemory, format: Format) -> Result<(), KernelError> {
    use signature::matmul_q::{BLOCK, COLS, N, ROWS, W, X, Y};
    let grid = Grid::new(launch, format.sig)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if workgroup_size_x != BLOCK {
        return Err(KernelError::WorkgroupSizeRequired { workgroup_size_x, required: BLOCK });
    }
    let k = launch.kernarg;
    let (y, w, x) = (Y.read_ptr(k)?, W.read_ptr(k)?, X.read_ptr(k)?);
    let (rows, cols, n) = (ROWS.read_u32(k)?, COLS.read_u32(k)?, N.read_u32(k)?);
    let groups = grid.workgroups();
    if !grid.size_x.is_multiple_of(grid.workgroup_x) && groups - 1 < rows {
        return Err(KernelError::PartialWorkgroup { grid_size_x: grid.size_x, workgroup_size_x });
    }
    let active_rows = rows.min(groups);
    if active_rows == 0 || n == 0 {
        return Ok(());
    }
    if !cols.is_multiple_of(QK) {
        return Err(KernelError::ColsNotBlockMultiple { cols, block: QK });
    }
    if n > MATMUL_N_MAX {
        return Err(KernelError::StridedLoopWraps { arg: N.name, count: n, limit: MATMUL_N_MAX });
    }
    let (whole, rest) = (widen(n) / TOKENS * TOKENS, widen(n) % TOKENS);
    let tokens_padded = whole + rest.next_multiple_of(TAIL_TOKENS);
    let shape = Matmul { y, rows, cols: widen(cols), n, tokens_padded };
    if cols == 0 {
        // Every work-item's sum is 0.0, and so is the tree's, for every token.
        return shape.store_zeros(memory, active_rows);
    }
    let xs = load_f32_vec(memory, &X, x, 0, u64::from(n) * u64::from(cols))?;
    // x (4 * cols bytes per token) was read, so a weight row (cols / 32 * 34 bytes at most) and
    // the transposed activations (padded to at most 8 tokens) are bounded by mapped memory.
    let (main, tail) = xs.split_at(whole * shape.cols);
    let x_tiles = Tiles { main: tile_tokens(main, shape.cols), tail: tile_tokens(tail, shape.cols) };
    drop(xs);
    let row_bytes = shape.cols / widen(QK) * format.block_bytes;
    let rows_per_chunk = u32::try_from(READ_CHUNK_BYTES / row_bytes).unwrap_or(u32::MAX).max(1);
    // Weights the address space lends in place are computed in one pass over all rows (one
    // parallel region); the stores still go chunk by chunk, as the streamed reads do them.
    let lent =
        memory.view(w, widen(active_rows) * row_bytes).map(|all| shape.rows_of(all, row_bytes, format, &x_tiles));
    let mut buffer = Vec::new();
    let mut first = 0u32;
    while first < active_rows {
        let count = (active_rows - first).min(rows_per_chunk);
        let sums = match &lent {
            Some(all) => {
                let padded = shape.tokens_padded;
                std::borrow::Cow::Borrowed(&all[widen(first) * padded..widen(first + count) * padded])
            }
            None => {
                let offset = u64::from(first) * widen_usize(row_bytes);
                let bytes = bytes_at(&*memory, &W, w, offset, widen(count) * row_bytes, &mut buffer)?;
                std::borrow::Cow::Owned(shape.rows_of(bytes, row_bytes, format, &x_tiles))
            }
        };
        shape.store_rows(memory, first, &sums)?;
        first += count;
    }
    Ok(())
}

/// The token rows `xs` as tiles of `T`: element `(tile * cols + c)[u]` is
/// `x[tile * T + u][c]`, zero past the last token.
fn tile_tokens<const T: usize>(xs: &[f32], cols: usize) -> Vec<[f32; T]> {
    let n = xs.len() / cols;
    let mut tiles = vec![[0.0f32; T]; n.div_ceil(T) * cols];
    // One tile per task: a tile's T token rows in, its cols slots out.
    tiles.par_chunks_mut(cols).zip(xs.par_chunks(T * cols)).for_each(|(tile, rows)| {
        for (u, row) in rows.chunks_exact(cols).enumerate() {
            for (slot, &v) in tile.iter_mut().zip(row) {
                slot[u] = v;
            }
        }
    });
    tiles
}

impl Matmul {
    /// The sums of every weight row in `bytes` for every token: `[row][tokens_padded]`.
    fn rows_of(&self, bytes: &[u8], row_bytes: usize, format: Format, x_tiles: &Tiles) -> Vec<f32> {
        let row_count = bytes.len() / row_bytes;
        let mut sums = vec![0.0f32; row_count * self.tokens_padded];
        let cols = self.cols;
        // The scratch holds a group's work-groups' weight rows, dequantised.
        let job = |weights: &mut Vec<f32>, (rows, out): (&[u8], &mut [f32])| {
            matmul_rows(rows, row_bytes, format, x_tiles, cols, weights, out);
        };
        let work = row_count.saturating_mul(cols).saturating_mul(self.tokens_padded);
        let (group_bytes, group_sums) = (ROW_GROUP * row_bytes, ROW_GROUP * self.tokens_padded);
        if work < PARALLEL_WORK_MIN {
            let mut weights = Vec::new();
            for item in bytes.chunks(group_bytes).zip(sums.chunks_mut(group_sums)) {
                job(&mut weights, item);
            }
        } else {
            bytes.par_chunks(group_bytes).zip(sums.par_chunks_mut(group_sums)).for_each_init(Vec::new, job);
        }
        sums
    }

    /// Stores `sums` (`[row][tokens_padded]` of rows `first..`) as `y[t][first..]` for `t < n`.
    fn store_rows(&self, memory: &mut dyn DeviceMemory, first: u32, sums: &[f32]) -> Result<(), KernelError> {
        use signature::matmul_q::Y;
        let count = sums.len() / self.tokens_padded;
        // Transposed across the cores, stored token by token from this thread.
        let mut bits = vec![0u32; widen(self.n) * count];
        bits.par_chunks_mut(count.max(1)).enumerate().for_each(|(t, out)| {
            for (slot, row) in out.iter_mut().zip(sums.chunks_exact(self.tokens_padded)) {
                *slot = row[t].to_bits();
            }
        });
        for (t, token) in bits.chunks_exact(count.max(1)).enumerate() {
            let index = widen_usize(t) * u64::from(self.rows) + u64::from(first);
            store(memory, &Y, self.y, index, token)?;
        }
        Ok(())
    }

    /// `y[t][r] = 0.0` for `t < n`, `r < active_rows`.
    fn store_zeros(&self, memory: &mut dyn DeviceMemory, active_rows: u32) -> Result<(), KernelError> {
        use signature::matmul_q::Y;
        let zeros = vec![0u32; READ_CHUNK_ELEMENTS.min(widen(active_rows))];
        for t in 0..u64::from(self.n) {
            let mut first = 0u32;
            while first < active_rows {
                let len = widen(active_rows - first).min(zeros.len());
                store(memory, &Y, self.y, t * u64::from(self.rows) + u64::from(first), &zeros[..len])?;
                first += u32::try_from(len).unwrap_or(u32::MAX);
            }
        }
        Ok(())
    }
}

/// The sums of the weight rows in `rows` (at most [`ROW_GROUP`]) for every token (`out[r][t]`,
/// `t < tokens_padded`), as work-groups `r` of the kernel compute them: a whole group's rows
/// share each load of a token tile (so a tile is read from the cache once per group, not once
/// per row), the rows of a partial group go one by one.
fn matmul_rows(
    rows: &[u8],
    row_bytes: usize,
    format: Format,
    x_tiles: &Tiles,
    cols: usize,
    weights: &mut Vec<f32>,
    out: &mut [f32],
) {
    let count = rows.len() / row_bytes;
    weights.resize(count * cols, 0.0);
    for (block, values) in rows.chunks_exact(format.block_bytes).zip(weights.chunks_exact_mut(widen(QK))) {
        (format.dequantise)(block, values);
    }
    let padded = out.len() / count.max(1);
    let main_tokens = x_tiles.main.len() / cols * TOKENS;
    let isa = Isa::widest();
    let place = |out: &mut [f32], first_row: usize, token: usize, sums: &[[f32; TOKENS]]| {
        for (r, s) in sums.iter().enumerate() {
            out[(first_row + r) * padded + token..][..TOKENS].copy_from_slice(s);
        }
    };
    for (i, tile) in x_tiles.main.chunks_exact(cols).enumerate() {
        if count == ROW_GROUP {
            let sums = tile_sums_with::<TOKENS, ROW_GROUP>(isa, weights, cols, tile);
            place(out, 0, i * TOKENS, &sums);
        } else {
            for r in 0..count {
                let sums = tile_sums_with::<TOKENS, 1>(isa, &weights[r * cols..(r + 1) * cols], cols, tile);
                place(out, r, i * TOKENS, &sums);
            }
        }
    }
    for (i, tile) in x_tiles.tail.chunks_exact(cols).enumerate() {
        for r in 0..count {
            let [sums] = tile_sums_with::<TAIL_TOKENS, 1>(isa, &weights[r * cols..(r + 1) * cols], cols, tile);
            out[r * padded + main_tokens + i * TAIL_TOKENS..][..TAIL_TOKENS].copy_from_slice(&sums);
        }
    }
}

/// [`tile_sums`] compiled for the vector instruction set `isa` where this machine has it (the
/// same operations in the same order, in wider registers: the same bits), else as it is.
fn tile_sums_with<const T: usize, const R: usize>(
    isa: Option<Isa>,
    weights: &[f32],
    cols: usize,
    tile: &[[f32; T]],
) -> [[f32; T]; R] {
    match isa.filter(|isa| isa.available()) {
        #[cfg(target_arch = "x86_64")]
        Some(Isa::Avx512) => {
            #[allow(unsafe_code)]
            // SAFETY: `tile_sums_avx512` requires only the CPU features it is compiled for, and
            // `available()` detected AVX-512F, AVX2 and F16C on this machine just above.
            unsafe {
                tile_sums_avx512::<T, R>(weights, cols, tile)
            }
        }
        #[cfg(target_arch = "x86_64")]
        Some(Isa::Avx2) => {
            #[allow(unsafe_code)]
            // SAFETY: `tile_sums_avx2` requires only the CPU features it is compiled for, and
            // `available()` detected AVX2 and F16C on this machine just above.
            unsafe {
                tile_sums_avx2::<T, R>(weights, cols, tile)
            }
        }
        #[allow(unreachable_patterns)]
        _ => tile_sums::<T, R>(weights, cols, tile),
    }
}

/// [`tile_sums`] in 512-bit registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,f16c")]
fn tile_sums_avx512<const T: usize, const R: usize>(weights: &[f32], cols: usize, tile: &[[f32; T]]) -> [[f32; T]; R] {
    tile_sums::<T, R>(weights, cols, tile)
}

/// [`tile_sums`] in 256-bit registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
fn tile_sums_avx2<const T: usize, const R: usize>(weights: &[f32], cols: usize, tile: &[[f32; T]]) -> [[f32; T]; R] {
    tile_sums::<T, R>(weights, cols, tile)
}

/// The sums of `R` weight rows (`weights` holds `R` rows of `cols` values, dequantised) for the
/// `T` tokens of one tile: per row, the 32 work-items' partial sums, each token's accumulated in
/// the kernel's order, then the LDS tree. Blocks go through the inner loop in pairs `(b, b + 1)`
/// from an even `b`: they belong to two different work-items (lanes `b % 32` and `b % 32 + 1`),
/// so their sums are independent, and each work-item still takes its blocks in ascending order;
/// the `R` rows are `R` different work-groups, sharing only the loads of the tile.
#[inline(always)]
fn tile_sums<const T: usize, const R: usize>(weights: &[f32], cols: usize, tile: &[[f32; T]]) -> [[f32; T]; R] {
    const Q: usize = QK as usize;
    const ZEROS: [f32; Q] = [0.0; Q];
    let block_of = |r: usize, b: usize| -> &[f32; Q] {
        weights.get(r * cols + b * Q..).and_then(|w| w.first_chunk::<Q>()).unwrap_or(&ZEROS)
    };
    // lanes[lane][r]: work-item `lane`'s partial sums of row r.
    let mut lanes = [[[0.0f32; T]; R]; LANES];
    let blocks = cols / Q;
    let mut b = 0;
    while b + 1 < blocks {
        // b is even, so the pair's lanes are lane and lane + 1 < 32.
        let lane = b % LANES;
        let (x0, x1) = (&tile[b * Q..][..Q], &tile[(b + 1) * Q..][..Q]);
        let mut w0 = [&ZEROS; R];
        let mut w1 = [&ZEROS; R];
        for r in 0..R {
            w0[r] = block_of(r, b);
            w1[r] = block_of(r, b + 1);
        }
        let (mut acc0, mut acc1) = (lanes[lane], lanes[lane + 1]);
        for j in 0..Q {
            let (xa, xb) = (&x0[j], &x1[j]);
            for r in 0..R {
                let (wa, wb) = (w0[r][j], w1[r][j]);
                for t in 0..T {
                    acc0[r][t] += wa * xa[t];
                    acc1[r][t] += wb * xb[t];
                }
            }
        }
        lanes[lane] = acc0;
        lanes[lane + 1] = acc1;
        b += 2;
    }
    if b < blocks {
        let lane = b % LANES;
        let x = &tile[b * Q..][..Q];
        let mut acc = lanes[lane];
        for (j, x) in x.iter().enumerate() {
            for (r, acc) in acc.iter_mut().enumerate() {
                let w = block_of(r, b)[j];
                for t in 0..T {
                    acc[t] += w * x[t];
                }
            }
        }
        lanes[lane] = acc;
    }
    tree_reduce_tokens(&mut lanes);
    lanes[0]
}

/// The LDS tree of [`tree_reduce`] over 32 work-items, for every token of a tile at once: slot
/// `l < stride` adds slot `l + stride`, token by token; the sums end in slot 0.
#[inline(always)]
fn tree_reduce_tokens<const T: usize, const R: usize>(lanes: &mut [[[f32; T]; R]; LANES]) {
    const { assert!(LANES == 32) };
    for stride in [16, 8, 4, 2, 1] {
        let (low, high) = lanes.split_at_mut(stride);
        for (a, b) in low.iter_mut().zip(high.iter()) {
            for r in 0..R {
                for t in 0..T {
                    a[r][t] += b[r][t];
                }
            }
        }
    }
}

/// `get_rows_q8_0(float* out, const unsigned char* table, const u32* tokens, u32 cols, u32 rows,
/// u32 n)`: `out[t * cols + c] = table[tokens[t]][c]` dequantised (`q * d`, one rounding) for the
/// elements `t * cols + c < min(n * cols, grid_size_x)`, one work-item per element. Row `t` is
/// bit for bit [`crate::cpu::get_row_q8_0`] with token `tokens[t]`; an id `>= rows` writes nothing for
/// that `t`.
///
/// Launch preconditions: `cols` a multiple of 32 when any element is handled.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn get_rows_q8_0(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::get_rows_q8_0::{COLS, N, OUT, ROWS, TABLE, TOKENS};
    let grid = Grid::new(launch, &signature::GET_ROWS_Q8_0)?;
    let k = launch.kernarg;
    let (out, table, tokens) = (OUT.read_ptr(k)?, TABLE.read_ptr(k)?, TOKENS.read_ptr(k)?);
    let (cols, rows, n) = (COLS.read_u32(k)?, ROWS.read_u32(k)?, N.read_u32(k)?);
    let active = (u64::from(n) * u64::from(cols)).min(grid.size_x.into());
    if active == 0 {
        return Ok(());
    }
    if !cols.is_multiple_of(QK) {
        return Err(KernelError::ColsNotBlockMultiple { cols, block: QK });
    }
    let table_rows = TableRows { out, table, cols: cols.into(), rows };
    let touched = active.div_ceil(cols.into());
    let mut ids = Vec::new();
    let mut scratch = (Vec::new(), Vec::new());
    let mut first = 0u64;
    while first < touched {
        let count = (touched - first).min(widen_usize(READ_CHUNK_ELEMENTS));
        ids.resize(narrow(count), 0);
        load(memory, &TOKENS, tokens, first, &mut ids)?;
        for (t, &tok) in (first..).zip(&ids) {
            // t < touched, so t * cols < active.
            let elements = (active - t * table_rows.cols).min(table_rows.cols);
            table_rows.copy(memory, t, tok, elements, &mut scratch)?;
        }
        first += count;
    }
    Ok(())
}

/// The arguments of a `get_rows_q8_0` launch.
struct TableRows {
    out: u64,
    table: u64,
    cols: u64,
    rows: u32,
}

impl TableRows {
    /// Writes the first `elements` of table row `tok`, dequantised, to output row `t`, streaming
    /// whole blocks of at most [`READ_CHUNK_BYTES`].
    fn copy(
        &self,
        memory: &mut dyn DeviceMemory,
        t: u64,
        tok: u32,
        elements: u64,
        (buffer, values): &mut (Vec<u8>, Vec<u32>),
    ) -> Result<(), KernelError> {
        use signature::get_rows_q8_0::{OUT, TABLE};
        if tok >= self.rows {
            return Ok(());
        }
        let block_bytes = widen_usize(super::Q8_0_BLOCK_BYTES);
        let blocks_per_row = self.cols / u64::from(QK);
        let overflow = KernelError::ByteAddressOverflow { arg: TABLE.name, base: self.table, offset: u64::MAX };
        let row_offset =
            u64::from(tok).checked_mul(blocks_per_row).and_then(|b| b.checked_mul(block_bytes)).ok_or(overflow)?;
        let per_chunk = widen_usize(READ_CHUNK_BYTES / super::Q8_0_BLOCK_BYTES) * u64::from(QK);
        let mut done = 0u64;
        while done < elements {
            let count = (elements - done).min(per_chunk);
            let offset = row_offset.checked_add(done / u64::from(QK) * block_bytes).ok_or(overflow)?;
            let len = narrow(count.div_ceil(QK.into()) * block_bytes);
            let bytes = bytes_at(&*memory, &TABLE, self.table, offset, len, buffer)?;
            values.clear();
            for block in bytes.chunks_exact(super::Q8_0_BLOCK_BYTES) {
                let d = f16_at(block);
                values.extend(block[2..].iter().map(|&q| (f32::from(q.cast_signed()) * d).to_bits()));
            }
            values.truncate(narrow(count));
            store(memory, &OUT, self.out, t * self.cols + done, values)?;
            done += count;
        }
        Ok(())
    }
}

/// `rope_rows(float* x, const float* table, u32 pos0, u32 heads, u32 head_dim, u32 n)`: in place
/// on `x[t][heads][head_dim]` for `t < n`, GGML "normal" mode, one work-item per pair, pair
/// `p = t * heads * head_dim / 2 + h * head_dim / 2 + i < min(n * heads * head_dim / 2,
/// grid_size_x)`. Row `t` is bit for bit [`crate::cpu::rope`] at position `pos = pos0 + t` (a 32-bit
/// sum that wraps, as the kernel's does): with `c, s = table[2 * (pos * head_dim / 2 + i) + {0,
/// 1}]`, `x0 * c - x1 * s`, `x0 * s + x1 * c`, each product rounded.
///
/// Launch preconditions: `head_dim` even and `heads * head_dim` below `2^32`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn rope_rows(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::rope_rows::{HEAD_DIM, HEADS, N, POS0, TABLE, X};
    let grid = Grid::new(launch, &signature::ROPE_ROWS)?;
    let k = launch.kernarg;
    let (x, table) = (X.read_ptr(k)?, TABLE.read_ptr(k)?);
    let (pos0, heads, head_dim, n) = (POS0.read_u32(k)?, HEADS.read_u32(k)?, HEAD_DIM.read_u32(k)?, N.read_u32(k)?);
    if !head_dim.is_multiple_of(2) {
        return Err(KernelError::OddHeadDim { head_dim });
    }
    let row_elements = heads.checked_mul(head_dim).ok_or(KernelError::HeadElementsOverflow { heads, head_dim })?;
    let (half, row_pairs) = (u64::from(head_dim / 2), u64::from(row_elements / 2));
    let active = (u64::from(n) * row_pairs).min(grid.size_x.into());
    if active == 0 {
        return Ok(());
    }
    for t in 0..active.div_ceil(row_pairs) {
        // t < n fits 32 bits.
        let row = u32::try_from(t).unwrap_or(u32::MAX);
        let pairs = (active - t * row_pairs).min(row_pairs);
        let first = t * u64::from(row_elements);
        let xs = load_f32_vec(memory, &X, x, first, 2 * pairs)?;
        let pos = pos0.wrapping_add(row);
        // Work-item p reads (cos, sin) pair p % half: the row in full only when every pair is used.
        let cs = load_f32_vec(memory, &TABLE, table, 2 * u64::from(pos) * half, 2 * half.min(pairs))?;
        let rotated = rotate_pairs(&xs, &cs, narrow(half));
        store(memory, &X, x, first, &rotated)?;
    }
    Ok(())
}

/// `rope`'s rotation of the pairs of `xs` (pair `p` with `(cos, sin)` pair `p % half` of `cs`).
fn rotate_pairs(xs: &[f32], cs: &[f32], half: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(xs.len());
    for (p, pair) in xs.chunks_exact(2).enumerate() {
        let i = p % half;
        let (c, s, x0, x1) = (cs[2 * i], cs[2 * i + 1], pair[0], pair[1]);
        out.push((x0 * c - x1 * s).to_bits());
        out.push((x0 * s + x1 * c).to_bits());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_tiles_transpose_and_pad() {
        let xs: Vec<f32> = (0..3 * 2).map(|v| v as f32).collect();
        let tiles: Vec<[f32; TOKENS]> = tile_tokens(&xs, 2);
        assert_eq!(tiles.len(), 2);
        assert_eq!(tiles[0][..4], [0.0, 2.0, 4.0, 0.0]);
        assert_eq!(tiles[1][..4], [1.0, 3.0, 5.0, 0.0]);
    }

    fn vector_paths_agree<const T: usize, const R: usize>(cols: usize, seed: u32) {
        let mut state = seed.wrapping_mul(2_654_435_761) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            // Mostly ordinary values, now and then any bit pattern (NaN, infinities, subnormals).
            if state.is_multiple_of(16) {
                f32::from_bits(state.rotate_left(7))
            } else {
                f32::from(u16::try_from(state % 2001).unwrap_or(0)) / 250.0 - 4.0
            }
        };
        let weights: Vec<f32> = (0..R * cols).map(|_| next()).collect();
        let tile: Vec<[f32; T]> = (0..cols).map(|_| std::array::from_fn(|_| next())).collect();
        let scalar = tile_sums::<T, R>(&weights, cols, &tile);
        // Each row of a group is the row alone.
        for r in 0..R {
            let [alone] = tile_sums::<T, 1>(&weights[r * cols..(r + 1) * cols], cols, &tile);
            let same =
                alone.iter().zip(&scalar[r]).all(|(a, s)| a.to_bits() == s.to_bits() || (a.is_nan() && s.is_nan()));
            assert!(same, "row {r} of {R}, cols {cols}: {alone:?} vs {:?}", scalar[r]);
        }
        for isa in crate::cpu::simd::available_for_tests().into_iter().map(Some).chain([None]) {
            let fast = tile_sums_with::<T, R>(isa, &weights, cols, &tile);
            for (r, (fast, scalar)) in fast.iter().zip(&scalar).enumerate() {
                for (t, (f, s)) in fast.iter().zip(scalar).enumerate() {
                    let same = f.to_bits() == s.to_bits() || (f.is_nan() && s.is_nan());
                    assert!(same, "{isa:?} cols {cols} row {r} token {t}: {f} vs {s}");
                }
            }
        }
    }

    #[test]
    fn the_vector_paths_give_the_scalar_bits() {
        for (i, cols) in [32, 64, 96, 32 * 18, 32 * 33, 32 * 48, 32 * 70].into_iter().enumerate() {
            let seed = u32::try_from(i).unwrap_or(0);
            vector_paths_agree::<TOKENS, ROW_GROUP>(cols, seed);
            vector_paths_agree::<TOKENS, 1>(cols, seed + 50);
            vector_paths_agree::<TAIL_TOKENS, 1>(cols, seed + 100);
        }
    }

    #[test]
    fn the_token_tree_pairs_like_the_lds_tree() {
        let mut lanes = [[[0.0f32; TOKENS]; 2]; LANES];
        let mut flat = [0.0f32; LANES];
        for (l, lane) in lanes.iter_mut().enumerate() {
            // 2^24 next to small terms: the pairing decides the rounding.
            let v = if l == 0 { 16_777_216.0 } else { 1.0 };
            lane[1][3] = v;
            flat[l] = v;
        }
        tree_reduce_tokens(&mut lanes);
        assert_eq!(lanes[0][1][3].to_bits(), crate::cpu::tree_reduce(&mut flat).to_bits());
        assert_eq!(lanes[0][0][3].to_bits(), 0);
    }
}
