#include "device.h"

// Batched prefill: the decode kernels of quant.hip and llama.hip over the n tokens of a prompt
// chunk ("rows" t < n). Contract: row t of every kernel here is bit for bit what the single-token
// kernel computes for token t. Each kernel performs, per token, exactly the single-token kernel's
// f32 operations in its order (the same per-work-item partial sums and the same LDS tree); what
// batching shares is the loads: a weight block is read and its quants converted once for a tile
// of tokens.

// ggml block formats (ggml-common.h), as in quant.hip.
#define QK 32
#define Q4_1_BYTES 20  // { f16 d; f16 m; u8 qs[16] }
#define Q8_0_BYTES 34  // { f16 d; i8 qs[32] }

// Work-items per weight row of the matrix products: one wave32, as QMATVEC_BLOCK in quant.hip.
#define MATMUL_BLOCK 32
// Tokens per pass of a matrix product: a work-item's partial sums for them stay in registers.
#define MATMUL_TILE 8

// Work-items per (row, head) of attention_rows: ATTN_BLOCK of llama.hip.
#define ATTN_BLOCK 64

// The f16 at p, exactly as f32 (quant.hip's half_at).
static __device__ inline float half_at(const unsigned char* p) {
  unsigned short bits = (unsigned short)(p[0] | (p[1] << 8));
  return (float)__builtin_bit_cast(_Float16, bits);
}

// The tile's token k as a row of x; tokens past n repeat token n - 1, whose sums are dropped, so
// that every work-item runs the same unrolled loop.
static __device__ inline const float* tile_row(const float* x, u32 t0, u32 k, u32 n, u32 cols) {
  u32 t = t0 + k < n ? t0 + k : n - 1;
  return x + (unsigned long)t * cols;
}

// The LDS tree of quant.hip over MATMUL_BLOCK partial sums, for every token of the tile at once:
// partial[k][0] ends holding token k's sum, paired exactly as for one token.
static __device__ inline void tile_tree_sum(float (*partial)[MATMUL_BLOCK], u32 lane) {
  for (u32 stride = MATMUL_BLOCK / 2; stride > 0; stride /= 2) {
    if (lane < stride) {
#pragma unroll
      for (u32 k = 0; k < MATMUL_TILE; ++k) partial[k][lane] += partial[k][lane + stride];
    }
    barrier();
  }
}

// Stores the tile's sums as y[t][row] and frees the LDS for the next tile.
static __device__ inline void tile_store(float* y, float (*partial)[MATMUL_BLOCK], u32 lane, u32 t0, u32 n,
                                         u32 rows, u32 row) {
  if (lane < MATMUL_TILE && t0 + lane < n) y[(unsigned long)(t0 + lane) * rows + row] = partial[lane][0];
  barrier();  // every sum is read before the next tile overwrites partial
}

