#include "device.h"

// y[i] = a * x[i] + y[i] for i < n (no fused multiply-add: -ffp-contract=off).
KERNEL void axpy(float* y, const float* x, float a, u32 n) {
  u32 i = global_id_x();
  if (i < n) y[i] = a * x[i] + y[i];
}
