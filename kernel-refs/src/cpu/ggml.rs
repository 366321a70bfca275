//! Every ggml block format (module `ggml_quants`): `matvec_<t>`, `matmul_<t>`, `get_row_<t>`,
//! `get_rows_<t>` for the formats that `quant` and `prefill` do not cover, over one table of
//! formats ([`BlockFormat`]) and one element order.
//!
//! # Formats
//! Block layouts as ggml's `ggml-common.h`, element values as ggml's `dequantize_row_*`
//! (`ggml-quants.c`), in `f32` in its operation order (e.g. Q4_K: `d1 = d * sc; m1 = dmin * m;
//! x = d1 * q - m1`): [`formats`] here, `kernels/hip/ggml_formats.h` on the GPU, the same
//! operations, each rounded on its own (`tests/formats_host.rs` compiles that header for the host
//! and compares every element's bits). F16 and BF16 are tabled as blocks of 32 values.
//!
//! # The contract of the products
//! A row of `cols` values (a multiple of the format's block values: 32, or 256 for the K
//! formats) is read in chunks of 32 consecutive values. `matvec_<t>`: work-group `r` (of exactly
//! 32 work-items) handles row `r`; work-item `t` accumulates from `0.0` over chunks `c = t, t +
//! 32, ...` ascending, within a chunk values `j = 0..32` ascending, `acc += w * x[32 c + j]`, `w`
//! the value as [`dequantize_chunk`] gives it, each operation rounded; the 32 partial sums are
//! added by the LDS tree (`stride = 16, ..., 1`). `matvec_q4_1` and `matvec_q8_0` take their
//! blocks (their chunks) in this order too, but add each block by chains of fused multiply-adds
//! on the quants, then the scales ([`super::matvec_q4_1`]), not value by value. `matmul_<t>` row `t` is bit for bit `matvec_<t>` on
//! `x[t]` ([`super::prefill`]'s contract, by the same computation).
//!
//! The products run rows in the lanes of vector registers: eight rows whose chunks are unpacked
//! value by value, or, on x86-64 with AVX-512, for Q4_0, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K, sixteen
//! rows unpacked lane by lane from a layout of the matrix kept with the weights (`x86`); each
//! row's bits are those of its work-group either way, as the tests hold them.
//!
//! Launch preconditions (a [`KernelError`] otherwise): for the products, work-group size 32, no
//! partial work-group with a row, `cols` a multiple of the format's block values when any row is
//! handled (and for `matmul_<t>` `n <= 2^32 - 8`); for the gathers, `cols` a multiple of the
//! block values when any element is handled. A gather's token id `>= rows` writes nothing.

use rayon::prelude::*;

use super::prefill::bytes_at;
use super::quant::stream_blocks;
use super::simd::{Isa, compiled_for};
use super::{
    Grid, KernelError, READ_CHUNK_BYTES, READ_CHUNK_ELEMENTS, element_address, load, load_f32_vec, store, store_pieces,
    tree_reduce, widen, widen_usize,
};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature::{self, Signature};

mod formats;
use formats::Format;
#[cfg(target_arch = "x86_64")]
mod x86;

/// A ggml block format.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockFormat {
    /// `block_q4_0`: 18 bytes, 32 values.
    Q4_0,
    /// `block_q4_1`: 20 bytes, 32 values.
    Q4_1,
    /// `block_q5_0`: 22 bytes, 32 values.
    Q5_0,
    /// `block_q5_1`: 24 bytes, 32 values.
    Q5_1,
    /// `block_q8_0`: 34 bytes, 32 values.
    Q8_0,
    /// `block_q2_K`: 84 bytes, 256 values.
    Q2K,
    /// `block_q3_K`: 110 bytes, 256 values.
    Q3K,
    /// `block_q4_K`: 144 bytes, 256 values.
    Q4K,
    /// `block_q5_K`: 176 bytes, 256 values.
    Q5K,
    /// `block_q6_K`: 210 bytes, 256 values.
    Q6K,
    /// IEEE binary16, tabled as blocks of 32 values (64 bytes).
    F16,
    /// bfloat16, tabled as blocks of 32 values (64 bytes).
    BF16,
}

