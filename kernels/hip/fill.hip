#include "device.h"

// out[i] = value for i < n.
KERNEL void fill(float* out, float value, u32 n) {
  u32 i = global_id_x();
  if (i < n) out[i] = value;
}
