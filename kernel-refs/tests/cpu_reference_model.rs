//! The llama decode kernels' CPU references against straightforward `f64` computations of their
//! definitions, with hand-worked quantised blocks whose values are exact, and the existing
//! `rmsnorm` at the model's shape.
//!
//! Tolerances: a sum of `k` rounded `f32` terms is within `k * 2^-24` of the exact sum relative
//! to the sum of magnitudes; each bound below states the factor it uses.

mod common;

use common::{
    Kernarg, Rng, SENTINEL, buffer, f32_of, launch_1d, map_bytes, q4_1_matrix, q8_0_matrix, read_bits, rope_table, run,
    sentinel_buffer, u32_of,
};
use kernel_refs::cpu::{self, CpuReference, Q4_1_BLOCK_BYTES, Q8_0_BLOCK_BYTES};
use kernel_refs::memory::HostMemory;
use kernels::signature;

const OUT: u64 = 0x10_0000;
const W: u64 = 0x100_0000;
const X: u64 = 0x30_0000;
const TOKEN: u64 = 0x40_0000;
const K: u64 = 0x50_0000;
const V: u64 = 0x60_0000;
const SCORES: u64 = 0x70_0000;

fn matvec_q(cpu: CpuReference, sig: &'static signature::Signature, w: &[u8], x: &[f32], rows: u32) -> Vec<u32> {
    let cols = u32_of(x.len());
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, rows as usize);
    map_bytes(&mut memory, W, w);
    buffer(&mut memory, X, x);
    let k = Kernarg::new(sig).ptr("y", OUT).ptr("w", W).ptr("x", X).u32("rows", rows).u32("cols", cols).bytes();
    run(cpu, &launch_1d(&k, rows * 32, 32), &mut memory);
    read_bits(&memory, OUT, rows as usize)
}

fn check_matvec(got: &[u32], values: &[f64], x: &[f32], rows: usize) {
    let cols = x.len();
    for r in 0..rows {
        let row = &values[r * cols..][..cols];
        let exact: f64 = row.iter().zip(x).map(|(w, &x)| w * f64::from(x)).sum();
        let magnitude: f64 = row.iter().zip(x).map(|(w, &x)| (w * f64::from(x)).abs()).sum();
        // Dequantising rounds twice, the product once, and a work-item adds at most cols / 32
        // terms before the 5 tree levels: (cols / 32 + 8) * 2^-24 relative to the magnitudes.
        let bound = (cols as f64 / 32.0 + 8.0) * 2f64.powi(-24) * magnitude;
        let y = f64::from(f32::from_bits(got[r]));
        assert!((y - exact).abs() <= bound, "row {r}: {y} vs {exact} (bound {bound:e})");
    }
    assert!(got[rows..].iter().all(|&b| b == SENTINEL), "nothing past y[rows]");
}

#[test]
fn matvec_q4_1_matches_f64_over_model_shapes() {
    let mut rng = Rng(41);
    for (rows, cols) in [(7usize, 96usize), (5, 576), (3, 1536), (2, 32)] {
        let (w, values) = q4_1_matrix(&mut rng, rows, cols);
        let x = rng.f32s(cols, -2.0, 2.0);
        let got = matvec_q(cpu::matvec_q4_1, &signature::MATVEC_Q4_1, &w, &x, u32_of(rows));
        check_matvec(&got, &values, &x, rows);
    }
}

#[test]
fn matvec_q8_0_matches_f64_over_model_shapes() {
    let mut rng = Rng(43);
    for (rows, cols) in [(7usize, 96usize), (5, 576), (3, 1536), (2, 32)] {
        let (w, values) = q8_0_matrix(&mut rng, rows, cols);
        let x = rng.f32s(cols, -2.0, 2.0);
        let got = matvec_q(cpu::matvec_q8_0, &signature::MATVEC_Q8_0, &w, &x, u32_of(rows));
        check_matvec(&got, &values, &x, rows);
    }
}

/// One Q4_1 block worked by hand: d = 0x3800 = 0.5, m = 0xbc00 = -1.0,
/// qs[j] = j | (15 - j) << 4. Element j < 16 is 0.5 j - 1 and element j + 16 is 0.5 (15 - j) - 1.
fn hand_q4_1_block() -> Vec<u8> {
    let mut block = vec![0x00, 0x38, 0x00, 0xbc];
    block.extend((0u8..16).map(|j| j | ((15 - j) << 4)));
    assert_eq!(block.len(), Q4_1_BLOCK_BYTES);
    block
}

