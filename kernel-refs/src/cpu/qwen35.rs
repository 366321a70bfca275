//! The Qwen 3.5 kernels of module `qwen35`: `ssm_conv_silu`, `gated_delta_net`, `split_halves`,
//! `rope_partial`, `sigmoid_mul`, and the kernels' `log` ([`logf`], `rl_logf` of
//! `kernels/hip/qwen35.hip`).
//!
//! The convolution and the delta rule keep sequence state that every launch rewrites in place:
//! each work-item owns its part of the state (a channel's inputs, a column of a head's matrix)
//! and runs the launch's tokens in order on it, so the references compute every owner's tokens
//! in order too, and a launch of `n` tokens is bit for bit `n` launches of one.

use rayon::prelude::*;

use super::elementwise::Map;
use super::exp::expf;
use super::{Grid, KernelError, load_f32_vec, store, widen, widen_usize};
use crate::launch::{ArgRead, Launch};
use crate::memory::DeviceMemory;
use kernels::signature;

/// Above: the mantissa is halved and the exponent raised, so that `m` lies in
/// `[sqrt(1/2), sqrt(2))`.
const LOG_SQRT2: f32 = std::f32::consts::SQRT_2;
/// `ln 2` split: `LOG_LN2_HI` has 9 significant bits, so `e * LOG_LN2_HI` is exact.
const LOG_LN2_HI: f32 = 0.693_359_4;
const LOG_LN2_LO: f32 = -2.121_944_4e-4;
/// The Cephes `logf` polynomial `P(f)`, `log(1 + f) = f - f^2 / 2 + f^3 P(f)`, highest degree
/// first.
const LOG_POLY: [f32; 9] = [
    0.070_376_836,
    -0.115_146_1,
    0.116_769_984,
    -0.124_201_41,
    0.142_493_23,
    -0.166_680_57,
    0.200_007_14,
    -0.249_999_94,
    0.333_333_3,
];
/// Above: `softplus(x) = x` (ggml's threshold).
const SOFTPLUS_LINEAR: f32 = 20.0;

/// `ln(x)` exactly as the kernels compute it (`rl_logf` in `kernels/hip/qwen35.hip`): within
/// 2 ulp of the correctly rounded result for positive normal `x` (tested against `f64::ln`),
/// `x` itself for NaN and `+inf`, NaN for `x < 0`, `-inf` for `+-0` and (outside the domain)
/// for subnormal `x`.
///
/// `x = m * 2^e` from the bits, `m` in `[1, 2)`, halved with `e + 1` when above `sqrt(2)`;
/// `f = m - 1` (exact), `z = f * f`, `p = P(f)` by Horner from the highest coefficient;
/// `y = (p * f) * z + e * LOG_LN2_LO - 0.5 * z`, then `(f + y) + e * LOG_LN2_HI`.
#[must_use]
pub fn logf(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    let bits = x.to_bits();
    // CAST: the 8 exponent bits of a positive float, below 2^8.
    let mut e = i32::try_from(bits >> 23).unwrap_or(0) - 127;
    if e == -127 {
        return f32::NEG_INFINITY;
    }
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    if m > LOG_SQRT2 {
        m *= 0.5;
        e += 1;
    }
    let f = m - 1.0;
    let z = f * f;
    let mut p = LOG_POLY[0];
    for &c in &LOG_POLY[1..] {
        p = p * f + c;
    }
    // CAST: |e| <= 128, exact in f32.
    #[allow(clippy::cast_precision_loss)]
    let ef = e as f32;
    let mut y = p * f * z;
    y += ef * LOG_LN2_LO;
    y -= 0.5 * z;
    let r = f + y;
    r + ef * LOG_LN2_HI
}

/// ggml's softplus as the kernels compute it: `x` above 20, else `logf(1 + expf(x))`.
#[must_use]
pub fn softplusf(x: f32) -> f32 {
    if x > SOFTPLUS_LINEAR { x } else { logf(1.0 + expf(x)) }
}

/// SiLU as the kernels compute it: `x / (1 + expf(-x))`.
fn silu(x: f32) -> f32 {
    x / (1.0 + expf(-x))
}

