#include "device.h"

// The kernels Qwen 3.5 (llama.cpp's `qwen35`) needs beyond llama's, gemma's and the ggml quant
// modules': the gated-DeltaNet layer's causal convolution with its state, the gated delta rule
// over a per-head state matrix, the split of the full-attention query projection into query and
// output gate, partial NEOX rotary embedding, and the sigmoid output gate. Every kernel takes a
// token count n: the decode step launches it with n = 1, the batched prefill with the pass's
// tokens, and token t of a launch is bit for bit the decode launch of that token, because each
// work-item runs the tokens in order on state only it touches.

// ---------------------------------------------------------------------------------------------
// log(x) in f32 from +, -, * and bit operations only, so that the CPU reference (`cpu::logf`)
// reproduces it bit for bit. For positive normal x (the softplus below takes it on [1, 5e8]): x =
// m * 2^e with m in [sqrt(1/2), sqrt(2)) (the exponent bits give e and m in [1, 2), halved with e
// raised when above sqrt(2)); f = m - 1 (exact); log(1 + f) = f - f^2 / 2 + f^3 P(f) with the
// Cephes logf polynomial P of degree 8 by Horner from the highest coefficient, then
// y = (P * f) * z + e * LOG_LN2_LO - 0.5 * z, r = (f + y) + e * LOG_LN2_HI (ln 2 split in two:
// LOG_LN2_HI has 9 significant bits, so e * LOG_LN2_HI is exact). Returns x for NaN and +inf,
// NaN for x < 0, -inf for +-0; subnormal x is outside its domain (read as 0: -inf).
#define LOG_SQRT2 1.41421356237309504880f
#define LOG_LN2_HI 0.693359375f
#define LOG_LN2_LO -2.12194440e-4f

static __device__ inline float rl_logf(float x) {
  if (x != x || x == __builtin_inff()) return x;
  if (x < 0.0f) return __builtin_nanf("");
  if (x == 0.0f) return -__builtin_inff();
  u32 bits = __builtin_bit_cast(u32, x);
  int e = (int)(bits >> 23) - 127;
  if (e == -127) return -__builtin_inff();  // subnormal
  float m = __builtin_bit_cast(float, (bits & 0x007fffffu) | 0x3f800000u);
  if (m > LOG_SQRT2) {
    m = m * 0.5f;
    e = e + 1;
  }
  float f = m - 1.0f;
  float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f + -1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f + -1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f + -1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f + -2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float ef = (float)e;
  float y = p * f * z;
  y = y + ef * LOG_LN2_LO;
  y = y - 0.5f * z;
  float r = f + y;
  return r + ef * LOG_LN2_HI;
}

// ggml's softplus: x above 20 is its own softplus, else log(1 + exp(x)).
#define SOFTPLUS_LINEAR 20.0f

static __device__ inline float rl_softplusf(float x) { return x > SOFTPLUS_LINEAR ? x : rl_logf(1.0f + rl_expf(x)); }

