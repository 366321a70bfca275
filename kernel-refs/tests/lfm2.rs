//! The LFM2 kernels (module `lfm2`): `shortconv` and `shortconv_rows`.
//!
//! 1. Hand-derived values: one token's gated convolution on literal numbers, and the state row
//!    left shifted by one with the new `B * x` last.
//! 2. A sequence of tokens against an `f64` gated causal convolution over the whole sequence
//!    (zero history), within `(d_conv + 3) u |C| sum_k |s_k w_k|` per output (`u = 2^-24`: the
//!    rounded `B * x` of each term, its product with the tap, at most `d_conv` rounded additions
//!    after the exact first one, and the rounded gating product).
//! 3. The state holds exactly the last `d_conv` inputs: after `d_conv` tokens a sequence started
//!    from garbage state gives the bits of one started from zeros.
//! 4. `shortconv_rows` over `n` tokens is `n` `shortconv` launches bit for bit (outputs and the
//!    state after them), over shapes, tap counts and grids (property test).
//! 5. Channels past the grid are untouched; faults and broken launches are typed errors, with
//!    the work-groups before a fault stored and nothing after it.

mod common;

use common::{GUARD, Kernarg, Rng, SENTINEL, buffer, launch_1d, read_bits, run, sentinel_buffer, u32_of};
use kernel_refs::cpu::{self, KernelError};
use kernel_refs::memory::{DeviceMemory, HostMemory};
use kernels::signature;
use proptest::prelude::*;

const OUT: u64 = 0x1_0000_0000;
const STATE: u64 = 0x2_0000_0000;
const BCX: u64 = 0x3_0000_0000;
const WEIGHT: u64 = 0x4_0000_0000;

/// The unit roundoff of `f32`.
const U: f64 = 1.0 / 16_777_216.0;

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn f32s(bits: &[u32]) -> Vec<f32> {
    bits.iter().map(|&b| f32::from_bits(b)).collect()
}

/// A `shortconv` kernarg on the buffers at the constants above.
fn step_kernarg(dim: usize, d_conv: usize, wg: u16) -> Vec<u8> {
    Kernarg::new(&signature::SHORTCONV)
        .ptr("out", OUT)
        .ptr("state", STATE)
        .ptr("bcx", BCX)
        .ptr("weight", WEIGHT)
        .u32("dim", u32_of(dim))
        .u32("d_conv", u32_of(d_conv))
        .group_size(wg)
        .bytes()
}

fn rows_kernarg(dim: usize, d_conv: usize, n: usize, wg: u16) -> Vec<u8> {
    Kernarg::new(&signature::SHORTCONV_ROWS)
        .ptr("out", OUT)
        .ptr("state", STATE)
        .ptr("bcx", BCX)
        .ptr("weight", WEIGHT)
        .u32("dim", u32_of(dim))
        .u32("d_conv", u32_of(d_conv))
        .u32("n", u32_of(n))
        .group_size(wg)
        .bytes()
}

/// Memory with the state, the taps, `bcx` and a sentinel `out` of `out_len` elements.
fn mapped(state: &[f32], weight: &[f32], bcx: &[f32], out_len: usize) -> HostMemory {
    let mut memory = HostMemory::new();
    buffer(&mut memory, STATE, state);
    buffer(&mut memory, WEIGHT, weight);
    buffer(&mut memory, BCX, bcx);
    sentinel_buffer(&mut memory, OUT, out_len);
    memory
}