/// One Q8_0 block worked by hand: d = 0x3400 = 0.25, qs[j] = j - 16; element j is (j - 16) / 4.
fn hand_q8_0_block() -> Vec<u8> {
    let mut block = vec![0x00, 0x34];
    block.extend((0i8..32).map(|j| (j - 16).to_le_bytes()[0]));
    assert_eq!(block.len(), Q8_0_BLOCK_BYTES);
    block
}

#[test]
fn hand_worked_blocks_give_exact_sums() {
    // Q4_1, x = 1: sum_j (0.5 j - 1) + sum_j (0.5 (15 - j) - 1) = 2 (0.5 * 120 - 16) = 88; every
    // intermediate is a small multiple of 0.5, so f32 is exact.
    let ones = [1.0f32; 32];
    let got = matvec_q(cpu::matvec_q4_1, &signature::MATVEC_Q4_1, &hand_q4_1_block(), &ones, 1);
    assert_eq!(f32::from_bits(got[0]), 88.0);
    // Q8_0, x[j] = j: sum_j (j - 16) j / 4 = (10416 - 16 * 496) / 4 = 620.
    let ramp: Vec<f32> = (0u8..32).map(f32::from).collect();
    let got = matvec_q(cpu::matvec_q8_0, &signature::MATVEC_Q8_0, &hand_q8_0_block(), &ramp, 1);
    assert_eq!(f32::from_bits(got[0]), 620.0);
    // Two rows of the same block, the second scaled by x = 1 again: 88 each.
    let two: Vec<u8> = [hand_q4_1_block(), hand_q4_1_block()].concat();
    let got = matvec_q(cpu::matvec_q4_1, &signature::MATVEC_Q4_1, &two, &ones, 2);
    assert_eq!(got[..2], [88.0f32.to_bits(); 2]);
}

fn get_row(table: &[u8], token: u32, cols: u32, rows: u32, grid: u32) -> Vec<u32> {
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, cols as usize);
    map_bytes(&mut memory, W, table);
    map_bytes(&mut memory, TOKEN, &token.to_le_bytes());
    let k = Kernarg::new(&signature::GET_ROW_Q8_0)
        .ptr("out", OUT)
        .ptr("table", W)
        .ptr("token", TOKEN)
        .u32("cols", cols)
        .u32("rows", rows)
        .group_size(64)
        .bytes();
    run(cpu::get_row_q8_0, &launch_1d(&k, grid, 64), &mut memory);
    read_bits(&memory, OUT, cols as usize)
}

#[test]
fn get_row_q8_0_dequantises_the_token_row_exactly() {
    let mut rng = Rng(47);
    let (rows, cols) = (5usize, 96usize);
    let (table, values) = q8_0_matrix(&mut rng, rows, cols);
    for token in 0..u32_of(rows) {
        let got = get_row(&table, token, u32_of(cols), u32_of(rows), 128);
        // q * d with an 8-bit q and an 11-bit d is exact in f32.
        let expected: Vec<u32> = values[token as usize * cols..][..cols].iter().map(|&v| f32_of(v).to_bits()).collect();
        assert_eq!(&got[..cols], &expected[..], "token {token}");
        assert!(got[cols..].iter().all(|&b| b == SENTINEL));
    }
    // A grid shorter than the row writes its prefix only.
    let got = get_row(&table, 2, u32_of(cols), u32_of(rows), 40);
    assert_eq!(f64::from(f32::from_bits(got[39])), values[2 * cols + 39]);
    assert!(got[40..].iter().all(|&b| b == SENTINEL));
    // The hand block as a one-row table: (j - 16) / 4.
    let got = get_row(&hand_q8_0_block(), 0, 32, 1, 64);
    let expected: Vec<u32> = (0i8..32).map(|j| (f32::from(j - 16) / 4.0).to_bits()).collect();
    assert_eq!(&got[..32], &expected[..]);
}

#[test]
fn get_row_q8_0_writes_nothing_for_an_out_of_range_token() {
    let mut rng = Rng(53);
    let (table, _) = q8_0_matrix(&mut rng, 3, 64);
    for token in [3, 4, u32::MAX] {
        let got = get_row(&table, token, 64, 3, 64);
        assert!(got.iter().all(|&b| b == SENTINEL), "token {token}");
    }
}

