//! The batched prefill kernels (module `prefill`).
//!
//! 1. Bit identity, the kernels' contract: row `t` of every batched kernel against the
//!    single-token kernel run on row `t` alone (`matmul_q*` against `matvec_q*`, `get_rows_q8_0`
//!    against `get_row_q8_0`, `rope_rows` against `rope` at `pos0 + t`, `attention_rows` against
//!    `attention` over `pos0 + t + 1` positions), over random shapes with ragged tails (`n` not a
//!    multiple of any tile, rows not a multiple of a read chunk) and grids shorter than the work.
//! 2. Against plain `f64` math, within bounds derived from the `f32` error of each kernel's
//!    operation order (`u = 2^-24`, the unit roundoff; a sequential sum of `k` rounded terms is
//!    within `(k - 1) u` of the exact sum relative to the sum of the terms' magnitudes, a tree of
//!    `l` levels within `l u`):
//!    - `matmul_q*`: `(L + 8) u * sum_c |w[r][c] x[t][c]|`, `L = 32 * ceil(cols / 1024)` terms per
//!      work-item, 5 tree levels, the product's and the dequantised weight's rounding, and slack;
//!    - `get_rows_q8_0`: exact (`q * d` has at most 19 significant bits);
//!    - `rope_rows`: `3u (|x0 c| + |x1 s|)` per element (two products and a sum);
//!    - `attention_rows`: see [`attention_bounds`].
//! 3. Launch preconditions and faults are typed errors, before any store where the launch is at
//!    fault.
//! 4. The in-place (`DeviceMemory::view`) and copying weight reads give the same bits.

mod common;

use common::{
    GUARD, Kernarg, Matrix, Recorder, Rng, SENTINEL, buffer, f32_of, launch_1d, map_bytes, q4_1_matrix, q8_0_matrix,
    read_bits, rope_table, run, sentinel_buffer, u32_of,
};
use kernel_refs::cpu::{self, CpuReference, KernelError};
use kernel_refs::memory::{DeviceMemory, HostMemory};
use kernels::signature::{self, Signature};
use proptest::prelude::*;

const Y: u64 = 0x1_0000_0000;
const W: u64 = 0x2_0000_0000;
const X: u64 = 0x3_0000_0000;
const SINGLE: u64 = 0x4_0000_0000;
const TABLE: u64 = 0x5_0000_0000;
const K: u64 = 0x6_0000_0000;
const V: u64 = 0x7_0000_0000;
const SCORES: u64 = 0x8_0000_0000;
const SINGLE_SCORES: u64 = 0x9_0000_0000;

/// The unit roundoff of `f32`.
const U: f64 = 1.0 / 16_777_216.0;

/// Equal bits, or both NaN (NaN payloads are not part of the contract on raw weight bytes).
fn same(a: u32, b: u32) -> bool {
    a == b || (f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan())
}

/// A quantised matrix format and the kernels that use it.
struct Quant {
    batched: CpuReference,
    batched_sig: &'static Signature,
    single: CpuReference,
    single_sig: &'static Signature,
    /// `rows x cols` random blocks and the matrix they encode, in `f64`.
    matrix: fn(&mut Rng, usize, usize) -> Matrix,
}

const Q4_1: Quant = Quant {
    batched: cpu::matmul_q4_1,
    batched_sig: &signature::MATMUL_Q4_1,
    single: cpu::matvec_q4_1,
    single_sig: &signature::MATVEC_Q4_1,
    matrix: q4_1_matrix,
};
const Q8_0: Quant = Quant {
    batched: cpu::matmul_q8_0,
    batched_sig: &signature::MATMUL_Q8_0,
    single: cpu::matvec_q8_0,
    single_sig: &signature::MATVEC_Q8_0,
    matrix: q8_0_matrix,
};

/// A matrix product's operands mapped: `w` at [`W`], `x` (`n` rows) at [`X`], `y` (`n * rows`
/// sentinels) at [`Y`], one matvec output row at [`SINGLE`].
fn matmul_memory(w: &[u8], x: &[f32], rows: usize, cols: usize) -> HostMemory {
    let mut memory = HostMemory::new();
    map_bytes(&mut memory, W, w);
    buffer(&mut memory, X, x);
    sentinel_buffer(&mut memory, Y, x.len() / cols * rows);
    sentinel_buffer(&mut memory, SINGLE, rows);
    memory
}

fn matmul_kernarg(sig: &'static Signature, rows: usize, cols: usize, n: u32) -> Vec<u8> {
    Kernarg::new(sig)
        .ptr("y", Y)
        .ptr("w", W)
        .ptr("x", X)
        .u32("rows", u32_of(rows))
        .u32("cols", u32_of(cols))
        .u32("n", n)
        .bytes()
}

/// `y` of the batched product over `groups` work-groups.
fn run_matmul(q: &Quant, memory: &mut HostMemory, rows: usize, cols: usize, n: usize, groups: usize) -> Vec<u32> {
    let k = matmul_kernarg(q.batched_sig, rows, cols, u32_of(n));
    run(q.batched, &launch_1d(&k, u32_of(groups * 32), 32), memory);
    read_bits(memory, Y, n * rows)
}

