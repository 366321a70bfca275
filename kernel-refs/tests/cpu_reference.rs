//! Every CPU reference against a straightforward `f64` computation of what its HIP kernel
//! computes, over partial work-groups and counts that are not a multiple of the work-group size.
//!
//! Element-wise kernels are compared bit for bit: one IEEE operation on two `f32` values computed
//! in `f64` and rounded to `f32` gives the correctly rounded `f32` result (53 >= 2 * 24 + 2), so
//! the expected values are exact. Reductions are compared within an error bound, and against
//! hand-derived values where the kernel's summation order decides the result.

mod common;

use common::{Kernarg, Recorder, Rng, SENTINEL, buffer, f32_of, launch_1d, read_bits, run, sentinel_buffer};
use kernel_refs::cpu::{self, CpuReference};
use kernel_refs::launch::Launch;
use kernel_refs::memory::HostMemory;
use kernels::signature;

const OUT: u64 = 0x10_0000;
const IN_A: u64 = 0x20_0000;
const IN_B: u64 = 0x30_0000;

/// `(n, grid_size_x, workgroup_size_x)`: a partial last work-group, whole groups past `n`, a grid
/// shorter than `n`, one-item groups, and a grid of one partial group.
const SHAPES: [(u32, u32, u16); 6] =
    [(1000, 1000, 256), (1000, 1024, 256), (1000, 600, 64), (37, 37, 1), (5, 3, 1024), (300, 512, 96)];

/// `out[i]` for `i < min(n, grid)`, the sentinel elsewhere (guard elements included).
fn expect_elements(n: u32, grid: u32, len: usize, f: impl Fn(usize) -> f32) -> Vec<u32> {
    let active = n.min(grid) as usize;
    (0..len + common::GUARD).map(|i| if i < active { f(i).to_bits() } else { SENTINEL }).collect()
}

#[test]
fn fill_writes_value_bits_below_min_n_grid() {
    for (n, grid, wg) in SHAPES {
        let value = f32::from_bits(0xc0a0_0001); // -5.0000005: any bits go through untouched
        let len = n as usize;
        let mut memory = HostMemory::new();
        sentinel_buffer(&mut memory, OUT, len);
        let k = Kernarg::new(&signature::FILL).ptr("out", OUT).f32("value", value).u32("n", n).group_size(wg).bytes();
        run(cpu::fill, &launch_1d(&k, grid, wg), &mut memory);
        assert_eq!(read_bits(&memory, OUT, len), expect_elements(n, grid, len, |_| value), "n {n} grid {grid} wg {wg}");
    }
}

#[test]
fn copy_moves_exact_bits() {
    for (n, grid, wg) in SHAPES {
        let len = n as usize;
        let mut rng = Rng(u64::from(n));
        // Raw bit patterns, NaNs and denormals included.
        let src: Vec<f32> = (0..len).map(|_| f32::from_bits(u32::try_from(rng.next_u64() >> 32).unwrap())).collect();
        let mut memory = HostMemory::new();
        sentinel_buffer(&mut memory, OUT, len);
        buffer(&mut memory, IN_A, &src);
        let k = Kernarg::new(&signature::COPY).ptr("dst", OUT).ptr("src", IN_A).u32("n", n).group_size(wg).bytes();
        run(cpu::copy, &launch_1d(&k, grid, wg), &mut memory);
        assert_eq!(
            read_bits(&memory, OUT, len),
            expect_elements(n, grid, len, |i| src[i]),
            "n {n} grid {grid} wg {wg}"
        );
    }
}

#[test]
fn scale_multiplies_once() {
    for (n, grid, wg) in SHAPES {
        let len = n as usize;
        let mut rng = Rng(7 + u64::from(n));
        let x = rng.f32s(len, -1e3, 1e3);
        let s = -0.3f32;
        let mut memory = HostMemory::new();
        sentinel_buffer(&mut memory, OUT, len);
        buffer(&mut memory, IN_A, &x);
        let k = Kernarg::new(&signature::SCALE)
            .ptr("out", OUT)
            .ptr("x", IN_A)
            .f32("s", s)
            .u32("n", n)
            .group_size(wg)
            .bytes();
        run(cpu::scale, &launch_1d(&k, grid, wg), &mut memory);
        let expected = expect_elements(n, grid, len, |i| f32_of(f64::from(s) * f64::from(x[i])));
        assert_eq!(read_bits(&memory, OUT, len), expected, "n {n} grid {grid} wg {wg}");
    }
}