/// `$body` with `$f` the [`Format`] of `$format`.
macro_rules! with_format {
    ($format:expr, $f:ident => $body:expr) => {
        match $format {
            BlockFormat::Q4_0 => {
                type $f = formats::Q4_0;
                $body
            }
            BlockFormat::Q4_1 => {
                type $f = formats::Q4_1;
                $body
            }
            BlockFormat::Q5_0 => {
                type $f = formats::Q5_0;
                $body
            }
            BlockFormat::Q5_1 => {
                type $f = formats::Q5_1;
                $body
            }
            BlockFormat::Q8_0 => {
                type $f = formats::Q8_0;
                $body
            }
            BlockFormat::Q2K => {
                type $f = formats::Q2K;
                $body
            }
            BlockFormat::Q3K => {
                type $f = formats::Q3K;
                $body
            }
            BlockFormat::Q4K => {
                type $f = formats::Q4K;
                $body
            }
            BlockFormat::Q5K => {
                type $f = formats::Q5K;
                $body
            }
            BlockFormat::Q6K => {
                type $f = formats::Q6K;
                $body
            }
            BlockFormat::F16 => {
                type $f = formats::F16;
                $body
            }
            BlockFormat::BF16 => {
                type $f = formats::BF16;
                $body
            }
        }
    };
}

impl BlockFormat {
    /// Every format.
    pub const ALL: [BlockFormat; 12] = [
        Self::Q4_0,
        Self::Q4_1,
        Self::Q5_0,
        Self::Q5_1,
        Self::Q8_0,
        Self::Q2K,
        Self::Q3K,
        Self::Q4K,
        Self::Q5K,
        Self::Q6K,
        Self::F16,
        Self::BF16,
    ];

    /// ggml's name of the type (`"Q4_K"`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Q4_0 => "Q4_0",
            Self::Q4_1 => "Q4_1",
            Self::Q5_0 => "Q5_0",
            Self::Q5_1 => "Q5_1",
            Self::Q8_0 => "Q8_0",
            Self::Q2K => "Q2_K",
            Self::Q3K => "Q3_K",
            Self::Q4K => "Q4_K",
            Self::Q5K => "Q5_K",
            Self::Q6K => "Q6_K",
            Self::F16 => "F16",
            Self::BF16 => "BF16",
        }
    }

    /// ggml's id of the type (`enum ggml_type`).
    #[must_use]
    pub const fn ggml_id(self) -> u32 {
        match self {
            Self::F16 => 1,
            Self::Q4_0 => 2,
            Self::Q4_1 => 3,
            Self::Q5_0 => 6,
            Self::Q5_1 => 7,
            Self::Q8_0 => 8,
            Self::Q2K => 10,
            Self::Q3K => 11,
            Self::Q4K => 12,
            Self::Q5K => 13,
            Self::Q6K => 14,
            Self::BF16 => 30,
        }
    }

    /// Bytes of a block.
    #[must_use]
    pub fn block_bytes(self) -> usize {
        with_format!(self, F => F::BYTES)
    }

    /// Values of a block: 32, or 256 for the K formats.
    #[must_use]
    pub fn block_values(self) -> usize {
        with_format!(self, F => F::VALUES)
    }

    /// Bytes of a row of `cols` values (`cols` a multiple of [`BlockFormat::block_values`]).
    #[must_use]
    pub fn row_bytes(self, cols: usize) -> usize {
        cols / self.block_values() * self.block_bytes()
    }
}

/// Why [`dequantize_chunk`] or [`dequantize_row`] refused its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DequantError {
    /// A block is not exactly the format's block size.
    #[error("{} block of {len} bytes; a block is {expected}", format.name())]
    BlockLength {
        /// The format.
        format: BlockFormat,
        /// Bytes given.
        len: usize,
        /// Bytes of a block.
        expected: usize,
    },
    /// The chunk index is past the block's last chunk.
    #[error("chunk {chunk} of a {} block, which has {chunks}", format.name())]
    NoSuchChunk {
        /// The format.
        format: BlockFormat,
        /// The chunk index.
        chunk: usize,
        /// Chunks of 32 values in a block.
        chunks: usize,
    },
    /// A row is not a whole number of blocks.
    #[error("{} row of {len} bytes is not a whole number of {block_bytes}-byte blocks", format.name())]
    RowLength {
        /// The format.
        format: BlockFormat,
        /// Bytes given.
        len: usize,
        /// Bytes of a block.
        block_bytes: usize,
    },
    /// The output does not have one slot per value of the row.
    #[error("output of {len} values for a {} row of {expected}", format.name())]
    OutputLength {
        /// The format.
        format: BlockFormat,
        /// Slots given.
        len: usize,
        /// Values of the row.
        expected: usize,
    },
}