#[test]
fn one_token_sums_the_window_oldest_first_gates_it_and_shifts_the_state() {
    // Two channels, d_conv 2 (l_cache 3). Channel 0: state [1, 2], taps [10, 100, 1000],
    // B = 2, C = 0.5, x = 3: bx = 6, (1*10 + 2*100) + 6*1000 = 6210, out 3105, state [2, 6].
    // Channel 1: state [-1, 4], taps [0.5, 0.25, 2], B = -1, C = 3, x = 0.5: bx = -0.5,
    // (-0.5 + 1) + -1 = -0.5, out -1.5, state [4, -0.5].
    let state = [1.0, 2.0, -1.0, 4.0];
    let weight = [10.0, 100.0, 1000.0, 0.5, 0.25, 2.0];
    let bcx = [2.0, -1.0, 0.5, 3.0, 3.0, 0.5];
    let mut memory = mapped(&state, &weight, &bcx, 2);
    let k = step_kernarg(2, 2, 64);
    run(cpu::shortconv, &launch_1d(&k, 64, 64), &mut memory);
    let mut expected = bits(&[3105.0, -1.5]);
    expected.extend([SENTINEL; GUARD]);
    assert_eq!(read_bits(&memory, OUT, 2), expected);
    let state = read_bits(&memory, STATE, 4);
    assert_eq!(f32s(&state[..4]), [2.0, 6.0, 4.0, -0.5]);
    assert!(state[4..].iter().all(|&b| b == SENTINEL), "nothing past the state rows");
}

#[test]
fn the_current_input_alone_is_tapped_by_the_last_weight() {
    // A zero state: out = C * (B * x * w_last), whatever the older taps are; and d_conv 0 (no
    // state at all) computes the same from the one tap.
    let bcx = [3.0, 0.25, -2.0];
    let mut memory = mapped(&[0.0, 0.0, 0.0], &[7.0, -9.0, 11.0, 5.0], &bcx, 1);
    run(cpu::shortconv, &launch_1d(&step_kernarg(1, 3, 32), 32, 32), &mut memory);
    assert_eq!(f32::from_bits(read_bits(&memory, OUT, 1)[0]), 0.25 * (3.0 * -2.0 * 5.0));
    let mut memory = mapped(&[], &[5.0], &bcx, 1);
    run(cpu::shortconv, &launch_1d(&step_kernarg(1, 0, 32), 32, 32), &mut memory);
    assert_eq!(f32::from_bits(read_bits(&memory, OUT, 1)[0]), 0.25 * (3.0 * -2.0 * 5.0));
}

/// Random `[tokens][3 dim]` inputs and `[dim][d_conv + 1]` taps.
fn sequence(rng: &mut Rng, tokens: usize, dim: usize, d_conv: usize) -> (Vec<f32>, Vec<f32>) {
    (rng.f32s(tokens * 3 * dim, -2.0, 2.0), rng.f32s(dim * (d_conv + 1), -1.0, 1.0))
}

/// Runs `tokens` single-token launches from `state`; every token's outputs and the final state.
fn stepped(state: &[f32], weight: &[f32], bcx: &[f32], dim: usize, d_conv: usize) -> (Vec<u32>, Vec<u32>) {
    let tokens = bcx.len() / (3 * dim);
    let mut memory = mapped(state, weight, &bcx[..3 * dim], dim);
    let mut outs = Vec::new();
    for t in 0..tokens {
        memory.write_u32s(BCX, &bits(&bcx[t * 3 * dim..(t + 1) * 3 * dim])).unwrap();
        let k = step_kernarg(dim, d_conv, 64);
        run(cpu::shortconv, &launch_1d(&k, u32_of(dim.next_multiple_of(64)), 64), &mut memory);
        outs.extend(&read_bits(&memory, OUT, dim)[..dim]);
    }
    (outs, read_bits(&memory, STATE, dim * d_conv)[..dim * d_conv].to_vec())
}

#[test]
fn a_sequence_matches_an_f64_causal_convolution_within_the_derived_bound() {
    let mut rng = Rng(0x1f3a);
    for (dim, d_conv, tokens) in [(37, 2, 9), (64, 1, 5), (5, 4, 12), (130, 3, 4)] {
        let (bcx, weight) = sequence(&mut rng, tokens, dim, d_conv);
        let (outs, _) = stepped(&vec![0.0; dim * d_conv], &weight, &bcx, dim, d_conv);
        let at = |t: usize, third: usize, c: usize| f64::from(bcx[t * 3 * dim + third * dim + c]);
        for t in 0..tokens {
            for c in 0..dim {
                // The window's inputs, oldest first: tokens t - d_conv .. t (zeros before 0).
                let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
                for k in 0..=d_conv {
                    let Some(s) = (t + k).checked_sub(d_conv) else { continue };
                    let term = at(s, 0, c) * at(s, 2, c) * f64::from(weight[c * (d_conv + 1) + k]);
                    exact += term;
                    magnitude += term.abs();
                }
                let gate = at(t, 1, c);
                let got = f64::from(f32::from_bits(outs[t * dim + c]));
                let bound = (d_conv as f64 + 3.0) * U * gate.abs() * magnitude * 1.000_001;
                assert!(
                    (got - gate * exact).abs() <= bound,
                    "dim {dim} d_conv {d_conv} token {t} channel {c}: {got} vs {}, bound {bound}",
                    gate * exact
                );
            }
        }
    }
}