fn binary(cpu: CpuReference, sig: &'static signature::Signature, op: fn(f64, f64) -> f64) {
    for (n, grid, wg) in SHAPES {
        let len = n as usize;
        let mut rng = Rng(11 + u64::from(n));
        let (a, b) = (rng.f32s(len, -1e4, 1e4), rng.f32s(len, -1e-2, 1e-2));
        let mut memory = HostMemory::new();
        sentinel_buffer(&mut memory, OUT, len);
        buffer(&mut memory, IN_A, &a);
        buffer(&mut memory, IN_B, &b);
        let k = Kernarg::new(sig).ptr("out", OUT).ptr("a", IN_A).ptr("b", IN_B).u32("n", n).group_size(wg).bytes();
        run(cpu, &launch_1d(&k, grid, wg), &mut memory);
        let expected = expect_elements(n, grid, len, |i| f32_of(op(f64::from(a[i]), f64::from(b[i]))));
        assert_eq!(read_bits(&memory, OUT, len), expected, "{} n {n} grid {grid} wg {wg}", sig.name);
    }
}

#[test]
fn add_adds_once() {
    binary(cpu::add, &signature::ADD, |a, b| a + b);
}

#[test]
fn mul_multiplies_once() {
    binary(cpu::mul, &signature::MUL, |a, b| a * b);
}

#[test]
fn axpy_rounds_the_product_before_adding() {
    for (n, grid, wg) in SHAPES {
        let len = n as usize;
        let mut rng = Rng(13 + u64::from(n));
        let (x, y) = (rng.f32s(len, -10.0, 10.0), rng.f32s(len, -10.0, 10.0));
        let a = 1.1f32;
        let mut memory = HostMemory::new();
        buffer(&mut memory, OUT, &y);
        buffer(&mut memory, IN_A, &x);
        let k =
            Kernarg::new(&signature::AXPY).ptr("y", OUT).ptr("x", IN_A).f32("a", a).u32("n", n).group_size(wg).bytes();
        run(cpu::axpy, &launch_1d(&k, grid, wg), &mut memory);
        let active = n.min(grid) as usize;
        let expected: Vec<u32> = (0..len + common::GUARD)
            .map(|i| match i {
                i if i < active => {
                    let product = f32_of(f64::from(a) * f64::from(x[i]));
                    f32_of(f64::from(product) + f64::from(y[i])).to_bits()
                }
                i if i < len => y[i].to_bits(),
                _ => SENTINEL,
            })
            .collect();
        assert_eq!(read_bits(&memory, OUT, len), expected, "n {n} grid {grid} wg {wg}");
    }
}

#[test]
fn axpy_without_fma_differs_from_the_fused_result() {
    // a * x = 1 + 2^-12 + 2^-24 exactly; rounded to f32 it loses 2^-24, so a * x + y with
    // y = -(1 + 2^-12) is 0 unfused and 2^-24 fused. The kernel is built with -ffp-contract=off.
    let (a, x, y) = (1.0 + 2f32.powi(-12), 1.0 + 2f32.powi(-12), -(1.0 + 2f32.powi(-11)));
    let mut memory = HostMemory::new();
    buffer(&mut memory, OUT, &[y]);
    buffer(&mut memory, IN_A, &[x]);
    let k = Kernarg::new(&signature::AXPY).ptr("y", OUT).ptr("x", IN_A).f32("a", a).u32("n", 1).group_size(1).bytes();
    run(cpu::axpy, &launch_1d(&k, 1, 1), &mut memory);
    let fused = a.mul_add(x, y);
    assert_eq!(fused, 2f32.powi(-24));
    assert_eq!(read_bits(&memory, OUT, 1)[0], 0.0f32.to_bits());
}

#[test]
fn elementwise_in_place_matches_the_gpu() {
    // add with out == a == b: every work-item reads and writes only its own element, in a
    // dispatch on one thread and in one large enough to be split across cores.
    for (n, wg, seed) in [(700u32, 64u16, 3u64), (70_000, 256, 5)] {
        let a = Rng(seed).f32s(n as usize, -5.0, 5.0);
        let mut memory = HostMemory::new();
        buffer(&mut memory, OUT, &a);
        let k = Kernarg::new(&signature::ADD).ptr("out", OUT).ptr("a", OUT).ptr("b", OUT).u32("n", n).group_size(wg);
        run(cpu::add, &launch_1d(&k.bytes(), n, wg), &mut memory);
        let expected = expect_elements(n, n, n as usize, |i| f32_of(2.0 * f64::from(a[i])));
        assert_eq!(read_bits(&memory, OUT, n as usize), expected, "n = {n}");
    }
}