/// The 32 values of chunk `chunk` of a block of `format` (values `32 chunk ..` of the block), as
/// the kernels compute them (`kernels/hip/ggml_formats.h`).
///
/// # Errors
/// [`DequantError`] when `block` is not one block or `chunk` is past its last chunk.
pub fn dequantize_chunk(
    format: BlockFormat,
    block: &[u8],
    chunk: usize,
    out: &mut [f32; 32],
) -> Result<(), DequantError> {
    let (expected, chunks) = (format.block_bytes(), format.block_values() / 32);
    if block.len() != expected {
        return Err(DequantError::BlockLength { format, len: block.len(), expected });
    }
    if chunk >= chunks {
        return Err(DequantError::NoSuchChunk { format, chunk, chunks });
    }
    with_format!(format, F => F::chunk(block, chunk, out));
    Ok(())
}

/// Every value of a row of whole blocks of `format`, in order, as the kernels compute them: the
/// row's dequantisation, for comparison with other readers of the format.
///
/// # Errors
/// [`DequantError`] when `row` is not whole blocks or `out` has not one slot per value.
pub fn dequantize_row(format: BlockFormat, row: &[u8], out: &mut [f32]) -> Result<(), DequantError> {
    let (block_bytes, values) = (format.block_bytes(), format.block_values());
    if !row.len().is_multiple_of(block_bytes) {
        return Err(DequantError::RowLength { format, len: row.len(), block_bytes });
    }
    let expected = row.len() / block_bytes * values;
    if out.len() != expected {
        return Err(DequantError::OutputLength { format, len: out.len(), expected });
    }
    dequantize_rows_unchecked(format, row, out);
    Ok(())
}

/// [`dequantize_row`] for callers that pass whole blocks and as many slots (extra blocks or slots
/// are left alone). Inlined, so that it is compiled for the instruction set of its caller.
#[inline(always)]
pub(crate) fn dequantize_rows_unchecked(format: BlockFormat, rows: &[u8], out: &mut [f32]) {
    with_format!(format, F => blocks::<F>(rows, out));
}

#[inline(always)]
fn blocks<F: Format>(rows: &[u8], out: &mut [f32]) {
    for (block, values) in rows.chunks_exact(F::BYTES).zip(out.chunks_exact_mut(F::VALUES)) {
        for (c, chunk) in values.as_chunks_mut::<32>().0.iter_mut().enumerate() {
            F::chunk(block, c, chunk);
        }
    }
}

/// Work-items of a product's work-group, as a host count.
const LANES: usize = 32;
const _: () = assert!(signature::matvec_q::BLOCK == 32);
/// Rows handled by one parallel task.
const TASK_ROWS: usize = 16;
/// Matrices with fewer chunks run on the calling thread.
const PARALLEL_CHUNKS_MIN: usize = 4096;

/// One row as its work-group computes it: lane `c % 32` adds chunk `c`, then the LDS tree.
#[inline(always)]
fn row_sum<F: Format>(row: &[u8], xs: &[f32]) -> f32 {
    let mut partial = [0.0f32; LANES];
    let mut w = [0.0f32; 32];
    let mut x_chunks = xs.as_chunks::<32>().0.iter();
    let mut c = 0usize;
    for block in row.chunks_exact(F::BYTES) {
        for k in 0..F::CHUNKS {
            let Some(x) = x_chunks.next() else { break };
            F::chunk(block, k, &mut w);
            let mut acc = partial[c % LANES];
            for (w, x) in w.iter().zip(x) {
                acc += w * x;
            }
            partial[c % LANES] = acc;
            c += 1;
        }
    }
    tree_reduce(&mut partial)
}

/// [`row_sum`] of `format`.
#[cfg(test)]
fn row_sum_of(format: BlockFormat, row: &[u8], xs: &[f32]) -> f32 {
    with_format!(format, F => row_sum::<F>(row, xs))
}

/// Rows [`group_sums`] computes together: one `f32` lane of a vector register each.
const GROUP_ROWS: usize = 8;
const _: () = assert!(TASK_ROWS.is_multiple_of(GROUP_ROWS));