#[test]
fn the_state_holds_exactly_the_last_d_conv_inputs() {
    let mut rng = Rng(7);
    let (dim, d_conv, tokens) = (48, 3, 8);
    let (bcx, weight) = sequence(&mut rng, tokens, dim, d_conv);
    let (zeros, zero_state) = stepped(&vec![0.0; dim * d_conv], &weight, &bcx, dim, d_conv);
    let garbage = rng.f32s(dim * d_conv, -100.0, 100.0);
    let (dirty, dirty_state) = stepped(&garbage, &weight, &bcx, dim, d_conv);
    // The first d_conv tokens still read the garbage (channel by channel some output differs);
    // from token d_conv on the window holds this sequence's inputs only.
    assert_ne!(zeros[..d_conv * dim], dirty[..d_conv * dim]);
    assert_eq!(zeros[d_conv * dim..], dirty[d_conv * dim..]);
    assert_eq!(zero_state, dirty_state);
    // And the state is the last d_conv tokens' B * x, oldest first.
    for c in 0..dim {
        for k in 0..d_conv {
            let t = tokens - d_conv + k;
            let bx = bcx[t * 3 * dim + c] * bcx[t * 3 * dim + 2 * dim + c];
            assert_eq!(zero_state[c * d_conv + k], bx.to_bits(), "channel {c} slot {k}");
        }
    }
}

/// `shortconv_rows` over all tokens at once from `state`: every row and the final state.
fn batched(
    state: &[f32],
    weight: &[f32],
    bcx: &[f32],
    (dim, d_conv): (usize, usize),
    (grid, wg): (u32, u16),
) -> (Vec<u32>, Vec<u32>) {
    let tokens = bcx.len() / (3 * dim);
    let mut memory = mapped(state, weight, bcx, tokens * dim);
    let k = rows_kernarg(dim, d_conv, tokens, wg);
    run(cpu::shortconv_rows, &launch_1d(&k, grid, wg), &mut memory);
    let out = read_bits(&memory, OUT, tokens * dim);
    assert!(out[tokens * dim..].iter().all(|&b| b == SENTINEL), "nothing past the rows");
    (out[..tokens * dim].to_vec(), read_bits(&memory, STATE, dim * d_conv)[..dim * d_conv].to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn shortconv_rows_are_shortconv_steps_bit_for_bit(
        dim in 1usize..200,
        d_conv in 0usize..6,
        tokens in 1usize..9,
        wg in prop_oneof![Just(16u16), Just(64), Just(256)],
        extra in 0u32..100,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed);
        let (bcx, weight) = sequence(&mut rng, tokens, dim, d_conv);
        let state = rng.f32s(dim * d_conv, -3.0, 3.0);
        let stepwise = stepped(&state, &weight, &bcx, dim, d_conv);
        let rows = batched(&state, &weight, &bcx, (dim, d_conv), (u32_of(dim) + extra, wg));
        prop_assert_eq!(rows, stepwise);
    }
}

#[test]
fn shortconv_rows_at_the_model_shape_are_shortconv_steps() {
    // LFM2-350M's width and l_cache, a prefill pass of 128 tokens.
    let mut rng = Rng(350);
    let (dim, d_conv, tokens) = (1024, 2, 128);
    let (bcx, weight) = sequence(&mut rng, tokens, dim, d_conv);
    let state = vec![0.0; dim * d_conv];
    assert_eq!(batched(&state, &weight, &bcx, (dim, d_conv), (1024, 64)), stepped(&state, &weight, &bcx, dim, d_conv));
}

