//! The Gemma sliding-window attention kernels (module `gemma`), and decode attention over a key
//! cache the address space keeps transposed:
//!
//! 1. `attention_window` from position 0 against `attention` bit for bit; from `first > 0`
//!    against `attention` on the cache rows from `first` on bit for bit, unchanged by NaN keys
//!    and values outside the window, and against an `f64` softmax over exactly the window within
//!    the bound derived in [`attention_bounds`].
//! 2. `attention_window_rows` row `t` against `attention_window` at its position bit for bit
//!    (windows smaller and larger than the rows, ragged shapes, head_dim 256), and against
//!    `attention_rows` where the window holds every position.
//! 3. `attention` and `attention_window` over a kept key cache
//!    (`DeviceMemory::with_row_form`) against the same over the cache read, across a decode.
//! 4. Launch preconditions and faults are typed errors, before any store where the launch is at
//!    fault.

mod common;

use common::{Kernarg, Recorder, Rng, SENTINEL, buffer, launch_1d, read_bits, run, sentinel_buffer, u32_of};
use kernel_refs::cpu::{self, CpuReference, KernelError};
use kernel_refs::memory::{DeviceMemory, HostMemory};
use kernels::signature;
use proptest::prelude::*;

const SINGLE: u64 = 0x4_0000_0000;
const Q: u64 = 0x5_0000_0000;
const K: u64 = 0x6_0000_0000;
const V: u64 = 0x7_0000_0000;
const SCORES: u64 = 0x8_0000_0000;
const SINGLE_SCORES: u64 = 0x9_0000_0000;
const Y: u64 = 0xa_0000_0000;
/// The unit roundoff of `f32`, `2^-24`.
const U: f64 = 1.0 / 16_777_216.0;

// ---------------------------------------------------------------------------------------------
// Sliding-window attention

