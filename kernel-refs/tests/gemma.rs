//! The Gemma kernels (module `gemma`).
//!
//! 1. NEOX rope: against hand-derived rotations that tell the half-apart pairs `(i, i + half)`
//!    from llama's adjacent `(2i, 2i + 1)`, against an `f64` rotation within `3u (|x0 c| +
//!    |x1 s|)` per element (`u = 2^-24`: two rounded products and a rounded sum), the store into
//!    exactly the cache row of `pos`, grids cut inside a head, and `rope_neox_rows` row `t`
//!    against `rope_neox` at `pos0 + t` bit for bit.
//! 2. Sliding-window attention: `tests/gemma_attention.rs`.
//! 3. `gelu_mul` against an `f64` GELU over a sweep of every binade, zeros, subnormals, huge
//!    values, infinities and NaN, within the bound stated at [`gelu_bound`].
//! 4. Launch preconditions and faults are typed errors, before any store where the launch is at
//!    fault.

mod common;

use common::{
    GUARD, Kernarg, Recorder, Rng, SENTINEL, buffer, check_within, f32_of, launch_1d, read_bits, rope_table, run,
    sentinel_buffer, u32_of,
};
use kernel_refs::cpu::{self, CpuReference, KernelError};
use kernel_refs::effects;
use kernel_refs::memory::{DeviceMemory, HostMemory};
use kernels::signature::{self, Signature};
use proptest::prelude::*;

const X: u64 = 0x1_0000_0000;
const TABLE: u64 = 0x2_0000_0000;
const CACHE: u64 = 0x3_0000_0000;
const SINGLE: u64 = 0x4_0000_0000;
const Y: u64 = 0xa_0000_0000;

/// The unit roundoff of `f32`.
const U: f64 = 1.0 / 16_777_216.0;

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

// ---------------------------------------------------------------------------------------------
// NEOX rope

/// A `rope`-shaped kernarg (`rope`, `rope_neox`) on `x` at [`X`] and the table at [`TABLE`].
fn rope_kernarg(sig: &'static Signature, pos: u32, heads: usize, head_dim: usize, wg: u16) -> Vec<u8> {
    Kernarg::new(sig)
        .ptr("x", X)
        .ptr("table", TABLE)
        .u32("pos", pos)
        .u32("heads", u32_of(heads))
        .u32("head_dim", u32_of(head_dim))
        .group_size(wg)
        .bytes()
}

fn rope_store_kernarg(sig: &'static Signature, pos: u32, heads: usize, head_dim: usize, wg: u16) -> Vec<u8> {
    Kernarg::new(sig)
        .ptr("cache", CACHE)
        .ptr("src", X)
        .ptr("table", TABLE)
        .u32("pos", pos)
        .u32("heads", u32_of(heads))
        .u32("head_dim", u32_of(head_dim))
        .group_size(wg)
        .bytes()
}

fn rope_rows_kernarg(pos0: usize, heads: usize, head_dim: usize, n: usize, wg: u16) -> Vec<u8> {
    Kernarg::new(&signature::ROPE_NEOX_ROWS)
        .ptr("x", X)
        .ptr("table", TABLE)
        .u32("pos0", u32_of(pos0))
        .u32("heads", u32_of(heads))
        .u32("head_dim", u32_of(head_dim))
        .u32("n", u32_of(n))
        .group_size(wg)
        .bytes()
}

/// `x` after the in-place rope `cpu` at `pos`, one work-item per pair.
fn rotated(
    cpu: CpuReference,
    sig: &'static Signature,
    x: &[f32],
    table: &[f32],
    shape: (u32, usize, usize),
) -> Vec<u32> {
    let (pos, heads, head_dim) = shape;
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, x);
    buffer(&mut memory, TABLE, table);
    let k = rope_kernarg(sig, pos, heads, head_dim, 64);
    run(cpu, &launch_1d(&k, u32_of(heads * head_dim / 2), 64), &mut memory);
    read_bits(&memory, X, x.len())
}

