//! Whole quantised matrices at machine speed: the work-groups of `matvec_q4_1` and `matvec_q8_0`
//! over weights read in place ([`crate::memory::DeviceMemory::view`]).
//!
//! Every row is computed exactly as its work-group computes it (see [`super::matvec_q4_1`]): 32
//! partial sums, lane `t` accumulating blocks `t, t + 32, ...` element by element in the
//! kernel's order, each multiply and add rounded on its own (no fused multiply-add), then the
//! LDS tree. Rows are independent, so what changes here is only how many run at once:
//! - the vector path (x86-64 with AVX2 and F16C, detected at run time) keeps eight rows in the
//!   eight `f32` lanes of a 256-bit register, one register per work-item partial sum; the block
//!   scales are converted by `vcvtph2ps`, which is exact for every binary16 value as
//!   [`super::f16_to_f32`] is (a NaN comes back quiet with its payload);
//! - the scalar path computes one row at a time, and takes the rows the vector path leaves (a
//!   tail of fewer than eight rows, or every row on a machine without AVX2);
//! - rows are split across the machine's cores (rayon) when a matrix has enough blocks to pay
//!   for it.
//!
//! Both paths give the same bits for every row whose sum is a number (infinities and signed
//! zeros included); a row whose sum is NaN is NaN on both, with an unspecified payload: where two
//! NaNs meet in an add, which payload survives depends on the operand order the compiler picks
//! (it may commute an add), as on the GPU. The tests below hold the paths to each other on random
//! shapes and random block bytes (NaN, infinite and subnormal scales included).

use rayon::prelude::*;

use super::{LANES, QK};

/// The quantisation of a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// 20-byte blocks: `f16 d, f16 m, u8 qs[16]`.
    Q4_1,
    /// 34-byte blocks: `f16 d, i8 qs[32]`.
    Q8_0,
}

impl Kind {
    const fn block_bytes(self) -> usize {
        match self {
            Kind::Q4_1 => super::Q4_1_BLOCK_BYTES,
            Kind::Q8_0 => super::Q8_0_BLOCK_BYTES,
        }
    }

    /// `acc` plus the block's 32 products with `xs`, in the kernel's order.
    fn dot(self, acc: f32, block: &[u8], xs: &[f32]) -> f32 {
        match self {
            Kind::Q4_1 => super::dot_q4_1(acc, block, xs),
            Kind::Q8_0 => super::dot_q8_0(acc, block, xs),
        }
    }
}

/// Which implementation computes the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// The widest vector path the machine has, else the scalar path.
    Fastest,
    /// One vector path (where the machine has it; the scalar path otherwise).
    #[cfg_attr(not(test), allow(dead_code))]
    Vector(Isa),
    /// One row at a time.
    #[cfg_attr(not(test), allow(dead_code))]
    Scalar,
}

/// Rows handled by one parallel task: eight vector groups.
const TASK_ROWS: usize = 64;
/// Matrices with fewer blocks run on the calling thread (a task split costs more than it saves).
const PARALLEL_BLOCKS_MIN: usize = 4096;

/// `out[r]` = row `r` of the matrix `w` (`out.len()` rows of `blocks_per_row` blocks) times
/// `xs` (`32 * blocks_per_row` values), for every row, as the kernel's work-group `r` computes it.
pub(super) fn matvec(kind: Kind, w: &[u8], xs: &[f32], blocks_per_row: usize, out: &mut [f32], path: Path) {
    let row_bytes = blocks_per_row * kind.block_bytes();
    debug_assert_eq!(w.len(), out.len() * row_bytes);
    debug_assert_eq!(xs.len(), blocks_per_row * super::widen(QK));
    let task = |(index, rows): (usize, &mut [f32])| {
        let first = index * TASK_ROWS;
        rows_of(kind, &w[first * row_bytes..(first + rows.len()) * row_bytes], xs, blocks_per_row, rows, path);
    };
    if out.len() * blocks_per_row >= PARALLEL_BLOCKS_MIN {
        out.par_chunks_mut(TASK_ROWS).enumerate().for_each(task);
    } else {
        out.chunks_mut(TASK_ROWS).enumerate().for_each(task);
    }
}

/// The rows of `w` (`out.len()` of them) on the calling thread.
fn rows_of(kind: Kind, w: &[u8], xs: &[f32], blocks_per_row: usize, out: &mut [f32], path: Path) {
    let row_bytes = blocks_per_row * kind.block_bytes();
    let isa = match path {
        Path::Fastest => Isa::widest(),
        Path::Vector(isa) => Some(isa),
        Path::Scalar => None,
    };
    let done = isa.map_or(0, |isa| x86::rows(isa, kind, w, xs, blocks_per_row, out));
    for (r, y) in out.iter_mut().enumerate().skip(done) {
        *y = scalar_row(kind, &w[r * row_bytes..(r + 1) * row_bytes], xs);
    }
}

