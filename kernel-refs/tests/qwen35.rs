//! The Qwen 3.5 kernels (module `qwen35`).
//!
//! 1. The kernels' `log` (`cpu::logf`) against `f64::ln` over a dense sweep of the positive
//!    normal floats: at most 2 ulp; `softplusf` against `f64` within the bound that gives.
//! 2. `ssm_conv_silu`: hand-derived window sums and state shifts; against an `f64` convolution
//!    and SiLU within a running error bound; a launch of `n` tokens bit for bit `n` launches of
//!    one; a grid cut short touches exactly its channels, within the effects.
//! 3. `gated_delta_net`: hand-derived outputs and states (the delta rule's rank-one update, the
//!    L2 normalisation, value head `h` reading key head `h % k_heads`); against an `f64` delta rule
//!    within a first-order running error bound carried through every operation; `n` tokens bit for
//!    bit `n` launches of one; a grid cut inside a head touches exactly its columns, within the
//!    effects; degenerate shapes do nothing; faults are typed errors.
//! 4. `split_halves`, `rope_partial` and `sigmoid_mul` against hand-derived values and `f64`.

mod common;

use common::{
    GUARD, Kernarg, Recorder, Rng, SENTINEL, buffer, check_within, f32_of, launch_1d, read_bits, run, sentinel_buffer,
    u32_of,
};
use kernel_refs::cpu::{self, CpuReference, KernelError};
use kernel_refs::effects;
use kernel_refs::memory::HostMemory;
use kernels::signature::{self, Signature};
use proptest::prelude::*;

const OUT: u64 = 0x1_0000_0000;
const STATE: u64 = 0x2_0000_0000;
const X: u64 = 0x3_0000_0000;
const W: u64 = 0x4_0000_0000;
const ALPHA: u64 = 0x5_0000_0000;
const BETA: u64 = 0x6_0000_0000;
const DT: u64 = 0x7_0000_0000;
const A: u64 = 0x8_0000_0000;
const TABLE: u64 = 0x9_0000_0000;
const B: u64 = 0xa_0000_0000;

