#include "device.h"

// Work-items per query head in attention: two wave32s, one per output element of a 64-wide head.
#define ATTN_BLOCK 64

// Rotates pair p = h * half + i of src into dst (GGML "normal" rope: adjacent elements 2i, 2i+1
// of head h), with cos and sin from the host-filled table row of position pos.
static __device__ inline void rotate_pair(float* dst, const float* src, const float* table, u32 pos, u32 half, u32 p) {
  u32 h = p / half;
  u32 i = p % half;
  unsigned long e = (unsigned long)h * (2 * half) + 2 * i;
  const float* cs = table + ((unsigned long)pos * half + i) * 2;
  float c = cs[0];
  float s = cs[1];
  float x0 = src[e];
  float x1 = src[e + 1];
  dst[e] = x0 * c - x1 * s;
  dst[e + 1] = x0 * s + x1 * c;
}

// In place on x[heads][head_dim] (head_dim even): one work-item per pair.
KERNEL void rope(float* x, const float* table, u32 pos, u32 heads, u32 head_dim) {
  u32 half = head_dim / 2;
  u32 p = global_id_x();
  if (p >= heads * half) return;
  rotate_pair(x, x, table, pos, half, p);
}

// The rotated src written to the K cache row of position pos: cache + pos * heads * head_dim.
KERNEL void rope_store(float* cache, const float* src, const float* table, u32 pos, u32 heads, u32 head_dim) {
  u32 half = head_dim / 2;
  u32 p = global_id_x();
  if (p >= heads * half) return;
  rotate_pair(cache + (unsigned long)pos * heads * head_dim, src, table, pos, half, p);
}

// cache[pos * width + i] = src[i] for i < width (the V cache row).
KERNEL void kv_store(float* cache, const float* src, u32 pos, u32 width) {
  u32 i = global_id_x();
  if (i < width) cache[(unsigned long)pos * width + i] = src[i];
}

// LDS tree over ATTN_BLOCK slots, max (by a > b ? a : b) or sum; the result is in red[0].
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

// Single-query grouped-query attention over cached positions 0..n-1; one work-group per query
// head h, which reads kv head h / (heads / kv_heads). Caches are [position][kv_heads * head_dim];
// scores is heads rows of scores_stride floats of scratch. Work-item t takes positions t, t + 64,
// ...: s = (q_h . k_j, d ascending) * scale, then p = exp(s - max) with max and sum by LDS trees;
// work-item t then computes out[h][d] = (sum_j p[j] * v_j[d], j ascending) / sum for d = t, t + 64, ...
KERNEL __attribute__((amdgpu_flat_work_group_size(ATTN_BLOCK, ATTN_BLOCK)))
void attention(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores, u32 n,
               u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride, float scale) {
  __shared__ float red[ATTN_BLOCK];
  u32 h = block_id_x();
  u32 t = thread_id_x();
  if (h >= heads) return;
  unsigned long kv_width = (unsigned long)kv_heads * head_dim;
  unsigned long kv_offset = (unsigned long)(h / (heads / kv_heads)) * head_dim;
  const float* qh = q + (unsigned long)h * head_dim;
  float* sh = scores + (unsigned long)h * scores_stride;

  float m = -__builtin_inff();
  for (u32 j = t; j < n; j += ATTN_BLOCK) {
    const float* kj = k_cache + j * kv_width + kv_offset;
    float dot = 0.0f;
    for (u32 d = 0; d < head_dim; ++d) dot += qh[d] * kj[d];
    float s = dot * scale;
    sh[j] = s;
    m = s > m ? s : m;
  }
  red[t] = m;
  barrier();
  tree_max(red, t);
  float max = red[0];
  barrier();  // every work-item has read the maximum before red is reused

  float sum = 0.0f;
  for (u32 j = t; j < n; j += ATTN_BLOCK) {
    float p = rl_expf(sh[j] - max);
    sh[j] = p;
    sum += p;
  }
  red[t] = sum;
  barrier();  // also publishes every work-item's p[j] to the work-group
  tree_sum(red, t);
  float total = red[0];

  for (u32 d = t; d < head_dim; d += ATTN_BLOCK) {
    float acc = 0.0f;
    for (u32 j = 0; j < n; ++j) acc += sh[j] * v_cache[j * kv_width + kv_offset + d];
    out[(unsigned long)h * head_dim + d] = acc / total;
  }
}

// out[i] = gate[i] / (1 + exp(-gate[i])) * up[i] for i < n.
KERNEL void silu_mul(float* out, const float* gate, const float* up, u32 n) {
  u32 i = global_id_x();
  if (i < n) {
    float g = gate[i];
    out[i] = g / (1.0f + rl_expf(-g)) * up[i];
  }
}