/// [`row_sum`] of [`GROUP_ROWS`] rows at once (`rows` holds them, `row_bytes` each): every row's
/// work-items add the same chunks in the same order, so the rows' sums are independent lanes of
/// one vector operation per value; each row's bits are [`row_sum`]'s.
#[inline(always)]
fn group_sums<F: Format>(rows: &[u8], row_bytes: usize, xs: &[f32], out: &mut [f32]) {
    let mut partial = [[0.0f32; GROUP_ROWS]; LANES];
    let mut w = [[0.0f32; 32]; GROUP_ROWS];
    let mut wt = [[0.0f32; GROUP_ROWS]; 32];
    for (c, x) in xs.as_chunks::<32>().0.iter().enumerate() {
        let at = c / F::CHUNKS * F::BYTES;
        for (r, w) in w.iter_mut().enumerate() {
            F::chunk(&rows[r * row_bytes + at..][..F::BYTES], c % F::CHUNKS, w);
        }
        for (j, wt) in wt.iter_mut().enumerate() {
            for (r, v) in wt.iter_mut().enumerate() {
                *v = w[r][j];
            }
        }
        let mut acc = partial[c % LANES];
        for (wt, &x) in wt.iter().zip(x) {
            for (a, w) in acc.iter_mut().zip(wt) {
                *a += w * x;
            }
        }
        partial[c % LANES] = acc;
    }
    for (r, y) in out.iter_mut().enumerate() {
        let mut lanes: [f32; LANES] = std::array::from_fn(|l| partial[l][r]);
        *y = tree_reduce(&mut lanes);
    }
}

/// `out[r]` = row `r` of `w` (whole rows of `xs.len()` values) times `xs`, on the machine's cores
/// when the matrix is large. `packed` is `w` in the layout of the 16-row vector path
/// ([`vector_form`]), where there is one: its whole groups are computed from it.
fn matvec_rows(format: BlockFormat, w: &[u8], packed: Option<&[u8]>, xs: &[f32], out: &mut [f32]) {
    let row_bytes = format.row_bytes(xs.len());
    let isa = Isa::widest();
    let task = |(index, ys): (usize, &mut [f32])| {
        let rows = &w[index * TASK_ROWS * row_bytes..][..ys.len() * row_bytes];
        #[cfg(target_arch = "x86_64")]
        if let (Some(packed), Ok(ys)) = (packed, <&mut [f32; x86::ROWS]>::try_from(&mut *ys)) {
            // The group and every byte after it: the path reads the group's and prefetches ahead.
            x86::group(format, &packed[index * TASK_ROWS * row_bytes..], xs, ys);
            return;
        }
        compiled_for(
            isa,
            #[inline(always)]
            || {
                let done = ys.len() / GROUP_ROWS * GROUP_ROWS;
                with_format!(format, F => {
                    let mut groups = ys.chunks_exact_mut(GROUP_ROWS);
                    for (ys, rows) in groups.by_ref().zip(rows.chunks_exact(GROUP_ROWS * row_bytes)) {
                        group_sums::<F>(rows, row_bytes, xs, ys);
                    }
                    let tail = rows[done * row_bytes..].chunks_exact(row_bytes);
                    for (y, row) in groups.into_remainder().iter_mut().zip(tail) {
                        *y = row_sum::<F>(row, xs);
                    }
                });
            },
        );
    };
    if out.len() * (xs.len() / 32) >= PARALLEL_CHUNKS_MIN {
        out.par_chunks_mut(TASK_ROWS).enumerate().for_each(task);
    } else {
        out.chunks_mut(TASK_ROWS).enumerate().for_each(task);
    }
}

/// The `rows` x `row_bytes` matrix of `format` at `w` in the layout of the 16-row vector path,
/// kept with the weights where the address space keeps derived forms
/// ([`DeviceMemory::derived`]), else laid out for this dispatch from `lent` (the matrix's
/// bytes); `None` where this machine or the format has no such path, or the matrix no whole
/// group.
fn vector_form(
    memory: &dyn DeviceMemory,
    format: BlockFormat,
    (w, lent): (u64, &[u8]),
    rows: usize,
    row_bytes: usize,
) -> Option<std::sync::Arc<[u8]>> {
    #[cfg(target_arch = "x86_64")]
    if x86::covers(format) && x86::available() && rows >= x86::ROWS {
        let block_bytes = format.block_bytes();
        let derive = |weights: &[u8]| x86::pack(weights, row_bytes, block_bytes);
        return memory
            .derived(w, lent.len(), x86::key(format, row_bytes), &derive)
            .or_else(|| Some(derive(lent).into()));
    }
    let _ = (memory, format, w, lent, rows, row_bytes);
    None
}