// y[t * rows + r] = sum_c w[r][c] * x[t * cols + c] for t < n, r < rows, w in Q4_1 rows of
// cols / 32 blocks (cols a multiple of 32), x and y row-major per token.
// Row t is bit for bit matvec_q4_1 on x[t]: one work-group of 32 per weight row; work-item lane
// takes blocks lane, lane + 32, ... ascending and keeps, per token, its own f32 sum acc from 0.0
// to which each block adds exactly as in matvec_q4_1 (the chains lo and hi of fmas, sx, then
// acc = fma(d, lo + hi, acc); acc = fma(m, sx, acc)); per token, the 32 sums are added by the
// LDS tree. Tokens go in tiles of MATMUL_TILE: each quant is converted once per tile and
// multiplied into the tile's 8 chains. n at most 2^32 - MATMUL_TILE (the tile loop's counter
// must not wrap).
KERNEL __attribute__((amdgpu_flat_work_group_size(MATMUL_BLOCK, MATMUL_BLOCK)))
void matmul_q4_1(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols, u32 n) {
  __shared__ float partial[MATMUL_TILE][MATMUL_BLOCK];
  u32 row = block_id_x();
  u32 lane = thread_id_x();
  if (row >= rows) return;
  u32 nb = cols / QK;
  const unsigned char* wr = w + (unsigned long)row * nb * Q4_1_BYTES;
  for (u32 t0 = 0; t0 < n; t0 += MATMUL_TILE) {
    float acc[MATMUL_TILE];
#pragma unroll
    for (u32 k = 0; k < MATMUL_TILE; ++k) acc[k] = 0.0f;
    for (u32 b = lane; b < nb; b += MATMUL_BLOCK) {
      const unsigned char* blk = wr + (unsigned long)b * Q4_1_BYTES;
      float d = half_at(blk);
      float m = half_at(blk + 2);
      unsigned long first = (unsigned long)b * QK;
      float lo[MATMUL_TILE];
      float hi[MATMUL_TILE];
      float sx[MATMUL_TILE];
#pragma unroll
      for (u32 k = 0; k < MATMUL_TILE; ++k) lo[k] = hi[k] = sx[k] = 0.0f;
      for (u32 j = 0; j < QK / 2; ++j) {
        float ql = (float)(blk[4 + j] & 15);
        float qh = (float)(blk[4 + j] >> 4);
#pragma unroll
        for (u32 k = 0; k < MATMUL_TILE; ++k) {
          const float* xk = tile_row(x, t0, k, n, cols) + first;
          lo[k] = __builtin_fmaf(ql, xk[j], lo[k]);
          hi[k] = __builtin_fmaf(qh, xk[QK / 2 + j], hi[k]);
        }
      }
      for (u32 j = 0; j < QK; ++j) {
#pragma unroll
        for (u32 k = 0; k < MATMUL_TILE; ++k) sx[k] += tile_row(x, t0, k, n, cols)[first + j];
      }
#pragma unroll
      for (u32 k = 0; k < MATMUL_TILE; ++k) {
        acc[k] = __builtin_fmaf(d, lo[k] + hi[k], acc[k]);
        acc[k] = __builtin_fmaf(m, sx[k], acc[k]);
      }
    }
#pragma unroll
    for (u32 k = 0; k < MATMUL_TILE; ++k) partial[k][lane] = acc[k];
    barrier();
    tile_tree_sum(partial, lane);
    tile_store(y, partial, lane, t0, n, rows, row);
  }
}

// As matmul_q4_1 with Q8_0 rows: row t is bit for bit matvec_q8_0 on x[t] (per token, the chains
// lo and hi of fmas, then acc = fma(d, lo + hi, acc)).
KERNEL __attribute__((amdgpu_flat_work_group_size(MATMUL_BLOCK, MATMUL_BLOCK)))
void matmul_q8_0(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols, u32 n) {
  __shared__ float partial[MATMUL_TILE][MATMUL_BLOCK];
  u32 row = block_id_x();
  u32 lane = thread_id_x();
  if (row >= rows) return;
  u32 nb = cols / QK;
  const unsigned char* wr = w + (unsigned long)row * nb * Q8_0_BYTES;
  for (u32 t0 = 0; t0 < n; t0 += MATMUL_TILE) {
    float acc[MATMUL_TILE];
#pragma unroll
    for (u32 k = 0; k < MATMUL_TILE; ++k) acc[k] = 0.0f;
    for (u32 b = lane; b < nb; b += MATMUL_BLOCK) {
      const unsigned char* blk = wr + (unsigned long)b * Q8_0_BYTES;
      float d = half_at(blk);
      unsigned long first = (unsigned long)b * QK;
      float lo[MATMUL_TILE];
      float hi[MATMUL_TILE];
#pragma unroll
      for (u32 k = 0; k < MATMUL_TILE; ++k) lo[k] = hi[k] = 0.0f;
      for (u32 j = 0; j < QK / 2; ++j) {
        float ql = (float)(signed char)blk[2 + j];
        float qh = (float)(signed char)blk[2 + QK / 2 + j];
#pragma unroll
        for (u32 k = 0; k < MATMUL_TILE; ++k) {
          const float* xk = tile_row(x, t0, k, n, cols) + first;
          lo[k] = __builtin_fmaf(ql, xk[j], lo[k]);
          hi[k] = __builtin_fmaf(qh, xk[QK / 2 + j], hi[k]);
        }
      }
#pragma unroll
      for (u32 k = 0; k < MATMUL_TILE; ++k) acc[k] = __builtin_fmaf(d, lo[k] + hi[k], acc[k]);
    }
#pragma unroll
    for (u32 k = 0; k < MATMUL_TILE; ++k) partial[k][lane] = acc[k];
    barrier();
    tile_tree_sum(partial, lane);
    tile_store(y, partial, lane, t0, n, rows, row);
  }
}