#[test]
fn an_elementwise_copy_onto_its_own_source_one_element_on_goes_work_group_by_work_group() {
    // dst = src + 1 element: a work-group reads what the one before it stored, as on the GPU
    // (each work-group's loads before its stores, work-groups in order).
    let (n32, wg16) = (300u32, 64u16);
    let (n, wg) = (n32 as usize, usize::from(wg16));
    let values: Vec<f32> = (0..=n32).map(|i| i as f32).collect();
    let mut memory = HostMemory::new();
    buffer(&mut memory, OUT, &values);
    let k = Kernarg::new(&signature::COPY).ptr("dst", OUT + 4).ptr("src", OUT).u32("n", n32).group_size(wg16).bytes();
    run(cpu::copy, &launch_1d(&k, n32, wg16), &mut memory);
    let mut expected = values.clone();
    for first in (0..n).step_by(wg) {
        let end = (first + wg).min(n);
        let loaded = expected[first..end].to_vec();
        expected[first + 1..end + 1].copy_from_slice(&loaded);
    }
    assert_eq!(read_bits(&memory, OUT, n + 1)[..n + 1], expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    // Element 65 is element 63's value, carried by work-group 0's store into work-group 1's load
    // (one copy of the whole range at once would give 64).
    assert_eq!((expected[64], expected[65]), (63.0, 63.0));
}

/// `f64` matrix-vector product and the bound `sum |a * x|` its `f32` evaluation is judged by.
fn matvec_f64(a: &[f32], x: &[f32], r: usize) -> (f64, f64) {
    let row = &a[r * x.len()..(r + 1) * x.len()];
    let exact = row.iter().zip(x).map(|(&a, &x)| f64::from(a) * f64::from(x)).sum();
    let magnitude = row.iter().zip(x).map(|(&a, &x)| (f64::from(a) * f64::from(x)).abs()).sum();
    (exact, magnitude)
}

#[test]
fn matvec_is_within_the_summation_bound() {
    // (rows, cols, grid, wg): partial last group, a grid shorter than rows, whole groups past rows.
    for (rows, cols, grid, wg) in [(300u32, 77u32, 300u32, 64u16), (300, 77, 128, 64), (10, 1000, 32, 32), (5, 0, 5, 1)]
    {
        let mut rng = Rng(u64::from(rows * 31 + cols));
        let a = rng.f32s((rows * cols) as usize, -1.0, 1.0);
        let x = rng.f32s(cols as usize, -1.0, 1.0);
        let mut memory = HostMemory::new();
        sentinel_buffer(&mut memory, OUT, rows as usize);
        buffer(&mut memory, IN_A, &a);
        buffer(&mut memory, IN_B, &x);
        let k = Kernarg::new(&signature::MATVEC)
            .ptr("y", OUT)
            .ptr("a", IN_A)
            .ptr("x", IN_B)
            .u32("rows", rows)
            .u32("cols", cols)
            .group_size(wg)
            .bytes();
        run(cpu::matvec, &launch_1d(&k, grid, wg), &mut memory);
        let got = read_bits(&memory, OUT, rows as usize);
        for (r, &bits) in got.iter().enumerate() {
            if r >= rows.min(grid) as usize {
                assert_eq!(bits, SENTINEL, "row {r} must not be written");
                continue;
            }
            let (exact, magnitude) = matvec_f64(&a, &x, r);
            let bound = f64::from(cols) * f64::from(f32::EPSILON) * magnitude;
            let y = f64::from(f32::from_bits(bits));
            assert!((y - exact).abs() <= bound, "rows {rows} cols {cols} row {r}: {y} vs {exact} (bound {bound})");
        }
    }
}

#[test]
fn matvec_accumulates_columns_in_ascending_order() {
    // 2^24 + 1 rounds to 2^24 (ties to even): ascending gives 2^24, the exact sum and a
    // descending order give 2^24 + 2.
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 1);
    buffer(&mut memory, IN_A, &[16_777_216.0, 1.0, 1.0]);
    buffer(&mut memory, IN_B, &[1.0, 1.0, 1.0]);
    let k = Kernarg::new(&signature::MATVEC)
        .ptr("y", OUT)
        .ptr("a", IN_A)
        .ptr("x", IN_B)
        .u32("rows", 1)
        .u32("cols", 3)
        .group_size(1)
        .bytes();
    run(cpu::matvec, &launch_1d(&k, 1, 1), &mut memory);
    assert_eq!(f32::from_bits(read_bits(&memory, OUT, 1)[0]), 16_777_216.0);
}