/// The shape of a decode attention launch over positions `first..n`.
#[derive(Clone, Copy, Debug)]
struct Attn {
    first: usize,
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

/// Random data in [-1, 1], now and then any bit pattern when `raw`.
fn data(rng: &mut Rng, len: usize, raw: bool) -> Vec<f32> {
    (0..len)
        .map(|_| {
            let v = rng.f32_in(-1.0, 1.0);
            // CAST: the top bits of a random u64, as raw f32 bits.
            #[allow(clippy::cast_possible_truncation)]
            let bits = (rng.next_u64() >> 32) as u32;
            if raw && bits.is_multiple_of(61) { f32::from_bits(bits) } else { v }
        })
        .collect()
}

/// `q` at [`Q`] (`rows` query rows) and caches of `positions` at [`K`] and [`V`], with sentinel
/// outputs: `out` at [`Y`] and [`SINGLE`], scores at [`SCORES`] and [`SINGLE_SCORES`], each
/// `rows` rows long.
fn attention_memory(q: &[f32], k: &[f32], v: &[f32], width: usize, scores: usize) -> HostMemory {
    let mut memory = HostMemory::new();
    buffer(&mut memory, Q, q);
    buffer(&mut memory, K, k);
    buffer(&mut memory, V, v);
    sentinel_buffer(&mut memory, Y, q.len().max(width));
    sentinel_buffer(&mut memory, SINGLE, width);
    sentinel_buffer(&mut memory, SCORES, scores);
    sentinel_buffer(&mut memory, SINGLE_SCORES, scores);
    memory
}

/// `attention_window` over `c` on the query at `q`, into `out` and `scores`.
fn window_kernarg(c: &Attn, q: u64, (out, scores): (u64, u64), scale: f32) -> Vec<u8> {
    Kernarg::new(&signature::ATTENTION_WINDOW)
        .ptr("out", out)
        .ptr("q", q)
        .ptr("k_cache", K)
        .ptr("v_cache", V)
        .ptr("scores", scores)
        .u32("first", u32_of(c.first))
        .u32("n", u32_of(c.n))
        .u32("heads", u32_of(c.heads))
        .u32("kv_heads", u32_of(c.kv_heads))
        .u32("head_dim", u32_of(c.head_dim))
        .u32("scores_stride", u32_of(c.stride))
        .f32("scale", scale)
        .bytes()
}

/// `attention` over positions `0..n` of the caches at `k_cache`, `v_cache`.
fn attention_kernarg(c: &Attn, (k_cache, v_cache): (u64, u64), n: usize, scale: f32) -> Vec<u8> {
    Kernarg::new(&signature::ATTENTION)
        .ptr("out", SINGLE)
        .ptr("q", Q)
        .ptr("k_cache", k_cache)
        .ptr("v_cache", v_cache)
        .ptr("scores", SINGLE_SCORES)
        .u32("n", u32_of(n))
        .u32("heads", u32_of(c.heads))
        .u32("kv_heads", u32_of(c.kv_heads))
        .u32("head_dim", u32_of(c.head_dim))
        .u32("scores_stride", u32_of(c.stride))
        .f32("scale", scale)
        .bytes()
}

/// `(out, scores)` of `attention_window` at [`Y`], [`SCORES`].
fn run_window(c: &Attn, memory: &mut HostMemory, scale: f32) -> (Vec<u32>, Vec<u32>) {
    let k = window_kernarg(c, Q, (Y, SCORES), scale);
    run(cpu::attention_window, &launch_1d(&k, u32_of(c.heads * 64), 64), memory);
    (read_bits(memory, Y, c.width()), read_bits(memory, SCORES, c.heads * c.stride))
}

/// `(out, scores)` of `attention` over `n` positions of the caches from row `first` on, at
/// [`SINGLE`], [`SINGLE_SCORES`].
fn run_attention_from(c: &Attn, memory: &mut HostMemory, scale: f32) -> (Vec<u32>, Vec<u32>) {
    let offset = 4 * (c.first * c.kv_width()) as u64;
    let k = attention_kernarg(c, (K + offset, V + offset), c.n - c.first, scale);
    run(cpu::attention, &launch_1d(&k, u32_of(c.heads * 64), 64), memory);
    (read_bits(memory, SINGLE, c.width()), read_bits(memory, SINGLE_SCORES, c.heads * c.stride))
}

/// Random `q` and caches of `positions` for `c`.
fn window_data(c: &Attn, positions: usize, seed: u64, raw: bool) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = Rng(seed);
    let q = data(&mut rng, c.width(), raw);
    let k = data(&mut rng, positions * c.kv_width(), raw);
    let v = data(&mut rng, positions * c.kv_width(), raw);
    (q, k, v)
}

/// `(out, scores)` of `cpu` on the kernarg `k` over a copy of `memory` that keeps no forms
/// (every cache read through [`Recorder`]), at `out`, `scores`.
fn run_plain(
    cpu: CpuReference,
    k: &[u8],
    heads: usize,
    memory: &HostMemory,
    (out, scores): (u64, u64),
    lens: (usize, usize),
) -> (Vec<u32>, Vec<u32>) {
    let mut copy = memory.clone();
    cpu(&launch_1d(k, u32_of(heads * 64), 64), &mut Recorder::new(&mut copy)).unwrap();
    (read_bits(&copy, out, lens.0), read_bits(&copy, scores, lens.1))
}