#[test]
fn rope_neox_rotates_the_pairs_half_a_head_apart_not_the_adjacent_ones() {
    // Two heads of 4; table row 1 turns pair 0 by 90 degrees (c = 0, s = 1) and leaves pair 1
    // (c = 1, s = 0). NEOX pairs (x0, x2) and (x1, x3): head [1, 2, 3, 4] becomes
    // [1*0 - 3*1, 2, 1*1 + 3*0, 4] = [-3, 2, 1, 4]. llama's rope pairs (x0, x1) and (x2, x3):
    // [-2, 1, 3, 4].
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let table = [0.5, 0.5, 0.5, 0.5, 0.0, 1.0, 1.0, 0.0];
    let neox = rotated(cpu::rope_neox, &signature::ROPE_NEOX, &x, &table, (1, 2, 4));
    let mut expected = bits(&[-3.0, 2.0, 1.0, 4.0, -7.0, 6.0, 5.0, 8.0]);
    expected.extend([SENTINEL; GUARD]);
    assert_eq!(neox, expected);
    let adjacent = rotated(cpu::rope, &signature::ROPE, &x, &table, (1, 2, 4));
    let mut expected = bits(&[-2.0, 1.0, 3.0, 4.0, -6.0, 5.0, 7.0, 8.0]);
    expected.extend([SENTINEL; GUARD]);
    assert_eq!(adjacent, expected);
}

/// Every element of the in-place NEOX rotation of `x` (`heads` heads of `head_dim`) against the
/// `f64` rotation with the table row of `pos`: within `3u (|x0 c| + |x1 s|)`.
fn check_neox_f64(got: &[u32], x: &[f32], table: &[f32], pos: usize, heads: usize, head_dim: usize) {
    let half = head_dim / 2;
    for h in 0..heads {
        for i in 0..half {
            let e = h * head_dim + i;
            let cs = &table[2 * (pos * half + i)..][..2];
            let (x0, x1, c, s) = (f64::from(x[e]), f64::from(x[e + half]), f64::from(cs[0]), f64::from(cs[1]));
            let rotated = [
                (e, x0 * c - x1 * s, (x0 * c).abs() + (x1 * s).abs()),
                (e + half, x0 * s + x1 * c, (x0 * s).abs() + (x1 * c).abs()),
            ];
            for (at, exact, magnitude) in rotated {
                let v = f64::from(f32::from_bits(got[at]));
                assert!((v - exact).abs() <= 3.0 * U * magnitude, "head {h} pair {i}: x[{at}] {v} vs {exact}");
            }
        }
    }
}

#[test]
fn rope_neox_matches_f64_rotation() {
    // Gemma 3 270M's query (4 heads of 256) and key (1 head) at a late position, and a small
    // ragged shape.
    for (pos, heads, head_dim) in [(700usize, 4usize, 256usize), (700, 1, 256), (5, 3, 10)] {
        let table = rope_table(pos + 1, head_dim);
        let x = Rng(u64::from(u32_of(pos + heads))).f32s(heads * head_dim, -3.0, 3.0);
        let got = rotated(cpu::rope_neox, &signature::ROPE_NEOX, &x, &table, (u32_of(pos), heads, head_dim));
        check_neox_f64(&got, &x, &table, pos, heads, head_dim);
        assert!(got[heads * head_dim..].iter().all(|&b| b == SENTINEL), "nothing past the heads");
    }
}

