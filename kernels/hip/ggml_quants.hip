#include "device.h"
#define GF_DEVICE __device__
#include "ggml_formats.h"

// Matrix-vector and matrix products and embedding row gathers over every ggml block format of
// ggml_formats.h that quant.hip and prefill.hip do not cover, on one contract for all formats:
//
// - A row of cols values (a multiple of 32, of 256 for the K formats) is read in chunks of 32
//   values (ggml_formats.h). matvec_<t>: one work-group of 32 per row; work-item t takes chunks
//   t, t + 32, ... ascending, within a chunk values j = 0..31 ascending, acc += w * x[32 c + j]
//   from acc = 0.0, w the value as ggml_formats.h computes it, every operation rounded; the 32
//   partial sums are added by the LDS tree of quant.hip. matvec_q4_1 and matvec_q8_0 take their
//   blocks (their chunks) in this order too, but add each block by chains of fused multiply-adds
//   on the quants, then the scales (quant.hip), not value by value.
// - matmul_<t>: row t of the product is bit for bit matvec_<t> on x[t] (prefill.hip's contract):
//   the same per-work-item sums and the same tree, tokens in tiles of MATMUL_TILE.
// - get_row_<t>/get_rows_<t>: value c of a table row, as get_row_q8_0/get_rows_q8_0 read it.

// Work-items per row of the products (one wave32), and tokens per pass of a matrix product: as
// QMATVEC_BLOCK in quant.hip and MATMUL_BLOCK, MATMUL_TILE in prefill.hip.
#define QBLOCK 32
#define MATMUL_TILE 8

// A row's chunk c times x[32 c ..], added to acc value by value.
template <class F>
static __device__ inline float chunk_dot(const unsigned char* row, u32 c, const float* x, float acc) {
  typename F::Chunk k = gf::row_chunk<F>(row, c);
  const float* xc = x + (unsigned long)c * 32;
#pragma unroll
  for (u32 j = 0; j < 32; ++j) acc += F::at(k, j) * xc[j];
  return acc;
}

// Bytes of a row of cols values.
template <class F>
static __device__ inline unsigned long row_bytes(u32 cols) {
  return (unsigned long)(cols / F::VALUES) * F::BYTES;
}

// quant.hip's tree_sum: the sum of QBLOCK partial sums ends in partial[0].
static __device__ inline void tree_sum(float* partial, u32 t) {
  for (u32 stride = QBLOCK / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    barrier();
  }
}

template <class F>
static __device__ inline void matvec_body(float* partial, float* y, const unsigned char* w, const float* x, u32 rows,
                                          u32 cols) {
  u32 row = block_id_x();
  u32 t = thread_id_x();
  if (row >= rows) return;
  const unsigned char* wr = w + (unsigned long)row * row_bytes<F>(cols);
  u32 chunks = cols / 32;
  float acc = 0.0f;
  for (u32 c = t; c < chunks; c += QBLOCK) acc = chunk_dot<F>(wr, c, x, acc);
  partial[t] = acc;
  barrier();
  tree_sum(partial, t);
  if (t == 0) y[row] = partial[0];
}

// prefill.hip's tile_row, tile_tree_sum and tile_store.
static __device__ inline const float* tile_row(const float* x, u32 t0, u32 k, u32 n, u32 cols) {
  u32 t = t0 + k < n ? t0 + k : n - 1;
  return x + (unsigned long)t * cols;
}

static __device__ inline void tile_tree_sum(float (*partial)[QBLOCK], u32 lane) {
  for (u32 stride = QBLOCK / 2; stride > 0; stride /= 2) {
    if (lane < stride) {
#pragma unroll
      for (u32 k = 0; k < MATMUL_TILE; ++k) partial[k][lane] += partial[k][lane + stride];
    }
    barrier();
  }
}

static __device__ inline void tile_store(float* y, float (*partial)[QBLOCK], u32 lane, u32 t0, u32 n, u32 rows,
                                         u32 row) {
  if (lane < MATMUL_TILE && t0 + lane < n) y[(unsigned long)(t0 + lane) * rows + row] = partial[lane][0];
  barrier();
}

