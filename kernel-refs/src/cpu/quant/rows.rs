//! Whole quantised matrices at machine speed: the work-groups of `matvec_q4_1` and `matvec_q8_0`
//! over weights the address space lends ([`crate::memory::DeviceMemory::view`]), in a layout
//! made for vector registers that the address space keeps with the weights
//! ([`crate::memory::DeviceMemory::derived`]).
//!
//! Every row is computed exactly as its work-group computes it (see [`super::matvec_q4_1`]): 32
//! partial sums, lane `t` adding blocks `t, t + 32, ...` in the kernel's operations and order
//! (per block two chains of fused multiply-adds on the quants, then the scales), then the LDS
//! tree. A Q4_1 block's `sx` depends on `x` alone: it is computed once per block and product
//! ([`super::block_x_sum`]) and shared by every row. Rows are independent, so what changes here
//! is only how many run at once:
//! - the vector paths (x86-64 with AVX2, FMA and F16C, or AVX-512, detected at run time) keep
//!   eight or sixteen rows in the `f32` lanes of a register, one register per work-item partial
//!   sum, over the matrix [packed](Layout::pack) so that one load gives one element of every row
//!   of a group; the block scales are converted by `vcvtph2ps`, which is exact for every binary16
//!   value as [`super::f16_to_f32`] is (a NaN comes back quiet with its payload);
//! - the scalar path computes one row at a time over the matrix as it is, and takes the rows the
//!   vector path leaves (a tail of fewer rows than a group, or every row on a machine without the
//!   vector instruction sets);
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

    /// Bytes of a block's scales: `d` (and `m`).
    const fn scale_bytes(self) -> usize {
        match self {
            Kind::Q4_1 => 4,
            Kind::Q8_0 => 2,
        }
    }

    /// `acc` plus the block's product with `xs`, in the kernel's order; `sx` is the block's
    /// [`super::block_x_sum`] (read for Q4_1 only).
    fn dot(self, acc: f32, block: &[u8], xs: &[f32], sx: f32) -> f32 {
        match self {
            Kind::Q4_1 => super::dot_q4_1_with_sum(acc, block, xs, sx),
            Kind::Q8_0 => super::dot_q8_0(acc, block, xs),
        }
    }

    /// Each block's `sx` of `xs` for Q4_1 ([`super::block_x_sum`]); none for Q8_0.
    fn block_sums(self, xs: &[f32]) -> Vec<f32> {
        match self {
            Kind::Q4_1 => xs.chunks_exact(super::widen(QK)).map(super::block_x_sum).collect(),
            Kind::Q8_0 => Vec::new(),
        }
    }
}

/// How a matrix of one quantisation and width is laid out for one path, and computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) kind: Kind,
    pub(super) blocks_per_row: usize,
    /// The vector path; `None` for the scalar path (the matrix as it is).
    pub(super) isa: Option<Isa>,
}

/// Bytes after a packed matrix: the 16-row Q4_1 path's loads of a block's last columns read up
/// to 3 bytes past the block.
const PADDING: usize = crate::memory::FORM_SLACK;

/// Rows handled by one parallel task: a whole number of groups of every vector path.
const TASK_ROWS: usize = 64;
/// Matrices with fewer blocks run on the calling thread (a task split costs more than it saves).
const PARALLEL_BLOCKS_MIN: usize = 4096;

impl Layout {
    /// The widest path this machine has, for matrices of `kind` with `blocks_per_row` blocks a row.
    pub(super) fn fastest(kind: Kind, blocks_per_row: usize) -> Self {
        Self { kind, blocks_per_row, isa: Isa::widest() }
    }

    /// The vector path, if this machine has it (a layout naming one it lacks is the scalar
    /// path's).
    fn vector(self) -> Option<Isa> {
        self.isa.filter(|isa| isa.available())
    }

    /// Rows a group of the vector path holds (one row for the scalar path).
    pub(super) fn group_rows(self) -> usize {
        self.vector().map_or(1, x86::rows_per_register)
    }

    const fn row_bytes(self) -> usize {
        self.blocks_per_row * self.kind.block_bytes()
    }