#[test]
fn rope_neox_store_writes_exactly_the_cache_row_of_pos() {
    let (positions, pos, heads, head_dim) = (6usize, 4usize, 2usize, 256usize);
    let width = heads * head_dim;
    let table = rope_table(positions, head_dim);
    let src = Rng(3).f32s(width, -2.0, 2.0);
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &src);
    buffer(&mut memory, TABLE, &table);
    sentinel_buffer(&mut memory, CACHE, positions * width);
    let k = rope_store_kernarg(&signature::ROPE_NEOX_STORE, u32_of(pos), heads, head_dim, 64);
    run(cpu::rope_neox_store, &launch_1d(&k, u32_of(width / 2), 64), &mut memory);
    assert_eq!(read_bits(&memory, X, width)[..width], bits(&src)[..], "src is unchanged");
    let in_place = rotated(cpu::rope_neox, &signature::ROPE_NEOX, &src, &table, (u32_of(pos), heads, head_dim));
    let cache = read_bits(&memory, CACHE, positions * width);
    for (i, &b) in cache.iter().enumerate() {
        if (pos * width..(pos + 1) * width).contains(&i) {
            assert_eq!(b, in_place[i - pos * width], "cache[{i}] is rope_neox's result");
        } else {
            assert_eq!(b, SENTINEL, "cache[{i}] outside row {pos} is untouched");
        }
    }
}

/// Runs `cpu` behind a recorder and checks every access lies in the kernel's declared effects.
fn run_within_effects(
    cpu: CpuReference,
    sig: &'static Signature,
    kernarg: &[u8],
    grid: u32,
    wg: u16,
    memory: &mut HostMemory,
) {
    let launch = launch_1d(kernarg, grid, wg);
    let decl = kernels::catalog::MODULES
        .iter()
        .flat_map(|m| m.kernels)
        .find(|k| std::ptr::eq(k.signature, sig))
        .expect("catalogued")
        .effects;
    let resolved = effects::resolve(decl, &launch).unwrap();
    let mut recorder = Recorder::new(memory);
    cpu(&launch, &mut recorder).unwrap();
    check_within(&resolved, &recorder).unwrap_or_else(|e| panic!("{}: {e}", sig.name));
}