/// `matvec_<t>(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols)` for
/// `format` (see the module's contract).
fn matvec(
    launch: &Launch<'_>,
    memory: &mut dyn DeviceMemory,
    sig: &'static Signature,
    format: BlockFormat,
) -> Result<(), KernelError> {
    use signature::matvec_q::{BLOCK, COLS, ROWS, W, X, Y};
    let grid = Grid::new(launch, sig)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if workgroup_size_x != BLOCK {
        return Err(KernelError::WorkgroupSizeRequired { workgroup_size_x, required: BLOCK });
    }
    let k = launch.kernarg;
    let (y, w, x) = (Y.read_ptr(k)?, W.read_ptr(k)?, X.read_ptr(k)?);
    let (rows, cols) = (ROWS.read_u32(k)?, COLS.read_u32(k)?);
    let groups = grid.workgroups();
    if !grid.size_x.is_multiple_of(grid.workgroup_x) && groups - 1 < rows {
        return Err(KernelError::PartialWorkgroup { grid_size_x: grid.size_x, workgroup_size_x });
    }
    let active_rows = rows.min(groups);
    if active_rows == 0 {
        return Ok(());
    }
    let values = block_values_u32(format);
    if !cols.is_multiple_of(values) {
        return Err(KernelError::ColsNotBlockMultiple { cols, block: values });
    }
    if cols == 0 {
        // Every work-item's sum is 0.0, and so is the tree's.
        let zeros = vec![0u32; READ_CHUNK_ELEMENTS.min(widen(active_rows))];
        let mut first = 0u32;
        while first < active_rows {
            let len = widen(active_rows - first).min(zeros.len());
            store(memory, &Y, y, first.into(), &zeros[..len])?;
            first += u32::try_from(len).unwrap_or(u32::MAX);
        }
        return Ok(());
    }
    let xs = load_f32_vec(memory, &X, x, 0, cols.into())?;
    // x (4 * cols bytes) was read, so a row (at most 2 * cols bytes) is bounded by mapped memory.
    let row_bytes = format.row_bytes(widen(cols));
    let lent = widen(active_rows).checked_mul(row_bytes).and_then(|len| memory.view(w, len));
    if let Some(all) = lent {
        let mut ys = vec![0.0f32; widen(active_rows)];
        let packed = vector_form(&*memory, format, (w, all), widen(active_rows), row_bytes);
        matvec_rows(format, all, packed.as_deref(), &xs, &mut ys);
        let bits: Vec<u32> = ys.iter().map(|v| v.to_bits()).collect();
        // Work-group r stores y[r]: on a fault, the rows before it are stored.
        return store_pieces(memory, &Y, (y, 0), &bits, (0..bits.len()).map(|r| r..r + 1));
    }
    let rows_per_batch = u32::try_from(READ_CHUNK_BYTES / row_bytes).unwrap_or(u32::MAX).max(1);
    let (mut buffer, mut ys) = (Vec::new(), Vec::new());
    let mut first = 0u32;
    while first < active_rows {
        let count = (active_rows - first).min(rows_per_batch);
        let offset = u64::from(first).checked_mul(widen_usize(row_bytes)).ok_or(KernelError::ByteAddressOverflow {
            arg: W.name,
            base: w,
            offset: u64::MAX,
        })?;
        let bytes = bytes_at(&*memory, &W, w, offset, widen(count) * row_bytes, &mut buffer)?;
        ys.clear();
        ys.resize(widen(count), 0.0f32);
        matvec_rows(format, bytes, None, &xs, &mut ys);
        let bits: Vec<u32> = ys.iter().map(|v| v.to_bits()).collect();
        store(memory, &Y, y, first.into(), &bits)?;
        first += count;
    }
    Ok(())
}

/// The format's block values as the kernels' `u32`.
fn block_values_u32(format: BlockFormat) -> u32 {
    u32::try_from(format.block_values()).unwrap_or(u32::MAX)
}

