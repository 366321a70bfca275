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
//! and share the work that is exact to share: a block's quants as `f32` and its scales (or, for
//! the formats of `ggml_quants`, a weight's dequantised value) are the same for every token, so
//! they are computed once per dispatch and row; a Q4_1 block's `sx` depends on the token alone,
//! so it is computed once per dispatch and token.
//!
//! Against exact arithmetic, every row carries the single-token kernel's error: a sum of `k`
//! rounded `f32` terms is within about `k * 2^-24` of the exact sum, relative to the sum of the
//! terms' magnitudes (`tests/prefill.rs` states the bound per kernel).
//!
//! # Speed
//! The soft device runs prefill through these references, so they are written to be fast without
//! changing a bit. The matrix products keep one `[f32; 32]` of partial sums per work-item and
//! multiply a quant (or dequantised weight) into 32 tokens at once: the tokens' activations are
//! transposed once per dispatch into tiles (the tokens after the last whole tile go in tiles of
//! 8), so the update is a loop of independent vector chains. On AVX-512 a group of eight weight
//! rows goes through [`matmul::x86::tile_sums_group`] or, for Q4_1 and Q8_0,
//! `tile_sums_group_fused` (intrinsics: sixteen chains in registers, each broadcast weight the
//! memory operand of its multiply or fused multiply-add); elsewhere, and for the tail tiles, the same operations
//! are plain Rust compiled for the machine's widest instruction set. Attention computes four
//! blocks of 16 positions' dot products together from a transposed key cache (independent sums,
//! so the loop is not bound by one chain's latency) and keeps 64 dimensions' value sums in
//! registers. Weight rows and (row, head) work-groups are spread over the cores with `rayon`
//! when a dispatch is large; results are stored afterwards from the calling thread, in one
//! access where the work-groups' stores are contiguous (piece by piece, in their order, only
//! when that access faults).

use rayon::prelude::*;

use super::simd::Isa;
use super::{
    Grid, KernelError, READ_CHUNK_BYTES, READ_CHUNK_ELEMENTS, f16_to_f32, f32s_of, load, load_bytes, load_f32_vec,
    overlaps, store, store_pieces, widen, widen_usize,
};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature::{self, ArgDecl, Signature};

mod attention;
pub use attention::attention_rows;
pub(crate) use attention::{BatchRows, single_query, single_query_transposed, transpose_rows};
mod matmul;
pub(super) use matmul::matmul_ggml;
pub use matmul::{matmul_q4_1, matmul_q8_0};

/// Elements per quantisation block.
const QK: u32 = super::QK;

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
pub(super) fn bytes_at<'a>(
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
    if active.is_multiple_of(row_pairs)
        && let Some(rotated) = lent_rope_rows(memory, (x, table), pos0, active / row_pairs, (row_elements, half))
    {
        // The row loop's stores, at once.
        let rows =
            (0..rotated.len() / widen(row_elements)).map(|t| t * widen(row_elements)..(t + 1) * widen(row_elements));
        return store_pieces(memory, &X, (x, 0), &rotated, rows);
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

/// Every row of a `rope_rows` launch of whole rows at once, from `x` and the table rows of
/// positions `pos0..pos0 + rows` lent in place, when that gives what the work-items compute:
/// the table does not overlap `x` (each pair's result then depends only on its own loads) and
/// the positions do not wrap. `None` otherwise: the row loop runs (and reports any fault).
fn lent_rope_rows(
    memory: &dyn DeviceMemory,
    (x, table): (u64, u64),
    pos0: u32,
    rows: u64,
    (row_elements, half): (u32, u64),
) -> Option<Vec<u32>> {
    let x_bytes = rows.checked_mul(4 * u64::from(row_elements))?;
    let end = u64::from(pos0).checked_add(rows).filter(|&end| end <= 1 << 32)?;
    let (table_first, table_bytes) = (8 * u64::from(pos0) * half, 8 * (end - u64::from(pos0)) * half);
    let table_at = table.checked_add(table_first)?;
    if overlaps((x, x_bytes), (table_at, table_bytes)) {
        return None;
    }
    let xs = f32s_of(memory.view(x, usize::try_from(x_bytes).ok()?)?);
    let cs = f32s_of(memory.view(table_at, usize::try_from(table_bytes).ok()?)?);
    let (row_len, table_row) = (widen(row_elements), narrow(2 * half));
    let mut rotated = Vec::with_capacity(xs.len());
    for (xs, cs) in xs.chunks_exact(row_len.max(1)).zip(cs.chunks_exact(table_row.max(1))) {
        rotated.extend(rotate_pairs(xs, cs, narrow(half)));
    }
    Some(rotated)
}

/// `rope`'s rotation of the pairs of `xs` (pair `p` with `(cos, sin)` pair `p % half` of `cs`).
fn rotate_pairs(xs: &[f32], cs: &[f32], half: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(xs.len());
    // Head by head: pair `i` of a head takes `(cos, sin)` pair `i`.
    for head in xs.chunks(2 * half.max(1)) {
        for (pair, cs) in head.chunks_exact(2).zip(cs.chunks_exact(2)) {
            let (c, s, x0, x1) = (cs[0], cs[1], pair[0], pair[1]);
            out.push((x0 * c - x1 * s).to_bits());
            out.push((x0 * s + x1 * c).to_bits());
        }
    }
    out
}