#[test]
fn a_grid_cut_inside_a_head_rotates_exactly_its_pairs_within_the_effects() {
    // 3 heads of 8 (half 4); 6 work-items: head 0 whole, then pairs 0 and 1 of head 1, which
    // touch its elements 0, 1 (lower half) and 4, 5 (upper half); 2, 3, 6, 7 and head 2 are not.
    let (pos, heads, head_dim, grid) = (2usize, 3usize, 8usize, 6u32);
    let width = heads * head_dim;
    let table = rope_table(pos + 1, head_dim);
    let x = Rng(5).f32s(width, -2.0, 2.0);
    let full = rotated(cpu::rope_neox, &signature::ROPE_NEOX, &x, &table, (u32_of(pos), heads, head_dim));
    let touched = |i: usize| i < 8 || [8, 9, 12, 13].contains(&i);
    let expect = |i: usize, got: u32, what: &str| {
        let want = if touched(i) { full[i] } else { x[i].to_bits() };
        assert_eq!(got, want, "{what}: x[{i}]");
    };

    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &x);
    buffer(&mut memory, TABLE, &table);
    let k = rope_kernarg(&signature::ROPE_NEOX, u32_of(pos), heads, head_dim, 4);
    run_within_effects(cpu::rope_neox, &signature::ROPE_NEOX, &k, grid, 4, &mut memory);
    for (i, &b) in read_bits(&memory, X, width)[..width].iter().enumerate() {
        expect(i, b, "rope_neox");
    }

    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &x);
    buffer(&mut memory, TABLE, &table);
    sentinel_buffer(&mut memory, CACHE, (pos + 1) * width);
    let k = rope_store_kernarg(&signature::ROPE_NEOX_STORE, u32_of(pos), heads, head_dim, 4);
    run_within_effects(cpu::rope_neox_store, &signature::ROPE_NEOX_STORE, &k, grid, 4, &mut memory);
    let cache = read_bits(&memory, CACHE, (pos + 1) * width);
    for (i, &b) in cache[pos * width..][..width].iter().enumerate() {
        if touched(i) {
            expect(i, b, "rope_neox_store");
        } else {
            assert_eq!(b, SENTINEL, "rope_neox_store: cache row element {i}");
        }
    }

    // Two rows of these heads at positions pos - 1 and pos: row 0 whole, row 1 cut as above.
    let rows: Vec<f32> = Rng(6).f32s(width, -2.0, 2.0).into_iter().chain(x.iter().copied()).collect();
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &rows);
    buffer(&mut memory, TABLE, &table);
    let k = rope_rows_kernarg(pos - 1, heads, head_dim, 2, 4);
    run_within_effects(cpu::rope_neox_rows, &signature::ROPE_NEOX_ROWS, &k, u32_of(width / 2) + grid, 4, &mut memory);
    for (i, &b) in read_bits(&memory, X, 2 * width)[width..2 * width].iter().enumerate() {
        expect(i, b, "rope_neox_rows row 1");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rope_neox_rows_are_rope_neox_bit_for_bit(
        pos0 in 0usize..100,
        heads in 1usize..=9,
        half in prop::sample::select(vec![1usize, 2, 3, 5, 16, 40, 128]),
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
        run(cpu::rope_neox_rows, &launch_1d(&k, u32_of(active), wg), &mut memory);
        let batched = read_bits(&memory, X, n * width);
        for t in 0..n {
            let pairs = (active.saturating_sub(t * width / 2)).min(width / 2);
            memory.write_f32s(SINGLE, &x[t * width..][..width]).unwrap();
            if pairs > 0 {
                let k = Kernarg::new(&signature::ROPE_NEOX)
                    .ptr("x", SINGLE)
                    .ptr("table", TABLE)
                    .u32("pos", u32_of(pos0 + t))
                    .u32("heads", u32_of(heads))
                    .u32("head_dim", u32_of(head_dim))
                    .group_size(wg)
                    .bytes();
                run(cpu::rope_neox, &launch_1d(&k, u32_of(pairs), wg), &mut memory);
            }
            let single = read_bits(&memory, SINGLE, width);
            prop_assert_eq!(&batched[t * width..][..width], &single[..width], "row {}", t);
        }
        prop_assert!(batched[n * width..].iter().all(|&b| b == SENTINEL));
    }
}

