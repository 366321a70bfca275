//! ggml-quantised weights (module `quant`): `matvec_q4_1`, `matvec_q8_0`, `get_row_q8_0`.
//!
//! Block formats as ggml's `block_q4_1` and `block_q8_0` (`ggml-common.h`), little-endian:
//! - Q4_1, 20 bytes: `f16 d, f16 m, u8 qs[16]`; element `j < 16` is `(qs[j] & 15) * d + m`,
//!   element `j + 16` is `(qs[j] >> 4) * d + m`.
//! - Q8_0, 34 bytes: `f16 d, i8 qs[32]`; element `j` is `qs[j] * d`.
//!
//! A matrix of `rows` rows and `cols` columns is `rows` rows of `cols / 32` blocks, row after row.

use super::{
    Grid, KernelError, READ_CHUNK_BYTES, element_address, load_bytes, load_f32_vec, store, widen, widen_usize,
};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature::{self, ArgDecl, Signature};

mod rows;

/// Elements per quantisation block (`QK` in `kernels/hip/quant.hip`, ggml's `QK4_1` and `QK8_0`).
pub const QK: u32 = 32;
/// Bytes of a Q4_1 block.
pub const Q4_1_BLOCK_BYTES: usize = 20;
/// Bytes of a Q8_0 block.
pub const Q8_0_BLOCK_BYTES: usize = 34;

/// Work-items of a quantised matrix-vector work-group, as a host count.
const LANES: usize = 32;
const _: () = assert!(signature::matvec_q::BLOCK == 32);

/// The IEEE binary16 value with these bits, exactly, as `v_cvt_f32_f16` gives it (every f16 is
/// an f32; a signalling NaN comes back quiet with its payload): the GGUF crate's conversion,
/// which the tests below hold to the GPU's behaviour.
pub use gguf::f16::f16_to_f32;

/// The f16 at the start of `bytes` (at least 2 long).
fn f16_at(bytes: &[u8]) -> f32 {
    f16_to_f32(u16::from_le_bytes([bytes[0], bytes[1]]))
}

/// A block format: its size and the kernel's per-block accumulation.
#[derive(Clone, Copy)]
struct Format {
    kind: rows::Kind,
    sig: &'static Signature,
    block_bytes: usize,
    /// `acc` plus the block's product with `x`, in the kernel's operations and order.
    dot: fn(f32, &[u8], &[f32]) -> f32,
}

/// The sum of a block's 32 `x` values, `j` ascending from `0.0`, each add rounded: Q4_1's `sx`.
pub(crate) fn block_x_sum(xs: &[f32]) -> f32 {
    xs[..32].iter().fold(0.0f32, |sx, &x| sx + x)
}

/// A Q4_1 block added into `acc` (the kernel's operations; `mul_add` is one fused multiply-add,
/// rounded once):
/// `lo = fma(qs[j] & 15, x[j], lo)`, `hi = fma(qs[j] >> 4, x[16 + j], hi)` for `j < 16` from
/// `0.0`; `sx` = [`block_x_sum`]; then `acc = fma(d, lo + hi, acc)`, `acc = fma(m, sx, acc)`.
fn dot_q4_1(acc: f32, block: &[u8], xs: &[f32]) -> f32 {
    dot_q4_1_with_sum(acc, block, xs, block_x_sum(xs))
}

/// [`dot_q4_1`] with the block's `sx` given (it depends on `x` alone).
pub(crate) fn dot_q4_1_with_sum(acc: f32, block: &[u8], xs: &[f32], sx: f32) -> f32 {
    let (d, m) = (f16_at(&block[0..2]), f16_at(&block[2..4]));
    let (mut lo, mut hi) = (0.0f32, 0.0f32);
    for (j, &q) in block[4..20].iter().enumerate() {
        lo = f32::from(q & 15).mul_add(xs[j], lo);
        hi = f32::from(q >> 4).mul_add(xs[16 + j], hi);
    }
    m.mul_add(sx, d.mul_add(lo + hi, acc))
}

/// A Q8_0 block added into `acc`: `lo = fma(qs[j], x[j], lo)`, `hi = fma(qs[16 + j], x[16 + j],
/// hi)` for `j < 16` from `0.0`, then `acc = fma(d, lo + hi, acc)`.
fn dot_q8_0(acc: f32, block: &[u8], xs: &[f32]) -> f32 {
    let d = f16_at(&block[0..2]);
    let (mut lo, mut hi) = (0.0f32, 0.0f32);
    for j in 0..16 {
        lo = f32::from(block[2 + j].cast_signed()).mul_add(xs[j], lo);
        hi = f32::from(block[18 + j].cast_signed()).mul_add(xs[16 + j], hi);
    }
    d.mul_add(lo + hi, acc)
}