/// `x0 * c - x1 * s` or `x0 * s + x1 * c` in f64, and its bound: two rounded products and a
/// rounded sum, 3 * 2^-24 relative to the magnitudes.
fn rotated(x0: f32, x1: f32, c: f32, s: f32) -> [(f64, f64); 2] {
    let (x0, x1, c, s) = (f64::from(x0), f64::from(x1), f64::from(c), f64::from(s));
    let eps = 3.0 * 2f64.powi(-24);
    [
        (x0 * c - x1 * s, eps * ((x0 * c).abs() + (x1 * s).abs())),
        (x0 * s + x1 * c, eps * ((x0 * s).abs() + (x1 * c).abs())),
    ]
}

fn check_rotation(got: &[u32], x: &[f32], table: &[f32], pos: usize, head_dim: usize) {
    let half = head_dim / 2;
    for (p, pair) in x.chunks_exact(2).enumerate() {
        let i = p % half;
        let (c, s) = (table[2 * (pos * half + i)], table[2 * (pos * half + i) + 1]);
        for (k, (exact, bound)) in rotated(pair[0], pair[1], c, s).into_iter().enumerate() {
            let v = f64::from(f32::from_bits(got[2 * p + k]));
            assert!((v - exact).abs() <= bound, "pair {p}.{k}: {v} vs {exact}");
        }
    }
}

#[test]
fn rope_rotates_adjacent_pairs_in_place() {
    let (heads, head_dim, pos) = (9usize, 64usize, 37usize);
    let table = rope_table(pos + 1, head_dim);
    let x = Rng(59).f32s(heads * head_dim, -3.0, 3.0);
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &x);
    buffer(&mut memory, W, &table);
    let k = Kernarg::new(&signature::ROPE)
        .ptr("x", X)
        .ptr("table", W)
        .u32("pos", u32_of(pos))
        .u32("heads", u32_of(heads))
        .u32("head_dim", u32_of(head_dim))
        .group_size(64)
        .bytes();
    run(cpu::rope, &launch_1d(&k, u32_of(heads * head_dim / 2), 64), &mut memory);
    let got = read_bits(&memory, X, x.len());
    check_rotation(&got, &x, &table, pos, head_dim);
    assert!(got[x.len()..].iter().all(|&b| b == SENTINEL));
}

#[test]
fn rope_with_a_quarter_turn_table_is_exact() {
    // cos = 0, sin = 1 at position 1: (x0, x1) -> (-x1, x0) exactly.
    let table = [1.0f32, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0];
    let x = [1.5f32, -2.0, 3.0, 4.25, -0.5, 7.0, 8.0, 9.0];
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &x);
    buffer(&mut memory, W, &table);
    let k = Kernarg::new(&signature::ROPE)
        .ptr("x", X)
        .ptr("table", W)
        .u32("pos", 1)
        .u32("heads", 2)
        .u32("head_dim", 4)
        .group_size(2)
        .bytes();
    run(cpu::rope, &launch_1d(&k, 4, 2), &mut memory);
    let got: Vec<f32> = read_bits(&memory, X, 8)[..8].iter().map(|&b| f32::from_bits(b)).collect();
    assert_eq!(got, [2.0, 1.5, -4.25, 3.0, -7.0, -0.5, -9.0, 8.0]);
}

#[test]
fn rope_store_writes_the_rotated_row_at_pos_and_leaves_src() {
    let (heads, head_dim, pos) = (3usize, 64usize, 5usize);
    let table = rope_table(pos + 1, head_dim);
    let src = Rng(61).f32s(heads * head_dim, -3.0, 3.0);
    let width = heads * head_dim;
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, K, 8 * width);
    buffer(&mut memory, X, &src);
    buffer(&mut memory, W, &table);
    let k = Kernarg::new(&signature::ROPE_STORE)
        .ptr("cache", K)
        .ptr("src", X)
        .ptr("table", W)
        .u32("pos", u32_of(pos))
        .u32("heads", u32_of(heads))
        .u32("head_dim", u32_of(head_dim))
        .group_size(32)
        .bytes();
    run(cpu::rope_store, &launch_1d(&k, u32_of(width / 2), 32), &mut memory);
    let cache = read_bits(&memory, K, 8 * width);
    check_rotation(&cache[pos * width..][..width], &src, &table, pos, head_dim);
    assert!(cache[..pos * width].iter().chain(&cache[(pos + 1) * width..]).all(|&b| b == SENTINEL));
    let src_after = read_bits(&memory, X, width);
    assert_eq!(&src_after[..width], &src.iter().map(|v| v.to_bits()).collect::<Vec<_>>()[..]);
}