/// The values `0..count` of the table row at byte `row_offset`, streamed in whole blocks of at
/// most [`READ_CHUNK_BYTES`] and stored from element `out_first` of `out`, one store per chunk.
#[allow(clippy::too_many_arguments)]
fn copy_row(
    memory: &mut dyn DeviceMemory,
    (table_arg, out_arg): (&kernels::signature::ArgDecl, &kernels::signature::ArgDecl),
    (table, out): (u64, u64),
    format: BlockFormat,
    row_offset: u64,
    count: u64,
    out_first: u64,
    values: &mut Vec<f32>,
) -> Result<(), KernelError> {
    let (block_bytes, block_values) = (format.block_bytes(), widen_usize(format.block_values()));
    let blocks = count.div_ceil(block_values);
    let mut done = 0u64;
    let mut bits = Vec::new();
    stream_blocks(memory, table_arg, table, row_offset, blocks, block_bytes, |memory, chunk| {
        let n = chunk.len() / block_bytes * format.block_values();
        values.clear();
        values.resize(n, 0.0);
        dequantize_rows_unchecked(format, chunk, values);
        let keep = usize::try_from(count - done).map_or(n, |left| left.min(n));
        bits.clear();
        bits.extend(values[..keep].iter().map(|v| v.to_bits()));
        store(memory, out_arg, out, out_first + done, &bits)?;
        done += widen_usize(keep);
        Ok(())
    })
}

/// `get_row_<t>(float* out, const unsigned char* table, const u32* token, u32 cols, u32 rows)`:
/// with `tok = token[0]`, `out[c]` = value `c` of table row `tok` for `c < min(cols,
/// grid_size_x)`, one work-item per element; a `tok >= rows` writes nothing.
fn get_row(
    launch: &Launch<'_>,
    memory: &mut dyn DeviceMemory,
    sig: &'static Signature,
    format: BlockFormat,
) -> Result<(), KernelError> {
    use signature::get_row_q8_0::{COLS, OUT, ROWS, TABLE, TOKEN};
    let grid = Grid::new(launch, sig)?;
    let k = launch.kernarg;
    let (out, table, token) = (OUT.read_ptr(k)?, TABLE.read_ptr(k)?, TOKEN.read_ptr(k)?);
    let (cols, rows) = (COLS.read_u32(k)?, ROWS.read_u32(k)?);
    let active = cols.min(grid.size_x);
    if active == 0 {
        return Ok(());
    }
    let values = block_values_u32(format);
    if !cols.is_multiple_of(values) {
        return Err(KernelError::ColsNotBlockMultiple { cols, block: values });
    }
    let token_address = element_address(&TOKEN, token, 0)?;
    let tok = memory.read_u32(token_address).map_err(|fault| KernelError::Memory { arg: TOKEN.name, fault })?;
    if tok >= rows {
        return Ok(());
    }
    let row_offset = u64::from(tok)
        .checked_mul(widen_usize(format.row_bytes(widen(cols))))
        .ok_or(KernelError::ByteAddressOverflow { arg: TABLE.name, base: table, offset: u64::MAX })?;
    let mut scratch = Vec::new();
    copy_row(memory, (&TABLE, &OUT), (table, out), format, row_offset, active.into(), 0, &mut scratch)
}