/// The single-token product on token `t`, into [`SINGLE`].
fn matvec_kernarg(q: &Quant, rows: usize, cols: usize, t: usize) -> Vec<u8> {
    Kernarg::new(q.single_sig)
        .ptr("y", SINGLE)
        .ptr("w", W)
        .ptr("x", X + 4 * (t * cols) as u64)
        .u32("rows", u32_of(rows))
        .u32("cols", u32_of(cols))
        .bytes()
}

/// `y` of the single-token product on token `t` over `groups` work-groups.
fn run_matvec(q: &Quant, memory: &mut HostMemory, rows: usize, cols: usize, t: usize, groups: usize) -> Vec<u32> {
    let k = matvec_kernarg(q, rows, cols, t);
    run(q.single, &launch_1d(&k, u32_of(groups * 32), 32), memory);
    read_bits(memory, SINGLE, rows)
}

/// Row `t` of the batched product is the single-token product of token `t`, bit for bit.
fn check_matmul_rows(q: &Quant, w: &[u8], x: &[f32], rows: usize, cols: usize, groups: usize) {
    let n = x.len() / cols;
    let mut memory = matmul_memory(w, x, rows, cols);
    let batched = run_matmul(q, &mut memory, rows, cols, n, groups);
    let active = rows.min(groups);
    for t in 0..n {
        let single = run_matvec(q, &mut memory, rows, cols, t, groups);
        for r in 0..rows {
            let (got, want) = (batched[t * rows + r], if r < active { single[r] } else { SENTINEL });
            assert!(same(got, want), "{rows}x{cols} n {n} groups {groups}: y[{t}][{r}] {got:#x} vs {want:#x}");
        }
    }
    assert!(batched[n * rows..].iter().all(|&b| b == SENTINEL), "nothing past y[n][rows]");
}

/// Raw weight bytes: any f16 scales, infinities and NaNs included.
fn raw_matrix(rng: &mut Rng, rows: usize, cols: usize, block_bytes: usize) -> Vec<u8> {
    (0..rows * cols / 32 * block_bytes).map(|_| (rng.next_u64() >> 56) as u8).collect()
}

