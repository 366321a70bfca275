#include "device.h"

// The kernels Gemma 3 needs beyond llama's: NEOX rotary embedding, sliding-window attention
// (decode and prefill) and GELU gating. Everything else of a Gemma step is llama.hip's,
// prefill.hip's, quant.hip's and rmsnorm.hip's.

// Work-items per query head (per (row, head) in prefill) of the attention kernels: ATTN_BLOCK of
// llama.hip, whose attention the window kernels reproduce.
#define ATTN_BLOCK 64

// ---------------------------------------------------------------------------------------------
// NEOX rotary embedding (GGML's "neox" mode): pair i of head h is the elements i and i + half of
// the head (half = head_dim / 2), not the adjacent 2i, 2i + 1 of llama.hip's rope. The host fills
// the table as for rope: table[pos][i] = (cos, sin) of pos * base^(-2i / head_dim), one table per
// RoPE base.

// Rotates pair p = h * half + i of src into dst with cos and sin from the table row of position
// pos: x0 = src[e], x1 = src[e + half] (e = h * head_dim + i); dst[e] = x0 * c - x1 * s,
// dst[e + half] = x0 * s + x1 * c, each product and the sum rounded to f32.
static __device__ inline void rotate_neox(float* dst, const float* src, const float* table, u32 pos, u32 half, u32 p) {
  u32 h = p / half;
  u32 i = p % half;
  unsigned long e = (unsigned long)h * (2 * half) + i;
  const float* cs = table + ((unsigned long)pos * half + i) * 2;
  float c = cs[0];
  float s = cs[1];
  float x0 = src[e];
  float x1 = src[e + half];
  dst[e] = x0 * c - x1 * s;
  dst[e + half] = x0 * s + x1 * c;
}

// In place on x[heads][head_dim] (head_dim even): one work-item per pair.
KERNEL void rope_neox(float* x, const float* table, u32 pos, u32 heads, u32 head_dim) {
  u32 half = head_dim / 2;
  u32 p = global_id_x();
  if (p >= heads * half) return;
  rotate_neox(x, x, table, pos, half, p);
}

// The rotated src written to the K cache row of position pos: cache + pos * heads * head_dim.
KERNEL void rope_neox_store(float* cache, const float* src, const float* table, u32 pos, u32 heads, u32 head_dim) {
  u32 half = head_dim / 2;
  u32 p = global_id_x();
  if (p >= heads * half) return;
  rotate_neox(cache + (unsigned long)pos * heads * head_dim, src, table, pos, half, p);
}

// In place on x[t][heads][head_dim] (head_dim even) for t < n: one work-item per pair, pair
// p = t * heads * head_dim / 2 + q. Row t is bit for bit rope_neox at position pos0 + t (a
// 32-bit sum, as the kernel computes it).
KERNEL void rope_neox_rows(float* x, const float* table, u32 pos0, u32 heads, u32 head_dim, u32 n) {
  u32 half = head_dim / 2;
  u32 row_pairs = heads * half;
  if (row_pairs == 0) return;
  u32 p = global_id_x();
  u32 t = p / row_pairs;
  if (t >= n) return;
  float* xt = x + (unsigned long)t * heads * head_dim;
  rotate_neox(xt, xt, table, pos0 + t, half, p % row_pairs);
}

// ---------------------------------------------------------------------------------------------
// Sliding-window attention: llama.hip's attention over the cached positions first..end-1 only.

// llama.hip's LDS trees over ATTN_BLOCK slots: max by a > b ? a : b, and sum; the result is in
// red[0].
static __device__ inline void tree_max(float* red, u32 t) {
  for (u32 stride = ATTN_BLOCK / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      float o = red[t + stride];
      red[t] = o > red[t] ? o : red[t];
    }
    barrier();
  }
}

static __device__ inline void tree_sum(float* red, u32 t) {
  for (u32 stride = ATTN_BLOCK / 2; stride > 0; stride /= 2) {
    if (t < stride) red[t] += red[t + stride];
    barrier();
  }
}

