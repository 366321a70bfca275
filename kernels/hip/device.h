// Redline's device header: the few HIP spellings the kernels use, defined on clang builtins so
// that no ROCm device library or HIP header is needed (`-nogpulib -nogpuinc`).
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define KERNEL extern "C" __global__ __attribute__((visibility("default")))

typedef unsigned int u32;

// Work-items per work-group in x, read from the hidden group-size argument (code object v5).
static __device__ inline u32 block_dim_x() { return __builtin_amdgcn_workgroup_size_x(); }
static __device__ inline u32 block_id_x() { return __builtin_amdgcn_workgroup_id_x(); }
static __device__ inline u32 thread_id_x() { return __builtin_amdgcn_workitem_id_x(); }
static __device__ inline u32 global_id_x() { return block_id_x() * block_dim_x() + thread_id_x(); }

// Work-group barrier with the LDS visibility a __syncthreads() gives.
static __device__ inline void barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// exp(x) in f32 from +, -, * and bit operations only, so that the CPU reference (`cpu::exp`)
// reproduces it bit for bit (the device library's expf is not reproducible on the host):
// n = round(x * log2(e)) by the 1.5 * 2^23 rounding constant, r = x - n * ln2 with ln2 split in
// two (Cody-Waite: n * LN2_HI is exact for |n| < 2^9), a degree-7 polynomial for e^r on
// |r| <= ln2 / 2 (the Cephes expf coefficients), and the scaling by 2^n through exponent bits,
// in two steps where 2^n itself is not a normal float so that only the last multiply rounds.
#define EXP_ROUND 12582912.0f        // 1.5 * 2^23: adding it rounds to an integer (ties to even)
#define EXP_LOG2E 1.44269502162933349609375f
#define EXP_LN2_HI 0.693359375f       // 0x3f318000: 9 significant bits
#define EXP_LN2_LO -2.12194440e-4f
#define EXP_HI 89.0f                  // above: e^x > FLT_MAX
#define EXP_LO -104.0f                // below: e^x < 2^-150, rounds to 0

static __device__ inline float pow2i(int k) {  // 2^k for -126 <= k <= 127
  return __builtin_bit_cast(float, (u32)(k + 127) << 23);
}

static __device__ inline float rl_expf(float x) {
  if (x != x) return x;
  if (x > EXP_HI) return __builtin_inff();
  if (x < EXP_LO) return 0.0f;
  float t = x * EXP_LOG2E + EXP_ROUND;
  int n = (int)__builtin_bit_cast(u32, t) - (int)__builtin_bit_cast(u32, EXP_ROUND);
  float nf = t - EXP_ROUND;
  float r = x - nf * EXP_LN2_HI;
  r = r - nf * EXP_LN2_LO;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * (r * r) + r + 1.0f;
  if (n > 127) return y * pow2i(127) * pow2i(n - 127);
  if (n < -126) return y * pow2i(n + 100) * pow2i(-100);
  return y * pow2i(n);
}