const Q4_1: Format =
    Format { kind: rows::Kind::Q4_1, sig: &signature::MATVEC_Q4_1, block_bytes: Q4_1_BLOCK_BYTES, dot: dot_q4_1 };
const Q8_0: Format =
    Format { kind: rows::Kind::Q8_0, sig: &signature::MATVEC_Q8_0, block_bytes: Q8_0_BLOCK_BYTES, dot: dot_q8_0 };

/// `matvec_q4_1(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols)`:
/// `y[r] = sum_c w[r][c] * x[c]` for `r < rows`, `w` in Q4_1.
///
/// In `f32`, as the kernel does: work-group `r` (of exactly 32 work-items) handles row `r`;
/// work-item `t` keeps `acc` from `0.0` over blocks `b = t, t + 32, ...` ascending; the 32
/// partial sums are added by the LDS tree (`stride = 16, ..., 1`). Block `b` (`x_j = x[32 b +
/// j]`), each `fma` an IEEE fused multiply-add (`fmaf` in the kernel, [`f32::mul_add`] here:
/// one rounding), every other operation rounded on its own:
/// - `lo = fma(qs[j] & 15, x_j, lo)` and `hi = fma(qs[j] >> 4, x_(16+j), hi)` for `j = 0..16`
///   ascending, both from `0.0`;
/// - `sx = x_0 + x_1 + ... + x_31`, added left to right from `0.0`;
/// - `acc = fma(d, lo + hi, acc)`, then `acc = fma(m, sx, acc)`.
///
/// That is `sum_j ((q_j * d + m) * x_j)` regrouped as `d * sum_j q_j x_j + m * sum_j x_j`; `sx`
/// depends on `x` alone, so a path computing many rows computes it once per block.
///
/// Launch preconditions: work-group size 32, no partial work-group with a row, and `cols` a
/// multiple of 32 when any row is handled.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn matvec_q4_1(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    matvec_quant(launch, memory, Q4_1)
}

/// `matvec_q8_0(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols)`: as
/// [`matvec_q4_1`] with Q8_0 blocks, block `b` added as `lo = fma(qs[j], x_j, lo)` and
/// `hi = fma(qs[16 + j], x_(16+j), hi)` for `j = 0..16` ascending from `0.0`, then
/// `acc = fma(d, lo + hi, acc)`.
///
/// # Errors
/// As [`matvec_q4_1`].
pub fn matvec_q8_0(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    matvec_quant(launch, memory, Q8_0)
}

/// The row accumulation state of a matvec: the 32 work-items' partial sums of the current row.
struct Rows {
    blocks_per_row: u64,
    block: u64,
    partial: [f32; LANES],
    finished: Vec<u32>,
}

fn matvec_quant(launch: &Launch<'_>, memory: &mut dyn DeviceMemory, format: Format) -> Result<(), KernelError> {
    use signature::matvec_q::{BLOCK, COLS, ROWS, W, X, Y};
    let grid = Grid::new(launch, format.sig)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if workgroup_size_x != BLOCK {
        return Err(KernelError::WorkgroupSizeRequired { workgroup_size_x, required: BLOCK });
    }
    let kernarg = launch.kernarg;
    let (y, w, x) = (Y.read_ptr(kernarg)?, W.read_ptr(kernarg)?, X.read_ptr(kernarg)?);
    let (rows, cols) = (ROWS.read_u32(kernarg)?, COLS.read_u32(kernarg)?);
    let groups = grid.workgroups();
    if !grid.size_x.is_multiple_of(grid.workgroup_x) && groups - 1 < rows {
        return Err(KernelError::PartialWorkgroup { grid_size_x: grid.size_x, workgroup_size_x });
    }
    let active_rows = rows.min(groups);
    if active_rows == 0 {
        return Ok(());
    }
    if !cols.is_multiple_of(QK) {
        return Err(KernelError::ColsNotBlockMultiple { cols, block: QK });
    }
    let blocks_per_row = u64::from(cols / QK);
    if blocks_per_row == 0 {
        // Every work-item's sum is 0.0, and so is the tree's.
        let zeros = vec![0u32; super::READ_CHUNK_ELEMENTS];
        let mut first = 0u32;
        while first < active_rows {
            let n = widen(active_rows - first).min(zeros.len());
            store(memory, &Y, y, first.into(), &zeros[..n])?;
            first += u32::try_from(n).unwrap_or(u32::MAX);
        }
        return Ok(());
    }
    let xs = load_f32_vec(memory, &X, x, 0, cols.into())?;
    // No overflow: active_rows * blocks_per_row < 2^32 * 2^27.
    let blocks = u64::from(active_rows) * blocks_per_row;
    if let Some(ys) = in_place(memory, w, blocks, &xs, format) {
        return store_as_streamed(memory, y, &ys, blocks_per_row, format.block_bytes);
    }
    let mut state = Rows { blocks_per_row, block: 0, partial: [0.0; LANES], finished: Vec::new() };
    let mut first_unstored = 0u64;
    stream_blocks(memory, &W, w, 0, blocks, format.block_bytes, |memory, chunk| {
        for block in chunk.chunks_exact(format.block_bytes) {
            state.add_block(block, &xs, format.dot);
        }
        // The rows finished so far are whole work-groups: store them before the next read.
        store(memory, &Y, y, first_unstored, &state.finished)?;
        first_unstored += widen_usize(state.finished.len());
        state.finished.clear();
        Ok(())
    })
}