// One query head qh against cached positions j = first..end-1 (first < end) of the kv head at
// kv_offset, into oh; position j's score and then p sit in sh[j - first]. Exactly llama.hip's
// attention on the caches from row first on, over end - first positions: work-item t takes
// positions first + t, first + t + 64, ... ascending: s = (q_h . k_j, d ascending) * scale, its
// maximum m by s > m ? s : m from -inf; the LDS max tree; p = exp(s - max) (rl_expf), summed per
// work-item in the same order; the LDS sum tree; then work-item t computes
// oh[d] = (sum_j p[j] * v_j[d], j = first..end-1 ascending) / sum for d = t, t + 64, ...
// (head_dim 256: four d per work-item; LDS is the 64 floats of red whatever head_dim is).
static __device__ inline void attend_window(float* oh, const float* qh, const float* k_cache, const float* v_cache,
                                            float* sh, float* red, u32 t, u32 first, u32 end,
                                            unsigned long kv_width, unsigned long kv_offset, u32 head_dim,
                                            float scale) {
  float m = -__builtin_inff();
  for (u32 j = first + t; j < end; j += ATTN_BLOCK) {
    const float* kj = k_cache + j * kv_width + kv_offset;
    float dot = 0.0f;
    for (u32 d = 0; d < head_dim; ++d) dot += qh[d] * kj[d];
    float s = dot * scale;
    sh[j - first] = s;
    m = s > m ? s : m;
  }
  red[t] = m;
  barrier();
  tree_max(red, t);
  float max = red[0];
  barrier();  // every work-item has read the maximum before red is reused

  float sum = 0.0f;
  for (u32 j = first + t; j < end; j += ATTN_BLOCK) {
    float p = rl_expf(sh[j - first] - max);
    sh[j - first] = p;
    sum += p;
  }
  red[t] = sum;
  barrier();  // also publishes every work-item's p[j] to the work-group
  tree_sum(red, t);
  float total = red[0];

  for (u32 d = t; d < head_dim; d += ATTN_BLOCK) {
    float acc = 0.0f;
    for (u32 j = first; j < end; ++j) acc += sh[j - first] * v_cache[j * kv_width + kv_offset + d];
    oh[d] = acc / total;
  }
}

// Single-query grouped-query attention over the cached positions first..n-1 (the window: first =
// max(0, n - window), the window's first key); one work-group of 64 per query head h, which reads
// kv head h / (heads / kv_heads). Caches are [position][kv_heads * head_dim]; scores is heads rows
// of scores_stride floats of scratch, position j at column j - first (needs n - first <=
// scores_stride). With first = 0 this is bit for bit llama.hip's attention.
KERNEL __attribute__((amdgpu_flat_work_group_size(ATTN_BLOCK, ATTN_BLOCK)))
void attention_window(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores,
                      u32 first, u32 n, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride, float scale) {
  __shared__ float red[ATTN_BLOCK];
  u32 h = block_id_x();
  u32 t = thread_id_x();
  if (h >= heads) return;
  unsigned long kv_width = (unsigned long)kv_heads * head_dim;
  unsigned long kv_offset = (unsigned long)(h / (heads / kv_heads)) * head_dim;
  attend_window(out + (unsigned long)h * head_dim, q + (unsigned long)h * head_dim, k_cache, v_cache,
                scores + (unsigned long)h * scores_stride, red, t, first, n, kv_width, kv_offset, head_dim, scale);
}