#[test]
fn matvec_rounds_each_product_before_adding() {
    // Column 1's product is 1 + 2^-11 + 2^-24, which rounds to 1 + 2^-11 (ties to even) and
    // cancels column 0 exactly; a fused multiply-add would keep 2^-24.
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 1);
    buffer(&mut memory, IN_A, &[-(1.0 + 2f32.powi(-11)), 1.0 + 2f32.powi(-12)]);
    buffer(&mut memory, IN_B, &[1.0, 1.0 + 2f32.powi(-12)]);
    let k = Kernarg::new(&signature::MATVEC)
        .ptr("y", OUT)
        .ptr("a", IN_A)
        .ptr("x", IN_B)
        .u32("rows", 1)
        .u32("cols", 2)
        .group_size(1)
        .bytes();
    run(cpu::matvec, &launch_1d(&k, 1, 1), &mut memory);
    assert_eq!(read_bits(&memory, OUT, 1)[0], 0.0f32.to_bits());
}

#[test]
fn block_sum_is_within_the_tree_bound_per_group() {
    // (n, grid, wg): n not a multiple of wg, whole groups past n (their sums are +0.0).
    for (n, grid, wg) in [(1000u32, 1024u32, 128u16), (1000, 2048, 256), (1, 1, 1), (4097, 8192, 1024)] {
        let x = Rng(u64::from(n) + 5).f32s(n as usize, -100.0, 100.0);
        let groups = (grid / u32::from(wg)) as usize;
        let mut memory = HostMemory::new();
        sentinel_buffer(&mut memory, OUT, groups);
        buffer(&mut memory, IN_A, &x);
        let k = Kernarg::new(&signature::BLOCK_SUM).ptr("out", OUT).ptr("x", IN_A).u32("n", n).group_size(wg).bytes();
        let launch = Launch { dynamic_lds_bytes: 4 * u32::from(wg), ..launch_1d(&k, grid, wg) };
        run(cpu::block_sum, &launch, &mut memory);
        let got = read_bits(&memory, OUT, groups);
        let wg = usize::from(wg);
        let depth = f64::from(wg.trailing_zeros());
        for (g, &bits) in got.iter().enumerate() {
            if g >= groups {
                assert_eq!(bits, SENTINEL, "guard {g}");
                continue;
            }
            let part = &x[(g * wg).min(x.len())..((g + 1) * wg).min(x.len())];
            let exact: f64 = part.iter().copied().map(f64::from).sum();
            let bound = depth * f64::from(f32::EPSILON) * part.iter().map(|v| f64::from(v.abs())).sum::<f64>();
            let sum = f64::from(f32::from_bits(bits));
            assert!((sum - exact).abs() <= bound, "n {n} group {g}: {sum} vs {exact}");
            if part.is_empty() {
                assert_eq!(bits, 0.0f32.to_bits(), "group {g} past n sums to +0.0");
            }
        }
    }
}

#[test]
fn block_sum_pairs_like_the_lds_tree() {
    // Stride 2: (2^24 + 1) + (1 + 1) = 2^24 + 2 (the first pair rounds to 2^24); a left-to-right
    // sum gives 2^24, the exact sum 2^24 + 3.
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 1);
    buffer(&mut memory, IN_A, &[16_777_216.0, 1.0, 1.0, 1.0]);
    let k = Kernarg::new(&signature::BLOCK_SUM).ptr("out", OUT).ptr("x", IN_A).u32("n", 4).group_size(4).bytes();
    run(cpu::block_sum, &Launch { dynamic_lds_bytes: 16, ..launch_1d(&k, 4, 4) }, &mut memory);
    assert_eq!(f32::from_bits(read_bits(&memory, OUT, 1)[0]), 16_777_218.0);
}

fn rmsnorm_kernarg(rows: u32, cols: u32, eps: f32) -> Vec<u8> {
    Kernarg::new(&signature::RMSNORM)
        .ptr("out", OUT)
        .ptr("x", IN_A)
        .ptr("weight", IN_B)
        .u32("rows", rows)
        .u32("cols", cols)
        .f32("eps", eps)
        .bytes()
}

