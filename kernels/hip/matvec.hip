#include "device.h"

// y[r] = sum_c a[r * cols + c] * x[c] for r < rows: one work-item per row, c ascending.
KERNEL void matvec(float* y, const float* a, const float* x, u32 rows, u32 cols) {
  u32 r = global_id_x();
  if (r >= rows) return;
  const float* ar = a + (unsigned long)r * cols;
  float acc = 0.0f;
  for (u32 c = 0; c < cols; ++c) acc += ar[c] * x[c];
  y[r] = acc;
}