/// `get_rows_<t>(float* out, const unsigned char* table, const u32* tokens, u32 cols, u32 rows,
/// u32 n)`: `out[t * cols + c]` = value `c` of table row `tokens[t]` for the elements `t * cols +
/// c < min(n * cols, grid_size_x)`, one work-item per element; row `t` is bit for bit
/// `get_row_<t>` with token `tokens[t]`, and an id `>= rows` writes nothing for that `t`.
fn get_rows(
    launch: &Launch<'_>,
    memory: &mut dyn DeviceMemory,
    sig: &'static Signature,
    format: BlockFormat,
) -> Result<(), KernelError> {
    use signature::get_rows_q8_0::{COLS, N, OUT, ROWS, TABLE, TOKENS};
    let grid = Grid::new(launch, sig)?;
    let k = launch.kernarg;
    let (out, table, tokens) = (OUT.read_ptr(k)?, TABLE.read_ptr(k)?, TOKENS.read_ptr(k)?);
    let (cols, rows, n) = (COLS.read_u32(k)?, ROWS.read_u32(k)?, N.read_u32(k)?);
    let active = (u64::from(n) * u64::from(cols)).min(grid.size_x.into());
    if active == 0 {
        return Ok(());
    }
    let values = block_values_u32(format);
    if !cols.is_multiple_of(values) {
        return Err(KernelError::ColsNotBlockMultiple { cols, block: values });
    }
    let row_bytes = widen_usize(format.row_bytes(widen(cols)));
    let touched = active.div_ceil(cols.into());
    let (mut ids, mut scratch) = (Vec::new(), Vec::new());
    let mut first = 0u64;
    while first < touched {
        let count = (touched - first).min(widen_usize(READ_CHUNK_ELEMENTS));
        ids.resize(usize::try_from(count).unwrap_or(READ_CHUNK_ELEMENTS), 0);
        load(memory, &TOKENS, tokens, first, &mut ids)?;
        for (t, &tok) in (first..).zip(&ids) {
            if tok >= rows {
                continue;
            }
            // t < touched, so t * cols < active.
            let elements = (active - t * u64::from(cols)).min(cols.into());
            let row_offset = u64::from(tok).checked_mul(row_bytes).ok_or(KernelError::ByteAddressOverflow {
                arg: TABLE.name,
                base: table,
                offset: u64::MAX,
            })?;
            let at = t * u64::from(cols);
            copy_row(memory, (&TABLE, &OUT), (table, out), format, row_offset, elements, at, &mut scratch)?;
        }
        first += count;
    }
    Ok(())
}