fn matmul_case() -> impl Strategy<Value = (usize, usize, usize, usize, u64, bool)> {
    (1usize..=70, 1usize..=64, 1usize..=40, 0usize..=5, any::<u64>(), prop::bool::weighted(0.2)).prop_map(
        |(rows, blocks, n, groups_delta, seed, raw)| {
            // Grids of rows - 3 ..= rows + 2 work-groups.
            let groups = (rows + groups_delta).saturating_sub(3).max(1);
            (rows, 32 * blocks, n, groups, seed, raw)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn matmul_rows_are_matvec_bit_for_bit(case in matmul_case(), q8 in any::<bool>()) {
        let (rows, cols, n, groups, seed, raw) = case;
        let (q, block_bytes) = if q8 { (&Q8_0, 34) } else { (&Q4_1, 20) };
        let mut rng = Rng(seed);
        let w = if raw { raw_matrix(&mut rng, rows, cols, block_bytes) } else { (q.matrix)(&mut rng, rows, cols).0 };
        let x = rng.f32s(n * cols, -2.0, 2.0);
        check_matmul_rows(q, &w, &x, rows, cols, groups);
    }
}

#[test]
fn matmul_rows_are_matvec_bit_for_bit_at_model_shapes() {
    // The 135M model's FFN shapes, a full 128-token chunk and a ragged one; 130 rows of 2048
    // columns span three weight read chunks.
    let mut rng = Rng(3);
    for (q, rows, cols, n) in [(&Q4_1, 1536, 576, 128), (&Q8_0, 576, 1536, 37), (&Q4_1, 130, 2048, 3)] {
        let (w, _) = (q.matrix)(&mut rng, rows, cols);
        let x = rng.f32s(n * cols, -2.0, 2.0);
        check_matmul_rows(q, &w, &x, rows, cols, rows);
    }
}

#[test]
fn matmul_matches_f64_within_the_summation_bound() {
    let mut rng = Rng(5);
    for (q, rows, cols, n) in [(&Q4_1, 300, 576, 21), (&Q8_0, 100, 1536, 9), (&Q4_1, 7, 96, 3), (&Q8_0, 3, 2048, 17)] {
        let (w, values) = (q.matrix)(&mut rng, rows, cols);
        let x = rng.f32s(n * cols, -2.0, 2.0);
        let mut memory = matmul_memory(&w, &x, rows, cols);
        let y = run_matmul(q, &mut memory, rows, cols, n, rows);
        let terms = 32 * cols.div_ceil(1024);
        for t in 0..n {
            let xt = &x[t * cols..][..cols];
            for r in 0..rows {
                let row = &values[r * cols..][..cols];
                let exact: f64 = row.iter().zip(xt).map(|(w, &x)| w * f64::from(x)).sum();
                let magnitude: f64 = row.iter().zip(xt).map(|(w, &x)| (w * f64::from(x)).abs()).sum();
                let bound = (terms as f64 + 8.0) * U * magnitude;
                let got = f64::from(f32::from_bits(y[t * rows + r]));
                assert!((got - exact).abs() <= bound, "y[{t}][{r}] {got} vs {exact} (bound {bound:e})");
            }
        }
    }
}

#[test]
fn matmul_reads_in_place_and_copied_weights_alike() {
    // HostMemory lends the weights (`view`); the recorder does not, so the reference copies them.
    let (rows, cols, n) = (200, 1024, 19);
    let mut rng = Rng(7);
    let (w, _) = q4_1_matrix(&mut rng, rows, cols);
    let x = rng.f32s(n * cols, -1.0, 1.0);
    let mut lent = matmul_memory(&w, &x, rows, cols);
    let direct = run_matmul(&Q4_1, &mut lent, rows, cols, n, rows);
    let mut copied = matmul_memory(&w, &x, rows, cols);
    let k = matmul_kernarg(&signature::MATMUL_Q4_1, rows, cols, u32_of(n));
    cpu::matmul_q4_1(&launch_1d(&k, u32_of(rows * 32), 32), &mut Recorder::new(&mut copied)).unwrap();
    assert_eq!(read_bits(&copied, Y, n * rows), direct);
}

/// A `get_rows_q8_0` launch of `n` tokens over `grid` work-items.
fn run_get_rows(memory: &mut HostMemory, cols: usize, rows: usize, n: usize, grid: usize, wg: u16) -> Vec<u32> {
    let k = Kernarg::new(&signature::GET_ROWS_Q8_0)
        .ptr("out", Y)
        .ptr("table", W)
        .ptr("tokens", X)
        .u32("cols", u32_of(cols))
        .u32("rows", u32_of(rows))
        .u32("n", u32_of(n))
        .group_size(wg)
        .bytes();
    run(cpu::get_rows_q8_0, &launch_1d(&k, u32_of(grid), wg), memory);
    read_bits(memory, Y, n * cols)
}

fn get_rows_memory(table: &[u8], tokens: &[u32], cols: usize) -> HostMemory {
    let mut memory = HostMemory::new();
    map_bytes(&mut memory, W, table);
    map_bytes(&mut memory, X, &tokens.iter().flat_map(|t| t.to_le_bytes()).collect::<Vec<_>>());
    sentinel_buffer(&mut memory, Y, tokens.len() * cols);
    sentinel_buffer(&mut memory, SINGLE, cols);
    memory
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn get_rows_are_get_row_bit_for_bit(
        rows in 1usize..=20,
        blocks in 1usize..=16,
        n in 1usize..=40,
        short in 0usize..=700,
        wg in prop::sample::select(vec![32u16, 64, 256]),
        seed in any::<u64>(),
    ) {
        let cols = 32 * blocks;
        let mut rng = Rng(seed);
        let (table, _) = q8_0_matrix(&mut rng, rows, cols);
        // Ids past the table (rows, rows + 1, u32::MAX) write nothing.
        let tokens: Vec<u32> = (0..n)
            .map(|_| match rng.next_u64() % (rows as u64 + 3) {
                id if id == rows as u64 + 2 => u32::MAX,
                id => u32::try_from(id).unwrap(),
            })
            .collect();
        let active = (n * cols).saturating_sub(short).max(1);
        let mut memory = get_rows_memory(&table, &tokens, cols);
        let batched = run_get_rows(&mut memory, cols, rows, n, active, wg);
        for t in 0..n {
            let elements = active.saturating_sub(t * cols).min(cols);
            let mut single = vec![SENTINEL; cols + GUARD];
            if elements > 0 {
                memory.write_u32s(SINGLE, &single).unwrap();
                let k = Kernarg::new(&signature::GET_ROW_Q8_0)
                    .ptr("out", SINGLE)
                    .ptr("table", W)
                    .ptr("token", X + 4 * t as u64)
                    .u32("cols", u32_of(cols))
                    .u32("rows", u32_of(rows))
                    .group_size(wg)
                    .bytes();
                run(cpu::get_row_q8_0, &launch_1d(&k, u32_of(elements), wg), &mut memory);
                single = read_bits(&memory, SINGLE, cols);
            }
            prop_assert_eq!(&batched[t * cols..][..cols], &single[..cols], "row {} token {}", t, tokens[t]);
        }
        prop_assert!(batched[n * cols..].iter().all(|&b| b == SENTINEL));
    }
}

#[test]
fn get_rows_dequantise_exactly() {
    let (rows, cols) = (6, 96);
    let mut rng = Rng(11);
    let (table, values) = q8_0_matrix(&mut rng, rows, cols);
    let tokens = [5u32, 0, 5, 2, 9, 1];
    let mut memory = get_rows_memory(&table, &tokens, cols);
    let got = run_get_rows(&mut memory, cols, rows, tokens.len(), tokens.len() * cols, 64);
    for (t, &tok) in tokens.iter().enumerate() {
        let row = &got[t * cols..][..cols];
        if tok as usize >= rows {
            assert!(row.iter().all(|&b| b == SENTINEL), "id {tok} writes nothing");
            continue;
        }
        let expected: Vec<u32> = values[tok as usize * cols..][..cols].iter().map(|&v| f32_of(v).to_bits()).collect();
        assert_eq!(row, &expected[..], "row {t}");
    }
}

fn rope_rows_kernarg(pos0: usize, heads: usize, head_dim: usize, n: usize, wg: u16) -> Vec<u8> {
    Kernarg::new(&signature::ROPE_ROWS)
        .ptr("x", X)
        .ptr("table", TABLE)
        .u32("pos0", u32_of(pos0))
        .u32("heads", u32_of(heads))
        .u32("head_dim", u32_of(head_dim))
        .u32("n", u32_of(n))
        .group_size(wg)
        .bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rope_rows_are_rope_bit_for_bit(
        pos0 in 0usize..100,
        heads in 1usize..=9,
        half in 1usize..=40,
        n in 1usize..=20,
        short in 0usize..=300,
        wg in prop::sample::select(vec![32u16, 64, 256]),
        seed in any::<u64>(),
    ) {
        let (head_dim, mut rng) = (2 * half, Rng(seed));
        let width = heads * head_dim;
        let x = rng.f32s(n * width, -3.0, 3.0);
        let table = rng.f32s((pos0 + n) * head_dim, -1.0, 1.0);
        let active = (n * width / 2).saturating_sub(short).max(1);
        let mut memory = HostMemory::new();
        buffer(&mut memory, X, &x);
        buffer(&mut memory, TABLE, &table);
        buffer(&mut memory, SINGLE, &x[..width]);
        let k = rope_rows_kernarg(pos0, heads, head_dim, n, wg);
        run(cpu::rope_rows, &launch_1d(&k, u32_of(active), wg), &mut memory);
        let batched = read_bits(&memory, X, n * width);
        for t in 0..n {
            let pairs = (active.saturating_sub(t * width / 2)).min(width / 2);
            memory.write_f32s(SINGLE, &x[t * width..][..width]).unwrap();
            if pairs > 0 {
                let k = Kernarg::new(&signature::ROPE)
                    .ptr("x", SINGLE)
                    .ptr("table", TABLE)
                    .u32("pos", u32_of(pos0 + t))
                    .u32("heads", u32_of(heads))
                    .u32("head_dim", u32_of(head_dim))
                    .group_size(wg)
                    .bytes();
                run(cpu::rope, &launch_1d(&k, u32_of(pairs), wg), &mut memory);
            }
            let single = read_bits(&memory, SINGLE, width);
            prop_assert_eq!(&batched[t * width..][..width], &single[..width], "row {}", t);
        }
        prop_assert!(batched[n * width..].iter().all(|&b| b == SENTINEL));
    }
}

#[test]
fn rope_rows_match_f64_rotation() {
    let (pos0, heads, head_dim, n) = (40, 9, 64, 13);
    let width = heads * head_dim;
    let table = rope_table(pos0 + n, head_dim);
    let x = Rng(13).f32s(n * width, -3.0, 3.0);
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &x);
    buffer(&mut memory, TABLE, &table);
    let k = rope_rows_kernarg(pos0, heads, head_dim, n, 64);
    run(cpu::rope_rows, &launch_1d(&k, u32_of(n * width / 2), 64), &mut memory);
    let got = read_bits(&memory, X, n * width);
    let half = head_dim / 2;
    for (p, pair) in x.chunks_exact(2).enumerate() {
        let (t, i) = (p / (width / 2), p % half);
        let cs = &table[2 * ((pos0 + t) * half + i)..][..2];
        let (x0, x1, c, s) = (f64::from(pair[0]), f64::from(pair[1]), f64::from(cs[0]), f64::from(cs[1]));
        let rotated =
            [(x0 * c - x1 * s, (x0 * c).abs() + (x1 * s).abs()), (x0 * s + x1 * c, (x0 * s).abs() + (x1 * c).abs())];
        for (e, (exact, magnitude)) in rotated.into_iter().enumerate() {
            let v = f64::from(f32::from_bits(got[2 * p + e]));
            assert!((v - exact).abs() <= 3.0 * U * magnitude, "row {t} pair {p}.{e}: {v} vs {exact}");
        }
    }
}

/// The shape of an `attention_rows` launch.
#[derive(Clone, Copy, Debug)]
struct Attn {
    pos0: usize,
    n: usize,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    stride: usize,
}

impl Attn {
    fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    fn width(&self) -> usize {
        self.heads * self.head_dim
    }
}

/// Random `q` (`n` rows) and caches (`pos0 + n` positions) in [-1, 1], mapped with sentinel
/// `out` and `scores` for the batched and the single-token launch.
fn attention_memory(c: &Attn, seed: u64) -> (HostMemory, Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = Rng(seed);
    let q = rng.f32s(c.n * c.width(), -1.0, 1.0);
    let k = rng.f32s((c.pos0 + c.n) * c.kv_width(), -1.0, 1.0);
    let v = rng.f32s((c.pos0 + c.n) * c.kv_width(), -1.0, 1.0);
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &q);
    buffer(&mut memory, K, &k);
    buffer(&mut memory, V, &v);
    sentinel_buffer(&mut memory, Y, c.n * c.width());
    sentinel_buffer(&mut memory, SCORES, c.n * c.heads * c.stride);
    sentinel_buffer(&mut memory, SINGLE, c.width());
    sentinel_buffer(&mut memory, SINGLE_SCORES, c.heads * c.stride);
    (memory, q, k, v)
}

