//! `matmul_q4_1` and `matmul_q8_0`, the matrix products of a prefill pass (the contract and the
//! speed notes of [`super`]).

use super::*;
use crate::cpu::ggml::{self, BlockFormat};
use crate::cpu::simd::compiled_for;

mod fused;
#[cfg(target_arch = "x86_64")]
mod x86;

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
/// Weight rows a pass computes together, sharing each load of the token tile: the AVX-512 path
/// takes them at once, the others in halves of [`HALF_GROUP`].
const ROW_GROUP: usize = 8;
/// Rows per pass of [`tile_sums`] in a group.
const HALF_GROUP: usize = 4;
#[cfg(target_arch = "x86_64")]
const _: () = assert!(ROW_GROUP == x86::GROUP_ROWS && ROW_GROUP.is_multiple_of(HALF_GROUP));
/// The largest `n` for which the kernel's `t0 += MATMUL_TILE` token loop ends.
const MATMUL_N_MAX: u32 = u32::MAX - (signature::matmul_q::TILE - 1);
/// Multiply-adds below which a dispatch runs on the calling thread only.
const PARALLEL_WORK_MIN: usize = 1 << 18;

/// A block format: its size and how the kernel dequantises a block's weights.
#[derive(Clone, Copy)]
struct Format {
    sig: &'static Signature,
    block_bytes: usize,
    /// Weights a block holds: 32, or 256 for the K formats of module `ggml_quants`.
    block_values: u32,
    kind: Kind,
}

/// The block formats of the matrix products.
#[derive(Clone, Copy)]
enum Kind {
    Q4_1,
    Q8_0,
    /// A format of module `ggml_quants`, dequantised by [`crate::cpu::ggml`] in 32-value chunks.
    Ggml(BlockFormat),
}

impl Kind {
    /// Whether the kernel adds a block by chains of fused multiply-adds on its quants, then its
    /// scales (Q4_1, Q8_0: [`crate::cpu::matvec_q4_1`]), rather than weight by weight.
    const fn fused(self) -> bool {
        matches!(self, Kind::Q4_1 | Kind::Q8_0)
    }

    /// Writes what the products read of the whole rows `rows` into `out` (as many values), block
    /// by block: for a [fused](Kind::fused) format each block's 32 quants as `f32` (exact), in
    /// the element order, and its `[d, m]` (`m = 0.0` for Q8_0) into `scales` (a block each);
    /// else each weight as the kernel rounds it before the product. Inlined, so that it is
    /// compiled for the instruction set of its caller.
    #[inline(always)]
    fn dequantise_rows(self, block_bytes: usize, rows: &[u8], out: &mut [f32], scales: &mut [[f32; 2]]) {
        let blocks = rows.chunks_exact(block_bytes).zip(out.as_chunks_mut::<32>().0).zip(scales);
        match self {
            Kind::Q4_1 => blocks.for_each(|((block, values), scales)| *scales = fused::quants_q4_1(block, values)),
            Kind::Q8_0 => blocks.for_each(|((block, values), scales)| *scales = fused::quants_q8_0(block, values)),
            Kind::Ggml(format) => ggml::dequantize_rows_unchecked(format, rows, out),
        }
    }
}

const Q4_1: Format = Format {
    sig: &signature::MATMUL_Q4_1,
    block_bytes: crate::cpu::Q4_1_BLOCK_BYTES,
    block_values: QK,
    kind: Kind::Q4_1,
};
const Q8_0: Format = Format {
    sig: &signature::MATMUL_Q8_0,
    block_bytes: crate::cpu::Q8_0_BLOCK_BYTES,
    block_values: QK,
    kind: Kind::Q8_0,
};

/// `matmul_<t>` of module `ggml_quants` (signature `sig`) for block format `format`: as
/// [`matmul_q4_1`], with the weights as [`crate::cpu::ggml`] dequantises them; row `t` is bit for
/// bit the format's matvec on `x[t]`.
pub(crate) fn matmul_ggml(
    launch: &Launch<'_>,
    memory: &mut dyn DeviceMemory,
    sig: &'static Signature,
    format: BlockFormat,
) -> Result<(), KernelError> {
    let values = u32::try_from(format.block_values()).unwrap_or(u32::MAX);
    matmul(
        launch,
        memory,
        Format { sig, block_bytes: format.block_bytes(), block_values: values, kind: Kind::Ggml(format) },
    )
}