#[test]
fn rmsnorm_is_within_the_error_bound() {
    // (rows, cols, grid): cols below, above and not a multiple of 256; more groups than rows; fewer
    // groups than rows (later rows untouched); a partial group past the last row.
    for (rows, cols, grid) in [(3u32, 1000u32, 768u32), (2, 100, 1024), (4, 256, 512), (1, 3000, 256), (2, 7, 600)] {
        let mut rng = Rng(u64::from(rows * 1000 + cols));
        let x = rng.f32s((rows * cols) as usize, -3.0, 3.0);
        let w = rng.f32s(cols as usize, 0.5, 1.5);
        let eps = 1e-5f32;
        let mut memory = HostMemory::new();
        sentinel_buffer(&mut memory, OUT, x.len());
        buffer(&mut memory, IN_A, &x);
        buffer(&mut memory, IN_B, &w);
        let k = rmsnorm_kernarg(rows, cols, eps);
        run(cpu::rmsnorm, &launch_1d(&k, grid, 256), &mut memory);
        let got = read_bits(&memory, OUT, x.len());
        let active_rows = rows.min(grid.div_ceil(256)) as usize;
        let cols = cols as usize;
        for (i, &bits) in got.iter().enumerate() {
            let (r, c) = (i / cols, i % cols);
            if r >= active_rows {
                assert_eq!(bits, SENTINEL, "element {i} must not be written");
                continue;
            }
            let row = &x[r * cols..(r + 1) * cols];
            let mean = row.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / cols as f64;
            let expected = f64::from(row[c]) / (mean + f64::from(eps)).sqrt() * f64::from(w[c]);
            let value = f64::from(f32::from_bits(bits));
            assert!((value - expected).abs() <= 4e-6 * expected.abs(), "row {r} col {c}: {value} vs {expected}");
        }
    }
}

#[test]
fn rmsnorm_sums_squares_per_work_item_then_by_the_tree() {
    // x[0] = 4096 (square 2^24), x[1..256] = 1, cols = 256, eps = 0, weight = 1.
    // Work-item t holds x[t]^2. The tree adds stride 128: p[0] = 2^24 + 1 -> 2^24 (ties to even),
    // p[1..128] = 2; stride 64: p[0] = 2^24 + 2, p[1..64] = 4; then + 4, + 8, + 16, + 32, + 64,
    // + 128: p[0] = 2^24 + 254 = 16777470, exact in f32. (Left to right gives 2^24, exact 2^24 + 255.)
    let sum = 16_777_470.0f64;
    let mean = f32_of(sum / 256.0);
    let root = f32_of(f64::from(mean).sqrt());
    let inv = f32_of(1.0 / f64::from(root));
    let left_to_right_inv = f32_of(1.0 / f64::from(f32_of((16_777_216.0f64 / 256.0).sqrt())));
    assert_ne!(inv, left_to_right_inv, "the test must tell the orders apart");

    let mut x = vec![1.0f32; 256];
    x[0] = 4096.0;
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 256);
    buffer(&mut memory, IN_A, &x);
    buffer(&mut memory, IN_B, &[1.0; 256]);
    let k = rmsnorm_kernarg(1, 256, 0.0);
    run(cpu::rmsnorm, &launch_1d(&k, 256, 256), &mut memory);
    let got = read_bits(&memory, OUT, 256);
    assert_eq!(f32::from_bits(got[0]), f32_of(4096.0 * f64::from(inv)));
    assert!(got[1..256].iter().all(|&b| f32::from_bits(b) == inv));
}

#[test]
fn rmsnorm_in_place_matches_the_gpu() {
    // out == x: each work-item reads and writes only its own columns of its own row.
    let (rows, cols) = (3u32, 300u32);
    let x = Rng(99).f32s((rows * cols) as usize, -2.0, 2.0);
    let w = vec![1.0f32; cols as usize];
    let mut expected_memory = HostMemory::new();
    sentinel_buffer(&mut expected_memory, OUT, x.len());
    buffer(&mut expected_memory, IN_A, &x);
    buffer(&mut expected_memory, IN_B, &w);
    let k = rmsnorm_kernarg(rows, cols, 1e-6);
    run(cpu::rmsnorm, &launch_1d(&k, rows * 256, 256), &mut expected_memory);

    let mut memory = HostMemory::new();
    buffer(&mut memory, IN_A, &x);
    buffer(&mut memory, IN_B, &w);
    let k = Kernarg::new(&signature::RMSNORM)
        .ptr("out", IN_A)
        .ptr("x", IN_A)
        .ptr("weight", IN_B)
        .u32("rows", rows)
        .u32("cols", cols)
        .f32("eps", 1e-6)
        .bytes();
    run(cpu::rmsnorm, &launch_1d(&k, rows * 256, 256), &mut memory);
    assert_eq!(read_bits(&memory, IN_A, x.len()), read_bits(&expected_memory, OUT, x.len()));
}

