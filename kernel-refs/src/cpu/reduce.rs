//! Work-group reductions through LDS: `block_sum` and `rmsnorm`.

use super::{Grid, KernelError, f32s_of, load, load_f32_vec, overlaps, store, store_pieces, tree_reduce, widen};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature;

/// `block_sum(float* out, const float* x, u32 n)`: for every work-group `g` of size `s`, slot
/// `t` of the group's LDS holds `x[g * s + t]` when that index is below `n` and `0.0` otherwise,
/// and `out[g]` is their LDS tree sum: for `stride = s / 2, s / 4, ..., 1`, slot `t < stride`
/// adds slot `t + stride`, in `f32`.
///
/// Launch preconditions: a power-of-two work-group size, at least `4 * workgroup_size_x` bytes
/// of dynamic LDS, and no partial work-group (its missing work-items would leave LDS slots the
/// tree reads undefined).
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn block_sum(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::block_sum::{N, OUT, X};
    let grid = Grid::new(launch, &signature::BLOCK_SUM)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if !workgroup_size_x.is_power_of_two() {
        return Err(KernelError::WorkgroupSizeNotPowerOfTwo { workgroup_size_x });
    }
    // One f32 slot of `scratch_lds` per work-item.
    let required = 4 * grid.workgroup_x;
    if launch.dynamic_lds_bytes < required {
        return Err(KernelError::DynamicLdsTooSmall { required, provided: launch.dynamic_lds_bytes });
    }
    if !grid.size_x.is_multiple_of(grid.workgroup_x) {
        return Err(KernelError::PartialWorkgroup { grid_size_x: grid.size_x, workgroup_size_x });
    }
    let kernarg = launch.kernarg;
    let (out, x, n) = (OUT.read_ptr(kernarg)?, X.read_ptr(kernarg)?, N.read_u32(kernarg)?);

    let mut loaded = vec![0u32; widen(grid.workgroup_x)];
    let mut lds = vec![0.0f32; loaded.len()];
    for group in 0..grid.workgroups() {
        // No overflow: the grid is whole work-groups, so first < grid_size_x.
        let first = group * grid.workgroup_x;
        let valid = widen(n.saturating_sub(first).min(grid.workgroup_x));
        load(memory, &X, x, first.into(), &mut loaded[..valid])?;
        for (t, slot) in lds.iter_mut().enumerate() {
            *slot = if t < valid { f32::from_bits(loaded[t]) } else { 0.0 };
        }
        let sum = tree_reduce(&mut lds);
        store(memory, &OUT, out, group.into(), &[sum.to_bits()])?;
    }
    Ok(())
}

/// Work-items of an `rmsnorm` work-group, as a host count.
const RMSNORM_LANES: usize = 256;
const _: () = assert!(signature::rmsnorm::BLOCK == 256);

/// The largest `cols` for which `for (c = t; c < cols; c += 256)` ends for every `t < 256`.
const RMSNORM_COLS_MAX: u32 = u32::MAX - 255;