fn attention_rows_kernarg(c: &Attn, scale: f32) -> Vec<u8> {
    Kernarg::new(&signature::ATTENTION_ROWS)
        .ptr("out", Y)
        .ptr("q", X)
        .ptr("k_cache", K)
        .ptr("v_cache", V)
        .ptr("scores", SCORES)
        .u32("pos0", u32_of(c.pos0))
        .u32("n", u32_of(c.n))
        .u32("heads", u32_of(c.heads))
        .u32("kv_heads", u32_of(c.kv_heads))
        .u32("head_dim", u32_of(c.head_dim))
        .u32("scores_stride", u32_of(c.stride))
        .f32("scale", scale)
        .bytes()
}

/// `(out, scores)` of the batched launch over `groups` work-groups.
fn run_attention_rows(c: &Attn, memory: &mut HostMemory, scale: f32, groups: usize) -> (Vec<u32>, Vec<u32>) {
    let k = attention_rows_kernarg(c, scale);
    run(cpu::attention_rows, &launch_1d(&k, u32_of(groups * 64), 64), memory);
    (read_bits(memory, Y, c.n * c.width()), read_bits(memory, SCORES, c.n * c.heads * c.stride))
}

/// Every (row, head) of the batched launch is `attention` over `pos0 + t + 1` positions on
/// `q[t]`, bit for bit; work-groups past `groups` write nothing.
fn check_attention_rows(c: &Attn, seed: u64, groups: usize, scale: f32) {
    let (mut memory, ..) = attention_memory(c, seed);
    let (out, scores) = run_attention_rows(c, &mut memory, scale, groups);
    for t in 0..c.n {
        let count = c.pos0 + t + 1;
        let k = Kernarg::new(&signature::ATTENTION)
            .ptr("out", SINGLE)
            .ptr("q", X + 4 * (t * c.width()) as u64)
            .ptr("k_cache", K)
            .ptr("v_cache", V)
            .ptr("scores", SINGLE_SCORES)
            .u32("n", u32_of(count))
            .u32("heads", u32_of(c.heads))
            .u32("kv_heads", u32_of(c.kv_heads))
            .u32("head_dim", u32_of(c.head_dim))
            .u32("scores_stride", u32_of(c.stride))
            .f32("scale", scale)
            .bytes();
        run(cpu::attention, &launch_1d(&k, u32_of(c.heads * 64), 64), &mut memory);
        let single_out = read_bits(&memory, SINGLE, c.width());
        let single_scores = read_bits(&memory, SINGLE_SCORES, c.heads * c.stride);
        for h in 0..c.heads {
            let g = t * c.heads + h;
            let what = format!("{c:?} groups {groups} row {t} head {h}");
            let (got_out, got_scores) = (&out[g * c.head_dim..][..c.head_dim], &scores[g * c.stride..][..c.stride]);
            if g >= groups {
                assert!(got_out.iter().chain(got_scores).all(|&b| b == SENTINEL), "{what}: not run");
                continue;
            }
            assert_eq!(got_out, &single_out[h * c.head_dim..][..c.head_dim], "{what}: out");
            assert_eq!(&got_scores[..count], &single_scores[h * c.stride..][..count], "{what}: p");
            assert!(got_scores[count..].iter().all(|&b| b == SENTINEL), "{what}: scores past pos0 + t");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn attention_rows_are_attention_bit_for_bit(
        pos0 in 0usize..=70,
        n in 1usize..=12,
        kv_heads in 1usize..=3,
        group in 1usize..=3,
        head_dim in 1usize..=80,
        extra in 0usize..=3,
        short in prop::sample::select(vec![0usize, 0, 0, 1, 5]),
        seed in any::<u64>(),
    ) {
        let heads = kv_heads * group;
        let c = Attn { pos0, n, heads, kv_heads, head_dim, stride: pos0 + n + extra };
        let scale = 1.0 / (head_dim as f32).sqrt();
        check_attention_rows(&c, seed, (n * heads).saturating_sub(short).max(1), scale);
    }
}

#[test]
fn attention_rows_are_attention_bit_for_bit_at_the_model_shape() {
    // A full 128-token chunk after 200 cached positions: 9 query heads on 3 kv heads of 64.
    let c = Attn { pos0: 200, n: 128, heads: 9, kv_heads: 3, head_dim: 64, stride: 330 };
    check_attention_rows(&c, 17, c.n * c.heads, 0.125);
}

#[test]
fn attention_rows_over_empty_heads_are_attention_bit_for_bit() {
    // head_dim = 0: every score is 0 * scale, NaN for an infinite or NaN scale.
    let c = Attn { pos0: 40, n: 5, heads: 4, kv_heads: 2, head_dim: 0, stride: 47 };
    for scale in [0.5, -0.0, f32::INFINITY, f32::NAN] {
        check_attention_rows(&c, 43, c.n * c.heads, scale);
        check_attention_rows(&c, 43, 7, scale);
    }
}

/// The `f64` attention of one (row, head) and the bounds its `f32` result must meet:
/// `(p, |p - p~| bound, out, |out - out~| bound)`.
///
/// With `S_j = |scale| sum_d |q[d] k[j][d]|`, the `f32` score is within
/// `e_j = (head_dim + 1) u S_j` of the exact one, and `p~_j = exp(s~_j - s~_max)` (an `expf`
/// within 2 ulp = `4u` relative, after one rounded subtraction) is within a relative
/// `E_j = e_j + e_max + u |s_j - s_max| + 4u` (to first order, so with a factor 1.01) of
/// `exp(s_j - s_max)`. The output `sum_j p~_j v_j / sum_j p~_j` then moves by at most
/// `2 E max_j |v_j|` from the weights' errors, plus the rounding of its sums: `count` terms in
/// the numerator, `ceil(count / 64)` per work-item and 6 tree levels in the denominator, and the
/// division, each relative to `max_j |v_j|`.
fn attention_bounds(qh: &[f32], keys: &[&[f32]], values: &[&[f32]], scale: f32, d: usize) -> [Vec<f64>; 4] {
    let scale = f64::from(scale);
    let head_dim = qh.len() as f64;
    let (s, s_abs): (Vec<f64>, Vec<f64>) = keys
        .iter()
        .map(|k| {
            let dot: f64 = qh.iter().zip(*k).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum();
            let abs: f64 = qh.iter().zip(*k).map(|(&a, &b)| (f64::from(a) * f64::from(b)).abs()).sum();
            (dot * scale, abs * scale.abs())
        })
        .unzip();
    let (j_max, &s_max) = s.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
    let e = |j: usize| (head_dim + 1.0) * U * s_abs[j];
    let rel: Vec<f64> = (0..s.len()).map(|j| 1.01 * (e(j) + e(j_max) + U * (s[j] - s_max).abs() + 4.0 * U)).collect();
    let p: Vec<f64> = s.iter().map(|x| (x - s_max).exp()).collect();
    let p_bound: Vec<f64> = p.iter().zip(&rel).map(|(p, r)| p * r.exp_m1() + 2f64.powi(-140)).collect();
    let total: f64 = p.iter().sum();
    let count = s.len() as f64;
    let rel_max = rel.iter().copied().fold(0.0, f64::max);
    let mut out = Vec::new();
    let mut out_bound = Vec::new();
    for dd in 0..d {
        let v_max = values.iter().map(|v| f64::from(v[dd]).abs()).fold(0.0, f64::max);
        out.push(p.iter().zip(values).map(|(p, v)| p * f64::from(v[dd])).sum::<f64>() / total);
        out_bound.push(v_max * (2.02 * rel_max + (count + (count / 64.0).ceil() + 8.0) * U));
    }
    [p, p_bound, out, out_bound]
}

#[test]
fn attention_rows_match_f64_softmax_within_the_derived_bound() {
    for (c, scale) in [
        (Attn { pos0: 30, n: 9, heads: 9, kv_heads: 3, head_dim: 64, stride: 40 }, 0.125f32),
        (Attn { pos0: 0, n: 70, heads: 4, kv_heads: 4, head_dim: 80, stride: 70 }, 1.0 / 80f32.sqrt()),
        // Large scores: the softmax is dominated by a few positions.
        (Attn { pos0: 5, n: 3, heads: 2, kv_heads: 1, head_dim: 16, stride: 8 }, 6.0),
    ] {
        let (mut memory, q, k, v) = attention_memory(&c, 19 + c.n as u64);
        let (out, scores) = run_attention_rows(&c, &mut memory, scale, c.n * c.heads);
        let kv_width = c.kv_width();
        for t in 0..c.n {
            for h in 0..c.heads {
                let (g, kv_offset) = (t * c.heads + h, h / (c.heads / c.kv_heads) * c.head_dim);
                let count = c.pos0 + t + 1;
                let keys: Vec<&[f32]> = (0..count).map(|j| &k[j * kv_width + kv_offset..][..c.head_dim]).collect();
                let values: Vec<&[f32]> = (0..count).map(|j| &v[j * kv_width + kv_offset..][..c.head_dim]).collect();
                let qh = &q[g * c.head_dim..][..c.head_dim];
                let [p, p_bound, exact, bound] = attention_bounds(qh, &keys, &values, scale, c.head_dim);
                for j in 0..count {
                    let got = f64::from(f32::from_bits(scores[g * c.stride + j]));
                    assert!((got - p[j]).abs() <= p_bound[j], "row {t} head {h} p[{j}]: {got} vs {}", p[j]);
                }
                for d in 0..c.head_dim {
                    let got = f64::from(f32::from_bits(out[g * c.head_dim + d]));
                    assert!((got - exact[d]).abs() <= bound[d], "row {t} head {h} d {d}: {got} vs {}", exact[d]);
                }
            }
        }
    }
}

#[test]
fn matmul_launch_preconditions_and_faults_are_typed_errors() {
    let (rows, cols, n) = (8, 64, 3);
    let mut rng = Rng(23);
    let (w, _) = q4_1_matrix(&mut rng, rows, cols);
    let x = rng.f32s(n * cols, -1.0, 1.0);
    let mut memory = matmul_memory(&w, &x, rows, cols);
    for (q, sig) in [(&Q4_1, &signature::MATMUL_Q4_1), (&Q8_0, &signature::MATMUL_Q8_0)] {
        let k = matmul_kernarg(sig, rows, cols, u32::MAX);
        assert_eq!(
            (q.batched)(&launch_1d(&k, 256, 32), &mut memory),
            Err(KernelError::StridedLoopWraps { arg: "n", count: u32::MAX, limit: u32::MAX - 7 })
        );
        let k = matmul_kernarg(sig, rows, 100, 2);
        assert_eq!(
            (q.batched)(&launch_1d(&k, 256, 32), &mut memory),
            Err(KernelError::ColsNotBlockMultiple { cols: 100, block: 32 })
        );
        let k = matmul_kernarg(sig, rows, cols, 2);
        assert_eq!(
            (q.batched)(&launch_1d(&k, 250, 32), &mut memory),
            Err(KernelError::PartialWorkgroup { grid_size_x: 250, workgroup_size_x: 32 })
        );
        assert_eq!(
            (q.batched)(&launch_1d(&k, 256, 16), &mut memory),
            Err(KernelError::WorkgroupSizeRequired { workgroup_size_x: 16, required: 32 })
        );
        assert_eq!(
            (q.batched)(&launch_1d(&k, 512, 64), &mut memory),
            Err(KernelError::WorkgroupTooLarge { workgroup_size_x: 64, limit: 32 })
        );
    }
    assert!(read_bits(&memory, Y, n * rows).iter().all(|&b| b == SENTINEL), "refused launches store nothing");
    // 16 rows of 2 blocks need 640 bytes of w and 320 are mapped: a fault naming w, nothing stored.
    let k = matmul_kernarg(&signature::MATMUL_Q4_1, 16, cols, u32_of(n));
    let err = cpu::matmul_q4_1(&launch_1d(&k, 16 * 32, 32), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "w", .. }), "{err}");
    assert!(read_bits(&memory, Y, n * rows).iter().all(|&b| b == SENTINEL));
    // x shorter than n rows faults on x.
    let k = matmul_kernarg(&signature::MATMUL_Q4_1, rows, cols, u32_of(n + 1));
    let err = cpu::matmul_q4_1(&launch_1d(&k, u32_of(rows * 32), 32), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "x", .. }), "{err}");
    // n = 0, or no row to handle: nothing is touched, even through unmapped pointers.
    let k = Kernarg::new(&signature::MATMUL_Q4_1).ptr("y", 8).ptr("w", 8).ptr("x", 8).u32("rows", 4).u32("cols", 64);
    assert_eq!(cpu::matmul_q4_1(&launch_1d(&k.bytes(), 128, 32), &mut HostMemory::new()), Ok(()));
    // No columns: every sum is +0.0.
    let k = matmul_kernarg(&signature::MATMUL_Q4_1, rows, 0, u32_of(n));
    run(cpu::matmul_q4_1, &launch_1d(&k, u32_of(rows * 32), 32), &mut memory);
    assert!(read_bits(&memory, Y, n * rows)[..n * rows].iter().all(|&b| b == 0));
}