// Causal sliding-window grouped-query attention for n query rows (prefill.hip's attention_rows
// with a window): q and out are [n][heads][head_dim]; query row t sits at position pos0 + t and
// attends the cached positions max(0, pos0 + t + 1 - window) .. pos0 + t. One work-group of 64
// per (row t, head h), work-group g = t * heads + h; scores row g of scores_stride floats is its
// scratch. Row t, head h is bit for bit attention_window with n = pos0 + t + 1 and that first on
// q[t][h] (32-bit sums, as the kernel computes them); needs min(window, pos0 + n) <=
// scores_stride.
KERNEL __attribute__((amdgpu_flat_work_group_size(ATTN_BLOCK, ATTN_BLOCK)))
void attention_window_rows(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores,
                           u32 pos0, u32 n, u32 window, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride,
                           float scale) {
  __shared__ float red[ATTN_BLOCK];
  if (heads == 0) return;
  u32 g = block_id_x();
  u32 row = g / heads;
  u32 h = g % heads;
  u32 t = thread_id_x();
  if (row >= n) return;
  u32 end = pos0 + row + 1;
  u32 first = end > window ? end - window : 0;
  unsigned long kv_width = (unsigned long)kv_heads * head_dim;
  unsigned long kv_offset = (unsigned long)(h / (heads / kv_heads)) * head_dim;
  attend_window(out + (unsigned long)g * head_dim, q + (unsigned long)g * head_dim, k_cache, v_cache,
                scores + (unsigned long)g * scores_stride, red, t, first, end, kv_width, kv_offset, head_dim, scale);
}

// ---------------------------------------------------------------------------------------------
// GELU gating (tanh approximation).

// tanh(x) in f32 from +, -, *, / and rl_expf, so that the CPU reference (`cpu::tanhf`)
// reproduces it bit for bit. On a = |x| (the sign is put back by a bit operation, so tanh(-0) =
// -0 and tanh(-x) = -tanh(x) exactly), NaN returned unchanged:
// - a < 0.625: a + a^3 * P(a^2), P the Cephes tanhf polynomial of degree 4 in z = a * a, by
//   Horner from the highest coefficient, then r = p * z * a + a ((p * z) * a, then + a);
// - a > 10 (infinity included): 1 (1 - tanh(a) < 2^-25 from a > 13 ln 2 = 9.01 on);
// - otherwise: e = rl_expf(a + a) (a + a is exact), r = 1 - 2 / (e + 1).
#define TANH_SMALL 0.625f
#define TANH_ONE 10.0f

static __device__ inline float rl_tanhf(float x) {
  if (x != x) return x;
  u32 sign = __builtin_bit_cast(u32, x) & 0x80000000u;
  float a = __builtin_bit_cast(float, __builtin_bit_cast(u32, x) & 0x7fffffffu);
  float r;
  if (a < TANH_SMALL) {
    float z = a * a;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z + -5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z + -3.33332819422e-1f;
    r = p * z * a + a;
  } else if (a > TANH_ONE) {
    r = 1.0f;
  } else {
    float e = rl_expf(a + a);
    r = 1.0f - 2.0f / (e + 1.0f);
  }
  return __builtin_bit_cast(float, __builtin_bit_cast(u32, r) | sign);
}

// sqrt(2 / pi) and the cubic coefficient of the tanh approximation, as ggml writes them.
#define GELU_SQRT_2_OVER_PI 0.79788456080286535587989211986876f
#define GELU_COEF_A 0.044715f

// out[i] = gelu(g) * up[i] for i < n, g = gate[i], gelu(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g +
// 0.044715 g^3))), in this order of f32 operations:
//   k = (GELU_SQRT_2_OVER_PI * g) * (1 + (GELU_COEF_A * g) * g);  t = rl_tanhf(k);
//   w = 0.5 * (1 + t);  gelu = w == 0 ? -0.0 : g * w;  out = gelu * up.
// 0.5 * (1 + t) is exact (1 + t is 0 or a multiple of 2^-24 in [2^-24, 2]). w == 0 only where
// tanh(k) rounds to -1 (k < -9, g below about -5.2); there g * w would be -0 for finite g, and
// the select gives gelu(-inf) its limit -0 instead of -inf * 0 = NaN. A huge |g| overflows k to
// +-inf, whose tanh is +-1: gelu(g) = g, or -0.
KERNEL void gelu_mul(float* out, const float* gate, const float* up, u32 n) {
  u32 i = global_id_x();
  if (i < n) {
    float g = gate[i];
    float k = GELU_SQRT_2_OVER_PI * g * (1.0f + GELU_COEF_A * g * g);
    float w = 0.5f * (1.0f + rl_tanhf(k));
    float gelu = w == 0.0f ? -0.0f : g * w;
    out[i] = gelu * up[i];
  }
}