#[test]
fn kv_store_copies_bits_into_row_pos() {
    let width = 192usize;
    let src: Vec<f32> = (0..width).map(|i| f32::from_bits(0x3f80_0000 + u32_of(i) * 977)).collect();
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, V, 4 * width);
    buffer(&mut memory, X, &src);
    let k = Kernarg::new(&signature::KV_STORE)
        .ptr("cache", V)
        .ptr("src", X)
        .u32("pos", 2)
        .u32("width", u32_of(width))
        .group_size(64)
        .bytes();
    run(cpu::kv_store, &launch_1d(&k, 256, 64), &mut memory);
    let cache = read_bits(&memory, V, 4 * width);
    let expected: Vec<u32> = (0..4 * width + common::GUARD)
        .map(|i| if (2 * width..3 * width).contains(&i) { src[i - 2 * width].to_bits() } else { SENTINEL })
        .collect();
    assert_eq!(cache, expected);
}

struct AttentionCase {
    n: usize,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    stride: usize,
}

fn run_attention(c: &AttentionCase, q: &[f32], k: &[f32], v: &[f32], scale: f32) -> (Vec<u32>, Vec<u32>) {
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, c.heads * c.head_dim);
    buffer(&mut memory, X, q);
    buffer(&mut memory, K, k);
    buffer(&mut memory, V, v);
    sentinel_buffer(&mut memory, SCORES, c.heads * c.stride);
    let kernarg = Kernarg::new(&signature::ATTENTION)
        .ptr("out", OUT)
        .ptr("q", X)
        .ptr("k_cache", K)
        .ptr("v_cache", V)
        .ptr("scores", SCORES)
        .u32("n", u32_of(c.n))
        .u32("heads", u32_of(c.heads))
        .u32("kv_heads", u32_of(c.kv_heads))
        .u32("head_dim", u32_of(c.head_dim))
        .u32("scores_stride", u32_of(c.stride))
        .f32("scale", scale)
        .bytes();
    run(cpu::attention, &launch_1d(&kernarg, u32_of(c.heads * 64), 64), &mut memory);
    (read_bits(&memory, OUT, c.heads * c.head_dim), read_bits(&memory, SCORES, c.heads * c.stride))
}

#[test]
fn attention_matches_f64_softmax_with_grouped_heads() {
    for c in [
        AttentionCase { n: 37, heads: 9, kv_heads: 3, head_dim: 64, stride: 40 },
        AttentionCase { n: 256, heads: 9, kv_heads: 3, head_dim: 64, stride: 256 },
        AttentionCase { n: 5, heads: 4, kv_heads: 4, head_dim: 80, stride: 5 },
    ] {
        let mut rng = Rng(67 + c.n as u64);
        let kv_width = c.kv_heads * c.head_dim;
        let q = rng.f32s(c.heads * c.head_dim, -1.0, 1.0);
        let k = rng.f32s(c.n * kv_width, -1.0, 1.0);
        let v = rng.f32s(c.n * kv_width, -1.0, 1.0);
        let scale = 1.0 / (c.head_dim as f32).sqrt();
        let (out, scores) = run_attention(&c, &q, &k, &v, scale);
        for h in 0..c.heads {
            let kvh = h / (c.heads / c.kv_heads);
            let s: Vec<f64> = (0..c.n)
                .map(|j| {
                    let dot: f64 = (0..c.head_dim)
                        .map(|d| f64::from(q[h * c.head_dim + d]) * f64::from(k[j * kv_width + kvh * c.head_dim + d]))
                        .sum();
                    dot * f64::from(scale)
                })
                .collect();
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let p: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
            let total: f64 = p.iter().sum();
            for j in 0..c.n {
                // |s| <= 8: the dot's rounding (64 terms) moves exp by well under 1e-5.
                let got = f64::from(f32::from_bits(scores[h * c.stride + j]));
                assert!((got - p[j]).abs() <= 1e-5, "head {h} p[{j}]: {got} vs {}", p[j]);
            }
            assert!(scores[h * c.stride + c.n..(h + 1) * c.stride].iter().all(|&b| b == SENTINEL));
            for d in 0..c.head_dim {
                let exact: f64 =
                    (0..c.n).map(|j| p[j] * f64::from(v[j * kv_width + kvh * c.head_dim + d])).sum::<f64>() / total;
                let got = f64::from(f32::from_bits(out[h * c.head_dim + d]));
                // Relative to |v| <= 1: p's errors (1e-5 relative) and n rounded additions.
                let bound = 1e-5 + c.n as f64 * 2f64.powi(-23);
                assert!((got - exact).abs() <= bound, "n {} head {h} d {d}: {got} vs {exact}", c.n);
            }
        }
    }
}