/// The public references, one per kernel: `$name` runs `$run` for format `$format` with the
/// signature `$sig`.
macro_rules! references {
    ($($name:ident = $run:ident($format:ident, $sig:ident), $what:literal;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: ", $what, " for ", stringify!($format), " (see the module's contract).")]
        ///
        /// # Errors
        /// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a
        /// fault on an argument.
        pub fn $name(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
            $run(launch, memory, &signature::$sig, BlockFormat::$format)
        }
    )*};
}

/// `matmul_<t>` through the batched product of [`super::prefill`].
fn matmul(
    launch: &Launch<'_>,
    memory: &mut dyn DeviceMemory,
    sig: &'static Signature,
    format: BlockFormat,
) -> Result<(), KernelError> {
    super::prefill::matmul_ggml(launch, memory, sig, format)
}

references! {
    matvec_q4_0 = matvec(Q4_0, MATVEC_Q4_0), "the matrix-vector product";
    matmul_q4_0 = matmul(Q4_0, MATMUL_Q4_0), "the batched matrix product";
    get_row_q4_0 = get_row(Q4_0, GET_ROW_Q4_0), "the embedding row gather";
    get_rows_q4_0 = get_rows(Q4_0, GET_ROWS_Q4_0), "the batched embedding row gather";
    get_row_q4_1 = get_row(Q4_1, GET_ROW_Q4_1), "the embedding row gather";
    get_rows_q4_1 = get_rows(Q4_1, GET_ROWS_Q4_1), "the batched embedding row gather";
    matvec_q5_0 = matvec(Q5_0, MATVEC_Q5_0), "the matrix-vector product";
    matmul_q5_0 = matmul(Q5_0, MATMUL_Q5_0), "the batched matrix product";
    get_row_q5_0 = get_row(Q5_0, GET_ROW_Q5_0), "the embedding row gather";
    get_rows_q5_0 = get_rows(Q5_0, GET_ROWS_Q5_0), "the batched embedding row gather";
    matvec_q5_1 = matvec(Q5_1, MATVEC_Q5_1), "the matrix-vector product";
    matmul_q5_1 = matmul(Q5_1, MATMUL_Q5_1), "the batched matrix product";
    get_row_q5_1 = get_row(Q5_1, GET_ROW_Q5_1), "the embedding row gather";
    get_rows_q5_1 = get_rows(Q5_1, GET_ROWS_Q5_1), "the batched embedding row gather";
    matvec_q2_k = matvec(Q2K, MATVEC_Q2_K), "the matrix-vector product";
    matmul_q2_k = matmul(Q2K, MATMUL_Q2_K), "the batched matrix product";
    get_row_q2_k = get_row(Q2K, GET_ROW_Q2_K), "the embedding row gather";
    get_rows_q2_k = get_rows(Q2K, GET_ROWS_Q2_K), "the batched embedding row gather";
    matvec_q3_k = matvec(Q3K, MATVEC_Q3_K), "the matrix-vector product";
    matmul_q3_k = matmul(Q3K, MATMUL_Q3_K), "the batched matrix product";
    get_row_q3_k = get_row(Q3K, GET_ROW_Q3_K), "the embedding row gather";
    get_rows_q3_k = get_rows(Q3K, GET_ROWS_Q3_K), "the batched embedding row gather";
    matvec_q4_k = matvec(Q4K, MATVEC_Q4_K), "the matrix-vector product";
    matmul_q4_k = matmul(Q4K, MATMUL_Q4_K), "the batched matrix product";
    get_row_q4_k = get_row(Q4K, GET_ROW_Q4_K), "the embedding row gather";
    get_rows_q4_k = get_rows(Q4K, GET_ROWS_Q4_K), "the batched embedding row gather";
    matvec_q5_k = matvec(Q5K, MATVEC_Q5_K), "the matrix-vector product";
    matmul_q5_k = matmul(Q5K, MATMUL_Q5_K), "the batched matrix product";
    get_row_q5_k = get_row(Q5K, GET_ROW_Q5_K), "the embedding row gather";
    get_rows_q5_k = get_rows(Q5K, GET_ROWS_Q5_K), "the batched embedding row gather";
    matvec_q6_k = matvec(Q6K, MATVEC_Q6_K), "the matrix-vector product";
    matmul_q6_k = matmul(Q6K, MATMUL_Q6_K), "the batched matrix product";
    get_row_q6_k = get_row(Q6K, GET_ROW_Q6_K), "the embedding row gather";
    get_rows_q6_k = get_rows(Q6K, GET_ROWS_Q6_K), "the batched embedding row gather";
    matvec_f16 = matvec(F16, MATVEC_F16), "the matrix-vector product";
    matmul_f16 = matmul(F16, MATMUL_F16), "the batched matrix product";
    get_row_f16 = get_row(F16, GET_ROW_F16), "the embedding row gather";
    get_rows_f16 = get_rows(F16, GET_ROWS_F16), "the batched embedding row gather";
    matvec_bf16 = matvec(BF16, MATVEC_BF16), "the matrix-vector product";
    matmul_bf16 = matmul(BF16, MATMUL_BF16), "the batched matrix product";
    get_row_bf16 = get_row(BF16, GET_ROW_BF16), "the embedding row gather";
    get_rows_bf16 = get_rows(BF16, GET_ROWS_BF16), "the batched embedding row gather";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_matches_ggml_common() {
        let sizes: Vec<(&str, usize, usize)> =
            BlockFormat::ALL.iter().map(|f| (f.name(), f.block_bytes(), f.block_values())).collect();
        assert_eq!(
            sizes,
            [
                ("Q4_0", 18, 32),
                ("Q4_1", 20, 32),
                ("Q5_0", 22, 32),
                ("Q5_1", 24, 32),
                ("Q8_0", 34, 32),
                ("Q2_K", 84, 256),
                ("Q3_K", 110, 256),
                ("Q4_K", 144, 256),
                ("Q5_K", 176, 256),
                ("Q6_K", 210, 256),
                ("F16", 64, 32),
                ("BF16", 64, 32),
            ]
        );
    }

    #[test]
    fn bad_lengths_are_typed_errors() {
        let mut out = [0.0f32; 32];
        assert_eq!(
            dequantize_chunk(BlockFormat::Q4K, &[0; 143], 0, &mut out),
            Err(DequantError::BlockLength { format: BlockFormat::Q4K, len: 143, expected: 144 })
        );
        assert_eq!(
            dequantize_chunk(BlockFormat::Q4_0, &[0; 18], 1, &mut out),
            Err(DequantError::NoSuchChunk { format: BlockFormat::Q4_0, chunk: 1, chunks: 1 })
        );
        let mut row = vec![0.0f32; 256];
        assert_eq!(
            dequantize_row(BlockFormat::Q6K, &[0; 211], &mut row),
            Err(DequantError::RowLength { format: BlockFormat::Q6K, len: 211, block_bytes: 210 })
        );
        assert_eq!(
            dequantize_row(BlockFormat::Q6K, &[0; 420], &mut row),
            Err(DequantError::OutputLength { format: BlockFormat::Q6K, len: 256, expected: 512 })
        );
        assert_eq!(dequantize_row(BlockFormat::Q6K, &[0; 210], &mut row), Ok(()));
    }
}
