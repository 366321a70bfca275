//! `matvec`: one work-item per row.

use super::{Grid, KernelError, READ_CHUNK_ELEMENTS, load, load_f32_vec, store, widen};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature::{self, matvec::A};

/// `matvec(float* y, const float* a, const float* x, u32 rows, u32 cols)`:
/// `y[r] = sum_c a[r * cols + c] * x[c]` for `r < min(rows, grid_size_x)`, accumulated in `f32`
/// from `0.0` with `c` ascending, each product rounded before it is added.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn matvec(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::matvec::{COLS, ROWS, X, Y};
    let grid = Grid::new(launch, &signature::MATVEC)?;
    let kernarg = launch.kernarg;
    let (y, a, x) = (Y.read_ptr(kernarg)?, A.read_ptr(kernarg)?, X.read_ptr(kernarg)?);
    let (rows, cols) = (ROWS.read_u32(kernarg)?, COLS.read_u32(kernarg)?);

    let mut chunk = Vec::new();
    for (first, end) in grid.chunks_below(rows) {
        // Every work-item of the group reads all of x; with the group's loads before its stores
        // they all see the same values, so one read serves the group.
        let xs = load_f32_vec(memory, &X, x, 0, cols.into())?;
        let mut ys = Vec::with_capacity(widen(end - first));
        for r in first..end {
            ys.push(dot_row(memory, a, u64::from(r) * u64::from(cols), &xs, &mut chunk)?.to_bits());
        }
        store(memory, &Y, y, first.into(), &ys)?;
    }
    Ok(())
}

/// `sum_c a[row_first + c] * x[c]`, ascending `c`, streaming the row in chunks.
fn dot_row(
    memory: &dyn DeviceMemory,
    a: u64,
    row_first: u64,
    xs: &[f32],
    chunk: &mut Vec<u32>,
) -> Result<f32, KernelError> {
    let mut acc = 0.0f32;
    let mut index = row_first;
    for xs in xs.chunks(READ_CHUNK_ELEMENTS) {
        chunk.clear();
        chunk.resize(xs.len(), 0);
        load(memory, &A, a, index, chunk)?;
        for (&av, &xv) in chunk.iter().zip(xs) {
            acc += f32::from_bits(av) * xv;
        }
        // No overflow: row_first + c < rows * cols < 2^64.
        index += super::widen_usize(xs.len());
    }
    Ok(acc)
}