#[test]
fn rmsnorm_rounds_each_step_like_the_kernel() {
    // With two columns, work-items 0 and 1 hold one square each and every other LDS slot is 0, so
    // the sum is x0^2 + x1^2 with each square and the sum rounded to f32; then
    // mean = sum / 2, inv = 1 / sqrt(mean + eps), out = (x * inv) * w, each step rounded.
    let rows = 64u32;
    let mut rng = Rng(2024);
    let x = rng.f32s(2 * rows as usize, -4.0, 4.0);
    let w = rng.f32s(2, 0.1, 3.0);
    let eps = 1e-3f32;
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, x.len());
    buffer(&mut memory, IN_A, &x);
    buffer(&mut memory, IN_B, &w);
    let k = rmsnorm_kernarg(rows, 2, eps);
    run(cpu::rmsnorm, &launch_1d(&k, rows * 256, 256), &mut memory);
    let got = read_bits(&memory, OUT, x.len());
    let square = |v: f32| f32_of(f64::from(v) * f64::from(v));
    for (r, pair) in x.chunks(2).enumerate() {
        let sum = f32_of(f64::from(square(pair[0])) + f64::from(square(pair[1])));
        let mean = f32_of(f64::from(sum) / 2.0);
        let shifted = f32_of(f64::from(mean) + f64::from(eps));
        let root = f32_of(f64::from(shifted).sqrt());
        let inv = f32_of(1.0 / f64::from(root));
        for c in 0..2 {
            let expected = f32_of(f64::from(f32_of(f64::from(pair[c]) * f64::from(inv))) * f64::from(w[c]));
            assert_eq!(got[2 * r + c], expected.to_bits(), "row {r} col {c}");
        }
    }
}

/// An arena of `len` random floats (now and then any bit pattern) at `IN_A`.
fn arena(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    (0..len)
        .map(|_| {
            let v = rng.f32_in(-3.0, 3.0);
            // CAST: the top bits of a random u64, as raw f32 bits.
            #[allow(clippy::cast_possible_truncation)]
            let bits = (rng.next_u64() >> 32) as u32;
            if bits.is_multiple_of(97) { f32::from_bits(bits) } else { v }
        })
        .collect()
}

#[test]
fn rmsnorm_gives_the_row_loop_bits_from_lent_memory() {
    // HostMemory lends x and the weight (`view`), so a dispatch is computed at once where that
    // is what the rows one after another give; the recorder lends nothing, so the rows go one by
    // one. Layouts in one arena (offsets in floats): apart, in place, out over the weight, out
    // one row past x (the last two make each row read what the row before stored).
    let (rows, cols) = (5u32, 300u32);
    let (len, width) = ((rows * cols) as usize, cols as usize);
    let at = |floats: usize| IN_A + 4 * floats as u64;
    for (out, x, weight) in [(len, 0, 2 * len), (0, 0, 2 * len), (2 * len - 2 * width, 0, 2 * len), (width, 0, 2 * len)]
    {
        let values = arena(3 * len, 5);
        let k = Kernarg::new(&signature::RMSNORM)
            .ptr("out", at(out))
            .ptr("x", at(x))
            .ptr("weight", at(weight))
            .u32("rows", rows)
            .u32("cols", cols)
            .f32("eps", 1e-6)
            .bytes();
        let launch = launch_1d(&k, rows * 256, 256);
        let mut lent = HostMemory::new();
        buffer(&mut lent, IN_A, &values);
        run(cpu::rmsnorm, &launch, &mut lent);
        let mut copied = HostMemory::new();
        buffer(&mut copied, IN_A, &values);
        cpu::rmsnorm(&launch, &mut Recorder::new(&mut copied)).unwrap();
        assert_eq!(read_bits(&lent, IN_A, 3 * len), read_bits(&copied, IN_A, 3 * len), "out at {out}");
    }
}
