#include "device.h"

// ggml block formats (ggml-common.h): 32 weights per block.
#define QK 32
#define Q4_1_BYTES 20  // { f16 d; f16 m; u8 qs[16] }: w[j] = (qs[j] & 15) * d + m, w[j + 16] = (qs[j] >> 4) * d + m
#define Q8_0_BYTES 34  // { f16 d; i8 qs[32] }: w[j] = qs[j] * d

// Work-items per row of the quantised matrix-vector products: one wave32.
#define QMATVEC_BLOCK 32

// The f16 at p, exactly as f32. Q8_0 blocks are only 2-byte aligned: byte loads.
static __device__ inline float half_at(const unsigned char* p) {
  unsigned short bits = (unsigned short)(p[0] | (p[1] << 8));
  return (float)__builtin_bit_cast(_Float16, bits);
}

// LDS tree sum of QMATVEC_BLOCK partial sums; the result is in partial[0].
static __device__ inline void tree_sum(float* partial, u32 t) {
  for (u32 stride = QMATVEC_BLOCK / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    barrier();
  }
}

// y[r] = sum_c w[r][c] * x[c] for r < rows, w in Q4_1 rows of cols / 32 blocks (cols a multiple
// of 32). One work-group per row; work-item t keeps acc from 0.0f and takes blocks b = t, t + 32,
// ... ascending; the 32 partial sums are added by the LDS tree. Block b (x_j = x[32 b + j]), in
// f32, every fma one IEEE fused multiply-add (one rounding), every other operation rounded:
//   lo = 0, hi = 0; for j = 0..15: lo = fma(qs[j] & 15, x_j, lo), hi = fma(qs[j] >> 4, x_16+j, hi)
//   sx = 0; for j = 0..31: sx = sx + x_j
//   acc = fma(d, lo + hi, acc); acc = fma(m, sx, acc)
// so that sum_j ((q_j * d + m) * x_j) is d * sum_j q_j x_j + m * sum_j x_j, with sx a function of
// x alone. The kernels are built with -ffp-contract=off (src/plan.rs): the fmas are explicit.
KERNEL __attribute__((amdgpu_flat_work_group_size(QMATVEC_BLOCK, QMATVEC_BLOCK)))
void matvec_q4_1(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols) {
  __shared__ float partial[QMATVEC_BLOCK];
  u32 row = block_id_x();
  u32 t = thread_id_x();
  if (row >= rows) return;
  u32 nb = cols / QK;
  const unsigned char* wr = w + (unsigned long)row * nb * Q4_1_BYTES;
  float acc = 0.0f;
  for (u32 b = t; b < nb; b += QMATVEC_BLOCK) {
    const unsigned char* blk = wr + (unsigned long)b * Q4_1_BYTES;
    float d = half_at(blk);
    float m = half_at(blk + 2);
    const float* xb = x + (unsigned long)b * QK;
    float lo = 0.0f;
    float hi = 0.0f;
    for (u32 j = 0; j < QK / 2; ++j) {
      lo = __builtin_fmaf((float)(blk[4 + j] & 15), xb[j], lo);
      hi = __builtin_fmaf((float)(blk[4 + j] >> 4), xb[QK / 2 + j], hi);
    }
    float sx = 0.0f;
    for (u32 j = 0; j < QK; ++j) sx += xb[j];
    acc = __builtin_fmaf(d, lo + hi, acc);
    acc = __builtin_fmaf(m, sx, acc);
  }
  partial[t] = acc;
  barrier();
  tree_sum(partial, t);
  if (t == 0) y[row] = partial[0];
}

// As matvec_q4_1 with Q8_0 rows; block b:
//   lo = 0, hi = 0; for j = 0..15: lo = fma(qs[j], x_j, lo), hi = fma(qs[16 + j], x_16+j, hi)
//   acc = fma(d, lo + hi, acc)
KERNEL __attribute__((amdgpu_flat_work_group_size(QMATVEC_BLOCK, QMATVEC_BLOCK)))
void matvec_q8_0(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols) {
  __shared__ float partial[QMATVEC_BLOCK];
  u32 row = block_id_x();
  u32 t = thread_id_x();
  if (row >= rows) return;
  u32 nb = cols / QK;
  const unsigned char* wr = w + (unsigned long)row * nb * Q8_0_BYTES;
  float acc = 0.0f;
  for (u32 b = t; b < nb; b += QMATVEC_BLOCK) {
    const unsigned char* blk = wr + (unsigned long)b * Q8_0_BYTES;
    float d = half_at(blk);
    const float* xb = x + (unsigned long)b * QK;
    float lo = 0.0f;
    float hi = 0.0f;
    for (u32 j = 0; j < QK / 2; ++j) {
      lo = __builtin_fmaf((float)(signed char)blk[2 + j], xb[j], lo);
      hi = __builtin_fmaf((float)(signed char)blk[2 + QK / 2 + j], xb[QK / 2 + j], hi);
    }
    acc = __builtin_fmaf(d, lo + hi, acc);
  }
  partial[t] = acc;
  barrier();
  tree_sum(partial, t);
  if (t == 0) y[row] = partial[0];
}

// out[c] = row token[0] of the Q8_0 table, dequantised, for c < cols (one work-item per element).
// The token id is read from device memory so that it is data, not a kernel argument; a token
// id >= rows writes nothing.
KERNEL void get_row_q8_0(float* out, const unsigned char* table, const u32* token, u32 cols, u32 rows) {
  u32 c = global_id_x();
  if (c >= cols) return;
  u32 tok = token[0];
  if (tok >= rows) return;
  const unsigned char* blk = table + ((unsigned long)tok * (cols / QK) + c / QK) * Q8_0_BYTES;
  out[c] = (float)(signed char)blk[2 + c % QK] * half_at(blk);
}
