#include "device.h"

// out[i] = a[i] + b[i] for i < n.
KERNEL void add(float* out, const float* a, const float* b, u32 n) {
  u32 i = global_id_x();
  if (i < n) out[i] = a[i] + b[i];
}

// out[i] = a[i] * b[i] for i < n.
KERNEL void mul(float* out, const float* a, const float* b, u32 n) {
  u32 i = global_id_x();
  if (i < n) out[i] = a[i] * b[i];
}