#[test]
fn decode_over_a_kept_key_cache_is_decode_over_the_read_one() {
    // `attention` and `attention_window` read the key cache transposed as the address space
    // keeps it across writes (`DeviceMemory::with_row_form`); a copy of the memory keeps no
    // forms, so there they read and transpose it. A decode writes each next row, then attends;
    // then a new sequence writes rows from 0 again, a row is rewritten in the middle, and one
    // float of a row. Every step must give the bits of the read cache.
    for (heads, kv_heads, head_dim, raw) in [(9, 3, 64, false), (4, 1, 256, true), (6, 2, 17, true)] {
        let positions = 70;
        let c = Attn { first: 0, n: positions, heads, kv_heads, head_dim, stride: positions };
        let (q, k, v) = window_data(&c, positions, u64::from(u32_of(heads * head_dim)), raw);
        let mut memory = attention_memory(&q, &k, &v, c.width(), c.heads * c.stride);
        let mut rng = Rng(u64::from(u32_of(head_dim)));
        let row_bytes = 4 * c.kv_width() as u64;
        let mut write_row = |memory: &mut HostMemory, j: usize| {
            for cache in [K, V] {
                let row: Vec<u8> = data(&mut rng, c.kv_width(), raw).iter().flat_map(|x| x.to_le_bytes()).collect();
                memory.write(cache + j as u64 * row_bytes, &row).unwrap();
            }
        };
        let mut steps: Vec<(usize, Option<usize>)> = (1..=40).map(|n| (n, Some(n - 1))).collect();
        steps.extend([(5, Some(0)), (6, Some(5)), (30, Some(17)), (30, None), (33, Some(32))]);
        for (step, (n, written)) in steps.into_iter().enumerate() {
            if let Some(j) = written {
                write_row(&mut memory, j);
            }
            if step == 43 {
                // One float of row 2 of the key cache.
                memory.write(K + 2 * row_bytes + 8, &7.5f32.to_le_bytes()).unwrap();
            }
            let lens = (c.width(), c.heads * c.stride);
            let k = attention_kernarg(&c, (K, V), n, 0.125);
            let plain = run_plain(cpu::attention, &k, heads, &memory, (SINGLE, SINGLE_SCORES), lens);
            run(cpu::attention, &launch_1d(&k, u32_of(heads * 64), 64), &mut memory);
            let kept = (read_bits(&memory, SINGLE, lens.0), read_bits(&memory, SINGLE_SCORES, lens.1));
            assert_eq!(kept, plain, "attention {c:?} step {step} n {n}");
            // The sliding window from position 0 and from a later one.
            for first in [0, n / 2] {
                let w = Attn { first, n, stride: positions, ..c };
                let k = window_kernarg(&w, Q, (Y, SCORES), 0.125);
                let plain = run_plain(cpu::attention_window, &k, heads, &memory, (Y, SCORES), lens);
                run(cpu::attention_window, &launch_1d(&k, u32_of(heads * 64), 64), &mut memory);
                let kept = (read_bits(&memory, Y, lens.0), read_bits(&memory, SCORES, lens.1));
                assert_eq!(kept, plain, "attention_window {w:?} step {step}");
            }
        }
    }
}

#[test]
fn attention_window_from_position_0_is_attention_bit_for_bit() {
    // Scores rows longer than n: their columns past n stay untouched in both.
    for (n, heads, kv_heads, head_dim) in
        [(1, 1, 1, 1), (70, 4, 1, 256), (300, 9, 3, 64), (129, 6, 2, 17), (64, 2, 2, 256), (5, 4, 2, 0)]
    {
        let c = Attn { first: 0, n, heads, kv_heads, head_dim, stride: n + 3 };
        for (raw, scale) in [(false, 1.0 / 16.0), (true, 0.125), (false, f32::INFINITY)] {
            let (q, k, v) = window_data(&c, n, u64::from(u32_of(n * heads + head_dim)), raw);
            let mut memory = attention_memory(&q, &k, &v, c.width(), c.heads * c.stride);
            let window = run_window(&c, &mut memory, scale);
            let attention = run_attention_from(&c, &mut memory, scale);
            assert_eq!(window, attention, "{c:?} raw {raw} scale {scale}");
        }
    }
}

