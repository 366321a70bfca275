//! The launches every model adapter makes the same way: matrix-vector and batched matrix
//! products, RMSNorm over rows, the residual add, three-operand element-wise kernels, and the
//! host-side pieces around them (reading the logits, checking a token or a prefill pass). Each
//! builds exactly one [`Launch`] with its arguments and declared effects in a fixed order, so an
//! adapter's tape does not depend on which adapter made it.

use hal::Device;
use kernarg_abi::layout::ArgValue;

use crate::funnel::{Funnel, Kernel, Launch, Use};
use crate::workload::{Surface, WorkloadError, check_position};

/// Work-group size of the quantised matvecs and matrix products (one wave32 per row).
pub(super) const MATVEC_BLOCK: u16 = 32;
/// `rmsnorm`'s fixed work-group size.
pub(super) const RMSNORM_BLOCK: u16 = 256;
/// Work-group size of the element-wise kernels.
pub(super) const LINEAR_BLOCK: u16 = 64;

/// A tensor on the device: its address and the bytes it spans.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tensor {
    pub(super) va: u64,
    pub(super) bytes: u64,
}

/// `y = w · x` for `rows` rows of `cols` values: `kernel(y, w, x, rows, cols)`, one work-group
/// of [`MATVEC_BLOCK`] per row.
pub(super) fn matvec(
    device: &mut dyn Device,
    funnel: &mut Funnel,
    kernel: &Kernel,
    (y, w, x): (u64, Tensor, u64),
    (rows, cols): (u32, u32),
) -> Result<(), WorkloadError> {
    let args =
        [ArgValue::Pointer(y), ArgValue::Pointer(w.va), ArgValue::Pointer(x), ArgValue::U32(rows), ArgValue::U32(cols)];
    let uses = [Use::write(y, 4 * u64::from(rows)), Use::read(w.va, w.bytes), Use::read(x, 4 * u64::from(cols))];
    let grid = rows.saturating_mul(u32::from(MATVEC_BLOCK));
    funnel.launch(device, &Launch::linear(kernel, &args, grid, MATVEC_BLOCK, &uses))?;
    Ok(())
}

/// `y[t] = w · x[t]` for the `n` rows of a prefill pass: `kernel(y, w, x, rows, cols, n)`, each
/// row the bits [`matvec`] gives for it.
pub(super) fn matmul(
    device: &mut dyn Device,
    funnel: &mut Funnel,
    kernel: &Kernel,
    (y, w, x): (u64, Tensor, u64),
    (rows, cols, n): (u32, u32, u32),
) -> Result<(), WorkloadError> {
    let args = [
        ArgValue::Pointer(y),
        ArgValue::Pointer(w.va),
        ArgValue::Pointer(x),
        ArgValue::U32(rows),
        ArgValue::U32(cols),
        ArgValue::U32(n),
    ];
    let (rows_n, cols_n) = (u64::from(rows) * u64::from(n), u64::from(cols) * u64::from(n));
    let uses = [Use::write(y, 4 * rows_n), Use::read(w.va, w.bytes), Use::read(x, 4 * cols_n)];
    let grid = rows.saturating_mul(u32::from(MATVEC_BLOCK));
    funnel.launch(device, &Launch::linear(kernel, &args, grid, MATVEC_BLOCK, &uses))?;
    Ok(())
}

/// RMSNorm of `rows` rows of `cols` values with `weight` and `eps`: `rmsnorm(out, x, weight,
/// rows, cols, eps)`, one work-group of [`RMSNORM_BLOCK`] per row.
#[allow(clippy::too_many_arguments)]
pub(super) fn rmsnorm(
    device: &mut dyn Device,
    funnel: &mut Funnel,
    kernel: &Kernel,
    (out, x): (u64, u64),
    (rows, cols): (u32, u32),
    weight: Tensor,
    eps: f32,
) -> Result<(), WorkloadError> {
    let args = [
        ArgValue::Pointer(out),
        ArgValue::Pointer(x),
        ArgValue::Pointer(weight.va),
        ArgValue::U32(rows),
        ArgValue::U32(cols),
        ArgValue::F32(eps),
    ];
    let bytes = 4 * u64::from(cols) * u64::from(rows);
    let uses = [Use::write(out, bytes), Use::read(x, bytes), Use::read(weight.va, weight.bytes)];
    let grid = u32::from(RMSNORM_BLOCK).saturating_mul(rows);
    funnel.launch(device, &Launch::linear(kernel, &args, grid, RMSNORM_BLOCK, &uses))?;
    Ok(())
}

/// `x += delta` over `n` floats: `add(x, x, delta, n)`.
pub(super) fn residual(
    device: &mut dyn Device,
    funnel: &mut Funnel,
    add: &Kernel,
    (x, delta): (u64, u64),
    n: u32,
) -> Result<(), WorkloadError> {
    let args = [ArgValue::Pointer(x), ArgValue::Pointer(x), ArgValue::Pointer(delta), ArgValue::U32(n)];
    let bytes = 4 * u64::from(n);
    let uses = [Use::read_write(x, bytes), Use::read(delta, bytes)];
    funnel.launch(device, &Launch::linear(add, &args, n, LINEAR_BLOCK, &uses))?;
    Ok(())
}

/// `out = kernel(a, b)` over `n` floats: `kernel(out, a, b, n)` (SiLU or GELU gating).
pub(super) fn elementwise(
    device: &mut dyn Device,
    funnel: &mut Funnel,
    kernel: &Kernel,
    (out, a, b): (u64, u64, u64),
    n: u32,
) -> Result<(), WorkloadError> {
    let bytes = 4 * u64::from(n);
    let args = [ArgValue::Pointer(out), ArgValue::Pointer(a), ArgValue::Pointer(b), ArgValue::U32(n)];
    let uses = [Use::write(out, bytes), Use::read(a, bytes), Use::read(b, bytes)];
    funnel.launch(device, &Launch::linear(kernel, &args, n, LINEAR_BLOCK, &uses))?;
    Ok(())
}

/// The f32 values of `surface` (the logits).
///
/// # Errors
/// The device's read error.
pub(super) fn read_f32s(device: &mut dyn Device, surface: &Surface) -> Result<Vec<f32>, WorkloadError> {
    let mut bytes = vec![0u8; usize::try_from(surface.bytes).unwrap_or(0)];
    device.read(surface.va, &mut bytes)?;
    Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// [`WorkloadError::Init`] for a token outside a vocabulary of `vocab`.
pub(super) fn check_token(token: u32, vocab: u32) -> Result<(), WorkloadError> {
    if token >= vocab {
        return Err(WorkloadError::Init(format!("token {token} is outside the vocabulary of {vocab}")));
    }
    Ok(())
}

/// The token count of a prefill pass of `tokens` at positions from `first`, checked: 1 to
/// `chunk` tokens, the last position at most `max_position`, every token in the vocabulary.
pub(super) fn check_prefill(
    tokens: &[u32],
    first: u32,
    chunk: u32,
    max_position: u32,
    vocab: u32,
) -> Result<u32, WorkloadError> {
    let n = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
    if n == 0 || n > chunk {
        return Err(WorkloadError::Init(format!("a prefill pass of {n} tokens is outside 1..={chunk}")));
    }
    check_position(first.saturating_add(n - 1), max_position)?;
    tokens.iter().try_for_each(|&t| check_token(t, vocab))?;
    Ok(n)
}