/// `ssm_conv_silu(float* out, float* state, const float* x, const float* weight, u32 channels,
/// u32 history, u32 n)`: for every channel `c < min(channels, grid_size_x)` (one work-item
/// each), tokens `t < n` in order: the window is `state[c][0..history)` then `x[t][c]`;
/// `sum = 0`, `sum += window[i] * weight[c][i]` for `i` ascending (`weight` rows of
/// `history + 1` taps); `out[t][c] = sum / (1 + exp(-sum))` ([`crate::cpu::expf`]); then the
/// channel's state shifts by one input (`x[t][c]` last). `x` and `out` are `n` rows of
/// `channels` floats, `state` is `[channel][history]`.
///
/// Every load of the launch comes before its stores (the work-items touch disjoint state; `out`
/// must not overlap the inputs for the result to be the GPU's).
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn ssm_conv_silu(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::ssm_conv_silu::{CHANNELS, HISTORY, N, OUT, STATE, WEIGHT, X};
    let grid = Grid::new(launch, &signature::SSM_CONV_SILU)?;
    let k = launch.kernarg;
    let (out, state, x, weight) = (OUT.read_ptr(k)?, STATE.read_ptr(k)?, X.read_ptr(k)?, WEIGHT.read_ptr(k)?);
    let (channels, history, n) = (CHANNELS.read_u32(k)?, HISTORY.read_u32(k)?, N.read_u32(k)?);
    let active = channels.min(grid.size_x);
    if active == 0 || n == 0 {
        return Ok(());
    }
    let (a, h) = (u64::from(active), u64::from(history));
    let mut states = load_f32_vec(memory, &STATE, state, 0, a * h)?;
    let weights = load_f32_vec(memory, &WEIGHT, weight, 0, a * (h + 1))?;
    let xs = load_rows(memory, (&X, x), (u64::from(channels), a), n)?;
    // Every channel's state and taps were read, so their counts fit the host.
    let (width, hist) = (widen(active), widen(history));
    let mut outs = vec![0u32; xs.len()];
    for c in 0..width {
        let s = &mut states[c * hist..(c + 1) * hist];
        let w = &weights[c * (hist + 1)..(c + 1) * (hist + 1)];
        for t in 0..widen(n) {
            let xc = xs[t.saturating_mul(width) + c];
            let mut sum = 0.0f32;
            for (si, wi) in s.iter().zip(w) {
                sum += si * wi;
            }
            sum += xc * w[hist];
            outs[t.saturating_mul(width) + c] = silu(sum).to_bits();
            if hist > 0 {
                s.copy_within(1.., 0);
                s[hist - 1] = xc;
            }
        }
    }
    store_rows(memory, (&OUT, out), (u64::from(channels), a), &outs)?;
    let bits: Vec<u32> = states.iter().map(|v| v.to_bits()).collect();
    store(memory, &STATE, state, 0, &bits)
}

/// The first `active` elements of each of `n` rows of `width` elements: one access when they
/// are the whole rows, else one per row.
fn load_rows(
    memory: &dyn DeviceMemory,
    (arg, base): (&signature::ArgDecl, u64),
    (width, active): (u64, u64),
    n: u32,
) -> Result<Vec<f32>, KernelError> {
    if active == width {
        return load_f32_vec(memory, arg, base, 0, u64::from(n).saturating_mul(width));
    }
    let mut out = Vec::new();
    for t in 0..u64::from(n) {
        out.extend(load_f32_vec(memory, arg, base, t.saturating_mul(width), active)?);
    }
    Ok(out)
}

/// Stores `data`, rows of `active` elements, as the first `active` elements of consecutive rows
/// of `width`: one access when they are the whole rows, else one per row.
fn store_rows(
    memory: &mut dyn DeviceMemory,
    (arg, base): (&signature::ArgDecl, u64),
    (width, active): (u64, u64),
    data: &[u32],
) -> Result<(), KernelError> {
    if active == width {
        return store(memory, arg, base, 0, data);
    }
    // active < width is a u32 count, and data was built from loaded rows.
    for (t, row) in (0u64..).zip(data.chunks_exact(usize::try_from(active).unwrap_or(usize::MAX).max(1))) {
        store(memory, arg, base, t.saturating_mul(width), row)?;
    }
    Ok(())
}

/// The shape of a validated `gated_delta_net` launch.
#[derive(Clone, Copy)]
struct Delta {
    v_heads: usize,
    k_heads: usize,
    d: usize,
    n: usize,
    eps: f32,
    scale: f32,
}