#[test]
fn rope_neox_preconditions_and_faults_are_typed_errors() {
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, X, 64);
    buffer(&mut memory, TABLE, &[1.0; 64]);
    let sig = &signature::ROPE_NEOX;
    assert_eq!(
        cpu::rope_neox(&launch_1d(&rope_kernarg(sig, 0, 2, 7, 64), 64, 64), &mut memory),
        Err(KernelError::OddHeadDim { head_dim: 7 })
    );
    assert_eq!(
        cpu::rope_neox(&launch_1d(&rope_kernarg(sig, 0, 1 << 16, 1 << 16, 64), 64, 64), &mut memory),
        Err(KernelError::HeadElementsOverflow { heads: 1 << 16, head_dim: 1 << 16 })
    );
    assert_eq!(
        cpu::rope_neox_store(
            &launch_1d(&rope_store_kernarg(&signature::ROPE_NEOX_STORE, 0, 3, 5, 64), 64, 64),
            &mut memory
        ),
        Err(KernelError::OddHeadDim { head_dim: 5 })
    );
    assert_eq!(
        cpu::rope_neox_rows(&launch_1d(&rope_rows_kernarg(0, 2, 9, 2, 64), 64, 64), &mut memory),
        Err(KernelError::OddHeadDim { head_dim: 9 })
    );
    // The table row of position 5 (head_dim 16) starts at float 80, past the 72 mapped: a fault
    // naming the table, after x is loaded and before anything is stored.
    let err = cpu::rope_neox(&launch_1d(&rope_kernarg(&signature::ROPE_NEOX, 5, 2, 16, 64), 16, 64), &mut memory)
        .unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "table", .. }), "{err}");
    assert!(read_bits(&memory, X, 64).iter().all(|&b| b == SENTINEL), "nothing stored before the fault");
    // head_dim 0: no pair, nothing touched, even through unmapped pointers.
    let k = Kernarg::new(&signature::ROPE_NEOX).ptr("x", 8).ptr("table", 8).u32("heads", 4).group_size(64).bytes();
    assert_eq!(cpu::rope_neox(&launch_1d(&k, 64, 64), &mut HostMemory::new()), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// GELU

/// GELU's tanh approximation of `g` in `f64` with the exact constants, by the form without
/// cancellation: `0.5 g (1 + tanh(k)) = g / (1 + e^(-2k))`, `k = sqrt(2/pi) (g + 0.044715 g^3)`.
fn gelu_f64(g: f32) -> f64 {
    let g = f64::from(g);
    let k = (2.0 / std::f64::consts::PI).sqrt() * (g + 0.044_715 * g * g * g);
    g / (1.0 + (-2.0 * k).exp())
}

/// The bound `|out - gelu(g) up|` meets, with `G = gelu(g)` exact: `(4 |g| + 2 |G|) u |up| +
/// (1 + |up|) 2^-149`. Derivation: the computed `k` is within `7u |k|` of the exact (the two
/// rounded constants and five rounded operations), which moves `tanh` by at most
/// `7u max_k |k| sech^2 k <= 3.2u`; `rl_tanhf` adds at most 2 ulp `<= 2u` (`|tanh| < 1`); `1 + t`
/// rounds once (`<= 2u` absolute), halving is exact: `w` is within `3.6u` of the exact
/// `(1 + tanh k) / 2`, so `g w` within `3.6u |g|`, then the two products round (`2u |G|`). Where
/// they are subnormal, each rounds by up to `2^-150` absolute, the first one carried through the
/// multiply by `up` (twice that, for slack). For `g >= 0` (`G >= g / 2`) the first term is at
/// most `10u |G up|`: relative.
fn gelu_bound(g: f32, exact: f64, up: f32) -> f64 {
    (4.0 * f64::from(g).abs() + 2.0 * exact.abs()) * U * f64::from(up).abs()
        + (1.0 + f64::from(up).abs()) * 2f64.powi(-149)
}

/// `gelu_mul` over `gate` and `up` (one launch), as values.
fn run_gelu(gate: &[f32], up: &[f32]) -> Vec<f32> {
    let n = gate.len();
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, gate);
    buffer(&mut memory, TABLE, up);
    sentinel_buffer(&mut memory, Y, n);
    let k = Kernarg::new(&signature::GELU_MUL)
        .ptr("out", Y)
        .ptr("gate", X)
        .ptr("up", TABLE)
        .u32("n", u32_of(n))
        .group_size(256)
        .bytes();
    // A grid past n: the work-items past it write nothing.
    run(cpu::gelu_mul, &launch_1d(&k, u32_of(n + 300), 256), &mut memory);
    let out = read_bits(&memory, Y, n);
    assert!(out[n..].iter().all(|&b| b == SENTINEL), "nothing past n");
    out[..n].iter().map(|&b| f32::from_bits(b)).collect()
}

/// Gates over every binade: every 4099th bit pattern (both signs, zeros, subnormals, huge
/// values, infinities and NaNs included), the neighbourhoods of 0 and of the saturation points,
/// and uniform values over the range where the curve bends.
fn gelu_gates() -> Vec<f32> {
    let mut gates: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
    gates.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, -f32::MAX, f32::MIN_POSITIVE]);
    gates.extend((1..=64).map(f32::from_bits).flat_map(|x| [x, -x]));
    for edge in [5.2f32, -5.2, 9.0, -9.0, 0.5, -0.5] {
        let bits = edge.to_bits();
        gates.extend((bits - 2000..=bits + 2000).map(f32::from_bits));
    }
    let mut rng = Rng(0x9e1);
    gates.extend(rng.f32s(300_000, -12.0, 12.0));
    gates
}