template <class F>
static __device__ inline void matmul_body(float (*partial)[QBLOCK], float* y, const unsigned char* w, const float* x,
                                          u32 rows, u32 cols, u32 n) {
  u32 row = block_id_x();
  u32 lane = thread_id_x();
  if (row >= rows) return;
  const unsigned char* wr = w + (unsigned long)row * row_bytes<F>(cols);
  u32 chunks = cols / 32;
  for (u32 t0 = 0; t0 < n; t0 += MATMUL_TILE) {
    float acc[MATMUL_TILE];
#pragma unroll
    for (u32 k = 0; k < MATMUL_TILE; ++k) acc[k] = 0.0f;
    for (u32 c = lane; c < chunks; c += QBLOCK) {
      typename F::Chunk ch = gf::row_chunk<F>(wr, c);
      unsigned long first = (unsigned long)c * 32;
      for (u32 j = 0; j < 32; ++j) {
        float wj = F::at(ch, j);
#pragma unroll
        for (u32 k = 0; k < MATMUL_TILE; ++k) acc[k] += wj * tile_row(x, t0, k, n, cols)[first + j];
      }
    }
#pragma unroll
    for (u32 k = 0; k < MATMUL_TILE; ++k) partial[k][lane] = acc[k];
    barrier();
    tile_tree_sum(partial, lane);
    tile_store(y, partial, lane, t0, n, rows, row);
  }
}

// Value c of the table row starting at row.
template <class F>
static __device__ inline float row_value(const unsigned char* row, u32 c) {
  return F::at(gf::row_chunk<F>(row, c / 32), c % 32);
}

template <class F>
static __device__ inline void get_row_body(float* out, const unsigned char* table, const u32* token, u32 cols,
                                           u32 rows) {
  u32 c = global_id_x();
  if (c >= cols) return;
  u32 tok = token[0];
  if (tok >= rows) return;
  out[c] = row_value<F>(table + (unsigned long)tok * row_bytes<F>(cols), c);
}

template <class F>
static __device__ inline void get_rows_body(float* out, const unsigned char* table, const u32* tokens, u32 cols,
                                            u32 rows, u32 n) {
  if (cols == 0) return;
  u32 i = global_id_x();
  u32 t = i / cols;
  if (t >= n) return;
  u32 c = i % cols;
  u32 tok = tokens[t];
  if (tok >= rows) return;
  out[i] = row_value<F>(table + (unsigned long)tok * row_bytes<F>(cols), c);
}

// y[r] = sum_c w[r][c] * x[c] for r < rows (work-group r); launched with work-groups of 32.
#define MATVEC(t, F)                                                                        \
  KERNEL __attribute__((amdgpu_flat_work_group_size(QBLOCK, QBLOCK)))                       \
  void matvec_##t(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols) { \
    __shared__ float partial[QBLOCK];                                                       \
    matvec_body<F>(partial, y, w, x, rows, cols);                                           \
  }

// y[t * rows + r] = sum_c w[r][c] * x[t * cols + c] for t < n, r < rows; n at most
// 2^32 - MATMUL_TILE.
#define MATMUL(t, F)                                                                                \
  KERNEL __attribute__((amdgpu_flat_work_group_size(QBLOCK, QBLOCK)))                               \
  void matmul_##t(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols, u32 n) { \
    __shared__ float partial[MATMUL_TILE][QBLOCK];                                                  \
    matmul_body<F>(partial, y, w, x, rows, cols, n);                                                \
  }

// out[c] = row token[0] of the table for c < cols; a token id >= rows writes nothing.
#define GET_ROW(t, F)                                                                                \
  KERNEL void get_row_##t(float* out, const unsigned char* table, const u32* token, u32 cols, u32 rows) { \
    get_row_body<F>(out, table, token, cols, rows);                                                  \
  }

// out[t * cols + c] = row tokens[t] of the table for t < n, c < cols (work-item t * cols + c); a
// token id >= rows writes nothing for that t.
#define GET_ROWS(t, F)                                                                                \
  KERNEL void get_rows_##t(float* out, const unsigned char* table, const u32* tokens, u32 cols, u32 rows, \
                           u32 n) {                                                                   \
    get_rows_body<F>(out, table, tokens, cols, rows, n);                                              \
  }

#define ALL_FOUR(t, F) MATVEC(t, F) MATMUL(t, F) GET_ROW(t, F) GET_ROWS(t, F)

ALL_FOUR(q4_0, gf::Q4_0)
GET_ROW(q4_1, gf::Q4_1)
GET_ROWS(q4_1, gf::Q4_1)
ALL_FOUR(q5_0, gf::Q5_0)
ALL_FOUR(q5_1, gf::Q5_1)
ALL_FOUR(q2_k, gf::Q2_K)
ALL_FOUR(q3_k, gf::Q3_K)
ALL_FOUR(q4_k, gf::Q4_K)
ALL_FOUR(q5_k, gf::Q5_K)
ALL_FOUR(q6_k, gf::Q6_K)
ALL_FOUR(f16, gf::F16)
ALL_FOUR(bf16, gf::BF16)