#[test]
fn get_rows_and_rope_rows_preconditions_and_faults_are_typed_errors() {
    let mut rng = Rng(29);
    let (table, _) = q8_0_matrix(&mut rng, 2, 64);
    let mut memory = get_rows_memory(&table, &[0, 1, 1], 64);
    let get_rows = |cols: u32, tokens: u64| {
        Kernarg::new(&signature::GET_ROWS_Q8_0)
            .ptr("out", Y)
            .ptr("table", W)
            .ptr("tokens", tokens)
            .u32("cols", cols)
            .u32("rows", 3)
            .u32("n", 3)
            .group_size(64)
            .bytes()
    };
    assert_eq!(
        cpu::get_rows_q8_0(&launch_1d(&get_rows(33, X), 128, 64), &mut memory),
        Err(KernelError::ColsNotBlockMultiple { cols: 33, block: 32 })
    );
    let err = cpu::get_rows_q8_0(&launch_1d(&get_rows(64, 0xdead_0000), 192, 64), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "tokens", .. }), "{err}");
    assert!(read_bits(&memory, Y, 3 * 64).iter().all(|&b| b == SENTINEL), "nothing stored");
    // Row 2 of a 3-row table is past the 2 mapped rows: rows 0 and 1 are written, then a fault.
    memory.write_u32s(X, &[0, 1, 2]).unwrap();
    let err = cpu::get_rows_q8_0(&launch_1d(&get_rows(64, X), 192, 64), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "table", .. }), "{err}");
    let out = read_bits(&memory, Y, 3 * 64);
    assert!(out[..128].iter().all(|&b| b != SENTINEL) && out[128..].iter().all(|&b| b == SENTINEL));

    let rope = |heads: u32, head_dim: u32| {
        Kernarg::new(&signature::ROPE_ROWS)
            .ptr("x", X)
            .ptr("table", TABLE)
            .u32("pos0", 0)
            .u32("heads", heads)
            .u32("head_dim", head_dim)
            .u32("n", 2)
            .group_size(64)
            .bytes()
    };
    assert_eq!(
        cpu::rope_rows(&launch_1d(&rope(2, 7), 64, 64), &mut memory),
        Err(KernelError::OddHeadDim { head_dim: 7 })
    );
    assert_eq!(
        cpu::rope_rows(&launch_1d(&rope(1 << 16, 1 << 16), 64, 64), &mut memory),
        Err(KernelError::HeadElementsOverflow { heads: 1 << 16, head_dim: 1 << 16 })
    );
    // The table is not mapped: a fault naming it, before row 0 is stored.
    let err = cpu::rope_rows(&launch_1d(&rope(1, 2), 4, 64), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "table", .. }), "{err}");
}