#[test]
fn attention_window_is_attention_on_the_cache_rows_of_the_window() {
    // Gemma 3 270M: 4 query heads on 1 kv head of 256, a window of 512 (first = n - 512).
    for (first, n, heads, kv_heads, head_dim) in
        [(3, 70, 4, 1, 256), (100, 612, 4, 1, 256), (1, 2, 2, 1, 8), (64, 129, 9, 3, 64), (63, 64, 3, 3, 5)]
    {
        let c = Attn { first, n, heads, kv_heads, head_dim, stride: n - first };
        let (q, k, v) = window_data(&c, n, u64::from(u32_of(first + n)), false);
        let mut memory = attention_memory(&q, &k, &v, c.width(), c.heads * c.stride);
        let window = run_window(&c, &mut memory, 1.0 / 16.0);
        let attention = run_attention_from(&c, &mut memory, 1.0 / 16.0);
        assert_eq!(window, attention, "{c:?}");
        assert!(window.0[..c.width()].iter().all(|&b| f32::from_bits(b).is_finite()), "{c:?}");
    }
}

#[test]
fn attention_window_ignores_keys_and_values_outside_the_window() {
    // The caches hold 40 positions more than n; every key and value before first and from n on
    // is NaN. The results are those of clean caches, bit for bit, and finite.
    for (first, n, heads, kv_heads, head_dim) in [(20, 90, 4, 1, 256), (1, 66, 6, 2, 16), (70, 71, 2, 1, 8)] {
        let c = Attn { first, n, heads, kv_heads, head_dim, stride: n - first + 1 };
        let positions = n + 40;
        let (q, k, v) = window_data(&c, positions, u64::from(u32_of(n)), false);
        let mut clean = attention_memory(&q, &k, &v, c.width(), c.heads * c.stride);
        let want = run_window(&c, &mut clean, 0.125);
        let outside = |j: usize| j < first || j >= n;
        let poison = |cache: &[f32]| -> Vec<f32> {
            let w = c.kv_width();
            cache.iter().enumerate().map(|(i, &x)| if outside(i / w) { f32::NAN } else { x }).collect()
        };
        let mut poisoned = attention_memory(&q, &poison(&k), &poison(&v), c.width(), c.heads * c.stride);
        let got = run_window(&c, &mut poisoned, 0.125);
        assert_eq!(got, want, "{c:?}");
        assert!(got.0[..c.width()].iter().all(|&b| f32::from_bits(b).is_finite()), "{c:?}");
        for h in 0..heads {
            let row = &got.1[h * c.stride..][..c.stride];
            assert!(row[..n - first].iter().all(|&b| f32::from_bits(b).is_finite()), "{c:?} head {h}: p");
            assert_eq!(row[n - first], SENTINEL, "{c:?} head {h}: scores past n - first");
        }
    }
}

/// The `f64` attention of one head over `keys` and `values` and the bounds its `f32` result must
/// meet: `(p, |p - p~| bound, out, |out - out~| bound)` (the derivation of `tests/prefill.rs`).
///
/// With `S_j = |scale| sum_d |q[d] k[j][d]|`, the `f32` score is within `e_j = (head_dim + 1) u
/// S_j` of the exact one, and `p~_j = exp(s~_j - s~_max)` (an `expf` within 2 ulp = `4u`
/// relative, after one rounded subtraction) is within a relative `E_j = e_j + e_max + u |s_j -
/// s_max| + 4u` (to first order, so with a factor 1.01) of `exp(s_j - s_max)`. The output then
/// moves by at most `2 E max_j |v_j|` from the weights' errors, plus the rounding of its sums:
/// `count` terms in the numerator, `ceil(count / 64)` per work-item and 6 tree levels in the
/// denominator, and the division, each relative to `max_j |v_j|`.
fn attention_bounds(qh: &[f32], keys: &[&[f32]], values: &[&[f32]], scale: f32) -> [Vec<f64>; 4] {
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
    let (mut out, mut out_bound) = (Vec::new(), Vec::new());
    for d in 0..qh.len() {
        let v_max = values.iter().map(|v| f64::from(v[d]).abs()).fold(0.0, f64::max);
        out.push(p.iter().zip(values).map(|(p, v)| p * f64::from(v[d])).sum::<f64>() / total);
        out_bound.push(v_max * (2.02 * rel_max + (count + (count / 64.0).ceil() + 8.0) * U));
    }
    [p, p_bound, out, out_bound]
}