    /// The key under which the address space keeps this layout of a matrix: one per
    /// quantisation, width and path.
    pub(super) fn key(self) -> u64 {
        let kind = match self.kind {
            Kind::Q4_1 => 1,
            Kind::Q8_0 => 2,
        };
        let width = u64::try_from(self.group_rows()).unwrap_or(0);
        let blocks = u64::try_from(self.blocks_per_row).unwrap_or(u64::MAX >> 16);
        (blocks << 16) | (width << 4) | kind
    }

    /// The matrix `w` (whole rows) laid out for this path, in as many bytes and [`PADDING`]
    /// more. Rows are taken in groups of [`Layout::group_rows`]; each group keeps its place and
    /// its bytes, ordered block by block: the block's `d` of every row of the group (`f16`, row
    /// order), for Q4_1 its `m` of every row, then its quant bytes as columns: byte `j` of every
    /// row of the group, for each `j`; in the 16-row Q4_1 layout, four columns at a time, four
    /// bytes of a row together (bytes `4c..4c + 4` of every row, row order, for each `c`), so that
    /// one unaligned load puts any column in the low bytes of the rows' lanes. Rows after the
    /// last whole group are left as they are (the scalar path reads them). The scalar path's
    /// layout is the matrix itself.
    pub(super) fn pack(self, w: &[u8]) -> Vec<u8> {
        let mut packed = w.to_vec();
        packed.resize(w.len() + PADDING, 0);
        let (n, row_bytes, block_bytes) = (self.group_rows(), self.row_bytes(), self.kind.block_bytes());
        if n == 1 || row_bytes == 0 {
            return packed;
        }
        let scales = self.kind.scale_bytes();
        let quads = n == 16 && self.kind == Kind::Q4_1;
        let groups = w.par_chunks_exact(n * row_bytes).zip(packed.par_chunks_exact_mut(n * row_bytes));
        groups.for_each(|(from, to)| {
            for (b, to) in to.chunks_exact_mut(n * block_bytes).enumerate() {
                for r in 0..n {
                    let block = &from[r * row_bytes + b * block_bytes..][..block_bytes];
                    for half in 0..scales / 2 {
                        to[half * 2 * n + 2 * r..][..2].copy_from_slice(&block[2 * half..2 * half + 2]);
                    }
                    for (j, &q) in block[scales..].iter().enumerate() {
                        let at = if quads { j / 4 * 4 * n + 4 * r + j % 4 } else { j * n + r };
                        to[scales * n + at] = q;
                    }
                }
            }
        });
        packed
    }

    /// `out[r]` = row `r` of the matrix times `xs` (`32 * blocks_per_row` values) for every row
    /// (`out.len()` of them), as the kernel's work-group `r` computes it; `packed` is the matrix
    /// in this layout ([`Layout::pack`]).
    pub(super) fn matvec(self, packed: &[u8], xs: &[f32], out: &mut [f32]) {
        let row_bytes = self.row_bytes();
        debug_assert!(packed.len() >= out.len() * row_bytes);
        debug_assert_eq!(xs.len(), self.blocks_per_row * super::widen(QK));
        let sums = self.kind.block_sums(xs);
        let task = |(index, rows): (usize, &mut [f32])| {
            let first = index * TASK_ROWS;
            // The task's rows and every byte after them: the vector paths prefetch ahead.
            self.rows_of(&packed[first * row_bytes..], xs, &sums, rows);
        };
        if out.len() * self.blocks_per_row >= PARALLEL_BLOCKS_MIN {
            out.par_chunks_mut(TASK_ROWS).enumerate().for_each(task);
        } else {
            out.chunks_mut(TASK_ROWS).enumerate().for_each(task);
        }
    }