#[test]
fn attention_rows_preconditions_and_faults_are_typed_errors() {
    let c = Attn { pos0: 3, n: 2, heads: 6, kv_heads: 3, head_dim: 8, stride: 5 };
    let (mut memory, ..) = attention_memory(&c, 31);
    let attempt = |c: &Attn, groups: usize, wg: u16, memory: &mut HostMemory| {
        let k = attention_rows_kernarg(c, 0.5);
        cpu::attention_rows(&launch_1d(&k, u32_of(groups * usize::from(wg)), wg), memory)
    };
    let groups = c.n * c.heads;
    assert_eq!(
        attempt(&Attn { kv_heads: 0, ..c }, groups, 64, &mut memory),
        Err(KernelError::KvHeadsMismatch { heads: 6, kv_heads: 0 })
    );
    assert_eq!(
        attempt(&Attn { kv_heads: 4, ..c }, groups, 64, &mut memory),
        Err(KernelError::KvHeadsMismatch { heads: 6, kv_heads: 4 })
    );
    assert_eq!(
        attempt(&Attn { stride: 4, ..c }, groups, 64, &mut memory),
        Err(KernelError::ScoresStrideTooSmall { n: 5, scores_stride: 4 })
    );
    assert_eq!(
        attempt(&Attn { pos0: u32::MAX as usize - 2, stride: u32::MAX as usize, ..c }, groups, 64, &mut memory),
        Err(KernelError::StridedLoopWraps { arg: "pos0 + n", count: u32::MAX, limit: u32::MAX - 63 })
    );
    assert_eq!(
        attempt(&c, 2 * groups, 32, &mut memory),
        Err(KernelError::WorkgroupSizeRequired { workgroup_size_x: 32, required: 64 })
    );
    let k = attention_rows_kernarg(&c, 0.5);
    assert_eq!(
        cpu::attention_rows(&launch_1d(&k, u32_of(groups * 64 - 1), 64), &mut memory),
        Err(KernelError::PartialWorkgroup { grid_size_x: u32_of(groups * 64 - 1), workgroup_size_x: 64 })
    );
    // One more position than the caches hold: a fault naming k_cache, before any store.
    let err = attempt(&Attn { pos0: 4, stride: 6, ..c }, groups, 64, &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "k_cache", .. }), "{err}");
    assert!(read_bits(&memory, Y, c.n * c.width()).iter().all(|&b| b == SENTINEL));
    assert!(read_bits(&memory, SCORES, c.n * c.heads * c.stride).iter().all(|&b| b == SENTINEL));
    // No row or no head: nothing is checked or touched.
    assert_eq!(attempt(&Attn { n: 0, kv_heads: 0, ..c }, 1, 64, &mut HostMemory::new()), Ok(()));
    assert_eq!(attempt(&Attn { heads: 0, stride: 0, ..c }, 1, 64, &mut HostMemory::new()), Ok(()));
}