/// The unit roundoff of `f32`.
const U: f64 = 1.0 / 16_777_216.0;

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn values(bits: &[u32]) -> Vec<f32> {
    bits.iter().map(|&b| f32::from_bits(b)).collect()
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

// ---------------------------------------------------------------------------------------------
// log and softplus

/// The error of `got` against `exact` in units of the f32 spacing at `exact`.
fn ulp_error(got: f32, exact: f64) -> f64 {
    // CAST: log2 of a positive f32 value's log lies well inside i32.
    #[allow(clippy::cast_possible_truncation)]
    let exponent = exact.abs().log2().floor() as i32;
    (f64::from(got) - exact).abs() / 2f64.powi(exponent - 23)
}

#[test]
fn log_is_within_two_ulp_of_f64_over_every_positive_normal_binade() {
    let mut worst = (0.0f64, 0.0f32);
    let mut check = |x: f32| {
        let exact = f64::from(x).ln();
        let got = cpu::logf(x);
        if exact == 0.0 {
            assert_eq!(got, 0.0, "log(1)");
            return;
        }
        let err = ulp_error(got, exact);
        if err > worst.0 {
            worst = (err, x);
        }
    };
    // Every 97th bit pattern of the positive normal floats (about 22 million inputs), and every
    // float of the two binades around 1, where the result is smallest and most sensitive.
    for b in (f32::MIN_POSITIVE.to_bits()..f32::INFINITY.to_bits()).step_by(97) {
        check(f32::from_bits(b));
    }
    for b in 0.5f32.to_bits()..2.0f32.to_bits() {
        check(f32::from_bits(b));
    }
    assert!(worst.0 <= 2.0, "log({:e}) is {} ulp off", worst.1, worst.0);
}

/// `|softplusf(x) - softplus(x)|` is at most `3u |softplus(x)| + 3u` (derivation: `expf` within
/// 2 ulp `<= 4u` relative moves `log(1 + e)` by at most `4u e / (1 + e) <= 4u` absolute...
/// scaled by `e / (1 + e)`; `1 + e` rounds (`u (1 + e)` relative to it, `u` after the log);
/// `logf` adds 2 ulp `<= 4u` relative of the result). Stated as `8u (1 + |softplus|)`.
#[test]
fn softplus_is_within_its_bound_of_f64() {
    let mut rng = Rng(0x50f7);
    let mut xs: Vec<f32> = rng.f32s(200_000, -30.0, 30.0);
    xs.extend([-104.0, -88.0, -20.0, -1e-3, 0.0, 1e-3, 19.999, 20.0, 20.001, 50.0]);
    for x in xs {
        let exact = if x > 20.0 { f64::from(x) } else { f64::from(x).exp().ln_1p() };
        let got = f64::from(cpu::softplusf(x));
        assert!((got - exact).abs() <= 8.0 * U * (1.0 + exact.abs()), "softplus({x}) = {got}, exact {exact}");
    }
}

// ---------------------------------------------------------------------------------------------
// ssm_conv_silu

fn conv_kernarg(channels: usize, history: usize, n: usize, wg: u16) -> Vec<u8> {
    Kernarg::new(&signature::SSM_CONV_SILU)
        .ptr("out", OUT)
        .ptr("state", STATE)
        .ptr("x", X)
        .ptr("weight", W)
        .u32("channels", u32_of(channels))
        .u32("history", u32_of(history))
        .u32("n", u32_of(n))
        .group_size(wg)
        .bytes()
}

/// One `ssm_conv_silu` launch over `n` tokens from `state`: `(out, state)` as bits, guards
/// included.
fn conv(
    state: &[f32],
    x: &[f32],
    weight: &[f32],
    (channels, history, n): (usize, usize, usize),
    grid: u32,
) -> (Vec<u32>, Vec<u32>) {
    let mut memory = HostMemory::new();
    buffer(&mut memory, STATE, state);
    buffer(&mut memory, X, x);
    buffer(&mut memory, W, weight);
    sentinel_buffer(&mut memory, OUT, n * channels);
    let k = conv_kernarg(channels, history, n, 64);
    run_within_effects(cpu::ssm_conv_silu, &signature::SSM_CONV_SILU, &k, grid, 64, &mut memory);
    (read_bits(&memory, OUT, n * channels), read_bits(&memory, STATE, state.len()))
}

#[test]
fn the_convolution_sums_the_window_oldest_first_and_shifts_the_state() {
    // Two channels, kernel 3 (history 2). Channel 0: state [0.5, -1], taps [1, 2, 3], x 2:
    // 0.5 * 1 + (-1) * 2 + 2 * 3 = 4.5, state [-1, 2]. Channel 1: state [1, 1], taps
    // [0, 0, -1], x 4: -4, state [1, 4]. A reversed window would give 0.5 * 3 - 2 + 2 = 1.5.
    let state = [0.5, -1.0, 1.0, 1.0];
    let weight = [1.0, 2.0, 3.0, 0.0, 0.0, -1.0];
    let (out, st) = conv(&state, &[2.0, 4.0], &weight, (2, 2, 1), 2);
    let silu = |s: f32| s / (1.0 + cpu::expf(-s));
    assert_eq!(values(&out[..2]), [silu(4.5), silu(-4.0)]);
    assert!((f64::from(silu(4.5)) - 4.5 / (1.0 + (-4.5f64).exp())).abs() < 1e-6);
    assert_eq!(values(&st[..4]), [-1.0, 2.0, 1.0, 4.0]);
    assert!(out[2..].iter().chain(&st[4..]).all(|&b| b == SENTINEL), "nothing past the buffers");
    // A second token sees the shifted state: channel 0 window [-1, 2, 1]: -1 + 4 + 3 = 6.
    let (out, st) = conv(&values(&st[..4]), &[1.0, 0.0], &weight, (2, 2, 1), 2);
    assert_eq!(values(&out[..2]), [silu(6.0), silu(0.0)]);
    assert_eq!(values(&st[..4]), [2.0, 1.0, 4.0, 0.0]);
    // History 0: a pointwise product, the state untouched.
    let (out, st) = conv(&[7.0], &[3.0], &[-2.0], (1, 0, 1), 1);
    assert_eq!(values(&out[..1]), [silu(-6.0)]);
    assert_eq!(st[0], 7.0f32.to_bits(), "no state read or written with history 0");
}

/// The `f64` convolution with SiLU over `n` tokens, and each output's bound: the window sum of
/// `kernel` products rounds each product and each partial sum (`|err| <= (kernel + 1) u
/// sum |w x|`), SiLU's slope is below 1.1 in magnitude, and its evaluation adds `expf`'s 2 ulp
/// (relative `4u`, scaled by `e / (1 + e) < 1`), the rounding of `1 + e` and of the division:
/// `6u |silu|`.
fn conv_f64(
    state: &[f32],
    x: &[f32],
    weight: &[f32],
    (channels, history, n): (usize, usize, usize),
) -> Vec<(f64, f64)> {
    let mut out = vec![(0.0, 0.0); n * channels];
    for c in 0..channels {
        let mut window: Vec<f64> = state[c * history..(c + 1) * history].iter().map(|&v| f64::from(v)).collect();
        let taps = &weight[c * (history + 1)..(c + 1) * (history + 1)];
        for t in 0..n {
            window.push(f64::from(x[t * channels + c]));
            let sum: f64 = window.iter().zip(taps).map(|(w, &k)| w * f64::from(k)).sum();
            let magnitude: f64 = window.iter().zip(taps).map(|(w, &k)| (w * f64::from(k)).abs()).sum();
            let silu = sum / (1.0 + (-sum).exp());
            let bound = 1.1 * (history as f64 + 2.0) * U * magnitude + 6.0 * U * silu.abs() + 1e-44;
            out[t * channels + c] = (silu, bound);
            window.remove(0);
        }
    }
    out
}

#[test]
fn the_convolution_matches_f64_within_its_bound() {
    let (channels, history, n) = (150, 3, 7);
    let mut rng = Rng(0xc0);
    let state = rng.f32s(channels * history, -3.0, 3.0);
    let x = rng.f32s(channels * n, -3.0, 3.0);
    let weight = rng.f32s(channels * (history + 1), -1.0, 1.0);
    let (out, st) = conv(&state, &x, &weight, (channels, history, n), u32_of(channels));
    for (i, (&got, (exact, bound))) in out.iter().zip(conv_f64(&state, &x, &weight, (channels, history, n))).enumerate()
    {
        let got = f64::from(f32::from_bits(got));
        assert!((got - exact).abs() <= bound, "out[{i}] = {got}, exact {exact}, bound {bound}");
    }
    // The state ends holding each channel's last three inputs.
    for c in 0..channels {
        let last: Vec<u32> = (n - history..n).map(|t| x[t * channels + c].to_bits()).collect();
        assert_eq!(st[c * history..(c + 1) * history], last[..], "channel {c}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A launch of `n` tokens leaves the outputs and the state of `n` launches of one token.
    #[test]
    fn a_convolution_of_n_tokens_is_n_single_token_launches(
        channels in 1usize..200, history in 0usize..6, n in 1usize..9, seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed);
        let state = rng.f32s(channels * history, -4.0, 4.0);
        let x = rng.f32s(channels * n, -4.0, 4.0);
        let weight = rng.f32s(channels * (history + 1), -2.0, 2.0);
        let (batched, batched_state) = conv(&state, &x, &weight, (channels, history, n), u32_of(channels));
        let mut st = state.clone();
        for t in 0..n {
            let (out, next) = conv(&st, &x[t * channels..(t + 1) * channels], &weight, (channels, history, 1), u32_of(channels));
            prop_assert_eq!(&out[..channels], &batched[t * channels..(t + 1) * channels]);
            st = values(&next[..st.len()]);
        }
        prop_assert_eq!(bits(&st), batched_state[..st.len()].to_vec());
    }
}

#[test]
fn a_convolution_grid_cut_short_touches_exactly_its_channels() {
    // 100 channels, 70 work-items: channels 70.. keep their state and get no output.
    let (channels, history, n) = (100, 3, 2);
    let mut rng = Rng(0xc1);
    let state = rng.f32s(channels * history, -1.0, 1.0);
    let x = rng.f32s(channels * n, -1.0, 1.0);
    let weight = rng.f32s(channels * (history + 1), -1.0, 1.0);
    let (full, full_state) = conv(&state, &x, &weight, (channels, history, n), u32_of(channels));
    let (cut, cut_state) = conv(&state, &x, &weight, (channels, history, n), 70);
    for t in 0..n {
        for c in 0..channels {
            let i = t * channels + c;
            assert_eq!(cut[i], if c < 70 { full[i] } else { SENTINEL }, "out[{t}][{c}]");
        }
    }
    for (e, (&got, &whole)) in cut_state[..channels * history].iter().zip(&full_state).enumerate() {
        assert_eq!(got, if e < 70 * history { whole } else { state[e].to_bits() }, "state[{e}]");
    }
}

// ---------------------------------------------------------------------------------------------
// gated_delta_net

/// A `gated_delta_net` launch's shape: `(v_heads, k_heads, head_dim, n)`.
type DeltaShape = (usize, usize, usize, usize);

/// The inputs of a `gated_delta_net` launch.
#[derive(Clone)]
struct DeltaInputs {
    qkv: Vec<f32>,
    alpha: Vec<f32>,
    beta: Vec<f32>,
    dt_bias: Vec<f32>,
    ssm_a: Vec<f32>,
    eps: f32,
    scale: f32,
}

impl DeltaInputs {
    fn random(rng: &mut Rng, (v_heads, k_heads, d, n): DeltaShape) -> Self {
        Self {
            qkv: rng.f32s(n * (2 * k_heads + v_heads) * d, -1.5, 1.5),
            alpha: rng.f32s(n * v_heads, -3.0, 3.0),
            beta: rng.f32s(n * v_heads, -3.0, 3.0),
            dt_bias: rng.f32s(v_heads, -1.0, 1.0),
            ssm_a: rng.f32s(v_heads, -2.0, -0.1),
            eps: 1e-6,
            // CAST: a small head size.
            #[allow(clippy::cast_precision_loss)]
            scale: 1.0 / (d as f32).sqrt(),
        }
    }

    /// Token `t`'s inputs alone.
    fn token(&self, (v_heads, k_heads, d, _): DeltaShape, t: usize) -> Self {
        let width = (2 * k_heads + v_heads) * d;
        Self {
            qkv: self.qkv[t * width..(t + 1) * width].to_vec(),
            alpha: self.alpha[t * v_heads..(t + 1) * v_heads].to_vec(),
            beta: self.beta[t * v_heads..(t + 1) * v_heads].to_vec(),
            ..self.clone()
        }
    }
}

fn delta_kernarg((v_heads, k_heads, d, n): DeltaShape, eps: f32, scale: f32, wg: u16) -> Vec<u8> {
    Kernarg::new(&signature::GATED_DELTA_NET)
        .ptr("out", OUT)
        .ptr("state", STATE)
        .ptr("qkv", X)
        .ptr("alpha", ALPHA)
        .ptr("beta", BETA)
        .ptr("dt_bias", DT)
        .ptr("ssm_a", A)
        .u32("v_heads", u32_of(v_heads))
        .u32("k_heads", u32_of(k_heads))
        .u32("head_dim", u32_of(d))
        .u32("n", u32_of(n))
        .f32("eps", eps)
        .f32("scale", scale)
        .group_size(wg)
        .bytes()
}

fn delta_memory(state: &[f32], inputs: &DeltaInputs, out_len: usize) -> HostMemory {
    let mut memory = HostMemory::new();
    buffer(&mut memory, STATE, state);
    buffer(&mut memory, X, &inputs.qkv);
    buffer(&mut memory, ALPHA, &inputs.alpha);
    buffer(&mut memory, BETA, &inputs.beta);
    buffer(&mut memory, DT, &inputs.dt_bias);
    buffer(&mut memory, A, &inputs.ssm_a);
    sentinel_buffer(&mut memory, OUT, out_len);
    memory
}

/// One `gated_delta_net` launch: `(out, state)` as bits, guards included.
fn delta(state: &[f32], inputs: &DeltaInputs, shape: DeltaShape, grid: u32, wg: u16) -> (Vec<u32>, Vec<u32>) {
    let (v_heads, _, d, n) = shape;
    let mut memory = delta_memory(state, inputs, n * v_heads * d);
    let k = delta_kernarg(shape, inputs.eps, inputs.scale, wg);
    run_within_effects(cpu::gated_delta_net, &signature::GATED_DELTA_NET, &k, grid, wg, &mut memory);
    (read_bits(&memory, OUT, n * v_heads * d), read_bits(&memory, STATE, state.len()))
}

#[test]
fn the_delta_rule_writes_the_rank_one_update_and_reads_it_back() {
    // One head of 2, decay exp(softplus(.) * 0) = 1 exactly, beta raw 0: b = 1/2, eps 0, scale 1.
    // Token 0: q = [0, 3] -> q^ = [0, 1]; k = [0, 2] -> k^ = [0, 1]; v = [3, 4]; S = 0, so
    // kv = 0, delta = [1.5, 2], S[1] = [1.5, 2] (key row 1), o = S^T q^ = [1.5, 2].
    // Token 1: q = [5, 0] -> [1, 0]; k = [5, 0] -> [1, 0]; v = [1, 1]: kv = S^T k^ = S[0] = 0,
    // delta = [0.5, 0.5], S[0] = [0.5, 0.5], o = S[0] = [0.5, 0.5].
    let inputs = DeltaInputs {
        qkv: vec![0.0, 3.0, 0.0, 2.0, 3.0, 4.0, 5.0, 0.0, 5.0, 0.0, 1.0, 1.0],
        alpha: vec![0.25, -7.0],
        beta: vec![0.0, 0.0],
        dt_bias: vec![0.5],
        ssm_a: vec![0.0],
        eps: 0.0,
        scale: 1.0,
    };
    let (out, state) = delta(&[0.0; 4], &inputs, (1, 1, 2, 2), 2, 64);
    assert_eq!(values(&out[..4]), [1.5, 2.0, 0.5, 0.5]);
    assert_eq!(values(&state[..4]), [0.5, 0.5, 1.5, 2.0], "S[i][j] at i * 2 + j, i the key index");
    assert!(out[4..].iter().chain(&state[4..]).all(|&b| b == SENTINEL));
    // A second update along the same key replaces what the state returns for it (the delta
    // rule), where plain linear attention would add: token 2 stores v = [9, 9] along k^ = [0, 1]
    // with b = 1/2: kv = [1.5, 2], delta = [3.75, 3.5], S[1] = [5.25, 5.5].
    let inputs = DeltaInputs { qkv: vec![0.0, 1.0, 0.0, 1.0, 9.0, 9.0], alpha: vec![0.0], beta: vec![0.0], ..inputs };
    let (out, state) = delta(&values(&state[..4]), &inputs, (1, 1, 2, 1), 2, 64);
    assert_eq!(values(&out[..2]), [5.25, 5.5]);
    assert_eq!(values(&state[..4]), [0.5, 0.5, 5.25, 5.5]);
}

#[test]
fn value_head_h_reads_query_and_key_head_h_mod_k_heads() {
    // Four value heads of 2 over two key heads: key head 0 is the unit vector e0, key head 1 e1;
    // queries equal keys; v_h = [h + 1, 0]. From a zero state, head h's output is
    // (k^ . q^) b v_h = v_h / 2 whichever key head it reads, but its state row is the one of its
    // key's direction: heads 0 and 2 (key head 0, tiled) fill key row 0, heads 1 and 3 key row 1.
    // With grouped reading (h / 2) heads 0 and 1 would share key head 0.
    let mut qkv = vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0];
    for h in 0..4u8 {
        qkv.extend([f32::from(h + 1), 0.0]);
    }
    let inputs = DeltaInputs {
        qkv,
        alpha: vec![0.0; 4],
        beta: vec![0.0; 4],
        dt_bias: vec![0.0; 4],
        ssm_a: vec![0.0; 4],
        eps: 0.0,
        scale: 1.0,
    };
    let (out, state) = delta(&[0.0; 16], &inputs, (4, 2, 2, 1), 8, 64);
    assert_eq!(values(&out[..8]), [0.5, 0.0, 1.0, 0.0, 1.5, 0.0, 2.0, 0.0]);
    let rows: Vec<[f32; 4]> = state[..16].chunks(4).map(|m| values(m).try_into().unwrap()).collect();
    assert_eq!(rows, [[0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [1.5, 0.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]]);
}

/// An `f64` value with a first-order bound on the error of the `f32` computation it mirrors.
#[derive(Clone, Copy, Debug)]
struct E {
    v: f64,
    e: f64,
}

impl E {
    /// An input, exact.
    fn x(v: f32) -> Self {
        Self { v: f64::from(v), e: 0.0 }
    }
    /// One rounding of the result: `u |v|`.
    fn rounded(v: f64, e: f64) -> Self {
        Self { v, e: e + U * v.abs() }
    }
    fn add(self, o: Self) -> Self {
        Self::rounded(self.v + o.v, self.e + o.e)
    }
    fn sub(self, o: Self) -> Self {
        Self::rounded(self.v - o.v, self.e + o.e)
    }
    fn mul(self, o: Self) -> Self {
        Self::rounded(self.v * o.v, self.v.abs() * o.e + o.v.abs() * self.e + self.e * o.e)
    }
    fn div(self, o: Self) -> Self {
        let v = self.v / o.v;
        Self::rounded(v, (self.e + v.abs() * o.e) / (o.v.abs() - o.e))
    }
    /// `sqrt`, correctly rounded.
    fn sqrt(self) -> Self {
        let v = self.v.sqrt();
        Self::rounded(v, self.e / (2.0 * v))
    }
    /// `expf`: within 2 ulp, `4u` relative (the rounding counted in it).
    fn exp(self) -> Self {
        let v = self.v.exp();
        Self { v, e: v * (self.e.exp_m1()) + 4.0 * U * v }
    }
    /// `softplusf`: the bound of `softplus_is_within_its_bound_of_f64` plus the input's error
    /// (slope below 1).
    fn softplus(self) -> Self {
        let v = if self.v > 20.0 { self.v } else { self.v.exp().ln_1p() };
        Self { v, e: self.e + 8.0 * U * (1.0 + v.abs()) }
    }
}

/// The `f64` gated delta rule over `n` tokens from `state`, each output with its error bound
/// (every `f32` operation of the kernel mirrored by an [`E`] operation).
fn delta_f64(state: &[f32], x: &DeltaInputs, (v_heads, k_heads, d, n): DeltaShape) -> Vec<E> {
    let mut s: Vec<E> = state.iter().map(|&v| E::x(v)).collect();
    let width = (2 * k_heads + v_heads) * d;
    let mut out = vec![E::x(0.0); n * v_heads * d];
    let one = E::x(1.0);
    for t in 0..n {
        let row = &x.qkv[t * width..(t + 1) * width];
        for h in 0..v_heads {
            let kh = h % k_heads;
            let q: Vec<E> = row[kh * d..(kh + 1) * d].iter().map(|&v| E::x(v)).collect();
            let k: Vec<E> = row[(k_heads + kh) * d..(k_heads + kh + 1) * d].iter().map(|&v| E::x(v)).collect();
            let v: Vec<E> = row[(2 * k_heads + h) * d..(2 * k_heads + h + 1) * d].iter().map(|&v| E::x(v)).collect();
            let norm = |xs: &[E]| {
                let sum = xs.iter().fold(E::x(0.0), |acc, &xi| acc.add(xi.mul(xi)));
                one.div(sum.add(E::x(x.eps)).sqrt())
            };
            let (iq, ik) = (norm(&q), norm(&k));
            let qn: Vec<E> = q.iter().map(|&qi| qi.mul(iq)).collect();
            let kn: Vec<E> = k.iter().map(|&ki| ki.mul(ik)).collect();
            let th = t * v_heads + h;
            let decay = E::x(x.alpha[th]).add(E::x(x.dt_bias[h])).softplus().mul(E::x(x.ssm_a[h])).exp();
            let b = one.div(one.add(E::x(-x.beta[th]).exp()));
            let m = &mut s[h * d * d..(h + 1) * d * d];
            for j in 0..d {
                let mut kv = E::x(0.0);
                for i in 0..d {
                    m[i * d + j] = m[i * d + j].mul(decay);
                    kv = kv.add(m[i * d + j].mul(kn[i]));
                }
                let delta = v[j].sub(kv).mul(b);
                let mut o = E::x(0.0);
                for i in 0..d {
                    m[i * d + j] = m[i * d + j].add(kn[i].mul(delta));
                    o = o.add(m[i * d + j].mul(qn[i]));
                }
                out[th * d + j] = o.mul(E::x(x.scale));
            }
        }
    }
    out
}

#[test]
fn the_delta_rule_matches_f64_within_its_running_error_bound() {
    for (shape, seed) in [((4, 2, 16, 6), 1u64), ((2, 2, 64, 3), 2), ((3, 1, 8, 12), 3)] {
        let (v_heads, _, d, _) = shape;
        let mut rng = Rng(seed);
        let state = rng.f32s(v_heads * d * d, -0.5, 0.5);
        let inputs = DeltaInputs::random(&mut rng, shape);
        let (out, _) = delta(&state, &inputs, shape, u32_of(v_heads * d), 64);
        let mut worst = 0.0f64;
        for (i, (&got, exact)) in out.iter().zip(delta_f64(&state, &inputs, shape)).enumerate() {
            let got = f64::from(f32::from_bits(got));
            // 1% over the first-order bound for the second-order terms it leaves out.
            assert!((got - exact.v).abs() <= 1.01 * exact.e + 1e-30, "{shape:?} out[{i}] = {got}, exact {exact:?}");
            worst = worst.max((got - exact.v).abs() / exact.e.max(1e-30));
        }
        assert!(worst > 0.0, "{shape:?}: the rounding is visible");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// A launch of `n` tokens leaves the outputs and the state of `n` launches of one token.
    #[test]
    fn a_delta_rule_of_n_tokens_is_n_single_token_launches(
        v_per_k in 1usize..4, k_heads in 1usize..3, d in 1usize..20, n in 1usize..7, seed in any::<u64>(),
    ) {
        let shape = (v_per_k * k_heads, k_heads, d, n);
        let v_heads = shape.0;
        let mut rng = Rng(seed);
        let state = rng.f32s(v_heads * d * d, -1.0, 1.0);
        let inputs = DeltaInputs::random(&mut rng, shape);
        let grid = u32_of(v_heads * d);
        let (batched, batched_state) = delta(&state, &inputs, shape, grid, 64);
        let mut st = state.clone();
        for t in 0..n {
            let (out, next) = delta(&st, &inputs.token(shape, t), (v_heads, k_heads, d, 1), grid, 64);
            prop_assert_eq!(&out[..v_heads * d], &batched[t * v_heads * d..(t + 1) * v_heads * d]);
            st = values(&next[..st.len()]);
        }
        prop_assert_eq!(bits(&st), batched_state[..st.len()].to_vec());
    }
}

#[test]
fn a_delta_grid_cut_inside_a_head_touches_exactly_its_columns() {
    // 3 heads of 8, 13 work-items: head 0 whole, columns 0..5 of head 1; the rest untouched.
    let shape = (3, 1, 8, 2);
    let mut rng = Rng(0xde);
    let state = rng.f32s(3 * 64, -1.0, 1.0);
    let inputs = DeltaInputs::random(&mut rng, shape);
    let (full, full_state) = delta(&state, &inputs, shape, 24, 8);
    let (cut, cut_state) = delta(&state, &inputs, shape, 13, 8);
    let ran = |h: usize, j: usize| h * 8 + j < 13;
    for t in 0..2 {
        for h in 0..3 {
            for j in 0..8 {
                let i = (t * 3 + h) * 8 + j;
                assert_eq!(cut[i], if ran(h, j) { full[i] } else { SENTINEL }, "out[{t}][{h}][{j}]");
            }
        }
    }
    for (e, (&got, &whole)) in cut_state[..3 * 64].iter().zip(&full_state).enumerate() {
        let (h, j) = (e / 64, e % 8);
        assert_eq!(got, if ran(h, j) { whole } else { state[e].to_bits() }, "state[{e}]");
    }
}

#[test]
fn degenerate_delta_shapes_do_nothing_and_faults_are_typed() {
    let shape = (2, 1, 4, 1);
    let inputs = DeltaInputs::random(&mut Rng(9), shape);
    for (k_heads, d) in [(0, 4), (1, 0)] {
        let mut memory = delta_memory(&[1.0; 32], &inputs, 8);
        let k = delta_kernarg((2, k_heads, d, 1), 1e-6, 0.5, 64);
        run(cpu::gated_delta_net, &launch_1d(&k, 64, 64), &mut memory);
        assert!(read_bits(&memory, OUT, 8).iter().all(|&b| b == SENTINEL), "k_heads {k_heads} head_dim {d}");
        assert!(read_bits(&memory, STATE, 32)[..32].iter().all(|&b| b == 1.0f32.to_bits()));
    }
    // The state unmapped: a fault on `state`, before any store.
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &inputs.qkv);
    buffer(&mut memory, ALPHA, &inputs.alpha);
    buffer(&mut memory, BETA, &inputs.beta);
    buffer(&mut memory, DT, &inputs.dt_bias);
    buffer(&mut memory, A, &inputs.ssm_a);
    sentinel_buffer(&mut memory, OUT, 8);
    let k = delta_kernarg(shape, 1e-6, 0.5, 64);
    let err = cpu::gated_delta_net(&launch_1d(&k, 8, 64), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "state", .. }), "{err}");
    assert!(read_bits(&memory, OUT, 8).iter().all(|&b| b == SENTINEL));
    // A kernarg segment too short for the arguments.
    let err = cpu::gated_delta_net(&launch_1d(&k[..40], 8, 64), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Kernarg(_)), "{err}");
    // A work-group larger than the kernarg's group size says.
    let err = cpu::ssm_conv_silu(&launch_1d(&conv_kernarg(4, 3, 1, 64), 64, 32), &mut memory).unwrap_err();
    assert_eq!(err, KernelError::GroupSizeMismatch { kernarg: 64, dispatch: 32 });
}

