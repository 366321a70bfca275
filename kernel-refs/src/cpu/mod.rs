//! CPU reference implementations: for every kernel, a function that does to a [`DeviceMemory`]
//! exactly what the GPU kernel does, reading its arguments from the launch's kernarg bytes.
//!
//! # What is reproduced
//! - Arguments come from the kernarg offsets of [`kernels::signature`]; a kernel that computes its
//!   global id as `workgroup_id_x * hidden_group_size_x + workitem_id_x` reads
//!   `hidden_group_size_x` from the kernarg segment too, and the launch is refused when it
//!   disagrees with the dispatch's work-group size (the GPU would then compute overlapping ids).
//! - Work-items and work-groups are iterated as the dispatch creates them: the grid is
//!   `grid_size[0]` work-items in `ceil(grid_size[0] / workgroup_size[0])` work-groups, the last
//!   one possibly partial.
//! - Arithmetic is the kernel's own `f32` operations in the kernel's order (the code objects are
//!   built with `-ffp-contract=off`, round to nearest even, keep denormals, and divide and take
//!   square roots correctly rounded): reductions pair elements exactly as the LDS tree does.
//! - Launch preconditions the kernel relies on are checked before any memory access, and a
//!   violation is a [`KernelError`], never a guess.
//!
//! # Order of memory accesses, and aliasing
//! Work-groups run one after another in ascending order, and each work-group performs all of its
//! loads before any of its stores. That is one of the schedules the GPU may pick, so:
//! - when no output overlaps an input, or an output element aliases exactly the input element
//!   the same work-item reads (in-place `add`, `scale`, `axpy`, `copy` onto itself, `rmsnorm`
//!   with `out == x`), the result is the GPU's result;
//! - when an output partially overlaps an input read by another work-item, the GPU result is a
//!   data race; the reference gives this schedule's result.
//!
//! A reference that fails part-way (a fault on a later work-group) leaves the stores of the
//! work-groups before it in memory, as the GPU would. Reads of one argument within a
//! work-group are one [`DeviceMemory`] access per argument (large rows are read in chunks of
//! [`READ_CHUNK_ELEMENTS`]), so an access that straddles two allocations faults even where the
//! GPU's 4-byte accesses would each have landed in one of them.

mod elementwise;
mod exp;
mod gemma;
pub mod ggml;
mod lfm2;
mod llama;
mod matvec;
mod prefill;
mod quant;
mod qwen35;
mod reduce;
mod simd;

pub use elementwise::{add, axpy, copy, fill, mul, scale};
pub use exp::expf;
pub use gemma::{attention_window, attention_window_rows, gelu_mul, rope_neox, rope_neox_rows, rope_neox_store, tanhf};
pub use ggml::{BlockFormat, DequantError, dequantize_chunk, dequantize_row};
pub use lfm2::{shortconv, shortconv_rows};
pub use llama::{attention, kv_store, rope, rope_store, silu_mul};
pub use matvec::matvec;
pub use prefill::{attention_rows, get_rows_q8_0, matmul_q4_1, matmul_q8_0, rope_rows};
pub use quant::{Q4_1_BLOCK_BYTES, Q8_0_BLOCK_BYTES, QK, f16_to_f32, get_row_q8_0, matvec_q4_1, matvec_q8_0};
pub use qwen35::{gated_delta_net, logf, rope_partial, sigmoid_mul, softplusf, split_halves, ssm_conv_silu};
pub use reduce::{block_sum, rmsnorm};

use crate::launch::{self, KernargError, Launch};
use crate::memory::{DeviceMemory, MemoryFault};
use kernels::signature::{ArgDecl, Signature};