/// One token's inputs of one value head.
struct Token<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    alpha: f32,
    beta: f32,
}

impl Delta {
    /// Runs the tokens of value head `h` on its state `s` (`[key][value]`, row `i` holding
    /// columns `0..d`), for its first `columns` columns; returns the outputs, `n` rows of
    /// `columns`.
    fn head(&self, h: usize, s: &mut [f32], columns: usize, inputs: (&[f32], &[f32], &[f32], &[f32])) -> Vec<u32> {
        let (qkv, alphas, betas, params) = inputs;
        let (dt_bias, ssm_a) = (params[h], params[self.v_heads + h]);
        let width = (2 * self.k_heads + self.v_heads) * self.d;
        let kh = h % self.k_heads;
        let mut out = Vec::with_capacity(self.n * columns);
        for t in 0..self.n {
            let row = &qkv[t.saturating_mul(width)..(t + 1) * width];
            let token = Token {
                q: &row[kh * self.d..(kh + 1) * self.d],
                k: &row[(self.k_heads + kh) * self.d..(self.k_heads + kh + 1) * self.d],
                v: &row[(2 * self.k_heads + h) * self.d..(2 * self.k_heads + h + 1) * self.d],
                alpha: alphas[t * self.v_heads + h],
                beta: betas[t * self.v_heads + h],
            };
            self.step(s, columns, &token, (dt_bias, ssm_a), &mut out);
        }
        out
    }

    /// One token of [`Delta::head`]: the kernel's operations, column by column in the kernel's
    /// order (loops over `i` outside the columns, which changes no sum: each column's sums run
    /// over `i` ascending).
    fn step(&self, s: &mut [f32], columns: usize, x: &Token<'_>, (dt_bias, ssm_a): (f32, f32), out: &mut Vec<u32>) {
        let d = self.d;
        let (mut sq, mut sk) = (0.0f32, 0.0f32);
        for &qi in x.q {
            sq += qi * qi;
        }
        for &ki in x.k {
            sk += ki * ki;
        }
        let iq = 1.0 / (sq + self.eps).sqrt();
        let ik = 1.0 / (sk + self.eps).sqrt();
        let decay = expf(softplusf(x.alpha + dt_bias) * ssm_a);
        let b = 1.0 / (1.0 + expf(-x.beta));
        let mut kv = vec![0.0f32; columns];
        for (i, &ki) in x.k.iter().enumerate() {
            let kn = ki * ik;
            for (sij, acc) in s[i * d..i * d + columns].iter_mut().zip(&mut kv) {
                *sij *= decay;
                *acc += *sij * kn;
            }
        }
        let delta: Vec<f32> = kv.iter().zip(x.v).map(|(&kv, &vj)| (vj - kv) * b).collect();
        let mut o = vec![0.0f32; columns];
        for (i, (&ki, &qi)) in x.k.iter().zip(x.q).enumerate() {
            let (kn, qn) = (ki * ik, qi * iq);
            for ((sij, acc), &dj) in s[i * d..i * d + columns].iter_mut().zip(&mut o).zip(&delta) {
                *sij += kn * dj;
                *acc += *sij * qn;
            }
        }
        out.extend(o.iter().map(|&o| (o * self.scale).to_bits()));
    }
}