#[test]
fn gelu_mul_matches_f64_gelu_within_the_derived_bound() {
    let gates = gelu_gates();
    let mut rng = Rng(0x6e1);
    for ups in [vec![1.0f32; gates.len()], rng.f32s(gates.len(), -4.0, 4.0)] {
        let out = run_gelu(&gates, &ups);
        let (mut worst_abs, mut worst_rel) = (0.0f64, 0.0f64);
        for ((&g, &up), &got) in gates.iter().zip(&ups).zip(&out) {
            if g.is_nan() {
                assert!(got.is_nan(), "gelu(NaN) * {up}");
                continue;
            }
            if g.is_infinite() {
                // gelu(+inf) = +inf, gelu(-inf) = -0 (its limit).
                let gelu = if g > 0.0 { f32::INFINITY } else { -0.0 };
                assert_eq!(got.to_bits(), (gelu * up).to_bits(), "gelu({g}) * {up}");
                continue;
            }
            let exact = gelu_f64(g) * f64::from(up);
            if f32_of(exact).is_infinite() {
                assert_eq!(got, f32_of(exact), "gelu({g:e}) * {up} overflows");
                continue;
            }
            let err = (f64::from(got) - exact).abs();
            let bound = gelu_bound(g, gelu_f64(g), up);
            assert!(err <= bound, "gelu({g:e}) * {up}: {got:e} vs {exact:e} (bound {bound:e})");
            if g != 0.0 && up != 0.0 && f64::from(g).abs() > 1e-30 {
                worst_abs = worst_abs.max(err / (U * f64::from(g).abs() * f64::from(up).abs()));
                if g > 0.0 {
                    worst_rel = worst_rel.max(err / (U * exact.abs()));
                }
            }
        }
        eprintln!(
            "gelu_mul: {} gates, max error {worst_abs:.3} u |g up|, {worst_rel:.3} u |gelu(g) up| for g > 0",
            gates.len()
        );
        assert!(worst_rel <= 10.0, "relative error {worst_rel} u for g > 0");
    }
}

#[test]
fn gelu_mul_signs_zeros_and_limits() {
    let gates = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30, 6.0, -6.0, 1e-40, -1e-40];
    let out = run_gelu(&gates, &[1.0; 10]);
    let expected = [0.0f32, -0.0, f32::INFINITY, -0.0, 1e30, -0.0, 6.0, -0.0, 5e-41, -5e-41];
    assert_eq!(bits(&out), bits(&expected));
    // gelu(1) = 0.841192 (0.5 (1 + tanh(sqrt(2/pi) 1.044715))), gelu(-1) = -0.158808.
    let out = run_gelu(&[1.0, -1.0], &[1.0, 1.0]);
    assert!((f64::from(out[0]) - 0.841_191_990_608_276_8).abs() < 2e-7, "{}", out[0]);
    assert!((f64::from(out[1]) + 0.158_808_009_391_723_2).abs() < 2e-7, "{}", out[1]);
}

#[test]
fn gelu_mul_faults_name_the_argument_after_the_work_groups_before_it() {
    // A short `up` buffer faults naming it, after the work-groups before it are stored.
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &[1.0; 512]);
    buffer(&mut memory, TABLE, &[1.0; 100]);
    sentinel_buffer(&mut memory, Y, 512);
    let k =
        Kernarg::new(&signature::GELU_MUL).ptr("out", Y).ptr("gate", X).ptr("up", TABLE).u32("n", 512).group_size(64);
    let err = cpu::gelu_mul(&launch_1d(&k.bytes(), 512, 64), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "up", .. }), "{err}");
    let out = read_bits(&memory, Y, 512);
    assert!(out[..64].iter().all(|&b| b != SENTINEL), "work-group 0 is stored");
    assert!(out[64..512].iter().all(|&b| b == SENTINEL), "nothing from work-group 1 on");
}