/// `matmul_q4_1(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols, u32 n)`:
/// `y[t * rows + r] = sum_c w[r][c] * x[t * cols + c]` for `t < n`, `r < rows`, `w` in Q4_1.
///
/// Row `t` is bit for bit [`crate::cpu::matvec_q4_1`] on `x[t]`: work-group `r` (of exactly 32
/// work-items) handles weight row `r`; for every token, work-item `l` accumulates from `0.0` over
/// blocks `b = l, l + 32, ...` ascending, each block added as the matvec adds it (the chains `lo`
/// and `hi` of fused multiply-adds on the quants and `x[t]`, the block's `sx` of `x[t]`, then
/// `acc = fma(d, lo + hi, acc)`, `acc = fma(m, sx, acc)`); the token's 32 partial sums are added
/// by the LDS tree (`stride = 16, ..., 1`).
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
/// [`matmul_q4_1`] with Q8_0 blocks; row `t` is bit for bit [`crate::cpu::matvec_q8_0`] on `x[t]`
/// (per block the chains `lo` and `hi`, then `acc = fma(d, lo + hi, acc)`).
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
/// tokens in [`TAIL_TOKENS`] tiles; for Q4_1 also each tile's block sums `sx`
/// ([`fused::block_sums`]: `cols / 32` slots a tile), empty otherwise.
struct Tiles {
    main: Vec<Slot<TOKENS>>,
    tail: Vec<Slot<TAIL_TOKENS>>,
    main_sums: Vec<Slot<TOKENS>>,
    tail_sums: Vec<Slot<TAIL_TOKENS>>,
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
    if !cols.is_multiple_of(format.block_values) {
        return Err(KernelError::ColsNotBlockMultiple { cols, block: format.block_values });
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
    // x in place where the address space lends it, else read.
    let x_len = u64::from(n) * u64::from(cols);
    let lent_x = usize::try_from(4 * x_len).ok().and_then(|len| memory.view(x, len));
    let x_tiles = match lent_x {
        Some(bytes) => Tiles::new(bytes.as_chunks::<4>().0, whole, shape.cols, |v| f32::from_le_bytes(*v), format),
        None => Tiles::new(&load_f32_vec(memory, &X, x, 0, x_len)?, whole, shape.cols, |&v| v, format),
    };
    // x (4 * cols bytes per token) was read, so a weight row (cols / 32 * 34 bytes at most) and
    // the transposed activations (padded to at most 8 tokens) are bounded by mapped memory.
    let row_bytes = shape.cols / widen(format.block_values) * format.block_bytes;
    let rows_per_chunk = u32::try_from(READ_CHUNK_BYTES / row_bytes).unwrap_or(u32::MAX).max(1);
    // Weights the address space lends in place are computed in one pass over all rows (one
    // parallel region) and stored at once; streamed weights chunk by chunk.
    if let Some(all) = memory.view(w, widen(active_rows) * row_bytes) {
        let sums = shape.rows_of(all, row_bytes, format, &x_tiles);
        return shape.store_rows(memory, 0, &sums);
    }
    let mut buffer = Vec::new();
    let mut first = 0u32;
    while first < active_rows {
        let count = (active_rows - first).min(rows_per_chunk);
        let offset = u64::from(first) * widen_usize(row_bytes);
        let bytes = bytes_at(&*memory, &W, w, offset, widen(count) * row_bytes, &mut buffer)?;
        let sums = shape.rows_of(bytes, row_bytes, format, &x_tiles);
        shape.store_rows(memory, first, &sums)?;
        first += count;
    }
    Ok(())
}

/// One column of a token tile: the `T` tokens' activations for that column, on a cache line of
/// its own (a vector load of them never straddles two lines).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot<const T: usize>([f32; T]);

impl Tiles {
    /// The token rows `xs` (`value` of each element) as tiles: the first `whole` tokens in
    /// [`TOKENS`] tiles, the rest in [`TAIL_TOKENS`] tiles; with their block sums for Q4_1.
    fn new<V: Sync>(xs: &[V], whole: usize, cols: usize, value: impl Fn(&V) -> f32 + Sync, format: Format) -> Self {
        let (main, tail) = xs.split_at(whole * cols);
        let (main, tail) = (tile_tokens(main, cols, &value), tile_tokens(tail, cols, &value));
        let (main_sums, tail_sums) = match format.kind {
            Kind::Q4_1 => (fused::block_sums(&main), fused::block_sums(&tail)),
            _ => (Vec::new(), Vec::new()),
        };
        Self { main, tail, main_sums, tail_sums }
    }
}

/// The token rows `xs` (`value` of each element) as tiles of `T`: element `(tile * cols + c)[u]`
/// is `x[tile * T + u][c]`, zero past the last token.
fn tile_tokens<const T: usize, V: Sync>(xs: &[V], cols: usize, value: &(impl Fn(&V) -> f32 + Sync)) -> Vec<Slot<T>> {
    let n = xs.len() / cols;
    let mut tiles = vec![Slot([0.0f32; T]); n.div_ceil(T) * cols];
    /// Columns filled together: their slots stay in the first-level cache while every token of
    /// the tile writes into them.
    const COLUMNS: usize = 16;
    // One tile per task: a tile's T token rows in, its cols slots out.
    tiles.par_chunks_mut(cols).zip(xs.par_chunks(T * cols)).for_each(|(tile, rows)| {
        for (c0, slots) in (0..cols).step_by(COLUMNS).zip(tile.chunks_mut(COLUMNS)) {
            for (u, row) in rows.chunks_exact(cols).enumerate() {
                for (slot, v) in slots.iter_mut().zip(&row[c0..]) {
                    slot.0[u] = value(v);
                }
            }
        }
    });
    tiles
}

impl Matmul {
    /// The sums of every weight row in `bytes` for every token, group by group of
    /// [`ROW_GROUP`] rows, each `[tokens_padded][rows of the group]`.
    fn rows_of(&self, bytes: &[u8], row_bytes: usize, format: Format, x_tiles: &Tiles) -> Vec<f32> {
        let row_count = bytes.len() / row_bytes;
        let mut sums = vec![0.0f32; row_count * self.tokens_padded];
        let cols = self.cols;
        let isa = Isa::widest();
        let job = |scratch: &mut Scratch, (rows, out): (&[u8], &mut [f32])| {
            matmul_rows(isa, rows, row_bytes, format, x_tiles, cols, scratch, out);
        };
        let work = row_count.saturating_mul(cols).saturating_mul(self.tokens_padded);
        let (group_bytes, group_sums) = (ROW_GROUP * row_bytes, ROW_GROUP * self.tokens_padded);
        if work < PARALLEL_WORK_MIN {
            let mut scratch = Scratch::new();
            for item in bytes.chunks(group_bytes).zip(sums.chunks_mut(group_sums)) {
                job(&mut scratch, item);
            }
        } else {
            bytes.par_chunks(group_bytes).zip(sums.par_chunks_mut(group_sums)).for_each_init(Scratch::new, job);
        }
        sums
    }