/// `gated_delta_net(float* out, float* state, const float* qkv, const float* alpha,
/// const float* beta, const float* dt_bias, const float* ssm_a, u32 v_heads, u32 k_heads,
/// u32 head_dim, u32 n, float eps, float scale)`: the gated delta rule. Nothing happens when
/// `head_dim` or `k_heads` is 0. Otherwise work-item `g < min(v_heads * head_dim, grid_size_x)`
/// owns column `j = g % head_dim` of value head `h = g / head_dim`'s state matrix
/// (`S[h][i][j]` at `(h * head_dim + i) * head_dim + j`) and runs tokens `t < n` in order, with
/// `q`, `k` the query and key heads `h % k_heads` and `v` the value head `h` of `qkv` row `t`
/// (`k_heads` query heads, `k_heads` key heads, `v_heads` value heads of `head_dim`):
/// `iq = 1 / sqrt(sum_i q[i]^2 + eps)`, `ik` likewise (sums `i` ascending);
/// `decay = exp(softplus(alpha[t][h] + dt_bias[h]) * ssm_a[h])` ([`softplusf`],
/// [`crate::cpu::expf`]); `b = 1 / (1 + exp(-beta[t][h]))`; `S[i][j] *= decay` and
/// `kv = sum_i S[i][j] * (k[i] * ik)`; `delta = (v[j] - kv) * b`; `S[i][j] += (k[i] * ik) *
/// delta` and `o = sum_i S[i][j] * (q[i] * iq)` (sums `i` ascending from 0);
/// `out[t][h][j] = o * scale`.
///
/// Every load of the launch comes before its stores (the work-items touch disjoint state; `out`
/// must not overlap the inputs for the result to be the GPU's).
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn gated_delta_net(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::gated_delta_net::{
        ALPHA, BETA, DT_BIAS, EPS, HEAD_DIM, K_HEADS, N, OUT, QKV, SCALE, SSM_A, STATE, V_HEADS,
    };
    let grid = Grid::new(launch, &signature::GATED_DELTA_NET)?;
    let k = launch.kernarg;
    let (out, state, qkv) = (OUT.read_ptr(k)?, STATE.read_ptr(k)?, QKV.read_ptr(k)?);
    let (alpha, beta, dt_bias, ssm_a) =
        (ALPHA.read_ptr(k)?, BETA.read_ptr(k)?, DT_BIAS.read_ptr(k)?, SSM_A.read_ptr(k)?);
    let (v_heads, k_heads, head_dim, n) =
        (V_HEADS.read_u32(k)?, K_HEADS.read_u32(k)?, HEAD_DIM.read_u32(k)?, N.read_u32(k)?);
    let (eps, scale) = (EPS.read_f32(k)?, SCALE.read_f32(k)?);
    if head_dim == 0 || k_heads == 0 {
        return Ok(());
    }
    let d = u64::from(head_dim);
    let active = (u64::from(v_heads) * d).min(u64::from(grid.size_x));
    if active == 0 || n == 0 {
        return Ok(());
    }
    let heads = active.div_ceil(d);
    let width = (2 * u64::from(k_heads) + u64::from(v_heads)).saturating_mul(d);
    let qkvs = load_f32_vec(memory, &QKV, qkv, 0, u64::from(n).saturating_mul(width))?;
    let gates = u64::from(n) * u64::from(v_heads);
    let alphas = load_f32_vec(memory, &ALPHA, alpha, 0, gates)?;
    let betas = load_f32_vec(memory, &BETA, beta, 0, gates)?;
    let mut params = load_f32_vec(memory, &DT_BIAS, dt_bias, 0, u64::from(v_heads))?;
    params.extend(load_f32_vec(memory, &SSM_A, ssm_a, 0, u64::from(v_heads))?);
    let mut states = load_f32_vec(memory, &STATE, state, 0, heads.saturating_mul(d).saturating_mul(d))?;
    // Every input was read, so every count below fits the host.
    let shape = Delta { v_heads: widen(v_heads), k_heads: widen(k_heads), d: widen(head_dim), n: widen(n), eps, scale };
    let (dd, active) = (shape.d, usize::try_from(active).unwrap_or(usize::MAX));
    let inputs = (&qkvs[..], &alphas[..], &betas[..], &params[..]);
    let outs: Vec<Vec<u32>> = states
        .par_chunks_mut(dd * dd)
        .enumerate()
        .map(|(h, s)| shape.head(h, s, (active - h * dd).min(dd), inputs))
        .collect();
    store_delta(memory, (out, state), shape, active, (&outs, &states))
}

/// Stores [`gated_delta_net`]'s outputs (per head, `n` rows of its columns) and the states of
/// the heads it ran: the whole rows and matrices in one access each when every column ran, else
/// the columns that ran.
fn store_delta(
    memory: &mut dyn DeviceMemory,
    (out, state): (u64, u64),
    shape: Delta,
    active: usize,
    (outs, states): (&[Vec<u32>], &[f32]),
) -> Result<(), KernelError> {
    use signature::gated_delta_net::{OUT, STATE};
    let d = shape.d;
    let row = shape.v_heads * d;
    if active == row {
        let mut rows = vec![0u32; shape.n * row];
        for (h, o) in outs.iter().enumerate() {
            for (t, chunk) in o.chunks_exact(d).enumerate() {
                rows[t * row + h * d..t * row + (h + 1) * d].copy_from_slice(chunk);
            }
        }
        store(memory, &OUT, out, 0, &rows)?;
        let bits: Vec<u32> = states.iter().map(|v| v.to_bits()).collect();
        return store(memory, &STATE, state, 0, &bits);
    }
    for (h, o) in outs.iter().enumerate() {
        let columns = (active - h * d).min(d);
        for (t, chunk) in o.chunks_exact(columns).enumerate() {
            store(memory, &OUT, out, widen_usize(t * row + h * d), chunk)?;
        }
        for i in 0..d {
            let first = (h * d + i) * d;
            let bits: Vec<u32> = states[first..first + columns].iter().map(|v| v.to_bits()).collect();
            store(memory, &STATE, state, widen_usize(first), &bits)?;
        }
    }
    Ok(())
}

