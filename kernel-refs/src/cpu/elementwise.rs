//! One work-item per element: `fill`, `copy`, `axpy`, `add`, `mul`, `scale`.
//!
//! Each kernel computes `i = workgroup_id_x * hidden_group_size_x + workitem_id_x` and handles
//! element `i` when `i < n`, so exactly the elements `i < min(n, grid_size_x)` are touched,
//! whatever the work-group size, partial last work-group included.

use super::simd::{Isa, compiled_for};
use super::{Grid, KernelError, load, overlaps, store, store_pieces, widen};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature::{self, ArgDecl, Signature};

/// The arguments and operation of one element-wise kernel.
pub(super) struct Map<'s, const I: usize> {
    pub(super) sig: &'s Signature,
    pub(super) out: ArgDecl,
    pub(super) inputs: [ArgDecl; I],
    pub(super) n: ArgDecl,
}

impl<const I: usize> Map<'_, I> {
    /// `out[i] = op(inputs[..][i])` for every `i < min(n, grid_size_x)`, work-group by
    /// work-group, loads before stores. Values are raw `f32` bits.
    pub(super) fn run(
        &self,
        launch: &Launch<'_>,
        memory: &mut dyn DeviceMemory,
        op: impl Fn([u32; I]) -> u32 + Sync,
    ) -> Result<(), KernelError> {
        let grid = Grid::new(launch, self.sig)?;
        let kernarg = launch.kernarg;
        let out_base = self.out.read_ptr(kernarg)?;
        let mut bases = [0u64; I];
        for (base, arg) in bases.iter_mut().zip(&self.inputs) {
            *base = arg.read_ptr(kernarg)?;
        }
        let n = self.n.read_u32(kernarg)?;

        if let Some(results) = self.lent(memory, &grid, n, out_base, &bases, &op) {
            // The bytes the work-groups below store (contiguous from element 0), at once.
            let pieces = grid.chunks_below(n).map(|(first, end)| widen(first)..widen(end));
            return store_pieces(memory, &self.out, (out_base, 0), &results, pieces);
        }
        let mut loaded: [Vec<u32>; I] = std::array::from_fn(|_| Vec::new());
        let mut results = Vec::new();
        for (first, end) in grid.chunks_below(n) {
            let count = widen(end - first);
            for ((values, arg), &base) in loaded.iter_mut().zip(&self.inputs).zip(&bases) {
                values.clear();
                values.resize(count, 0);
                load(memory, arg, base, first.into(), values)?;
            }
            results.clear();
            results.extend((0..count).map(|j| op(std::array::from_fn(|input| loaded[input][j]))));
            store(memory, &self.out, out_base, first.into(), &results)?;
        }
        Ok(())
    }

    /// Every result at once, from inputs the address space lends in place, when that gives what
    /// the work-groups compute: each input is lent whole and no input overlaps `out` other than
    /// exactly (an element's result then depends on no other element's store, whatever the
    /// order). Computed across the machine's cores for a large `n`. `None` otherwise: the
    /// work-group loop runs (and reports any fault).
    fn lent(
        &self,
        memory: &dyn DeviceMemory,
        grid: &Grid,
        n: u32,
        out_base: u64,
        bases: &[u64; I],
        op: &(impl Fn([u32; I]) -> u32 + Sync),
    ) -> Option<Vec<u32>> {
        let active = widen(n.min(grid.size_x));
        let bytes = active.checked_mul(4)?;
        let len = u64::try_from(bytes).ok()?;
        out_base.checked_add(len)?;
        let mut views = [&[][..]; I];
        for (view, &base) in views.iter_mut().zip(bases) {
            base.checked_add(len)?;
            if base != out_base && overlaps((base, len), (out_base, len)) {
                return None;
            }
            *view = memory.view(base, bytes)?;
        }
        let words = views.map(|view| view.as_chunks::<4>().0);
        Some(elements(Isa::widest(), words, active, op))
    }
}