#[test]
fn channels_past_the_grid_are_untouched() {
    let mut rng = Rng(3);
    let (dim, d_conv) = (100, 2);
    let (bcx, weight) = sequence(&mut rng, 2, dim, d_conv);
    let state = rng.f32s(dim * d_conv, -1.0, 1.0);
    let mut memory = mapped(&state, &weight, &bcx, 2 * dim);
    let k = rows_kernarg(dim, d_conv, 2, 32);
    run(cpu::shortconv_rows, &launch_1d(&k, 40, 32), &mut memory);
    let out = read_bits(&memory, OUT, 2 * dim);
    for t in 0..2 {
        assert!(out[t * dim..t * dim + 40].iter().all(|&b| b != SENTINEL), "token {t}: channels 0..40 written");
        assert!(out[t * dim + 40..(t + 1) * dim].iter().all(|&b| b == SENTINEL), "token {t}: 40.. untouched");
    }
    let after = read_bits(&memory, STATE, dim * d_conv);
    assert_eq!(after[40 * d_conv..dim * d_conv], bits(&state[40 * d_conv..]), "their state too");
}

#[test]
fn faults_name_the_argument_after_the_work_groups_before_it() {
    let (dim, d_conv) = (256, 2);
    let mut rng = Rng(11);
    let (bcx, weight) = sequence(&mut rng, 1, dim, d_conv);
    // The taps end inside work-group 2's channels: work-groups 0 and 1 are stored, the fault
    // names `weight`, and nothing from work-group 2 on is written.
    let mut memory = HostMemory::new();
    buffer(&mut memory, STATE, &vec![0.0; dim * d_conv]);
    buffer(&mut memory, BCX, &bcx);
    memory.allocate(WEIGHT, 4 * 150 * 3).unwrap();
    memory.write_u32s(WEIGHT, &bits(&weight[..150 * 3])).unwrap();
    sentinel_buffer(&mut memory, OUT, dim);
    let k = step_kernarg(dim, d_conv, 64);
    let err = cpu::shortconv(&launch_1d(&k, 256, 64), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "weight", .. }), "{err}");
    let out = read_bits(&memory, OUT, dim);
    assert!(out[..128].iter().all(|&b| b != SENTINEL), "work-groups 0 and 1 are stored");
    assert!(out[128..dim].iter().all(|&b| b == SENTINEL), "nothing from work-group 2 on");

    // An unmapped state, out or bcx faults naming it before anything is stored.
    for (missing, name) in [(STATE, "state"), (BCX, "bcx"), (OUT, "out")] {
        let mut memory = HostMemory::new();
        for (base, len) in [(STATE, dim * d_conv), (BCX, 3 * dim), (WEIGHT, dim * 3), (OUT, dim)] {
            if base != missing {
                sentinel_buffer(&mut memory, base, len);
            }
        }
        let err = cpu::shortconv(&launch_1d(&k, 256, 64), &mut memory).unwrap_err();
        assert!(matches!(err, KernelError::Memory { arg, .. } if arg == name), "{name}: {err}");
        if missing != OUT {
            assert!(read_bits(&memory, OUT, dim).iter().all(|&b| b == SENTINEL), "{name}: nothing stored");
        }
    }
}

#[test]
fn broken_launches_are_typed_errors() {
    let mut memory = mapped(&[0.0; 8], &[0.0; 12], &[0.0; 12], 4);
    let k = step_kernarg(4, 2, 64);
    let two_d = kernel_refs::launch::Launch {
        kernarg: &k,
        grid_size: [64, 2, 1],
        workgroup_size: [64, 1, 1],
        dynamic_lds_bytes: 0,
    };
    assert!(matches!(cpu::shortconv(&two_d, &mut memory), Err(KernelError::NotOneDimensional { .. })));
    // The kernarg's group size is not the dispatch's.
    let err = cpu::shortconv(&launch_1d(&k, 64, 32), &mut memory).unwrap_err();
    assert_eq!(err, KernelError::GroupSizeMismatch { kernarg: 64, dispatch: 32 });
    // A kernarg segment that ends before `n`.
    let short = &rows_kernarg(4, 2, 1, 64)[..40];
    assert!(matches!(cpu::shortconv_rows(&launch_1d(short, 64, 64), &mut memory), Err(KernelError::Kernarg(_))));
}