    /// The rows of `packed` (`out.len()` of them, starting with a whole group, and any bytes
    /// after them) on the calling thread; `sums` is [`Kind::block_sums`] of `xs`.
    fn rows_of(self, packed: &[u8], xs: &[f32], sums: &[f32], out: &mut [f32]) {
        let row_bytes = self.row_bytes();
        let done = self.vector().map_or(0, |isa| x86::rows(isa, self.kind, packed, xs, sums, self.blocks_per_row, out));
        for (r, y) in out.iter_mut().enumerate().skip(done) {
            *y = scalar_row(self.kind, &packed[r * row_bytes..(r + 1) * row_bytes], xs, sums);
        }
    }
}

/// One row as its work-group computes it: lane `b % 32` adds block `b`, then the LDS tree.
fn scalar_row(kind: Kind, row: &[u8], xs: &[f32], sums: &[f32]) -> f32 {
    let mut partial = [0.0f32; LANES];
    let qk = super::widen(QK);
    for (b, (block, x)) in row.chunks_exact(kind.block_bytes()).zip(xs.chunks_exact(qk)).enumerate() {
        let lane = b % LANES;
        partial[lane] = kind.dot(partial[lane], block, x, sums.get(b).copied().unwrap_or(0.0));
    }
    super::super::tree_reduce(&mut partial)
}

#[cfg(target_arch = "x86_64")]
mod x86;

use crate::cpu::simd::Isa;

#[cfg(not(target_arch = "x86_64"))]
mod x86 {
    pub(super) fn rows(
        isa: super::Isa,
        _: super::Kind,
        _: &[u8],
        _: &[f32],
        _: &[f32],
        _: usize,
        _: &mut [f32],
    ) -> usize {
        match isa {}
    }

    pub(super) fn rows_per_register(isa: super::Isa) -> usize {
        match isa {}
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The rows of the `rows` x `blocks_per_row` matrix made of `bytes` (repeated) times `xs`
    /// (repeated), by `layout`'s path.
    fn product(layout: Layout, rows: usize, bytes: &[u8], xs: &[f32]) -> Vec<f32> {
        let w: Vec<u8> = bytes.iter().cycle().take(rows * layout.row_bytes()).copied().collect();
        let xs: Vec<f32> = xs.iter().cycle().take(layout.blocks_per_row * 32).copied().collect();
        let mut out = vec![0.0; rows];
        layout.matvec(&layout.pack(&w), &xs, &mut out);
        out
    }

    fn compare(kind: Kind, rows: usize, blocks_per_row: usize, bytes: &[u8], xs: &[f32]) {
        let scalar = product(Layout { kind, blocks_per_row, isa: None }, rows, bytes, xs);
        for isa in vector_paths() {
            let fast = product(Layout { kind, blocks_per_row, isa }, rows, bytes, xs);
            for (r, (f, s)) in fast.iter().zip(&scalar).enumerate() {
                let same = f.to_bits() == s.to_bits() || (f.is_nan() && s.is_nan());
                assert!(
                    same,
                    "{isa:?} {kind:?} row {r} of {rows} x {blocks_per_row} blocks: {f:e} ({:#x}) vs {s:e} ({:#x})",
                    f.to_bits(),
                    s.to_bits()
                );
            }
        }
    }

    /// Every vector path this machine has, and the fastest.
    fn vector_paths() -> Vec<Option<Isa>> {
        crate::cpu::simd::available_for_tests().into_iter().map(Some).chain([Isa::widest()]).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn the_vector_path_gives_the_scalar_paths_bits(
            q8 in any::<bool>(),
            rows in 1usize..90,
            blocks_per_row in 1usize..80,
            bytes in proptest::collection::vec(any::<u8>(), 1..400),
            xs in proptest::collection::vec(crate::cpu::simd::test_value(), 1..200),
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
            let scalar = product(Layout { kind, blocks_per_row: 1, isa: None }, rows, &w, &xs);
            let key = |v: &f32| if v.is_nan() { None } else { Some(v.to_bits()) };
            for isa in vector_paths() {
                let fast = product(Layout { kind, blocks_per_row: 1, isa }, rows, &w, &xs);
                assert_eq!(
                    fast.iter().map(key).collect::<Vec<_>>(),
                    scalar.iter().map(key).collect::<Vec<_>>(),
                    "{isa:?} {kind:?}"
                );
            }
        }
    }
}
