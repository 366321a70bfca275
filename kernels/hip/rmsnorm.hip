#include "device.h"

#define RMSNORM_BLOCK 256

// One work-group of RMSNORM_BLOCK work-items per row:
// out[r, c] = x[r, c] * weight[c] / sqrt(mean_c(x[r, c]^2) + eps), for r < rows, c < cols.
KERNEL __attribute__((amdgpu_flat_work_group_size(RMSNORM_BLOCK, RMSNORM_BLOCK)))
void rmsnorm(float* out, const float* x, const float* weight, u32 rows, u32 cols, float eps) {
  __shared__ float partial[RMSNORM_BLOCK];
  u32 row = block_id_x();
  u32 t = thread_id_x();
  if (row >= rows) return;
  const float* xr = x + (unsigned long)row * cols;
  float sum = 0.0f;
  for (u32 c = t; c < cols; c += RMSNORM_BLOCK) sum += xr[c] * xr[c];
  partial[t] = sum;
  barrier();
  for (u32 stride = RMSNORM_BLOCK / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    barrier();
  }
  float inv = 1.0f / __builtin_sqrtf(partial[0] / (float)cols + eps);
  float* outr = out + (unsigned long)row * cols;
  for (u32 c = t; c < cols; c += RMSNORM_BLOCK) outr[c] = xr[c] * inv * weight[c];
}