/// The signature every CPU reference has.
pub type CpuReference = fn(&Launch<'_>, &mut dyn DeviceMemory) -> Result<(), KernelError>;

/// Elements read per access when a reference reads a row of unbounded length, so that host
/// memory grows only as far as device memory is actually mapped.
pub const READ_CHUNK_ELEMENTS: usize = 16 * 1024;

/// Bytes read per access when a reference streams quantised blocks, so that host memory grows
/// only as far as device memory is actually mapped.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Why a CPU reference did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// An argument lies outside the kernarg segment.
    #[error(transparent)]
    Kernarg(#[from] KernargError),
    /// An access through argument `arg` faulted.
    #[error("argument {arg}: {fault}")]
    Memory {
        /// The pointer argument the access went through.
        arg: &'static str,
        /// The fault.
        fault: MemoryFault,
    },
    /// Element `index` of argument `arg` has no 64-bit address.
    #[error("argument {arg}: element {index} past base {base:#x} lies beyond the end of the address space")]
    AddressOverflow {
        /// The pointer argument.
        arg: &'static str,
        /// Its value.
        base: u64,
        /// The `f32` element index.
        index: u64,
    },
    /// A grid or work-group dimension is 0 (the AQL packet requires at least 1).
    #[error("grid {grid_size:?} or work-group {workgroup_size:?} has a zero dimension")]
    ZeroDimension {
        /// The grid size.
        grid_size: [u32; 3],
        /// The work-group size.
        workgroup_size: [u16; 3],
    },
    /// The kernels index in x only; a grid or work-group larger than 1 in y or z would run the
    /// same work-items more than once.
    #[error("grid {grid_size:?} with work-group {workgroup_size:?} is not one-dimensional")]
    NotOneDimensional {
        /// The grid size.
        grid_size: [u32; 3],
        /// The work-group size.
        workgroup_size: [u16; 3],
    },
    /// The work-group is larger than the code object's `.max_flat_workgroup_size`.
    #[error("work-group size {workgroup_size_x} exceeds the kernel's limit of {limit}")]
    WorkgroupTooLarge {
        /// Requested work-group size in x.
        workgroup_size_x: u16,
        /// `.max_flat_workgroup_size`.
        limit: u16,
    },
    /// The kernel is written for exactly one work-group size.
    #[error("work-group size {workgroup_size_x} is not the required {required}")]
    WorkgroupSizeRequired {
        /// Requested work-group size in x.
        workgroup_size_x: u16,
        /// The size the kernel requires.
        required: u16,
    },
    /// `hidden_group_size_x` in the kernarg segment is not the dispatch's work-group size.
    #[error("kernarg hidden_group_size_x {kernarg} differs from the dispatch work-group size {dispatch}")]
    GroupSizeMismatch {
        /// The kernarg value.
        kernarg: u16,
        /// The dispatch's work-group size in x.
        dispatch: u16,
    },
    /// A tree reduction over the work-group needs a power-of-two work-group size.
    #[error("work-group size {workgroup_size_x} is not a power of two")]
    WorkgroupSizeNotPowerOfTwo {
        /// Requested work-group size in x.
        workgroup_size_x: u16,
    },
    /// The dispatch provides less dynamic LDS than the kernel indexes.
    #[error("dynamic LDS of {provided} bytes is less than the {required} bytes the kernel uses")]
    DynamicLdsTooSmall {
        /// Bytes the kernel indexes.
        required: u32,
        /// Bytes the dispatch provides.
        provided: u32,
    },
    /// A reducing work-group would be partial: its missing work-items never write their LDS
    /// slots, so the reduction would read undefined LDS.
    #[error("grid size {grid_size_x} leaves a partial reducing work-group of size {workgroup_size_x}")]
    PartialWorkgroup {
        /// The grid size in x.
        grid_size_x: u32,
        /// The work-group size in x.
        workgroup_size_x: u16,
    },
    /// The kernel's `c += stride` column loop would wrap its 32-bit counter and never end.
    #[error("{cols} columns exceed the {limit} a strided 32-bit column loop can count")]
    ColumnLoopWraps {
        /// The column count.
        cols: u32,
        /// The largest column count that does not wrap.
        limit: u32,
    },
    /// A strided 32-bit loop over the count in argument `arg` would wrap and never end.
    #[error("{arg} = {count} exceeds the {limit} a strided 32-bit loop can count")]
    StridedLoopWraps {
        /// The argument holding the count.
        arg: &'static str,
        /// Its value.
        count: u32,
        /// The largest count that does not wrap.
        limit: u32,
    },
    /// A quantised row's column count is not a whole number of blocks.
    #[error("cols = {cols} is not a multiple of the {block}-element quantisation block")]
    ColsNotBlockMultiple {
        /// The column count.
        cols: u32,
        /// Elements per block.
        block: u32,
    },
    /// Rotary embedding rotates pairs: the head size must be even.
    #[error("head_dim = {head_dim} is odd; rope rotates pairs of elements")]
    OddHeadDim {
        /// The head size.
        head_dim: u32,
    },
    /// `heads * head_dim` does not fit the kernel's 32-bit element count.
    #[error("heads = {heads} times head_dim = {head_dim} exceeds the 32-bit element count")]
    HeadElementsOverflow {
        /// Heads.
        heads: u32,
        /// Elements per head.
        head_dim: u32,
    },
    /// Grouped-query attention needs `kv_heads` to be non-zero and to divide `heads`.
    #[error("heads = {heads} is not a multiple of kv_heads = {kv_heads} (kv_heads must be non-zero)")]
    KvHeadsMismatch {
        /// Query heads.
        heads: u32,
        /// Key/value heads.
        kv_heads: u32,
    },
    /// Attention over no positions would divide 0 by 0.
    #[error("attention over n = 0 cached positions")]
    NoPositions,
    /// The scores scratch rows are shorter than the positions attended over.
    #[error("n = {n} positions do not fit scores rows of scores_stride = {scores_stride}")]
    ScoresStrideTooSmall {
        /// Positions attended over.
        n: u32,
        /// Floats per scores row.
        scores_stride: u32,
    },
    /// Byte `offset` of argument `arg` has no 64-bit address.
    #[error("argument {arg}: byte {offset} past base {base:#x} lies beyond the end of the address space")]
    ByteAddressOverflow {
        /// The pointer argument.
        arg: &'static str,
        /// Its value.
        base: u64,
        /// The byte offset.
        offset: u64,
    },
    /// A sliding attention window holds no position (`first >= n`, or a window of 0): attention
    /// over it would divide 0 by 0.
    #[error("the attention window {first}..{n} holds no position")]
    EmptyWindow {
        /// The window's first position.
        first: u32,
        /// The position it ends before.
        n: u32,
    },
}

/// A validated one-dimensional launch.
#[derive(Clone, Copy, Debug)]
struct Grid {
    /// Work-items in x.
    size_x: u32,
    /// Work-items per work-group in x.
    workgroup_x: u32,
}

impl Grid {
    /// Checks the geometry every kernel relies on, and the kernarg's group size where the kernel
    /// reads it.
    fn new(launch: &Launch<'_>, sig: &Signature) -> Result<Self, KernelError> {
        let Launch { grid_size, workgroup_size, .. } = *launch;
        if grid_size.contains(&0) || workgroup_size.contains(&0) {
            return Err(KernelError::ZeroDimension { grid_size, workgroup_size });
        }
        if grid_size[1..] != [1, 1] || workgroup_size[1..] != [1, 1] {
            return Err(KernelError::NotOneDimensional { grid_size, workgroup_size });
        }
        let workgroup_size_x = workgroup_size[0];
        if workgroup_size_x > sig.max_flat_workgroup_size {
            return Err(KernelError::WorkgroupTooLarge { workgroup_size_x, limit: sig.max_flat_workgroup_size });
        }
        if let Some(offset) = sig.hidden_group_size_x {
            let kernarg = launch::read_u16(launch.kernarg, offset)?;
            if kernarg != workgroup_size_x {
                return Err(KernelError::GroupSizeMismatch { kernarg, dispatch: workgroup_size_x });
            }
        }
        Ok(Self { size_x: grid_size[0], workgroup_x: u32::from(workgroup_size_x) })
    }

    /// Work-groups in x (the last one possibly partial).
    fn workgroups(self) -> u32 {
        self.size_x.div_ceil(self.workgroup_x)
    }

    /// The work-items `[first, end)` of every work-group that has any below `active`, in
    /// ascending order (`active` at most the grid size).
    fn chunks_below(self, active: u32) -> impl Iterator<Item = (u32, u32)> {
        let active = active.min(self.size_x);
        let step = widen(self.workgroup_x);
        (0..active).step_by(step).map(move |first| (first, first.saturating_add(self.workgroup_x).min(active)))
    }
}

// The references index host buffers with `u32` work-item ids and element counts.
const _: () = assert!(usize::BITS >= 32 && usize::BITS <= 64);

/// A `u32` count as `usize` (lossless: asserted above).
fn widen(v: u32) -> usize {
    // CAST: usize has at least 32 bits (asserted above).
    v as usize
}

/// A `usize` count as `u64` (lossless: asserted above).
fn widen_usize(v: usize) -> u64 {
    // CAST: usize has at most 64 bits (asserted above).
    v as u64
}

/// The address of `f32` element `index` of the array at `base`.
fn element_address(arg: &ArgDecl, base: u64, index: u64) -> Result<u64, KernelError> {
    index.checked_mul(4).and_then(|offset| base.checked_add(offset)).ok_or(KernelError::AddressOverflow {
        arg: arg.name,
        base,
        index,
    })
}

/// Reads `out.len()` elements starting at element `first` of argument `arg` (one access).
fn load(memory: &dyn DeviceMemory, arg: &ArgDecl, base: u64, first: u64, out: &mut [u32]) -> Result<(), KernelError> {
    if out.is_empty() {
        return Ok(());
    }
    let address = element_address(arg, base, first)?;
    memory.read_u32s(address, out).map_err(|fault| KernelError::Memory { arg: arg.name, fault })
}

/// Whether the byte ranges `[a, a + a_len)` and `[b, b + b_len)` share a byte (ends saturate).
fn overlaps((a, a_len): (u64, u64), (b, b_len): (u64, u64)) -> bool {
    a < b.saturating_add(b_len) && b < a.saturating_add(a_len)
}

/// Lent bytes as the little-endian `f32` values they hold, bit for bit.
fn f32s_of(bytes: &[u8]) -> Vec<f32> {
    bytes.as_chunks::<4>().0.iter().map(|b| f32::from_le_bytes(*b)).collect()
}

/// Writes `data` starting at element `first` of argument `arg` (one access).
fn store(memory: &mut dyn DeviceMemory, arg: &ArgDecl, base: u64, first: u64, data: &[u32]) -> Result<(), KernelError> {
    if data.is_empty() {
        return Ok(());
    }
    let address = element_address(arg, base, first)?;
    memory.write_u32s(address, data).map_err(|fault| KernelError::Memory { arg: arg.name, fault })
}

/// Writes `data` starting at element `first` of argument `arg`, where the kernel's work-groups
/// store it in the consecutive `pieces` (element ranges of `data`, in order, covering it): in one
/// access when the address space says it would succeed ([`DeviceMemory::writable`]), which
/// writes the same bytes; otherwise piece by piece, so that the pieces before the first faulting
/// one are written and its fault is the one reported, as the work-groups' stores give.
fn store_pieces(
    memory: &mut dyn DeviceMemory,
    arg: &ArgDecl,
    (base, first): (u64, u64),
    data: &[u32],
    pieces: impl Iterator<Item = std::ops::Range<usize>>,
) -> Result<(), KernelError> {
    let whole = element_address(arg, base, first)
        .ok()
        .zip(data.len().checked_mul(4))
        .is_some_and(|(address, len)| memory.writable(address, len));
    if whole {
        return store(memory, arg, base, first, data);
    }
    for piece in pieces {
        store(memory, arg, base, first + widen_usize(piece.start), &data[piece])?;
    }
    Ok(())
}

/// Reads `count` elements starting at element `first` of argument `arg` in chunks of
/// [`READ_CHUNK_ELEMENTS`], growing the result only as reads succeed.
fn load_f32_vec(
    memory: &dyn DeviceMemory,
    arg: &ArgDecl,
    base: u64,
    first: u64,
    count: u64,
) -> Result<Vec<f32>, KernelError> {
    let mut values: Vec<f32> = Vec::new();
    let mut done = 0u64;
    while done < count {
        let n = usize::try_from(count - done).map_or(READ_CHUNK_ELEMENTS, |left| left.min(READ_CHUNK_ELEMENTS));
        let index =
            first.checked_add(done).ok_or(KernelError::AddressOverflow { arg: arg.name, base, index: first })?;
        let address = element_address(arg, base, index)?;
        let start = values.len();
        values.resize(start + n, 0.0);
        memory
            .read_f32s(address, &mut values[start..])
            .map_err(|fault| KernelError::Memory { arg: arg.name, fault })?;
        done += widen_usize(n);
    }
    Ok(values)
}

/// `count` elements from element `first` of argument `arg` as the address space lends them
/// ([`DeviceMemory::view`], one read access of the range), without a copy, when it lends them at
/// an address aligned for `f32` on a little-endian host; else read ([`load_f32_vec`], which
/// reports any fault). The same values either way.
fn lend_f32s<'m>(
    memory: &'m dyn DeviceMemory,
    arg: &ArgDecl,
    base: u64,
    first: u64,
    count: u64,
) -> Result<std::borrow::Cow<'m, [f32]>, KernelError> {
    use zerocopy::FromBytes;
    let lent = || {
        let len = usize::try_from(count.checked_mul(4)?).ok()?;
        let bytes = memory.view(element_address(arg, base, first).ok()?, len)?;
        <[f32]>::ref_from_bytes(bytes).ok().filter(|_| cfg!(target_endian = "little"))
    };
    match lent() {
        Some(values) => Ok(std::borrow::Cow::Borrowed(values)),
        None => load_f32_vec(memory, arg, base, first, count).map(std::borrow::Cow::Owned),
    }
}