#[test]
fn attention_over_one_position_returns_its_value_row() {
    // p = exp(0) = 1, sum = 1: out = v exactly, for the kv head of each query head.
    let c = AttentionCase { n: 1, heads: 4, kv_heads: 2, head_dim: 8, stride: 2 };
    let q = Rng(71).f32s(32, -1.0, 1.0);
    let k = Rng(72).f32s(16, -1.0, 1.0);
    let v: Vec<f32> = (0..16).map(|i| i as f32 * 0.5 - 3.0).collect();
    let (out, scores) = run_attention(&c, &q, &k, &v, 0.125);
    let expected: Vec<u32> = [&v[..8], &v[..8], &v[8..], &v[8..]].concat().iter().map(|x| x.to_bits()).collect();
    assert_eq!(&out[..32], &expected[..]);
    assert_eq!([scores[0], scores[2], scores[4], scores[6]], [1.0f32.to_bits(); 4]);
}

#[test]
fn silu_mul_matches_f64() {
    let n = 1536usize;
    let mut rng = Rng(73);
    let (gate, up) = (rng.f32s(n, -20.0, 20.0), rng.f32s(n, -4.0, 4.0));
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, n);
    buffer(&mut memory, X, &gate);
    buffer(&mut memory, K, &up);
    let k = Kernarg::new(&signature::SILU_MUL)
        .ptr("out", OUT)
        .ptr("gate", X)
        .ptr("up", K)
        .u32("n", u32_of(n))
        .group_size(256)
        .bytes();
    run(cpu::silu_mul, &launch_1d(&k, 1536, 256), &mut memory);
    let got = read_bits(&memory, OUT, n);
    for i in 0..n {
        let g = f64::from(gate[i]);
        let exact = g / (1.0 + (-g).exp()) * f64::from(up[i]);
        let v = f64::from(f32::from_bits(got[i]));
        // exp within 2 ulp, then an add, a divide and a multiply: 6 * 2^-24 relative.
        assert!((v - exact).abs() <= 6.0 * 2f64.powi(-24) * exact.abs() + 1e-30, "{i}: {v} vs {exact}");
    }
    assert!(got[n..].iter().all(|&b| b == SENTINEL));
}

#[test]
fn rmsnorm_normalizes_one_model_row() {
    // The existing rmsnorm at the model's shape: out, x, weight, rows = 1, cols = 576, eps.
    let cols = 576usize;
    let mut rng = Rng(79);
    let (x, weight) = (rng.f32s(cols, -3.0, 3.0), rng.f32s(cols, 0.5, 1.5));
    let eps = 1e-5f32;
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, cols);
    buffer(&mut memory, X, &x);
    buffer(&mut memory, K, &weight);
    let k = Kernarg::new(&signature::RMSNORM)
        .ptr("out", OUT)
        .ptr("x", X)
        .ptr("weight", K)
        .u32("rows", 1)
        .u32("cols", u32_of(cols))
        .f32("eps", eps)
        .bytes();
    run(cpu::rmsnorm, &launch_1d(&k, 256, 256), &mut memory);
    let got = read_bits(&memory, OUT, cols);
    let mean: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / cols as f64;
    let inv = 1.0 / (mean + f64::from(eps)).sqrt();
    for c in 0..cols {
        let exact = f64::from(x[c]) * inv * f64::from(weight[c]);
        let v = f64::from(f32::from_bits(got[c]));
        assert!((v - exact).abs() <= 1e-6 * exact.abs().max(1e-3), "{c}: {v} vs {exact}");
    }
    assert!(got[cols..].iter().all(|&b| b == SENTINEL));
}