/// `op` on the first `active` elements of the little-endian words `inputs`, in chunks of
/// contiguous elements whose loop is compiled for `isa` (and so vectorises; the same bits, see
/// [`compiled_for`]), spread over the machine's cores when there are many.
fn elements<const I: usize>(
    isa: Option<Isa>,
    inputs: [&[[u8; 4]]; I],
    active: usize,
    op: &(impl Fn([u32; I]) -> u32 + Sync),
) -> Vec<u32> {
    use rayon::prelude::*;
    let chunk = |(index, out): (usize, &mut [u32])| {
        let first = index * CHUNK_ELEMENTS;
        let ins = inputs.map(|words| &words[first..first + out.len()]);
        compiled_for(
            isa,
            #[inline(always)]
            || {
                let len = out.len();
                let ins = ins.map(|values| &values[..len]);
                for i in 0..len {
                    out[i] = op(std::array::from_fn(|input| u32::from_le_bytes(ins[input][i])));
                }
            },
        );
    };
    let mut results = vec![0u32; active];
    if active >= PARALLEL_ELEMENTS_MIN {
        results.par_chunks_mut(CHUNK_ELEMENTS).enumerate().for_each(chunk);
    } else {
        results.chunks_mut(CHUNK_ELEMENTS).enumerate().for_each(chunk);
    }
    results
}

/// Elements below which an element-wise dispatch runs on the calling thread only.
const PARALLEL_ELEMENTS_MIN: usize = 1 << 15;
/// Elements of a chunk of results computed by one loop (a task of the cores).
const CHUNK_ELEMENTS: usize = PARALLEL_ELEMENTS_MIN / 4;

/// `fill(float* out, float value, u32 n)`: `out[i] = value` (the exact bits of `value`).
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, a launch the kernel does not support, or a
/// fault on `out`.
pub fn fill(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::fill::{N, OUT, VALUE};
    let value = VALUE.read_u32(launch.kernarg)?;
    Map { sig: &signature::FILL, out: OUT, inputs: [], n: N }.run(launch, memory, |[]| value)
}

/// `copy(float* dst, const float* src, u32 n)`: `dst[i] = src[i]` (the exact bits).
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn copy(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::copy::{DST, N, SRC};
    Map { sig: &signature::COPY, out: DST, inputs: [SRC], n: N }.run(launch, memory, |[src]| src)
}

/// `axpy(float* y, const float* x, float a, u32 n)`: `y[i] = a * x[i] + y[i]`, a rounded
/// multiply then a rounded add (no fused multiply-add).
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn axpy(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::axpy::{A, N, X, Y};
    let a = A.read_f32(launch.kernarg)?;
    Map { sig: &signature::AXPY, out: Y, inputs: [X, Y], n: N }
        .run(launch, memory, |[x, y]| (a * f32::from_bits(x) + f32::from_bits(y)).to_bits())
}

/// `add(float* out, const float* a, const float* b, u32 n)`: `out[i] = a[i] + b[i]`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn add(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::binary::{A, B, N, OUT};
    Map { sig: &signature::ADD, out: OUT, inputs: [A, B], n: N }
        .run(launch, memory, |[a, b]| (f32::from_bits(a) + f32::from_bits(b)).to_bits())
}

/// `mul(float* out, const float* a, const float* b, u32 n)`: `out[i] = a[i] * b[i]`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn mul(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::binary::{A, B, N, OUT};
    Map { sig: &signature::MUL, out: OUT, inputs: [A, B], n: N }
        .run(launch, memory, |[a, b]| (f32::from_bits(a) * f32::from_bits(b)).to_bits())
}