#[test]
fn rope_rows_give_the_row_loop_bits_from_lent_memory() {
    // HostMemory lends x and the table (`view`), so whole rows are rotated at once where that is
    // what the rows one after another give; the recorder lends nothing, so the rows go one by
    // one. Layouts in one arena (offsets in floats): the table apart from x, and inside it (each
    // row then reads what the rows before stored).
    let (pos0, heads, head_dim, n) = (3usize, 3usize, 8usize, 6usize);
    let (width, table_len) = (heads * head_dim, (pos0 + n) * head_dim);
    let at = |floats: usize| X + 4 * floats as u64;
    for (table, grid) in [(n * width, n * width / 2), (width, n * width / 2), (n * width, n * width / 2 - 5)] {
        let values = Rng(11).f32s(n * width + table_len, -2.0, 2.0);
        let k = Kernarg::new(&signature::ROPE_ROWS)
            .ptr("x", X)
            .ptr("table", at(table))
            .u32("pos0", u32_of(pos0))
            .u32("heads", u32_of(heads))
            .u32("head_dim", u32_of(head_dim))
            .u32("n", u32_of(n))
            .group_size(64)
            .bytes();
        let launch = launch_1d(&k, u32_of(grid), 64);
        let mut lent = HostMemory::new();
        buffer(&mut lent, X, &values);
        run(cpu::rope_rows, &launch, &mut lent);
        let mut copied = HostMemory::new();
        buffer(&mut copied, X, &values);
        cpu::rope_rows(&launch, &mut Recorder::new(&mut copied)).unwrap();
        let all = values.len();
        assert_eq!(read_bits(&lent, X, all), read_bits(&copied, X, all), "table at {table}, {grid} work-items");
    }
}