#[test]
fn attention_window_matches_an_f64_softmax_over_exactly_the_window() {
    for (c, scale) in [
        (Attn { first: 20, n: 100, heads: 4, kv_heads: 1, head_dim: 256, stride: 80 }, 1.0f32 / 16.0),
        (Attn { first: 7, n: 77, heads: 9, kv_heads: 3, head_dim: 64, stride: 70 }, 0.125),
        // Large scores: the softmax is dominated by a few positions.
        (Attn { first: 2, n: 5, heads: 2, kv_heads: 1, head_dim: 16, stride: 3 }, 6.0),
    ] {
        let (q, k, v) = window_data(&c, c.n, u64::from(u32_of(c.n + c.first)), false);
        let mut memory = attention_memory(&q, &k, &v, c.width(), c.heads * c.stride);
        let (out, scores) = run_window(&c, &mut memory, scale);
        let kv_width = c.kv_width();
        for h in 0..c.heads {
            let kv_offset = h / (c.heads / c.kv_heads) * c.head_dim;
            let keys: Vec<&[f32]> = (c.first..c.n).map(|j| &k[j * kv_width + kv_offset..][..c.head_dim]).collect();
            let values: Vec<&[f32]> = (c.first..c.n).map(|j| &v[j * kv_width + kv_offset..][..c.head_dim]).collect();
            let [p, p_bound, exact, bound] =
                attention_bounds(&q[h * c.head_dim..][..c.head_dim], &keys, &values, scale);
            for (i, (&p, &pb)) in p.iter().zip(&p_bound).enumerate() {
                let got = f64::from(f32::from_bits(scores[h * c.stride + i]));
                assert!((got - p).abs() <= pb, "{c:?} head {h} p[{}]: {got} vs {p}", c.first + i);
            }
            for d in 0..c.head_dim {
                let got = f64::from(f32::from_bits(out[h * c.head_dim + d]));
                assert!((got - exact[d]).abs() <= bound[d], "{c:?} head {h} d {d}: {got} vs {}", exact[d]);
            }
        }
    }
}

/// The shape of an `attention_window_rows` launch.
#[derive(Clone, Copy, Debug)]
struct Rows {
    pos0: usize,
    n: usize,
    window: usize,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    stride: usize,
}

impl Rows {
    fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    fn width(&self) -> usize {
        self.heads * self.head_dim
    }

    /// Row `t`'s window: `max(0, pos0 + t + 1 - window)..pos0 + t + 1`.
    fn span(&self, t: usize) -> (usize, usize) {
        let end = self.pos0 + t + 1;
        (end.saturating_sub(self.window), end)
    }
}

fn rows_kernarg(c: &Rows, scale: f32) -> Vec<u8> {
    Kernarg::new(&signature::ATTENTION_WINDOW_ROWS)
        .ptr("out", Y)
        .ptr("q", Q)
        .ptr("k_cache", K)
        .ptr("v_cache", V)
        .ptr("scores", SCORES)
        .u32("pos0", u32_of(c.pos0))
        .u32("n", u32_of(c.n))
        .u32("window", u32_of(c.window))
        .u32("heads", u32_of(c.heads))
        .u32("kv_heads", u32_of(c.kv_heads))
        .u32("head_dim", u32_of(c.head_dim))
        .u32("scores_stride", u32_of(c.stride))
        .f32("scale", scale)
        .bytes()
}

/// Random `q` (`n` rows) and caches (`pos0 + n` positions) for `c`, mapped with sentinel outputs.
fn rows_memory(c: &Rows, seed: u64, raw: bool) -> HostMemory {
    let mut rng = Rng(seed);
    let q = data(&mut rng, c.n * c.width(), raw);
    let k = data(&mut rng, (c.pos0 + c.n) * c.kv_width(), raw);
    let v = data(&mut rng, (c.pos0 + c.n) * c.kv_width(), raw);
    attention_memory(&q, &k, &v, c.width(), c.n * c.heads * c.stride)
}