/// `split_halves(float* a, float* b, const float* src, u32 half, u32 rows)`: nothing when `half`
/// is 0; otherwise for `i < min(half * rows, grid_size_x)`, with `r = i / half`, `c = i % half`:
/// `a[i] = src[2 * half * r + c]`, `b[i] = src[2 * half * r + half + c]`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn split_halves(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::split_halves::{A, B, HALF, ROWS, SRC};
    let grid = Grid::new(launch, &signature::SPLIT_HALVES)?;
    let k = launch.kernarg;
    let (a, b, src) = (A.read_ptr(k)?, B.read_ptr(k)?, SRC.read_ptr(k)?);
    let (half, rows) = (HALF.read_u32(k)?, ROWS.read_u32(k)?);
    if half == 0 {
        return Ok(());
    }
    let h = u64::from(half);
    let active = (h * u64::from(rows)).min(u64::from(grid.size_x));
    if active == 0 {
        return Ok(());
    }
    // The last item reads the last element: 2 * half * r + half + c for i = active - 1.
    let last = active - 1;
    let count = 2 * h * (last / h) + h + last % h + 1;
    let xs = load_f32_vec(memory, &SRC, src, 0, count)?;
    // The source below the last item was read, so every index fits the host.
    let half = widen(half);
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    for i in 0..usize::try_from(active).unwrap_or(usize::MAX) {
        let e = 2 * half * (i / half) + i % half;
        lo.push(xs[e].to_bits());
        hi.push(xs[e + half].to_bits());
    }
    store(memory, &A, a, 0, &lo)?;
    store(memory, &B, b, 0, &hi)
}

/// `rope_partial(float* x, const float* table, u32 pos0, u32 heads, u32 head_dim, u32 rot,
/// u32 n)`: nothing when `rot / 2`, `heads` is 0 or `rot > head_dim`; otherwise, with
/// `half = rot / 2`, for pair `p = u * half + i < min(n * heads * half, grid_size_x)` (`u`
/// counting the heads of the `n` rows of `heads * head_dim`), `pos = pos0 + u / heads` (a 32-bit
/// sum that wraps, as the kernel's), `c, s = table[2 * (pos * half + i) + {0, 1}]`,
/// `e = u * head_dim + i`, `x0, x1 = x[e], x[e + half]`: `x[e] = x0 * c - x1 * s`,
/// `x[e + half] = x0 * s + x1 * c`. The elements from `2 * half` on in each head are untouched.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn rope_partial(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::rope_partial::{HEAD_DIM, HEADS, N, POS0, ROT, TABLE, X};
    let grid = Grid::new(launch, &signature::ROPE_PARTIAL)?;
    let k = launch.kernarg;
    let (x, table) = (X.read_ptr(k)?, TABLE.read_ptr(k)?);
    let (pos0, heads, head_dim, rot, n) =
        (POS0.read_u32(k)?, HEADS.read_u32(k)?, HEAD_DIM.read_u32(k)?, ROT.read_u32(k)?, N.read_u32(k)?);
    let half = rot / 2;
    if half == 0 || heads == 0 || rot > head_dim {
        return Ok(());
    }
    let h = u64::from(half);
    let active = u64::from(n).saturating_mul(u64::from(heads)).saturating_mul(h).min(u64::from(grid.size_x));
    let mut loaded_row: Option<(u64, Vec<f32>)> = None;
    for u in 0..active.div_ceil(h) {
        let pairs = (active - u * h).min(h);
        let e = u * u64::from(head_dim);
        let low = load_f32_vec(memory, &X, x, e, pairs)?;
        let high = load_f32_vec(memory, &X, x, e + h, pairs)?;
        let t = u / u64::from(heads);
        let cs = match loaded_row.take() {
            Some((row, cs)) if row == t => cs,
            _ => {
                // t < n fits 32 bits.
                let pos = pos0.wrapping_add(u32::try_from(t).unwrap_or(u32::MAX));
                load_f32_vec(memory, &TABLE, table, 2 * u64::from(pos) * h, 2 * h)?
            }
        };
        let (mut lo, mut hi) = (Vec::with_capacity(low.len()), Vec::with_capacity(low.len()));
        for ((&x0, &x1), c) in low.iter().zip(&high).zip(cs.chunks_exact(2)) {
            lo.push((x0 * c[0] - x1 * c[1]).to_bits());
            hi.push((x0 * c[1] + x1 * c[0]).to_bits());
        }
        store(memory, &X, x, e, &lo)?;
        store(memory, &X, x, e + h, &hi)?;
        loaded_row = Some((t, cs));
    }
    Ok(())
}

