//! The LFM2 kernels of module `lfm2`: `shortconv` and `shortconv_rows`, the gated short
//! convolution of a convolution block with its state updated in place.
//!
//! One work-item per channel `c < min(dim, grid_size_x)`; per token (one for `shortconv`, `n`
//! in order for `shortconv_rows`), in these `f32` operations:
//! `bx = B[c] * x[c]`; `acc = 0`, then `acc += state[c][k] * weight[c][k]` for `k = 0 ..
//! d_conv - 1`, then `acc += bx * weight[c][d_conv]`; the state row shifted down by one with `bx`
//! last; `out[c] = C[c] * acc`. `B`, `C` and `x` are the token's `bcx` row's thirds.
//!
//! Each work-group loads everything it reads (the state rows and taps of its channels, then
//! every token's three thirds of them) before it stores (each token's outputs, then the state
//! rows), as [`super`] describes; a channel's state is read and written by its own work-item
//! only, so the update has no race.

use super::{Grid, KernelError, load_f32_vec, store, widen};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature::{self, ArgDecl};

/// `shortconv(float* out, float* state, const float* bcx, const float* weight, u32 dim,
/// u32 d_conv)`: one token's gated short convolution (see the module documentation), the state
/// `[dim][d_conv]` shifted in place, `weight` `[dim][d_conv + 1]` (oldest tap first).
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, an element past the
/// address space, or a fault on an argument.
pub fn shortconv(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    let grid = Grid::new(launch, &signature::SHORTCONV)?;
    run(launch, memory, grid, 1)
}

/// `shortconv_rows(float* out, float* state, const float* bcx, const float* weight, u32 dim,
/// u32 d_conv, u32 n)`: [`shortconv`] over `n` tokens in order, `bcx` `[n][3 dim]` and `out`
/// `[n][dim]`: row `t` and the state after it are bit for bit `t + 1` [`shortconv`] launches'.
///
/// # Errors
/// As [`shortconv`].
pub fn shortconv_rows(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    let grid = Grid::new(launch, &signature::SHORTCONV_ROWS)?;
    let n = signature::shortconv::N.read_u32(launch.kernarg)?;
    run(launch, memory, grid, n)
}

/// The element `row * width + offset` of argument `arg`, or the typed overflow.
fn element(arg: &ArgDecl, base: u64, (row, width, offset): (u64, u64, u64)) -> Result<u64, KernelError> {
    let index = u128::from(row) * u128::from(width) + u128::from(offset);
    u64::try_from(index).map_err(|_| KernelError::AddressOverflow { arg: arg.name, base, index: u64::MAX })
}

/// One channel's token: the documented operations on its state row `s` and taps `w`.
fn channel(s: &mut [f32], w: &[f32], [b, c, x]: [f32; 3]) -> f32 {
    let bx = b * x;
    let mut acc = 0.0f32;
    for (sk, wk) in s.iter().zip(w) {
        acc += sk * wk;
    }
    acc += bx * w[s.len()];
    if let Some(last) = s.len().checked_sub(1) {
        s.copy_within(1.., 0);
        s[last] = bx;
    }
    c * acc
}

fn run(launch: &Launch<'_>, memory: &mut dyn DeviceMemory, grid: Grid, n: u32) -> Result<(), KernelError> {
    use signature::shortconv::{BCX, D_CONV, DIM, OUT, STATE, WEIGHT};
    let kernarg = launch.kernarg;
    let (out, state, bcx, weight) =
        (OUT.read_ptr(kernarg)?, STATE.read_ptr(kernarg)?, BCX.read_ptr(kernarg)?, WEIGHT.read_ptr(kernarg)?);
    let (dim, d_conv) = (DIM.read_u32(kernarg)?, D_CONV.read_u32(kernarg)?);
    let (dim64, d64) = (u64::from(dim), u64::from(d_conv));
    let taps = d64 + 1;
    for (first, end) in grid.chunks_below(dim) {
        let (first64, count) = (u64::from(first), u64::from(end - first));
        let mut states = load_f32_vec(memory, &STATE, state, element(&STATE, state, (first64, d64, 0))?, count * d64)?;
        let weights =
            load_f32_vec(memory, &WEIGHT, weight, element(&WEIGHT, weight, (first64, taps, 0))?, count * taps)?;
        let mut thirds = Vec::new();
        for t in 0..u64::from(n) {
            for third in 0..3 {
                let at = element(&BCX, bcx, (t, 3 * dim64, third * dim64 + first64))?;
                thirds.push(load_f32_vec(memory, &BCX, bcx, at, count)?);
            }
        }
        let width = widen(end - first);
        let (d, k) = (widen(d_conv), widen(d_conv).saturating_add(1));
        let mut rows = Vec::with_capacity(thirds.len() / 3);
        for token in thirds.chunks_exact(3) {
            let row: Vec<u32> = (0..width)
                .map(|j| {
                    let s = &mut states[j * d..(j + 1) * d];
                    channel(s, &weights[j * k..(j + 1) * k], [token[0][j], token[1][j], token[2][j]]).to_bits()
                })
                .collect();
            rows.push(row);
        }
        for (t, row) in (0u64..).zip(&rows) {
            store(memory, &OUT, out, element(&OUT, out, (t, dim64, first64))?, row)?;
        }
        let bits: Vec<u32> = states.iter().map(|v| v.to_bits()).collect();
        store(memory, &STATE, state, element(&STATE, state, (first64, d64, 0))?, &bits)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_sums_the_window_oldest_first_and_shifts_its_state() {
        // State [1, 2], taps [10, 100, 1000], B = 2, x = 3 (bx = 6), C = 0.5:
        // (1*10 + 2*100) + 6*1000 = 6210, gated 3105; the state becomes [2, 6].
        let mut s = [1.0, 2.0];
        assert_eq!(channel(&mut s, &[10.0, 100.0, 1000.0], [2.0, 0.5, 3.0]), 3105.0);
        assert_eq!(s, [2.0, 6.0]);
        // No state (d_conv 0): the current input alone.
        assert_eq!(channel(&mut [], &[4.0], [2.0, 1.0, 3.0]), 24.0);
    }

    #[test]
    fn elements_past_the_address_space_are_typed_errors() {
        let arg = signature::shortconv::BCX;
        assert_eq!(element(&arg, 0, (2, 3, 1)), Ok(7));
        assert!(matches!(
            element(&arg, 0x10, (u64::from(u32::MAX), 3 * u64::from(u32::MAX), 5)),
            Err(KernelError::AddressOverflow { arg: "bcx", base: 0x10, .. })
        ));
    }
}