/// The rows' sums computed from weights the address space lends ([`rows`]): in the vector
/// path's layout kept with the weights ([`DeviceMemory::derived`]), else laid out from a view for
/// this dispatch, or `None` when the address space lends them not (the streamed reads then run,
/// and report any fault).
fn in_place(memory: &dyn DeviceMemory, w: u64, blocks: u64, xs: &[f32], format: Format) -> Option<Vec<f32>> {
    let bytes = usize::try_from(blocks).ok()?.checked_mul(format.block_bytes)?;
    let layout = rows::Layout::fastest(format.kind, xs.len() / widen(QK));
    let mut ys = vec![0.0f32; bytes / (layout.blocks_per_row * format.block_bytes)];
    if layout.group_rows() == 1 {
        layout.matvec(memory.view(w, bytes)?, xs, &mut ys);
    } else if let Some(packed) = memory.derived(w, bytes, layout.key(), &|weights| layout.pack(weights)) {
        layout.matvec(&packed, xs, &mut ys);
    } else {
        layout.matvec(&layout.pack(memory.view(w, bytes)?), xs, &mut ys);
    }
    Some(ys)
}

/// Stores `ys` in the accesses the streamed path makes: after each chunk of
/// [`READ_CHUNK_BYTES`] of blocks, the rows that chunk finished, so that a fault on `y` leaves
/// exactly the same rows stored.
fn store_as_streamed(
    memory: &mut dyn DeviceMemory,
    y: u64,
    ys: &[f32],
    blocks_per_row: u64,
    block_bytes: usize,
) -> Result<(), KernelError> {
    use signature::matvec_q::Y;
    let per_chunk = widen_usize(READ_CHUNK_BYTES / block_bytes);
    let blocks = widen_usize(ys.len()) * blocks_per_row;
    let bits: Vec<u32> = ys.iter().map(|v| v.to_bits()).collect();
    let (mut done, mut stored) = (0u64, 0usize);
    while done < blocks {
        done = (done + per_chunk).min(blocks);
        let finished = widen_u64(done / blocks_per_row);
        store(memory, &Y, y, widen_usize(stored), &bits[stored..finished])?;
        stored = finished;
    }
    Ok(())
}

impl Rows {
    /// Adds the next block of the stream into its work-item's partial sum; the row's last block
    /// reduces the row into `finished`.
    fn add_block(&mut self, block: &[u8], xs: &[f32], dot: fn(f32, &[u8], &[f32]) -> f32) {
        // block % blocks_per_row < cols / 32, so 32 * b + 32 <= cols = xs.len().
        let b = self.block % self.blocks_per_row;
        let first = widen_u64(b) * widen(QK);
        let lane = widen_u64(b) % LANES;
        self.partial[lane] = dot(self.partial[lane], block, &xs[first..first + widen(QK)]);
        self.block += 1;
        if b + 1 == self.blocks_per_row {
            self.finished.push(super::tree_reduce(&mut self.partial).to_bits());
            self.partial = [0.0; LANES];
        }
    }
}

/// A block index below `cols / 32 < 2^27` as `usize`.
fn widen_u64(b: u64) -> usize {
    usize::try_from(b).unwrap_or(usize::MAX)
}