/// Reads `out.len()` bytes at byte `offset` of argument `arg` (one access).
fn load_bytes(
    memory: &dyn DeviceMemory,
    arg: &ArgDecl,
    base: u64,
    offset: u64,
    out: &mut [u8],
) -> Result<(), KernelError> {
    if out.is_empty() {
        return Ok(());
    }
    let address = base.checked_add(offset).ok_or(KernelError::ByteAddressOverflow { arg: arg.name, base, offset })?;
    memory.read(address, out).map_err(|fault| KernelError::Memory { arg: arg.name, fault })
}

/// Sums `lds` in place as the kernels' LDS tree does: for `stride = len / 2, len / 4, ..., 1`,
/// slot `t < stride` adds slot `t + stride`; the result is slot 0. `lds.len()` must be a power
/// of two.
fn tree_reduce(lds: &mut [f32]) -> f32 {
    debug_assert!(lds.len().is_power_of_two());
    let mut stride = lds.len() / 2;
    while stride > 0 {
        for t in 0..stride {
            lds[t] += lds[t + stride];
        }
        stride /= 2;
    }
    lds.first().copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_reduce_pairs_by_halving_strides() {
        // 2^24 + 1 rounds back to 2^24, so the pairing decides the result: the tree adds
        // (2^24 + 1) + (1 + 1) = 2^24 + 2, a left-to-right sum would give 2^24.
        let mut lds = [16_777_216.0, 1.0, 1.0, 1.0];
        assert_eq!(tree_reduce(&mut lds), 16_777_218.0);
        assert_eq!(tree_reduce(&mut [3.5]), 3.5);
    }

    #[test]
    fn element_addresses_are_overflow_checked() {
        let arg = kernels::signature::fill::OUT;
        assert_eq!(element_address(&arg, 0x1000, 3), Ok(0x100c));
        assert_eq!(element_address(&arg, u64::MAX - 3, 0), Ok(u64::MAX - 3));
        assert_eq!(
            element_address(&arg, u64::MAX - 3, 1),
            Err(KernelError::AddressOverflow { arg: "out", base: u64::MAX - 3, index: 1 })
        );
        assert!(element_address(&arg, 0, u64::MAX / 2).is_err());
    }

    #[test]
    fn chunks_follow_work_groups() {
        let g = Grid { size_x: 10, workgroup_x: 4 };
        assert_eq!(g.workgroups(), 3);
        assert_eq!(g.chunks_below(10).collect::<Vec<_>>(), [(0, 4), (4, 8), (8, 10)]);
        assert_eq!(g.chunks_below(6).collect::<Vec<_>>(), [(0, 4), (4, 6)]);
        assert_eq!(g.chunks_below(99).collect::<Vec<_>>(), [(0, 4), (4, 8), (8, 10)]);
        assert_eq!(g.chunks_below(0).count(), 0);
        let big = Grid { size_x: u32::MAX, workgroup_x: 1024 };
        assert_eq!(big.chunks_below(u32::MAX).last(), Some((u32::MAX - 1023, u32::MAX)));
    }
}