    /// Stores `sums` (rows `first..` as [`Matmul::rows_of`] lays them out) as `y[t][first..]`
    /// for `t < n`: token by token, or in one store when the rows are all of `y`'s rows.
    fn store_rows(&self, memory: &mut dyn DeviceMemory, first: u32, sums: &[f32]) -> Result<(), KernelError> {
        use signature::matmul_q::Y;
        /// Tokens gathered together by one task.
        const TRANSPOSE_TOKENS: usize = 16;
        let count = sums.len() / self.tokens_padded;
        if count == 0 {
            return Ok(());
        }
        // Each token's row gathered from the groups (a group's sums for a token are adjacent)
        // across the cores, then stored from this thread.
        let mut bits = vec![0u32; widen(self.n) * count];
        let groups = sums.chunks(ROW_GROUP * self.tokens_padded);
        bits.par_chunks_mut(count * TRANSPOSE_TOKENS).enumerate().for_each(|(block, out)| {
            let t0 = block * TRANSPOSE_TOKENS;
            for (g, group) in groups.clone().enumerate() {
                let rows = group.len() / self.tokens_padded;
                for (token, sums) in out.chunks_exact_mut(count).zip(group[t0 * rows..].chunks_exact(rows)) {
                    for (slot, sum) in token[g * ROW_GROUP..][..rows].iter_mut().zip(sums) {
                        *slot = sum.to_bits();
                    }
                }
            }
        });
        if first == 0 && count == widen(self.rows) {
            let tokens = (0..widen(self.n)).map(|t| t * count..(t + 1) * count);
            return store_pieces(memory, &Y, (self.y, 0), &bits, tokens);
        }
        for (t, token) in bits.chunks_exact(count).enumerate() {
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

/// A work-item's partial sums of `R` weight rows for the `T` tokens of a tile, for each of the
/// 32 work-items of a work-group.
type Lanes<const T: usize, const R: usize> = [[[f32; T]; R]; LANES];

/// A worker's scratch for [`matmul_rows`]: a group's weight rows, dequantised (for a fused
/// format its quants, and its blocks' scales), and the work-items' partial sums for each tile
/// shape. [`tile_sums`] writes every slot it reads, so none is cleared between uses.
struct Scratch {
    weights: Vec<f32>,
    scales: Vec<[f32; 2]>,
    wide: Box<Lanes<TOKENS, ROW_GROUP>>,
    group: Box<Lanes<TOKENS, HALF_GROUP>>,
    row: Box<Lanes<TOKENS, 1>>,
    tail_group: Box<Lanes<TAIL_TOKENS, HALF_GROUP>>,
    tail: Box<Lanes<TAIL_TOKENS, 1>>,
}

impl Scratch {
    fn new() -> Self {
        Self {
            weights: Vec::new(),
            scales: Vec::new(),
            wide: Box::new([[[0.0; TOKENS]; ROW_GROUP]; LANES]),
            group: Box::new([[[0.0; TOKENS]; HALF_GROUP]; LANES]),
            row: Box::new([[[0.0; TOKENS]; 1]; LANES]),
            tail_group: Box::new([[[0.0; TAIL_TOKENS]; HALF_GROUP]; LANES]),
            tail: Box::new([[[0.0; TAIL_TOKENS]; 1]; LANES]),
        }
    }
}

/// The sums of the weight rows in `rows` (at most [`ROW_GROUP`]) for every token (`out[t][r]`,
/// `t < tokens_padded`), as work-groups `r` of the kernel compute them, compiled for the vector
/// instruction set `isa` where this machine has it (the same operations in the same order, in
/// wider registers: the same bits), else as it is.
#[allow(clippy::too_many_arguments)]
fn matmul_rows(
    isa: Option<Isa>,
    rows: &[u8],
    row_bytes: usize,
    format: Format,
    x_tiles: &Tiles,
    cols: usize,
    scratch: &mut Scratch,
    out: &mut [f32],
) {
    let isa = isa.filter(|isa| isa.available());
    // The body compiled for the instruction set; with `WIDE` only where this machine has
    // AVX-512 (detected just above).
    #[cfg(target_arch = "x86_64")]
    if isa == Some(Isa::Avx512) {
        return compiled_for(
            isa,
            #[inline(always)]
            || matmul_rows_inline::<true>(rows, row_bytes, format, x_tiles, cols, scratch, out),
        );
    }
    compiled_for(
        isa,
        #[inline(always)]
        || matmul_rows_inline::<false>(rows, row_bytes, format, x_tiles, cols, scratch, out),
    );
}

/// The body of [`matmul_rows`]: the rows are dequantised into the scratch, then a whole
/// group's rows share each load of a token tile (so a tile is read from the cache once per
/// group pass, not once per row); the rows of a partial group go one by one. `WIDE`: whole
/// groups of whole tiles go through [`x86::tile_sums_group`]; only a caller compiled for AVX-512
/// on a machine that has it may set it.
#[inline(always)]
fn matmul_rows_inline<const WIDE: bool>(
    rows: &[u8],
    row_bytes: usize,
    format: Format,
    x_tiles: &Tiles,
    cols: usize,
    scratch: &mut Scratch,
    out: &mut [f32],
) {
    let count = rows.len() / row_bytes;
    let weights = &mut scratch.weights;
    weights.resize(count * cols, 0.0);
    let blocks = cols / widen(QK);
    let scales = &mut scratch.scales;
    scales.resize(if format.kind.fused() { count * blocks } else { 0 }, [0.0; 2]);
    format.kind.dequantise_rows(format.block_bytes, rows, weights, scales);
    let main_tokens = x_tiles.main.len() / cols * TOKENS;
    if format.kind.fused() {
        let rows = fused::Rows { quants: weights, scales, count, cols };
        for (i, tile) in x_tiles.main.chunks_exact(cols).enumerate() {
            let sums = x_tiles.main_sums.get(i * blocks..(i + 1) * blocks).unwrap_or(&[]);
            let token = i * TOKENS;
            #[cfg(target_arch = "x86_64")]
            if WIDE && count == ROW_GROUP {
                #[allow(unsafe_code)]
                // SAFETY: `tile_sums_group_fused` requires only AVX-512F, AVX2, FMA and F16C, and
                // `WIDE` is set only by `matmul_rows`, after detecting them on this machine.
                let sums = unsafe { x86::tile_sums_group_fused(&rows, tile, sums, &mut scratch.wide) };
                place(out, count, 0, token, &sums);
                continue;
            }
            rows.tile(tile, sums, token, &mut scratch.group, &mut scratch.row, out);
        }
        for (i, tile) in x_tiles.tail.chunks_exact(cols).enumerate() {
            let sums = x_tiles.tail_sums.get(i * blocks..(i + 1) * blocks).unwrap_or(&[]);
            let token = main_tokens + i * TAIL_TOKENS;
            rows.tile(tile, sums, token, &mut scratch.tail_group, &mut scratch.tail, out);
        }
        return;
    }
    let row = |r: usize, rows: usize| &weights[r * cols..(r + rows) * cols];
    // A group's rows are enough independent chains for one work-item at a time on AVX-512; in
    // halves, and a single row's tokens, take two work-items at once.
    for (i, tile) in x_tiles.main.chunks_exact(cols).enumerate() {
        let token = i * TOKENS;
        if count == ROW_GROUP {
            #[cfg(target_arch = "x86_64")]
            if WIDE {
                #[allow(unsafe_code)]
                // SAFETY: `tile_sums_group` requires only AVX-512F, AVX2 and F16C, and `WIDE` is
                // set only by `matmul_rows`, after detecting them on this machine.
                let sums = unsafe { x86::tile_sums_group(row(0, ROW_GROUP), cols, tile, &mut scratch.wide) };
                place(out, count, 0, token, &sums);
                continue;
            }
            for first in (0..ROW_GROUP).step_by(HALF_GROUP) {
                let sums =
                    tile_sums::<TOKENS, HALF_GROUP, true>(row(first, HALF_GROUP), cols, tile, &mut scratch.group);
                place(out, count, first, token, &sums);
            }
        } else {
            for r in 0..count {
                let sums = tile_sums::<TOKENS, 1, true>(row(r, 1), cols, tile, &mut scratch.row);
                place(out, count, r, token, &sums);
            }
        }
    }
    for (i, tile) in x_tiles.tail.chunks_exact(cols).enumerate() {
        let token = main_tokens + i * TAIL_TOKENS;
        if count == ROW_GROUP {
            for first in (0..ROW_GROUP).step_by(HALF_GROUP) {
                let sums = tile_sums::<TAIL_TOKENS, HALF_GROUP, true>(
                    row(first, HALF_GROUP),
                    cols,
                    tile,
                    &mut scratch.tail_group,
                );
                place(out, count, first, token, &sums);
            }
        } else {
            for r in 0..count {
                let sums = tile_sums::<TAIL_TOKENS, 1, true>(row(r, 1), cols, tile, &mut scratch.tail);
                place(out, count, r, token, &sums);
            }
        }
    }
}

/// Writes `sums[r]` (the tile's tokens from `token`) into `out[token + t][first_row + r]`
/// (`rows` sums a token).
#[inline(always)]
fn place<const T: usize>(out: &mut [f32], rows: usize, first_row: usize, token: usize, sums: &[[f32; T]]) {
    for (t, token) in out[token * rows..][..T * rows].chunks_exact_mut(rows).enumerate() {
        for (slot, row) in token[first_row..].iter_mut().zip(sums) {
            *slot = row[t];
        }
    }
}

/// The sums of `R` weight rows (`weights` holds `R` rows of `cols` values, dequantised) for the
/// `T` tokens of one tile: per row, the 32 work-items' partial sums, each token's accumulated in
/// the kernel's order, then the LDS tree.
///
/// The `R` rows are `R` different work-groups, sharing only the loads of the tile. With `PAIR`,
/// work-items go in pairs `(l, l + 1)`: their sums are independent, so the inner loop updates two
/// chains at once (for `R = 1`, which alone would wait on one chain's latency); each work-item
/// still takes its blocks `l, l + 32, ...` in ascending order. A work-item with no block
/// (`l >= cols / 32`) keeps the `+0.0` it starts from, and the tree adds it as the kernel's does.
#[inline(always)]
fn tile_sums<const T: usize, const R: usize, const PAIR: bool>(
    weights: &[f32],
    cols: usize,
    tile: &[Slot<T>],
    lanes: &mut Lanes<T, R>,
) -> [[f32; T]; R] {
    const Q: usize = QK as usize;
    const ZEROS: [f32; Q] = [0.0; Q];
    let block_of = |r: usize, b: usize| -> &[f32; Q] {
        weights.get(r * cols + b * Q..).and_then(|w| w.first_chunk::<Q>()).unwrap_or(&ZEROS)
    };
    let x_of = |b: usize| &tile[b * Q..][..Q];
    let blocks = cols / Q;
    let active = blocks.min(LANES);
    if active == 0 {
        return [[0.0; T]; R];
    }
    let mut lane = 0;
    while lane < active {
        let pair = PAIR && lane + 1 < active;
        let (mut acc0, mut acc1) = ([[0.0f32; T]; R], [[0.0f32; T]; R]);
        let mut b = lane;
        // Both work-items have block b and b + 1 of this round.
        while pair && b + 1 < blocks {
            let (x0, x1) = (x_of(b), x_of(b + 1));
            let w0: [&[f32; Q]; R] = std::array::from_fn(|r| block_of(r, b));
            let w1: [&[f32; Q]; R] = std::array::from_fn(|r| block_of(r, b + 1));
            // The chains in locals of this round only, so that they stay in registers.
            let (mut a0, mut a1) = (acc0, acc1);
            for j in 0..Q {
                let (xa, xb) = (&x0[j].0, &x1[j].0);
                for r in 0..R {
                    let (wa, wb) = (w0[r][j], w1[r][j]);
                    for t in 0..T {
                        a0[r][t] += wa * xa[t];
                        a1[r][t] += wb * xb[t];
                    }
                }
            }
            (acc0, acc1) = (a0, a1);
            b += LANES;
        }
        // Work-item `lane` alone: its remaining blocks (the last one of a pair's, or all of an
        // unpaired work-item's).
        while b < blocks {
            let x = x_of(b);
            let w: [&[f32; Q]; R] = std::array::from_fn(|r| block_of(r, b));
            let mut a = acc0;
            for j in 0..Q {
                let x = &x[j].0;
                for r in 0..R {
                    let w = w[r][j];
                    for t in 0..T {
                        a[r][t] += w * x[t];
                    }
                }
            }
            acc0 = a;
            b += LANES;
        }
        lanes[lane] = acc0;
        if pair {
            lanes[lane + 1] = acc1;
        }
        lane += if pair { 2 } else { 1 };
    }
    for slot in &mut lanes[active..] {
        *slot = [[0.0; T]; R];
    }
    tree_reduce_tokens(lanes);
    lanes[0]
}

/// The LDS tree of [`tree_reduce`] over 32 work-items, for every token of a tile at once: slot
/// `l < stride` adds slot `l + stride`, token by token; the sums end in slot 0. Every slot is
/// added, the `+0.0` of a work-item without a block included (a fused multiply-add's partial
/// sum may be `-0.0`, which that addition turns to `+0.0` as on the GPU).
#[inline(always)]
fn tree_reduce_tokens<const T: usize, const R: usize>(lanes: &mut Lanes<T, R>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_tiles_transpose_and_pad() {
        let xs: Vec<f32> = (0..3 * 2).map(|v| v as f32).collect();
        let tiles: Vec<Slot<TOKENS>> = tile_tokens(&xs, 2, &|&v| v);
        assert_eq!(tiles.len(), 2);
        assert_eq!(tiles[0].0[..4], [0.0, 2.0, 4.0, 0.0]);
        assert_eq!(tiles[1].0[..4], [1.0, 3.0, 5.0, 0.0]);
    }

    /// `rows` weight rows of `cols` columns in `format`, from random bytes (any f16 scale: NaN,
    /// infinities and subnormals among them), against `n` random tokens.
    fn vector_paths_agree(format: Format, rows: usize, cols: usize, n: usize, seed: u32) {
        let mut state = seed.wrapping_mul(2_654_435_761) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        let row_bytes = cols / 32 * format.block_bytes;
        let bytes: Vec<u8> = (0..rows * row_bytes).map(|_| next().to_le_bytes()[1]).collect();
        // Mostly ordinary values, now and then any bit pattern (NaN, infinities, subnormals).
        let xs: Vec<f32> = (0..n * cols)
            .map(|_| {
                let v = next();
                if v.is_multiple_of(16) {
                    f32::from_bits(v.rotate_left(7))
                } else {
                    f32::from(u16::try_from(v % 2001).unwrap_or(0)) / 250.0 - 4.0
                }
            })
            .collect();
        let whole = n / TOKENS * TOKENS;
        let padded = whole + (n - whole).next_multiple_of(TAIL_TOKENS);
        let tiles = Tiles::new(&xs, whole, cols, |&v| v, format);
        let sums = |isa: Option<Isa>, bytes: &[u8]| {
            let mut out = vec![0.0f32; bytes.len() / row_bytes * padded];
            matmul_rows(isa, bytes, row_bytes, format, &tiles, cols, &mut Scratch::new(), &mut out);
            out
        };
        let same = |a: &[f32], b: &[f32]| {
            a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()))
        };
        let scalar = sums(None, &bytes);
        // Each row of a group is the row alone (`out[t][r]`).
        for (r, row) in bytes.chunks_exact(row_bytes).enumerate() {
            let alone = sums(None, row);
            let column: Vec<f32> = scalar.iter().skip(r).step_by(rows).copied().collect();
            assert!(same(&alone, &column), "row {r} of {rows}, cols {cols}, n {n}");
        }
        assert_eq!(scalar.len(), rows * padded);
        for isa in crate::cpu::simd::available_for_tests() {
            let fast = sums(Some(isa), &bytes);
            for (i, (f, s)) in fast.iter().zip(&scalar).enumerate() {
                let same = f.to_bits() == s.to_bits() || (f.is_nan() && s.is_nan());
                assert!(same, "{isa:?} cols {cols} n {n} row {} token {}: {f} vs {s}", i % rows, i / rows);
            }
        }
    }

    #[test]
    fn the_vector_paths_give_the_scalar_bits() {
        for (i, cols) in [32, 64, 96, 32 * 18, 32 * 33, 32 * 48, 32 * 70].into_iter().enumerate() {
            let seed = u32::try_from(i).unwrap_or(0);
            for (format, rows, n) in [(Q4_1, ROW_GROUP, 70), (Q8_0, ROW_GROUP, 33), (Q4_1, 3, 5), (Q8_0, 1, 40)] {
                vector_paths_agree(format, rows, cols, n, seed + u32::try_from(rows + n).unwrap_or(0));
            }
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