/// Reads `blocks` blocks of `block_bytes` from byte `offset` of argument `arg` in accesses of
/// whole blocks of at most [`READ_CHUNK_BYTES`], handing each chunk to `consume` in order.
pub(super) fn stream_blocks(
    memory: &mut dyn DeviceMemory,
    arg: &ArgDecl,
    base: u64,
    offset: u64,
    blocks: u64,
    block_bytes: usize,
    mut consume: impl FnMut(&mut dyn DeviceMemory, &[u8]) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let per_chunk = widen_usize(READ_CHUNK_BYTES / block_bytes);
    let block_bytes_u64 = widen_usize(block_bytes);
    let mut buffer = Vec::new();
    let mut done = 0u64;
    while done < blocks {
        let n = per_chunk.min(blocks - done);
        buffer.resize(widen_u64(n) * block_bytes, 0);
        let at = done
            .checked_mul(block_bytes_u64)
            .and_then(|o| o.checked_add(offset))
            .ok_or(KernelError::ByteAddressOverflow { arg: arg.name, base, offset: u64::MAX })?;
        load_bytes(memory, arg, base, at, &mut buffer)?;
        consume(memory, &buffer)?;
        done += n;
    }
    Ok(())
}

/// `get_row_q8_0(float* out, const unsigned char* table, const u32* token, u32 cols, u32 rows)`:
/// with `tok = token[0]`, `out[c] = table[tok][c]` dequantised (`q * d`, one rounding) for
/// `c < min(cols, grid_size_x)`, one work-item per element. A `tok >= rows` writes nothing: the
/// kernel has no way to report it, so the host must keep token ids in range (or check `out`).
///
/// Launch preconditions: `cols` a multiple of 32 when any element is handled.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn get_row_q8_0(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::get_row_q8_0::{COLS, OUT, ROWS, TABLE, TOKEN};
    let grid = Grid::new(launch, &signature::GET_ROW_Q8_0)?;
    let kernarg = launch.kernarg;
    let (out, table, token) = (OUT.read_ptr(kernarg)?, TABLE.read_ptr(kernarg)?, TOKEN.read_ptr(kernarg)?);
    let (cols, rows) = (COLS.read_u32(kernarg)?, ROWS.read_u32(kernarg)?);
    let active = cols.min(grid.size_x);
    if active == 0 {
        return Ok(());
    }
    if !cols.is_multiple_of(QK) {
        return Err(KernelError::ColsNotBlockMultiple { cols, block: QK });
    }
    let token_address = element_address(&TOKEN, token, 0)?;
    let tok = memory.read_u32(token_address).map_err(|fault| KernelError::Memory { arg: TOKEN.name, fault })?;
    if tok >= rows {
        return Ok(());
    }
    let blocks_per_row = u64::from(cols / QK);
    // No overflow: tok * blocks_per_row * 34 < 2^32 * 2^27 * 2^6.
    let row_offset = u64::from(tok) * blocks_per_row * widen_usize(Q8_0_BLOCK_BYTES);
    let blocks = u64::from(active.div_ceil(QK));
    let mut next = 0u32;
    let mut values = Vec::new();
    stream_blocks(memory, &TABLE, table, row_offset, blocks, Q8_0_BLOCK_BYTES, |memory, chunk| {
        let first = next;
        values.clear();
        for block in chunk.chunks_exact(Q8_0_BLOCK_BYTES) {
            let d = f16_at(block);
            for &q in &block[2..] {
                if next < active {
                    values.push((f32::from(q.cast_signed()) * d).to_bits());
                    next += 1;
                }
            }
        }
        store(memory, &OUT, out, first.into(), &values)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_bits_convert_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x0400), 2f32.powi(-14));
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert_eq!(f16_to_f32(0xfc00), f32::NEG_INFINITY);
        assert_eq!(f16_to_f32(0x7e00).to_bits(), 0x7fc0_0000);
        assert_eq!(f16_to_f32(0x7c01).to_bits(), 0x7fc0_2000, "a signalling NaN comes back quiet");
    }

    #[test]
    fn every_finite_f16_matches_its_decimal_definition() {
        // (-1)^s * 2^(e - 15) * (1 + m / 1024), or 2^-14 * m / 1024 for e = 0, computed in f64.
        for bits in 0u16..=0xffff {
            let (s, e, m) = ((bits >> 15) & 1, (bits >> 10) & 0x1f, bits & 0x3ff);
            if e == 0x1f {
                continue;
            }
            let magnitude = if e == 0 {
                f64::from(m) / 1024.0 * 2f64.powi(-14)
            } else {
                (1.0 + f64::from(m) / 1024.0) * 2f64.powi(i32::from(e) - 15)
            };
            let value = if s == 1 { -magnitude } else { magnitude };
            assert_eq!(f64::from(f16_to_f32(bits)), value, "{bits:#06x}");
        }
    }
}