/// `(out, scores)` of the batched launch over `groups` work-groups.
fn run_rows(c: &Rows, memory: &mut HostMemory, scale: f32, groups: usize) -> (Vec<u32>, Vec<u32>) {
    let k = rows_kernarg(c, scale);
    run(cpu::attention_window_rows, &launch_1d(&k, u32_of(groups * 64), 64), memory);
    (read_bits(memory, Y, c.n * c.width()), read_bits(memory, SCORES, c.n * c.heads * c.stride))
}

/// Every (row, head) of the batched launch is `attention_window` at its position on `q[t]`, bit
/// for bit; work-groups past `groups` write nothing, and nothing is written past a row's window
/// in its scores row.
fn check_rows(c: &Rows, seed: u64, groups: usize, scale: f32, raw: bool) {
    let mut memory = rows_memory(c, seed, raw);
    let (out, scores) = run_rows(c, &mut memory, scale, groups);
    for t in 0..c.n {
        let (first, end) = c.span(t);
        let count = end - first;
        let single =
            Attn { first, n: end, heads: c.heads, kv_heads: c.kv_heads, head_dim: c.head_dim, stride: c.stride };
        let k = window_kernarg(&single, Q + 4 * (t * c.width()) as u64, (SINGLE, SINGLE_SCORES), scale);
        run(cpu::attention_window, &launch_1d(&k, u32_of(c.heads * 64), 64), &mut memory);
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
            assert!(got_scores[count..].iter().all(|&b| b == SENTINEL), "{what}: scores past the window");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn attention_window_rows_are_attention_window_bit_for_bit(
        pos0 in 0usize..=70,
        n in 1usize..=13,
        window in prop_oneof![1usize..=8, 1usize..=90],
        kv_heads in 1usize..=3,
        group in 1usize..=3,
        head_dim in prop_oneof![3 => 1usize..=80, 1 => Just(256usize)],
        extra in 0usize..=3,
        short in prop::sample::select(vec![0usize, 0, 0, 1, 5]),
        raw in prop::bool::weighted(0.2),
        seed in any::<u64>(),
    ) {
        let heads = kv_heads * group;
        let stride = window.min(pos0 + n) + extra;
        let c = Rows { pos0, n, window, heads, kv_heads, head_dim, stride };
        let scale = 1.0 / (head_dim as f32).sqrt();
        check_rows(&c, seed, (n * heads).saturating_sub(short).max(1), scale, raw);
    }
}

#[test]
fn attention_window_rows_are_attention_window_bit_for_bit_at_the_model_shape() {
    // Gemma 3 270M: a 128-token chunk from position 450 with a window of 512, so the windows of
    // rows 62 on no longer start at 0; 4 query heads on 1 kv head of 256, scale 256^-1/2.
    let c = Rows { pos0: 450, n: 128, window: 512, heads: 4, kv_heads: 1, head_dim: 256, stride: 512 };
    check_rows(&c, 17, c.n * c.heads, 1.0 / 16.0, false);
    // A first chunk shorter than the window, and windows of 1 and 2.
    let c = Rows { pos0: 0, n: 37, window: 512, heads: 4, kv_heads: 1, head_dim: 256, stride: 37 };
    check_rows(&c, 18, c.n * c.heads, 1.0 / 16.0, false);
    for window in [1, 2] {
        let c = Rows { pos0: 3, n: 9, window, heads: 4, kv_heads: 1, head_dim: 256, stride: window };
        check_rows(&c, 19, c.n * c.heads, 1.0 / 16.0, false);
    }
}

#[test]
fn attention_window_rows_over_empty_heads_are_attention_window_bit_for_bit() {
    // head_dim = 0: every score is 0 * scale, NaN for an infinite or NaN scale.
    let c = Rows { pos0: 40, n: 5, window: 7, heads: 4, kv_heads: 2, head_dim: 0, stride: 8 };
    for scale in [0.5, -0.0, f32::INFINITY, f32::NAN] {
        check_rows(&c, 43, c.n * c.heads, scale, false);
        check_rows(&c, 43, 7, scale, false);
    }
}

#[test]
fn attention_window_rows_with_a_window_over_every_position_are_attention_rows() {
    // window >= pos0 + n: every row attends 0..=pos0 + t, as prefill's attention_rows.
    for (pos0, n, window, heads, kv_heads, head_dim) in [(30, 9, 39, 9, 3, 64), (0, 20, 1000, 4, 1, 256)] {
        let c = Rows { pos0, n, window, heads, kv_heads, head_dim, stride: pos0 + n };
        let mut memory = rows_memory(&c, 23, false);
        let windowed = run_rows(&c, &mut memory, 0.125, n * heads);
        let mut memory = rows_memory(&c, 23, false);
        let k = Kernarg::new(&signature::ATTENTION_ROWS)
            .ptr("out", Y)
            .ptr("q", Q)
            .ptr("k_cache", K)
            .ptr("v_cache", V)
            .ptr("scores", SCORES)
            .u32("pos0", u32_of(pos0))
            .u32("n", u32_of(n))
            .u32("heads", u32_of(heads))
            .u32("kv_heads", u32_of(kv_heads))
            .u32("head_dim", u32_of(head_dim))
            .u32("scores_stride", u32_of(c.stride))
            .f32("scale", 0.125)
            .bytes();
        run(cpu::attention_rows, &launch_1d(&k, u32_of(n * heads * 64), 64), &mut memory);
        let rows = (read_bits(&memory, Y, n * c.width()), read_bits(&memory, SCORES, n * heads * c.stride));
        assert_eq!(windowed, rows, "{c:?}");
    }
}

#[test]
fn attention_window_preconditions_and_faults_are_typed_errors() {
    let c = Attn { first: 2, n: 6, heads: 6, kv_heads: 3, head_dim: 8, stride: 4 };
    let (q, k, v) = window_data(&c, c.n, 31, false);
    let mut memory = attention_memory(&q, &k, &v, c.width(), c.heads * c.stride);
    let attempt = |c: &Attn, groups: usize, wg: u16, memory: &mut HostMemory| {
        let k = window_kernarg(c, Q, (Y, SCORES), 0.5);
        cpu::attention_window(&launch_1d(&k, u32_of(groups * usize::from(wg)), wg), memory)
    };
    assert_eq!(
        attempt(&Attn { kv_heads: 4, ..c }, 6, 64, &mut memory),
        Err(KernelError::KvHeadsMismatch { heads: 6, kv_heads: 4 })
    );
    assert_eq!(attempt(&Attn { first: 6, ..c }, 6, 64, &mut memory), Err(KernelError::EmptyWindow { first: 6, n: 6 }));
    assert_eq!(attempt(&Attn { first: 9, ..c }, 6, 64, &mut memory), Err(KernelError::EmptyWindow { first: 9, n: 6 }));
    assert_eq!(
        attempt(&Attn { first: 1, ..c }, 6, 64, &mut memory),
        Err(KernelError::ScoresStrideTooSmall { n: 5, scores_stride: 4 })
    );
    assert_eq!(
        attempt(&Attn { first: u32::MAX as usize - 2, n: u32::MAX as usize, ..c }, 6, 64, &mut memory),
        Err(KernelError::StridedLoopWraps { arg: "n", count: u32::MAX, limit: u32::MAX - 63 })
    );
    assert_eq!(
        attempt(&c, 12, 32, &mut memory),
        Err(KernelError::WorkgroupSizeRequired { workgroup_size_x: 32, required: 64 })
    );
    let k = window_kernarg(&c, Q, (Y, SCORES), 0.5);
    assert_eq!(
        cpu::attention_window(&launch_1d(&k, 6 * 64 - 1, 64), &mut memory),
        Err(KernelError::PartialWorkgroup { grid_size_x: 6 * 64 - 1, workgroup_size_x: 64 })
    );
    // One more position than the caches hold: a fault naming k_cache, before any store.
    let err = attempt(&Attn { first: 3, n: 7, ..c }, 6, 64, &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "k_cache", .. }), "{err}");
    assert!(read_bits(&memory, Y, c.width()).iter().all(|&b| b == SENTINEL));
    assert!(read_bits(&memory, SCORES, c.heads * c.stride).iter().all(|&b| b == SENTINEL));
    // No head to handle: nothing is checked or touched.
    assert_eq!(attempt(&Attn { heads: 0, kv_heads: 0, first: 9, ..c }, 1, 64, &mut HostMemory::new()), Ok(()));
}

