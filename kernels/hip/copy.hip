#include "device.h"

// dst[i] = src[i] for i < n.
KERNEL void copy(float* dst, const float* src, u32 n) {
  u32 i = global_id_x();
  if (i < n) dst[i] = src[i];
}