/// `scale(float* out, const float* x, float s, u32 n)`: `out[i] = s * x[i]`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn scale(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::scale::{N, OUT, S, X};
    let s = S.read_f32(launch.kernarg)?;
    Map { sig: &signature::SCALE, out: OUT, inputs: [X], n: N }
        .run(launch, memory, |[x]| (s * f32::from_bits(x)).to_bits())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random words with every special class mixed in: zeros, infinities, NaNs with payloads,
    /// subnormals, and values near the exponential's bounds.
    fn words(len: usize, seed: u64) -> Vec<[u8; 4]> {
        let mut state = seed | 1;
        let specials = [0u32, 0x8000_0000, 0x7f80_0000, 0xff80_0000, 0x7fc0_1234, 0xffa0_0001, 1, 0x8000_0003];
        (0..len)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let bits = match state % 8 {
                    0 => specials[i % specials.len()],
                    // Within [-128, 128): silu's exponential over its whole computed range.
                    1..=3 => (f32::from(u16::try_from(state >> 48).unwrap_or(0)) / 256.0 - 128.0).to_bits(),
                    _ => u32::try_from(state >> 32).unwrap_or(0),
                };
                bits.to_le_bytes()
            })
            .collect()
    }

    /// `op` through [`elements`] on every instruction set this machine has and the baseline: the
    /// bits of `op` applied one element at a time.
    fn check(name: &str, op: impl Fn([u32; 2]) -> u32 + Sync, inputs: [&[[u8; 4]]; 2]) {
        let len = inputs[0].len();
        let expected: Vec<u32> =
            (0..len).map(|i| op([u32::from_le_bytes(inputs[0][i]), u32::from_le_bytes(inputs[1][i])])).collect();
        let isas = crate::cpu::simd::available_for_tests().into_iter().map(Some).chain([None]);
        for isa in isas {
            let got = elements(isa, inputs, len, &op);
            // Same bits, except that of two NaN operands of a commutative operation either
            // payload may survive (see `compiled_for`): such a result must be a NaN.
            let nan = |bits: u32| f32::from_bits(bits).is_nan();
            if let Some(i) = (0..len).find(|&i| got[i] != expected[i] && !(nan(got[i]) && nan(expected[i]))) {
                panic!(
                    "{name}, {len} elements, {isa:?}: element {i} of {:#010x}, {:#010x} is {:#010x}, not {:#010x}",
                    u32::from_le_bytes(inputs[0][i]),
                    u32::from_le_bytes(inputs[1][i]),
                    got[i],
                    expected[i]
                );
            }
        }
    }

    /// Each element-wise operation's vector loop, on lengths with a ragged last chunk and
    /// vector tail, and split over the cores.
    #[test]
    fn vector_loops_give_the_one_element_bits() {
        // (1 + 2^-12)^2 needs 25 bits: a fused multiply-add would keep the 2^-24 that the
        // rounded product drops, and give 2^-24 instead of 0 here.
        let a = 1.0 + 2f32.powi(-12);
        let axpy = |[x, y]: [u32; 2]| (a * f32::from_bits(x) + f32::from_bits(y)).to_bits();
        let add = |[x, y]: [u32; 2]| (f32::from_bits(x) + f32::from_bits(y)).to_bits();
        for len in [0usize, 1, 17, CHUNK_ELEMENTS + 5, PARALLEL_ELEMENTS_MIN + 4 * CHUNK_ELEMENTS + 3] {
            let (x, y) = (words(len, 3), words(len, 7));
            let x_fma = vec![a.to_bits().to_le_bytes(); len];
            let y_fma = vec![(-(1.0 + 2f32.powi(-11))).to_bits().to_le_bytes(); len];
            check("add", add, [&x, &y]);
            check("axpy", axpy, [&x, &y]);
            check("axpy, a product that a fused multiply-add would keep", axpy, [&x_fma, &y_fma]);
            check("silu_mul", super::super::llama::silu, [&x, &y]);
        }
        assert_eq!(axpy([a.to_bits(), (-(1.0 + 2f32.powi(-11))).to_bits()]), 0);
    }
}