#[test]
fn attention_window_rows_preconditions_and_faults_are_typed_errors() {
    let c = Rows { pos0: 3, n: 2, window: 4, heads: 6, kv_heads: 3, head_dim: 8, stride: 4 };
    // Queries for 3 rows, caches for pos0 + n = 5 positions.
    let mut memory = rows_memory(&Rows { pos0: 2, n: 3, ..c }, 37, false);
    let attempt = |c: &Rows, groups: usize, wg: u16, memory: &mut HostMemory| {
        let k = rows_kernarg(c, 0.5);
        cpu::attention_window_rows(&launch_1d(&k, u32_of(groups * usize::from(wg)), wg), memory)
    };
    let groups = c.n * c.heads;
    assert_eq!(
        attempt(&Rows { kv_heads: 0, ..c }, groups, 64, &mut memory),
        Err(KernelError::KvHeadsMismatch { heads: 6, kv_heads: 0 })
    );
    assert_eq!(
        attempt(&Rows { window: 0, ..c }, groups, 64, &mut memory),
        Err(KernelError::EmptyWindow { first: 4, n: 4 })
    );
    // min(window, pos0 + n) = 5 positions in a row of 4.
    assert_eq!(
        attempt(&Rows { window: 9, ..c }, groups, 64, &mut memory),
        Err(KernelError::ScoresStrideTooSmall { n: 5, scores_stride: 4 })
    );
    assert_eq!(
        attempt(&Rows { pos0: u32::MAX as usize - 2, stride: u32::MAX as usize, ..c }, groups, 64, &mut memory),
        Err(KernelError::StridedLoopWraps { arg: "pos0 + n", count: u32::MAX, limit: u32::MAX - 63 })
    );
    assert_eq!(
        attempt(&c, 2 * groups, 32, &mut memory),
        Err(KernelError::WorkgroupSizeRequired { workgroup_size_x: 32, required: 64 })
    );
    let k = rows_kernarg(&c, 0.5);
    assert_eq!(
        cpu::attention_window_rows(&launch_1d(&k, u32_of(groups * 64 - 1), 64), &mut memory),
        Err(KernelError::PartialWorkgroup { grid_size_x: u32_of(groups * 64 - 1), workgroup_size_x: 64 })
    );
    // One more row than the caches hold positions for: a fault naming k_cache, before any store.
    let err = attempt(&Rows { n: 3, ..c }, 3 * c.heads, 64, &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "k_cache", .. }), "{err}");
    assert!(read_bits(&memory, Y, c.n * c.width()).iter().all(|&b| b == SENTINEL));
    assert!(read_bits(&memory, SCORES, c.n * c.heads * c.stride).iter().all(|&b| b == SENTINEL));
    // No row or no head: nothing is checked or touched.
    assert_eq!(attempt(&Rows { n: 0, kv_heads: 0, ..c }, 1, 64, &mut HostMemory::new()), Ok(()));
    assert_eq!(attempt(&Rows { heads: 0, stride: 0, window: 0, ..c }, 1, 64, &mut HostMemory::new()), Ok(()));
}
