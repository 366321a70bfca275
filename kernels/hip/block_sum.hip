#include "device.h"

// Dynamic LDS of one float per work-item (the launch passes block_dim_x * 4 bytes).
extern __shared__ float scratch_lds[];

// out[g] = sum of x[i] over the i < n of work-group g (tree reduction in dynamic LDS; the
// work-group size must be a power of two).
KERNEL void block_sum(float* out, const float* x, u32 n) {
  u32 t = thread_id_x();
  u32 i = global_id_x();
  scratch_lds[t] = i < n ? x[i] : 0.0f;
  barrier();
  for (u32 stride = block_dim_x() / 2; stride > 0; stride /= 2) {
    if (t < stride) scratch_lds[t] += scratch_lds[t + stride];
    barrier();
  }
  if (t == 0) out[block_id_x()] = scratch_lds[0];
}