/// `sigmoid_mul`'s element on raw `f32` bits: `up * (1 / (1 + exp(-gate)))`.
#[inline(always)]
fn sigmoid_gate([gate, up]: [u32; 2]) -> u32 {
    let s = 1.0 / (1.0 + expf(-f32::from_bits(gate)));
    (f32::from_bits(up) * s).to_bits()
}

/// `sigmoid_mul(float* out, const float* gate, const float* up, u32 n)`: `out[i] = up[i] *
/// (1 / (1 + exp(-gate[i])))` ([`crate::cpu::expf`]) for `i < min(n, grid_size_x)`.
///
/// # Errors
/// [`KernelError`] for a short kernarg segment, an unsupported launch, or a fault on an argument.
pub fn sigmoid_mul(launch: &Launch<'_>, memory: &mut dyn DeviceMemory) -> Result<(), KernelError> {
    use signature::silu_mul::{GATE, N, OUT, UP};
    Map { sig: &signature::SIGMOID_MUL, out: OUT, inputs: [GATE, UP], n: N }.run(launch, memory, sigmoid_gate)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `f32` literals of `hip/qwen35.hip` from `LOG_SQRT2` to `rl_softplusf`, comments left
    /// out, in source order.
    fn source_literals() -> Vec<f32> {
        let source = include_str!("../../../kernels/hip/qwen35.hip");
        let body = &source[source.find("#define LOG_SQRT2").unwrap()
            ..source.find("static __device__ inline float rl_softplusf").unwrap()];
        let mut out = Vec::new();
        for line in body.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let code = line.split("//").next().unwrap_or("");
            for token in code.split(|c: char| c.is_whitespace() || "();,".contains(c)) {
                if let Some(number) = token.strip_suffix('f')
                    && number.contains('.')
                    && let Ok(v) = number.parse::<f32>()
                {
                    out.push(v);
                }
            }
        }
        out
    }

    #[test]
    fn constants_are_the_kernel_source_literals() {
        // LOG_SQRT2, LOG_LN2_HI, LOG_LN2_LO; `x < 0.0f`, `x == 0.0f`; `m * 0.5f`; `m - 1.0f`;
        // the polynomial; `0.5f * z`; SOFTPLUS_LINEAR.
        let mut expected = vec![LOG_SQRT2, LOG_LN2_HI, LOG_LN2_LO, 0.0, 0.0, 0.5, 1.0];
        expected.extend(LOG_POLY);
        expected.extend([0.5, SOFTPLUS_LINEAR]);
        let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&source_literals()), bits(&expected));
    }

    #[test]
    fn log_special_values() {
        assert_eq!(logf(1.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(logf(f32::INFINITY), f32::INFINITY);
        assert_eq!(logf(0.0), f32::NEG_INFINITY);
        assert_eq!(logf(-0.0), f32::NEG_INFINITY);
        assert!(logf(-1.0).is_nan() && logf(f32::NAN).is_nan());
        assert_eq!(logf(f32::MIN_POSITIVE / 2.0), f32::NEG_INFINITY);
        // softplus: linear above 20, log 2 at 0, 0 far below.
        assert_eq!(softplusf(20.5), 20.5);
        assert_eq!(softplusf(-200.0), 0.0);
        assert!((f64::from(softplusf(0.0)) - std::f64::consts::LN_2).abs() < 1e-7);
    }
}