// ---------------------------------------------------------------------------------------------
// split_halves, rope_partial, sigmoid_mul

fn split(src: &[f32], half: usize, rows: usize, grid: u32) -> (Vec<u32>, Vec<u32>) {
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, src);
    sentinel_buffer(&mut memory, OUT, half * rows);
    sentinel_buffer(&mut memory, B, half * rows);
    let k = Kernarg::new(&signature::SPLIT_HALVES)
        .ptr("a", OUT)
        .ptr("b", B)
        .ptr("src", X)
        .u32("half", u32_of(half))
        .u32("rows", u32_of(rows))
        .group_size(16)
        .bytes();
    run_within_effects(cpu::split_halves, &signature::SPLIT_HALVES, &k, grid, 16, &mut memory);
    (read_bits(&memory, OUT, half * rows), read_bits(&memory, B, half * rows))
}

#[test]
fn split_halves_takes_each_rows_first_and_second_half() {
    // Rows [q0 q1 q2 g0 g1 g2]: the query heads and the gates of a two-head projection.
    let src = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 4.0, 5.0, 6.0, 40.0, 50.0, 60.0];
    let (a, b) = split(&src, 3, 2, 6);
    assert_eq!(values(&a[..6]), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(values(&b[..6]), [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
    assert!(a[6..].iter().chain(&b[6..]).all(|&x| x == SENTINEL));
    // Four work-items: row 0 and the first element of row 1.
    let (a, b) = split(&src, 3, 2, 4);
    assert_eq!(values(&a[..4]), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(values(&b[..4]), [10.0, 20.0, 30.0, 40.0]);
    assert!(a[4..6].iter().chain(&b[4..6]).all(|&x| x == SENTINEL));
    // Half 0: nothing.
    let (a, b) = split(&src, 0, 2, 6);
    assert!(a.iter().chain(&b).all(|&x| x == SENTINEL));
}

fn rope_partial(
    x: &[f32],
    table: &[f32],
    (pos0, heads, head_dim, rot, n): (u32, usize, usize, usize, usize),
    grid: u32,
) -> Vec<u32> {
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, x);
    buffer(&mut memory, TABLE, table);
    let k = Kernarg::new(&signature::ROPE_PARTIAL)
        .ptr("x", X)
        .ptr("table", TABLE)
        .u32("pos0", pos0)
        .u32("heads", u32_of(heads))
        .u32("head_dim", u32_of(head_dim))
        .u32("rot", u32_of(rot))
        .u32("n", u32_of(n))
        .group_size(16)
        .bytes();
    run_within_effects(cpu::rope_partial, &signature::ROPE_PARTIAL, &k, grid, 16, &mut memory);
    read_bits(&memory, X, x.len())
}

#[test]
fn partial_rope_rotates_pairs_half_the_rotated_part_apart_and_passes_the_rest() {
    // A head of 6 with rot 4: pairs (0, 2) and (1, 3); elements 4 and 5 pass. Table row 1 turns
    // pair 0 by 90 degrees (c = 0, s = 1) and leaves pair 1: [1, 2, 3, 4, 5, 6] becomes
    // [1 * 0 - 3 * 1, 2, 1 * 1 + 3 * 0, 4, 5, 6]. Full NEOX over the head would pair (0, 3).
    let table = [0.5, 0.5, 0.5, 0.5, 0.0, 1.0, 1.0, 0.0];
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let got = rope_partial(&x, &table, (1, 1, 6, 4, 1), 2);
    assert_eq!(values(&got[..6]), [-3.0, 2.0, 1.0, 4.0, 5.0, 6.0]);
    assert!(got[6..].iter().all(|&b| b == SENTINEL));
    // rot beyond head_dim, or below 2: nothing.
    assert_eq!(rope_partial(&x, &table, (1, 1, 6, 8, 1), 4)[..6], bits(&x)[..]);
    assert_eq!(rope_partial(&x, &table, (1, 1, 6, 1, 1), 4)[..6], bits(&x)[..]);
}

#[test]
fn partial_rope_rows_are_single_rows_at_their_positions_and_match_f64() {
    let (heads, head_dim, rot, n, pos0) = (3, 16, 6, 4, 5u32);
    let half = rot / 2;
    let mut rng = Rng(0x70);
    let positions = 12;
    let table: Vec<f32> = (0..positions * half)
        .flat_map(|p| {
            let angle = f64::from(u32_of(p)) * 0.37;
            [f32_of(angle.cos()), f32_of(angle.sin())]
        })
        .collect();
    let x = rng.f32s(n * heads * head_dim, -2.0, 2.0);
    let rows = rope_partial(&x, &table, (pos0, heads, head_dim, rot, n), u32_of(n * heads * half));
    let width = heads * head_dim;
    for t in 0..n {
        let row = &x[t * width..(t + 1) * width];
        let single = rope_partial(row, &table, (pos0 + u32_of(t), heads, head_dim, rot, 1), u32_of(heads * half));
        assert_eq!(single[..width], rows[t * width..(t + 1) * width], "row {t}");
        for h in 0..heads {
            for i in 0..head_dim {
                let e = h * head_dim + i;
                let got = f64::from(f32::from_bits(single[e]));
                let pos = (usize::try_from(pos0).unwrap() + t) * half;
                let (exact, magnitude) = if i < half {
                    let (x0, x1, c, s) = (row[e], row[e + half], table[2 * (pos + i)], table[2 * (pos + i) + 1]);
                    let (x0, x1, c, s) = (f64::from(x0), f64::from(x1), f64::from(c), f64::from(s));
                    (x0 * c - x1 * s, (x0 * c).abs() + (x1 * s).abs())
                } else if i < 2 * half {
                    let p = i - half;
                    let (x0, x1, c, s) = (row[e - half], row[e], table[2 * (pos + p)], table[2 * (pos + p) + 1]);
                    let (x0, x1, c, s) = (f64::from(x0), f64::from(x1), f64::from(c), f64::from(s));
                    (x0 * s + x1 * c, (x0 * s).abs() + (x1 * c).abs())
                } else {
                    (f64::from(row[e]), 0.0)
                };
                assert!((got - exact).abs() <= 3.0 * U * magnitude, "row {t} head {h} element {i}: {got} vs {exact}");
            }
        }
    }
    // A grid cut inside a head: 7 pairs of 3 per head rotate head 0, head 1 and pair 0 of head 2.
    let cut = rope_partial(&x, &table, (pos0, heads, head_dim, rot, n), 7);
    for e in 0..x.len() {
        let (u, i) = (e / head_dim, e % head_dim);
        let rotated = (i < 2 * half) && (u < 2 || (u == 2 && i % half == 0));
        assert_eq!(cut[e], if rotated { rows[e] } else { x[e].to_bits() }, "element {e}");
    }
}

#[test]
fn sigmoid_gate_matches_f64_within_7u() {
    // Derivation: `expf` within 4u relative, scaled by e / (1 + e) < 1 in `1 + e`; the rounding
    // of `1 + e`, of the division and of the product: 7u of the result.
    let mut rng = Rng(0x51);
    let mut gate = rng.f32s(4000, -30.0, 30.0);
    gate.extend([0.0, -0.0, 1e-30, -1e-30, 88.0, -88.0]);
    let up = rng.f32s(gate.len(), -5.0, 5.0);
    let n = gate.len();
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &gate);
    buffer(&mut memory, B, &up);
    sentinel_buffer(&mut memory, OUT, n);
    let k = Kernarg::new(&signature::SIGMOID_MUL)
        .ptr("out", OUT)
        .ptr("gate", X)
        .ptr("up", B)
        .u32("n", u32_of(n))
        .group_size(64)
        .bytes();
    run(cpu::sigmoid_mul, &launch_1d(&k, u32_of(n + 100), 64), &mut memory);
    let out = read_bits(&memory, OUT, n);
    assert!(out[n..].iter().all(|&b| b == SENTINEL));
    for ((&g, &u), &o) in gate.iter().zip(&up).zip(&out) {
        let exact = f64::from(u) / (1.0 + (-f64::from(g)).exp());
        let got = f64::from(f32::from_bits(o));
        assert!((got - exact).abs() <= 7.0 * U * exact.abs() + 1e-44, "gate {g} up {u}: {got} vs {exact}");
    }
    // The limits: a gate of +inf passes up, -inf closes it, NaN propagates.
    let mut memory = HostMemory::new();
    buffer(&mut memory, X, &[f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
    buffer(&mut memory, B, &[3.0, 3.0, 3.0]);
    sentinel_buffer(&mut memory, OUT, 3);
    let k = Kernarg::new(&signature::SIGMOID_MUL)
        .ptr("out", OUT)
        .ptr("gate", X)
        .ptr("up", B)
        .u32("n", 3)
        .group_size(64)
        .bytes();
    run(cpu::sigmoid_mul, &launch_1d(&k, 64, 64), &mut memory);
    let out = values(&read_bits(&memory, OUT, 3)[..3]);
    assert_eq!(out[..2], [3.0, 0.0]);
    assert!(out[2].is_nan());
    let _ = GUARD;
}