// ---------------------------------------------------------------------------------------------
// The DeltaNet layer's causal depthwise convolution with SiLU, and its state.
//
// x and out are n rows of `channels` floats; channel c's kernel is weight[c][0..history] (history
// + 1 taps, oldest input first: llama.cpp's ssm_conv1d {d_conv, channels}); state[c][0..history)
// holds the channel's last `history` inputs, oldest first. One work-item per channel c, tokens t
// in order: the window is (state[c][0..history), x[t][c]); sum = 0, then sum += window[i] *
// weight[c][i] for i ascending (ggml_ssm_conv's order); out[t][c] = sum / (1 + exp(-sum)) (SiLU,
// ggml_silu_f32's order); then the state shifts in place by one input (state[c][i] =
// state[c][i + 1] ascending, state[c][history - 1] = x[t][c]). The shift is done by the
// work-item that read the values, so no other work-item sees it: the layout needs no position.
KERNEL void ssm_conv_silu(float* out, float* state, const float* x, const float* weight, u32 channels, u32 history,
                          u32 n) {
  u32 c = global_id_x();
  if (c >= channels) return;
  float* s = state + (unsigned long)c * history;
  const float* w = weight + (unsigned long)c * ((unsigned long)history + 1);
  for (u32 t = 0; t < n; ++t) {
    float xc = x[(unsigned long)t * channels + c];
    float sum = 0.0f;
    for (u32 i = 0; i < history; ++i) sum += s[i] * w[i];
    sum += xc * w[history];
    out[(unsigned long)t * channels + c] = sum / (1.0f + rl_expf(-sum));
    if (history > 0) {
      for (u32 i = 0; i + 1 < history; ++i) s[i] = s[i + 1];
      s[history - 1] = xc;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The gated delta rule (llama.cpp's ggml_gated_delta_net for one sequence, scalar gate).
//
// qkv is n rows of (2 * k_heads + v_heads) * head_dim floats, the convolution's output: the
// k_heads query heads, the k_heads key heads, the v_heads value heads. alpha and beta are n rows
// of v_heads floats (the ssm_alpha and ssm_beta projections); dt_bias and ssm_a (= -exp(A_log))
// are v_heads floats. out is n rows of v_heads * head_dim floats. state is v_heads matrices of
// head_dim x head_dim: S[h][i][j] at (h * head_dim + i) * head_dim + j, i indexing keys and j
// values. Value head h reads query and key head h % k_heads (llama.cpp's tiled broadcast).
//
// One work-item per (h, j) (g = h * head_dim + j), owning column j of S[h]; tokens in order, each:
//   q^ = q * (1 / sqrt(sum_i q[i]^2 + eps)), k^ likewise (sums i ascending), each element
//        rounded as it is used (L2 normalisation);
//   decay = exp(softplus(alpha[t][h] + dt_bias[h]) * ssm_a[h]);
//   b = 1 / (1 + exp(-beta[t][h]));
//   S[h][i][j] *= decay and kv = sum_i S[h][i][j] * k^[i] (i ascending, from 0);
//   delta = (v[j] - kv) * b;
//   S[h][i][j] += k^[i] * delta and o = sum_i S[h][i][j] * q^[i] (i ascending, from 0);
//   out[t][h][j] = o * scale (scale = 1 / sqrt(head_dim), the host's f32).
KERNEL void gated_delta_net(float* out, float* state, const float* qkv, const float* alpha, const float* beta,
                            const float* dt_bias, const float* ssm_a, u32 v_heads, u32 k_heads, u32 head_dim, u32 n,
                            float eps, float scale) {
  if (head_dim == 0 || k_heads == 0) return;
  u32 g = global_id_x();
  u32 h = g / head_dim;
  u32 j = g % head_dim;
  if (h >= v_heads) return;
  unsigned long d = head_dim;
  unsigned long width = (2 * (unsigned long)k_heads + v_heads) * d;
  unsigned long kh = h % k_heads;
  float* s = state + (unsigned long)h * d * d + j;
  for (u32 t = 0; t < n; ++t) {
    const float* row = qkv + (unsigned long)t * width;
    const float* q = row + kh * d;
    const float* k = row + ((unsigned long)k_heads + kh) * d;
    const float* v = row + (2 * (unsigned long)k_heads + h) * d;
    float sq = 0.0f;
    for (u32 i = 0; i < head_dim; ++i) sq += q[i] * q[i];
    float sk = 0.0f;
    for (u32 i = 0; i < head_dim; ++i) sk += k[i] * k[i];
    float iq = 1.0f / __builtin_sqrtf(sq + eps);
    float ik = 1.0f / __builtin_sqrtf(sk + eps);
    unsigned long th = (unsigned long)t * v_heads + h;
    float decay = rl_expf(rl_softplusf(alpha[th] + dt_bias[h]) * ssm_a[h]);
    float b = 1.0f / (1.0f + rl_expf(-beta[th]));
    float kv = 0.0f;
    for (u32 i = 0; i < head_dim; ++i) {
      float sij = s[i * d] * decay;
      s[i * d] = sij;
      kv += sij * (k[i] * ik);
    }
    float delta = (v[j] - kv) * b;
    float o = 0.0f;
    for (u32 i = 0; i < head_dim; ++i) {
      float sij = s[i * d] + (k[i] * ik) * delta;
      s[i * d] = sij;
      o += sij * (q[i] * iq);
    }
    out[th * d + j] = o * scale;
  }
}

// ---------------------------------------------------------------------------------------------
// The full-attention layer's query projection holds, per head, head_dim query values then
// head_dim output-gate values (llama.cpp's Qcur_full views). For i < rows * half, with r = i /
// half and c = i % half: a[i] = src[2 * half * r + c] and b[i] = src[2 * half * r + half + c].
KERNEL void split_halves(float* a, float* b, const float* src, u32 half, u32 rows) {
  if (half == 0) return;
  u32 i = global_id_x();
  u32 r = i / half;
  u32 c = i % half;
  if (r >= rows) return;
  unsigned long e = 2 * (unsigned long)half * r + c;
  a[i] = src[e];
  b[i] = src[e + half];
}

// ---------------------------------------------------------------------------------------------
// Partial NEOX rotary embedding: in each head of head_dim elements, pair i < rot / 2 is the
// elements i and i + rot / 2; the elements from 2 * (rot / 2) on pass unchanged. x is n rows of
// heads * head_dim floats, row t at position pos0 + t (a 32-bit sum); the host fills the table
// as table[pos][i] = (cos, sin), rot / 2 pairs per position. One work-item per pair p = u * half
// + i, u = t * heads + head: x0 = x[e], x1 = x[e + half] (e = u * head_dim + i);
// x[e] = x0 * c - x1 * s, x[e + half] = x0 * s + x1 * c, each product and the sum rounded.
KERNEL void rope_partial(float* x, const float* table, u32 pos0, u32 heads, u32 head_dim, u32 rot, u32 n) {
  u32 half = rot / 2;
  if (half == 0 || heads == 0 || rot > head_dim) return;
  u32 p = global_id_x();
  u32 u = p / half;
  u32 i = p % half;
  if ((unsigned long)u >= (unsigned long)n * heads) return;
  u32 pos = pos0 + u / heads;
  unsigned long e = (unsigned long)u * head_dim + i;
  const float* cs = table + ((unsigned long)pos * half + i) * 2;
  float c = cs[0];
  float s = cs[1];
  float x0 = x[e];
  float x1 = x[e + half];
  x[e] = x0 * c - x1 * s;
  x[e + half] = x0 * s + x1 * c;
}

// ---------------------------------------------------------------------------------------------
// The attention output gate: out[i] = up[i] * (1 / (1 + exp(-gate[i]))) for i < n (ggml's
// sigmoid, then the product).
KERNEL void sigmoid_mul(float* out, const float* gate, const float* up, u32 n) {
  u32 i = global_id_x();
  if (i < n) {
    float s = 1.0f / (1.0f + rl_expf(-gate[i]));
    out[i] = up[i] * s;
  }
}