/// One row as its work-group computes it: lane `b % 32` adds block `b`, then the LDS tree.
fn scalar_row(kind: Kind, row: &[u8], xs: &[f32]) -> f32 {
    let mut partial = [0.0f32; LANES];
    let qk = super::widen(QK);
    for (b, (block, x)) in row.chunks_exact(kind.block_bytes()).zip(xs.chunks_exact(qk)).enumerate() {
        let lane = b % LANES;
        partial[lane] = kind.dot(partial[lane], block, x);
    }
    super::super::tree_reduce(&mut partial)
}

#[cfg(target_arch = "x86_64")]
mod x86;

use crate::cpu::simd::Isa;

#[cfg(not(target_arch = "x86_64"))]
mod x86 {
    pub(super) fn rows(isa: super::Isa, _: super::Kind, _: &[u8], _: &[f32], _: usize, _: &mut [f32]) -> usize {
        match isa {}
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn compare(kind: Kind, rows: usize, blocks_per_row: usize, bytes: &[u8], xs: &[f32]) {
        let w: Vec<u8> = bytes.iter().cycle().take(rows * blocks_per_row * kind.block_bytes()).copied().collect();
        let xs: Vec<f32> = xs.iter().cycle().take(blocks_per_row * 32).copied().collect();
        let mut scalar = vec![0.0; rows];
        matvec(kind, &w, &xs, blocks_per_row, &mut scalar, Path::Scalar);
        for path in vector_paths() {
            let mut fast = vec![0.0; rows];
            matvec(kind, &w, &xs, blocks_per_row, &mut fast, path);
            for (r, (f, s)) in fast.iter().zip(&scalar).enumerate() {
                let same = f.to_bits() == s.to_bits() || (f.is_nan() && s.is_nan());
                assert!(
                    same,
                    "{path:?} {kind:?} row {r} of {rows} x {blocks_per_row} blocks: {f:e} ({:#x}) vs {s:e} ({:#x})",
                    f.to_bits(),
                    s.to_bits()
                );
            }
        }
    }

    /// Every vector path this machine has, and the dispatching one.
    fn vector_paths() -> Vec<Path> {
        crate::cpu::simd::available_for_tests().into_iter().map(Path::Vector).chain([Path::Fastest]).collect()
    }

    fn value() -> impl Strategy<Value = f32> {
        prop_oneof![
            8 => -4.0f32..4.0,
            1 => any::<u32>().prop_map(f32::from_bits),
            1 => Just(-0.0f32),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn the_vector_path_gives_the_scalar_paths_bits(
            q8 in any::<bool>(),
            rows in 1usize..90,
            blocks_per_row in 1usize..80,
            bytes in proptest::collection::vec(any::<u8>(), 1..400),
            xs in proptest::collection::vec(value(), 1..200),
        ) {
            compare(if q8 { Kind::Q8_0 } else { Kind::Q4_1 }, rows, blocks_per_row, &bytes, &xs);
        }
    }

    #[test]
    fn a_matrix_large_enough_to_split_across_cores_gives_the_same_bits() {
        // 200 rows of 48 blocks: over PARALLEL_BLOCKS_MIN, with a ragged last task and a tail
        // of rows below a vector group.
        let bytes: Vec<u8> = (0u32..997).map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()[2]).collect();
        let xs: Vec<f32> = (0..61u8).map(|i| (f32::from(i) - 30.0) / 7.0).collect();
        for kind in [Kind::Q4_1, Kind::Q8_0] {
            compare(kind, 203, 48, &bytes, &xs);
        }
    }

    #[test]
    fn special_scales_convert_as_the_scalar_conversion_does() {
        // Every f16 bit pattern as d (and m), in blocks of eight rows.
        for kind in [Kind::Q4_1, Kind::Q8_0] {
            let block_bytes = kind.block_bytes();
            let rows = 8192;
            let mut w = vec![0u8; rows * block_bytes];
            for (r, block) in w.chunks_exact_mut(block_bytes).enumerate() {
                let bits = u16::try_from(r * 8).unwrap_or(0).to_le_bytes();
                block[0..2].copy_from_slice(&bits);
                block[2..4].copy_from_slice(&[bits[1], bits[0]]);
                for (j, q) in block[4..].iter_mut().enumerate() {
                    *q = u8::try_from((r + j * 37) % 256).unwrap_or(0);
                }
            }
            let xs: Vec<f32> = (0..32u8).map(|j| f32::from(j) * 0.25 - 3.0).collect();
            let mut scalar = vec![0.0; rows];
            matvec(kind, &w, &xs, 1, &mut scalar, Path::Scalar);
            let key = |v: &f32| if v.is_nan() { None } else { Some(v.to_bits()) };
            for path in vector_paths() {
                let mut fast = vec![0.0; rows];
                matvec(kind, &w, &xs, 1, &mut fast, path);
                assert_eq!(
                    fast.iter().map(key).collect::<Vec<_>>(),
                    scalar.iter().map(key).collect::<Vec<_>>(),
                    "{path:?} {kind:?}"
                );
            }
        }
    }
}
