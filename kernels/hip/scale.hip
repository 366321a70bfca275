#include "device.h"

// out[i] = s * x[i] for i < n.
KERNEL void scale(float* out, const float* x, float s, u32 n) {
  u32 i = global_id_x();
  if (i < n) out[i] = s * x[i];
}