// out[t * cols + c] = row tokens[t] of the Q8_0 table, dequantised, for t < n, c < cols: one
// work-item per output element, element i = t * cols + c. Each row is bit for bit get_row_q8_0
// with token = &tokens[t]; a token id >= rows writes nothing for that t.
KERNEL void get_rows_q8_0(float* out, const unsigned char* table, const u32* tokens, u32 cols, u32 rows, u32 n) {
  if (cols == 0) return;
  u32 i = global_id_x();
  u32 t = i / cols;
  if (t >= n) return;
  u32 c = i % cols;
  u32 tok = tokens[t];
  if (tok >= rows) return;
  const unsigned char* blk = table + ((unsigned long)tok * (cols / QK) + c / QK) * Q8_0_BYTES;
  out[i] = (float)(signed char)blk[2 + c % QK] * half_at(blk);
}

// llama.hip's rotate_pair: pair p = h * half + i of src into dst, with cos and sin from the table
// row of position pos.
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

// In place on x[t][heads][head_dim] (head_dim even) for t < n: one work-item per pair, pair
// p = t * heads * head_dim / 2 + q. Row t is bit for bit rope at position pos0 + t (a 32-bit sum,
// as the kernel computes it).
KERNEL void rope_rows(float* x, const float* table, u32 pos0, u32 heads, u32 head_dim, u32 n) {
  u32 half = head_dim / 2;
  u32 row_pairs = heads * half;
  if (row_pairs == 0) return;
  u32 p = global_id_x();
  u32 t = p / row_pairs;
  if (t >= n) return;
  float* xt = x + (unsigned long)t * heads * head_dim;
  rotate_pair(xt, xt, table, pos0 + t, half, p % row_pairs);
}

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

// The body of llama.hip's attention for one query head: qh against cached positions 0..count-1
// of the kv head at kv_offset, p[j] left in sh, the head's output in oh. Kept operation for
// operation identical to attention.
static __device__ inline void attend(float* oh, const float* qh, const float* k_cache, const float* v_cache,
                                     float* sh, float* red, u32 t, u32 count, unsigned long kv_width,
                                     unsigned long kv_offset, u32 head_dim, float scale) {
  float m = -__builtin_inff();
  for (u32 j = t; j < count; j += ATTN_BLOCK) {
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
  for (u32 j = t; j < count; j += ATTN_BLOCK) {
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
    for (u32 j = 0; j < count; ++j) acc += sh[j] * v_cache[j * kv_width + kv_offset + d];
    oh[d] = acc / total;
  }
}

// Causal grouped-query attention for n query rows: q and out are [n][heads][head_dim]; query row
// t sits at position pos0 + t and attends cached positions 0..pos0 + t. One work-group of 64 per
// (row t, head h), work-group g = t * heads + h; scores row g of scores_stride floats is its
// scratch. Row t, head h is bit for bit attention with n = pos0 + t + 1 on q[t][h] (same
// per-work-item positions, same LDS trees); needs pos0 + n <= scores_stride.
KERNEL __attribute__((amdgpu_flat_work_group_size(ATTN_BLOCK, ATTN_BLOCK)))
void attention_rows(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores,
                    u32 pos0, u32 n, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride, float scale) {
  __shared__ float red[ATTN_BLOCK];
  if (heads == 0) return;
  u32 g = block_id_x();
  u32 row = g / heads;
  u32 h = g % heads;
  u32 t = thread_id_x();
  if (row >= n) return;
  unsigned long kv_width = (unsigned long)kv_heads * head_dim;
  unsigned long kv_offset = (unsigned long)(h / (heads / kv_heads)) * head_dim;
  attend(out + (unsigned long)g * head_dim, q + (unsigned long)g * head_dim, k_cache, v_cache,
         scores + (unsigned long)g * scores_stride, red, t, pos0 + row + 1, kv_width, kv_offset, head_dim, scale);
}