/// `rmsnorm(float* out, const float* x, const float* weight, u32 rows, u32 cols, float eps)`:
/// work-group `r < rows` normalizes row `r`.
///
/// In `f32`, as the kernel does: work-item `t` sums `x[c] * x[c]` over `c = t, t + 256, ...`
/// ascending from `0.0`; the 256 partial sums are added by the LDS tree (`stride = 128, ..., 1`:
/// slot `t < stride` adds slot `t + stride`);
/// `inv = 1.0 / sqrt(sum / (float)cols + eps)`; `out[c] = (x[c] * inv) * weight[c]`.
///
/// Launch preconditions: work-group size exactly 256, and no partial work-group with a row to
/// normalize. With `cols == 0` the kernel touches no memory.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch that breaks a precondition, or a fault on
/// an argument.
pub fn rmsnorm(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::rmsnorm::{BLOCK, COLS, EPS, OUT, ROWS, WEIGHT, X};
    let grid = Grid::new(launch, &signature::RMSNORM)?;
    let workgroup_size_x = launch.workgroup_size[0];
    if workgroup_size_x != BLOCK {
        return Err(KernelError::WorkgroupSizeRequired { workgroup_size_x, required: BLOCK });
    }
    let kernarg = launch.kernarg;
    let (out, x, weight) = (OUT.read_ptr(kernarg)?, X.read_ptr(kernarg)?, WEIGHT.read_ptr(kernarg)?);
    let (rows, cols, eps) = (ROWS.read_u32(kernarg)?, COLS.read_u32(kernarg)?, EPS.read_f32(kernarg)?);

    let groups = grid.workgroups();
    if !grid.size_x.is_multiple_of(grid.workgroup_x) && groups - 1 < rows {
        return Err(KernelError::PartialWorkgroup { grid_size_x: grid.size_x, workgroup_size_x });
    }
    let active_rows = rows.min(groups);
    if active_rows == 0 || cols == 0 {
        return Ok(());
    }
    if cols > RMSNORM_COLS_MAX {
        return Err(KernelError::ColumnLoopWraps { cols, limit: RMSNORM_COLS_MAX });
    }
    let normalize = |xs: &[f32], ws: &[f32], normalized: &mut [u32]| {
        let inv = rms_inverse(xs, cols, eps);
        for ((bits, &xv), &wv) in normalized.iter_mut().zip(xs).zip(ws) {
            *bits = (xv * inv * wv).to_bits();
        }
    };
    if let Some(normalized) = lent_rows(memory, (out, x, weight), active_rows, cols, normalize) {
        // The row loop's stores, at once.
        let row_ranges = (0..widen(active_rows)).map(|r| r * widen(cols)..(r + 1) * widen(cols));
        return store_pieces(memory, &OUT, (out, 0), &normalized, row_ranges);
    }
    for row in 0..active_rows {
        let first = u64::from(row) * u64::from(cols);
        let xs = load_f32_vec(memory, &X, x, first, cols.into())?;
        let ws = load_f32_vec(memory, &WEIGHT, weight, 0, cols.into())?;
        let mut normalized = vec![0; xs.len()];
        normalize(&xs, &ws, &mut normalized);
        store(memory, &OUT, out, first, &normalized)?;
    }
    Ok(())
}

/// Every row at once from inputs the address space lends in place, when that gives what the
/// work-groups compute one after another: `out` does not overlap `weight`, and overlaps the rows
/// of `x` only exactly (a row's result then depends on no other row's store). `None` otherwise:
/// the row loop runs (and reports any fault).
fn lent_rows(
    memory: &dyn DeviceMemory,
    (out, x, weight): (u64, u64, u64),
    rows: u32,
    cols: u32,
    normalize: impl Fn(&[f32], &[f32], &mut [u32]),
) -> Option<Vec<u32>> {
    let cols_len = widen(cols);
    let (row_bytes, all_bytes) = (4 * u64::from(cols), 4 * u64::from(rows) * u64::from(cols));
    if overlaps((out, all_bytes), (weight, row_bytes)) || (out != x && overlaps((out, all_bytes), (x, all_bytes))) {
        return None;
    }
    let ws = f32s_of(memory.view(weight, usize::try_from(row_bytes).ok()?)?);
    let xs = f32s_of(memory.view(x, usize::try_from(all_bytes).ok()?)?);
    let mut normalized = vec![0u32; xs.len()];
    for (row, out) in xs.chunks_exact(cols_len).zip(normalized.chunks_exact_mut(cols_len)) {
        normalize(row, &ws, out);
    }
    Some(normalized)
}

/// `1.0 / sqrt(sum / (float)cols + eps)` with the kernel's per-work-item strided sums of squares
/// and LDS tree.
fn rms_inverse(xs: &[f32], cols: u32, eps: f32) -> f32 {
    let mut partial = [0.0f32; RMSNORM_LANES];
    for (c, &v) in xs.iter().enumerate() {
        partial[c % partial.len()] += v * v;
    }
    let sum = tree_reduce(&mut partial);
    // CAST: u32 to f32 rounds to nearest even, as v_cvt_f32_u32 does.
    #[allow(clippy::cast_precision_loss)]
    let cols = cols as f32;
    1.0 / (sum / cols + eps).sqrt()
}
